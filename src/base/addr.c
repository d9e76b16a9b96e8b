/* Socket addresses (qk_addr, include/quack/common.h): the one comparison
 * every module uses, so that the endpoint's demux, the connection's path
 * logic and the I/O layer agree on what "the same address" is. */
#include <netinet/in.h>
#include <quack/common.h>
#include <string.h>

static bool same(const qk_addr *a, const qk_addr *b, bool port)
{
    if (a->len == 0 || b->len == 0) return a->len == b->len;
    if (a->ss.ss_family != b->ss.ss_family) return false;
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)&a->ss, *y = (const void *)&b->ss;
        return x->sin_addr.s_addr == y->sin_addr.s_addr && (!port || x->sin_port == y->sin_port);
    }
    if (a->ss.ss_family == AF_INET6) {
        /* A link-local address is only the same on the same interface. */
        const struct sockaddr_in6 *x = (const void *)&a->ss, *y = (const void *)&b->ss;
        return !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) &&
               x->sin6_scope_id == y->sin6_scope_id && (!port || x->sin6_port == y->sin6_port);
    }
    return a->len == b->len && !memcmp(&a->ss, &b->ss, a->len);
}

bool qk_addr_equal(const qk_addr *a, const qk_addr *b)
{
    return same(a, b, true);
}

bool qk_addr_same_host(const qk_addr *a, const qk_addr *b)
{
    return same(a, b, false);
}

uint16_t qk_addr_port(const qk_addr *a)
{
    if (a->len == 0) return 0;
    if (a->ss.ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
    if (a->ss.ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)&a->ss)->sin6_port);
    return 0;
}
