/* SPDX-License-Identifier: MIT */
/* covers: src/transport/endpoint/sched.c */
/* The endpoint's timer heap, ready list and reset-token index
 * (src/transport/endpoint/sched.c): order, updates, removal, duplicates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/endpoint/sched.h"

#define N 500

static qk_conn *conns(size_t n)
{
    qk_conn *c = calloc(n, sizeof *c);
    assert_non_null(c);
    for (size_t i = 0; i < n; i++) c[i].ep.heap_idx = SIZE_MAX;
    return c;
}

static void test_heap_order_and_updates(void **state)
{
    (void)state;
    qk_ep_sched s;
    qk_ep_sched_init(&s, 1);
    qk_conn *c = conns(N);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        assert_int_equal(qk_ep_timer_set(&s, &c[i], 1 + x % 1000000), 0);
    }
    /* Move some earlier, some later, remove some, some to infinity. */
    for (size_t i = 0; i < N; i += 3) qk_ep_timer_set(&s, &c[i], c[i].ep.heap_t / 2 + 1);
    for (size_t i = 1; i < N; i += 7) qk_ep_timer_set(&s, &c[i], c[i].ep.heap_t + 500000);
    for (size_t i = 2; i < N; i += 11) qk_ep_timer_remove(&s, &c[i]);
    for (size_t i = 4; i < N; i += 13) qk_ep_timer_set(&s, &c[i], QK_TIME_INFINITE);
    qk_ep_timer_remove(&s, &c[2]); /* twice: a no-op */
    size_t expect = 0;
    for (size_t i = 0; i < N; i++) expect += c[i].ep.heap_idx != SIZE_MAX;
    assert_int_equal(s.heap_len, expect);
    qk_time last = 0;
    size_t popped = 0;
    qk_conn *t;
    while ((t = qk_ep_timer_top(&s))) {
        assert_true(t->ep.heap_t >= last);
        last = t->ep.heap_t;
        qk_ep_timer_remove(&s, t);
        assert_int_equal(t->ep.heap_idx, SIZE_MAX);
        popped++;
    }
    assert_int_equal(popped, expect);
    free(c);
    qk_ep_sched_free(&s);
}

static void test_ready_list(void **state)
{
    (void)state;
    qk_ep_sched s;
    qk_ep_sched_init(&s, 1);
    qk_conn *c = conns(4);
    qk_ep_ready_push(&s, &c[0]);
    qk_ep_ready_push(&s, &c[1]);
    qk_ep_ready_push(&s, &c[0]); /* already on it */
    qk_ep_ready_push(&s, &c[2]);
    assert_int_equal(s.ready_len, 3);
    qk_ep_ready_rotate(&s, &c[0]); /* 1 2 0 */
    assert_ptr_equal(s.ready_head, &c[1]);
    assert_ptr_equal(s.ready_tail, &c[0]);
    qk_ep_ready_remove(&s, &c[2]); /* 1 0 */
    qk_ep_ready_remove(&s, &c[3]); /* not on it */
    assert_ptr_equal(s.ready_head->ep.rnext, &c[0]);
    assert_int_equal(s.ready_len, 2);
    qk_ep_ready_remove(&s, &c[1]);
    qk_ep_ready_remove(&s, &c[0]);
    assert_null(s.ready_head);
    assert_null(s.ready_tail);
    free(c);
    qk_ep_sched_free(&s);
}

static void test_reset_tokens(void **state)
{
    (void)state;
    qk_ep_sched s;
    qk_ep_sched_init(&s, 42);
    qk_conn *c = conns(N);
    uint8_t tok[N][QK_RESET_TOKEN_LEN];
    for (size_t i = 0; i < N; i++) {
        memset(tok[i], 0, sizeof tok[i]);
        memcpy(tok[i], &i, sizeof i);
        c[i].state = QK_CONN_ESTABLISHED;
        c[i].cids.rcid_cur = 0;
        c[i].cids.rcid[0].active = true;
        c[i].cids.rcid[0].has_token = true;
        memcpy(c[i].cids.rcid[0].reset_token, tok[i], QK_RESET_TOKEN_LEN);
        assert_int_equal(qk_ep_rt_add(&s, tok[i], &c[i]), 0);
    }
    /* RFC 9000 §10.3.1: short header, >= 21 bytes, token in the last 16. */
    uint8_t d[40];
    memset(d, 0x55, sizeof d);
    d[0] = 0x40;
    memcpy(d + sizeof d - QK_RESET_TOKEN_LEN, tok[321], QK_RESET_TOKEN_LEN);
    assert_ptr_equal(qk_ep_rt_match(&s, d, sizeof d), &c[321]);
    d[0] = 0xc0; /* long header: never a reset */
    assert_null(qk_ep_rt_match(&s, d, sizeof d));
    d[0] = 0x40;
    assert_null(qk_ep_rt_match(&s, d + sizeof d - 20, 20)); /* too short */
    /* The index holds a token the connection no longer has: its check decides. */
    c[321].cids.rcid[0].has_token = false;
    assert_null(qk_ep_rt_match(&s, d, sizeof d));
    c[321].cids.rcid[0].has_token = true;
    c[321].state = QK_CONN_DRAINING;
    assert_null(qk_ep_rt_match(&s, d, sizeof d));
    c[321].state = QK_CONN_ESTABLISHED;
    qk_ep_rt_remove(&s, tok[321], &c[321]);
    assert_null(qk_ep_rt_match(&s, d, sizeof d));
    /* A second connection claiming the same token is found too. */
    memcpy(c[7].cids.rcid[0].reset_token, tok[321], QK_RESET_TOKEN_LEN);
    assert_int_equal(qk_ep_rt_add(&s, tok[321], &c[7]), 0);
    assert_ptr_equal(qk_ep_rt_match(&s, d, sizeof d), &c[7]);
    for (size_t i = 0; i < N; i++) qk_ep_rt_remove(&s, tok[i], &c[i]);
    qk_ep_rt_remove(&s, tok[321], &c[7]);
    assert_int_equal(s.rt_used, 0);
    free(c);
    qk_ep_sched_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_order_and_updates),
        cmocka_unit_test(test_ready_list),
        cmocka_unit_test(test_reset_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
