/* SPDX-License-Identifier: MIT */
/* Stream scheduler with RFC 9218 priorities, and the token bucket that lets
 * urgent traffic bypass congestion control (later issue).
 *
 * Intrusive: the caller embeds a qk_sched_node in each stream and gets the
 * stream back with QK_CONTAINER_OF. No allocation after qk_sched_init. */
#ifndef QK_TRANSPORT_SCHED_H
#define QK_TRANSPORT_SCHED_H

#include <quack/common.h>
#include <stdbool.h>
#include <stddef.h>

#define QK_SCHED_URGENCIES       8 /* RFC 9218 §4.1: urgency 0 (highest) .. 7 */
#define QK_SCHED_DEFAULT_URGENCY 3 /* RFC 9218 §4.1 default */

#ifndef QK_CONTAINER_OF
#define QK_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#endif

typedef struct qk_sched_node {
    struct qk_sched_node *prev, *next;
    uint64_t stream_id;
    uint8_t urgency;  /**< 0..7 */
    bool incremental; /**< RFC 9218 §4.2 */
    bool queued;      /**< currently in a scheduler list */
    bool blocked;     /**< waiting for connection credit (qk_sched_block), not queued */
} qk_sched_node;

typedef struct qk_sched_list {
    qk_sched_node head; /* sentinel */
} qk_sched_list;

typedef struct qk_sched {
    /* Per urgency: non-incremental streams in stream-id order (served one at
     * a time), then incremental streams in round-robin order. */
    qk_sched_list sequential[QK_SCHED_URGENCIES];
    qk_sched_list incremental[QK_SCHED_URGENCIES];
    bool bypass[QK_SCHED_URGENCIES]; /**< urgency may bypass congestion control */
    size_t count;
    /* Streams that have data but wait for connection credit (MAX_DATA), in
     * the order they ran out of it: not served, not counted in count. */
    qk_sched_list blocked;
    size_t blocked_count;
} qk_sched;

/** Initialise an empty scheduler (no bypass). Never fails. */
void qk_sched_init(qk_sched *s);

/** Initialise a node (not queued) with a stream id and the default priority. */
void qk_sched_node_init(qk_sched_node *n, uint64_t stream_id);

/**
 * Queue a stream that became sendable, with its priority. If it is already
 * queued, nothing happens (use qk_sched_set_priority to change priority).
 * Returns 0, or QK_ERR_INVALID_ARG for urgency > 7.
 */
int qk_sched_add(qk_sched *s, qk_sched_node *n, uint8_t urgency, bool incremental);

/** Dequeue a stream (no more data, reset, closed), from the ready lists or
 * the credit-blocked set. No-op if in neither. */
void qk_sched_remove(qk_sched *s, qk_sched_node *n);

/**
 * The stream has data but the connection credit ran out (RFC 9000 §4.1):
 * dequeue it into the credit-blocked set until qk_sched_unblock takes it
 * back (on MAX_DATA). qk_sched_add moves it back to the ready lists at once
 * (retransmissions need no connection credit). No-op if already blocked.
 */
void qk_sched_block(qk_sched *s, qk_sched_node *n);

/** The stream that ran out of connection credit first, taken out of the
 * credit-blocked set (neither queued nor blocked now: the caller re-adds it
 * with qk_sched_add), or NULL when none waits. */
qk_sched_node *qk_sched_unblock(qk_sched *s);

/** Whether some stream waits for connection credit (DATA_BLOCKED is owed,
 * RFC 9000 §4.1, §19.12). */
static inline bool qk_sched_credit_blocked(const qk_sched *s)
{
    return s->blocked_count != 0;
}

/**
 * The next stream to serve (not dequeued): the lowest urgency first; within
 * an urgency, non-incremental streams by ascending stream id, then
 * incremental ones round-robin (RFC 9218 §4). NULL when empty.
 */
qk_sched_node *qk_sched_next(const qk_sched *s);

/**
 * Like qk_sched_next but only among urgencies with the bypass flag (and
 * urgency <= max_urgency). NULL when none.
 */
qk_sched_node *qk_sched_next_bypass(const qk_sched *s, uint8_t max_urgency);

/**
 * The stream just sent some bytes and still has data: an incremental
 * stream moves behind its peers of the same urgency; a non-incremental one
 * keeps its place (RFC 9218 §4.2). Returns 0, or QK_ERR_STATE if not queued.
 */
int qk_sched_requeue(qk_sched *s, qk_sched_node *n);

/**
 * Change a stream's priority (PRIORITY_UPDATE or local API); re-queues it if
 * queued. Returns 0, or QK_ERR_INVALID_ARG for urgency > 7.
 */
int qk_sched_set_priority(qk_sched *s, qk_sched_node *n, uint8_t urgency, bool incremental);

/** Whether the scheduler is empty. */
static inline bool qk_sched_empty(const qk_sched *s)
{
    return s->count == 0;
}

/** Mark an urgency level as allowed to bypass congestion control. */
void qk_sched_set_bypass(qk_sched *s, uint8_t urgency, bool bypass);

/**
 * Token bucket limiting CC-bypass traffic. Rates are bytes per second
 * (every number has its unit in its name).
 */
typedef struct qk_bypass_bucket {
    uint64_t rate_bps;    /**< refill rate, bytes per second */
    uint64_t burst_bytes; /**< bucket depth */
    uint64_t tokens;      /**< bytes available now */
    uint64_t frac;        /**< sub-byte refill remainder (byte*ns, < 1e9) */
    qk_time last_ns;
} qk_bypass_bucket;

/** Initialise a full bucket. Never fails. */
void qk_bypass_init(qk_bypass_bucket *b, uint64_t rate_bps, uint64_t burst_bytes, qk_time now);

/** Whether bytes may bypass congestion control at now (refills first). */
bool qk_bypass_can(qk_bypass_bucket *b, uint64_t bytes, qk_time now);

/**
 * Spend bytes at now. Returns 0, or QK_ERR_AGAIN when the bucket holds
 * fewer than bytes (nothing spent).
 */
int qk_bypass_consume(qk_bypass_bucket *b, uint64_t bytes, qk_time now);

/** Bytes the bucket holds at now (refills first). */
uint64_t qk_bypass_tokens(qk_bypass_bucket *b, qk_time now);

/** The earliest time >= now at which bytes (<= burst) are available;
 * QK_TIME_INFINITE when bytes exceed the bucket or the rate is 0. */
qk_time qk_bypass_ready_at(qk_bypass_bucket *b, uint64_t bytes, qk_time now);

#endif
