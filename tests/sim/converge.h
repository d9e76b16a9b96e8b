/* SPDX-License-Identifier: MIT */
/* Two flows converging on the congestion-control test path: the body of
 * test_slow_converge.c (CUBIC) and test_slow_converge_newreno.c (NewReno),
 * two executables so that `make test` runs them side by side. */
#ifndef QK_TEST_CONVERGE_H
#define QK_TEST_CONVERGE_H
#include "two_flows.h"

/* Each offset puts the second flow's start at a different point of the
 * first one's slow start (0: the same; 0.5 s: its overshoot; 1 s: its exit; 2 s: its
 * first congestion-avoidance epoch). The suite runs the two that once failed
 * (+1 s, +2 s: below); bench_fairness runs all four over several seeds. With the pacing gain of 1.25 in
 * congestion avoidance the +1 s CUBIC pair stayed 31% apart over 100-300 s
 * without jitter, and with this test's jitter and seed the +2 s pair is 24%
 * apart (bench_fairness --pacing-gain 125 --jitter-ms 1 --seeds 1):
 * the window-limited sender sent its growth packets back to back with the
 * ones its ACKs released, and at a full drop-tail queue those were the
 * packets that found it full, so the flow growing fastest, under CUBIC the
 * smaller one (shorter K, convex first), took the drops (alone 8 times vs
 * 7 for the larger one, 1.6x the per-packet loss rate). Paced at N = 1
 * while the window is the limit (pacer.h), drops follow each flow's share.
 * The matrix over offsets and seeds: docs/perf.md "Two-flow convergence". */
static inline void converge(qk_cc_kind cc)
{
    static const qk_time offsets_ms[] = {1000, 2000};
    for (size_t i = 0; i < sizeof offsets_ms / sizeof offsets_ms[0]; i++) {
        two_result r = two_flows_run(cc, offsets_ms[i] * QK_NS_PER_MS, 100 * QK_NS_PER_S,
                                     300 * QK_NS_PER_S, 1 * QK_NS_PER_MS, 1);
        assert_true(r.util >= 0.95);
        assert_true(r.diff <= 0.20);
    }
}

#endif
