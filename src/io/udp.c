/* SPDX-License-Identifier: MIT */
/* UDP sockets: recvmmsg/sendmmsg batches, GSO/GRO, ECN and pktinfo cmsgs,
 * plus address parsing/formatting helpers. */
#include "io/udp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/errqueue.h>

#include "base/abi.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

/* Room for TOS/TCLASS + PKTINFO (v4 and v6) + UDP_GRO on receive,
 * TOS/TCLASS + PKTINFO + UDP_SEGMENT on send. */
#define QK_UDP_CMSG_BYTES 256

typedef union qk_cmsg_buf {
    char buf[QK_UDP_CMSG_BYTES];
    struct cmsghdr align;
} qk_cmsg_buf;

/* Where each built send message came from. */
typedef struct qk_udp_msgmap {
    size_t chunk_bytes; /* bytes of the entry carried by this message */
    uint16_t segs;      /* UDP datagrams it becomes on the wire */
    bool ends_entry;    /* this message finishes its entry */
    bool gso;           /* carries a UDP_SEGMENT cmsg */
} qk_udp_msgmap;

struct qk_udp {
    int fd;
    bool wildcard; /* bound to 0.0.0.0 / :: : pktinfo gives the local address */
    bool recverr;  /* QK_UDP_RECVERR: ICMP errors are queued */
    qk_addr local;
    qk_udp_caps caps;
    qk_udp_stats stats;
    struct mmsghdr msgs[QK_UDP_BATCH_MAX];
    struct iovec iov[QK_UDP_BATCH_MAX];
    qk_cmsg_buf cmsg[QK_UDP_BATCH_MAX];
    qk_addr names[QK_UDP_BATCH_MAX]; /* converted send addresses */
    qk_udp_msgmap map[QK_UDP_BATCH_MAX];
    qk_udp_sendmmsg_fn sendmmsg_fn;
};

/* ------------------------------------------------------------------------ */
/* Addresses                                                                */
/* ------------------------------------------------------------------------ */

static int parse_port(const char *s, uint16_t *port)
{
    if (!*s) return QK_ERR_INVALID_ARG;
    unsigned long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return QK_ERR_INVALID_ARG;
        v = v * 10 + (unsigned long)(*p - '0');
        if (v > 65535) return QK_ERR_INVALID_ARG;
    }
    *port = (uint16_t)v;
    return 0;
}

static int resolve(const char *host, const char *port, bool numeric_only, qk_addr *out)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 && !numeric_only) {
        hints.ai_flags = AI_NUMERICSERV;
        rc = getaddrinfo(host, port, &hints, &res);
        if (rc != 0) return QK_ERR_NOT_FOUND;
    }
    if (rc != 0) return QK_ERR_INVALID_ARG;
    int ret = QK_ERR_NOT_FOUND;
    if (res && res->ai_addrlen <= sizeof(out->ss)) {
        memset(out, 0, sizeof(*out));
        memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
        out->len = res->ai_addrlen;
        ret = 0;
    }
    freeaddrinfo(res);
    return ret;
}

int qk_addr_parse(const char *s, qk_addr *out)
{
    if (!s || !out) return QK_ERR_INVALID_ARG;
    char host[256];
    const char *port;
    bool bracketed = s[0] == '[';
    size_t hlen;
    if (bracketed) {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':') return QK_ERR_INVALID_ARG;
        hlen = (size_t)(end - s - 1);
        if (hlen == 0 || hlen >= sizeof(host)) return QK_ERR_INVALID_ARG;
        memcpy(host, s + 1, hlen);
        port = end + 2;
    } else {
        const char *colon = strrchr(s, ':');
        /* RFC 3986 §3.2.2: an IPv6 literal with a port needs brackets. */
        if (!colon || memchr(s, ':', (size_t)(colon - s))) return QK_ERR_INVALID_ARG;
        hlen = (size_t)(colon - s);
        if (hlen == 0 || hlen >= sizeof(host)) return QK_ERR_INVALID_ARG;
        memcpy(host, s, hlen);
        port = colon + 1;
    }
    host[hlen] = '\0';
    uint16_t p;
    if (parse_port(port, &p) < 0) return QK_ERR_INVALID_ARG;
    int rc = resolve(host, port, bracketed, out);
    if (rc == 0 && bracketed && out->ss.ss_family != AF_INET6) return QK_ERR_INVALID_ARG;
    return rc;
}

int qk_addr_format(const qk_addr *a, char *buf, size_t cap)
{
    if (!a || !buf || a->len == 0) return QK_ERR_INVALID_ARG;
    char ip[INET6_ADDRSTRLEN];
    char scope[IF_NAMESIZE + 2] = "";
    int n;
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)&a->ss;
        if (!inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip))) return QK_ERR_INVALID_ARG;
        n = snprintf(buf, cap, "%s:%u", ip, (unsigned)ntohs(sin->sin_port));
    } else if (a->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->ss;
        if (!inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip))) return QK_ERR_INVALID_ARG;
        if (s6->sin6_scope_id) {
            char name[IF_NAMESIZE];
            if (if_indextoname(s6->sin6_scope_id, name))
                snprintf(scope, sizeof(scope), "%%%s", name);
            else
                snprintf(scope, sizeof(scope), "%%%u", (unsigned)s6->sin6_scope_id);
        }
        n = snprintf(buf, cap, "[%s%s]:%u", ip, scope, (unsigned)ntohs(s6->sin6_port));
    } else {
        return QK_ERR_INVALID_ARG;
    }
    if (n < 0 || (size_t)n >= cap) return QK_ERR_BUFFER_TOO_SMALL;
    return n;
}

/* ------------------------------------------------------------------------ */
/* Socket setup                                                             */
/* ------------------------------------------------------------------------ */

static bool setopt_int(int fd, int level, int name, int v)
{
    return setsockopt(fd, level, name, &v, sizeof(v)) == 0;
}

static size_t getopt_size(int fd, int level, int name)
{
    int v = 0;
    socklen_t l = sizeof(v);
    if (getsockopt(fd, level, name, &v, &l) != 0 || v < 0) return 0;
    return (size_t)v;
}

/* One direction: SO_*BUFFORCE needs CAP_NET_ADMIN and ignores [rw]mem_max;
 * otherwise the kernel silently caps SO_*BUF at the sysctl. */
static bool set_buf(int fd, int force_opt, int opt, size_t bytes)
{
    int v = bytes > (size_t)(INT32_MAX / 2) ? INT32_MAX / 2 : (int)bytes;
    if (setopt_int(fd, SOL_SOCKET, force_opt, v)) return true;
    return setopt_int(fd, SOL_SOCKET, opt, v);
}

int qk_udp_set_buffers(qk_udp *u, size_t rcvbuf_bytes, size_t sndbuf_bytes)
{
    int ret = 0;
    if (rcvbuf_bytes) {
        u->caps.rcvbuf_requested_bytes = rcvbuf_bytes;
        if (!set_buf(u->fd, SO_RCVBUFFORCE, SO_RCVBUF, rcvbuf_bytes)) ret = QK_ERR_IO;
    }
    if (sndbuf_bytes) {
        u->caps.sndbuf_requested_bytes = sndbuf_bytes;
        if (!set_buf(u->fd, SO_SNDBUFFORCE, SO_SNDBUF, sndbuf_bytes)) ret = QK_ERR_IO;
    }
    u->caps.rcvbuf_bytes = getopt_size(u->fd, SOL_SOCKET, SO_RCVBUF);
    u->caps.sndbuf_bytes = getopt_size(u->fd, SOL_SOCKET, SO_SNDBUF);
    u->caps.rcvbuf_capped = u->caps.rcvbuf_bytes < u->caps.rcvbuf_requested_bytes;
    u->caps.sndbuf_capped = u->caps.sndbuf_bytes < u->caps.sndbuf_requested_bytes;
    return ret;
}

static bool is_wildcard(const qk_addr *a)
{
    if (a->ss.ss_family == AF_INET)
        return ((const struct sockaddr_in *)&a->ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)&a->ss)->sin6_addr);
}

/* ECN, pktinfo, DF for the v4 side of a socket (a v4 socket or the v4-mapped
 * side of a dual-stack one). */
static void setup_v4_opts(qk_udp *u, bool *ecn, bool *pktinfo)
{
    *ecn = setopt_int(u->fd, IPPROTO_IP, IP_RECVTOS, 1);
    if (u->wildcard) *pktinfo = setopt_int(u->fd, IPPROTO_IP, IP_PKTINFO, 1);
    /* RFC 9000 §14: QUIC datagrams must not be fragmented; PROBE sets DF and
     * ignores the kernel's path-MTU cache (our own PMTUD decides, RFC 8899). */
    setopt_int(u->fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_PROBE);
}

static void setup_opts(qk_udp *u, unsigned flags)
{
    bool ecn4 = false, pk4 = false, ecn6 = false, pk6 = false;
    if (u->caps.family == AF_INET) {
        setup_v4_opts(u, &ecn4, &pk4);
        u->caps.ecn = ecn4;
        u->caps.pktinfo = pk4;
    } else {
        ecn6 = setopt_int(u->fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
        if (u->wildcard) pk6 = setopt_int(u->fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
        /* RFC 9000 §14: no fragmentation. */
        setopt_int(u->fd, IPPROTO_IPV6, IPV6_DONTFRAG, 1);
        setopt_int(u->fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_PROBE);
        if (u->caps.dualstack) setup_v4_opts(u, &ecn4, &pk4);
        u->caps.ecn = ecn6 && (!u->caps.dualstack || ecn4);
        u->caps.pktinfo = u->wildcard && pk6 && (!u->caps.dualstack || pk4);
    }
    if (!(flags & QK_UDP_NO_GSO)) {
        int v = 0;
        socklen_t l = sizeof(v);
        u->caps.gso = getsockopt(u->fd, SOL_UDP, UDP_SEGMENT, &v, &l) == 0;
    }
    if (!(flags & QK_UDP_NO_GRO)) u->caps.gro = setopt_int(u->fd, SOL_UDP, UDP_GRO, 1);
    /* RFC 8085 §5.2: let the application see ICMP errors (error queue). */
    if (flags & QK_UDP_RECVERR) {
        u->recverr = setopt_int(u->fd, IPPROTO_IP, IP_RECVERR, 1);
        if (u->caps.family == AF_INET6)
            u->recverr = setopt_int(u->fd, IPPROTO_IPV6, IPV6_RECVERR, 1) || u->recverr;
    }
}

static int recv_error(qk_udp *u, qk_udp_error *out)
{
    uint8_t data[64];
    union {
        char buf[512];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {data, sizeof data};
    memset(out, 0, sizeof *out);
    struct msghdr mh = {.msg_name = &out->peer.ss,
                        .msg_namelen = sizeof out->peer.ss,
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf};
    ssize_t r;
    do {
        r = recvmsg(u->fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? QK_ERR_AGAIN : QK_ERR_IO;
    out->peer.len = mh.msg_namelen;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (!((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
              (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR)))
            continue;
        struct sock_extended_err ee;
        memcpy(&ee, CMSG_DATA(c), sizeof ee);
        out->err = (int)ee.ee_errno;
        out->icmp = ee.ee_origin == SO_EE_ORIGIN_ICMP || ee.ee_origin == SO_EE_ORIGIN_ICMP6;
        /* RFC 792: type 3 code 3; RFC 4443 §3.1: type 1 code 4. */
        out->unreachable =
            (ee.ee_origin == SO_EE_ORIGIN_ICMP && ee.ee_type == 3 && ee.ee_code == 3) ||
            (ee.ee_origin == SO_EE_ORIGIN_ICMP6 && ee.ee_type == 1 && ee.ee_code == 4);
    }
    return 0;
}

int qk_udp_open(const qk_addr *bind_addr, unsigned flags, qk_udp **out)
{
    if (!bind_addr || !out) return QK_ERR_INVALID_ARG;
    int fam = bind_addr->ss.ss_family;
    if ((fam != AF_INET && fam != AF_INET6) || bind_addr->len == 0 ||
        bind_addr->len > sizeof(bind_addr->ss))
        return QK_ERR_INVALID_ARG;
    qk_udp *u = calloc(1, sizeof(*u));
    if (!u) return QK_ERR_NOMEM;
    u->caps.family = fam;
    u->caps.dualstack = fam == AF_INET6 && (flags & QK_UDP_DUALSTACK);
    u->wildcard = is_wildcard(bind_addr);
    u->sendmmsg_fn = sendmmsg;
    u->fd = socket(fam, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
    if (u->fd < 0) goto fail;
    if (fam == AF_INET6 && !setopt_int(u->fd, IPPROTO_IPV6, IPV6_V6ONLY, !u->caps.dualstack))
        goto fail;
    if ((flags & QK_UDP_REUSEPORT) && !setopt_int(u->fd, SOL_SOCKET, SO_REUSEPORT, 1)) goto fail;
    if (bind(u->fd, (const struct sockaddr *)&bind_addr->ss, bind_addr->len) != 0) goto fail;
    u->local.len = sizeof(u->local.ss);
    if (getsockname(u->fd, (struct sockaddr *)&u->local.ss, &u->local.len) != 0) goto fail;
    setup_opts(u, flags);
    qk_udp_set_buffers(u, QK_UDP_DEFAULT_BUF_BYTES, QK_UDP_DEFAULT_BUF_BYTES);
    *out = u;
    return 0;
fail:;
    int e = errno;
    if (u->fd >= 0) close(u->fd);
    free(u);
    errno = e;
    return QK_ERR_IO;
}

void qk_udp_close(qk_udp *u)
{
    if (!u) return;
    close(u->fd);
    free(u);
}

void qk_udp_set_sendmmsg(qk_udp *u, qk_udp_sendmmsg_fn fn)
{
    u->sendmmsg_fn = fn ? fn : sendmmsg;
}

int qk_udp_fd(const qk_udp *u)
{
    return u->fd;
}

void qk_udp_local_addr(const qk_udp *u, qk_addr *out)
{
    *out = u->local;
}

int qk_udp_recv_error_sized(qk_udp *u, qk_udp_error *out, size_t out_bytes)
{
    if (!u || !out) return QK_ERR_INVALID_ARG;
    if (!u->recverr) return QK_ERR_AGAIN;
    qk_udp_error e;
    int rc = recv_error(u, &e);
    if (rc == 0) qk_abi_copy_out(out, out_bytes, &e, sizeof e);
    return rc;
}

void qk_udp_get_caps_sized(const qk_udp *u, qk_udp_caps *out, size_t out_bytes)
{
    qk_abi_copy_out(out, out_bytes, &u->caps, sizeof u->caps);
}

void qk_udp_get_stats_sized(const qk_udp *u, qk_udp_stats *out, size_t out_bytes)
{
    qk_abi_copy_out(out, out_bytes, &u->stats, sizeof u->stats);
}

/* ------------------------------------------------------------------------ */
/* Receive                                                                  */
/* ------------------------------------------------------------------------ */

/* Destination address from IP_PKTINFO, in the socket's family. */
static void local_from_pktinfo4(const qk_udp *u, const struct in_pktinfo *pi, qk_addr *local)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr = pi->ipi_addr,
                              .sin_port = htons(qk_addr_port(&u->local))};
    memcpy(&local->ss, &sin, sizeof(sin));
    local->len = sizeof(sin);
    if (u->caps.family != AF_INET) qk_addr_map_v4(local, local);
}

static void local_from_pktinfo6(const qk_udp *u, const struct in6_pktinfo *pi, qk_addr *local)
{
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_addr = pi->ipi6_addr};
    s6.sin6_port = ((const struct sockaddr_in6 *)&u->local.ss)->sin6_port;
    if (IN6_IS_ADDR_LINKLOCAL(&s6.sin6_addr)) s6.sin6_scope_id = (uint32_t)pi->ipi6_ifindex;
    memcpy(&local->ss, &s6, sizeof(s6));
    local->len = sizeof(s6);
}

static void parse_recv_cmsgs(const qk_udp *u, struct msghdr *mh, qk_datagram *d)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        const unsigned char *p = CMSG_DATA(c);
        size_t dlen = c->cmsg_len - CMSG_LEN(0);
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && dlen >= 1) {
            d->ecn = p[0] & 3; /* RFC 3168 §5: ECN field = low two TOS bits */
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS &&
                   dlen >= sizeof(int)) {
            int tc;
            memcpy(&tc, p, sizeof(tc));
            d->ecn = (uint8_t)(tc & 3);
        } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
                   dlen >= sizeof(struct in_pktinfo)) {
            struct in_pktinfo pi;
            memcpy(&pi, p, sizeof(pi));
            local_from_pktinfo4(u, &pi, &d->local);
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO &&
                   dlen >= sizeof(struct in6_pktinfo)) {
            struct in6_pktinfo pi;
            memcpy(&pi, p, sizeof(pi));
            local_from_pktinfo6(u, &pi, &d->local);
        } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO && dlen >= sizeof(int)) {
            int gso;
            memcpy(&gso, p, sizeof(gso));
            if (gso > 0 && (size_t)gso < d->len && gso <= UINT16_MAX)
                d->segment_bytes = (uint16_t)gso;
        }
    }
}

int qk_udp_recv(qk_udp *u, qk_datagram *d, size_t n)
{
    if (!u || !d || n == 0) return QK_ERR_INVALID_ARG;
    if (n > QK_UDP_BATCH_MAX) n = QK_UDP_BATCH_MAX;
    for (size_t i = 0; i < n; i++) {
        u->iov[i].iov_base = d[i].data;
        u->iov[i].iov_len = d[i].len;
        struct msghdr *mh = &u->msgs[i].msg_hdr;
        memset(mh, 0, sizeof(*mh));
        mh->msg_name = &d[i].peer.ss;
        mh->msg_namelen = sizeof(d[i].peer.ss);
        mh->msg_iov = &u->iov[i];
        mh->msg_iovlen = 1;
        mh->msg_control = u->cmsg[i].buf;
        mh->msg_controllen = sizeof(u->cmsg[i].buf);
    }
    int r;
    do {
        r = recvmmsg(u->fd, u->msgs, (unsigned)n, 0, NULL);
    } while (r < 0 && errno == EINTR);
    u->stats.recv_calls++;
    if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? QK_ERR_AGAIN : QK_ERR_IO;
    for (int i = 0; i < r; i++) {
        struct msghdr *mh = &u->msgs[i].msg_hdr;
        qk_datagram *x = &d[i];
        x->peer.len = mh->msg_namelen;
        x->local = u->local;
        x->ecn = QK_ECN_NOT_ECT;
        x->segment_bytes = 0;
        x->len = u->msgs[i].msg_len;
        if (mh->msg_flags & MSG_TRUNC) {
            /* Did not fit the caller's buffer: report it empty, never partial. */
            u->stats.rx_truncated++;
            x->len = 0;
            continue;
        }
        parse_recv_cmsgs(u, mh, x);
    }
    u->stats.rx_datagrams += (uint64_t)r;
    return r;
}

size_t qk_datagram_segment_count(const qk_datagram *d)
{
    if (d->segment_bytes == 0 || d->len <= d->segment_bytes) return 1;
    return (d->len + d->segment_bytes - 1) / d->segment_bytes;
}

int qk_datagram_segment(const qk_datagram *d, size_t i, qk_datagram *out)
{
    if (i >= qk_datagram_segment_count(d)) return QK_ERR_NOT_FOUND;
    size_t seg = d->segment_bytes ? d->segment_bytes : d->len;
    size_t off = i * seg;
    out->data = d->data + off;
    out->len = d->len - off < seg ? d->len - off : seg;
    out->local = d->local;
    out->peer = d->peer;
    out->ecn = d->ecn;
    out->segment_bytes = 0;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Send                                                                     */
/* ------------------------------------------------------------------------ */

/* Appends control messages to a send message's buffer. */
typedef struct qk_cmsg_writer {
    char *buf;
    size_t used;
} qk_cmsg_writer;

static void cw_add(qk_cmsg_writer *w, int level, int type, const void *data, size_t len)
{
    /* CMSG_SPACE is aligned, so the next header starts right after `used`. */
    struct cmsghdr *c = (struct cmsghdr *)(void *)(w->buf + w->used);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(len);
    memcpy(CMSG_DATA(c), data, len);
    w->used += CMSG_SPACE(len);
}

/* Destination in the socket's family; may use scratch. Sets *v4 when the
 * datagram leaves as IPv4 (for which TOS is the SOL_IP cmsg). */
static bool dest_addr(const qk_udp *u, const qk_addr *peer, qk_addr *scratch, struct msghdr *mh,
                      bool *v4)
{
    int fam = peer->ss.ss_family;
    mh->msg_name = (void *)&peer->ss;
    mh->msg_namelen = peer->len;
    if (u->caps.family == AF_INET) {
        *v4 = true;
        if (fam == AF_INET6) {
            if (!qk_addr_unmap_v4(peer, scratch)) return false;
            mh->msg_name = &scratch->ss;
            mh->msg_namelen = scratch->len;
        }
        return true;
    }
    if (fam == AF_INET) {
        qk_addr_map_v4(peer, scratch);
        mh->msg_name = &scratch->ss;
        mh->msg_namelen = scratch->len;
        *v4 = true;
    } else {
        *v4 = fam == AF_INET6 &&
              IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)&peer->ss)->sin6_addr);
    }
    return true;
}

/* Source address via pktinfo (only meaningful on a wildcard-bound socket). */
static void add_pktinfo(const qk_udp *u, qk_cmsg_writer *w, const qk_addr *local)
{
    if (!u->caps.pktinfo || local->len == 0) return;
    if (u->caps.family == AF_INET) {
        struct in_pktinfo pi = {0};
        if (local->ss.ss_family == AF_INET) {
            pi.ipi_spec_dst = ((const struct sockaddr_in *)&local->ss)->sin_addr;
        } else {
            qk_addr a;
            if (!qk_addr_unmap_v4(local, &a)) return;
            pi.ipi_spec_dst = ((const struct sockaddr_in *)&a.ss)->sin_addr;
        }
        cw_add(w, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
        return;
    }
    struct in6_pktinfo pi = {0};
    if (local->ss.ss_family == AF_INET) {
        qk_addr a;
        qk_addr_map_v4(local, &a);
        pi.ipi6_addr = ((const struct sockaddr_in6 *)&a.ss)->sin6_addr;
    } else {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&local->ss;
        pi.ipi6_addr = s6->sin6_addr;
        pi.ipi6_ifindex = s6->sin6_scope_id;
    }
    /* For v4-mapped sources the kernel reads this in ip_cmsg_send(). */
    cw_add(w, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
}

/* Build message k for bytes [off, off+chunk) of d. False: unusable address. */
static bool build_msg(qk_udp *u, size_t k, qk_datagram *d, size_t off, size_t chunk,
                      uint16_t gso_bytes)
{
    struct msghdr *mh = &u->msgs[k].msg_hdr;
    memset(mh, 0, sizeof(*mh));
    bool v4 = false;
    if (!dest_addr(u, &d->peer, &u->names[k], mh, &v4)) return false;
    u->iov[k].iov_base = d->data + off;
    u->iov[k].iov_len = chunk;
    mh->msg_iov = &u->iov[k];
    mh->msg_iovlen = 1;
    qk_cmsg_writer w = {.buf = u->cmsg[k].buf, .used = 0};
    if (d->ecn & 3) {
        /* RFC 9000 §13.4.1, RFC 3168 §5: the ECN codepoint goes per datagram in
         * a cmsg. The socket's TOS stays 0, so Not-ECT needs no cmsg and no
         * setsockopt happens per send. A datagram leaving as IPv4 (also from a
         * dual-stack socket) takes IP_TOS, IPv6 takes IPV6_TCLASS. */
        int tos = d->ecn & 3;
        cw_add(&w, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_TOS : IPV6_TCLASS, &tos, sizeof(tos));
    }
    add_pktinfo(u, &w, &d->local);
    if (gso_bytes) cw_add(&w, SOL_UDP, UDP_SEGMENT, &gso_bytes, sizeof(gso_bytes));
    mh->msg_control = w.used ? u->cmsg[k].buf : NULL;
    mh->msg_controllen = w.used;
    return true;
}

/* Bytes of d's next message when `remaining` bytes are left; *gso_bytes gets
 * the UDP_SEGMENT size when the message is a GSO batch. */
static size_t next_chunk(const qk_udp *u, const qk_datagram *d, size_t remaining,
                         uint16_t *gso_bytes)
{
    size_t seg = d->segment_bytes;
    *gso_bytes = 0;
    if (seg == 0 || remaining <= seg) return remaining;
    if (!u->caps.gso) return seg;
    size_t max_segs = QK_UDP_GSO_MAX_BYTES / seg;
    if (max_segs > QK_UDP_GSO_MAX_SEGMENTS) max_segs = QK_UDP_GSO_MAX_SEGMENTS;
    if (max_segs < 2) return seg;
    size_t chunk = remaining < max_segs * seg ? remaining : max_segs * seg;
    if (chunk > seg) *gso_bytes = (uint16_t)seg;
    return chunk;
}

/* Record progress inside the first unsent entry for the caller. */
static void write_back(qk_datagram *d, size_t done, size_t n, size_t head_off)
{
    if (done < n && head_off) {
        d[done].data += head_off;
        d[done].len -= head_off;
    }
}

/* Fill u->msgs from entry `first` (already head_off bytes in); returns count. */
static size_t build_batch(qk_udp *u, qk_datagram *d, size_t first, size_t n, size_t head_off)
{
    size_t nm = 0, e = first, off = head_off;
    while (nm < QK_UDP_BATCH_MAX && e < n) {
        uint16_t gso;
        size_t chunk = next_chunk(u, &d[e], d[e].len - off, &gso);
        if (!build_msg(u, nm, &d[e], off, chunk, gso)) break;
        qk_udp_msgmap *m = &u->map[nm];
        m->chunk_bytes = chunk;
        m->segs = gso ? (uint16_t)((chunk + gso - 1) / gso) : 1;
        m->ends_entry = off + chunk == d[e].len;
        m->gso = gso != 0;
        nm++;
        off += chunk;
        if (off == d[e].len) {
            e++;
            off = 0;
        }
    }
    return nm;
}

int qk_udp_send(qk_udp *u, qk_datagram *d, size_t n)
{
    if (!u || (!d && n)) return QK_ERR_INVALID_ARG;
    size_t done = 0, head_off = 0;
    while (done < n) {
        size_t nm = build_batch(u, d, done, n, head_off);
        if (nm == 0) { /* the head entry's peer address is unusable */
            write_back(d, done, n, head_off);
            errno = EAFNOSUPPORT;
            return done ? (int)done : QK_ERR_IO;
        }
        int r = u->sendmmsg_fn(u->fd, u->msgs, (unsigned)nm, 0);
        u->stats.send_calls++;
        if (r < 0) {
            int err = errno;
            if (err == EINTR) continue;
            if ((err == EIO || err == EINVAL) && u->map[0].gso) {
                /* GSO refused (no checksum offload, UDP_SEGMENT unsupported on
                 * this path, ...): turn it off for good and resend split. */
                u->caps.gso = false;
                u->stats.gso_fallbacks++;
                continue;
            }
            write_back(d, done, n, head_off);
            errno = err;
            if (done) return (int)done;
            return (err == EAGAIN || err == EWOULDBLOCK) ? QK_ERR_AGAIN : QK_ERR_IO;
        }
        for (int i = 0; i < r; i++) {
            u->stats.tx_datagrams += u->map[i].segs;
            if (u->map[i].ends_entry) {
                done++;
                head_off = 0;
            } else {
                head_off += u->map[i].chunk_bytes;
            }
        }
    }
    return (int)done;
}
