/* SPDX-License-Identifier: MIT */
/* Real-time UDP relay applying the link model in both directions (see relay.h). */
#include "sim/relay.h"
#include "sim/link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int qk_relay_parse_addr(const char *s, qk_addr *out)
{
    char host[256];
    const char *port;
    if (s[0] == '[') {
        const char *e = strchr(s, ']');
        if (!e || e[1] != ':' || (size_t)(e - s - 1) >= sizeof host) return QK_ERR_CONFIG;
        memcpy(host, s + 1, (size_t)(e - s - 1));
        host[e - s - 1] = 0;
        port = e + 2;
    } else {
        const char *c = strrchr(s, ':');
        if (!c || (size_t)(c - s) >= sizeof host) return QK_ERR_CONFIG;
        memcpy(host, s, (size_t)(c - s));
        host[c - s] = 0;
        port = c + 1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_DGRAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    if (!*port || getaddrinfo(host, port, &hints, &ai) || !ai) return QK_ERR_CONFIG;
    memset(out, 0, sizeof *out);
    memcpy(&out->ss, ai->ai_addr, ai->ai_addrlen);
    out->len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static qk_time mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (qk_time)ts.tv_sec * QK_NS_PER_S + (qk_time)ts.tv_nsec;
}

static int open_sock(const qk_addr *bind_to, int family, char *err, size_t cap)
{
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, cap, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1, big = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
    else
        setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    if (bind_to && bind(fd, (const struct sockaddr *)&bind_to->ss, bind_to->len)) {
        char h[NI_MAXHOST] = "?", p[NI_MAXSERV] = "?";
        getnameinfo((const struct sockaddr *)&bind_to->ss, bind_to->len, h, sizeof h, p, sizeof p,
                    NI_NUMERICHOST | NI_NUMERICSERV);
        snprintf(err, cap, "cannot bind %s:%s: %s; pick a free port for --listen", h, p,
                 strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

typedef struct dir {
    qk_link link;
    uint64_t rx_pkts, rx_bytes;
    qk_sim_link_stats last;
} dir;

/* The sockets: one per listen port, one toward the server. */
typedef struct relay {
    const qk_relay_cfg *cfg;
    unsigned n;     /* ports in the ranges */
    int *lfd;       /* [n]: listen port + i */
    int ufd;        /* toward the server's ports */
    qk_addr client; /* the last client address seen */
    uint16_t to_lo; /* the server's first port */
    uint64_t dark_drops;
    uint32_t last_fwd;                     /* the port index of the last client datagram */
    uint16_t dark_port[QK_RELAY_MAX_DARK]; /* cfg->dark's ports, "active" ones once known */
} relay;

static uint16_t addr_port(const qk_addr *a)
{
    return ntohs(a->ss.ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)&a->ss)->sin6_port
                                             : ((const struct sockaddr_in *)&a->ss)->sin_port);
}

static void addr_set_port(qk_addr *a, uint16_t port)
{
    if (a->ss.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&a->ss)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)&a->ss)->sin_port = htons(port);
}

/* Server port to_lo + i is dark at relay time now (--blackhole-port). A
 * rule for the active port (to_port 0) takes the port of the last client
 * datagram when its time comes. */
static bool port_dark(relay *r, uint32_t i, qk_time now)
{
    bool dark = false;
    for (size_t k = 0; k < r->cfg->n_dark; k++) {
        const qk_relay_dark *d = &r->cfg->dark[k];
        if (now < d->start_ns || now >= d->end_ns) continue;
        if (!r->dark_port[k]) {
            r->dark_port[k] = (uint16_t)(r->to_lo + r->last_fwd);
            if (r->cfg->stats)
                fprintf(r->cfg->stats, "netem: server port %u (the active one) dark from %.1fs\n",
                        (unsigned)r->dark_port[k], (double)now / 1e9);
        }
        dark = dark || r->dark_port[k] == r->to_lo + i;
    }
    return dark;
}

static uint8_t read_ecn(struct msghdr *mh)
{
    uint8_t ecn = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) ||
            (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS)) {
            if (c->cmsg_len >= CMSG_LEN(sizeof(int)))
                ecn = (uint8_t)(*(int *)CMSG_DATA(c) & 3);
            else
                ecn = *(uint8_t *)CMSG_DATA(c) & 3;
        }
    }
    return ecn;
}

/* Read up to a batch of datagrams from fd into d's link: from a client on
 * listen port + idx (fwd), or from a server port (idx < 0: ret, the index is
 * the source port's). */
static void pump_in(relay *r, dir *d, int fd, int idx, qk_pkt_pool *pool, qk_time t0, uint8_t *buf)
{
    for (int i = 0; i < 256; i++) {
        qk_addr from;
        struct iovec iov = {buf, 65535};
        union {
            char b[CMSG_SPACE(sizeof(int)) * 2];
            struct cmsghdr align;
        } cbuf;
        struct msghdr mh = {.msg_name = &from.ss,
                            .msg_namelen = sizeof from.ss,
                            .msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = cbuf.b,
                            .msg_controllen = sizeof cbuf.b};
        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
        if (n < 0) return;
        from.len = mh.msg_namelen;
        uint32_t port_idx = (uint32_t)idx;
        if (idx >= 0) {
            r->client = from;
            r->last_fwd = port_idx;
        } else {
            port_idx = (uint32_t)(addr_port(&from) - r->to_lo);
            if (addr_port(&from) < r->to_lo || port_idx >= r->n) continue; /* not the server's */
        }
        d->rx_pkts++;
        d->rx_bytes += (uint64_t)n;
        qk_time now = mono_ns() - t0;
        if (port_dark(r, port_idx, now)) {
            r->dark_drops++;
            continue;
        }
        qk_pkt *p = qk_pkt_get(pool, (size_t)n);
        if (!p) {
            d->link.st.dropped_pkts[QK_SIM_DROP_NOMEM]++;
            continue;
        }
        memcpy(p->data, buf, (size_t)n);
        p->ecn = read_ecn(&mh);
        p->flow = port_idx;
        qk_link_enqueue(&d->link, p, now);
    }
}

static int send_one(int fd, const qk_addr *dst, const qk_pkt *p)
{
    struct iovec iov = {p->data, p->len};
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cbuf;
    memset(&cbuf, 0, sizeof cbuf);
    struct msghdr mh = {.msg_name = (void *)&dst->ss,
                        .msg_namelen = dst->len,
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = cbuf.b,
                        .msg_controllen = sizeof cbuf.b};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    int v6 = dst->ss.ss_family == AF_INET6;
    c->cmsg_level = v6 ? IPPROTO_IPV6 : IPPROTO_IP;
    c->cmsg_type = v6 ? IPV6_TCLASS : IP_TOS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    int tos = p->ecn & 3;
    memcpy(CMSG_DATA(c), &tos, sizeof tos);
    return sendmsg(fd, &mh, MSG_DONTWAIT) < 0 ? -1 : 0;
}

/* Send every packet the link has delivered by now (fwd: to the server's
 * port of the packet's index; ret: from that listen port to the client);
 * returns the number of send failures. */
static uint64_t flush(relay *r, dir *d, bool fwd, qk_pkt_pool *pool, qk_time now)
{
    uint64_t errs = 0;
    qk_pkt *p;
    while ((p = qk_link_poll(&d->link, now, NULL))) {
        if (p->flow >= r->n) {
            errs++;
        } else if (fwd) {
            qk_addr to = r->cfg->to;
            addr_set_port(&to, (uint16_t)(r->to_lo + p->flow));
            errs += send_one(r->ufd, &to, p) != 0;
        } else {
            errs += !r->client.len || send_one(r->lfd[p->flow], &r->client, p);
        }
        qk_pkt_put(pool, p);
    }
    return errs;
}

/*
 * ppoll until readable or the (relay-relative) time wake. Waking from a long
 * sleep costs ~100 us on a VM, so a long wait ends QK_RELAY_SPIN_NS early and
 * the remainder is polled without sleeping (*spin); short waits just sleep, so
 * a busy relay does not burn a core.
 */
#define QK_RELAY_SPIN_NS (200 * QK_NS_PER_US)

static int wait_until(struct pollfd *pf, nfds_t nfds, qk_time wake, qk_time now,
                      qk_time *spin_until, const sigset_t *waitmask)
{
    struct timespec ts = {0, 0}, *tsp = NULL;
    if (wake != QK_TIME_INFINITE) {
        qk_time d = wake > now ? wake - now : 0;
        if (d > 5 * QK_RELAY_SPIN_NS) {
            d -= QK_RELAY_SPIN_NS;
            *spin_until = wake;
        } else if (now < *spin_until && wake <= *spin_until) {
            d = 0; /* the last stretch of a long wait */
        }
        ts.tv_sec = (time_t)(d / QK_NS_PER_S);
        ts.tv_nsec = (long)(d % QK_NS_PER_S);
        tsp = &ts;
    }
    /* SIGINT/SIGTERM are blocked except inside ppoll (waitmask), so a stop
     * signal can never land between the caller's stop check and the wait. */
    return ppoll(pf, nfds, tsp, waitmask);
}

static void print_stats(FILE *f, double t, dir *d, const char *name)
{
    qk_sim_link_stats *s = &d->link.st, *l = &d->last;
    uint64_t drops = 0, ldrops = 0;
    for (int i = 0; i < QK_SIM_DROP_N; i++) {
        drops += s->dropped_pkts[i];
        ldrops += l->dropped_pkts[i];
    }
    fprintf(f, " %s: %llu pkt %.2f Mbit/s drop %llu mark %llu q %llu B |", name,
            (unsigned long long)(s->delivered_pkts - l->delivered_pkts),
            (double)(s->delivered_bytes - l->delivered_bytes) * 8 / 1e6 / t,
            (unsigned long long)(drops - ldrops),
            (unsigned long long)(s->marked_pkts - l->marked_pkts),
            (unsigned long long)s->queue_bytes);
    *l = *s;
}

/* Open the relay's sockets (r->lfd, r->ufd). Returns 0 or -1 (err says why). */
static int open_socks(relay *r, char *err, size_t cap)
{
    r->lfd = malloc(r->n * sizeof *r->lfd);
    if (!r->lfd) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (unsigned i = 0; i < r->n; i++) r->lfd[i] = -1;
    for (unsigned i = 0; i < r->n; i++) {
        qk_addr a = r->cfg->listen;
        addr_set_port(&a, (uint16_t)(addr_port(&a) + i));
        if ((r->lfd[i] = open_sock(&a, a.ss.ss_family, err, cap)) < 0) return -1;
    }
    r->ufd = open_sock(NULL, r->cfg->to.ss.ss_family, err, cap);
    return r->ufd < 0 ? -1 : 0;
}

static void close_socks(relay *r)
{
    for (unsigned i = 0; r->lfd && i < r->n; i++)
        if (r->lfd[i] >= 0) close(r->lfd[i]);
    free(r->lfd);
    if (r->ufd >= 0) close(r->ufd);
}

/* Wait for a socket or the next deadline, then read what came. Returns
 * false on a poll error. */
static bool relay_wait(relay *r, dir *fwd, dir *ret, struct pollfd *pf, qk_time wake, qk_time now,
                       qk_time *spin_until, const sigset_t *waitmask, qk_pkt_pool *pool, qk_time t0,
                       uint8_t *buf)
{
    for (unsigned i = 0; i < r->n; i++) pf[i] = (struct pollfd){r->lfd[i], POLLIN, 0};
    pf[r->n] = (struct pollfd){r->ufd, POLLIN, 0};
    int n = wait_until(pf, r->n + 1, wake, now, spin_until, waitmask);
    if (n < 0) return errno == EINTR;
    for (unsigned i = 0; n > 0 && i < r->n; i++)
        if (pf[i].revents & POLLIN) pump_in(r, fwd, r->lfd[i], (int)i, pool, t0, buf);
    if (n > 0 && (pf[r->n].revents & POLLIN)) pump_in(r, ret, r->ufd, -1, pool, t0, buf);
    return true;
}

int qk_relay_run(const qk_relay_cfg *cfg, volatile sig_atomic_t *stop, qk_relay_result *res,
                 char *err, size_t cap)
{
    qk_pkt_pool pool;
    qk_pkt_pool_init(&pool, 1u << 16);
    dir fwd, ret;
    relay r = {.cfg = cfg, .n = cfg->n_ports ? cfg->n_ports : 1, .ufd = -1};
    r.to_lo = addr_port(&cfg->to);
    for (size_t k = 0; k < cfg->n_dark && k < QK_RELAY_MAX_DARK; k++)
        r.dark_port[k] = cfg->dark[k].to_port;
    if (r.n > QK_RELAY_MAX_PORTS || qk_link_init(&fwd.link, &cfg->fwd, &pool, cfg->seed) ||
        qk_link_init(&ret.link, &cfg->ret, &pool, cfg->seed + 1)) {
        snprintf(err, cap, "invalid link configuration");
        return QK_ERR_CONFIG;
    }
    struct pollfd *pf = calloc(r.n + 1, sizeof *pf);
    if (!pf) snprintf(err, cap, "out of memory");
    if (!pf || open_socks(&r, err, cap)) {
        free(pf);
        close_socks(&r);
        qk_link_free(&fwd.link);
        qk_link_free(&ret.link);
        qk_pkt_pool_free(&pool);
        return QK_ERR_IO;
    }
    memset(&fwd.last, 0, sizeof fwd.last);
    memset(&ret.last, 0, sizeof ret.last);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake on time: the default slack is 50 us */
    uint8_t *buf = malloc(65536);
    uint64_t send_err = 0;
    qk_time spin_until = 0;
    qk_time t0 = mono_ns(), next_stats = QK_NS_PER_S;
    /* Block SIGINT/SIGTERM outside ppoll (waitmask lets them in there). */
    sigset_t block, oldmask, waitmask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &oldmask);
    waitmask = oldmask;
    sigdelset(&waitmask, SIGINT);
    sigdelset(&waitmask, SIGTERM);
    while (buf && !*stop) {
        qk_time now = mono_ns() - t0;
        if (cfg->duration_ns && now >= cfg->duration_ns) break;
        send_err += flush(&r, &fwd, true, &pool, now) + flush(&r, &ret, false, &pool, now);
        if (cfg->stats && now >= next_stats) {
            fprintf(cfg->stats, "netem t=%.0fs", (double)next_stats / 1e9);
            print_stats(cfg->stats, 1.0, &fwd, "fwd");
            print_stats(cfg->stats, 1.0, &ret, "ret");
            fprintf(cfg->stats, " send_err %llu dark_drops %llu\n", (unsigned long long)send_err,
                    (unsigned long long)r.dark_drops);
            fflush(cfg->stats);
            next_stats += QK_NS_PER_S;
        }
        qk_time wake = qk_link_next(&fwd.link), w2 = qk_link_next(&ret.link);
        if (w2 < wake) wake = w2;
        if (cfg->stats && next_stats < wake) wake = next_stats;
        if (cfg->duration_ns && cfg->duration_ns < wake) wake = cfg->duration_ns;
        if (!relay_wait(&r, &fwd, &ret, pf, wake, now, &spin_until, &waitmask, &pool, t0, buf))
            break;
    }
    if (res) {
        res->fwd = fwd.link.st;
        res->ret = ret.link.st;
        res->send_errors = send_err;
        res->dark_drops = r.dark_drops;
    }
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    free(buf);
    free(pf);
    close_socks(&r);
    qk_link_free(&fwd.link);
    qk_link_free(&ret.link);
    qk_pkt_pool_free(&pool);
    return 0;
}
