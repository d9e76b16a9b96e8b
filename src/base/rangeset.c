/* SPDX-License-Identifier: MIT */
/* Bounded sets of disjoint uint64 ranges (ACK ranges, reassembly, acked and lost data). */
#include "base/rangeset.h"

#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

void qk_rangeset_init(qk_rangeset *s, size_t max_ranges)
{
    memset(s, 0, sizeof *s);
    s->max_ranges = max_ranges ? max_ranges : 1;
}

void qk_rangeset_free(qk_rangeset *s)
{
    free(s->r);
    s->r = NULL;
    s->n = s->cap = 0;
}

void qk_rangeset_clear(qk_rangeset *s)
{
    s->n = 0;
}

size_t qk_rangeset_lower_bound(const qk_rangeset *s, uint64_t v)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->r[mid].end > v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int reserve(qk_rangeset *s, size_t need)
{
    if (need > s->max_ranges) return QK_ERR_LIMIT;
    if (need <= s->cap) return 0;
    size_t cap = s->cap ? s->cap * 2 : 4;
    if (cap > s->max_ranges) cap = s->max_ranges;
    if (cap < need) cap = need;
    qk_range *r = realloc(s->r, cap * sizeof *r);
    if (!r) return QK_ERR_NOMEM;
    s->r = r;
    s->cap = cap;
    return 0;
}

int qk_rangeset_add(qk_rangeset *s, uint64_t start, uint64_t end)
{
    if (start > end) return QK_ERR_INVALID_ARG;
    if (start == end) return 0;
    /* The common case for in-order stream data and packet numbers: the new
     * range starts inside or right after the highest range and extends it.
     * O(1), no search, no move. */
    if (s->n && start >= s->r[s->n - 1].start && start <= s->r[s->n - 1].end) {
        if (end <= s->r[s->n - 1].end) return 0;
        s->r[s->n - 1].end = end;
        return 1;
    }
    /* First range that touches or lies above start (end >= start). */
    size_t i = start ? qk_rangeset_lower_bound(s, start - 1) : 0;
    /* Ranges [i, j) touch [start, end) (adjacency counts). */
    size_t j = i;
    while (j < s->n && s->r[j].start <= end) j++;
    if (i == j) {
        int rc = reserve(s, s->n + 1);
        if (rc) return rc;
        memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
        s->r[i] = (qk_range){start, end};
        s->n++;
        return 1;
    }
    uint64_t ns = s->r[i].start < start ? s->r[i].start : start;
    uint64_t ne = s->r[j - 1].end > end ? s->r[j - 1].end : end;
    if (j - i == 1 && ns == s->r[i].start && ne == s->r[i].end) return 0;
    s->r[i] = (qk_range){ns, ne};
    memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof *s->r);
    s->n -= j - i - 1;
    return 1;
}

int qk_rangeset_remove(qk_rangeset *s, uint64_t start, uint64_t end)
{
    if (start > end) return QK_ERR_INVALID_ARG;
    if (start == end) return 0;
    size_t i = qk_rangeset_lower_bound(s, start);
    if (i == s->n || s->r[i].start >= end) return 0;
    if (s->r[i].start < start && s->r[i].end > end) { /* split */
        int rc = reserve(s, s->n + 1);
        if (rc) return rc;
        memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
        s->n++;
        s->r[i].end = start;
        s->r[i + 1].start = end;
        return 0;
    }
    if (s->r[i].start < start) {
        s->r[i].end = start;
        i++;
    }
    size_t j = i;
    while (j < s->n && s->r[j].end <= end) j++;
    if (j < s->n && s->r[j].start < end) s->r[j].start = end;
    if (j > i) memmove(&s->r[i], &s->r[j], (s->n - j) * sizeof *s->r);
    s->n -= j - i;
    return 0;
}

void qk_rangeset_remove_below(qk_rangeset *s, uint64_t v)
{
    size_t i = qk_rangeset_lower_bound(s, v);
    if (i < s->n && s->r[i].start < v) s->r[i].start = v;
    if (i == 0) return;
    memmove(&s->r[0], &s->r[i], (s->n - i) * sizeof *s->r);
    s->n -= i;
}

bool qk_rangeset_contains(const qk_rangeset *s, uint64_t v)
{
    size_t i = qk_rangeset_lower_bound(s, v);
    return i < s->n && s->r[i].start <= v;
}

bool qk_rangeset_contains_range(const qk_rangeset *s, uint64_t start, uint64_t end)
{
    if (start >= end) return true;
    size_t i = qk_rangeset_lower_bound(s, start);
    return i < s->n && s->r[i].start <= start && s->r[i].end >= end;
}

uint64_t qk_rangeset_span(const qk_rangeset *s)
{
    uint64_t t = 0;
    for (size_t i = 0; i < s->n; i++) t += s->r[i].end - s->r[i].start;
    return t;
}
