/* SPDX-License-Identifier: MIT */
/** @file
 * quack — deterministic discrete-event network simulator.
 *
 * Time is virtual (qk_time, ns). One binary heap orders every entity (node
 * timeouts, link internal events, the CSV sampler); nothing is allocated per
 * event. Hosts own an IPv4 address (10.0.0.N) and a routing table (destination
 * address -> outgoing link); nodes attach to a host at a UDP port and have the
 * sans-I/O shape of a QUIC endpoint (recv / next_timeout / on_timeout), so an
 * endpoint plugs in unchanged. Links are directional and model rate, delay,
 * jitter, reordering, queue limits, AQMs, loss, duplication, corruption, MTU,
 * suspensions, rate schedules and blackholes (see docs/sim.md for units).
 *
 * One seed gives byte-identical outputs: every link and node draws from its own
 * xoshiro256** stream derived from (seed, id).
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: a qk_sim and everything in it are used
 * by one thread; separate simulations may run in parallel.
 */
#ifndef QUACK_SIM_H
#define QUACK_SIM_H

#include <quack/common.h>
#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A simulation: hosts, links, nodes and virtual time (opaque; qk_sim_new, qk_sim_del). */
typedef struct qk_sim qk_sim;

/* ------------------------------------------------------------------------ */
/* Link model configuration (shared with the real-time relay, `quack netem`). */

/** Active queue management at the link's queue. */
typedef enum qk_sim_aqm {
    QK_SIM_AQM_DROPTAIL = 0, /**< drop only at the queue limit */
    QK_SIM_AQM_STEP,         /**< DCTCP-style step marking at K */
    QK_SIM_AQM_RED,          /**< RED (Floyd & Jacobson 1993), optional ECN */
    QK_SIM_AQM_DUALPI2,      /**< DualPI2 (RFC 9332): L4S queue + PI2 classic queue, coupled */
    QK_SIM_AQM_FQ_CODEL,     /**< FQ-CoDel (RFC 8290) */
} qk_sim_aqm;

/** Loss model applied at the link's ingress. */
typedef enum qk_sim_loss {
    QK_SIM_LOSS_NONE = 0,  /**< no random loss */
    QK_SIM_LOSS_BERNOULLI, /**< each packet lost with probability loss_p */
    QK_SIM_LOSS_GE,        /**< Gilbert–Elliott two-state Markov chain */
} qk_sim_loss;

#define QK_SIM_MAX_SCHEDULE  32  /**< entries in a rate schedule */
#define QK_SIM_MAX_LOSS_LIST 256 /**< ranges in an explicit loss list */
#define QK_SIM_MAX_SUSPEND   128 /**< intervals in an explicit suspension list */

/** One step of a rate schedule: from at_ns on, the link runs at rate_bps.
 * Frozen: an array inside qk_sim_link_cfg. */
typedef struct qk_sim_rate_step {
    qk_time at_ns;     /**< virtual time the step starts */
    uint64_t rate_bps; /**< the link's rate from then on, bit/s */
} qk_sim_rate_step;

/** A directional link. Zero-initialised = infinitely fast, lossless, no delay. */
typedef struct qk_sim_link_cfg {
    uint64_t rate_bps;        /**< serialization rate in bit/s; 0 = infinite */
    qk_time delay_ns;         /**< one-way propagation delay */
    qk_time jitter_ns;        /**< extra delay uniform in [0, jitter]; FIFO kept */
    double reorder_p;         /**< probability a packet is held back reorder_delay_ns */
    qk_time reorder_delay_ns; /**< extra delay of a reordered packet */

    uint64_t limit_bytes;   /**< queue limit in bytes (0 = none unless limit_ns) */
    qk_time limit_ns;       /**< queue limit as backlog drain time (0 = none) */
    uint64_t limit_pkts;    /**< queue limit in packets (0 = none) */
    qk_sim_aqm aqm;         /**< AQM kind */
    uint64_t step_k_pkts;   /**< STEP: mark when queue > K packets (if non-zero) */
    qk_time step_k_ns;      /**< STEP: mark when queue drain time > K ns (if non-zero) */
    uint64_t red_min_bytes; /**< RED min threshold on the average queue */
    uint64_t red_max_bytes; /**< RED max threshold */
    double red_max_p;       /**< RED drop/mark probability at max threshold */
    double red_wq;          /**< RED EWMA weight (default 0.002) */
    bool red_ecn;           /**< RED marks ECT packets instead of dropping */
    /* DualPI2 (RFC 9332 §A.1; 0 = the RFC's default) */
    qk_time dualpi2_target_ns;   /**< classic queue delay target (15 ms) */
    qk_time dualpi2_tupdate_ns;  /**< PI update interval (16 ms) */
    double dualpi2_alpha;        /**< PI integral gain, Hz (0.16) */
    double dualpi2_beta;         /**< PI proportional gain, Hz (3.0) */
    double dualpi2_k;            /**< coupling factor k (2) */
    qk_time dualpi2_l_thresh_ns; /**< L queue marking threshold (800 us ramp start) */
    qk_time dualpi2_l_range_ns;  /**< L ramp width (400 us with the default threshold;
                                      0 with a configured threshold = a step) */
    /* FQ-CoDel (RFC 8290 §5; 0 = default) */
    uint32_t fq_flows;         /**< flow queues (1024) */
    uint32_t fq_quantum_bytes; /**< DRR quantum (1514) */
    qk_time codel_target_ns;   /**< CoDel target (5 ms) */
    qk_time codel_interval_ns; /**< CoDel interval (100 ms) */
    bool fq_no_ecn;            /**< drop instead of marking ECT packets */

    qk_sim_loss loss;                            /**< loss model */
    double loss_p;                               /**< BERNOULLI: loss probability */
    double ge_p_gb;                              /**< GE: P(good -> bad) per packet */
    double ge_p_bg;                              /**< GE: P(bad -> good) per packet */
    double ge_loss_good;                         /**< GE: loss probability in the good state */
    double ge_loss_bad;                          /**< GE: loss probability in the bad state */
    uint64_t loss_list[QK_SIM_MAX_LOSS_LIST][2]; /**< [first,last] arrival indices lost */
    size_t n_loss_list;                          /**< entries used in loss_list */

    double dup_p;       /**< probability a packet is duplicated */
    double corrupt_p;   /**< probability one random byte is flipped (xor 0xff) */
    uint32_t mtu_bytes; /**< datagrams larger than this are dropped; 0 = no limit */
    /** Bytes charged per packet on top of the UDP payload when serializing and
     * when converting the backlog to time (limit_ns, step_k_ns): the IP and
     * UDP headers a real link carries, 28 for IPv4, 48 for IPv6 (plus any
     * link framing). 0 = the payload only. Byte queue limits count payload. */
    uint32_t overhead_bytes;

    qk_time suspend_start_ns;  /**< first suspension begins here */
    qk_time suspend_period_ns; /**< one suspension every period */
    qk_time suspend_ns;        /**< each suspension lasts this long (0 = none) */
    uint32_t suspend_count;    /**< number of suspensions (0 = unbounded) */
    /** Explicit suspensions [start, end), increasing and disjoint, on top of
     * the periodic ones (bench/scenarios/media-wifi.ini). */
    qk_time suspend_list[QK_SIM_MAX_SUSPEND][2];
    size_t n_suspend_list; /**< entries used in suspend_list */

    qk_sim_rate_step rate_schedule[QK_SIM_MAX_SCHEDULE]; /**< rate changes, increasing times */
    size_t n_rate_schedule;                              /**< entries used in rate_schedule */

    qk_time blackhole_start_ns; /**< drop everything arriving in [start, end) */
    qk_time blackhole_end_ns;   /**< end of the blackhole (0 = none) */
} qk_sim_link_cfg;

/** Why a link dropped a packet (index into qk_sim_link_stats.dropped). */
typedef enum qk_sim_drop {
    QK_SIM_DROP_QUEUE = 0, /**< queue limit (drop-tail) */
    QK_SIM_DROP_AQM,       /**< AQM decision (RED) */
    QK_SIM_DROP_LOSS,      /**< loss model */
    QK_SIM_DROP_MTU,       /**< larger than the MTU */
    QK_SIM_DROP_BLACKHOLE, /**< blackhole period */
    QK_SIM_DROP_NOMEM,     /**< packet pool exhausted */
    QK_SIM_DROP_NOROUTE,   /**< no route / no node at the destination */
    QK_SIM_DROP_N          /**< number of reasons (array size) */
} qk_sim_drop;

/** Counters of one link since creation. */
typedef struct qk_sim_link_stats {
    uint64_t arrived_pkts;                /**< datagrams offered to the link */
    uint64_t enqueued_pkts;               /**< accepted into the queue (incl. duplicates) */
    uint64_t delivered_pkts;              /**< datagrams handed to the far end */
    uint64_t delivered_bytes;             /**< their bytes */
    uint64_t dropped_pkts[QK_SIM_DROP_N]; /**< drops by reason (qk_sim_drop) */
    uint64_t marked_pkts;                 /**< CE marks applied by the AQM */
    uint64_t duplicated_pkts;             /**< duplicates made */
    uint64_t corrupted_pkts;              /**< datagrams with a byte flipped */
    uint64_t reordered_pkts;              /**< datagrams held back (reorder_p) */
    uint64_t queue_bytes;     /**< instantaneous backlog (incl. the packet in service) */
    uint64_t queue_pkts;      /**< instantaneous backlog in packets */
    uint64_t max_queue_bytes; /**< largest backlog so far */
    uint64_t qdelay_samples;  /**< packets that left the queue */
    qk_time qdelay_sum_ns;    /**< their total sojourn time */
    qk_time qdelay_max_ns;    /**< their longest sojourn time */
} qk_sim_link_stats;

/**
 * Check a link configuration (cfg_bytes: the caller's sizeof(qk_sim_link_cfg)).
 * Returns 0 or QK_ERR_CONFIG (probabilities out of [0,1], RED thresholds
 * inverted, a field this library does not know set, ...); when why != NULL it
 * receives a static explanation.
 */
int qk_sim_link_cfg_check_sized(const qk_sim_link_cfg *cfg, size_t cfg_bytes, const char **why);

/** qk_sim_link_cfg_check_sized() with the caller's sizeof(qk_sim_link_cfg). */
#define qk_sim_link_cfg_check(cfg, why)                                                            \
    qk_sim_link_cfg_check_sized((cfg), sizeof(qk_sim_link_cfg), (why))

/* ------------------------------------------------------------------------ */
/* Simulator core. */

/** A node: anything with the sans-I/O endpoint shape. */
typedef struct qk_sim_node_ops {
    /** A datagram arrived (d->local = this node, d->peer = sender). */
    void (*recv)(void *ctx, qk_sim *sim, const qk_datagram *d, qk_time now);
    /** Next time the node wants on_timeout; QK_TIME_INFINITE = none. May be NULL. */
    qk_time (*next_timeout)(void *ctx);
    /** The timeout fired. May be NULL when next_timeout is NULL. */
    void (*on_timeout)(void *ctx, qk_sim *sim, qk_time now);
} qk_sim_node_ops;

/** Create a simulator with a seed. Returns NULL on allocation failure. */
qk_sim *qk_sim_new(uint64_t seed);

/** Destroy the simulator and everything it owns (built-in nodes included; a custom node's ctx stays
 * the caller's). */
void qk_sim_del(qk_sim *sim);

/** Current virtual time. */
qk_time qk_sim_now(const qk_sim *sim);

/** The seed given to qk_sim_new(). */
uint64_t qk_sim_seed(const qk_sim *sim);

/**
 * Add a host named name with IPv4 address ipv4 (host byte order, e.g.
 * 0x0a000001 for 10.0.0.1). Returns the host id (>= 0), QK_ERR_INVALID_ARG
 * (duplicate name or address) or QK_ERR_NOMEM.
 */
int qk_sim_host_add(qk_sim *sim, const char *name, uint32_t ipv4);

/** Host id by name, or QK_ERR_NOT_FOUND. */
int qk_sim_host_find(const qk_sim *sim, const char *name);

/** Address of a host as a qk_addr with the given port; zeroed addr if bad id. */
qk_addr qk_sim_host_addr(const qk_sim *sim, int host, uint16_t port);

/**
 * Add a directional link from host `from` to host `to` named name. The cfg is
 * copied (cfg_bytes of it: the caller's sizeof(qk_sim_link_cfg); fields it
 * lacks are zero). Returns the link id, QK_ERR_CONFIG (see
 * qk_sim_link_cfg_check), QK_ERR_INVALID_ARG or QK_ERR_NOMEM.
 */
int qk_sim_link_add_sized(qk_sim *sim, const char *name, int from, int to,
                          const qk_sim_link_cfg *cfg, size_t cfg_bytes);

/** qk_sim_link_add_sized() with the caller's sizeof(qk_sim_link_cfg). */
#define qk_sim_link_add(sim, name, from, to, cfg)                                                  \
    qk_sim_link_add_sized((sim), (name), (from), (to), (cfg), sizeof(qk_sim_link_cfg))

/**
 * Route: datagrams at host `host` for host `dst` leave on `link` (dst < 0 sets
 * the default route). Returns 0, QK_ERR_INVALID_ARG or QK_ERR_NOMEM.
 */
int qk_sim_route_add(qk_sim *sim, int host, int dst, int link);

/** Number of links (ids 0 .. count - 1). */
size_t qk_sim_link_count(const qk_sim *sim);
/** A link's counters (NULL if bad id). */
const qk_sim_link_stats *qk_sim_link_stats_get(const qk_sim *sim, int link);
/** A link's name (NULL if bad id). */
const char *qk_sim_link_name(const qk_sim *sim, int link);
/** Link id by name, or QK_ERR_NOT_FOUND. */
int qk_sim_link_find(const qk_sim *sim, const char *name);

/**
 * Attach a node at host:port. ops is copied (ops_bytes of it: the caller's
 * sizeof(qk_sim_node_ops); callbacks a smaller table lacks are NULL).
 * Returns the node id, QK_ERR_INVALID_ARG (port in use, bad host, NULL ops,
 * ops_bytes below the first release's size), QK_ERR_UNSUPPORTED (ops sets a
 * callback this library does not know) or QK_ERR_NOMEM. The node's
 * next_timeout is read right away.
 */
int qk_sim_node_add_sized(qk_sim *sim, int host, uint16_t port, const qk_sim_node_ops *ops,
                          size_t ops_bytes, void *ctx);

/** qk_sim_node_add_sized() with the caller's sizeof(qk_sim_node_ops). */
#define qk_sim_node_add(sim, host, port, ops, ctx)                                                 \
    qk_sim_node_add_sized((sim), (host), (port), (ops), sizeof(qk_sim_node_ops), (ctx))

/** The node's address (host address + port). */
qk_addr qk_sim_node_addr(const qk_sim *sim, int node);

/**
 * Send a datagram from node: the bytes are copied; d->peer is the destination
 * (IPv4, a host address), d->ecn travels with it; the source is d->local when
 * it is one of the node's addresses (see qk_sim_node_alias), else the node's
 * address. A GSO batch (segment_bytes != 0) leaves as
 * separate datagrams. Returns 0, QK_ERR_INVALID_ARG,
 * QK_ERR_TOO_LARGE (> 65535 bytes) or QK_ERR_NOMEM (pool bound; counted as a
 * drop). A datagram without a route is dropped and counted (NOROUTE).
 */
int qk_sim_send(qk_sim *sim, int node, const qk_datagram *d);

/**
 * Move a node to host:port (a NAT rebinding when only the port changes, a new
 * address otherwise): it sends from and receives at the new address only.
 * Returns 0, QK_ERR_INVALID_ARG (bad ids, port in use) or QK_ERR_NOMEM.
 */
int qk_sim_node_rebind(qk_sim *sim, int node, int host, uint16_t port);
/**
 * Give a node a second address host:port: it receives there too, and a
 * datagram whose d->local names that address leaves from it (client
 * migration). Returns 0, QK_ERR_INVALID_ARG or QK_ERR_NOMEM.
 */
int qk_sim_node_alias(qk_sim *sim, int node, int host, uint16_t port);
/** Change a link's MTU from now on (0 = none). Returns 0 or QK_ERR_INVALID_ARG. */
int qk_sim_link_set_mtu(qk_sim *sim, int link, uint32_t mtu_bytes);
/** Re-read a node's next_timeout (call after poking a node from outside). */
void qk_sim_node_update(qk_sim *sim, int node);

/** Uniform 64-bit random value from the simulator's own stream. */
uint64_t qk_sim_rand64(qk_sim *sim);

/**
 * Run until virtual time `until` (inclusive) or until no event is left.
 * Returns the number of events processed.
 */
uint64_t qk_sim_run(qk_sim *sim, qk_time until);

/** Total events processed so far (node callbacks + link packet events). */
uint64_t qk_sim_events(const qk_sim *sim);

/** Packets dropped because no route matched. */
uint64_t qk_sim_noroute_drops(const qk_sim *sim);

/* ------------------------------------------------------------------------ */
/* Built-in nodes. */

/** Constant bit rate source: sends size_bytes datagrams at rate_bps. */
typedef struct qk_sim_cbr_cfg {
    uint64_t rate_bps;   /**< sending rate, bit/s */
    uint32_t size_bytes; /**< >= 24 (sequence, send time, check word) */
    qk_time start_ns;    /**< first packet at this virtual time */
    qk_time stop_ns;     /**< QK_TIME_INFINITE = forever; no packet at t >= stop */
    uint64_t max_pkts;   /**< stop after this many packets (0 = no limit) */
    uint8_t ecn;         /**< codepoint set on every packet */
    qk_addr dst;         /**< destination (a host address and port) */
} qk_sim_cbr_cfg;

/** A constant-bit-rate source node (owned by the simulator). */
typedef struct qk_sim_cbr qk_sim_cbr;

/** Create a CBR source at host:port (owned by the sim; out may be NULL). cfg is
 * copied (cfg_bytes of it: the caller's sizeof(qk_sim_cbr_cfg)). Returns the node
 * id, QK_ERR_INVALID_ARG, QK_ERR_UNSUPPORTED (a field this library does not know
 * is set) or QK_ERR_NOMEM. */
int qk_sim_cbr_add_sized(qk_sim *sim, int host, uint16_t port, const qk_sim_cbr_cfg *cfg,
                         size_t cfg_bytes, qk_sim_cbr **out);

/** qk_sim_cbr_add_sized() with the caller's sizeof(qk_sim_cbr_cfg). */
#define qk_sim_cbr_add(sim, host, port, cfg, out)                                                  \
    qk_sim_cbr_add_sized((sim), (host), (port), (cfg), sizeof(qk_sim_cbr_cfg), (out))
/** Packets sent so far. */
uint64_t qk_sim_cbr_sent_pkts(const qk_sim_cbr *c);
/** Bytes sent so far. */
uint64_t qk_sim_cbr_sent_bytes(const qk_sim_cbr *c);

/** Sink: records arrivals of CBR packets (count, bytes, one-way delay). */
typedef struct qk_sim_sink qk_sim_sink;

/** Per-arrival observer (tests): seq, send time, arrival time, ecn. May be NULL. */
typedef void (*qk_sim_sink_observer)(void *ctx, uint64_t seq, qk_time sent, qk_time now,
                                     uint8_t ecn, size_t len);

/** Sink counters. */
typedef struct qk_sim_sink_stats {
    uint64_t pkts;           /**< packets received */
    uint64_t bytes;          /**< bytes received */
    uint64_t ce_pkts;        /**< of which marked CE */
    uint64_t corrupt_pkts;   /**< of which failed the check word */
    uint64_t dup_pkts;       /**< of which duplicates (sequence seen before) */
    uint64_t reordered_pkts; /**< of which arrived after a later sequence number */
    qk_time first_ns;        /**< arrival of the first packet */
    qk_time last_ns;         /**< arrival of the last packet */
} qk_sim_sink_stats;

/** Create a sink at host:port. Returns the node id, QK_ERR_INVALID_ARG (out
 * NULL, port in use, bad host) or QK_ERR_NOMEM. */
int qk_sim_sink_add(qk_sim *sim, int host, uint16_t port, qk_sim_sink **out);
/** Call fn(ctx, ...) for every arrival from now on (NULL fn: stop). */
void qk_sim_sink_observe(qk_sim_sink *s, qk_sim_sink_observer fn, void *ctx);
/** The sink's counters (valid while the simulator lives). */
const qk_sim_sink_stats *qk_sim_sink_stats_get(const qk_sim_sink *s);
/** One-way delay percentile (0..100) in ns from a log-linear histogram (error below 1.6 percent).
 */
qk_time qk_sim_sink_owd_pct(const qk_sim_sink *s, double pct);

/** Echo node: sends every datagram back to its sender (same ECN). Returns
 * the node id, QK_ERR_INVALID_ARG (port in use, bad host) or QK_ERR_NOMEM. */
int qk_sim_echo_add(qk_sim *sim, int host, uint16_t port);

/* ------------------------------------------------------------------------ */
/* Pluggable flow types and scenarios. */

/** One key = value of a [flow.NAME] section. */
typedef struct qk_sim_kv {
    const char *key;   /**< the key */
    const char *value; /**< its value, as written */
    int line;          /**< line number in the scenario file (error messages) */
} qk_sim_kv;

/** What a flow factory receives (the library's; fields are appended, read those
 * you know). */
typedef struct qk_sim_flow_args {
    const char *name;    /**< NAME of [flow.NAME] */
    const qk_sim_kv *kv; /**< all keys of the section (incl. type/from/to) */
    size_t n_kv;         /**< entries in kv */
    int from_host;       /**< sending end (host id) */
    int to_host;         /**< receiving end (host id) */
    int flow_id;         /**< index of this flow; nodes added now carry it */
    char *err;           /**< factory writes "key: problem; fix" on error */
    size_t err_cap;      /**< bytes err holds */
} qk_sim_flow_args;

/** Per-flow summary row. A flow's summary callback fills the library's (every
 * field preset: zero, or QK_TIME_INFINITE for the times); a program reads it
 * with qk_sim_scenario_flow_summary at its own size. */
typedef struct qk_sim_flow_summary {
    uint64_t sent_bytes;     /**< application bytes sent */
    uint64_t recv_bytes;     /**< application bytes received */
    uint64_t sent_pkts;      /**< packets sent */
    uint64_t recv_pkts;      /**< packets received */
    double goodput_bps;      /**< recv_bytes*8 / active time */
    qk_time completion_ns;   /**< time the flow completed, QK_TIME_INFINITE = n/a */
    qk_time owd_p50_ns;      /**< median one-way delay, QK_TIME_INFINITE = n/a */
    qk_time owd_p99_ns;      /**< 99th percentile one-way delay, likewise */
    char extra[160];         /**< free-form "key=value ..." columns */
    uint64_t rpcs_done;      /**< RPC flows: RPCs completed (else 0) */
    uint64_t rpc_size_bytes; /**< RPC flows: request size (else 0) */
} qk_sim_flow_summary;

/** Callbacks a flow instance provides; read at the size its type was
 * registered with (qk_sim_flow_type_register). */
typedef struct qk_sim_flow_ops {
    /** Fill the flow's summary row (at the end of the run). */
    void (*summary)(void *flow, qk_sim *sim, qk_sim_flow_summary *out);
    /** Application bytes received so far (CSV goodput series). May be NULL. */
    uint64_t (*recv_bytes)(void *flow);
    /** Free the flow (its nodes belong to the simulator). */
    void (*free)(void *flow);
} qk_sim_flow_ops;

/**
 * Factory of a flow type: creates node(s) on args->from_host/to_host, sets
 * *flow and *ops. Returns 0 or a negative error with args->err filled.
 */
typedef int (*qk_sim_flow_factory)(qk_sim *sim, const qk_sim_flow_args *args, void **flow,
                                   const qk_sim_flow_ops **ops);

/** Add a flow type to the built-in ones ("cbr", "quic"), process-wide; the ops
 * its factory returns are read at ops_bytes (the caller's sizeof(qk_sim_flow_ops)).
 * Returns 0, QK_ERR_INVALID_ARG (a name already known, ops_bytes below the first
 * release's size), QK_ERR_LIMIT. */
int qk_sim_flow_type_register_sized(const char *name, qk_sim_flow_factory factory,
                                    size_t ops_bytes);

/** qk_sim_flow_type_register_sized() with the caller's sizeof(qk_sim_flow_ops). */
#define qk_sim_flow_type_register(name, factory)                                                   \
    qk_sim_flow_type_register_sized((name), (factory), sizeof(qk_sim_flow_ops))

/** Scenario loaded from an INI file. */
typedef struct qk_sim_scenario qk_sim_scenario;

/** Options overriding the file. */
typedef struct qk_sim_run_opts {
    const char *out_dir; /**< CSV directory, NULL = none */
    bool has_seed;       /**< use seed instead of the file's */
    uint64_t seed;       /**< the seed, with has_seed */
    qk_time duration_ns; /**< 0 = from the file */
    FILE *progress;      /**< progress lines (long runs), NULL = quiet */
} qk_sim_run_opts;

/**
 * Load a scenario file; opts (may be NULL) is copied, opts_bytes of it (the
 * caller's sizeof(qk_sim_run_opts)). On error returns NULL and writes
 * "FILE:LINE: [section] key: problem; fix" into err.
 */
qk_sim_scenario *qk_sim_scenario_load_sized(const char *path, const qk_sim_run_opts *opts,
                                            size_t opts_bytes, char *err, size_t err_cap);

/** qk_sim_scenario_load_sized() with the caller's sizeof(qk_sim_run_opts). */
#define qk_sim_scenario_load(path, opts, err, err_cap)                                             \
    qk_sim_scenario_load_sized((path), (opts), sizeof(qk_sim_run_opts), (err), (err_cap))

/** The simulator of a loaded scenario (to inspect hosts, links, ...). */
qk_sim *qk_sim_scenario_sim(qk_sim_scenario *sc);

/** Run it: CSV series into opts->out_dir. Returns 0 or QK_ERR_IO (err filled). */
int qk_sim_scenario_run(qk_sim_scenario *sc, char *err, size_t err_cap);

/** Print the per-flow and per-link summary tables. */
void qk_sim_scenario_print(qk_sim_scenario *sc, FILE *f);

/** Number of flows in the scenario. */
size_t qk_sim_scenario_flow_count(const qk_sim_scenario *sc);
/** Flow i's name and summary row (out_bytes: the caller's
 * sizeof(qk_sim_flow_summary)). Returns 0 or QK_ERR_NOT_FOUND. */
int qk_sim_scenario_flow_summary_sized(qk_sim_scenario *sc, size_t i, const char **name,
                                       qk_sim_flow_summary *out, size_t out_bytes);

/** qk_sim_scenario_flow_summary_sized() with the caller's sizeof(qk_sim_flow_summary). */
#define qk_sim_scenario_flow_summary(sc, i, name, out)                                             \
    qk_sim_scenario_flow_summary_sized((sc), (i), (name), (out), sizeof(qk_sim_flow_summary))

/** Free the scenario and its simulator. NULL is a no-op. */
void qk_sim_scenario_del(qk_sim_scenario *sc);

/* ------------------------------------------------------------------------ */
/* Value parsing shared by scenario files and `quack netem`. */

/** "25ms", "1.5s", "300us", "10ns" (bare number = seconds). Returns 0 or QK_ERR_CONFIG. */
int qk_sim_parse_time(const char *s, qk_time *out);
/** "100mbit", "5gbit", "64kbit", "1000" (bit/s). Returns 0 or QK_ERR_CONFIG. */
int qk_sim_parse_rate(const char *s, uint64_t *out);
/** "1500", "64kB", "1MB", "64KiB" (bytes). Returns 0 or QK_ERR_CONFIG. */
int qk_sim_parse_bytes(const char *s, uint64_t *out);
/** `1%`, `0.01`. Returns 0 or QK_ERR_CONFIG (outside [0,1]). */
int qk_sim_parse_prob(const char *s, double *out);

/**
 * Set one link option of cfg (cfg_bytes: the caller's sizeof(qk_sim_link_cfg))
 * by its scenario/netem key (rate, delay, jitter, reorder,
 * reorder_delay, limit, limit_time, limit_pkts, aqm, step_k, red_min, red_max,
 * red_max_p, red_wq, red_ecn, loss, ge_p_gb, ge_p_bg, ge_loss_good,
 * ge_loss_bad, loss_list, duplicate, corrupt, mtu, suspend_start,
 * suspend_period, suspend, suspend_count, rate_schedule, blackhole). Returns 0,
 * QK_ERR_NOT_FOUND (unknown key, or one whose field the caller's struct lacks)
 * or QK_ERR_CONFIG (bad value; *fix gets a static hint).
 */
int qk_sim_link_cfg_set_sized(qk_sim_link_cfg *cfg, size_t cfg_bytes, const char *key,
                              const char *value, const char **fix);

/** qk_sim_link_cfg_set_sized() with the caller's sizeof(qk_sim_link_cfg). */
#define qk_sim_link_cfg_set(cfg, key, value, fix)                                                  \
    qk_sim_link_cfg_set_sized((cfg), sizeof(qk_sim_link_cfg), (key), (value), (fix))

/**
 * The media flows (picoquic's mediatest shapes), shared by the
 * simulator's `media` flow type and `quack media`: audio 32 B every 20 ms at
 * urgency 2, low-definition video 2,048 B at 30 fps with a 32,768 B I-frame
 * every 100th at urgency 4, high-definition video 6,144 B at 60 fps with a
 * 65,536 B I-frame every 100th at urgency 6.
 */
#define QK_MEDIA_FLOWS 3
/** One media flow's shape (qk_media_defs). */
typedef struct qk_media_def {
    const char *name;      /**< "audio", "ld-video", "hd-video" */
    uint8_t urgency;       /**< RFC 9218 urgency */
    qk_time period_ns;     /**< one frame every period */
    uint32_t bytes;        /**< size of an ordinary frame */
    uint32_t iframe_bytes; /**< size of an I-frame */
    uint32_t iframe_every; /**< every this many frames an I-frame (0: none) */
} qk_media_def;

/** The QK_MEDIA_FLOWS definitions, in the order above. Never fails. */
const qk_media_def *qk_media_defs(void);

/** Size of frame number frame_no of flow d (an I-frame every iframe_every). */
uint32_t qk_media_frame_bytes(const qk_media_def *d, uint32_t frame_no);

/** Bytes of the header that starts every media frame on a stream: flow (1),
 * zero (3), frame number (4), send time in ns (8), big-endian. */
#define QK_MEDIA_HDR_BYTES 16
/** The header of a media frame, decoded. */
typedef struct qk_media_hdr {
    uint8_t flow;      /**< index into qk_media_defs() */
    uint32_t frame_no; /**< per flow, from 0 */
    qk_time sent_ns;   /**< when the sender wrote the frame */
} qk_media_hdr;

/** Writes h into out[0 .. QK_MEDIA_HDR_BYTES). Never fails. */
void qk_media_hdr_write(uint8_t *out, const qk_media_hdr *h);

/** Reads the header at in[0 .. QK_MEDIA_HDR_BYTES). Never fails; a reader
 * checks h.flow against the flow it expects. */
qk_media_hdr qk_media_hdr_read(const uint8_t *in);

#ifdef __cplusplus
}
#endif
#endif
