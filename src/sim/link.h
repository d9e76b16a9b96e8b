/* SPDX-License-Identifier: MIT */
/*
 * Link model: one directional link as a sans-I/O state machine driven by the
 * caller's clock. Used by the simulator (virtual time) and by the real-time
 * relay behind `quack netem` (wall clock).
 *
 * Pipeline of a packet arriving at time t:
 *   blackhole -> MTU -> loss model -> corruption -> duplication ->
 *   queue admission (limits + AQM: drop / CE mark) -> serializer (rate,
 *   rate schedule, suspensions) -> propagation (delay, jitter, reordering).
 */
#ifndef QK_SIM_LINK_H
#define QK_SIM_LINK_H

#include <quack/sim.h>
#include "sim/aqm.h"
#include "sim/pool.h"
#include "sim/rng.h"

/** Hooks the owner receives (may be NULL). */
typedef struct qk_link_hooks {
    void *ctx;
    void (*drop)(void *ctx, const qk_pkt *p, qk_sim_drop why);
    void (*mark)(void *ctx, const qk_pkt *p);
    void (*dequeue)(void *ctx, const qk_pkt *p, qk_time sojourn_ns);
} qk_link_hooks;

typedef struct qk_link {
    qk_sim_link_cfg cfg;
    qk_pkt_pool *pool;
    qk_link_hooks hooks;
    qk_rng rng;
    qk_sim_link_stats st;

    qk_pkt_list queue;  /**< waiting to be serialized */
    qk_pkt *in_service; /**< being serialized (its bytes count as backlog) */
    qk_time tx_free_ns; /**< serializer free from this time */
    qk_pkt_list flight; /**< propagating, FIFO by deliver_ns */
    qk_pkt **late;      /**< reordered packets: min-heap by (deliver_ns, seq) */
    size_t n_late, cap_late;
    qk_time last_deliver_ns; /**< FIFO clamp for jitter */
    uint64_t seq;

    bool ge_bad;            /**< Gilbert–Elliott state */
    struct qk_dualpi2 *dpi; /**< DualPI2 queues (aqm dualpi2) */
    struct qk_fqcodel *fq;  /**< FQ-CoDel queues (aqm fq_codel) */
    qk_red red;             /**< RED state (aqm.c) */
} qk_link;

/** Initialise. Returns 0, QK_ERR_CONFIG (see qk_sim_link_cfg_check). */
int qk_link_init(qk_link *l, const qk_sim_link_cfg *cfg, qk_pkt_pool *pool, uint64_t seed);

/* A caller's qk_sim_link_cfg of caller_bytes (its sizeof) into dst, the
 * fields it lacks zero (their defaults): 0, QK_ERR_INVALID_ARG (NULL, or
 * below the first release's size), QK_ERR_UNSUPPORTED (a field this library
 * does not know is set). */
int qk_sim_link_cfg_import(qk_sim_link_cfg *dst, const qk_sim_link_cfg *caller,
                           size_t caller_bytes);
/** Release every packet held back to the pool. */
void qk_link_free(qk_link *l);

/**
 * Offer a packet at time now (not earlier than any previous call). Takes
 * ownership: the packet is queued, or dropped and returned to the pool.
 * Returns 1 if (at least one copy) was queued, 0 if dropped.
 */
int qk_link_enqueue(qk_link *l, qk_pkt *p, qk_time now);

/** Time of the link's next internal event (QK_TIME_INFINITE = idle). */
qk_time qk_link_next(const qk_link *l);

/**
 * Advance to now and return one packet delivered at the far end at or before
 * now (ownership to the caller; p->deliver_ns is its arrival time), or NULL.
 * Counts one event per completed serialization and per delivery in *events.
 */
qk_pkt *qk_link_poll(qk_link *l, qk_time now, uint64_t *events);

/** The first time >= t at which the link is not suspended (suspend_* keys
 * and suspend_list). Never fails. */
qk_time qk_sim_link_unsuspend(const qk_sim_link_cfg *c, qk_time t);

/** Serialization time of len bytes at rate (0 = infinite). */
qk_time qk_link_tx_ns(uint64_t len, uint64_t rate_bps);

/** A random suspension schedule (link key suspend_random; bench/media.sh's
 * schedule family): count suspensions from start_ns, each of a length drawn
 * uniformly in whole milliseconds from [len_min_ns, len_max_ns], the gap
 * after each from [gap_min_ns, gap_max_ns], from the simulator PRNG seeded
 * with seed (the same seed gives the same schedule everywhere). */
typedef struct qk_sim_suspend_gen {
    uint64_t seed;
    uint32_t count;
    qk_time start_ns, len_min_ns, len_max_ns, gap_min_ns, gap_max_ns;
} qk_sim_suspend_gen;

#define QK_SIM_SUSPEND_GEN_STREAM 0x5355535045ull /* "SUSPE": the generator's PRNG stream */

/** Parse "seed 3, count 30, length 20ms-300ms, gap 10ms-400ms, start 1s"
 * (all five fields). 0 or QK_ERR_CONFIG. */
int qk_sim_suspend_gen_parse(const char *s, qk_sim_suspend_gen *g);
/** Append g's suspensions to c's suspend_list. 0, or QK_ERR_CONFIG when they
 * would overlap the list or overflow QK_SIM_MAX_SUSPEND. */
int qk_sim_suspend_gen_fill(const qk_sim_suspend_gen *g, qk_sim_link_cfg *c);

#endif
