/* SPDX-License-Identifier: MIT */
/* Log-linear histogram of nanosecond values: 64 sub-buckets per power of two (<1.6% error). */
#ifndef QK_SIM_HIST_H
#define QK_SIM_HIST_H

#include <quack/common.h>

#define QK_HIST_SUB     128
#define QK_HIST_BUCKETS (QK_HIST_SUB * 58)

typedef struct qk_hist {
    uint64_t n;
    uint32_t *b; /**< QK_HIST_BUCKETS counters, allocated on first add */
} qk_hist;

/** Add one value. Returns 0 or QK_ERR_NOMEM (value not recorded). */
int qk_hist_add(qk_hist *h, qk_time v);
/** Value at percentile pct (0..100): middle of its bucket; QK_TIME_INFINITE if empty. */
qk_time qk_hist_pct(const qk_hist *h, double pct);
void qk_hist_free(qk_hist *h);

#endif
