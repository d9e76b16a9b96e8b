/* SPDX-License-Identifier: MIT */
/* Log-linear histogram (HDR-style buckets). */
#include "sim/hist.h"

#include <stdlib.h>

static size_t bucket(qk_time v)
{
    if (v < QK_HIST_SUB) return (size_t)v;
    int msb = 63 - __builtin_clzll(v);
    int e = msb - 6; /* v >> e lies in [64, 128) */
    return (size_t)QK_HIST_SUB + (size_t)(e - 1) * 64 + (size_t)((v >> e) - 64);
}

/* Middle of bucket i (exact below QK_HIST_SUB). */
static qk_time middle(size_t i)
{
    if (i < QK_HIST_SUB) return i;
    size_t e = (i - QK_HIST_SUB) / 64 + 1, m = (i - QK_HIST_SUB) % 64 + 64;
    return ((qk_time)m << e) + ((qk_time)1 << (e - 1));
}

int qk_hist_add(qk_hist *h, qk_time v)
{
    if (!h->b) {
        h->b = calloc(QK_HIST_BUCKETS, sizeof *h->b);
        if (!h->b) return QK_ERR_NOMEM;
    }
    size_t i = bucket(v);
    if (i >= QK_HIST_BUCKETS) i = QK_HIST_BUCKETS - 1;
    h->b[i]++;
    h->n++;
    return 0;
}

qk_time qk_hist_pct(const qk_hist *h, double pct)
{
    if (!h->n) return QK_TIME_INFINITE;
    uint64_t rank = (uint64_t)(pct / 100.0 * (double)h->n + 0.5);
    if (rank < 1) rank = 1;
    if (rank > h->n) rank = h->n;
    uint64_t acc = 0;
    for (size_t i = 0; i < QK_HIST_BUCKETS; i++) {
        acc += h->b[i];
        if (acc >= rank) return middle(i);
    }
    return middle(QK_HIST_BUCKETS - 1);
}

void qk_hist_free(qk_hist *h)
{
    free(h->b);
    h->b = NULL;
    h->n = 0;
}
