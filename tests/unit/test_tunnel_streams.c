/* SPDX-License-Identifier: MIT */
/* The QUIC carrier's stream priority (QK_TUNNEL_STREAM_URGENCY, incremental
 * on both ends): a small flow opened while a bulk flow keeps its stream's
 * send buffer full is answered at once, not after the bulk flow's bytes.
 * With the default priority (non-incremental, RFC 9218 §4) the same run
 * answers it only once the bulk flow has ended: that is what `quack tunnel`
 * did (bench/tunnel_turns.sh: a 100-byte download waited 3653 ms behind a
 * 50 MB one). */
#include "qk_pair.h"
#include "qk_test.h"

#include <quack/tunnel.h>
#include <string.h>

#define BULK_BYTES  (3u << 20)
#define SMALL_BYTES 1000u

typedef struct run {
    size_t bulk_read;         /* client: bulk bytes read when the small flow ended */
    bool small_done, bad, ok; /* the small flow's FIN was read; a byte differed */
} run;

/* Client opens a bulk and a small stream through the carrier (one request
 * byte each); the server answers BULK_BYTES on the first and, once the bulk
 * answer is under way, SMALL_BYTES on the second. hook: the server marks
 * the streams as the tunnel does on QK_TUNNEL_EV_OPENED. */
static run download_two(bool hook)
{
    const qk_tunnel_carrier *q = &qk_tunnel_carrier_quic;
    qk_pair p;
    run r = {0};
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    /* The client's connection window (fixed, 64 KiB) is what limits the
     * bytes in flight, as a congestion window would: the in-memory path
     * has no queue limit, so the controller alone would put the whole bulk
     * answer on the wire before the small request arrives. Stream windows
     * are large: a stream blocked on its own credit would be skipped. */
    p.ccfg.autotune = false;
    p.ccfg.initial_max_data_bytes = 64u << 10;
    p.ccfg.initial_max_stream_data_bytes = 4u << 20;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    uint64_t bulk, small;
    assert_int_equal(q->open(p.cconn, &bulk), 0);
    assert_int_equal(q->write(p.cconn, bulk, (const uint8_t *)"b", 1, true), 1);
    qk_pair_flush(&p);
    size_t wb = 0, ws = 0, rb = 0, rs = 0;
    bool small_opened = false, bulk_on = false, small_on = false, bulk_done = false, fin = false;
    qk_time end = p.now + 20 * QK_NS_PER_S;
    while (p.now < end && qk_pair_step(&p)) {
        uint8_t req[1];
        if (p.sconn && !bulk_on && qk_stream_read(p.sconn, bulk, req, 1, &fin) == 1) {
            if (hook) q->accepted(p.sconn, bulk);
            bulk_on = true;
        }
        if (bulk_on) qk_pair_write_pattern(p.sconn, bulk, BULK_BYTES, &wb);
        if (!small_opened && rb >= 256u * 1024) { /* the bulk answer is flowing */
            assert_int_equal(q->open(p.cconn, &small), 0);
            assert_int_equal(q->write(p.cconn, small, (const uint8_t *)"s", 1, true), 1);
            small_opened = true;
        }
        if (small_opened && !small_on && qk_stream_read(p.sconn, small, req, 1, &fin) == 1) {
            if (hook) q->accepted(p.sconn, small);
            small_on = true;
        }
        if (small_on) qk_pair_write_pattern(p.sconn, small, SMALL_BYTES, &ws);
        if (!bulk_done) bulk_done = qk_pair_read_pattern(p.cconn, bulk, &rb, &r.bad);
        if (small_opened && !r.small_done && qk_pair_read_pattern(p.cconn, small, &rs, &r.bad)) {
            r.small_done = true;
            r.bulk_read = rb;
        }
        if (bulk_done && r.small_done) {
            r.ok = rb == BULK_BYTES && rs == SMALL_BYTES;
            break;
        }
    }
    qk_pair_free(&p);
    return r;
}

static void test_small_flow_not_behind_bulk(void **state)
{
    (void)state;
    run with = download_two(true), without = download_two(false);
    print_message("with: ok %d bulk_read %zu; without: ok %d bulk_read %zu\n", with.ok,
                  with.bulk_read, without.ok, without.bulk_read);
    assert_true(with.ok && without.ok);
    assert_false(with.bad || without.bad);
    /* Incremental: the small answer arrives while most of the bulk one is
     * still to come (it was asked for at 256 KiB). Default priority: only
     * after every bulk byte was sent (the last window, 64 KiB, still in
     * flight). */
    assert_true(with.bulk_read < BULK_BYTES / 2);
    assert_true(without.bulk_read >= BULK_BYTES - (64u << 10));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_flow_not_behind_bulk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
