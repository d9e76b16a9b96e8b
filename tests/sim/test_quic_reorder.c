/* SPDX-License-Identifier: MIT */
/* 5% of packets held back 5 ms (100 Mbit/s, 20 ms RTT, both directions):
 * the sender learns the reordering distance from its spurious losses
 * (recovery.c) and stops retransmitting in-order-late packets. Before this,
 * a 10 MiB transfer sent ~3.7x the packets it needed. */
#include "qk_test.h"
#include "quic_env.h"

#define SIZE (10u << 20)

static void reorder(bool upload)
{
    qk_sim_link_cfg l = quic_env_link();
    l.reorder_p = 0.05;
    l.reorder_delay_ns = 5 * QK_NS_PER_MS;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 110 + upload, &l, &l), 0);
    qk_simq_cfg c = {
        .upload = upload, .size_bytes = SIZE, .cc = QK_CONFIG_CC_CUBIC, .window_bytes = 4u << 20};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    assert_true(quic_env_run_done(&e, q, 30 * QK_NS_PER_S));
    const qk_simq_result *r = qk_simq_result_get(q);
    const qk_conn_stats *s = upload ? &r->client_stats : &r->server_stats;
    double need = (double)SIZE / 1150; /* payload per 1200-byte packet, roughly */
    fprintf(stderr, "%s: %.3f s, sent %llu packets (%.2fx), lost %llu, spurious %llu\n",
            upload ? "upload" : "download", (double)(r->completion_ns - r->connected_ns) / 1e9,
            (unsigned long long)s->pkts_sent, (double)s->pkts_sent / need,
            (unsigned long long)s->pkts_lost, (unsigned long long)s->pkts_spurious);
    assert_false(r->mismatch);
    assert_int_equal(r->hash_read, r->hash_written);
    assert_true(s->pkts_spurious > 0);               /* reordering was seen... */
    assert_true((double)s->pkts_sent < 1.25 * need); /* ...and learnt from */
    quic_env_free(&e);
}

static void test_reorder_download(void **state)
{
    (void)state;
    reorder(false);
}

static void test_reorder_upload(void **state)
{
    (void)state;
    reorder(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reorder_download),
        cmocka_unit_test(test_reorder_upload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
