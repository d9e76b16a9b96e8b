/* Flow control (RFC 9000 §4) and receive-window auto-tuning. */
#include "qk_test.h"
#include "transport/flow.h"

#define MS QK_NS_PER_MS

static void test_rx_accounting_and_violation(void **state)
{
    (void)state;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 1000, false, NULL);
    uint64_t nb = 99;
    assert_int_equal(qk_flow_rx_on_data(&rx, 400, &nb), 0);
    assert_int_equal(nb, 400);
    assert_int_equal(qk_flow_rx_on_data(&rx, 300, &nb), 0); /* retransmission below */
    assert_int_equal(nb, 0);
    assert_int_equal(qk_flow_rx_on_data(&rx, 1000, &nb), 0); /* exactly at the limit */
    assert_int_equal(nb, 600);
    assert_int_equal(rx.received_bytes, 1000);
    /* RFC 9000 §4.1: one byte beyond is FLOW_CONTROL_ERROR, state unchanged. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 1001, &nb), QK_ERR_FLOW_CONTROL);
    assert_int_equal(rx.received_bytes, 1000);
    /* Connection-level form. */
    qk_flow_rx conn;
    qk_flow_rx_init(&conn, 5000, 5000, false, NULL);
    assert_int_equal(qk_flow_rx_add(&conn, 4999), 0);
    assert_int_equal(qk_flow_rx_add(&conn, 1), 0);
    assert_int_equal(qk_flow_rx_add(&conn, 1), QK_ERR_FLOW_CONTROL);
    assert_int_equal(qk_flow_rx_add(&conn, UINT64_MAX), QK_ERR_FLOW_CONTROL);
    assert_int_equal(conn.received_bytes, 5000);
    /* Consumption cannot pass what arrived. */
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 600), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 401), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 400), 0);
    assert_int_equal(rx.consumed_bytes, 1000);
}

static void test_rx_update_threshold(void **state)
{
    (void)state;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 1000, false, NULL);
    assert_int_equal(qk_flow_rx_on_data(&rx, 1000, NULL), 0);
    assert_false(qk_flow_rx_should_update(&rx));
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 500), 0); /* credit 500 = window / 2 */
    assert_false(qk_flow_rx_should_update(&rx));
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 1), 0); /* credit 499 < 500 */
    assert_true(qk_flow_rx_should_update(&rx));
    assert_int_equal(qk_flow_rx_update(&rx, 10 * MS, 50 * MS), 1501); /* consumed + window */
    assert_int_equal(rx.max_data_bytes, 1501);
    assert_int_equal(rx.window_bytes, 1000); /* no autotune */
    assert_false(qk_flow_rx_should_update(&rx));
    /* Exact credit: the peer may send up to 1501, not one byte more. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 1501, NULL), 0);
    assert_int_equal(qk_flow_rx_on_data(&rx, 1502, NULL), QK_ERR_FLOW_CONTROL);
    /* The limit never decreases. */
    qk_flow_rx r2;
    qk_flow_rx_init(&r2, 1000, 1000, false, NULL);
    assert_int_equal(qk_flow_rx_update(&r2, 0, 50 * MS), 1000);
}

/* Receive and consume the whole credit, then issue an update at time t. */
static uint64_t drain_and_update(qk_flow_rx *rx, qk_time t, qk_time srtt)
{
    assert_int_equal(qk_flow_rx_on_data(rx, rx->max_data_bytes, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(rx, rx->received_bytes - rx->consumed_bytes), 0);
    assert_true(qk_flow_rx_should_update(rx));
    return qk_flow_rx_update(rx, t, srtt);
}

static void test_autotune_doubling_and_cap(void **state)
{
    (void)state;
    const qk_time srtt = 40 * MS;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 5000, true, NULL);
    /* First update: no previous update to compare with, no growth. */
    assert_int_equal(drain_and_update(&rx, 100 * MS, srtt), 2000);
    assert_int_equal(rx.window_bytes, 1000);
    /* Credit used within 2 * srtt (79 ms < 80 ms): double. */
    assert_int_equal(drain_and_update(&rx, 179 * MS, srtt), 2000 + 2000);
    assert_int_equal(rx.window_bytes, 2000);
    /* Exactly 2 * srtt: not faster than the rule, no growth. */
    assert_int_equal(drain_and_update(&rx, 259 * MS, srtt), 4000 + 2000);
    assert_int_equal(rx.window_bytes, 2000);
    /* Fast again: 4000, then the cap 5000 (not 8000), then stays. */
    assert_int_equal(drain_and_update(&rx, 260 * MS, srtt), 6000 + 4000);
    assert_int_equal(drain_and_update(&rx, 261 * MS, srtt), 10000 + 5000);
    assert_int_equal(drain_and_update(&rx, 262 * MS, srtt), 15000 + 5000);
    assert_int_equal(rx.window_bytes, 5000);
    /* Without autotune the window never changes. */
    qk_flow_rx fixed;
    qk_flow_rx_init(&fixed, 1000, 5000, false, NULL);
    for (int i = 0; i < 5; i++) drain_and_update(&fixed, (qk_time)i, srtt);
    assert_int_equal(fixed.window_bytes, 1000);
}

static void test_autotune_budget(void **state)
{
    (void)state;
    const qk_time srtt = 40 * MS;
    qk_flow_budget b;
    qk_flow_budget_init(&b, 3000);
    qk_flow_rx a, c;
    qk_flow_rx_init(&a, 1000, 100000, true, &b);
    qk_flow_rx_init(&c, 1000, 100000, true, &b);
    drain_and_update(&a, 0, srtt);
    drain_and_update(&a, 1, srtt); /* +1000 granted */
    assert_int_equal(a.window_bytes, 2000);
    drain_and_update(&a, 2, srtt); /* +2000 granted: budget now full */
    assert_int_equal(a.window_bytes, 4000);
    assert_int_equal(b.used_bytes, 3000);
    drain_and_update(&a, 3, srtt); /* +4000 refused */
    assert_int_equal(a.window_bytes, 4000);
    drain_and_update(&c, 0, srtt);
    drain_and_update(&c, 1, srtt); /* refused for the other window too */
    assert_int_equal(c.window_bytes, 1000);
    qk_flow_rx_free(&a); /* a's growth goes back to the budget */
    assert_int_equal(b.used_bytes, 0);
    drain_and_update(&c, 2, srtt);
    assert_int_equal(c.window_bytes, 2000);
    assert_int_equal(b.used_bytes, 1000);
    qk_flow_rx_free(&c);
    assert_false(qk_flow_budget_grant(&b, 3001));
    assert_true(qk_flow_budget_grant(&b, 3000));
}

static void test_tx(void **state)
{
    (void)state;
    qk_flow_tx tx;
    qk_flow_tx_init(&tx, 1000);
    assert_int_equal(qk_flow_tx_available(&tx), 1000);
    uint64_t lim = 0;
    assert_false(qk_flow_tx_blocked_pending(&tx, true, &lim));
    assert_int_equal(qk_flow_tx_on_sent(&tx, 700), 0);
    assert_int_equal(qk_flow_tx_on_sent(&tx, 301), QK_ERR_LIMIT);
    assert_int_equal(qk_flow_tx_on_sent(&tx, 300), 0);
    assert_int_equal(qk_flow_tx_available(&tx), 0);
    /* Blocked with data: report once at limit 1000. */
    assert_false(qk_flow_tx_blocked_pending(&tx, false, &lim));
    assert_true(qk_flow_tx_blocked_pending(&tx, true, &lim));
    assert_int_equal(lim, 1000);
    qk_flow_tx_on_blocked_sent(&tx, 1000);
    assert_false(qk_flow_tx_blocked_pending(&tx, true, &lim));
    /* Lost: report again. A stale loss of another limit does nothing. */
    qk_flow_tx_on_blocked_lost(&tx, 900);
    assert_false(qk_flow_tx_blocked_pending(&tx, true, &lim));
    qk_flow_tx_on_blocked_lost(&tx, 1000);
    assert_true(qk_flow_tx_blocked_pending(&tx, true, &lim));
    qk_flow_tx_on_blocked_sent(&tx, 1000);
    /* Limits only increase (RFC 9000 §19.9). */
    assert_false(qk_flow_tx_on_max(&tx, 800));
    assert_false(qk_flow_tx_on_max(&tx, 1000));
    assert_int_equal(tx.max_data_bytes, 1000);
    assert_true(qk_flow_tx_on_max(&tx, 1500));
    assert_int_equal(qk_flow_tx_available(&tx), 500);
    assert_false(qk_flow_tx_blocked_pending(&tx, true, &lim));
    assert_int_equal(qk_flow_tx_on_sent(&tx, 500), 0);
    /* Blocked at a new limit: one new report. */
    assert_true(qk_flow_tx_blocked_pending(&tx, true, &lim));
    assert_int_equal(lim, 1500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rx_accounting_and_violation),
        cmocka_unit_test(test_rx_update_threshold),
        cmocka_unit_test(test_autotune_doubling_and_cap),
        cmocka_unit_test(test_autotune_budget),
        cmocka_unit_test(test_tx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
