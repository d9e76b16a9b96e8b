/* SPDX-License-Identifier: MIT */
/*
 * The AQMs of the simulator's link (link.c), all here. Step marking and RED
 * decide at enqueue over the link's one FIFO; DualPI2 (RFC 9332) and
 * FQ-CoDel (RFC 8290) own their queues and decide at dequeue, when the link
 * asks them for the next packet to serialize. Each returns a verdict (pass,
 * CE mark, drop) that the link applies. Drop-tail is the absence of an AQM.
 */
#ifndef QK_SIM_AQM_H
#define QK_SIM_AQM_H

#include <quack/sim.h>

#include "sim/pool.h"
#include "sim/rng.h"

/** What to do with a dequeued packet. */
typedef enum qk_aqm_verdict {
    QK_AQM_PASS = 0,
    QK_AQM_MARK = 1, /**< set CE (the packet is ECN-capable) */
    QK_AQM_DROP = 2,
} qk_aqm_verdict;

/* ---- step marking (DCTCP, RFC 8257 §3.1) ---- */

/** MARK when the instantaneous queue (queue_pkts, or backlog_ns of
 * serialization) exceeds cfg's K, else PASS. Never fails. */
qk_aqm_verdict qk_step_admit(const qk_sim_link_cfg *cfg, uint64_t queue_pkts, qk_time backlog_ns);

/* ---- RED (Floyd & Jacobson 1993) ---- */

typedef struct qk_red {
    double avg;         /**< average queue (bytes) */
    int64_t count;      /**< packets since the last mark or drop (-1: below min) */
    qk_time idle_since; /**< the queue emptied then (0: busy; the link sets it) */
} qk_red;

/** At an arrival: update the average (decayed over an idle period as if
 * 1000-byte packets, pkt_1000_ns each at the link's rate, had been sent) and
 * decide: PASS, MARK (cfg->red_ecn) or DROP. Draws from rng only between
 * red_min and red_max. */
qk_aqm_verdict qk_red_admit(qk_red *r, const qk_sim_link_cfg *cfg, qk_rng *rng,
                            uint64_t queue_bytes, uint64_t queue_pkts, qk_time now,
                            qk_time pkt_1000_ns);

/* ---- DualPI2 (RFC 9332) ---- */

typedef struct qk_dualpi2 {
    qk_pkt_list lq, cq;      /**< L4S (ECT(1)/CE) and classic queues */
    uint64_t l_pkts, c_pkts; /**< their lengths */
    double p;                /**< base PI probability p' (RFC 9332 §2.4) */
    qk_time prev_q_ns;       /**< classic queue delay at the previous update */
    qk_time next_update_ns;  /**< next PI update (every tupdate) */
    bool started;
    /* parameters (RFC 9332 §A.1 defaults unless configured) */
    qk_time target_ns, tupdate_ns, tshift_ns, l_step_ns, l_range_ns;
    double alpha_u, beta_u; /**< alpha * tupdate, beta * tupdate (per second of delay) */
    double k;               /**< coupling factor */
    double p_cmax;          /**< cap on p_C */
} qk_dualpi2;

/** Set the parameters from cfg (dualpi2_* fields, 0 = RFC 9332 defaults). Never fails. */
void qk_dualpi2_init(qk_dualpi2 *d, const qk_sim_link_cfg *cfg);
/** Classify (RFC 9332 §2.3: ECT(1) and CE to L) and queue. Never fails. */
void qk_dualpi2_enqueue(qk_dualpi2 *d, qk_pkt *p, qk_time now);
/** Run the PI updates due up to now (RFC 9332 §A.1 dualpi2_update). Never fails. */
void qk_dualpi2_update(qk_dualpi2 *d, qk_time now);
/** Next packet (time-shifted FIFO between the queues) and its verdict, or NULL. */
qk_pkt *qk_dualpi2_dequeue(qk_dualpi2 *d, qk_time now, qk_rng *rng, qk_aqm_verdict *v);
/** Coupled L4S probability p_CL = min(k p', 1) (RFC 9332 §2.4). */
double qk_dualpi2_p_cl(const qk_dualpi2 *d);
/** Classic probability p_C = min(p'^2, p_Cmax) (RFC 9332 §2.4). */
double qk_dualpi2_p_c(const qk_dualpi2 *d);
/** L probability for an L packet of this sojourn: max(native step, p_CL). */
double qk_dualpi2_p_l(const qk_dualpi2 *d, qk_time sojourn_ns);

/* ---- FQ-CoDel (RFC 8290) ---- */

typedef struct qk_codel_q {
    qk_pkt_list q;
    uint64_t bytes, pkts;
    int64_t deficit;
    int list; /**< 0 none, 1 new, 2 old */
    struct qk_codel_q *next;
    /* CoDel state (RFC 8289) */
    qk_time first_above_ns, drop_next_ns;
    uint32_t count, lastcount;
    bool dropping;
} qk_codel_q;

typedef struct qk_fqcodel {
    qk_codel_q *qs;
    uint32_t n_qs;
    qk_codel_q *new_head, *new_tail, *old_head, *old_tail;
    uint32_t quantum_bytes;
    qk_time target_ns, interval_ns;
    bool ecn;
    uint64_t total_pkts;
} qk_fqcodel;

/** Allocate the flow queues. Returns 0 or QK_ERR_NOMEM. */
int qk_fqcodel_init(qk_fqcodel *f, const qk_sim_link_cfg *cfg);
void qk_fqcodel_free(qk_fqcodel *f);
/** Hash the packet's 5-tuple to a queue and append it (RFC 8290 §4.1). Never fails. */
void qk_fqcodel_enqueue(qk_fqcodel *f, qk_pkt *p, qk_time now);
/** Overflow (RFC 8290 §4.1.3): the head of the fattest queue, removed, or NULL. */
qk_pkt *qk_fqcodel_drop_fattest(qk_fqcodel *f);
/** Next packet by DRR over new then old queues, CoDel applied (RFC 8290 §4.2). */
qk_pkt *qk_fqcodel_dequeue(qk_fqcodel *f, qk_time now, qk_aqm_verdict *v);
/** Return every queued packet to the pool. */
void qk_fqcodel_drain(qk_fqcodel *f, qk_pkt_pool *pool);

#endif
