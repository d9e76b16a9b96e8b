/* SPDX-License-Identifier: MIT */
/* Shared by the sim tests that run one check under each congestion
 * controller (test_bbr_blackhole.c, test_reorder_rack.c): a cmocka group of
 * three tests, test_newreno, test_cubic and test_bbr, each calling
 * check(kind, name). */
#ifndef QK_TEST_PER_CC_H
#define QK_TEST_PER_CC_H

#include "qk_test.h"

#include <quack/quack.h>

typedef void (*qk_per_cc_check)(qk_cc_kind cc, const char *name);

typedef struct qk_per_cc_case {
    qk_per_cc_check check;
    qk_cc_kind cc;
    const char *name;
} qk_per_cc_case;

static inline void qk_per_cc_test(void **state)
{
    const qk_per_cc_case *k = *state;
    k->check(k->cc, k->name);
}

/* Runs check under NewReno, CUBIC and BBR as three cmocka tests of group;
 * returns the number that failed. */
static inline int qk_run_per_cc(const char *group, qk_per_cc_check check)
{
    static qk_per_cc_case cases[3];
    static const qk_cc_kind kinds[3] = {QK_CONFIG_CC_NEWRENO, QK_CONFIG_CC_CUBIC, QK_CONFIG_CC_BBR};
    static const char *const names[3] = {"newreno", "cubic", "bbr"};
    static const char *const test_names[3] = {"test_newreno", "test_cubic", "test_bbr"};
    struct CMUnitTest tests[3];
    for (int i = 0; i < 3; i++) {
        cases[i] = (qk_per_cc_case){.check = check, .cc = kinds[i], .name = names[i]};
        tests[i] = (struct CMUnitTest){
            .name = test_names[i], .test_func = qk_per_cc_test, .initial_state = &cases[i]};
    }
    return _cmocka_run_group_tests(group, tests, 3, NULL, NULL);
}

#endif
