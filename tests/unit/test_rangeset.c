/* SPDX-License-Identifier: MIT */
/* Range set: checked against a brute-force bitmap model. */
#include "qk_test.h"
#include "base/rangeset.h"
#include <quack/common.h>
#include <string.h>

static void check_model(const qk_rangeset *s, const uint8_t *model, size_t n)
{
    for (size_t i = 0; i < s->n; i++) {
        assert_true(s->r[i].start < s->r[i].end);
        if (i) assert_true(s->r[i - 1].end < s->r[i].start); /* disjoint, non-adjacent */
    }
    for (size_t v = 0; v < n; v++) assert_int_equal(qk_rangeset_contains(s, v), model[v]);
}

static void test_add_merge(void **state)
{
    (void)state;
    qk_rangeset s;
    qk_rangeset_init(&s, 16);
    assert_int_equal(qk_rangeset_add(&s, 10, 20), 1);
    assert_int_equal(qk_rangeset_add(&s, 30, 40), 1);
    assert_int_equal(qk_rangeset_add(&s, 12, 18), 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(qk_rangeset_add(&s, 20, 30), 1); /* adjacent both sides */
    assert_int_equal(s.n, 1);
    assert_int_equal(s.r[0].start, 10);
    assert_int_equal(s.r[0].end, 40);
    assert_int_equal(qk_rangeset_add(&s, 0, 1), 1);
    assert_int_equal(qk_rangeset_min(&s), 0);
    assert_int_equal(qk_rangeset_max(&s), 39);
    assert_int_equal(qk_rangeset_span(&s), 31);
    assert_int_equal(qk_rangeset_add(&s, 5, 3), QK_ERR_INVALID_ARG);
    qk_rangeset_free(&s);
}

/* The O(1) path: a range starting inside or right after the highest one. */
static void test_extend_last(void **state)
{
    (void)state;
    qk_rangeset s;
    qk_rangeset_init(&s, 4);
    assert_int_equal(qk_rangeset_add(&s, 0, 5), 1);
    assert_int_equal(qk_rangeset_add(&s, 10, 20), 1);
    assert_int_equal(qk_rangeset_add(&s, 20, 25), 1); /* adjacent: extends */
    assert_int_equal(qk_rangeset_add(&s, 15, 22), 0); /* inside the last range */
    assert_int_equal(qk_rangeset_add(&s, 22, 30), 1); /* overlaps and extends */
    assert_int_equal(s.n, 2);
    assert_int_equal(s.r[1].start, 10);
    assert_int_equal(s.r[1].end, 30);
    assert_int_equal(qk_rangeset_add(&s, 4, 12), 1); /* below the last start: merges all */
    assert_int_equal(s.n, 1);
    assert_int_equal(s.r[0].start, 0);
    assert_int_equal(s.r[0].end, 30);
    for (uint64_t v = 30; v < 1000; v += 10) assert_int_equal(qk_rangeset_add(&s, v, v + 10), 1);
    assert_int_equal(s.n, 1);
    assert_int_equal(qk_rangeset_span(&s), 1000);
    qk_rangeset_free(&s);
}

static void test_limit(void **state)
{
    (void)state;
    qk_rangeset s;
    qk_rangeset_init(&s, 3);
    assert_int_equal(qk_rangeset_add(&s, 0, 1), 1);
    assert_int_equal(qk_rangeset_add(&s, 2, 3), 1);
    assert_int_equal(qk_rangeset_add(&s, 4, 5), 1);
    assert_int_equal(qk_rangeset_add(&s, 6, 7), QK_ERR_LIMIT);
    assert_int_equal(s.n, 3);
    assert_int_equal(qk_rangeset_add(&s, 1, 2), 1); /* merging still allowed */
    assert_int_equal(s.n, 2);
    assert_int_equal(qk_rangeset_remove(&s, 0, 1), 0);
    assert_int_equal(qk_rangeset_add(&s, 10, 13), 1);
    assert_int_equal(qk_rangeset_remove(&s, 11, 12), QK_ERR_LIMIT); /* split would need 4 */
    qk_rangeset_free(&s);
}

static void test_random_vs_model(void **state)
{
    (void)state;
    enum { N = 300 };
    uint8_t model[N];
    uint64_t rng = 42;
    for (int round = 0; round < 50; round++) {
        qk_rangeset s;
        qk_rangeset_init(&s, 1000);
        memset(model, 0, sizeof model);
        for (int op = 0; op < 200; op++) {
            uint64_t a = qk_test_rand64(&rng) % N, b = qk_test_rand64(&rng) % N;
            if (a > b) {
                uint64_t t = a;
                a = b;
                b = t;
            }
            int kind = (int)(qk_test_rand64(&rng) % 10);
            if (kind < 6) {
                bool grows = false;
                for (uint64_t v = a; v < b; v++) grows = grows || !model[v];
                assert_int_equal(qk_rangeset_add(&s, a, b), grows ? 1 : 0);
                memset(model + a, 1, b - a);
            } else if (kind < 9) {
                assert_int_equal(qk_rangeset_remove(&s, a, b), 0);
                memset(model + a, 0, b - a);
            } else {
                qk_rangeset_remove_below(&s, a);
                memset(model, 0, a);
            }
            check_model(&s, model, N);
            bool all = true;
            for (uint64_t v = a; v < b; v++) all = all && model[v];
            assert_int_equal(qk_rangeset_contains_range(&s, a, b), all);
        }
        qk_rangeset_free(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_merge),
        cmocka_unit_test(test_extend_last),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_random_vs_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
