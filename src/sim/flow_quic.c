/* SPDX-License-Identifier: MIT */
/* The "quic" flow type: a client and a server qk_endpoint as simulator nodes.
 *
 * Each endpoint is a sim node: recv -> qk_endpoint_recv, next_timeout ->
 * qk_endpoint_next_timeout, on_timeout -> qk_endpoint_on_timeout; after every
 * callback the application step runs (events, stream opens, writes, reads) and
 * qk_endpoint_send is drained into qk_sim_send. The sender writes a pattern
 * that depends on (stream, offset); the receiver checks every byte and both
 * keep an FNV-1a hash of what they wrote / read. */
#include "sim/flow_quic.h"
#include "sim/flow_rpc.h"

#include "crypto/tls.h"
#include "sim/sim_int.h"

#include <quack/io.h>
#include "transport/endpoint/endpoint.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SIMQ_CHUNK_BYTES 16384
#define SIMQ_BATCH       16
#define SIMQ_REQ_BYTES   8
#define FNV_OFFSET       0xcbf29ce484222325ull
#define FNV_PRIME        0x100000001b3ull

/* A stream's running hash (hash_add): 8-byte words, whatever the chunking. */
typedef struct simq_hash {
    uint64_t h[4];  /* word i goes into h[i % 4] (four independent chains) */
    uint64_t words; /* whole words so far */
    uint64_t word;  /* the bytes of the word being filled, little-endian */
    unsigned fill;  /* how many (0-7) */
} simq_hash;

typedef struct simq_stream {
    uint64_t sid;
    uint64_t total; /* bytes this stream carries (UINT64_MAX: duration-bound) */
    uint64_t written, read;
    simq_hash hash_w, hash_r;
    uint8_t req[SIMQ_REQ_BYTES];
    uint8_t req_len;
    bool opened, req_sent, req_read, fin_w, fin_r;
} simq_stream;

typedef struct simq_side {
    qk_simq *q;
    bool server;
    qk_endpoint *ep;
    qk_conn *conn;
    int node;
    uint64_t rng;
    qk_config cfg;
} simq_side;

struct qk_simq {
    qk_sim *sim;
    qk_simq_cfg cfg;
    simq_side cli, srv;
    qk_addr caddr, saddr;
    char *cert_pem, *key_pem;
    bool started, open_blocked;
    simq_stream *st;
    uint32_t n, next_open, first_unfinished;
    uint64_t open_now;
    qk_time read_wake_ns;   /* throttled reader: next time it may read */
    qk_time read_refill_ns; /* token bucket of the throttled reader */
    double read_tokens;
    qk_simq_result r;
    uint8_t rx[65536];
    uint8_t tx[SIMQ_BATCH][1500];
    qk_datagram out[SIMQ_BATCH]; /* drain's batch */
    uint8_t scratch[SIMQ_CHUNK_BYTES];
};

/* Byte off of stream idx is (uint8_t)(((off + idx * 7919) * PATTERN_STEP) >> 13)
 * (64-bit product). Bits 13-20 of a product depend only on its low 21 bits,
 * so the sequence repeats every 2^21 bytes and one table holds every
 * stream's bytes: stream idx's byte off is pattern_table[(off + idx * 7919)
 * mod 2^21]. The table runs on by a chunk so that a chunk is contiguous.
 * Sender and receiver compare and copy with memcmp/pointers instead of
 * computing each byte (that was half of a long simulation's CPU time). */
#define PATTERN_STEP         2654435761u
#define PATTERN_PERIOD_BYTES (1u << 21)
static uint8_t pattern_table[PATTERN_PERIOD_BYTES + SIMQ_CHUNK_BYTES];
static pthread_once_t pattern_once = PTHREAD_ONCE_INIT;

static void pattern_init(void)
{
    for (uint64_t x = 0; x < sizeof pattern_table; x++)
        pattern_table[x] = (uint8_t)(((x % PATTERN_PERIOD_BYTES) * PATTERN_STEP) >> 13);
}

/* Stream idx's bytes from off on (at least SIMQ_CHUNK_BYTES of them). */
static const uint8_t *pattern_at(uint32_t idx, uint64_t off)
{
    pthread_once(&pattern_once, pattern_init);
    return pattern_table + ((off + (uint64_t)idx * 7919u) & (PATTERN_PERIOD_BYTES - 1));
}

/* The hash compares what was written with what was read; both sides see the
 * same bytes in different chunks, so it runs over 8-byte words (word i into
 * chain i mod 4, each step FNV's multiply and a fold: a bijection of the
 * chain, so one changed word always changes the result) and carries a
 * partial word between calls. */
static inline uint64_t hash_step(uint64_t h, uint64_t w)
{
    h = (h ^ w) * FNV_PRIME;
    return h ^ (h >> 32);
}

static void hash_word(simq_hash *s, uint64_t w)
{
    uint64_t *h = &s->h[s->words++ & 3];
    *h = hash_step(*h, w);
}

static void hash_add(simq_hash *s, const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i < n && s->fill; i++) {
        s->word |= (uint64_t)p[i] << (8 * s->fill);
        if (++s->fill == 8) {
            hash_word(s, s->word);
            s->word = 0;
            s->fill = 0;
        }
    }
    for (; i + 8 <= n && (s->words & 3); i += 8) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        hash_word(s, w);
    }
    uint64_t h0 = s->h[0], h1 = s->h[1], h2 = s->h[2], h3 = s->h[3];
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, sizeof w);
        h0 = hash_step(h0, w[0]);
        h1 = hash_step(h1, w[1]);
        h2 = hash_step(h2, w[2]);
        h3 = hash_step(h3, w[3]);
        s->words += 4;
    }
    s->h[0] = h0, s->h[1] = h1, s->h[2] = h2, s->h[3] = h3;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        hash_word(s, w);
    }
    for (; i < n; i++) s->word |= (uint64_t)p[i] << (8 * s->fill++);
}

/* The hash of the whole stream (its length's remainder mod 8 included). */
static uint64_t hash_end(simq_hash s)
{
    uint64_t h = hash_step(s.h[0], s.word ^ (uint64_t)s.fill << 56);
    h = hash_step(h, s.h[1]);
    h = hash_step(h, s.h[2]);
    h = hash_step(h, s.h[3]);
    return hash_step(h, s.words);
}

static void side_rng(void *ctx, uint8_t *buf, size_t len)
{
    uint64_t *s = ctx;
    for (size_t i = 0; i < len; i++) {
        /* splitmix64 */
        uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        buf[i] = (uint8_t)((z ^ (z >> 31)) >> 56);
    }
}

static bool is_sender(const qk_simq *q, const simq_side *s)
{
    return q->cfg.upload ? !s->server : s->server;
}

static qk_time deadline(const qk_simq *q)
{
    return q->cfg.duration_ns ? q->cfg.start_ns + q->cfg.duration_ns : QK_TIME_INFINITE;
}

/* ------------------------------------------------------------------------ */
/* Application: reading and writing streams. */

static simq_stream *stream_of(qk_simq *q, uint64_t sid)
{
    if (sid & 3) return NULL; /* only client-initiated bidirectional streams */
    uint64_t idx = sid / 4;
    return idx < q->n ? &q->st[idx] : NULL;
}

static void mark_done(qk_simq *q, simq_side *s, qk_time now)
{
    q->r.streams_done++;
    if (q->open_now) q->open_now--;
    if (q->r.streams_done < q->n) return;
    q->r.done = true;
    q->r.completion_ns = now;
    if (!q->cfg.keep_open && s->conn) qk_conn_close(s->conn, 0, "transfer complete");
}

/* Bytes a rate-limited reader may read at `now`: a token bucket at
 * read_rate_bps holding at most one 16 KiB read (an application that was
 * idle cannot drain faster later). Consumes nothing: see read_take. */
static size_t read_allowance(qk_simq *q, qk_time now)
{
    if (!q->cfg.read_rate_bps) return sizeof q->scratch;
    double add = (double)(now - q->read_refill_ns) * (double)q->cfg.read_rate_bps / 8e9;
    q->read_tokens += add;
    if (q->read_tokens > SIMQ_CHUNK_BYTES) q->read_tokens = SIMQ_CHUNK_BYTES;
    q->read_refill_ns = now;
    if (q->read_tokens < 1200) { /* wake when one datagram's worth is allowed */
        double wait = (1200 - q->read_tokens) * 8e9 / (double)q->cfg.read_rate_bps;
        q->read_wake_ns = now + (qk_time)wait + 1;
        return 0;
    }
    return (size_t)q->read_tokens;
}

/* Receiver: read and check everything readable on stream k. */
static void read_data(qk_simq *q, simq_side *s, simq_stream *k, qk_time now)
{
    uint32_t idx = (uint32_t)(k - q->st);
    while (!k->fin_r && s->conn) {
        bool fin = false;
        size_t cap = read_allowance(q, now);
        if (!cap) return; /* the application is slow: data stays buffered */
        long n = qk_stream_read(s->conn, k->sid, q->scratch, cap, &fin);
        if (n < 0) break;
        if (q->cfg.read_rate_bps) q->read_tokens -= (double)n;
        if (n > 0 && memcmp(q->scratch, pattern_at(idx, k->read), (size_t)n)) q->r.mismatch = true;
        hash_add(&k->hash_r, q->scratch, (size_t)n);
        k->read += (uint64_t)n;
        q->r.read_bytes += (uint64_t)n;
        if (fin) {
            k->fin_r = true;
            q->r.hash_read += hash_end(k->hash_r);
            if (k->total != UINT64_MAX && k->read != k->total) q->r.mismatch = true;
            /* RFC 9000 §3: the stream only ends (and its credit returns with
             * MAX_STREAMS) once both halves are done: the upload's server ends
             * its empty response. */
            if (s->server && s->conn) qk_stream_write(s->conn, k->sid, NULL, 0, true);
            mark_done(q, s, now);
        }
        if (n == 0) break;
    }
}

/* Server of a download: read the 8-byte request (the stream's size) and its FIN. */
static void read_request(qk_simq *q, simq_side *s, simq_stream *k)
{
    while (!k->req_read && s->conn) {
        bool fin = false;
        uint8_t buf[64];
        long n = qk_stream_read(s->conn, k->sid, buf, sizeof buf, &fin);
        if (n < 0) break;
        for (long i = 0; i < n; i++) {
            if (k->req_len < SIMQ_REQ_BYTES)
                k->req[k->req_len++] = buf[i];
            else
                q->r.mismatch = true;
        }
        if (fin) {
            k->req_read = true; /* the response may start */
            uint64_t want = 0;
            for (int i = 0; i < SIMQ_REQ_BYTES; i++) want = want << 8 | k->req[i];
            if (k->req_len != SIMQ_REQ_BYTES || want != k->total) q->r.mismatch = true;
        }
        if (n == 0) break;
    }
}

/* Client of an upload: the server's half carries nothing but its FIN. */
static void drain_response(qk_simq *q, simq_side *s, simq_stream *k)
{
    for (;;) {
        bool fin = false;
        uint8_t buf[64];
        long n = qk_stream_read(s->conn, k->sid, buf, sizeof buf, &fin);
        if (n > 0) q->r.mismatch = true;
        if (n <= 0 || fin) return;
    }
}

/* Sender: write as much of stream k as the send buffer takes. */
static void write_data(qk_simq *q, simq_side *s, simq_stream *k, qk_time now)
{
    uint32_t idx = (uint32_t)(k - q->st);
    bool timed = k->total == UINT64_MAX;
    while (!k->fin_w && s->conn) {
        if (timed && now >= deadline(q)) {
            if (qk_stream_write(s->conn, k->sid, NULL, 0, true) < 0) return;
            k->fin_w = true;
            q->r.hash_written += hash_end(k->hash_w);
            return;
        }
        uint64_t left = k->total - k->written;
        size_t n = left < SIMQ_CHUNK_BYTES ? (size_t)left : SIMQ_CHUNK_BYTES;
        bool fin = !timed && k->written + n == k->total;
        const uint8_t *data = pattern_at(idx, k->written);
        long w = qk_stream_write(s->conn, k->sid, data, n, fin);
        if (w <= 0) return;
        hash_add(&k->hash_w, data, (size_t)w);
        k->written += (uint64_t)w;
        q->r.written_bytes += (uint64_t)w;
        if (fin && (size_t)w == n) {
            k->fin_w = true;
            q->r.hash_written += hash_end(k->hash_w);
        }
        if ((size_t)w < n) return;
    }
}

/* Client: open streams (and send download requests) until the peer's limit. */
static void client_open(qk_simq *q, simq_side *s)
{
    while (!q->open_blocked && q->next_open < q->n && s->conn) {
        uint64_t sid;
        int rc = qk_stream_open(s->conn, true, &sid);
        if (rc == QK_ERR_STREAM_LIMIT) {
            if (q->r.connected) q->r.stream_limit_hits++;
            q->open_blocked = true;
            return;
        }
        if (rc) return;
        simq_stream *k = &q->st[q->next_open++];
        if (k->sid != sid) q->r.mismatch = true; /* ids are handed out in order */
        k->opened = true;
        if (++q->open_now > q->r.max_open_streams) q->r.max_open_streams = q->open_now;
    }
}

static void client_requests(qk_simq *q, simq_side *s)
{
    for (uint32_t i = q->first_unfinished; i < q->next_open && s->conn; i++) {
        simq_stream *k = &q->st[i];
        if (k->req_sent) continue;
        uint8_t req[SIMQ_REQ_BYTES];
        for (int b = 0; b < SIMQ_REQ_BYTES; b++) req[b] = (uint8_t)(k->total >> (56 - 8 * b));
        if (qk_stream_write(s->conn, k->sid, req, sizeof req, true) == (long)sizeof req)
            k->req_sent = true;
        else
            return;
    }
}

static void handle_event(qk_simq *q, simq_side *s, const qk_event *ev, qk_time now)
{
    if (getenv("QK_SIMQ_DEBUG"))
        fprintf(stderr, "%.6f %s ev %d sid %llu err %d %s\n", now / 1e9, s->server ? "S" : "C",
                ev->type, (unsigned long long)ev->stream_id, ev->reason_err, ev->reason);
    if (q->cfg.on_event) q->cfg.on_event(q->cfg.ctx, q, s->server, ev, now);
    simq_stream *k;
    switch (ev->type) {
    case QK_EV_CONNECTED:
        if (!s->server) {
            q->r.connected = true;
            q->r.connected_ns = now;
            q->open_blocked = false; /* the peer's transport parameters are known now */
        } else if (!s->conn) {
            s->conn = ev->conn;
        }
        break;
    case QK_EV_STREAMS_AVAILABLE:
        if (!s->server) q->r.streams_available++;
        q->open_blocked = false;
        break;
    case QK_EV_STREAM_OPENED:
    case QK_EV_STREAM_READABLE:
        if (!s->server && !s->conn) break;
        if (s->server && !s->conn) s->conn = ev->conn;
        if (q->cfg.no_transfer || !(k = stream_of(q, ev->stream_id))) break;
        if (is_sender(q, s) && s->server)
            read_request(q, s, k);
        else if (is_sender(q, s))
            drain_response(q, s, k);
        else
            read_data(q, s, k, now);
        break;
    case QK_EV_CLOSED:
        if (s->server) {
            q->r.server_closed = true;
            q->r.server_close = *ev;
            qk_conn_stats_get(ev->conn, &q->r.server_stats);
        } else {
            q->r.client_closed = true;
            q->r.client_close = *ev;
            qk_conn_stats_get(ev->conn, &q->r.client_stats);
        }
        if (ev->conn == s->conn) s->conn = NULL;
        break;
    default: break;
    }
}

static void app_step(qk_simq *q, simq_side *s, qk_time now)
{
    qk_event ev;
    while (qk_endpoint_poll_event(s->ep, &ev)) handle_event(q, s, &ev, now);
    if (q->cfg.no_transfer || !s->conn) return;
    if (!s->server) {
        client_open(q, s);
        if (!q->cfg.upload) client_requests(q, s);
    }
    if (!is_sender(q, s) && q->read_wake_ns != QK_TIME_INFINITE && now >= q->read_wake_ns) {
        q->read_wake_ns = QK_TIME_INFINITE; /* the throttled reader's turn */
        for (uint32_t i = 0; i < q->next_open && s->conn; i++)
            if (!q->st[i].fin_r) read_data(q, s, &q->st[i], now);
    }
    if (is_sender(q, s)) {
        while (q->first_unfinished < q->n && q->st[q->first_unfinished].fin_w)
            q->first_unfinished++;
        for (uint32_t i = q->first_unfinished; i < q->n && s->conn; i++) {
            simq_stream *k = &q->st[i];
            bool ready = q->cfg.upload ? k->opened : k->req_read;
            if (ready && !k->fin_w) write_data(q, s, k, now);
        }
    }
    if (s->conn) qk_conn_stats_get(s->conn, s->server ? &q->r.server_stats : &q->r.client_stats);
}

/* ------------------------------------------------------------------------ */
/* Node adapter. */

static void drain(qk_simq *q, simq_side *s, qk_time now)
{
    for (;;) {
        /* qk_endpoint_send's inputs are data and len; it writes the rest
         * of each datagram it produces. q->out (zeroed once, with q) saves
         * zeroing 16 datagrams' addresses per call: that cost a tenth of a
         * simulation's time. */
        qk_datagram *out = q->out;
        for (int i = 0; i < SIMQ_BATCH; i++) {
            out[i].data = q->tx[i];
            out[i].len = sizeof q->tx[i];
            out[i].ecn = 0;
            out[i].segment_bytes = 0;
        }
        size_t batch = q->cfg.on_send ? 1 : SIMQ_BATCH;
        size_t n = qk_endpoint_send(s->ep, out, batch, now);
        for (size_t i = 0; i < n; i++) {
            size_t seg = out[i].segment_bytes ? out[i].segment_bytes : out[i].len;
            size_t *mx = s->server ? &q->r.server_max_dgram_bytes : &q->r.client_max_dgram_bytes;
            if (seg > *mx) *mx = seg;
            if (!s->server && !(out[i].data[0] & 0x80) && q->r.first_1rtt_ns == QK_TIME_INFINITE)
                q->r.first_1rtt_ns = now; /* RFC 9000 §17.3: short header */
            *(s->server ? &q->r.server_tx_bytes : &q->r.client_tx_bytes) += out[i].len;
            qk_sim_send(q->sim, s->node, &out[i]);
            if (q->cfg.on_send) q->cfg.on_send(q->cfg.ctx, q, s->server, &out[i], now);
        }
        if (n < batch) break;
    }
}

static void after_callback(qk_simq *q, simq_side *s, qk_time now)
{
    app_step(q, s, now);
    drain(q, s, now);
    /* Closing the connection or finishing the app may have queued more events. */
    app_step(q, s, now);
    drain(q, s, now);
}

static void node_recv(void *ctx, qk_sim *sim, const qk_datagram *d, qk_time now)
{
    (void)sim;
    simq_side *s = ctx;
    qk_simq *q = s->q;
    if (d->len > sizeof q->rx) return;
    memcpy(q->rx, d->data, d->len);
    qk_datagram in = *d;
    in.data = q->rx;
    *(s->server ? &q->r.server_rx_bytes : &q->r.client_rx_bytes) += d->len;
    qk_endpoint_recv(s->ep, &in, now);
    after_callback(q, s, now);
}

static qk_time node_next_timeout(void *ctx)
{
    simq_side *s = ctx;
    qk_simq *q = s->q;
    if (!s->server && !q->started) return q->cfg.start_ns;
    qk_time t = qk_endpoint_next_timeout(s->ep);
    qk_time dl = deadline(q);
    if (s->conn && is_sender(q, s) && !q->cfg.no_transfer && q->first_unfinished < q->n && dl < t)
        t = dl;
    if (s->conn && !is_sender(q, s) && q->read_wake_ns < t) t = q->read_wake_ns;
    return t;
}

static void node_on_timeout(void *ctx, qk_sim *sim, qk_time now)
{
    simq_side *s = ctx;
    qk_simq *q = s->q;
    if (!s->server && !q->started) {
        if (now < q->cfg.start_ns) return;
        q->started = true;
        int rc = qk_connect(s->ep, &q->caddr, &q->saddr, "quack.sim", now, &s->conn);
        if (rc) {
            s->conn = NULL;
            q->r.mismatch = true;
            return;
        }
        after_callback(q, s, now);
        return;
    }
    (void)sim;
    qk_endpoint_on_timeout(s->ep, now);
    after_callback(q, s, now);
}

static const qk_sim_node_ops simq_node_ops = {node_recv, node_next_timeout, node_on_timeout};

/* ------------------------------------------------------------------------ */
/* Construction. */

/* Flow-control keys (both endpoints; the receiver's settings are what count). */
static void apply_flow_cfg(const qk_simq_cfg *f, qk_config *c)
{
    if (f->autotune) c->autotune = f->autotune > 0;
    c->autotune_rule = f->autotune_rule;
    if (f->max_window_bytes) c->max_stream_window_bytes = f->max_window_bytes;
    if (f->conn_window_bytes) c->initial_max_data_bytes = f->conn_window_bytes;
    if (f->max_conn_window_bytes) c->max_conn_window_bytes = f->max_conn_window_bytes;
    if (f->budget_bytes) c->recv_budget_bytes = f->budget_bytes;
    if (f->udp_payload_bytes) c->max_udp_payload_bytes = f->udp_payload_bytes;
    c->no_protection = f->no_protection;
    /* With the window keys in use the sender must not be the limit: its
     * buffer covers the largest window (unacked data lingers an RTT longer
     * than the credit it used). */
    uint64_t sb = f->send_buffer_bytes;
    if (!sb && f->autotune > 0) sb = c->max_stream_window_bytes;
    if (!sb && f->autotune < 0 && f->window_bytes) sb = 4 * f->window_bytes;
    if (sb) c->max_stream_send_buffer_bytes = sb;
}

static void setup_cfg(qk_simq *q, simq_side *s, bool server, uint64_t seed)
{
    s->q = q;
    s->server = server;
    s->rng = seed;
    qk_config_default(&s->cfg);
    s->cfg.server = server;
    s->cfg.alpn[0] = "quack-sim";
    s->cfg.alpn_count = 1;
    s->cfg.cc = q->cfg.cc;
    s->cfg.rng = side_rng;
    s->cfg.rng_ctx = &s->rng;
    qk_io_log_files(&s->cfg, q->cfg.qlog_dir, NULL);
    s->cfg.max_datagram_frame_bytes = 1200;
    if (server) {
        s->cfg.cert_pem = q->cert_pem;
        s->cfg.key_pem = q->key_pem;
    } else {
        s->cfg.insecure = true; /* a self-signed certificate made for this run */
    }
    if (q->cfg.streams > s->cfg.max_streams_bidi) {
        /* flow control must admit all streams' data at once or they starve */
        uint64_t per = q->cfg.size_bytes / q->cfg.streams + 1;
        if (s->cfg.initial_max_stream_data_bytes < per) s->cfg.initial_max_stream_data_bytes = per;
    }
    if (q->cfg.window_bytes) {
        s->cfg.initial_max_stream_data_bytes = q->cfg.window_bytes;
        s->cfg.max_stream_send_buffer_bytes = q->cfg.window_bytes;
        if (s->cfg.initial_max_data_bytes < q->cfg.window_bytes)
            s->cfg.initial_max_data_bytes = q->cfg.window_bytes;
    }
    apply_flow_cfg(&q->cfg, &s->cfg);
    if (q->cfg.ackfreq_set) {
        s->cfg.ack_frequency = q->cfg.ack_frequency;
        s->cfg.ack_frequency_threshold = q->cfg.ackfreq_threshold;
        s->cfg.ack_frequency_delay_ns = q->cfg.ackfreq_delay_ns;
        s->cfg.ack_frequency_reorder = q->cfg.ackfreq_reorder;
    }
    if (q->cfg.min_ack_delay_set) s->cfg.min_ack_delay_ns = q->cfg.min_ack_delay_ns;
    if (q->cfg.pacing_gain_pct) s->cfg.pacing_gain_ca_pct = q->cfg.pacing_gain_pct;
    s->cfg.pacing_burst_pkts = q->cfg.pacing_burst_pkts;
    /* ECN end to end (RFC 9000 §13.4): the codepoint rides in the simulator's
     * packets, so marking AQMs mark these flows instead of dropping. */
    s->cfg.ecn =
        q->cfg.ecn > 0 ||
        (q->cfg.ecn == 0 && (q->cfg.cc == QK_CONFIG_CC_DCTCP || q->cfg.cc == QK_CONFIG_CC_PRAGUE));
    if (q->cfg.tune) q->cfg.tune(q->cfg.ctx, &s->cfg, server);
}

void qk_simq_del(qk_simq *q)
{
    if (!q) return;
    qk_endpoint_del(q->cli.ep);
    qk_endpoint_del(q->srv.ep);
    free(q->cert_pem);
    free(q->key_pem);
    free(q->st);
    free(q);
}

static int init_streams(qk_simq *q)
{
    q->n = q->cfg.streams ? q->cfg.streams : 1;
    q->st = calloc(q->n, sizeof *q->st);
    if (!q->st) return QK_ERR_NOMEM;
    uint64_t per = q->cfg.size_bytes / q->n;
    for (uint32_t i = 0; i < q->n; i++) {
        simq_stream *k = &q->st[i];
        k->sid = 4ull * i; /* RFC 9000 §2.1: client-initiated bidirectional */
        k->total = q->cfg.duration_ns ? UINT64_MAX
                   : i + 1 == q->n    ? q->cfg.size_bytes - per * (q->n - 1)
                                      : per;
        k->hash_w = k->hash_r = (simq_hash){.h = {FNV_OFFSET, FNV_OFFSET, FNV_OFFSET, FNV_OFFSET}};
    }
    return 0;
}

qk_simq *qk_simq_new(qk_sim *sim, int client_host, int server_host, uint16_t port,
                     const qk_simq_cfg *cfg, int *err)
{
    int e = QK_ERR_NOMEM;
    qk_simq *q = calloc(1, sizeof *q);
    if (!q) goto fail;
    q->sim = sim;
    q->cfg = *cfg;
    if (!q->cfg.size_bytes && !q->cfg.duration_ns && !q->cfg.no_transfer)
        q->cfg.size_bytes = 1u << 20;
    q->r.first_1rtt_ns = QK_TIME_INFINITE;
    q->r.completion_ns = QK_TIME_INFINITE;
    q->read_wake_ns = QK_TIME_INFINITE;
    if ((e = init_streams(q))) goto fail;
    if ((e = qk_cert_generate("quack.sim", 0, 36500, &q->cert_pem, &q->key_pem))) goto fail;
    q->caddr = qk_sim_host_addr(sim, client_host, port);
    q->saddr = qk_sim_host_addr(sim, server_host, port);
    setup_cfg(q, &q->cli, false, qk_sim_rand64(sim));
    setup_cfg(q, &q->srv, true, qk_sim_rand64(sim));
    e = QK_ERR_CONFIG;
    q->cli.ep = qk_endpoint_new(&q->cli.cfg);
    q->srv.ep = qk_endpoint_new(&q->srv.cfg);
    if (!q->cli.ep || !q->srv.ep) goto fail;
    qk_endpoint_set_ecn_ack_bug(q->cli.ep, q->cfg.ecn_ack_bug);
    qk_endpoint_set_ecn_ack_bug(q->srv.ep, q->cfg.ecn_ack_bug);
    if ((e = qk_sim_node_add(sim, server_host, port, &simq_node_ops, &q->srv)) < 0) goto fail;
    q->srv.node = e;
    if ((e = qk_sim_node_add(sim, client_host, port, &simq_node_ops, &q->cli)) < 0) goto fail;
    q->cli.node = e;
    return q;
fail:
    qk_simq_del(q);
    if (err) *err = e;
    return NULL;
}

const qk_simq_result *qk_simq_result_get(qk_simq *q)
{
    if (q->cli.conn) qk_conn_stats_get(q->cli.conn, &q->r.client_stats);
    if (q->srv.conn) qk_conn_stats_get(q->srv.conn, &q->r.server_stats);
    return &q->r;
}

uint64_t qk_simq_budget_used(qk_simq *q, uint64_t *peak_bytes)
{
    simq_side *rcv = q->cfg.upload ? &q->srv : &q->cli;
    if (peak_bytes) *peak_bytes = rcv->ep ? qk_endpoint_budget(rcv->ep)->peak_used_bytes : 0;
    return rcv->ep ? qk_endpoint_budget(rcv->ep)->used_bytes : 0;
}

qk_conn *qk_simq_client_conn(qk_simq *q)
{
    return q->cli.conn;
}

qk_conn *qk_simq_server_conn(qk_simq *q)
{
    return q->srv.conn;
}

int qk_simq_node(const qk_simq *q, bool server)
{
    return server ? q->srv.node : q->cli.node;
}

void qk_simq_kick(qk_simq *q)
{
    qk_time now = qk_sim_now(q->sim);
    after_callback(q, &q->cli, now);
    after_callback(q, &q->srv, now);
    qk_sim_node_update(q->sim, q->cli.node);
    qk_sim_node_update(q->sim, q->srv.node);
}

/* ------------------------------------------------------------------------ */
/* Scenario flow type "quic". */

typedef struct quic_flow {
    qk_simq *q;
    bool rpc_mode; /* rpc_size set: back-to-back RPCs (flow_rpc.h) */
    qk_rpc rpc;
} quic_flow;

static void quic_summary(void *obj, qk_sim *sim, qk_sim_flow_summary *o)
{
    qk_simq *q = ((quic_flow *)obj)->q;
    const qk_simq_result *r = qk_simq_result_get(q);
    const qk_conn_stats *snd = q->cfg.upload ? &r->client_stats : &r->server_stats;
    const qk_conn_stats *rcv = q->cfg.upload ? &r->server_stats : &r->client_stats;
    o->sent_bytes = r->written_bytes;
    o->recv_bytes = r->read_bytes;
    o->sent_pkts = snd->pkts_sent;
    o->recv_pkts = rcv->pkts_received;
    qk_time end = r->done ? r->completion_ns : qk_sim_now(sim);
    if (end > q->cfg.start_ns)
        o->goodput_bps = (double)r->read_bytes * 8e9 / (double)(end - q->cfg.start_ns);
    o->completion_ns = r->done ? r->completion_ns : QK_TIME_INFINITE;
    double loss = snd->pkts_sent ? 100.0 * (double)snd->pkts_lost / (double)snd->pkts_sent : 0;
    snprintf(o->extra, sizeof o->extra,
             "loss=%.2f%% retx=%llu spurious=%llu acks_sent=%llu acks_recv=%llu "
             "acks_imm=%llu acks_per_pkt=%.4f af_sent=%llu imm_sent=%llu srtt_ms=%.1f cwnd=%llu "
             "peakbuf=%llu%s",
             loss, (unsigned long long)snd->pkts_lost, (unsigned long long)snd->pkts_spurious,
             (unsigned long long)rcv->ack_frames_sent, (unsigned long long)snd->ack_frames_received,
             (unsigned long long)rcv->ack_frames_sent_immediate,
             rcv->pkts_received ? (double)rcv->ack_frames_sent / (double)rcv->pkts_received : 0.0,
             (unsigned long long)snd->ack_frequency_frames_sent,
             (unsigned long long)snd->immediate_acks_sent, (double)snd->smoothed_rtt_ns / 1e6,
             (unsigned long long)snd->cwnd_bytes, (unsigned long long)rcv->peak_rx_buffered_bytes,
             r->mismatch ? " MISMATCH" : "");
    quic_flow *f = obj;
    if (f->rpc_mode) { /* the RPC figures replace the transport columns */
        o->sent_bytes = o->recv_bytes = f->rpc.done * f->rpc.size_bytes;
        o->goodput_bps =
            qk_sim_now(sim) > q->cfg.start_ns
                ? (double)o->recv_bytes * 8e9 / (double)(qk_sim_now(sim) - q->cfg.start_ns)
                : 0;
        o->rpcs_done = f->rpc.done;
        o->rpc_size_bytes = f->rpc.size_bytes;
        char rs[96];
        qk_rpc_summary(&f->rpc, rs, sizeof rs);
        /* the client sends the requests: its losses, PTOs and ECN state */
        const qk_conn_stats *cs = &r->client_stats;
        snprintf(o->extra, sizeof o->extra, "%s lost=%llu pto=%llu ecn=%u cwnd=%llu", rs,
                 (unsigned long long)cs->pkts_lost, (unsigned long long)cs->pto_count,
                 cs->ecn_state, (unsigned long long)cs->cwnd_bytes);
    }
}

static uint64_t quic_recv_bytes(void *obj)
{
    quic_flow *f = obj;
    return f->rpc_mode ? f->rpc.done * f->rpc.size_bytes : f->q->r.read_bytes;
}

static void quic_free(void *obj)
{
    /* The nodes point into q: the simulator is gone by the time flows are freed
     * (scenario teardown order), so freeing here is safe either way for the
     * endpoints themselves. */
    quic_flow *f = obj;
    qk_simq_del(f->q);
    if (f->rpc_mode) qk_rpc_free(&f->rpc);
    free(f);
}

static const qk_sim_flow_ops quic_flow_ops = {quic_summary, quic_recv_bytes, quic_free};

static int bad(const qk_sim_flow_args *a, const char *key, const char *val, const char *fix)
{
    snprintf(a->err, a->err_cap, "%s: bad value '%s'; expected %s", key, val, fix);
    return QK_ERR_CONFIG;
}

/* Flow-control windows, their auto-tuning and the reader. 1 = not one of these keys, 0 = set,
 * QK_ERR_CONFIG = bad value. */
static int parse_window_key(const qk_sim_flow_args *a, const char *k, const char *v, qk_simq_cfg *c)
{
    if (!strcmp(k, "window")) {
        if (qk_sim_parse_bytes(v, &c->window_bytes) || c->window_bytes < 16384)
            return bad(a, k, v, "a flow-control window of at least 16KiB, e.g. 16MiB");
    } else if (!strcmp(k, "autotune")) {
        if (!strcasecmp(v, "on"))
            c->autotune = 1;
        else if (!strcasecmp(v, "off"))
            c->autotune = -1;
        else
            return bad(a, k, v, "on or off");
    } else if (!strcmp(k, "rule")) {
        static const char *const rules[] = {"rtt2", "epoch", "rtt2-double", "epoch-double"};
        int found = -1;
        for (int i = 0; i < 4; i++)
            if (!strcasecmp(v, rules[i])) found = i;
        if (found < 0)
            return bad(a, k, v,
                       "rtt2 (quiche/yamux), epoch (quic-go), or rtt2-double / epoch-double "
                       "(plain doubling, no rate sizing)");
        c->autotune_rule = found;
    } else if (!strcmp(k, "max_window") || !strcmp(k, "conn_window") ||
               !strcmp(k, "max_conn_window") || !strcmp(k, "budget") || !strcmp(k, "send_buffer")) {
        uint64_t *dst = !strcmp(k, "max_window")        ? &c->max_window_bytes
                        : !strcmp(k, "conn_window")     ? &c->conn_window_bytes
                        : !strcmp(k, "max_conn_window") ? &c->max_conn_window_bytes
                        : !strcmp(k, "budget")          ? &c->budget_bytes
                                                        : &c->send_buffer_bytes;
        if (qk_sim_parse_bytes(v, dst) || *dst < 16384)
            return bad(a, k, v, "a byte count of at least 16KiB, e.g. 64MiB");
    } else if (!strcmp(k, "read_rate")) {
        if (qk_sim_parse_rate(v, &c->read_rate_bps) || !c->read_rate_bps)
            return bad(a, k, v, "a positive rate, e.g. 10mbit");
    } else {
        return 1;
    }
    return 0;
}

/* Datagram size, protection, ACK frequency, pacing and qlog. 1 = not one of these keys, 0 = set,
 * QK_ERR_CONFIG = bad value. */
static int parse_wire_key(const qk_sim_flow_args *a, const char *k, const char *v, qk_simq_cfg *c)
{
    uint64_t n;
    if (!strcmp(k, "udp_payload")) {
        if (qk_sim_parse_bytes(v, &n) || n < 1200 || n > 1472)
            return bad(a, k, v, "a datagram size from 1200 to 1472");
        c->udp_payload_bytes = (size_t)n;
    } else if (!strcmp(k, "protection")) {
        if (!strcasecmp(v, "on"))
            c->no_protection = false;
        else if (!strcasecmp(v, "off") || !strcasecmp(v, "null"))
            c->no_protection = true; /* the NULL suite: benchmarks only */
        else
            return bad(a, k, v, "on, or off (null cipher, benchmarks only)");
    } else if (!strcmp(k, "ack_frequency")) {
        c->ackfreq_set = true;
        c->ackfreq_threshold = c->ackfreq_reorder = 0;
        c->ackfreq_delay_ns = 25 * QK_NS_PER_MS;
        qk_ackfreq_mode m;
        if (!qk_ackfreq_mode_parse(v, &m) && m != QK_ACKFREQ_FIXED) {
            c->ack_frequency = m;
        } else {
            unsigned long long th = 0, d_us = 25000, ro = 0;
            int n = sscanf(v, "%llu,%llu,%llu", &th, &d_us, &ro);
            if (n < 1 || d_us >= (1ull << 14) * 1000)
                return bad(a, k, v,
                           "off, auto, auto-threshold or THRESHOLD[,DELAY_US[,REORDER]], e.g. "
                           "10,25000,3");
            c->ack_frequency = QK_ACKFREQ_FIXED;
            c->ackfreq_threshold = th;
            c->ackfreq_delay_ns = d_us * QK_NS_PER_US;
            c->ackfreq_reorder = ro;
        }
    } else if (!strcmp(k, "pacing_gain")) {
        if (qk_sim_parse_bytes(v, &n) || n < 100 || n > 400)
            return bad(a, k, v,
                       "a percentage from 100 to 400 (RFC 9002 §7.7 N x 100; default 100)");
        c->pacing_gain_pct = (uint32_t)n;
    } else if (!strcmp(k, "pacing_burst")) {
        if (qk_sim_parse_bytes(v, &n) || !n || n > 64)
            return bad(a, k, v, "a datagram count from 1 to 64 (default: the controller's)");
        c->pacing_burst_pkts = (uint32_t)n;
    } else if (!strcmp(k, "min_ack_delay")) {
        c->min_ack_delay_set = true;
        if (!strcasecmp(v, "off") || !strcmp(v, "0"))
            c->min_ack_delay_ns = 0;
        else if (qk_sim_parse_time(v, &c->min_ack_delay_ns) || !c->min_ack_delay_ns)
            return bad(a, k, v, "a time such as 1ms, or off (do not advertise min_ack_delay)");
    } else if (!strcmp(k, "qlog")) {
        c->qlog_dir = v; /* the kv strings live as long as the scenario */
    } else {
        return 1;
    }
    return 0;
}

static int parse_key(const qk_sim_flow_args *a, const char *k, const char *v, qk_simq_cfg *c)
{
    int r = parse_window_key(a, k, v, c);
    if (r != 1) return r;
    if ((r = parse_wire_key(a, k, v, c)) != 1) return r;
    uint64_t n;
    if (!strcmp(k, "direction")) {
        if (!strcasecmp(v, "download"))
            c->upload = false;
        else if (!strcasecmp(v, "upload"))
            c->upload = true;
        else
            return bad(a, k, v, "download (server -> client) or upload");
    } else if (!strcmp(k, "size")) {
        if (qk_sim_parse_bytes(v, &c->size_bytes) || !c->size_bytes)
            return bad(a, k, v, "a positive byte count, e.g. 10MiB");
    } else if (!strcmp(k, "duration")) {
        if (qk_sim_parse_time(v, &c->duration_ns) || !c->duration_ns)
            return bad(a, k, v, "a positive time, e.g. 10s");
    } else if (!strcmp(k, "cc")) {
        if (qk_cc_kind_parse(v, &c->cc)) return bad(a, k, v, qk_cc_kind_names());
    } else if (!strcmp(k, "ecn") || !strcmp(k, "ecn_ack_bug")) {
        bool on = !strcasecmp(v, "on");
        if (!on && strcasecmp(v, "off")) return bad(a, k, v, "on or off");
        if (!strcmp(k, "ecn"))
            c->ecn = on ? 1 : -1;
        else
            c->ecn_ack_bug = on; /* test only: the seed 003 receiver bug */
    } else if (!strcmp(k, "start")) {
        if (qk_sim_parse_time(v, &c->start_ns)) return bad(a, k, v, "a time, e.g. 1s");
    } else if (!strcmp(k, "streams")) {
        if (qk_sim_parse_bytes(v, &n) || !n || n > 100000)
            return bad(a, k, v, "a stream count from 1 to 100000");
        c->streams = (uint32_t)n;
    } else {
        snprintf(a->err, a->err_cap,
                 "%s: unknown key for type quic; use direction, size, duration, cc, start, "
                 "streams, window, autotune, rule, max_window, conn_window, max_conn_window, "
                 "budget, send_buffer, read_rate, udp_payload, protection, ack_frequency, "
                 "min_ack_delay, pacing_gain, pacing_burst, qlog, ecn, ecn_ack_bug, rpc_size, "
                 "rpc_count, latency_csv",
                 k);
        return QK_ERR_CONFIG;
    }
    return 0;
}

int qk_sim_quic_factory(qk_sim *sim, const qk_sim_flow_args *a, void **out,
                        const qk_sim_flow_ops **ops)
{
    qk_simq_cfg c = {.cc = QK_CONFIG_CC_CUBIC};
    uint64_t rpc_size = 0, rpc_count = 0;
    const char *csv = NULL;
    for (size_t i = 0; i < a->n_kv; i++) {
        const char *k = a->kv[i].key, *v = a->kv[i].value;
        if (!strcmp(k, "type") || !strcmp(k, "from") || !strcmp(k, "to")) continue;
        if (!strcmp(k, "rpc_size") || !strcmp(k, "rpc_count")) {
            uint64_t *d = !strcmp(k, "rpc_size") ? &rpc_size : &rpc_count;
            if (qk_sim_parse_bytes(v, d) || !*d)
                return bad(a, k, v, "a positive byte count (rpc_size, e.g. 1MB) or count");
            continue;
        }
        if (!strcmp(k, "latency_csv")) {
            csv = v;
            continue;
        }
        int rc = parse_key(a, k, v, &c);
        if (rc) return rc;
    }
    if (rpc_size && (c.size_bytes || c.duration_ns))
        return bad(a, "rpc_size", "", "no size or duration with rpc_size (RPCs run until the end)");
    if (c.size_bytes && c.duration_ns) return bad(a, "duration", "", "either size or duration");
    if (c.duration_ns && c.streams > 1) return bad(a, "streams", "", "1 with duration");
    quic_flow *f = calloc(1, sizeof *f);
    if (!f) return QK_ERR_NOMEM;
    if (rpc_size) {
        if (qk_rpc_init(&f->rpc, rpc_size, rpc_count, csv)) {
            free(f);
            return bad(a, "latency_csv", csv, "a writable file path");
        }
        f->rpc_mode = true;
        c.upload = true; /* requests go client -> server */
        c.no_transfer = c.keep_open = true;
        c.on_event = qk_rpc_on_event;
        c.ctx = &f->rpc;
    }
    int err = 0;
    f->q = qk_simq_new(sim, a->from_host, a->to_host, (uint16_t)(20000 + a->flow_id), &c, &err);
    if (!f->q) {
        if (f->rpc_mode) qk_rpc_free(&f->rpc);
        free(f);
        snprintf(a->err, a->err_cap, "from: cannot create the flow's endpoints (%s)",
                 qk_strerror(err));
        return err;
    }
    *out = f;
    *ops = &quic_flow_ops;
    return 0;
}

bool qk_simq_cc_probe_get(qk_simq *q, bool server, qk_simq_cc_probe *out)
{
    qk_conn *c = server ? qk_simq_server_conn(q) : qk_simq_client_conn(q);
    if (!c) return false;
    qk_cc_probe p;
    qk_recovery_stats rs;
    uint64_t inflight;
    qk_conn_cc_probe(c, &p, &rs, &inflight);
    *out = (qk_simq_cc_probe){.packets_sent = rs.packets_sent,
                              .packets_lost = rs.packets_lost,
                              .undos = rs.undos,
                              .spurious_losses = rs.spurious_losses,
                              .congestion_events = p.congestion_events,
                              .cwnd_bytes = p.cwnd_bytes,
                              .ssthresh_bytes = p.ssthresh_bytes,
                              .max_datagram_bytes = p.max_datagram_bytes};
    if (p.bbr) {
        out->bbr = true;
        out->bbr_mode = p.bbr_mode;
        out->bbr_round_count = p.bbr_round_count;
        out->bbr_max_bw_bytes_per_s = p.bbr_max_bw_bytes_per_s;
        out->bbr_bw_bytes_per_s = p.bbr_bw_bytes_per_s;
        out->bbr_bw_shortterm_bytes_per_s = p.bbr_bw_shortterm_bytes_per_s;
        out->bbr_inflight_longterm_bytes = p.bbr_inflight_longterm_bytes;
        out->bbr_inflight_shortterm_bytes = p.bbr_inflight_shortterm_bytes;
        out->bbr_inflight_bytes = inflight;
        out->bbr_pacing_rate_bytes_per_s = p.pacing_rate_bytes_per_s;
        out->bbr_min_rtt_ns = p.bbr_min_rtt_ns;
        return true;
    }
    if (!p.cubic) return true;
    out->cubic = true;
    out->cubic_in_epoch = p.cubic_in_epoch;
    out->cubic_epoch_start = p.cubic_epoch_start;
    out->cubic_w_max_bytes = p.cubic_w_max_bytes;
    out->cubic_k_s = p.cubic_k_s;
    out->cubic_w_est_bytes = p.cubic_w_est_bytes;
    return true;
}
