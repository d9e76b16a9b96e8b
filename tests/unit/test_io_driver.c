/* SPDX-License-Identifier: MIT */
/* covers: src/io/loop.c src/io/driver.c */
/* The endpoint <-> loop glue (src/io/driver.c) without sockets: two
 * endpoints exchange the loop entries the driver builds, split as the kernel
 * would split a UDP GSO batch, and move 1 MiB byte-exact. */
#include <quack/driver.h>
#include "io/driver_int.h"
#include "qk_pair.h"
#include "qk_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOTAL_BYTES (1u << 20)
#define ENTRIES     4
#define SEG_BYTES   1452u

typedef struct app {
    bool client;
    qk_conn *conn;
    uint64_t sid;
    bool opened;
    size_t written, read;
    bool fin_read, mismatch;
} app;

static uint8_t pat(size_t i)
{
    return (uint8_t)(i * 7 + 3); /* arithmetic, independent of the stack */
}

static bool app_fn(void *ctx, qk_endpoint *ep, qk_time now)
{
    app *a = ctx;
    qk_event ev;
    (void)now;
    while (qk_endpoint_poll_event(ep, &ev)) {
        if (ev.type == QK_EV_CONNECTED && a->client && !a->opened) {
            assert_int_equal(qk_stream_open(ev.conn, true, &a->sid), 0);
            a->conn = ev.conn;
            a->opened = true;
        }
        if (ev.type == QK_EV_STREAM_READABLE && !a->client) {
            uint8_t buf[4096];
            bool fin = false;
            long n;
            while ((n = qk_stream_read(ev.conn, ev.stream_id, buf, sizeof buf, &fin)) >= 0) {
                for (long i = 0; i < n; i++)
                    if (buf[i] != pat(a->read + (size_t)i)) a->mismatch = true;
                a->read += (size_t)n;
                if (fin) a->fin_read = true;
                if (fin || n == 0) break;
            }
        }
    }
    bool wrote = false;
    while (a->client && a->opened && a->written < TOTAL_BYTES) {
        uint8_t buf[4096];
        size_t n = TOTAL_BYTES - a->written < sizeof buf ? TOTAL_BYTES - a->written : sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = pat(a->written + i);
        long w = qk_stream_write(a->conn, a->sid, buf, n, a->written + n == TOTAL_BYTES);
        assert_true(w >= 0);
        if (w == 0) break;
        a->written += (size_t)w;
        wrote = true;
    }
    return wrote;
}

typedef struct counts {
    size_t entries, batches, max_segs;
} counts;

/* Pull entries from `from` and deliver every segment to `to`. */
static void move(qk_io_ep_driver *from, qk_io_ep_driver *to, uint8_t *bufs, qk_time now, counts *c)
{
    for (int round = 0; round < 64; round++) {
        qk_datagram out[ENTRIES];
        for (int i = 0; i < ENTRIES; i++) {
            memset(&out[i], 0, sizeof out[i]);
            out[i].data = bufs + (size_t)i * 65535;
            out[i].len = 65535;
        }
        size_t n = qk_io_ep_driver_ops.poll_send(from, out, ENTRIES, now);
        assert_true(n <= ENTRIES);
        for (size_t i = 0; i < n; i++) {
            size_t segs = qk_datagram_segment_count(&out[i]);
            c->entries++;
            if (out[i].segment_bytes) {
                /* RFC-independent GSO rule: all segments equal, the last may be shorter. */
                assert_true(out[i].segment_bytes <= SEG_BYTES);
                assert_true(out[i].len > (size_t)out[i].segment_bytes * (segs - 1));
                assert_true(segs >= 2 && segs <= 64);
                c->batches++;
            } else {
                assert_true(out[i].len <= SEG_BYTES);
            }
            if (segs > c->max_segs) c->max_segs = segs;
            for (size_t s = 0; s < segs; s++) {
                qk_datagram d;
                assert_int_equal(qk_datagram_segment(&out[i], s, &d), 0);
                assert_true(d.len <= SEG_BYTES);
                qk_io_ep_driver_ops.on_datagrams(to, &d, 1, now);
            }
        }
        if (n < ENTRIES) break;
    }
}

static void test_driver_gso_transfer(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 0), 0);
    p.ccfg.max_udp_payload_bytes = SEG_BYTES;
    p.scfg.max_udp_payload_bytes = SEG_BYTES;
    p.ccfg.initial_max_data_bytes = p.scfg.initial_max_data_bytes = 4u << 20;
    p.ccfg.initial_max_stream_data_bytes = p.scfg.initial_max_stream_data_bytes = 4u << 20;
    qk_endpoint *ce = qk_endpoint_new(&p.ccfg), *se = qk_endpoint_new(&p.scfg);
    assert_non_null(ce);
    assert_non_null(se);
    app ca = {.client = true}, sa = {.client = false};
    qk_io_ep_driver *cd = NULL, *sd = NULL;
    assert_int_equal(qk_io_ep_driver_new(ce, SEG_BYTES, app_fn, &ca, &cd), 0);
    assert_int_equal(qk_io_ep_driver_new(se, SEG_BYTES, app_fn, &sa, &sd), 0);
    qk_conn *conn;
    assert_int_equal(qk_connect(ce, &p.caddr, &p.saddr, "quack.test", p.now, &conn), 0);
    uint8_t *bufs = malloc((size_t)ENTRIES * 65535);
    assert_non_null(bufs);
    counts cc = {0}, sc = {0};
    qk_time now = p.now;
    for (int step = 0; step < 20000 && !sa.fin_read; step++) {
        now += 100 * QK_NS_PER_US;
        move(cd, sd, bufs, now, &cc);
        move(sd, cd, bufs, now, &sc);
        if (qk_io_ep_driver_ops.next_timeout(cd) <= now) qk_io_ep_driver_ops.on_timeout(cd, now);
        if (qk_io_ep_driver_ops.next_timeout(sd) <= now) qk_io_ep_driver_ops.on_timeout(sd, now);
    }
    assert_true(sa.fin_read);
    assert_false(sa.mismatch);
    assert_int_equal(sa.read, TOTAL_BYTES);
    /* 1 MiB cannot go out as single datagrams only: batches were built. */
    assert_true(cc.batches > 0);
    assert_true(cc.max_segs > 2);
    qk_io_ep_stats st;
    qk_io_ep_driver_get_stats(cd, &st);
    assert_true(st.tx_datagrams >= TOTAL_BYTES / SEG_BYTES);
    assert_int_equal(st.tx_batches, cc.entries);
    qk_io_ep_driver_del(cd);
    qk_io_ep_driver_del(sd);
    qk_endpoint_del(ce);
    qk_endpoint_del(se);
    free(bufs);
    qk_pair_free(&p);
}

/* An ICMP port unreachable (qk_udp_error from the socket's error queue)
 * fails a client's handshake at once; other errors, other peers and
 * established connections are left alone (ICMP is unauthenticated). */
static void test_driver_unreachable(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 0), 0);
    qk_endpoint *ce = qk_endpoint_new(&p.ccfg), *se = qk_endpoint_new(&p.scfg);
    assert_non_null(ce);
    assert_non_null(se);
    qk_io_ep_driver *cd = NULL;
    assert_int_equal(qk_io_ep_driver_new(ce, 1452, NULL, NULL, &cd), 0);
    qk_conn *conn;
    assert_int_equal(qk_connect(ce, &p.caddr, &p.saddr, "quack.test", p.now, &conn), 0);
    qk_udp_error e = {.peer = p.caddr, .err = ECONNREFUSED, .icmp = true, .unreachable = true};
    qk_io_ep_driver_ops.on_error(cd, &e, p.now); /* another peer */
    e.peer = p.saddr;
    e.unreachable = false; /* e.g. host unreachable: may be transient */
    qk_io_ep_driver_ops.on_error(cd, &e, p.now);
    qk_event ev;
    while (qk_endpoint_poll_event(ce, &ev)) assert_int_not_equal(ev.type, QK_EV_CLOSED);
    assert_int_equal(qk_endpoint_conn_count(ce), 1);
    e.unreachable = true;
    qk_io_ep_driver_ops.on_error(cd, &e, p.now + 1000);
    bool closed = false;
    while (qk_endpoint_poll_event(ce, &ev)) {
        if (ev.type != QK_EV_CLOSED) continue;
        closed = true;
        assert_int_equal(ev.reason_err, QK_ERR_CONNECTION_REFUSED);
        assert_false(ev.remote);
        assert_non_null(strstr(ev.reason, "connection refused: nothing listening on "));
        assert_non_null(strstr(ev.reason, "(ICMP port unreachable)"));
    }
    assert_true(closed);
    assert_int_equal(qk_endpoint_conn_count(ce), 0);
    /* A server (or anyone with no connection to that peer) ignores it. */
    assert_int_equal(qk_endpoint_on_unreachable(se, &p.caddr, "x", p.now), 0);
    assert_int_equal(qk_endpoint_on_unreachable(NULL, &p.caddr, "x", p.now), QK_ERR_INVALID_ARG);
    qk_io_ep_driver_del(cd);
    qk_endpoint_del(ce);
    qk_endpoint_del(se);
    qk_pair_free(&p);
}

static void test_driver_init_rejects(void **state)
{
    (void)state;
    qk_io_ep_driver *d = NULL;
    assert_int_equal(qk_io_ep_driver_new(NULL, 1452, NULL, NULL, &d), QK_ERR_INVALID_ARG);
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 0), 0);
    qk_endpoint *ep = qk_endpoint_new(&p.ccfg);
    assert_non_null(ep);
    assert_int_equal(qk_io_ep_driver_new(ep, 1199, NULL, NULL, &d), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_io_ep_driver_new(ep, 65528, NULL, NULL, &d), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_io_ep_driver_new(ep, 1200, NULL, NULL, &d), 0);
    /* Nothing to send before a connection exists. */
    uint8_t buf[65535];
    qk_datagram out = {.data = buf, .len = sizeof buf};
    assert_int_equal(qk_io_ep_driver_ops.poll_send(d, &out, 1, 1), 0);
    qk_io_ep_driver_del(d);
    qk_endpoint_del(ep);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_gso_transfer),
        cmocka_unit_test(test_driver_init_rejects),
        cmocka_unit_test(test_driver_unreachable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
