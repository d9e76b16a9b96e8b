/* SPDX-License-Identifier: MIT */
/* Scheduler (RFC 9218 §4 semantics) and the CC-bypass token bucket. */
#include "qk_test.h"
#include "transport/streams/sched.h"

#define MS  QK_NS_PER_MS
#define SEC QK_NS_PER_S

typedef struct stream {
    int tag;
    qk_sched_node node;
} stream;

static uint64_t next_id(qk_sched *s)
{
    qk_sched_node *n = qk_sched_next(s);
    assert_non_null(n);
    return n->stream_id;
}

static void test_urgency_order(void **state)
{
    (void)state;
    qk_sched s;
    qk_sched_init(&s);
    assert_null(qk_sched_next(&s));
    assert_true(qk_sched_empty(&s));
    stream st[4];
    for (int i = 0; i < 4; i++) {
        st[i].tag = 100 + i;
        qk_sched_node_init(&st[i].node, (uint64_t)i * 4);
    }
    assert_int_equal(st[0].node.urgency, QK_SCHED_DEFAULT_URGENCY);
    assert_int_equal(qk_sched_add(&s, &st[0].node, 5, false), 0);
    assert_int_equal(qk_sched_add(&s, &st[1].node, 1, false), 0);
    assert_int_equal(qk_sched_add(&s, &st[2].node, 7, true), 0);
    assert_int_equal(qk_sched_add(&s, &st[3].node, 8, false), QK_ERR_INVALID_ARG);
    assert_int_equal(s.count, 3);
    /* The container is recoverable from the node. */
    stream *got = QK_CONTAINER_OF(qk_sched_next(&s), stream, node);
    assert_ptr_equal(got, &st[1]);
    assert_int_equal(got->tag, 101);
    qk_sched_remove(&s, &st[1].node);
    assert_int_equal(next_id(&s), 0);
    qk_sched_remove(&s, &st[0].node);
    qk_sched_remove(&s, &st[0].node); /* idempotent */
    assert_int_equal(next_id(&s), 8);
    qk_sched_remove(&s, &st[2].node);
    assert_null(qk_sched_next(&s));
    assert_int_equal(s.count, 0);
}

static void test_sequential_by_id(void **state)
{
    (void)state;
    qk_sched s;
    qk_sched_init(&s);
    qk_sched_node n[4];
    uint64_t ids[4] = {12, 4, 8, 0};
    for (int i = 0; i < 4; i++) {
        qk_sched_node_init(&n[i], ids[i]);
        assert_int_equal(qk_sched_add(&s, &n[i], 3, false), 0);
    }
    assert_int_equal(qk_sched_add(&s, &n[0], 3, false), 0); /* already queued: no-op */
    assert_int_equal(s.count, 4);
    /* One at a time, lowest id first; requeue keeps the head. */
    uint64_t order[4] = {0, 4, 8, 12};
    for (int k = 0; k < 4; k++) {
        for (int rep = 0; rep < 3; rep++) {
            qk_sched_node *h = qk_sched_next(&s);
            assert_int_equal(h->stream_id, order[k]);
            assert_int_equal(qk_sched_requeue(&s, h), 0);
        }
        qk_sched_remove(&s, qk_sched_next(&s));
    }
    assert_true(qk_sched_empty(&s));
    assert_int_equal(qk_sched_requeue(&s, &n[0]), QK_ERR_STATE);
}

static void test_incremental_round_robin(void **state)
{
    (void)state;
    qk_sched s;
    qk_sched_init(&s);
    qk_sched_node a, b, c, seq;
    qk_sched_node_init(&a, 0);
    qk_sched_node_init(&b, 4);
    qk_sched_node_init(&c, 8);
    qk_sched_node_init(&seq, 100);
    qk_sched_add(&s, &a, 2, true);
    qk_sched_add(&s, &b, 2, true);
    qk_sched_add(&s, &c, 2, true);
    uint64_t want[] = {0, 4, 8, 0, 4, 8, 0};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        qk_sched_node *h = qk_sched_next(&s);
        assert_int_equal(h->stream_id, want[i]);
        qk_sched_requeue(&s, h);
    }
    /* b finishes; a and c alternate. */
    qk_sched_remove(&s, &b);
    assert_int_equal(next_id(&s), 8);
    qk_sched_requeue(&s, &c);
    assert_int_equal(next_id(&s), 0);
    /* A non-incremental stream of the same urgency goes first, to completion. */
    qk_sched_add(&s, &seq, 2, false);
    assert_int_equal(next_id(&s), 100);
    qk_sched_requeue(&s, &seq);
    assert_int_equal(next_id(&s), 100);
    qk_sched_remove(&s, &seq);
    assert_int_equal(next_id(&s), 0);
    /* A more urgent incremental stream preempts. */
    qk_sched_set_priority(&s, &c, 0, true);
    assert_int_equal(next_id(&s), 8);
    assert_int_equal(c.urgency, 0);
    /* Priority change of an unqueued node just records it. */
    qk_sched_remove(&s, &c);
    assert_int_equal(qk_sched_set_priority(&s, &c, 6, false), 0);
    assert_false(c.queued);
    assert_int_equal(c.urgency, 6);
    assert_int_equal(qk_sched_set_priority(&s, &c, 9, false), QK_ERR_INVALID_ARG);
    assert_int_equal(s.count, 1);
}

static void test_bypass_lookup(void **state)
{
    (void)state;
    qk_sched s;
    qk_sched_init(&s);
    qk_sched_node a, b;
    qk_sched_node_init(&a, 0);
    qk_sched_node_init(&b, 4);
    qk_sched_add(&s, &a, 0, false);
    qk_sched_add(&s, &b, 1, true);
    assert_null(qk_sched_next_bypass(&s, 7));
    qk_sched_set_bypass(&s, 1, true);
    assert_ptr_equal(qk_sched_next_bypass(&s, 7), &b);
    assert_null(qk_sched_next_bypass(&s, 0)); /* above the urgency limit */
    qk_sched_set_bypass(&s, 0, true);
    assert_ptr_equal(qk_sched_next_bypass(&s, 0), &a);
    qk_sched_set_bypass(&s, 200, true); /* ignored */
}

static void test_bypass_bucket(void **state)
{
    (void)state;
    qk_bypass_bucket b;
    /* 1 MB/s, 3000-byte burst. */
    qk_bypass_init(&b, 1000000, 3000, SEC);
    assert_true(qk_bypass_can(&b, 3000, SEC));
    assert_false(qk_bypass_can(&b, 3001, SEC));
    assert_int_equal(qk_bypass_consume(&b, 2000, SEC), 0);
    assert_int_equal(qk_bypass_consume(&b, 1001, SEC), QK_ERR_AGAIN);
    assert_int_equal(b.tokens, 1000);
    /* 1 ms earns 1000 bytes. */
    assert_false(qk_bypass_can(&b, 2000, SEC + MS - 1));
    assert_true(qk_bypass_can(&b, 2000, SEC + MS));
    /* Never more than the burst after idling. */
    assert_false(qk_bypass_can(&b, 3001, 100 * SEC));
    assert_true(qk_bypass_can(&b, 3000, 100 * SEC));
    /* Long run: over 1 s at 1 MB/s, bytes spent = burst + rate * 1 s. */
    qk_bypass_init(&b, 1000000, 3000, 0);
    uint64_t spent = 0;
    for (qk_time t = 0; t <= SEC; t += 333331) {
        while (qk_bypass_consume(&b, 700, t) == 0) spent += 700;
    }
    assert_true(spent <= 3000 + 1000000 && spent + 700 >= 1000000 + 3000 - 700);
    /* A zero rate grants only the burst. */
    qk_bypass_init(&b, 0, 1500, 0);
    assert_int_equal(qk_bypass_consume(&b, 1500, 0), 0);
    assert_false(qk_bypass_can(&b, 1, 1000 * SEC));
}

/* The defaults of qk_config (125,000 B/s, 2,560 B) under random demand:
 * over every window [t0, t1] of the run, the bytes granted never exceed
 * bucket + rate x (t1 - t0). */
static void test_bypass_never_exceeds_bucket(void **state)
{
    (void)state;
    enum { N = 4000 };
    static qk_time at[N];
    static uint64_t sz[N];
    const uint64_t rate = 125000, burst = 2560;
    qk_bypass_bucket b;
    qk_bypass_init(&b, rate, burst, 0);
    uint64_t x = 88172645463325252ull;
    size_t n = 0;
    qk_time t = 0;
    while (n < N) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        t += x % (3 * MS); /* bursts of demand and idle gaps */
        uint64_t want = 60 + (x >> 20) % 1400;
        uint64_t have = qk_bypass_tokens(&b, t);
        if (have >= want) {
            assert_int_equal(qk_bypass_consume(&b, want, t), 0);
            at[n] = t;
            sz[n++] = want;
        } else {
            /* ready_at is exact: not a nanosecond early, available then. */
            qk_time r = qk_bypass_ready_at(&b, want, t);
            assert_true(r > t);
            qk_bypass_bucket c = b, d = b; /* probe copies: b stays at t */
            assert_false(qk_bypass_can(&c, want, r - 1));
            assert_true(qk_bypass_can(&d, want, r));
        }
    }
    for (size_t i = 0; i < N; i += 7) {
        uint64_t sum = 0;
        for (size_t j = i; j < N; j++) {
            sum += sz[j];
            /* floor division: rate * dt / 1e9 whole bytes */
            uint64_t allow = burst + (uint64_t)(((unsigned __int128)(at[j] - at[i]) * rate) / SEC);
            assert_true(sum <= allow);
        }
    }
    assert_true(qk_bypass_ready_at(&b, burst + 1, t) == QK_TIME_INFINITE);
}

/* Streams out of connection credit wait in a set of their own (RFC 9000
 * §4.1): not served, back in the order they ran out of it. */
static void test_credit_blocked_set(void **state)
{
    (void)state;
    qk_sched s;
    qk_sched_init(&s);
    stream st[3];
    for (int i = 0; i < 3; i++) {
        qk_sched_node_init(&st[i].node, (uint64_t)i * 4);
        assert_int_equal(qk_sched_add(&s, &st[i].node, 3, true), 0);
    }
    assert_false(qk_sched_credit_blocked(&s));
    assert_null(qk_sched_unblock(&s));
    qk_sched_block(&s, &st[1].node);
    qk_sched_block(&s, &st[0].node);
    qk_sched_block(&s, &st[0].node); /* idempotent */
    assert_true(qk_sched_credit_blocked(&s));
    assert_int_equal(s.count, 1);
    assert_int_equal(s.blocked_count, 2);
    assert_int_equal(next_id(&s), 8); /* blocked streams are not served */
    /* A new priority while blocked: kept, the stream stays blocked. */
    assert_int_equal(qk_sched_set_priority(&s, &st[1].node, 1, false), 0);
    assert_true(st[1].node.blocked);
    assert_int_equal(next_id(&s), 8);
    /* Unblocked in the order they ran out: 4, then 0. */
    qk_sched_node *n = qk_sched_unblock(&s);
    assert_ptr_equal(n, &st[1].node);
    assert_false(n->blocked);
    assert_false(n->queued);
    assert_int_equal(qk_sched_add(&s, n, n->urgency, n->incremental), 0);
    assert_int_equal(next_id(&s), 4); /* urgency 1 now */
    /* qk_sched_add takes a blocked stream straight back (a retransmission
     * needs no connection credit); qk_sched_remove drops it from the set. */
    qk_sched_block(&s, &st[2].node);
    assert_int_equal(qk_sched_add(&s, &st[0].node, 3, true), 0);
    assert_true(st[0].node.queued);
    assert_int_equal(s.blocked_count, 1);
    qk_sched_remove(&s, &st[2].node);
    assert_false(qk_sched_credit_blocked(&s));
    assert_null(qk_sched_unblock(&s));
    assert_int_equal(s.count, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_urgency_order),
        cmocka_unit_test(test_credit_blocked_set),
        cmocka_unit_test(test_sequential_by_id),
        cmocka_unit_test(test_incremental_round_robin),
        cmocka_unit_test(test_bypass_lookup),
        cmocka_unit_test(test_bypass_bucket),
        cmocka_unit_test(test_bypass_never_exceeds_bucket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
