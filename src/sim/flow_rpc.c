/* SPDX-License-Identifier: MIT */
/* RPC mode of the "quic" flow type: see flow_rpc.h. */
#include "sim/flow_rpc.h"

#include <string.h>

int qk_rpc_init(qk_rpc *r, uint64_t size_bytes, uint64_t max_rpcs, const char *csv_path)
{
    memset(r, 0, sizeof *r);
    r->size_bytes = size_bytes;
    r->max_rpcs = max_rpcs;
    for (size_t i = 0; i < sizeof r->buf; i++) r->buf[i] = (uint8_t)(i * 131u);
    if (csv_path) {
        r->csv = fopen(csv_path, "w");
        if (!r->csv) return QK_ERR_IO;
        fprintf(r->csv, "start_s,latency_us\n");
    }
    return 0;
}

void qk_rpc_free(qk_rpc *r)
{
    if (r->csv) fclose(r->csv);
    r->csv = NULL;
    qk_hist_free(&r->lat);
}

/* Write what the send buffer takes of the current request. */
static void push_request(qk_rpc *r, qk_conn *c)
{
    while (r->written < r->size_bytes) {
        uint64_t left = r->size_bytes - r->written;
        size_t n = left < sizeof r->buf ? (size_t)left : sizeof r->buf;
        long w = qk_stream_write(c, r->sid, r->buf, n, left == n);
        if (w <= 0) return;
        r->written += (uint64_t)w;
        if ((size_t)w < n) return;
    }
}

static void start_rpc(qk_rpc *r, qk_conn *c, qk_time now)
{
    if (r->active || (r->max_rpcs && r->started >= r->max_rpcs)) return;
    if (qk_stream_open(c, true, &r->sid)) {
        r->blocked = true; /* QK_EV_STREAMS_AVAILABLE retries */
        return;
    }
    r->blocked = false;
    r->active = true;
    r->started++;
    r->written = 0;
    r->t0 = now;
    push_request(r, c);
}

/* Client: the response (1 byte + FIN) of the current RPC. */
static void read_response(qk_rpc *r, qk_conn *c, uint64_t sid, qk_time now)
{
    uint8_t b[64];
    bool fin = false;
    long n;
    while ((n = qk_stream_read(c, sid, b, sizeof b, &fin)) > 0 && !fin) {
    }
    if (!fin || !r->active || sid != r->sid) return;
    r->active = false;
    r->done++;
    qk_time lat = now - r->t0;
    qk_hist_add(&r->lat, lat);
    if (lat > r->max_ns) r->max_ns = lat;
    if (r->csv) fprintf(r->csv, "%.6f,%.3f\n", (double)r->t0 / 1e9, (double)lat / 1e3);
    start_rpc(r, c, now);
}

/* Server: drain the request; at its FIN answer with one byte and FIN. */
static void serve(qk_rpc *r, qk_conn *c, uint64_t sid)
{
    uint8_t b[16384];
    bool fin = false;
    long n;
    while ((n = qk_stream_read(c, sid, b, sizeof b, &fin)) > 0 && !fin) {
    }
    if (!fin) return;
    static const uint8_t one = 1;
    if (qk_stream_write(c, sid, &one, 1, true) == 1) r->resp_sent++;
}

void qk_rpc_on_event(void *ctx, qk_simq *q, bool server, const qk_event *ev, qk_time now)
{
    qk_rpc *r = ctx;
    (void)q;
    if (!ev->conn) return;
    if (server) {
        if (ev->type == QK_EV_STREAM_OPENED || ev->type == QK_EV_STREAM_READABLE)
            serve(r, ev->conn, ev->stream_id);
        return;
    }
    switch (ev->type) {
    case QK_EV_CONNECTED: start_rpc(r, ev->conn, now); break;
    case QK_EV_STREAMS_AVAILABLE:
        if (r->blocked) start_rpc(r, ev->conn, now);
        break;
    case QK_EV_STREAM_WRITABLE:
        if (r->active && ev->stream_id == r->sid) push_request(r, ev->conn);
        break;
    case QK_EV_STREAM_READABLE: read_response(r, ev->conn, ev->stream_id, now); break;
    default: break;
    }
}

void qk_rpc_summary(const qk_rpc *r, char *buf, size_t cap)
{
    double p50 = (double)qk_hist_pct(&r->lat, 50) / 1e6,
           p99 = (double)qk_hist_pct(&r->lat, 99) / 1e6;
    double p999 = (double)qk_hist_pct(&r->lat, 99.9) / 1e6;
    if (!r->done) p50 = p99 = p999 = 0;
    snprintf(buf, cap, "rpcs=%llu p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f",
             (unsigned long long)r->done, p50, p99, p999, (double)r->max_ns / 1e6);
}
