/* SPDX-License-Identifier: MIT */
/* The endpoint's indexes that keep the work per datagram constant as the
 * number of connections grows: a timer heap keyed by each connection's next
 * timeout, a ready list of connections that may have something to send, and
 * the peers' stateless-reset tokens found by hash (RFC 9000 §10.3.1).
 * Internal to the endpoint (endpoint.c, tests). */
#ifndef QK_TRANSPORT_ENDPOINT_SCHED_H
#define QK_TRANSPORT_ENDPOINT_SCHED_H

#include "transport/conn/conn.h"

typedef struct qk_rt_entry {
    uint8_t token[QK_RESET_TOKEN_LEN];
    qk_conn *conn;
    bool used, tomb;
} qk_rt_entry;

typedef struct qk_ep_sched {
    qk_conn **heap; /* min-heap on qk_conn.ep.heap_t; qk_conn.ep.heap_idx is the slot */
    size_t heap_len, heap_cap;
    qk_conn *ready_head, *ready_tail; /* FIFO through qk_conn.ep.rnext / ep.rprev */
    size_t ready_len;
    qk_rt_entry *rt; /* reset tokens: open addressing, linear probing, keyed hash */
    size_t rt_cap, rt_used, rt_tombs;
    uint64_t rt_seed;
} qk_ep_sched;

/* seed keys the token hash (peers choose their tokens). */
void qk_ep_sched_init(qk_ep_sched *s, uint64_t seed);
void qk_ep_sched_free(qk_ep_sched *s);

/* Put c in the heap at time t (QK_TIME_INFINITE: take it out). 0 or QK_ERR_NOMEM
 * (c then stays out of the heap). */
int qk_ep_timer_set(qk_ep_sched *s, qk_conn *c, qk_time t);
void qk_ep_timer_remove(qk_ep_sched *s, qk_conn *c);
/* The connection with the earliest timer, NULL when the heap is empty. */
static inline qk_conn *qk_ep_timer_top(const qk_ep_sched *s)
{
    return s->heap_len ? s->heap[0] : NULL;
}

/* Append c to the ready list (no-op when it is on it). */
void qk_ep_ready_push(qk_ep_sched *s, qk_conn *c);
void qk_ep_ready_remove(qk_ep_sched *s, qk_conn *c);
/* Move c (on the list) to its end: round robin between senders. */
void qk_ep_ready_rotate(qk_ep_sched *s, qk_conn *c);

/* Index / unindex a peer's reset token held by c. 0 or QK_ERR_NOMEM. */
int qk_ep_rt_add(qk_ep_sched *s, const uint8_t token[QK_RESET_TOKEN_LEN], qk_conn *c);
void qk_ep_rt_remove(qk_ep_sched *s, const uint8_t token[QK_RESET_TOKEN_LEN], qk_conn *c);
/* RFC 9000 §10.3.1: the live connection the datagram d is a stateless reset
 * for, or NULL. Looks only at the connections holding its last 16 bytes. */
qk_conn *qk_ep_rt_match(const qk_ep_sched *s, const uint8_t *d, size_t len);

#endif
