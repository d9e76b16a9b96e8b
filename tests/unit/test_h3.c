/* SPDX-License-Identifier: MIT */
/* HTTP/3 (src/h3) between a quack client and a quack server in a qk_pair:
 * requests and responses with bodies, 404s, request bodies, more concurrent
 * requests than the stream limit, GOAWAY, a reset request, and pulled bodies
 * (qk_h3_respond_pull: in order, no read larger than the stream takes, a
 * failing reader ends in a reset), and a CONNECT the server's on_connect
 * takes: every byte after its HEADERS frame is left on the QUIC stream. */
#include "qk_pair.h"
#include "qk_test.h"

#include <quack/h3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REQ 400

typedef struct req {
    uint64_t sid;
    bool sent, got_headers, done, reset;
    unsigned status;
    size_t want, got;
    bool mismatch;
    char path[64];
} req;

typedef struct srv_req {
    uint64_t sid;
    bool used;
    char path[64];
    size_t upload;
} srv_req;

typedef struct world {
    qk_pair p;
    qk_h3 *ch, *sh;
    req reqs[MAX_REQ];
    size_t nreq, nsent, ndone;
    srv_req sreqs[MAX_REQ];
    uint8_t *body; /* server bodies: pattern bytes */
    size_t body_cap;
    size_t upload_len; /* client request body length (0: GET) */
    uint8_t *upload;
    bool client_goaway, server_goaway_at_end;
    uint64_t goaway_id;
    unsigned releases;
    unsigned responded, done_complete, done_incomplete; /* on_response_done */
    bool reset_first; /* server resets the first request instead of answering */
    bool pull;        /* server answers with qk_h3_respond_pull */
    bool pull_fail;   /* ... whose reader fails half-way */
    size_t pull_reads, pull_max_ask;
    bool pull_out_of_order;
    uint64_t pull_next[MAX_REQ]; /* next offset each pulled body expects */
    bool connect;                /* the client sends one CONNECT with the upload */
    bool take;                   /* the server's on_connect takes it */
    bool taken, raw_fin;
    uint64_t taken_sid;
    uint8_t *raw; /* the taken stream's bytes, read from QUIC */
    size_t raw_len;
} world;

static uint8_t pat(size_t i)
{
    return (uint8_t)((i * 2654435761u) >> 11);
}

static req *creq_of(world *w, uint64_t sid)
{
    for (size_t i = 0; i < w->nsent; i++)
        if (w->reqs[i].sent && w->reqs[i].sid == sid) return &w->reqs[i];
    return NULL;
}

static void c_headers(void *u, qk_h3 *h, uint64_t sid, const qk_h3_header *hd, size_t n, bool fin)
{
    (void)h;
    (void)fin;
    world *w = u;
    req *r = creq_of(w, sid);
    assert_non_null(r);
    assert_true(n >= 1);
    assert_int_equal(hd[0].name_len, 7);
    assert_memory_equal(hd[0].name, ":status", 7);
    r->status = (unsigned)atoi(hd[0].value);
    r->got_headers = true;
}

static void c_data(void *u, qk_h3 *h, uint64_t sid, const uint8_t *d, size_t len)
{
    (void)h;
    world *w = u;
    req *r = creq_of(w, sid);
    assert_non_null(r);
    for (size_t i = 0; i < len; i++)
        if (d[i] != pat(r->got + i)) r->mismatch = true;
    r->got += len;
}

static void c_end(void *u, qk_h3 *h, uint64_t sid)
{
    (void)h;
    world *w = u;
    req *r = creq_of(w, sid);
    assert_non_null(r);
    assert_false(r->done);
    r->done = true;
    w->ndone++;
}

static void c_reset(void *u, qk_h3 *h, uint64_t sid, uint64_t code)
{
    (void)h;
    (void)code;
    world *w = u;
    req *r = creq_of(w, sid);
    if (r && !r->done) {
        r->reset = true;
        r->done = true;
        w->ndone++;
    }
}

static void c_goaway(void *u, qk_h3 *h, uint64_t id)
{
    (void)h;
    world *w = u;
    w->client_goaway = true;
    w->goaway_id = id;
}

static srv_req *sreq_of(world *w, uint64_t sid, bool add)
{
    for (size_t i = 0; i < MAX_REQ; i++)
        if (w->sreqs[i].used && w->sreqs[i].sid == sid) return &w->sreqs[i];
    if (!add) return NULL;
    for (size_t i = 0; i < MAX_REQ; i++)
        if (!w->sreqs[i].used) {
            memset(&w->sreqs[i], 0, sizeof w->sreqs[i]);
            w->sreqs[i].used = true;
            w->sreqs[i].sid = sid;
            return &w->sreqs[i];
        }
    return NULL;
}

static void s_headers(void *u, qk_h3 *h, uint64_t sid, const qk_h3_header *hd, size_t n, bool fin)
{
    (void)h;
    (void)fin;
    world *w = u;
    srv_req *r = sreq_of(w, sid, true);
    assert_non_null(r);
    bool method = false;
    for (size_t i = 0; i < n; i++) {
        if (hd[i].name_len == 5 && !memcmp(hd[i].name, ":path", 5)) {
            assert_true(hd[i].value_len < sizeof r->path);
            memcpy(r->path, hd[i].value, hd[i].value_len);
            r->path[hd[i].value_len] = 0;
        }
        if (hd[i].name_len == 7 && !memcmp(hd[i].name, ":method", 7)) method = true;
    }
    assert_true(method);
}

static void s_data(void *u, qk_h3 *h, uint64_t sid, const uint8_t *d, size_t len)
{
    (void)h;
    world *w = u;
    srv_req *r = sreq_of(w, sid, false);
    assert_non_null(r);
    for (size_t i = 0; i < len; i++) assert_int_equal(d[i], pat(r->upload + i));
    r->upload += len;
}

static void released(void *ctx)
{
    world *w = ctx;
    w->releases++;
}

/* The pull reader: bytes of the pattern body, in order, as asked. */
typedef struct pull_ctx {
    world *w;
    size_t idx, len;
} pull_ctx;

static long pull_read(void *ctx, uint64_t off, uint8_t *buf, size_t len)
{
    pull_ctx *pc = ctx;
    world *w = pc->w;
    w->pull_reads++;
    if (len > w->pull_max_ask) w->pull_max_ask = len;
    if (off != w->pull_next[pc->idx]) w->pull_out_of_order = true;
    if (w->pull_fail && off >= pc->len / 2) return -1;
    size_t n = pc->len - (size_t)off < len ? pc->len - (size_t)off : len;
    memcpy(buf, w->body + off, n);
    w->pull_next[pc->idx] = off + n;
    return (long)n;
}

static void pull_release(void *ctx)
{
    pull_ctx *pc = ctx;
    pc->w->releases++;
    free(pc);
}

static void respond_pull(world *w, qk_h3 *h, uint64_t sid, size_t n, const qk_h3_header *cl)
{
    pull_ctx *pc = calloc(1, sizeof *pc);
    assert_non_null(pc);
    pc->w = w;
    pc->idx = (size_t)(sid / 4) % MAX_REQ;
    pc->len = n;
    w->pull_next[pc->idx] = 0;
    assert_int_equal(qk_h3_respond_pull(h, sid, 200, cl, 1, n, pull_read, pull_release, pc), 0);
}

static void s_end(void *u, qk_h3 *h, uint64_t sid)
{
    world *w = u;
    srv_req *r = sreq_of(w, sid, false);
    assert_non_null(r);
    char len[32];
    if (w->reset_first && r->path[1] == 'r') {
        qk_stream_reset(qk_h3_conn(h), sid, QK_H3_REQUEST_CANCELLED);
        r->used = false;
        return;
    }
    if (strncmp(r->path, "/size/", 6)) {
        qk_h3_header ct = qk_h3_hdr("content-type", "text/plain");
        assert_int_equal(qk_h3_respond(h, sid, 404, &ct, 1, (const uint8_t *)"", 0, NULL, NULL), 0);
    } else {
        size_t n = (size_t)strtoull(r->path + 6, NULL, 10);
        assert_true(n <= w->body_cap);
        assert_int_equal(r->upload, w->upload_len); /* the whole request body arrived */
        snprintf(len, sizeof len, "%zu", n);
        qk_h3_header cl = qk_h3_hdr("content-length", len);
        if (w->pull)
            respond_pull(w, h, sid, n, &cl);
        else
            assert_int_equal(qk_h3_respond(h, sid, 200, &cl, 1, w->body, n, released, w), 0);
    }
    assert_int_equal(qk_h3_respond(h, sid, 200, NULL, 0, NULL, 0, NULL, NULL), QK_ERR_STATE);
    r->used = false;
    w->responded++;
}

static void s_done(void *u, qk_h3 *h, uint64_t sid, bool complete)
{
    world *w = u;
    (void)h;
    (void)sid;
    if (complete)
        w->done_complete++;
    else
        w->done_incomplete++;
}

static const qk_h3_callbacks ccb = {c_headers, c_data, c_end, c_reset, c_goaway, NULL, NULL};
static const qk_h3_callbacks scb = {s_headers, s_data, s_end, NULL, NULL, s_done, NULL};

static bool s_connect(void *u, qk_h3 *h, uint64_t sid, const qk_h3_header *hd, size_t n)
{
    (void)h;
    world *w = u;
    assert_true(n >= 2 && hd[0].value_len == 7 && !memcmp(hd[0].value, "CONNECT", 7));
    if (!w->take) return false;
    w->taken = true;
    w->taken_sid = sid;
    return true;
}

static const qk_h3_callbacks scb_take = {s_headers, s_data, s_end, NULL, NULL, s_done, s_connect};

/* The taken stream: its bytes straight from QUIC. */
static void read_raw(world *w, qk_conn *c)
{
    for (;;) {
        uint8_t buf[4096];
        bool fin = false;
        long n = qk_stream_read(c, w->taken_sid, buf, sizeof buf, &fin);
        if (n < 0) return;
        w->raw = realloc(w->raw, w->raw_len + (size_t)n + 1);
        memcpy(w->raw + w->raw_len, buf, (size_t)n);
        w->raw_len += (size_t)n;
        if (fin) w->raw_fin = true;
        if (fin || n == 0) return;
    }
}

static void send_requests(world *w)
{
    if (w->connect && !w->nsent) { /* RFC 9114 §4.4: :method and :authority only */
        qk_h3_header hd[2] = {qk_h3_hdr(":method", "CONNECT"),
                              qk_h3_hdr(":authority", "quack.test:443")};
        assert_int_equal(
            qk_h3_request(w->ch, hd, 2, w->upload, w->upload_len, NULL, NULL, &w->reqs[0].sid), 0);
        w->nsent = 1;
        return;
    }
    while (w->nsent < w->nreq) {
        req *r = &w->reqs[w->nsent];
        qk_h3_header hd[4] = {qk_h3_hdr(":method", w->upload_len ? "POST" : "GET"),
                              qk_h3_hdr(":scheme", "https"), qk_h3_hdr(":authority", "quack.test"),
                              qk_h3_hdr(":path", r->path)};
        int rc = qk_h3_request(w->ch, hd, 4, w->upload_len ? w->upload : NULL, w->upload_len, NULL,
                               NULL, &r->sid);
        if (rc == QK_ERR_STREAM_LIMIT) return;
        assert_int_equal(rc, 0);
        r->sent = true;
        w->nsent++;
    }
}

/* Route the pair's collected events to the two HTTP/3 layers. */
static bool step(qk_pair *p, void *ctx)
{
    world *w = ctx;
    for (size_t i = 0; i < p->ncev; i++) {
        qk_event *ev = &p->cev[i];
        if (ev->type == QK_EV_CONNECTED && !w->ch) {
            int err;
            w->ch = qk_h3_new(ev->conn, false, &ccb, w, &err);
            assert_non_null(w->ch);
        } else if (ev->type == QK_EV_CLOSED) {
            qk_h3_del(w->ch);
            w->ch = NULL;
        } else if (w->ch) {
            assert_int_equal(qk_h3_on_event(w->ch, ev), 0);
        }
    }
    for (size_t i = 0; i < p->nsev; i++) {
        qk_event *ev = &p->sev[i];
        if (ev->type == QK_EV_CLOSED) {
            qk_h3_del(w->sh);
            w->sh = NULL;
            continue;
        }
        if (!w->sh) {
            int err;
            w->sh = qk_h3_new(ev->conn, true, w->connect ? &scb_take : &scb, w, &err);
            assert_non_null(w->sh);
        }
        if (w->taken && ev->stream_id == w->taken_sid)
            read_raw(w, ev->conn);
        else
            assert_int_equal(qk_h3_on_event(w->sh, ev), 0);
        if (w->taken) read_raw(w, ev->conn); /* what came with the HEADERS frame */
    }
    if (w->raw_fin) return true;
    p->ncev = p->nsev = 0;
    if (w->ch) send_requests(w);
    if (w->ch) assert_true(qk_h3_flush(w->ch) >= 0);
    if (w->sh) assert_true(qk_h3_flush(w->sh) >= 0);
    qk_pair_flush(p);
    return w->nreq && w->ndone == w->nreq;
}

static void world_init(world *w, size_t nreq, size_t body_cap)
{
    memset(w, 0, sizeof *w);
    assert_int_equal(qk_pair_init(&w->p, 5 * QK_NS_PER_MS), 0);
    w->p.ccfg.alpn[0] = w->p.scfg.alpn[0] = QK_H3_ALPN;
    w->nreq = nreq;
    w->body_cap = body_cap;
    w->body = malloc(body_cap ? body_cap : 1);
    for (size_t i = 0; i < body_cap; i++) w->body[i] = pat(i);
}

static void world_run(world *w, qk_time limit_ns)
{
    assert_int_equal(qk_pair_start(&w->p), 0);
    bool ok = qk_pair_run_until(&w->p, step, w, w->p.now + limit_ns);
    if (!ok) fprintf(stderr, "h3: %zu of %zu requests done\n", w->ndone, w->nreq);
    assert_true(ok);
}

static void world_free(world *w)
{
    qk_h3_del(w->ch);
    qk_h3_del(w->sh);
    qk_pair_free(&w->p);
    free(w->body);
    free(w->upload);
}

static void test_get_sizes_and_404(void **state)
{
    (void)state;
    world w;
    static const size_t sizes[] = {0, 1, 1000, 65536, 300000, 2u << 20};
    world_init(&w, 7, 2u << 20);
    for (size_t i = 0; i < 6; i++) {
        snprintf(w.reqs[i].path, sizeof w.reqs[i].path, "/size/%zu", sizes[i]);
        w.reqs[i].want = sizes[i];
    }
    snprintf(w.reqs[6].path, sizeof w.reqs[6].path, "/missing");
    world_run(&w, 60 * QK_NS_PER_S);
    for (size_t i = 0; i < 6; i++) {
        assert_true(w.reqs[i].got_headers);
        assert_int_equal(w.reqs[i].status, 200);
        assert_int_equal(w.reqs[i].got, sizes[i]);
        assert_false(w.reqs[i].mismatch);
    }
    assert_int_equal(w.reqs[6].status, 404);
    assert_int_equal(w.reqs[6].got, 0);
    /* every non-empty body was released once nghttp3 no longer needed it */
    assert_true(w.releases >= 5);
    assert_int_equal(qk_h3_active(w.ch), 0);
    /* Every response went out in full (404 included), none unfinished. */
    assert_int_equal(w.done_complete, 7);
    assert_int_equal(w.done_incomplete, 0);
    world_free(&w);
}

static bool responded(qk_pair *p, void *ctx)
{
    step(p, ctx);
    return ((world *)ctx)->responded > 0;
}

/* A response cut short (the server's layer freed while the body waits for
 * the client's 1000-byte window and a 16 KiB send buffer) is reported
 * unfinished, once. */
static void test_response_unfinished(void **state)
{
    (void)state;
    world w;
    world_init(&w, 1, 300000);
    w.p.ccfg.initial_max_data_bytes = w.p.ccfg.max_conn_window_bytes = 1000;
    w.p.ccfg.initial_max_stream_data_bytes = w.p.ccfg.max_stream_window_bytes = 1000;
    w.p.scfg.max_stream_send_buffer_bytes = 16384;
    snprintf(w.reqs[0].path, sizeof w.reqs[0].path, "/size/300000");
    assert_int_equal(qk_pair_start(&w.p), 0);
    assert_true(qk_pair_run_until(&w.p, responded, &w, w.p.now + 5 * QK_NS_PER_S));
    assert_int_equal(w.done_complete + w.done_incomplete, 0);
    world_free(&w);
    assert_int_equal(w.done_complete, 0);
    assert_int_equal(w.done_incomplete, 1);
}

/* Every response larger than the client's fixed 1000-byte
 * connection and stream windows (no auto-tuning), four at once; the control
 * stream shares that credit with the bodies. (quack's decoder allows no
 * QPACK dynamic table, so the encoder stream stays empty here;
 * tests/interop/ngtcp2_window.sh covers a peer that uses it.) */
static void test_tiny_client_windows(void **state)
{
    (void)state;
    world w;
    static const size_t sizes[] = {0, 1000, 65536, 300000};
    world_init(&w, 4, 300000);
    w.p.ccfg.initial_max_data_bytes = w.p.ccfg.max_conn_window_bytes = 1000;
    w.p.ccfg.initial_max_stream_data_bytes = w.p.ccfg.max_stream_window_bytes = 1000;
    for (size_t i = 0; i < 4; i++) {
        snprintf(w.reqs[i].path, sizeof w.reqs[i].path, "/size/%zu", sizes[i]);
        w.reqs[i].want = sizes[i];
    }
    world_run(&w, 120 * QK_NS_PER_S);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(w.reqs[i].status, 200);
        assert_int_equal(w.reqs[i].got, sizes[i]);
        assert_false(w.reqs[i].mismatch);
    }
    world_free(&w);
}

/* The pull model: bodies produced on demand, never more per read
 * than the stream takes (the server buffers the client's credit plus a 16 KiB
 * lookahead), in order, released once done; with tiny client windows too. */
static void run_pull(bool tiny)
{
    world w;
    static const size_t sizes[] = {0, 1, 1000, 65536, 300000, 2u << 20};
    world_init(&w, 6, 2u << 20);
    w.pull = true;
    w.p.scfg.send_credit_lookahead_bytes = 16u << 10;
    w.p.scfg.max_conn_send_buffer_bytes = 1u << 20;
    if (tiny) {
        w.p.ccfg.initial_max_data_bytes = w.p.ccfg.max_conn_window_bytes = 3000;
        w.p.ccfg.initial_max_stream_data_bytes = w.p.ccfg.max_stream_window_bytes = 1000;
    }
    for (size_t i = 0; i < 6; i++) {
        snprintf(w.reqs[i].path, sizeof w.reqs[i].path, "/size/%zu", sizes[i]);
        w.reqs[i].want = sizes[i];
    }
    world_run(&w, 300 * QK_NS_PER_S);
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(w.reqs[i].status, 200);
        assert_int_equal(w.reqs[i].got, sizes[i]);
        assert_false(w.reqs[i].mismatch);
    }
    assert_false(w.pull_out_of_order);
    assert_true(w.pull_reads >= (2u << 20) / (64u << 10));
    assert_true(w.pull_max_ask <= (tiny ? 1000u + (16u << 10) : 64u << 10));
    assert_int_equal(w.releases, 6); /* every body released, the empty one too */
    qk_endpoint_stats st;
    qk_endpoint_stats_get(w.p.server, &st);
    assert_true(st.send_buffered_peak_bytes <= (1u << 20));
    world_free(&w);
}

static void test_pull(void **state)
{
    (void)state;
    run_pull(false);
}

static void test_pull_tiny_windows(void **state)
{
    (void)state;
    run_pull(true);
}

/* A reader that fails ends its response with a reset; the others complete. */
static void test_pull_reader_fails(void **state)
{
    (void)state;
    world w;
    world_init(&w, 1, 300000);
    w.pull = w.pull_fail = true;
    snprintf(w.reqs[0].path, sizeof w.reqs[0].path, "/size/300000");
    w.reqs[0].want = 300000;
    world_run(&w, 30 * QK_NS_PER_S);
    assert_true(w.reqs[0].reset);
    assert_true(w.reqs[0].got < 300000);
    assert_int_equal(w.releases, 1);
    world_free(&w);
}

static void test_many_concurrent_beyond_stream_limit(void **state)
{
    (void)state;
    world w;
    world_init(&w, 250, 4096);
    w.p.scfg.max_streams_bidi = 40; /* the client must wait for MAX_STREAMS */
    for (size_t i = 0; i < 250; i++) {
        snprintf(w.reqs[i].path, sizeof w.reqs[i].path, "/size/%zu", (i * 37) % 4096);
        w.reqs[i].want = (i * 37) % 4096;
    }
    world_run(&w, 60 * QK_NS_PER_S);
    for (size_t i = 0; i < 250; i++) {
        assert_int_equal(w.reqs[i].status, 200);
        assert_int_equal(w.reqs[i].got, w.reqs[i].want);
        assert_false(w.reqs[i].mismatch);
    }
    world_free(&w);
}

static void test_post_body(void **state)
{
    (void)state;
    world w;
    world_init(&w, 3, 1000);
    w.upload_len = 500000;
    w.upload = malloc(w.upload_len);
    for (size_t i = 0; i < w.upload_len; i++) w.upload[i] = pat(i);
    for (size_t i = 0; i < 3; i++) {
        snprintf(w.reqs[i].path, sizeof w.reqs[i].path, "/size/%zu", i * 100);
        w.reqs[i].want = i * 100;
    }
    world_run(&w, 60 * QK_NS_PER_S); /* s_end asserts the upload arrived whole */
    for (size_t i = 0; i < 3; i++) assert_int_equal(w.reqs[i].got, i * 100);
    world_free(&w);
}

/* on_connect takes a CONNECT: the bytes left on the stream are exactly
 * DATA frames (RFC 9114 §7.2.1) carrying the whole upload, then the FIN, and
 * the request never reaches on_headers. */
/* The server's control stream read raw by a client without HTTP/3: its
 * SETTINGS frame is complete once true; *has_dgram: H3_DATAGRAM = 1 in it. */
static bool settings_seen(const world *w, bool *has_dgram)
{
    const uint8_t *b = w->raw;
    size_t n = w->raw_len, p = 0;
    uint64_t v[3];
    for (int k = 0; k < 3; k++) { /* stream type, frame type, length */
        if (p >= n) return false;
        size_t l = (size_t)1 << (b[p] >> 6);
        if (p + l > n) return false;
        v[k] = b[p] & 0x3f;
        for (size_t i = 1; i < l; i++) v[k] = (v[k] << 8) | b[p + i];
        p += l;
    }
    assert_int_equal(v[0], 0x00); /* control stream (RFC 9114 §6.2.1) */
    assert_int_equal(v[1], 0x04); /* SETTINGS first (§6.2.1) */
    if (p + v[2] > n) return false;
    size_t end = p + (size_t)v[2];
    *has_dgram = false;
    while (p < end) { /* identifier/value pairs (§7.2.4) */
        uint64_t kv[2];
        for (int k = 0; k < 2; k++) {
            size_t l = (size_t)1 << (b[p] >> 6);
            assert_true(p + l <= end);
            kv[k] = b[p] & 0x3f;
            for (size_t i = 1; i < l; i++) kv[k] = (kv[k] << 8) | b[p + i];
            p += l;
        }
        if (kv[0] == 0x33 && kv[1] == 1) *has_dgram = true;
    }
    return true;
}

static bool step_settings(qk_pair *p, void *ctx)
{
    world *w = ctx;
    for (size_t i = 0; i < p->ncev; i++) {
        qk_event *ev = &p->cev[i];
        if ((ev->type != QK_EV_STREAM_READABLE && ev->type != QK_EV_STREAM_OPENED) ||
            ev->stream_id != 3)
            continue;
        uint8_t buf[512];
        bool fin;
        long n = qk_stream_read(ev->conn, 3, buf, sizeof buf, &fin);
        if (n <= 0) continue;
        w->raw = realloc(w->raw, w->raw_len + (size_t)n);
        memcpy(w->raw + w->raw_len, buf, (size_t)n);
        w->raw_len += (size_t)n;
    }
    for (size_t i = 0; i < p->nsev; i++) {
        qk_event *ev = &p->sev[i];
        if (!w->sh && ev->type != QK_EV_CLOSED) {
            int err;
            w->sh = qk_h3_new(ev->conn, true, w->take ? &scb_take : &scb, w, &err);
            assert_non_null(w->sh);
        }
        if (w->sh) assert_int_equal(qk_h3_on_event(w->sh, ev), 0);
    }
    p->ncev = p->nsev = 0;
    if (w->sh) assert_true(qk_h3_flush(w->sh) >= 0);
    qk_pair_flush(p);
    bool dgram;
    return settings_seen(w, &dgram);
}

/* RFC 9297 §2.1.1: a server whose on_connect takes CONNECT streams sends
 * SETTINGS_H3_DATAGRAM = 1 (nghttp3 0.8 knows no such setting: h3.c adds
 * it); one without on_connect does not. */
static void test_settings_h3_datagram(void **state)
{
    (void)state;
    for (int take = 0; take < 2; take++) {
        world w;
        world_init(&w, 0, 0);
        w.take = take;
        assert_int_equal(qk_pair_start(&w.p), 0);
        assert_true(qk_pair_run_until(&w.p, step_settings, &w, w.p.now + 5 * QK_NS_PER_S));
        bool dgram = false;
        assert_true(settings_seen(&w, &dgram));
        assert_int_equal(dgram, take);
        free(w.raw);
        world_free(&w);
    }
}

static void test_connect_taken(void **state)
{
    (void)state;
    world w;
    world_init(&w, 1, 0);
    w.connect = w.take = true;
    w.upload_len = 300000;
    w.upload = malloc(w.upload_len);
    for (size_t i = 0; i < w.upload_len; i++) w.upload[i] = pat(i);
    world_run(&w, 30 * QK_NS_PER_S);
    assert_true(w.taken && w.raw_fin);
    assert_null(sreq_of(&w, w.taken_sid, false));
    size_t off = 0, got = 0;
    while (off < w.raw_len) {
        size_t tl = (size_t)1 << (w.raw[off] >> 6);
        assert_int_equal(w.raw[off], 0x00); /* DATA, a one-byte type */
        size_t ll = (size_t)1 << (w.raw[off + tl] >> 6);
        uint64_t len = w.raw[off + tl] & 0x3f;
        for (size_t i = 1; i < ll; i++) len = (len << 8) | w.raw[off + tl + i];
        off += tl + ll;
        assert_true(off + len <= w.raw_len);
        assert_memory_equal(w.raw + off, w.upload + got, len);
        off += (size_t)len;
        got += (size_t)len;
    }
    assert_int_equal(got, w.upload_len);
    free(w.raw);
    world_free(&w);
}

static bool got_goaway(qk_pair *p, void *ctx)
{
    world *w = ctx;
    step(p, ctx);
    return w->client_goaway;
}

static void test_goaway(void **state)
{
    (void)state;
    world w;
    world_init(&w, 3, 100);
    for (size_t i = 0; i < 3; i++) snprintf(w.reqs[i].path, sizeof w.reqs[i].path, "/size/10");
    world_run(&w, 10 * QK_NS_PER_S);
    assert_int_equal(qk_h3_shutdown(w.sh), 0);
    assert_int_equal(qk_h3_shutdown(w.sh), QK_ERR_STATE);
    w.nreq = 0;
    assert_true(qk_pair_run_until(&w.p, got_goaway, &w, w.p.now + 5 * QK_NS_PER_S));
    /* RFC 9114 §5.2: the id is a client bidi stream id, above those served (0, 4, 8). */
    assert_int_equal(w.goaway_id % 4, 0);
    assert_true(w.goaway_id >= 12);
    world_free(&w);
}

static void test_server_reset(void **state)
{
    (void)state;
    world w;
    world_init(&w, 2, 100);
    w.reset_first = true;
    snprintf(w.reqs[0].path, sizeof w.reqs[0].path, "/r");
    snprintf(w.reqs[1].path, sizeof w.reqs[1].path, "/size/50");
    world_run(&w, 10 * QK_NS_PER_S);
    assert_true(w.reqs[0].reset);
    assert_false(w.reqs[1].reset);
    assert_int_equal(w.reqs[1].got, 50);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_sizes_and_404),
        cmocka_unit_test(test_response_unfinished),
        cmocka_unit_test(test_tiny_client_windows),
        cmocka_unit_test(test_many_concurrent_beyond_stream_limit),
        cmocka_unit_test(test_post_body),
        cmocka_unit_test(test_goaway),
        cmocka_unit_test(test_server_reset),
        cmocka_unit_test(test_connect_taken),
        cmocka_unit_test(test_settings_h3_datagram),
        cmocka_unit_test(test_pull),
        cmocka_unit_test(test_pull_tiny_windows),
        cmocka_unit_test(test_pull_reader_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
