/* SPDX-License-Identifier: MIT */
/* The simulator's and the relay's packets: a bounded free list (packets are
 * never malloc'd per packet once the pool is warm) and FIFO lists of them
 * (pool.c). Used by the link (link.c) and the AQMs' queues (aqm.c). */
#ifndef QK_SIM_POOL_H
#define QK_SIM_POOL_H

#include <quack/common.h>
#include <stddef.h>
#include <stdint.h>

#define QK_PKT_INLINE_BYTES 2048

/** A packet inside the simulator or relay (pooled; never malloc'd per packet). */
typedef struct qk_pkt {
    struct qk_pkt *next;
    uint8_t *data;
    uint32_t len, cap;
    uint8_t ecn;
    uint32_t flow;           /**< flow tag (simulator) */
    uint32_t src_ip, dst_ip; /**< IPv4, host order (simulator) */
    uint16_t src_port, dst_port;
    qk_time arrive_ns;  /**< arrival at the current link */
    qk_time tx_end_ns;  /**< end of serialization */
    qk_time deliver_ns; /**< delivery at the far end */
    uint64_t seq;       /**< per-link order of enqueue (tie breaker) */
    uint8_t inline_buf[QK_PKT_INLINE_BYTES];
} qk_pkt;

/** Free list of packets, bounded by max_pkts. */
typedef struct qk_pkt_pool {
    qk_pkt *free;
    size_t live, max_pkts;
} qk_pkt_pool;

void qk_pkt_pool_init(qk_pkt_pool *p, size_t max_pkts);
void qk_pkt_pool_free(qk_pkt_pool *p);
/** A packet able to hold len bytes, or NULL (pool bound or no memory). */
qk_pkt *qk_pkt_get(qk_pkt_pool *p, size_t len);
void qk_pkt_put(qk_pkt_pool *p, qk_pkt *pkt);

typedef struct qk_pkt_list {
    qk_pkt *head, *tail;
} qk_pkt_list;

/** Append p to q (FIFO). Never fails. */
static inline void qk_pkt_list_push(qk_pkt_list *q, qk_pkt *p)
{
    p->next = NULL;
    if (q->tail)
        q->tail->next = p;
    else
        q->head = p;
    q->tail = p;
}

/** Take the oldest packet of q (its next cleared), or NULL. Never fails. */
static inline qk_pkt *qk_pkt_list_pop(qk_pkt_list *q)
{
    qk_pkt *p = q->head;
    if (p) {
        q->head = p->next;
        if (!q->head) q->tail = NULL;
        p->next = NULL;
    }
    return p;
}

#endif
