/* SPDX-License-Identifier: MIT */
#include "qk_pair.h"

#include "qk_test.h"
#include "transport/conn/conn.h"
#include <crypto/tls.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void qk_pair_set_addr(qk_addr *a, uint8_t last, uint16_t port)
{
    memset(a, 0, sizeof *a);
    struct sockaddr_in *s = (struct sockaddr_in *)&a->ss;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    s->sin_addr.s_addr = htonl(0x0a000000u | last);
    a->len = sizeof *s;
}

int qk_pair_init(qk_pair *p, qk_time delay_ns)
{
    memset(p, 0, sizeof *p);
    p->delay_ns = delay_ns;
    p->now = 1 * QK_NS_PER_S;
    p->rng_c = 1;
    p->rng_s = 2;
    qk_pair_set_addr(&p->caddr, 1, 40000);
    qk_pair_set_addr(&p->saddr, 2, 443);
    int rc = qk_cert_generate("quack.test", 0, 36500, &p->cert_pem, &p->key_pem);
    if (rc) return rc;
    qk_config_default(&p->ccfg);
    p->ccfg.alpn[0] = "test";
    p->ccfg.alpn_count = 1;
    p->ccfg.insecure = true;
    p->ccfg.rng = qk_test_rng;
    p->ccfg.rng_ctx = &p->rng_c;
    p->scfg = p->ccfg;
    p->scfg.insecure = false;
    p->scfg.server = true;
    p->scfg.cert_pem = p->cert_pem;
    p->scfg.key_pem = p->key_pem;
    p->scfg.rng_ctx = &p->rng_s;
    p->q = calloc(QK_PAIR_MAX_INFLIGHT, sizeof *p->q);
    return p->q ? 0 : QK_ERR_NOMEM;
}

int qk_pair_start(qk_pair *p)
{
    p->client = qk_endpoint_new(&p->ccfg);
    p->server = qk_endpoint_new(&p->scfg);
    if (!p->client || !p->server) return QK_ERR_CONFIG;
    int rc = qk_connect(p->client, &p->caddr, &p->saddr, "quack.test", p->now, &p->cconn);
    if (rc) return rc;
    qk_pair_flush(p);
    return 0;
}

void qk_pair_free(qk_pair *p)
{
    qk_endpoint_del(p->client);
    qk_endpoint_del(p->server);
    free(p->q);
    free(p->cert_pem);
    free(p->key_pem);
}

static void enqueue(qk_pair *p, bool to_server, const uint8_t *data, size_t len, uint8_t ecn)
{
    int dir = to_server ? 0 : 1;
    uint64_t idx = p->sent_idx[dir]++;
    if (p->nq == QK_PAIR_MAX_INFLIGHT) return; /* queue overflow = drop */
    qk_pair_pkt *k = &p->q[p->nq];
    memcpy(k->data, data, len);
    k->len = len;
    if (p->filter && !p->filter(p->filter_ctx, to_server, idx, k->data, &k->len)) return;
    qk_time start = p->now;
    if (p->rate_bps) {
        if (p->busy_until[dir] > start) start = p->busy_until[dir];
        start += (qk_time)len * 8 * QK_NS_PER_S / p->rate_bps;
        p->busy_until[dir] = start;
    }
    k->at = start + p->delay_ns;
    k->to_server = to_server;
    k->ecn = ecn;
    p->nq++;
}

static void drain(qk_pair *p, qk_endpoint *ep, bool to_server)
{
    static uint8_t bufs[16][1500];
    for (;;) {
        qk_datagram out[16];
        for (int i = 0; i < 16; i++) {
            memset(&out[i], 0, sizeof out[i]);
            out[i].data = bufs[i];
            out[i].len = sizeof bufs[i];
        }
        size_t n = qk_endpoint_send(ep, out, 16, p->now);
        for (size_t i = 0; i < n; i++) enqueue(p, to_server, out[i].data, out[i].len, out[i].ecn);
        if (n < 16) break;
    }
}

static void collect(qk_pair *p)
{
    qk_event ev;
    while (qk_endpoint_poll_event(p->client, &ev)) {
        if (ev.type == QK_EV_CLOSED) {
            if (getenv("QK_PAIR_DEBUG"))
                fprintf(stderr, "client closed: code 0x%llx err %d reason '%s'\n",
                        (unsigned long long)ev.error_code, ev.reason_err, ev.reason);
            if (ev.conn == p->cconn) p->cconn = NULL;
        }
        if (p->ncev < 256) p->cev[p->ncev++] = ev;
    }
    while (qk_endpoint_poll_event(p->server, &ev)) {
        if (!p->sconn && ev.conn && ev.type != QK_EV_CLOSED) p->sconn = ev.conn;
        if (ev.type == QK_EV_CLOSED) {
            if (getenv("QK_PAIR_DEBUG"))
                fprintf(stderr, "server closed: code 0x%llx err %d reason '%s'\n",
                        (unsigned long long)ev.error_code, ev.reason_err, ev.reason);
            if (ev.conn == p->sconn) p->sconn = NULL;
        }
        if (p->nsev < 256) p->sev[p->nsev++] = ev;
    }
}

void qk_pair_flush(qk_pair *p)
{
    drain(p, p->client, true);
    drain(p, p->server, false);
}

bool qk_pair_step(qk_pair *p)
{
    qk_time t = QK_TIME_INFINITE;
    size_t qi = SIZE_MAX;
    for (size_t i = 0; i < p->nq; i++)
        if (p->q[i].at < t) {
            t = p->q[i].at;
            qi = i;
        }
    qk_time tc = qk_endpoint_next_timeout(p->client), ts = qk_endpoint_next_timeout(p->server);
    qk_time tt = tc < ts ? tc : ts;
    if (tt < p->now) tt = p->now;
    if (tt <= t) {
        if (tt == QK_TIME_INFINITE) return false;
        p->now = tt;
        if (tc <= p->now) qk_endpoint_on_timeout(p->client, p->now);
        if (ts <= p->now) qk_endpoint_on_timeout(p->server, p->now);
    } else {
        p->now = t;
        qk_pair_pkt k = p->q[qi];
        p->q[qi] = p->q[--p->nq];
        qk_datagram d = {.data = k.data, .len = k.len, .ecn = k.ecn};
        d.peer = k.to_server ? p->caddr : p->saddr;
        d.local = k.to_server ? p->saddr : p->caddr;
        p->bytes[k.to_server ? 0 : 1] += k.len;
        if (getenv("QK_PAIR_DEBUG") && atoi(getenv("QK_PAIR_DEBUG")) > 1)
            fprintf(stderr, "%.3f ms %s %zu bytes first=%02x\n", (p->now - 1e9) / 1e6,
                    k.to_server ? "->" : "<-", k.len, k.data[0]);
        qk_endpoint_recv(k.to_server ? p->server : p->client, &d, p->now);
    }
    collect(p);
    qk_pair_flush(p);
    return true;
}

bool qk_pair_run_until(qk_pair *p, bool (*cond)(qk_pair *, void *), void *ctx, qk_time deadline)
{
    while (!cond(p, ctx)) {
        if (p->now > deadline || !qk_pair_step(p)) return cond(p, ctx);
    }
    return true;
}

bool qk_pair_confirmed(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->cconn && p->sconn && qk_conn_established(p->cconn) && qk_conn_established(p->sconn) &&
           p->cconn->handshake_confirmed;
}

const qk_event *qk_pair_client_closed(qk_pair *p)
{
    for (size_t i = 0; i < p->ncev; i++)
        if (p->cev[i].type == QK_EV_CLOSED) return &p->cev[i];
    return NULL;
}

bool qk_pair_client_gone(qk_pair *p, void *ctx)
{
    (void)ctx;
    return qk_pair_client_closed(p) != NULL;
}

void qk_pair_write_pattern(qk_conn *c, uint64_t sid, size_t total, size_t *written)
{
    uint8_t buf[16384];
    while (*written < total) {
        size_t n = total - *written < sizeof buf ? total - *written : sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = qk_test_pattern(*written + i);
        long w = qk_stream_write(c, sid, buf, n, *written + n == total);
        if (w <= 0) break;
        *written += (size_t)w;
    }
}

bool qk_pair_read_pattern(qk_conn *c, uint64_t sid, size_t *read, bool *mismatch)
{
    uint8_t buf[16384];
    for (;;) {
        bool fin = false;
        long n = qk_stream_read(c, sid, buf, sizeof buf, &fin);
        if (n < 0) return false;
        for (long i = 0; i < n; i++)
            if (buf[i] != qk_test_pattern(*read + (size_t)i)) *mismatch = true;
        *read += (size_t)n;
        if (fin) return true;
        if (n == 0) return false;
    }
}

int qk_pair_request_download(qk_pair *p, uint64_t *sid)
{
    int rc = qk_stream_open(p->cconn, true, sid);
    if (rc) return rc;
    long w = qk_stream_write(p->cconn, *sid, (const uint8_t *)"download", 8, true);
    return w == 8 ? 0 : (w < 0 ? (int)w : QK_ERR_STATE);
}

long qk_pair_read_request(qk_conn *s, uint64_t sid)
{
    uint8_t req[8];
    bool fin = false;
    return qk_stream_read(s, sid, req, sizeof req, &fin);
}

bool qk_pair_loss5_filter(void *ctx, bool to_server, uint64_t idx, uint8_t *data, size_t *len)
{
    uint64_t *rng = ctx;
    (void)to_server;
    (void)idx;
    (void)data;
    (void)len;
    return qk_test_rand64(rng) % 100 >= 5; /* 5% loss both ways */
}

int qk_pair_deliver_vn(qk_pair *p, const uint32_t *versions, size_t n)
{
    qk_conn *c = p->cconn;
    static uint8_t vn[256];
    int len = qk_pkt_encode_vn(vn, sizeof vn, 0x40, c->cids.lcid[0].cid.b, c->cids.lcid[0].cid.len,
                               c->cids.initial_dcid.b, c->cids.initial_dcid.len, versions, n);
    if (len <= 0) return QK_ERR_INVALID_ARG;
    qk_datagram d = {.data = vn, .len = (size_t)len, .peer = p->saddr, .local = p->caddr};
    return qk_endpoint_recv(p->client, &d, p->now);
}
