/* SPDX-License-Identifier: MIT */
/* Socket addresses (qk_addr, include/quack/common.h): the one comparison
 * every module uses, so that the endpoint's demux, the connection's path
 * logic and the I/O layer agree on what "the same address" is, and the one
 * IPv4 <-> v4-mapped IPv6 conversion (dual-stack sockets, preferred_address). */
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

void qk_addr_map_v4(const qk_addr *a, qk_addr *out)
{
    if (a->len == 0 || a->ss.ss_family != AF_INET) {
        if (out != a) *out = *a;
        return;
    }
    struct sockaddr_in in;
    memcpy(&in, &a->ss, sizeof in);
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_port = in.sin_port};
    s6.sin6_addr.s6_addr[10] = s6.sin6_addr.s6_addr[11] = 0xff; /* RFC 4291 §2.5.5.2 */
    memcpy(&s6.sin6_addr.s6_addr[12], &in.sin_addr, 4);
    memset(out, 0, sizeof *out);
    memcpy(&out->ss, &s6, sizeof s6);
    out->len = sizeof s6;
}

bool qk_addr_unmap_v4(const qk_addr *a, qk_addr *out)
{
    if (a->len == 0) return false;
    if (a->ss.ss_family == AF_INET) {
        if (out != a) *out = *a;
        return true;
    }
    if (a->ss.ss_family != AF_INET6) return false;
    struct sockaddr_in6 s6;
    memcpy(&s6, &a->ss, sizeof s6);
    if (!IN6_IS_ADDR_V4MAPPED(&s6.sin6_addr)) return false;
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = s6.sin6_port};
    memcpy(&in.sin_addr, &s6.sin6_addr.s6_addr[12], 4);
    memset(out, 0, sizeof *out);
    memcpy(&out->ss, &in, sizeof in);
    out->len = sizeof in;
    return true;
}
