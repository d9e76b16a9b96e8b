/* SPDX-License-Identifier: MIT */
/* TCP delay line (src/sim/tcprelay.h): poll() loop, wall clock. */
#include "sim/tcprelay.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS 64
#include <stdbool.h>

typedef struct seg {
    qk_time release_ns;
    uint16_t len, off;
    uint8_t data[QK_TCPRELAY_SEG_BYTES];
} seg;

/* One direction: src -> segments -> dst. */
typedef struct dir {
    const qk_tcprelay_dir_cfg *cfg;
    seg *ring;
    size_t cap, head, len;
    qk_time last_departure_ns;
    bool eof, shut; /* src EOF seen; passed on to dst */
    uint64_t bytes;
} dir;

typedef struct pair {
    int fd[2]; /* 0 = client side, 1 = server side */
    dir d[2];  /* 0: client -> server (fwd), 1: server -> client (ret) */
    bool used;
} pair;

static qk_time now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (qk_time)ts.tv_sec * QK_NS_PER_S + (qk_time)ts.tv_nsec;
}

static size_t ring_cap(const qk_tcprelay_dir_cfg *c)
{
    /* the serializer's queue plus a delay's worth in flight, with slack */
    double inflight = (double)c->rate_bps / 8 * ((double)c->delay_ns / 1e9);
    if (!c->rate_bps) inflight = 64e6;
    double bytes = (double)c->limit_bytes + 1.25 * inflight + 1e6;
    return (size_t)(bytes / QK_TCPRELAY_SEG_BYTES) + 16;
}

static int dir_init(dir *d, const qk_tcprelay_dir_cfg *c)
{
    memset(d, 0, sizeof *d);
    d->cfg = c;
    d->cap = ring_cap(c);
    d->ring = malloc(d->cap * sizeof *d->ring);
    return d->ring ? 0 : QK_ERR_NOMEM;
}

/* Bytes still waiting for the serializer: its backlog, in time x rate. */
static bool dir_can_read(const dir *d, qk_time now)
{
    if (d->eof || d->len + 64 >= d->cap) return false;
    if (!d->cfg->rate_bps || d->last_departure_ns <= now) return true;
    double waiting = (double)(d->last_departure_ns - now) / 1e9 * (double)d->cfg->rate_bps / 8;
    return waiting < (double)d->cfg->limit_bytes;
}

/* Read from src into segments stamped with their release times. */
static int dir_read(dir *d, int src, qk_time now)
{
    uint8_t buf[65536];
    ssize_t n = read(src, buf, sizeof buf);
    if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (n == 0) {
        d->eof = true;
        return 0;
    }
    for (ssize_t off = 0; off < n;) {
        if (d->len == d->cap) return -1; /* cannot happen: 16 slots spare per read */
        size_t k = n - off < QK_TCPRELAY_SEG_BYTES ? (size_t)(n - off) : QK_TCPRELAY_SEG_BYTES;
        seg *s = &d->ring[(d->head + d->len++) % d->cap];
        memcpy(s->data, buf + off, k);
        s->len = (uint16_t)k;
        s->off = 0;
        qk_time start = d->last_departure_ns > now ? d->last_departure_ns : now;
        qk_time ser = d->cfg->rate_bps ? (qk_time)((double)k * 8e9 / (double)d->cfg->rate_bps) : 0;
        d->last_departure_ns = start + ser;
        s->release_ns = d->last_departure_ns + d->cfg->delay_ns;
        off += (ssize_t)k;
    }
    d->bytes += (uint64_t)n;
    return 0;
}

/* Write released segments to dst; pass EOF on once drained. */
static int dir_write(dir *d, int dst, qk_time now)
{
    while (d->len) {
        seg *s = &d->ring[d->head];
        if (s->release_ns > now) break;
        ssize_t w = send(dst, s->data + s->off, s->len - s->off, MSG_NOSIGNAL);
        if (w < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
        s->off += (uint16_t)w;
        if (s->off < s->len) return 0;
        d->head = (d->head + 1) % d->cap;
        d->len--;
    }
    if (!d->len && d->eof && !d->shut) {
        shutdown(dst, SHUT_WR);
        d->shut = true;
    }
    return 0;
}

static qk_time dir_next(const dir *d)
{
    return d->len ? d->ring[d->head].release_ns : QK_TIME_INFINITE;
}

static void pair_close(pair *p, bool reset)
{
    for (int i = 0; i < 2; i++) {
        if (reset) {
            struct linger l = {.l_onoff = 1, .l_linger = 0};
            setsockopt(p->fd[i], SOL_SOCKET, SO_LINGER, &l, sizeof l);
        }
        close(p->fd[i]);
        free(p->d[i].ring);
    }
    p->used = false;
}

static void opts(int fd)
{
    int one = 1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void accept_one(const qk_tcprelay_cfg *c, int lfd, pair *pairs)
{
    int cfd = accept(lfd, NULL, NULL);
    if (cfd < 0) return;
    int sfd = socket(c->to.ss.ss_family, SOCK_STREAM, 0);
    pair *p = NULL;
    for (int i = 0; i < MAX_PAIRS && !p; i++)
        if (!pairs[i].used) p = &pairs[i];
    if (!p || sfd < 0 || connect(sfd, (const struct sockaddr *)&c->to.ss, c->to.len)) {
        struct linger l = {.l_onoff = 1, .l_linger = 0};
        setsockopt(cfd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        close(cfd);
        if (sfd >= 0) close(sfd);
        return;
    }
    opts(cfd);
    opts(sfd);
    memset(p, 0, sizeof *p);
    p->fd[0] = cfd;
    p->fd[1] = sfd;
    if (dir_init(&p->d[0], &c->fwd) || dir_init(&p->d[1], &c->ret)) {
        p->used = true;
        pair_close(p, true);
        return;
    }
    p->used = true;
}

/* One pair's I/O after poll. Returns false when it ended. */
static bool pair_step(pair *p, const struct pollfd *pf, qk_time now)
{
    for (int i = 0; i < 2; i++) { /* direction i: fd[i] -> fd[1 - i] */
        dir *d = &p->d[i];
        if ((pf[i].revents & (POLLIN | POLLHUP | POLLERR)) && dir_can_read(d, now) &&
            dir_read(d, p->fd[i], now))
            return false; /* a reset: pass it on */
        if (dir_write(d, p->fd[1 - i], now)) return false;
    }
    return !(p->d[0].shut && p->d[1].shut);
}

static void stats_line(const qk_tcprelay_cfg *c, pair *pairs, qk_time start, qk_time now)
{
    uint64_t f = 0, r = 0;
    for (int i = 0; i < MAX_PAIRS; i++)
        if (pairs[i].used) f += pairs[i].d[0].bytes, r += pairs[i].d[1].bytes;
    fprintf(c->stats, "tcp netem %.0f s: fwd %llu bytes, ret %llu bytes\n",
            (double)(now - start) / 1e9, (unsigned long long)f, (unsigned long long)r);
    fflush(c->stats);
}

int qk_tcprelay_run(const qk_tcprelay_cfg *c, volatile sig_atomic_t *stop, char *err,
                    size_t err_cap)
{
    int lfd = socket(c->listen.ss.ss_family, SOCK_STREAM, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (const struct sockaddr *)&c->listen.ss, c->listen.len) ||
        listen(lfd, 64)) {
        snprintf(err, err_cap, "cannot listen on the --listen address: %s", strerror(errno));
        if (lfd >= 0) close(lfd);
        return QK_ERR_IO;
    }
    static pair pairs[MAX_PAIRS];
    memset(pairs, 0, sizeof pairs);
    qk_time start = now_ns(), next_stats = start + QK_NS_PER_S;
    while (!*stop && (!c->duration_ns || now_ns() - start < c->duration_ns)) {
        struct pollfd pf[1 + 2 * MAX_PAIRS];
        pf[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        qk_time now = now_ns(), due = now + 100 * QK_NS_PER_MS;
        for (int i = 0; i < MAX_PAIRS; i++) {
            pair *p = &pairs[i];
            for (int k = 0; k < 2; k++) {
                pf[1 + 2 * i + k] = (struct pollfd){.fd = p->used ? p->fd[k] : -1};
                if (!p->used) continue;
                if (dir_can_read(&p->d[k], now)) pf[1 + 2 * i + k].events |= POLLIN;
                if (p->d[1 - k].len && p->d[1 - k].ring[p->d[1 - k].head].release_ns <= now)
                    pf[1 + 2 * i + k].events |= POLLOUT;                  /* data due for fd[k] */
                if (!pf[1 + 2 * i + k].events) pf[1 + 2 * i + k].fd = -1; /* no HUP spin */
                qk_time t = dir_next(&p->d[k]);
                if (t < due) due = t;
            }
        }
        int ms = due > now ? (int)((due - now + QK_NS_PER_MS - 1) / QK_NS_PER_MS) : 0;
        if (poll(pf, 1 + 2 * MAX_PAIRS, ms) < 0 && errno != EINTR) break;
        now = now_ns();
        if (pf[0].revents & POLLIN) accept_one(c, lfd, pairs);
        for (int i = 0; i < MAX_PAIRS; i++)
            if (pairs[i].used && !pair_step(&pairs[i], &pf[1 + 2 * i], now))
                pair_close(&pairs[i], !(pairs[i].d[0].shut && pairs[i].d[1].shut));
        if (c->stats && now >= next_stats) {
            stats_line(c, pairs, start, now);
            next_stats += QK_NS_PER_S;
        }
    }
    for (int i = 0; i < MAX_PAIRS; i++)
        if (pairs[i].used) pair_close(&pairs[i], true);
    close(lfd);
    return 0;
}
