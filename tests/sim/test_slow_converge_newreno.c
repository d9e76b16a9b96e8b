/* SPDX-License-Identifier: MIT */
/* Slow (run from the Release build by `make test`, label "slow"): the
 * two-flow convergence of test_slow_converge.c (why jitter, why these
 * offsets: there and in converge.h) for NewReno. */
#include "converge.h"

static void test_newreno_converge(void **s)
{
    (void)s;
    converge(QK_CONFIG_CC_NEWRENO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newreno_converge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
