/* SPDX-License-Identifier: MIT */
/* Send-side memory bounds ("pull, don't copy"; conn_flow.c):
 * with send_credit_lookahead_bytes a stream takes no more than the peer's
 * flow-control credit plus the lookahead, max_conn_send_buffer_bytes and
 * send_budget_bytes cap what is held, qk_stream_send_room says how much a
 * write may take, and a writer that only writes on QK_EV_STREAM_WRITABLE
 * still finishes once the peer reads again (RFC 9000 §4.1 credit). */
#include "qk_pair.h"
#include "qk_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOTAL     (4u << 20)
#define WINDOW    (64u << 10)
#define CONN_WIN  (128u << 10)
#define LOOKAHEAD (16u << 10)

typedef struct pull {
    uint64_t sid;
    size_t written, read, writes_on_event;
    size_t seen_sev; /* server events already looked at */
    bool opened, reading, fin_read, mismatch, room_mismatch;
    bool writable; /* the writer may write (start, or a WRITABLE arrived) */
} pull;

/* The server writes only when allowed: first, and after each WRITABLE for
 * the stream. Before writing it checks that qk_stream_send_room predicts
 * what the write takes. */
static void pull_write(qk_pair *p, pull *x)
{
    for (; x->seen_sev < p->nsev; x->seen_sev++)
        if (p->sev[x->seen_sev].type == QK_EV_STREAM_WRITABLE &&
            p->sev[x->seen_sev].stream_id == x->sid)
            x->writable = true;
    p->nsev = x->seen_sev = 0;
    long room = qk_stream_send_room(p->sconn, x->sid);
    if (!x->writable || x->written == TOTAL || room < 0) return; /* no request yet */
    x->writable = false;
    x->writes_on_event++;
    size_t before = x->written;
    qk_pair_write_pattern(p->sconn, x->sid, TOTAL, &x->written);
    size_t took = x->written - before;
    if (room >= 0 && took > (size_t)room) x->room_mismatch = true;
}

static bool pull_step(qk_pair *p, void *ctx)
{
    pull *x = ctx;
    if (!p->cconn || !qk_conn_established(p->cconn)) return false;
    if (!x->opened) {
        assert_int_equal(qk_pair_request_download(p, &x->sid), 0);
        x->opened = x->writable = true;
    }
    if (p->sconn) {
        uint8_t req[8];
        bool fin;
        qk_stream_read(p->sconn, x->sid, req, sizeof req, &fin);
        pull_write(p, x);
        if (x->reading)
            x->fin_read = qk_pair_read_pattern(p->cconn, x->sid, &x->read, &x->mismatch);
    }
    qk_pair_flush(p);
    return x->fin_read;
}

static bool never(qk_pair *p, void *ctx)
{
    (void)p;
    (void)ctx;
    return false;
}

static void setup_win(qk_pair *p, uint64_t conn_cap, uint64_t ep_budget, uint64_t conn_win)
{
    assert_int_equal(qk_pair_init(p, 10 * QK_NS_PER_MS), 0);
    p->ccfg.initial_max_stream_data_bytes = WINDOW;
    p->ccfg.initial_max_data_bytes = conn_win;
    p->ccfg.autotune = false;
    p->ccfg.keep_alive_ns = 200 * QK_NS_PER_MS;      /* the stalled client stays in touch */
    p->scfg.max_stream_send_buffer_bytes = 8u << 20; /* the stream alone would take 8 MB */
    p->scfg.send_credit_lookahead_bytes = LOOKAHEAD;
    p->scfg.max_conn_send_buffer_bytes = conn_cap;
    p->scfg.send_budget_bytes = ep_budget;
    assert_int_equal(qk_pair_start(p), 0);
}

static void setup(qk_pair *p, uint64_t conn_cap, uint64_t ep_budget)
{
    setup_win(p, conn_cap, ep_budget, CONN_WIN);
}

static void run_pull(uint64_t conn_cap, uint64_t ep_budget, size_t bound)
{
    qk_pair p;
    setup(&p, conn_cap, ep_budget);
    pull x = {0};
    /* The client does not read for 2 s: the server holds at most the
     * stream's credit plus the lookahead (and the caps). */
    qk_pair_run_until(&p, pull_step, &x, p.now + 2 * QK_NS_PER_S);
    assert_true(x.opened);
    assert_true(x.written >= bound / 2);
    assert_true(x.written <= WINDOW + LOOKAHEAD); /* credit + lookahead */
    long room = qk_stream_send_room(p.sconn, x.sid);
    assert_true(room >= 0 && room < (long)LOOKAHEAD); /* below the WRITABLE threshold */
    qk_endpoint_stats st;
    qk_endpoint_stats_get(p.server, &st);
    assert_true(st.send_buffered_bytes <= bound);
    assert_true(st.send_buffered_peak_bytes <= bound);
    /* Reading again: credit returns, WRITABLE wakes the writer, all arrives. */
    x.reading = true;
    bool ok = qk_pair_run_until(&p, pull_step, &x, p.now + 60 * QK_NS_PER_S);
    if (!ok) fprintf(stderr, "stalled: written %zu read %zu\n", x.written, x.read);
    assert_true(ok);
    assert_false(x.mismatch);
    assert_false(x.room_mismatch);
    assert_int_equal(x.read, TOTAL);
    assert_true(x.writes_on_event > 1);
    qk_endpoint_stats_get(p.server, &st);
    /* A cap holds throughout; credit alone moves with what the client read. */
    if (conn_cap || ep_budget) assert_true(st.send_buffered_peak_bytes <= bound);
    /* Once the last acknowledgements are in, nothing stays charged. */
    qk_pair_run_until(&p, never, NULL, p.now + QK_NS_PER_S);
    qk_endpoint_stats_get(p.server, &st);
    assert_int_equal(st.send_buffered_bytes, 0);
    qk_pair_free(&p);
}

static void test_credit_lookahead(void **state)
{
    (void)state;
    run_pull(0, 0, WINDOW + LOOKAHEAD);
}

static void test_conn_cap(void **state)
{
    (void)state;
    run_pull(32u << 10, 0, 32u << 10);
}

static void test_endpoint_budget(void **state)
{
    (void)state;
    run_pull(0, 24u << 10, 24u << 10);
}

/* With the budgets full of one stream's data, a new stream still takes
 * its first QK_STREAM_HEAD_BYTES (a request or response header), no more. */
static void head_passes(uint64_t conn_cap, uint64_t ep_budget, uint64_t conn_win)
{
    qk_pair p;
    setup_win(&p, conn_cap, ep_budget, conn_win);
    pull x = {0};
    qk_pair_run_until(&p, pull_step, &x, p.now + 2 * QK_NS_PER_S);
    assert_true(x.written > 0);
    qk_pair_write_pattern(p.sconn, x.sid, TOTAL, &x.written); /* what is left of the room */
    assert_int_equal(qk_stream_send_room(p.sconn, x.sid), 0); /* the budgets are full */
    uint64_t sid;
    assert_int_equal(qk_stream_open(p.sconn, true, &sid), 0);
    assert_int_equal(qk_stream_send_room(p.sconn, sid), QK_STREAM_HEAD_BYTES);
    uint8_t hdr[3 * QK_STREAM_HEAD_BYTES] = {1, 2, 3, 4, 5};
    assert_int_equal(qk_stream_write(p.sconn, sid, hdr, 5, false), 5);
    assert_int_equal(qk_stream_send_room(p.sconn, sid), QK_STREAM_HEAD_BYTES - 5);
    assert_int_equal(qk_stream_write(p.sconn, sid, hdr, sizeof hdr, false),
                     QK_STREAM_HEAD_BYTES - 5);
    assert_int_equal(qk_stream_send_room(p.sconn, sid), 0);
    qk_pair_free(&p);
}

static void test_head_passes_budgets(void **state)
{
    (void)state;
    head_passes(0, 0, WINDOW / 2);      /* connection credit + lookahead */
    head_passes(8u << 10, 0, CONN_WIN); /* connection cap */
    head_passes(0, 8u << 10, CONN_WIN); /* endpoint budget */
}

static void test_room_errors(void **state)
{
    (void)state;
    qk_pair p;
    setup(&p, 0, 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(qk_stream_send_room(p.cconn, 1234), QK_ERR_NOT_FOUND);
    uint64_t sid;
    assert_int_equal(qk_stream_open(p.cconn, true, &sid), 0);
    long room = qk_stream_send_room(p.cconn, sid);
    assert_true(room > 0);
    assert_int_equal(qk_stream_write(p.cconn, sid, (const uint8_t *)"x", 1, true), 1);
    assert_int_equal(qk_stream_send_room(p.cconn, sid), QK_ERR_STATE); /* finished */
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credit_lookahead), cmocka_unit_test(test_conn_cap),
        cmocka_unit_test(test_endpoint_budget),  cmocka_unit_test(test_head_passes_budgets),
        cmocka_unit_test(test_room_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
