/* SPDX-License-Identifier: MIT */
/* A bounded set of disjoint half-open ranges [start, end) of uint64, kept
 * sorted ascending. Used for received packet numbers (ACK tracking), stream
 * reassembly, and acknowledged stream data. Adjacent/overlapping ranges merge. */
#ifndef QK_BASE_RANGESET_H
#define QK_BASE_RANGESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct qk_range {
    uint64_t start; /**< first value in the range */
    uint64_t end;   /**< one past the last value */
} qk_range;

typedef struct qk_rangeset {
    qk_range *r;       /**< ranges, ascending, disjoint, non-adjacent */
    size_t n;          /**< number of ranges */
    size_t cap;        /**< allocated slots */
    size_t max_ranges; /**< bound on n: the peer can never make us exceed it */
} qk_rangeset;

/** Initialise an empty set holding at most max_ranges ranges (>= 1). */
void qk_rangeset_init(qk_rangeset *s, size_t max_ranges);

/** Release memory; the set is empty and reusable afterwards. */
void qk_rangeset_free(qk_rangeset *s);

/** Remove every range (keeps memory). */
void qk_rangeset_clear(qk_rangeset *s);

/**
 * Add [start, end). Merges with overlapping and adjacent ranges.
 * Returns 1 if the set changed, 0 if the range was already covered,
 * QK_ERR_LIMIT if it would need more than max_ranges ranges (set unchanged),
 * QK_ERR_NOMEM on allocation failure (set unchanged),
 * QK_ERR_INVALID_ARG if start > end.
 */
int qk_rangeset_add(qk_rangeset *s, uint64_t start, uint64_t end);

/**
 * Remove [start, end). May split one range in two.
 * Returns 0, QK_ERR_LIMIT if a split would exceed max_ranges (set unchanged),
 * QK_ERR_NOMEM, or QK_ERR_INVALID_ARG if start > end.
 */
int qk_rangeset_remove(qk_rangeset *s, uint64_t start, uint64_t end);

/** Remove every value below v (never fails). */
void qk_rangeset_remove_below(qk_rangeset *s, uint64_t v);

/** True when v is in the set. O(log n). */
bool qk_rangeset_contains(const qk_rangeset *s, uint64_t v);

/** True when all of [start, end) is in the set (an empty range is contained). */
bool qk_rangeset_contains_range(const qk_rangeset *s, uint64_t start, uint64_t end);

/**
 * Index of the first range whose end > v (i.e. that contains v or lies above
 * it), or s->n when there is none. O(log n).
 */
size_t qk_rangeset_lower_bound(const qk_rangeset *s, uint64_t v);

/** Total number of values covered. */
uint64_t qk_rangeset_span(const qk_rangeset *s);

static inline bool qk_rangeset_empty(const qk_rangeset *s)
{
    return s->n == 0;
}

/** Smallest value; only valid when not empty. */
static inline uint64_t qk_rangeset_min(const qk_rangeset *s)
{
    return s->r[0].start;
}

/** Largest value (inclusive); only valid when not empty. */
static inline uint64_t qk_rangeset_max(const qk_rangeset *s)
{
    return s->r[s->n - 1].end - 1;
}

#endif
