/* SPDX-License-Identifier: MIT */
/* RFC 9218 priorities in src/h3: the Priority Field Value parser, the control
 * stream scanner, and a quack HTTP/3 client and server in a qk_pair: the
 * `priority` header and PRIORITY_UPDATE frames set the server's transport
 * urgency; PRIORITY_UPDATE with a bad ID is H3_ID_ERROR, on a request stream
 * H3_FRAME_UNEXPECTED. */
#include "h3/priority.h"
#include "qk_pair.h"
#include "qk_test.h"

#include <quack/h3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H3_FRAME_UNEXPECTED 0x105 /* RFC 9114 §8.1 */
#define H3_ID_ERROR         0x108

static qk_h3_priority parse(const char *v, int *rc)
{
    qk_h3_priority p = {QK_H3_DEFAULT_URGENCY, false};
    *rc = qk_h3_priority_parse(v, strlen(v), &p);
    return p;
}

#define EXPECT(v, u, i)                                                                            \
    do {                                                                                           \
        int rc_;                                                                                   \
        qk_h3_priority p_ = parse(v, &rc_);                                                        \
        assert_int_equal(rc_, 0);                                                                  \
        assert_int_equal(p_.urgency, u);                                                           \
        assert_int_equal(p_.incremental, i);                                                       \
    } while (0)

#define REJECT(v)                                                                                  \
    do {                                                                                           \
        int rc_;                                                                                   \
        qk_h3_priority p_ = parse(v, &rc_);                                                        \
        assert_int_equal(rc_, QK_ERR_INVALID_ARG);                                                 \
        assert_int_equal(p_.urgency, 3);                                                           \
        assert_false(p_.incremental);                                                              \
    } while (0)

static void test_parse_valid(void **state)
{
    (void)state;
    EXPECT("", 3, false);
    EXPECT("u=0", 0, false);
    EXPECT("u=7", 7, false);
    EXPECT("u=5, i", 5, true);
    EXPECT("  u=1,i  ", 1, true);
    EXPECT("u=2 ,\ti=?1", 2, true);
    EXPECT("i=?1", 3, true);
    EXPECT("i=?0, u=6", 6, false);
    EXPECT("i, i=?0", 3, false); /* RFC 8941 §4.2.2: the last member wins */
    EXPECT("u=1, u=4", 4, false);
}

static void test_parse_ignored(void **state)
{
    (void)state;
    /* RFC 9218 §4.1/§4.2: wrong type or out of range: that parameter only. */
    EXPECT("u=8", 3, false);
    EXPECT("u=-1, i", 3, true);
    EXPECT("u=1.5", 3, false);
    EXPECT("u=\"2\"", 3, false);
    EXPECT("u=?1", 3, false);
    EXPECT("u=(1 2)", 3, false);
    EXPECT("u", 3, false);
    EXPECT("i=1, u=2", 2, false);
    EXPECT("i=tok", 3, false);
    EXPECT("u=2, u=9", 3, false); /* the dictionary's u is 9: ignored */
    /* Unknown keys (with any value, parameters, inner lists) are ignored. */
    EXPECT("foo=bar, u=4, x=:YWJj:, *y=\"s\\\"t\";a=1;b, z=(a \"b\" 1);q=?0, i", 4, true);
    EXPECT("u=4;p=1, i;x", 4, true);
}

static void test_parse_invalid(void **state)
{
    (void)state;
    /* RFC 8941 §4.2: not a Dictionary: the whole field is ignored. */
    REJECT("u=1,");
    REJECT(",u=1");
    REJECT("u=1 i");
    REJECT("U=1");
    REJECT("u=");
    REJECT("u=1;");
    REJECT("u=1234567890123456");
    REJECT("u=\"open");
    REJECT("u=?2");
    REJECT("u=:abc");
    REJECT("u=(1 2");
    REJECT("u=1,,i");
    REJECT("1=2");
}

typedef struct seen {
    uint64_t id[8];
    char v[8][32];
    size_t n;
} seen;

static void got(void *ctx, uint64_t id, const char *v, size_t len)
{
    seen *s = ctx;
    assert_true(s->n < 8 && len < 32);
    s->id[s->n] = id;
    memcpy(s->v[s->n], v, len);
    s->v[s->n++][len] = 0;
}

static void test_scanner(void **state)
{
    (void)state;
    /* control stream: SETTINGS{6:16384}, PRIORITY_UPDATE(4, "u=1"), an unknown
     * frame 0x21 with 2 bytes, PRIORITY_UPDATE(0x3fff via 2-byte id, "i"),
     * push PRIORITY_UPDATE (not reported). */
    static const uint8_t ctl[] = {0x00, 0x04, 0x05, 0x06, 0x80, 0x00, 0x40, 0x00, /* settings */
                                  0x80, 0x0f, 0x07, 0x00, 0x04, 0x04, 'u',  '=',  '1',  0x21,
                                  0x02, 0xaa, 0xbb, 0x80, 0x0f, 0x07, 0x00, 0x03, 0x7f, 0xff,
                                  'i',  0x80, 0x0f, 0x07, 0x01, 0x02, 0x00, 'i'};
    for (size_t chunk = 1; chunk <= sizeof ctl; chunk++) {
        qk_h3_ctrl_scan sc;
        seen s = {0};
        qk_h3_ctrl_scan_init(&sc);
        for (size_t off = 0; off < sizeof ctl; off += chunk) {
            size_t n = sizeof ctl - off < chunk ? sizeof ctl - off : chunk;
            qk_h3_ctrl_scan_feed(&sc, ctl + off, n, got, &s);
        }
        assert_false(qk_h3_ctrl_scan_ignored(&sc));
        assert_int_equal(s.n, 2);
        assert_int_equal(s.id[0], 4);
        assert_string_equal(s.v[0], "u=1");
        assert_int_equal(s.id[1], 0x3fff);
        assert_string_equal(s.v[1], "i");
    }
    /* A QPACK encoder stream (type 0x02) is not scanned. */
    static const uint8_t enc[] = {0x02, 0x80, 0x0f, 0x07, 0x00, 0x02, 0x00, 'i'};
    qk_h3_ctrl_scan sc;
    seen s = {0};
    qk_h3_ctrl_scan_init(&sc);
    qk_h3_ctrl_scan_feed(&sc, enc, sizeof enc, got, &s);
    assert_true(qk_h3_ctrl_scan_ignored(&sc));
    assert_int_equal(s.n, 0);
    /* A payload larger than the scanner keeps is skipped, framing intact. */
    uint8_t big[700] = {0x00, 0x80, 0x0f, 0x07, 0x00, 0x42, 0x58, 0x00};
    size_t bl = 7 + 0x258;
    big[bl++] = 0x80, big[bl++] = 0x0f, big[bl++] = 0x07, big[bl++] = 0x00;
    big[bl++] = 0x02, big[bl++] = 0x08, big[bl++] = 'i';
    assert_true(bl <= sizeof big);
    qk_h3_ctrl_scan_init(&sc);
    qk_h3_ctrl_scan_feed(&sc, big, bl, got, &s);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.id[0], 8);
}

/* ---- end to end ------------------------------------------------------------ */

typedef struct world {
    qk_pair p;
    qk_h3 *ch, *sh;
    const char *prio_hdr;          /* the client's priority header (NULL: none) */
    uint64_t sid;                  /* the request */
    bool sent, got_headers, ended; /* server saw the request headers / end */
    qk_h3_priority at_headers;     /* server's priority at on_headers */
    qk_h3_priority by_sid[32];     /* the same per request (stream id / 4) */
    size_t nmore, nmore_sent;      /* more requests, sent after the raw bytes */
    int raw;                       /* 1: a raw PRIORITY_UPDATE after the request */
    uint8_t rawbuf[512];
    size_t rawlen;
    bool raw_on_request; /* write rawbuf on a new bidi stream instead */
    bool raw_done;
    bool update; /* client: qk_h3_set_priority(u=1) after the request */
    bool closed;
    uint64_t close_code;
    int until; /* stop: 0 at the request's end, 1..8 when its urgency is until-1, -1 at close */
} world;

static bool reached(world *w)
{
    qk_h3_priority p;
    if (w->closed) return true;
    if (w->nmore) return w->nmore_sent == w->nmore && w->by_sid[w->nmore].urgency != 0;
    if (w->until == 0) return w->ended;
    if (w->until < 0 || !w->sh || qk_h3_stream_priority(w->sh, w->sid, &p)) return false;
    return p.urgency == w->until - 1;
}

static void s_headers(void *u, qk_h3 *h, uint64_t sid, const qk_h3_header *hd, size_t n, bool fin)
{
    (void)hd;
    (void)n;
    (void)fin;
    world *w = u;
    w->got_headers = true;
    assert_int_equal(qk_h3_stream_priority(h, sid, &w->at_headers), 0);
    if (sid / 4 < 32) w->by_sid[sid / 4] = w->at_headers;
}

static void s_end(void *u, qk_h3 *h, uint64_t sid)
{
    (void)h;
    (void)sid;
    world *w = u;
    w->ended = true;
}

static const qk_h3_callbacks scb = {.on_headers = s_headers, .on_end = s_end};
static const qk_h3_callbacks ccb = {0};

static void client_acts(world *w)
{
    if (!w->sent) {
        qk_h3_header hd[5] = {qk_h3_hdr(":method", "GET"), qk_h3_hdr(":scheme", "https"),
                              qk_h3_hdr(":authority", "quack.test"), qk_h3_hdr(":path", "/"),
                              qk_h3_hdr("priority", w->prio_hdr ? w->prio_hdr : "")};
        assert_int_equal(
            qk_h3_request(w->ch, hd, w->prio_hdr ? 5 : 4, NULL, 0, NULL, NULL, &w->sid), 0);
        w->sent = true;
        if (w->update)
            assert_int_equal(qk_h3_set_priority(w->ch, w->sid, (qk_h3_priority){1, true}), 0);
    } else if (w->raw && !w->raw_done && w->got_headers) {
        /* Frame-aligned: nghttp3 has written whole frames on the control
         * stream (client stream 2) by now. */
        uint64_t sid = 2;
        if (w->raw_on_request) assert_int_equal(qk_stream_open(w->p.cconn, true, &sid), 0);
        assert_int_equal(qk_stream_write(w->p.cconn, sid, w->rawbuf, w->rawlen, false),
                         (long)w->rawlen);
        w->raw_done = true;
    } else if (w->raw_done && w->nmore_sent < w->nmore) {
        qk_h3_header hd[5] = {qk_h3_hdr(":method", "GET"), qk_h3_hdr(":scheme", "https"),
                              qk_h3_hdr(":authority", "quack.test"), qk_h3_hdr(":path", "/"),
                              qk_h3_hdr("priority", "u=1")};
        uint64_t sid;
        while (w->nmore_sent < w->nmore && !qk_h3_request(w->ch, hd, 5, NULL, 0, NULL, NULL, &sid))
            w->nmore_sent++;
    }
}

static bool step(qk_pair *p, void *ctx)
{
    world *w = ctx;
    for (size_t i = 0; i < p->ncev; i++) {
        qk_event *ev = &p->cev[i];
        if (ev->type == QK_EV_CONNECTED && !w->ch) {
            w->ch = qk_h3_new(ev->conn, false, &ccb, w, NULL);
            assert_non_null(w->ch);
        } else if (ev->type == QK_EV_CLOSED) {
            w->closed = true;
            w->close_code = ev->error_code;
            if (getenv("QK_H3_DEBUG"))
                fprintf(stderr, "client closed: 0x%llx %s\n", (unsigned long long)ev->error_code,
                        ev->reason);
        } else if (w->ch) {
            qk_h3_on_event(w->ch, ev);
        }
    }
    for (size_t i = 0; i < p->nsev; i++) {
        qk_event *ev = &p->sev[i];
        if (ev->type == QK_EV_CLOSED) continue;
        if (!w->sh) w->sh = qk_h3_new(ev->conn, true, &scb, w, NULL);
        assert_non_null(w->sh);
        qk_h3_on_event(w->sh, ev);
    }
    p->ncev = p->nsev = 0;
    if (w->ch && !w->closed) {
        client_acts(w);
        qk_h3_flush(w->ch);
    }
    if (w->sh) qk_h3_flush(w->sh);
    qk_pair_flush(p);
    return reached(w);
}

static void run(world *w, qk_time limit)
{
    assert_int_equal(qk_pair_init(&w->p, 5 * QK_NS_PER_MS), 0);
    w->p.ccfg.alpn[0] = w->p.scfg.alpn[0] = QK_H3_ALPN;
    assert_int_equal(qk_pair_start(&w->p), 0);
    qk_pair_run_until(&w->p, step, w, w->p.now + limit);
}

static void done(world *w)
{
    qk_h3_del(w->ch);
    qk_h3_del(w->sh);
    qk_pair_free(&w->p);
}

static void test_header_sets_priority(void **state)
{
    (void)state;
    static const struct {
        const char *hdr;
        uint8_t u;
        bool i;
    } cases[] = {{NULL, 3, false},
                 {"u=0", 0, false},
                 {"u=6, i", 6, true},
                 {"u=9, i=x", 3, false},
                 {"garbage!", 3, false}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        world w = {.prio_hdr = cases[k].hdr};
        run(&w, 5 * QK_NS_PER_S);
        assert_true(w.got_headers);
        assert_false(w.closed);
        assert_int_equal(w.at_headers.urgency, cases[k].u);
        assert_int_equal(w.at_headers.incremental, cases[k].i);
        done(&w);
    }
}

/* The client's PRIORITY_UPDATE (nghttp3 writes it) overrides the header. */
static void test_update_overrides_header(void **state)
{
    (void)state;
    world w = {.prio_hdr = "u=5", .update = true, .until = 2};
    run(&w, 2 * QK_NS_PER_S);
    assert_true(w.got_headers);
    assert_false(w.closed);
    qk_h3_priority p;
    assert_int_equal(qk_h3_stream_priority(w.sh, w.sid, &p), 0);
    assert_int_equal(p.urgency, 1);
    assert_true(p.incremental);
    /* The server's own choice wins over later client signals (RFC 9218 §8). */
    assert_int_equal(qk_h3_set_priority(w.sh, w.sid, (qk_h3_priority){7, false}), 0);
    assert_int_equal(qk_h3_set_priority(w.ch, w.sid, (qk_h3_priority){0, false}), 0);
    assert_int_equal(qk_h3_set_priority(w.sh, w.sid, (qk_h3_priority){8, false}),
                     QK_ERR_INVALID_ARG);
    w.update = false;
    w.until = 1; /* would be the client's u=0 */
    qk_pair_run_until(&w.p, step, &w, w.p.now + 300 * QK_NS_PER_MS);
    assert_int_equal(qk_h3_stream_priority(w.sh, w.sid, &p), 0);
    assert_int_equal(p.urgency, 7);
    done(&w);
}

/* A raw PRIORITY_UPDATE on the control stream: applied to an open request,
 * remembered for one not open yet. */
static void test_raw_update_applied(void **state)
{
    (void)state;
    /* 0xF0700 as a 4-byte varint; id 0 (the request), "u=2,i". */
    world w = {.raw = 1,
               .rawbuf = {0x80, 0x0f, 0x07, 0x00, 0x06, 0x00, 'u', '=', '2', ',', 'i'},
               .rawlen = 11,
               .until = 3};
    run(&w, 2 * QK_NS_PER_S);
    assert_true(w.raw_done);
    assert_false(w.closed);
    qk_h3_priority p = {0, false};
    assert_int_equal(qk_h3_stream_priority(w.sh, w.sid, &p), 0);
    assert_int_equal(p.urgency, 2);
    assert_true(p.incremental);
    done(&w);
}

/* RFC 9218 §7.1: PRIORITY_UPDATEs for requests not open yet are kept (the
 * frame overrides the later header), at most H3_PRIO_PENDING_MAX (16). */
static void test_update_before_request(void **state)
{
    (void)state;
    world w = {.raw = 1, .nmore = 20};
    for (uint64_t id = 4; id <= 80; id += 4) { /* ids 4..80: 20 frames */
        static const uint8_t hdr[] = {0x80, 0x0f, 0x07, 0x00, 0x05};
        memcpy(w.rawbuf + w.rawlen, hdr, sizeof hdr);
        w.rawlen += sizeof hdr;
        w.rawbuf[w.rawlen++] = 0x40; /* a 2-byte varint id */
        w.rawbuf[w.rawlen++] = (uint8_t)id;
        memcpy(w.rawbuf + w.rawlen, "u=6", 3);
        w.rawlen += 3;
    }
    run(&w, 3 * QK_NS_PER_S);
    if (getenv("QK_H3_DEBUG")) fprintf(stderr, "sent %zu more\n", w.nmore_sent);
    assert_false(w.closed);
    assert_int_equal(w.nmore_sent, 20);
    for (size_t k = 1; k <= 20; k++) {
        if (getenv("QK_H3_DEBUG")) fprintf(stderr, "request %zu: u=%u\n", k, w.by_sid[k].urgency);
        /* the first 16 were remembered; the rest were dropped: header u=1 */
        assert_int_equal(w.by_sid[k].urgency, k <= 16 ? 6 : 1);
    }
    done(&w);
}

static void expect_close(const uint8_t *frame, size_t len, bool on_request, uint64_t code)
{
    world w = {.raw = 1, .rawlen = len, .raw_on_request = on_request, .until = -1};
    memcpy(w.rawbuf, frame, len);
    run(&w, 2 * QK_NS_PER_S);
    assert_true(w.closed);
    assert_int_equal(w.close_code, code);
    done(&w);
}

static void test_bad_updates_close(void **state)
{
    (void)state;
    /* RFC 9218 §7.1: an ID that is not a client-initiated bidi stream. */
    static const uint8_t server_bidi[] = {0x80, 0x0f, 0x07, 0x00, 0x02, 0x01, 'i'};
    expect_close(server_bidi, sizeof server_bidi, false, H3_ID_ERROR);
    static const uint8_t uni[] = {0x80, 0x0f, 0x07, 0x00, 0x02, 0x02, 'i'};
    expect_close(uni, sizeof uni, false, H3_ID_ERROR);
    /* ... one the client could not have opened (far beyond any limit). */
    static const uint8_t far[] = {0x80, 0x0f, 0x07, 0x00, 0x05, 0x80, 0x40, 0x00, 0x00, 'i'};
    expect_close(far, sizeof far, false, H3_ID_ERROR);
    /* Push IDs: we never allowed a push (no MAX_PUSH_ID). */
    static const uint8_t push[] = {0x80, 0x0f, 0x07, 0x01, 0x02, 0x00, 'i'};
    expect_close(push, sizeof push, false, H3_ID_ERROR);
    /* RFC 9218 §7.1: PRIORITY_UPDATE on a request stream. */
    static const uint8_t req[] = {0x80, 0x0f, 0x07, 0x00, 0x02, 0x00, 'i'};
    expect_close(req, sizeof req, true, H3_FRAME_UNEXPECTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),          cmocka_unit_test(test_parse_ignored),
        cmocka_unit_test(test_parse_invalid),        cmocka_unit_test(test_scanner),
        cmocka_unit_test(test_header_sets_priority), cmocka_unit_test(test_update_overrides_header),
        cmocka_unit_test(test_raw_update_applied),   cmocka_unit_test(test_update_before_request),
        cmocka_unit_test(test_bad_updates_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
