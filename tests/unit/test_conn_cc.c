/* SPDX-License-Identifier: MIT */
/* Congestion-control plumbing of the connection, end to end on the in-memory
 * pair: the window only grows when it is the limit (RFC 9002 §7.8), stream
 * events (WRITABLE when ACKs free send-buffer room, one READABLE per stream
 * until read), ECN marking and counting (RFC 9000 §13.4). */
#include "qk_pair.h"
#include "qk_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A server -> client download of `total` pattern bytes on one stream. */
typedef struct dl {
    size_t total, written, read;
    uint64_t sid;
    bool opened, fin_read, mismatch, req_read;
    bool read_on_event_only;  /* client reads only after a READABLE event */
    bool write_on_event_only; /* server writes only on WRITABLE (after the first write) */
    size_t readable_events, writable_events;
    size_t readable_while_unread; /* READABLE events for a stream not read since the last one */
    bool readable_pending;
    bool writable_pending;
    qk_time slot;   /* trickle: last 20 ms slot written in */
    unsigned lazy;  /* read only every lazy-th step (0 = every step) */
    unsigned steps; /* dl_step calls */
} dl;

static void dl_write(qk_conn *c, dl *x)
{
    qk_pair_write_pattern(c, x->sid, x->total, &x->written);
}

static void dl_read(qk_conn *c, dl *x)
{
    if (qk_pair_read_pattern(c, x->sid, &x->read, &x->mismatch)) x->fin_read = true;
}

/* Look at the events qk_pair_step collected since the last call. */
static void dl_events(qk_pair *p, dl *x)
{
    for (size_t i = 0; i < p->ncev; i++) {
        if (p->cev[i].type != QK_EV_STREAM_READABLE || p->cev[i].stream_id != x->sid) continue;
        x->readable_events++;
        if (x->readable_pending) x->readable_while_unread++;
        x->readable_pending = true;
    }
    for (size_t i = 0; i < p->nsev; i++)
        if (p->sev[i].type == QK_EV_STREAM_WRITABLE && p->sev[i].stream_id == x->sid) {
            x->writable_events++;
            x->writable_pending = true;
        }
    p->ncev = p->nsev = 0;
}

static bool dl_step(qk_pair *p, void *ctx)
{
    dl *x = ctx;
    if (!p->cconn || !qk_conn_established(p->cconn)) return false;
    if (!x->opened) {
        assert_int_equal(qk_pair_request_download(p, &x->sid), 0);
        x->opened = true;
    }
    dl_events(p, x);
    if (p->sconn) {
        if (!x->req_read) {
            if (qk_pair_read_request(p->sconn, x->sid) == 8) x->req_read = true;
            if (x->req_read) dl_write(p->sconn, x);
        } else if (!x->write_on_event_only || x->writable_pending) {
            x->writable_pending = false;
            dl_write(p->sconn, x);
        }
        bool turn = !x->lazy || ++x->steps % x->lazy == 0;
        if (turn && (!x->read_on_event_only || x->readable_pending)) {
            x->readable_pending = false;
            dl_read(p->cconn, x);
        }
    }
    qk_pair_flush(p);
    return x->fin_read;
}

static void run_dl(qk_pair *p, dl *x, qk_time limit_ns)
{
    assert_int_equal(qk_pair_start(p), 0);
    bool ok = qk_pair_run_until(p, dl_step, x, p->now + limit_ns);
    if (!ok)
        fprintf(stderr, "download stalled: written %zu read %zu of %zu\n", x->written, x->read,
                x->total);
    assert_true(ok);
    assert_false(x->mismatch);
    assert_int_equal(x->read, x->total);
}

/* RFC 9002 §7.8: a sender held back by the peer's connection flow-control
 * window (64 KiB, no auto-tuning) is not cwnd-limited, so its window stays
 * near what it actually used: at most one slow-start doubling above the
 * ~64 KiB (plus packet overhead) it can have in flight. Before the fix cwnd grew by every
 * acknowledged byte (4 MiB of them) because data was always queued. */
static void test_cwnd_flow_control_limited(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.ccfg.autotune = false;
    p.ccfg.initial_max_data_bytes = 64u << 10;
    p.ccfg.initial_max_stream_data_bytes = 1u << 20;
    dl x = {.total = 4u << 20};
    run_dl(&p, &x, 60 * QK_NS_PER_S);
    qk_conn_stats s;
    qk_conn_stats_get(p.sconn, &s);
    fprintf(stderr, "flow-limited sender: cwnd %llu bytes after %zu bytes\n",
            (unsigned long long)s.cwnd_bytes, x.total);
    assert_true(s.cwnd_bytes <= 3 * (64u << 10));
    qk_pair_free(&p);
}

/* An application that writes a little every round trip: cwnd stays at the
 * initial window (RFC 9002 §7.2: 10 * 1200 = 12000 bytes). */
static bool trickle_step(qk_pair *p, void *ctx)
{
    dl *x = ctx;
    if (!p->cconn || !qk_conn_established(p->cconn)) return false;
    if (!x->opened) {
        assert_int_equal(qk_stream_open(p->cconn, true, &x->sid), 0);
        x->opened = true;
    }
    qk_time t = p->now / (20 * QK_NS_PER_MS);
    if (t != x->slot && x->written < x->total) {
        x->slot = t;
        uint8_t buf[1000];
        for (size_t i = 0; i < sizeof buf; i++) buf[i] = qk_test_pattern(x->written + i);
        long w = qk_stream_write(p->cconn, x->sid, buf, sizeof buf, false);
        if (w > 0) x->written += (size_t)w;
    }
    if (p->sconn) {
        uint8_t buf[4096];
        bool fin;
        long n;
        while ((n = qk_stream_read(p->sconn, x->sid, buf, sizeof buf, &fin)) > 0)
            x->read += (size_t)n;
    }
    qk_pair_flush(p);
    return x->read >= x->total;
}

static void test_cwnd_app_limited(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    assert_int_equal(qk_pair_start(&p), 0);
    dl x = {.total = 200000};
    assert_true(qk_pair_run_until(&p, trickle_step, &x, p.now + 30 * QK_NS_PER_S));
    qk_conn_stats s;
    qk_conn_stats_get(p.cconn, &s);
    assert_int_equal(s.cwnd_bytes, 12000);
    qk_pair_free(&p);
}

/* A full send buffer that ACKs drain raises QK_EV_STREAM_WRITABLE: a server
 * that writes only when told (64 KiB buffer, 2 MiB response) finishes. */
static void test_writable_after_ack(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.max_stream_send_buffer_bytes = 64u << 10;
    dl x = {.total = 2u << 20, .write_on_event_only = true};
    run_dl(&p, &x, 30 * QK_NS_PER_S);
    /* 2 MiB through a 64 KiB buffer needs >= 31 refills; each needs a wake-up. */
    assert_true(x.writable_events >= 31);
    qk_pair_free(&p);
}

/* READABLE is raised once per stream until the application reads: a client
 * that reads only on events, and only every 8th step, still gets every byte
 * and never sees a second event for data it has not looked at yet. */
static void test_readable_coalesced(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    dl x = {.total = 1u << 20, .read_on_event_only = true, .lazy = 8};
    run_dl(&p, &x, 30 * QK_NS_PER_S);
    fprintf(stderr, "READABLE events: %zu for %zu bytes\n", x.readable_events, x.total);
    assert_int_equal(x.readable_while_unread, 0);
    /* ~900 STREAM frames of <= 1200 bytes; far fewer events. */
    assert_true(x.readable_events > 0 && x.readable_events < x.total / 1200 / 2);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cwnd_flow_control_limited),
        cmocka_unit_test(test_cwnd_app_limited),
        cmocka_unit_test(test_writable_after_ack),
        cmocka_unit_test(test_readable_coalesced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
