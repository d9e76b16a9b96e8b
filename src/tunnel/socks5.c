/* SPDX-License-Identifier: MIT */
/* SOCKS5 server side (RFC 1928, RFC 1929 username/password) and the
 * destination allow-list of `quack tunnel server --to socks5`
 * (include/quack/tunnel.h). Pure: no sockets, no name resolution. */
#include <quack/tunnel.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct qk_socks5 {
    int state;        /* 0 greeting, 1 RFC 1929 auth, 2 request, 3 done */
    const char *user; /* required username; NULL: no authentication (method 0) */
    const char *pass; /* its password */
    uint8_t buf[520]; /* the message being assembled */
    size_t len;       /* bytes in buf */
    char host[256];   /* REQUEST: the destination, a name or an address literal */
    uint16_t port;    /* REQUEST: the destination port */
};

int qk_socks5_new(const char *user, const char *pass, qk_socks5 **out)
{
    if (!out) return QK_ERR_INVALID_ARG;
    qk_socks5 *s = calloc(1, sizeof *s);
    *out = s;
    if (!s) return QK_ERR_NOMEM;
    s->user = user;
    s->pass = pass ? pass : "";
    return 0;
}

void qk_socks5_del(qk_socks5 *s)
{
    free(s);
}

const char *qk_socks5_host(const qk_socks5 *s)
{
    return s->host;
}

uint16_t qk_socks5_port(const qk_socks5 *s)
{
    return s->port;
}

void qk_socks5_reply(uint8_t rep, uint8_t *out)
{
    /* RFC 1928 §6: VER REP RSV ATYP(1) BND.ADDR(0.0.0.0) BND.PORT(0) */
    static const uint8_t tail[8] = {0, 1, 0, 0, 0, 0, 0, 0};
    out[0] = 5;
    out[1] = rep;
    memcpy(out + 2, tail, sizeof tail);
}

/* Bytes the message in s->buf needs in total, or 0 when its length is not known yet. */
static size_t need(const qk_socks5 *s)
{
    const uint8_t *b = s->buf;
    switch (s->state) {
    case 0: return s->len < 2 ? 0 : 2u + b[1]; /* RFC 1928 §3: VER NMETHODS METHODS */
    case 1:                                    /* RFC 1929 §2: VER ULEN UNAME PLEN PASSWD */
        if (s->len < 2) return 0;
        if (s->len < 3u + b[1]) return 0;
        return 3u + b[1] + b[2u + b[1]];
    default: /* RFC 1928 §4: VER CMD RSV ATYP DST.ADDR DST.PORT */
        if (s->len < 5) return 0;
        if (b[3] == 1) return 4 + 4 + 2;
        if (b[3] == 4) return 4 + 16 + 2;
        if (b[3] == 3) return 4 + 1 + (size_t)b[4] + 2;
        return 5; /* unknown ATYP: refused below */
    }
}

static qk_socks5_result on_greeting(qk_socks5 *s, uint8_t *out, size_t *out_len)
{
    uint8_t want = s->user ? 2 : 0, method = 0xff; /* 0xff: no acceptable method */
    for (size_t i = 0; i < s->buf[1]; i++)
        if (s->buf[2 + i] == want) method = want;
    out[(*out_len)++] = 5;
    out[(*out_len)++] = method;
    if (s->buf[0] != 5 || method == 0xff) return QK_SOCKS5_FAIL;
    s->state = s->user ? 1 : 2;
    return QK_SOCKS5_MORE;
}

static qk_socks5_result on_auth(qk_socks5 *s, uint8_t *out, size_t *out_len)
{
    const uint8_t *b = s->buf;
    size_t ulen = b[1], plen = b[2 + ulen];
    bool good = b[0] == 1 && ulen == strlen(s->user) && !memcmp(b + 2, s->user, ulen) &&
                plen == strlen(s->pass) && !memcmp(b + 3 + ulen, s->pass, plen);
    out[(*out_len)++] = 1; /* RFC 1929 §2: VER STATUS, 0 = success */
    out[(*out_len)++] = good ? 0 : 1;
    if (!good) return QK_SOCKS5_FAIL;
    s->state = 2;
    return QK_SOCKS5_MORE;
}

static qk_socks5_result on_request(qk_socks5 *s, uint8_t *out, size_t *out_len)
{
    const uint8_t *b = s->buf;
    uint8_t rep = QK_SOCKS5_OK;
    if (b[0] != 5)
        rep = QK_SOCKS5_GENERAL_FAILURE;
    else if (b[1] != 1) /* only CONNECT */
        rep = QK_SOCKS5_CMD_UNSUPPORTED;
    else if (b[3] == 1)
        inet_ntop(AF_INET, b + 4, s->host, sizeof s->host);
    else if (b[3] == 4)
        inet_ntop(AF_INET6, b + 4, s->host, sizeof s->host);
    else if (b[3] == 3 && b[4] > 0 && !memchr(b + 5, 0, b[4])) {
        memcpy(s->host, b + 5, b[4]);
        s->host[b[4]] = 0;
    } else
        rep = QK_SOCKS5_ATYP_UNSUPPORTED;
    if (rep != QK_SOCKS5_OK) {
        qk_socks5_reply(rep, out + *out_len);
        *out_len += QK_SOCKS5_REPLY_BYTES;
        return QK_SOCKS5_FAIL;
    }
    s->port = (uint16_t)(b[s->len - 2] << 8 | b[s->len - 1]);
    s->state = 3;
    return QK_SOCKS5_REQUEST;
}

qk_socks5_result qk_socks5_feed(qk_socks5 *s, const uint8_t *in, size_t len, size_t *used,
                                uint8_t *out, size_t *out_len)
{
    *used = 0;
    *out_len = 0;
    while (s->state < 3) {
        size_t n = need(s);
        if (n && s->len >= n) { /* a whole message */
            qk_socks5_result r = s->state == 0   ? on_greeting(s, out, out_len)
                                 : s->state == 1 ? on_auth(s, out, out_len)
                                                 : on_request(s, out, out_len);
            s->len = 0;
            if (r != QK_SOCKS5_MORE) return r;
            continue;
        }
        if (*used == len) return QK_SOCKS5_MORE;
        s->buf[s->len++] = in[(*used)++]; /* one at a time: never past the message */
    }
    return QK_SOCKS5_FAIL; /* fed after the request */
}

int qk_tunnel_allow_parse(const char *str, qk_tunnel_allow *out)
{
    char net[128], *ports = NULL;
    if (!str || !out || strlen(str) >= sizeof net) return QK_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    strcpy(net, str);
    char *addr = net;
    if (net[0] == '[') { /* [V6]/BITS[:PORTS] */
        char *e = strchr(net, ']');
        if (!e) return QK_ERR_INVALID_ARG;
        *e = 0;
        addr = net + 1;
        ports = strchr(e + 1, ':');
        char *slash = strchr(e + 1, '/');
        if (slash) memmove(e, slash, strlen(slash) + 1); /* "V6/BITS[:PORTS]" */
        if (ports) ports = strchr(e, ':');
    } else {
        ports = strchr(net, ':');
    }
    if (ports) *ports++ = 0;
    char *slash = strchr(addr, '/');
    if (slash) *slash++ = 0;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&out->net.ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out->net.ss;
    unsigned max_bits;
    if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        out->net.len = sizeof *v4;
        max_bits = 32;
    } else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        out->net.len = sizeof *v6;
        max_bits = 128;
    } else {
        return QK_ERR_INVALID_ARG;
    }
    char *end;
    unsigned long bits = slash ? strtoul(slash, &end, 10) : max_bits;
    if (slash && (*end || !*slash)) return QK_ERR_INVALID_ARG;
    if (bits > max_bits) return QK_ERR_INVALID_ARG;
    out->prefix_bits = (unsigned)bits;
    unsigned long lo = 0, hi = 65535;
    if (ports) {
        lo = hi = strtoul(ports, &end, 10);
        if (end == ports) return QK_ERR_INVALID_ARG;
        if (*end == '-') {
            char *p2 = end + 1;
            hi = strtoul(p2, &end, 10);
            if (end == p2) return QK_ERR_INVALID_ARG;
        }
        if (*end || lo > hi || hi > 65535) return QK_ERR_INVALID_ARG;
    }
    out->port_lo = (uint16_t)lo;
    out->port_hi = (uint16_t)hi;
    return 0;
}

/* The address bytes and port of a; NULL for other families. */
static const uint8_t *addr_bytes(const qk_addr *a, size_t *n, uint16_t *port)
{
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)&a->ss;
        *n = 4;
        *port = ntohs(v4->sin_port);
        return (const uint8_t *)&v4->sin_addr;
    }
    if (a->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&a->ss;
        *n = 16;
        *port = ntohs(v6->sin6_port);
        return (const uint8_t *)&v6->sin6_addr;
    }
    return NULL;
}

static bool prefix_match(const uint8_t *a, const uint8_t *net, unsigned bits)
{
    size_t whole = bits / 8;
    if (memcmp(a, net, whole)) return false;
    unsigned rest = bits % 8;
    if (!rest) return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[whole] & mask) == (net[whole] & mask);
}

/* Loopback, private, link-local, CGNAT, unspecified, multicast (RFC 6890). */
static bool special(const uint8_t *a, size_t n)
{
    if (n == 16) {
        static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (!memcmp(a, v4mapped, 12)) return special(a + 12, 4);
        static const uint8_t zero[15] = {0};
        if (!memcmp(a, zero, 15) && a[15] <= 1) return true; /* :: and ::1 */
        return (a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) || a[0] == 0xff;
    }
    return a[0] == 0 || a[0] == 10 || a[0] == 127 || (a[0] == 169 && a[1] == 254) ||
           (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168) ||
           (a[0] == 100 && (a[1] & 0xc0) == 64) || a[0] >= 224;
}

bool qk_tunnel_allowed(const qk_tunnel_allow *rules, size_t n_rules, const qk_addr *dst)
{
    size_t n;
    uint16_t port;
    const uint8_t *a = addr_bytes(dst, &n, &port);
    if (!a) return false;
    for (size_t i = 0; i < n_rules; i++) {
        size_t rn;
        uint16_t unused;
        const uint8_t *net = addr_bytes(&rules[i].net, &rn, &unused);
        if (net && rn == n && prefix_match(a, net, rules[i].prefix_bits) &&
            port >= rules[i].port_lo && port <= rules[i].port_hi)
            return true;
    }
    return !n_rules && !special(a, n);
}
