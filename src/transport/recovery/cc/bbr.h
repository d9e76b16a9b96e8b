/* SPDX-License-Identifier: MIT */
/* BBR (BBRv3) state, draft-ietf-ccwg-bbr (revision -06 and the editor's
 * copy of 2026-08, commit 4ce5e87). Included by cc.h for the union in
 * qk_cc; the algorithm is in bbr.c. Rates in bytes per second, volumes in
 * bytes, times in ns. Gains in percent. */
#ifndef QK_TRANSPORT_CC_BBR_H
#define QK_TRANSPORT_CC_BBR_H

#include <quack/common.h>
#include <stdbool.h>

/** A windowed max filter keeping the best three samples (Kathleen
 * Nichols' algorithm); time is any monotonic counter (rounds here). */
typedef struct qk_winmax {
    struct {
        uint64_t t;
        uint64_t v;
    } s[3];
} qk_winmax;

/** Reset the filter to one sample. Never fails. */
void qk_winmax_reset(qk_winmax *m, uint64_t t, uint64_t v);
/** Add sample v at time t, window win; returns the windowed max. Never fails. */
uint64_t qk_winmax_update(qk_winmax *m, uint64_t win, uint64_t t, uint64_t v);
/** Current maximum. */
static inline uint64_t qk_winmax_get(const qk_winmax *m)
{
    return m->s[0].v;
}

typedef enum qk_bbr_mode {
    QK_BBR_STARTUP = 0,
    QK_BBR_DRAIN,
    QK_BBR_PROBE_BW_DOWN,
    QK_BBR_PROBE_BW_CRUISE,
    QK_BBR_PROBE_BW_REFILL,
    QK_BBR_PROBE_BW_UP,
    QK_BBR_PROBE_RTT,
    QK_BBR_NONE, /* undo_state: nothing to undo */
} qk_bbr_mode;

typedef enum qk_bbr_ack_phase {
    QK_BBR_ACKS_INIT = 0,
    QK_BBR_ACKS_REFILLING,
    QK_BBR_ACKS_PROBE_STARTING,
    QK_BBR_ACKS_PROBE_FEEDBACK,
    QK_BBR_ACKS_PROBE_STOPPING,
} qk_bbr_ack_phase;

#define QK_BBR_INF          UINT64_MAX
#define QK_BBR_HEADROOM_PCT 15 /* §2.8 BBR.Headroom (bbr.c; bbr_lt.c's lift) */

/** The loss-tolerant mode's state (bbr_lt.c, cc kind "bbr-lt"): what it
 * knows of the path's background (non-congestive) loss and of this round's
 * losses. All zero with lt.on false: the draft's BBR. Rates as fractions,
 * volumes in bytes, variances per packet. */
typedef struct qk_bbr_lt {
    bool on;
    bool rate_start; /* started at the rate bound: open cwnd once min_rtt is known */
    /* this round (draft §5.5.1 rounds) */
    uint64_t round_lost_bytes;   /* lost packets reported in it */
    uint64_t round_dlv_start;    /* C.delivered when it began */
    bool round_quiet;            /* every ACK of it came in CRUISE or a growing Startup */
    bool round_congested;        /* a loss of it was classified congestion */
    bool round_ce;               /* a CE mark arrived in it */
    bool round_queue;            /* the queue signal was up at one of its ACKs */
    bool round_fair_queue;       /* the queue was up by min_rtt / 16 (1 ms) at every ACK */
    bool round_cruise;           /* every ACK of it came in ProbeBW CRUISE */
    bool round_probe_bw;         /* every ACK of it came in ProbeBW (any phase) */
    qk_time round_max_rtt_ns;    /* its largest RTT sample */
    qk_time buf_delay_ns;        /* the queue's delay at overflow (0: none seen) */
    bool queue_stood;            /* round_fair_queue of the last round */
    qk_time round_time_start;    /* when it began */
    qk_time round_min_rtt_ns;    /* its least RTT sample (0: none yet) */
    bool prev_round_loss;        /* a loss or a CE mark was reported in the last round */
    uint64_t fair_cap_bytes;     /* the fair-share bound on CRUISE's cwnd (0: none) */
    qk_time fair_empty_time;     /* the last RTT sample less than min_rtt / 4 above min_rtt */
    qk_time probe_queue_base_ns; /* the queue when this probe's REFILL began, if the queue
                                  * signal was up then (0 otherwise) */
    qk_time rtt_recent_ns;       /* EWMA (1/4) of RTT samples: the queue now */
    /* delay that is not queue (bbr_lt.c lt_probe_verdict) */
    qk_time delay_floor_ns;       /* RTT above min_rtt that more inflight did not raise */
    uint64_t cruise_rate;         /* bytes/s delivered over the last all-CRUISE round */
    qk_time cruise_min_rtt_ns;    /* EWMA (1/4) of all-CRUISE rounds' least RTT samples */
    bool probe_eval;              /* a probe (UP) is being watched */
    uint64_t probe_base_rate;     /* cruise_rate when UP began */
    qk_time probe_base_rtt_ns;    /* cruise_min_rtt_ns when UP began */
    uint64_t probe_base_inflight; /* bytes in flight when UP began */
    uint64_t probe_rate;          /* most bytes/s a round of the probe delivered */
    uint64_t probe_inflight;      /* most bytes in flight during the probe */
    qk_time probe_rate_rtt_ns;    /* least RTT of the round that delivered probe_rate */
    uint32_t floor_low_rounds;    /* rounds in a row whose least delay was below the floor */
    qk_time floor_low_max_ns;     /* ... the highest of their least delays */
    bool probe_room;              /* the last probe found room (lt_probe_verdict) */
    uint32_t room_probes;         /* probes in a row that found room */
    uint32_t queue_verdicts;      /* congestion verdicts on the queue signal alone since */
    /* background loss: decayed sums over quiet rounds */
    double bg_lost_pkts, bg_total_pkts; /* p_bg = lost / total */
    double bg_var;                      /* per-packet variance of the loss count */
    uint32_t bg_rounds;                 /* quiet rounds seen (saturates) */
    /* standing queue: RTT samples over windows of one min_rtt */
    qk_time win_start;      /* the window began (0: none yet) */
    qk_time win_min_rtt_ns; /* its least RTT sample */
    uint64_t win_dlv_start; /* C.delivered when it began */
    uint32_t win_samples;   /* RTT samples in it */
    bool queue_cut;         /* the standing-queue response ran this ProbeBW cycle */
    qk_time queue_cut_time; /* when it last ran (0: never) */
    /* counters (benchmarks, tests) */
    uint64_t congestion_verdicts; /* loss samples or rounds classified congestion */
    uint64_t random_verdicts;     /* ... above the draft's threshold, classified not */
} qk_bbr_lt;

struct qk_cc_bbr_state {
    uint8_t mode; /* qk_bbr_mode */
    uint8_t ack_phase;
    uint8_t undo_mode;
    uint32_t pacing_gain_pct;
    uint32_t cwnd_gain_pct;
    /* model */
    uint64_t max_bw_slot[2]; /* BBR.max_bw_filter: previous and current cycle */
    uint64_t max_bw;         /* BBR.max_bw */
    uint64_t bw_shortterm;   /* BBR.bw_shortterm (QK_BBR_INF = unset) */
    uint64_t bw;             /* BBR.bw = min(max_bw, bw_shortterm) */
    uint64_t bw_latest, inflight_latest;
    uint64_t inflight_longterm, inflight_shortterm;
    uint64_t max_inflight;
    qk_time min_rtt_ns; /* QK_TIME_INFINITE = none */
    qk_time min_rtt_stamp;
    qk_time probe_rtt_min_delay_ns;
    qk_time probe_rtt_min_stamp;
    bool probe_rtt_expired;
    qk_time probe_rtt_done_stamp;
    bool probe_rtt_round_done;
    uint64_t prior_cwnd;
    bool idle_restart;
    /* rounds */
    uint64_t next_round_delivered;
    uint64_t round_count;
    bool round_start;
    uint64_t rounds_since_probe_up;
    uint64_t loss_round_delivered;
    bool loss_round_start;
    bool is_loss_in_round;
    uint64_t loss_events_in_round; /* discontiguous lost ranges (Startup high loss) */
    uint64_t last_lost_pn;
    bool last_lost_valid;
    uint64_t recovery_round; /* round_count when recovery started */
    /* Loss-rate gate on the short-term loss response (bbr.c, an extension). */
    bool loss_gate;                      /* on by default */
    bool round_ce;                       /* a CE mark in this loss round */
    uint64_t round_lost_bytes;           /* lost after the round's first loss (not it) */
    uint64_t round_loss_first_delivered; /* C.delivered at the round's first loss */
    /* Startup */
    bool startup_loss_once;    /* extension (bbr.c exit_startup), on by default */
    bool startup_loss_plateau; /* extension (bbr.c check_startup_high_loss), on by default */
    qk_time startup_exit_ns;   /* when Startup last ended (0: not yet) */
    bool has_seen_rtt;         /* InitPacingRate redone with the first RTT (bbr.c) */
    bool full_bw_reached, full_bw_now;
    uint64_t full_bw;
    uint32_t full_bw_count;
    uint64_t drain_start_round;
    /* ProbeBW */
    bool is_bw_probe_sample;
    uint64_t bw_probe_up_acked, probe_up_acked_per_inc;
    uint32_t bw_probe_up_rounds;
    qk_time bw_probe_wait_ns;
    qk_time cycle_stamp;
    bool prev_probe_too_high, prev_probe_precautionary;
    /* aggregation */
    qk_time extra_acked_interval_start;
    uint64_t extra_acked_delivered;
    qk_winmax extra_acked_filter;
    uint64_t extra_acked;
    /* undo */
    uint64_t undo_bw_shortterm, undo_inflight_shortterm, undo_inflight_longterm;
    qk_time undo_recovery_start_time;
    /* view of the connection, refreshed on each callback */
    uint64_t inflight;
    uint64_t delivered;
    bool cwnd_limited;
    qk_time pc_time;      /* persistent congestion declared at (valid if pc_valid) */
    bool pc_valid;        /* no packet sent after pc_time acked yet */
    uint64_t stale_acked; /* bytes acked in this ACK that were sent before pc_time */
    uint64_t rng;         /* xorshift state for PickProbeWait (seeded from the init time) */
    qk_time rtt_round_min_ns, rtt_prev_round_min_ns; /* least RTT sample of this / the last round */
    qk_bbr_lt lt; /* loss-tolerant mode (bbr_lt.c); off = the draft */
};

/* In ProbeBW (DOWN, CRUISE, REFILL or UP): draft §5.3.3. */
static inline bool qk_bbr_in_probe_bw(const struct qk_cc_bbr_state *b)
{
    return b->mode >= QK_BBR_PROBE_BW_DOWN && b->mode <= QK_BBR_PROBE_BW_UP;
}

#endif
