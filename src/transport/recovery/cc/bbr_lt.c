/* SPDX-License-Identifier: MIT */
/* BBR's loss-tolerant mode (cc kind "bbr-lt", QK_CC_BBR_LT): the draft's
 * BBRv3 (bbr.c) with one change of meaning: a loss lowers the model
 * (inflight_longterm, bw_shortterm / inflight_shortterm, the Startup
 * high-loss exit) only when the path's signals say it was congestion.
 * docs/cc.md "Loss that is not congestion" states the rule, its signals,
 * its failure modes and the draft sections it departs from.
 *
 * Signals, per loss sample (a lost packet's RS.lost over its
 * RS.tx_in_flight, draft-ietf-ccwg-bbr §5.5.10.2) or per loss round
 * (§5.5.10.3):
 *  - ECN CE marks: always congestion (§3.7; bbr.c's handling is unchanged);
 *  - the loss rate against the background: the loss rate of quiet rounds
 *    (CRUISE at the model's BDP, or a Startup still growing, with no
 *    standing queue), its mean p_bg and per-packet variance measured from
 *    the rounds themselves (bursty loss has a larger variance than
 *    Bernoulli loss of the same mean). A sample is "excess" when its loss
 *    rate is above p_bg + max(LossThresh, Z sigma(N)) for its N packets:
 *    the loss rate rises with inflight;
 *  - queueing delay: a recent RTT above min_rtt by a quarter of min_rtt
 *    (at least 1 ms) means the bottleneck's queue is up; a loss rate above
 *    p_bg + LossThresh / 2 then counts as congestion. Delay that a probe
 *    showed is not queue (jitter: lt_probe_verdict) is subtracted first.
 * Units: rates as fractions, times in ns, volumes in bytes. */
#include "transport/recovery/cc/cc.h"

#include <math.h>

#define LT_LOSS_THRESH     0.02                /* draft §2.8 BBR.LossThresh */
#define LT_Z               3.0                 /* standard deviations above the background */
#define LT_BG_GAIN         0.0625              /* weight of one quiet round in the background */
#define LT_BG_MIN_PKTS     8.0                 /* a round smaller than this teaches nothing */
#define LT_P_MAX           0.25                /* the most background loss it compensates */
#define LT_QUEUE_DIV       4                   /* queue signal at min_rtt / 4 ... */
#define LT_QUEUE_MIN_NS    QK_NS_PER_MS        /* ... and at least 1 ms */
#define LT_FAIR_PKTS       8                   /* each flow's packets in the standing queue ... */
#define LT_FAIR_RTT_NS     (30 * QK_NS_PER_MS) /* ... the step's gain min_rtt / 30 ms above */
#define LT_FAIR_BUF_DIV    4                   /* ... at most a quarter of the buffer ... */
#define LT_FAIR_MIN_PKTS   2                   /* ... and at least 2 */
#define LT_FAIR_DELAY_DIV  16    /* the fair-share bound is set at min_rtt / 16 of queue */
#define LT_FAIR_DEC_DIV    16    /* ... and shrinks by at most 1/16 a round */
#define LT_FAIR_EMPTY_RTTS 20u   /* off while the queue stood above min_rtt / 4 for 20 min_rtt */
#define LT_LOSSY_P         0.005 /* a background this high: the lossy-path rules below */
#define LT_LOSSY_CRUISE    0.98  /* ... CRUISE paces at 98 % of the model's rate, */
#define LT_LOSSY_UP_PCT    110   /* ... UP at 110 % (the draft's 125 %), */
#define LT_LOSSY_PROBE_DIV 16    /* ... and UP ends at min_rtt / 16 (1 ms) of queue */

/* The background loss rate: the mean of the quiet rounds (0 before any). */
double qk_bbr_lt_background(const qk_cc *cc)
{
    const qk_bbr_lt *lt = &cc->u.bbr.lt;
    if (lt->bg_total_pkts <= 0) return 0;
    double p = lt->bg_lost_pkts / lt->bg_total_pkts;
    return p < LT_P_MAX ? p : LT_P_MAX;
}

/* An RTT sample above min_rtt (0 without samples). */
static qk_time raw_queue_delay(const struct qk_cc_bbr_state *b, qk_time rtt)
{
    if (b->min_rtt_ns == QK_TIME_INFINITE || rtt == 0 || rtt <= b->min_rtt_ns) return 0;
    return rtt - b->min_rtt_ns;
}

/* Queueing delay: an RTT sample above min_rtt and above the delay that a
 * probe showed is not queue (lt_probe_verdict: path jitter, a receiver's
 * or host's delay), 0 without samples. */
static qk_time queue_delay(const struct qk_cc_bbr_state *b, qk_time rtt)
{
    qk_time d = raw_queue_delay(b, rtt);
    return d > b->lt.delay_floor_ns ? d - b->lt.delay_floor_ns : 0;
}

static qk_time queue_threshold(const struct qk_cc_bbr_state *b)
{
    qk_time q = b->min_rtt_ns == QK_TIME_INFINITE ? 0 : b->min_rtt_ns / LT_QUEUE_DIV;
    return q > LT_QUEUE_MIN_NS ? q : LT_QUEUE_MIN_NS;
}

/* The queue now: the recent RTT above min_rtt, less the delay floor. */
static qk_time queue_now(const struct qk_cc_bbr_state *b)
{
    return queue_delay(b, b->lt.rtt_recent_ns);
}

/* In REFILL and UP the base a probe's queue counts from follows the queue
 * down (addition 3, departs from draft-ietf-ccwg-bbr §5.3.3.9
 * IsTimeToGoDown): the part of it that drained was not standing (the other flow's
 * probe, which ended). Kept at REFILL's queue, a probe begun in the other
 * flow's probe queue ran with that much more queue before addition 3
 * could end it: 25 Mbit/s x 100 ms, 1.5 BDP, second flow 3 s late, one
 * flow's REFILL began at 26 ms of queue, its UP held 85-100 ms (a base
 * RTT) for seven rounds and the other flow's standing-queue response cut
 * it to 3.6 Mbit/s (37.0 % over 20-30 s). */
static void probe_base_follow(struct qk_cc_bbr_state *b)
{
    if (b->mode != QK_BBR_PROBE_BW_REFILL && b->mode != QK_BBR_PROBE_BW_UP) return;
    qk_time q = queue_now(b);
    if (q < b->lt.probe_queue_base_ns) b->lt.probe_queue_base_ns = q;
}

bool qk_bbr_lt_queue_up(const qk_cc *cc)
{
    const struct qk_cc_bbr_state *b = &cc->u.bbr;
    return queue_now(b) >= queue_threshold(b);
}

/* Startup's exit on a standing queue (departs from draft-ietf-ccwg-bbr
 * §5.3.1.3, whose loss exit the classifier silences for random loss): for
 * a whole min_rtt not one RTT sample came within the queue signal
 * (min_rtt / 4, at least 1 ms) of min_rtt, so the bottleneck held a
 * standing queue and is saturated; the last round grew the delivery rate
 * less than 25 % (§5.3.1.2 full_bw_count >= 1: a flow starting beside
 * another still gains its share while it grows); and the path dropped or
 * CE-marked a packet this round or the last. Startup's 2.77x pacing then
 * only adds to that queue (a drop-tail buffer drops a burst every round
 * until the three rounds of §5.3.1.2 CheckFullBWReached have passed), so
 * the loss is taken as congestion: Startup ends. A queue that stood
 * before the flow began is in its min_rtt and does not count. */
bool qk_bbr_lt_startup_queued(const qk_cc *cc, qk_time now)
{
    const struct qk_cc_bbr_state *b = &cc->u.bbr;
    const qk_bbr_lt *lt = &b->lt;
    if (!lt->on || b->mode != QK_BBR_STARTUP || b->min_rtt_ns == QK_TIME_INFINITE) return false;
    if (b->full_bw_count == 0) return false; /* still growing (§5.3.1.2) */
    if (!lt->fair_empty_time || now < lt->fair_empty_time + b->min_rtt_ns) return false;
    return lt->prev_round_loss || lt->round_lost_bytes > 0 || lt->round_ce;
}

/* With a rate bound (qk_cc_set_max_rate): does the model deliver at it?
 * max_bw, loss compensated, reaches the bound, so the pacing rate is the
 * bound's and no phase sends faster than any other. */
bool qk_bbr_lt_at_rate_bound(const qk_cc *cc)
{
    const struct qk_cc_bbr_state *b = &cc->u.bbr;
    uint64_t bound = cc->max_rate_bytes_per_s;
    if (!b->lt.on || !bound) return false;
    return (double)b->max_bw / (1 - qk_bbr_lt_background(cc)) >= (double)bound;
}

/* Is lost / total_bytes congestion? total_bytes: the packets the sample
 * covers (lost included). count: a verdict on a loss (not a per-ACK test). */
bool qk_bbr_lt_too_high(qk_cc *cc, uint64_t lost_bytes, uint64_t total_bytes, bool count)
{
    qk_bbr_lt *lt = &cc->u.bbr.lt;
    if (!total_bytes || !lost_bytes) return false;
    double n = (double)total_bytes / (double)cc->max_datagram_bytes;
    double rate = (double)lost_bytes / (double)total_bytes;
    double p = qk_bbr_lt_background(cc);
    double var = lt->bg_var > p * (1 - p) ? lt->bg_var : p * (1 - p);
    double noise = LT_Z * sqrt(var / (n < 1 ? 1 : n));
    bool excess = rate > p + (noise > LT_LOSS_THRESH ? noise : LT_LOSS_THRESH);
    /* At the rate bound a probe sends no more than CRUISE does: a loss rate
     * above the background is then not one that rises with inflight, only
     * the tail of the background's (3 sigma over the thousands of samples
     * of a lossy path's probes: 100 Mbit/s x 50 ms, 5 % loss, --bandwidth
     * 50mbit, one sample in four probes). The queue and CE still count. */
    if (qk_bbr_lt_at_rate_bound(cc)) excess = false;
    bool queued = qk_bbr_lt_queue_up(cc) && rate > p + LT_LOSS_THRESH / 2;
    if (excess || queued) {
        if (count) {
            lt->congestion_verdicts++;
            lt->round_congested = true;
            if (!excess) lt->queue_verdicts++;
        }
        return true;
    }
    if (count && rate > LT_LOSS_THRESH) lt->random_verdicts++;
    return false;
}

void qk_bbr_lt_on_lost(qk_cc *cc, uint64_t bytes)
{
    cc->u.bbr.lt.round_lost_bytes += bytes;
}

void qk_bbr_lt_on_ce(qk_cc *cc)
{
    cc->u.bbr.lt.round_ce = true;
    cc->u.bbr.lt.round_congested = true;
}

/* A quiet round that ended: fold its loss count into the background. */
static void learn_background(qk_cc *cc, double lost, double n)
{
    qk_bbr_lt *lt = &cc->u.bbr.lt;
    double p = lt->bg_total_pkts > 0 ? lt->bg_lost_pkts / lt->bg_total_pkts : lost / n;
    double dev = lost - p * n;
    double var = dev * dev / n;
    if (lt->bg_rounds == 0) {
        lt->bg_lost_pkts = lost;
        lt->bg_total_pkts = n;
        lt->bg_var = var;
    } else {
        lt->bg_lost_pkts = lt->bg_lost_pkts * (1 - LT_BG_GAIN) + lost;
        lt->bg_total_pkts = lt->bg_total_pkts * (1 - LT_BG_GAIN) + n;
        lt->bg_var = lt->bg_var * (1 - LT_BG_GAIN) + var * LT_BG_GAIN;
    }
    if (lt->bg_rounds < UINT32_MAX) lt->bg_rounds++;
}

static bool quiet_mode(const struct qk_cc_bbr_state *b)
{
    if (b->mode == QK_BBR_PROBE_BW_CRUISE) return true;
    return b->mode == QK_BBR_STARTUP && b->full_bw_count == 0; /* still growing */
}

/* The fair-share bound (bbr.c: in CRUISE it bounds cwnd, sets the pacing
 * rate and stands in for the short-term model): a per-flow window moved
 * every CRUISE round (once set, every round of ProbeBW unless the path is
 * lossy: fair_share) by alpha (LT_FAIR_PKTS) less this flow's packets in
 * the bottleneck's queue, times a gain (fair_gain) (TCP Vegas's rule;
 * shrinking by at most 1/16 a round). Its own packets in the queue are its
 * delivery rate over the round times the round's least queueing delay,
 * which every flow through the bottleneck sees alike, so the windows settle
 * where the flows' rates are equal (Vegas's and Copa's fixed point): a flow
 * with more than its share holds more than alpha there and shrinks, one
 * with less grows. Set by a CRUISE round whose every ACK saw min_rtt / 16
 * of queue or none of whose ACKs did (fair_share: since session 23 also
 * the latter, so that a flow that keeps the pipe full at no queue holds
 * alpha queued and yields what another flow adds, and a flow that left
 * Startup at 1 % of the link grows through its own bound: 300 Mbit/s x
 * 150 ms, 0.75 BDP, the second flow 1.2 s late, 32.0 % over 20-30 s
 * before). Dropped above twice the model's BDP plus two of its steps (it
 * no longer binds), and while the queue has not fallen under the queue
 * signal (min_rtt / 4) for
 * LT_FAIR_EMPTY_RTTS min_rtt: a loss-based competitor filling the buffer
 * (CUBIC), against which a delay target only yields. */
static qk_time fair_delay(const struct qk_cc_bbr_state *b)
{
    qk_time d = b->min_rtt_ns == QK_TIME_INFINITE ? 0 : b->min_rtt_ns / LT_FAIR_DELAY_DIV;
    return d > QK_NS_PER_MS ? d : QK_NS_PER_MS;
}

/* The gain on the bound's step: min_rtt / LT_FAIR_RTT_NS above
 * LT_FAIR_RTT_NS, else 1. Two flows trade share through the bound with a
 * time constant of BDP / (2 alpha gain) rounds (at the fixed point the
 * queue holds 2 alpha, and each round the larger flow gives up gain times
 * its surplus over alpha): with gain 1, 125 rounds (15 s) at 200 Mbit/s x
 * 120 ms. The gain moves a flow faster but not the fixed point (each
 * flow's own queued packets = alpha, the same for every flow whatever its
 * RTT), so flows with different RTTs still settle at equal rates; an alpha
 * that grew with min_rtt (session 22) gave the longer-RTT flow more of the
 * link in proportion (100 Mbit/s, 30 / 90 ms: the shorter flow 18.4 %).
 * Nothing a flow reads of its own rate may set alpha or the gain's fixed
 * point: an alpha in proportion to a flow's own BDP keeps any split. */
static double fair_gain(const qk_cc *cc)
{
    const struct qk_cc_bbr_state *b = &cc->u.bbr;
    if (b->min_rtt_ns <= LT_FAIR_RTT_NS) return 1;
    if (qk_bbr_lt_lossy(cc)) return 1; /* (h): the queue it swings through is CUBIC's loss */
    return (double)b->min_rtt_ns / (double)LT_FAIR_RTT_NS;
}

static void fair_share(qk_cc *cc, const qk_rate_sample *rs)
{
    struct qk_cc_bbr_state *b = &cc->u.bbr;
    qk_bbr_lt *lt = &b->lt;
    if (b->min_rtt_ns == QK_TIME_INFINITE) return;
    if (rs->now > lt->fair_empty_time + LT_FAIR_EMPTY_RTTS * b->min_rtt_ns) {
        lt->fair_cap_bytes = 0;
        return;
    }
    qk_time dt = rs->now - lt->round_time_start;
    /* Also moved by the other rounds of ProbeBW (DOWN, REFILL, UP) once
     * set, except on a lossy path. A bound moved by CRUISE rounds alone
     * stood still through this flow's probe while another flow's shrank
     * with the probe's queue, so each probe moved share from the flow in
     * CRUISE to the prober and the split followed whichever probed last
     * (40 Mbit/s x 150 ms, 0.75 BDP, the second flow 0.5 s late: shares
     * over 1 s from 32 to 75 %, 36.9 % over 20-30 s); the probe's own
     * queued packets now count against the prober's bound as well. On a
     * lossy path (qk_bbr_lt_lossy) CRUISE rounds alone: on a buffer of a
     * few packets whose overflow is learnt as background loss, one of two
     * flows then kept 84 % (60 Mbit/s x 10 ms, 0.5 BDP, 1 s late). */
    bool moves =
        lt->round_cruise || (lt->round_probe_bw && lt->fair_cap_bytes && !qk_bbr_lt_lossy(cc));
    if (!moves || !lt->round_time_start || dt < b->min_rtt_ns / 2) return;
    /* A new bound: after a round whose every ACK saw min_rtt / 16 of queue
     * (round_fair_queue), or one that never saw that much (a pipe kept full
     * at no queue, where a small flow's probes are invisible); not after a
     * round whose queue was under that at one ACK and over it at another.
     * Beside CUBIC such rounds follow bbr-lt's probes; a bound set there
     * held bbr-lt at ~7 Mbit/s for 4.6 s of each 14 s CUBIC epoch (100
     * Mbit/s x 50 ms, 2 BDP: 17.9 % of the link, 31.3 without). */
    if (!lt->fair_cap_bytes && !lt->round_fair_queue &&
        queue_delay(b, lt->round_max_rtt_ns) >= fair_delay(b))
        return;
    /* The round's least queueing delay: the standing queue, not the
     * ACK-timing noise above it. */
    qk_time rq = queue_delay(b, lt->round_min_rtt_ns);
    double mds = (double)cc->max_datagram_bytes, alpha = LT_FAIR_PKTS * mds;
    /* A buffer too small for every flow's alpha overflows before
     * the windows settle (two flows at 10 Mbit/s x 10 ms on a 5-packet
     * buffer: the flows' windows moved with the losses, not the queue, and
     * one kept 99 %): at most a quarter of the buffer (the queue's delay
     * at overflow times max_bw), at least 2 packets (Vegas's alpha). */
    if (lt->buf_delay_ns) {
        double buf = (double)lt->buf_delay_ns * (double)b->max_bw / 1e9;
        double a = buf / LT_FAIR_BUF_DIV;
        if (a < LT_FAIR_MIN_PKTS * mds) a = LT_FAIR_MIN_PKTS * mds;
        if (a < alpha) alpha = a;
    }
    double f = (double)lt->fair_cap_bytes;
    /* This flow's bytes in the queue: its delivery rate over the round
     * times the round's least queueing delay. */
    double rate = (double)(rs->total_delivered_bytes - lt->round_dlv_start) / (double)dt;
    double own = rate * (double)rq;
    if (f == 0) f = (double)b->inflight;
    double gain = fair_gain(cc), step = gain * (alpha - own);
    if (step < -f / LT_FAIR_DEC_DIV) step = -f / LT_FAIR_DEC_DIV;
    f += step;
    if (f < 4 * mds) f = 4 * mds; /* BBR.MinPipeCwnd */
    /* Off above twice the model's BDP (it no longer binds), with room for
     * two of its steps: a flow at 1 % of the link, whose BDP is less than
     * one step, lost its bound each round and grew by its probes alone
     * (300 Mbit/s x 150 ms, 0.75 BDP, the second flow 1.2 s late: 2.2
     * Mbit/s for 8 s, 37.1 % over 20-30 s; 49.9 % with the room). */
    double off = 2.0 * (double)b->max_bw * (double)b->min_rtt_ns / 1e9 + 2 * gain * alpha;
    if (f > off) f = 0;
    lt->fair_cap_bytes = (uint64_t)f;
    /* The bound grows past CRUISE's headroom below inflight_longterm (set
     * by an earlier verdict, when this flow's share was smaller): a round
     * with no congestion verdict and less than its share queued lifts
     * inflight_longterm so that the headroom follows. */
    if (f > 0 && step > 0 && b->inflight_longterm != QK_BBR_INF && !lt->round_congested &&
        !lt->round_ce) {
        double need = f * 100.0 / (100 - QK_BBR_HEADROOM_PCT);
        if (need > (double)b->inflight_longterm) b->inflight_longterm = (uint64_t)need;
    }
}

/* UP begins (bbr.c start_probe_bw_up): watch what the probe's extra
 * inflight does to the delivery rate and the RTT. */
void qk_bbr_lt_probe_began(qk_cc *cc)
{
    struct qk_cc_bbr_state *b = &cc->u.bbr;
    qk_bbr_lt *lt = &b->lt;
    lt->probe_eval = lt->cruise_rate && lt->cruise_min_rtt_ns && qk_bbr_lt_lossy(cc);
    lt->probe_base_rate = lt->cruise_rate;
    lt->probe_base_rtt_ns = lt->cruise_min_rtt_ns;
    lt->probe_base_inflight = b->inflight;
    lt->probe_rate = 0;
    lt->probe_inflight = b->inflight;
    lt->probe_rate_rtt_ns = 0;
}

/* Delay that is not queue (docs/cc.md addition 7; departs from
 * draft-ietf-ccwg-bbr, which reads no delay but min_rtt; the queue signal,
 * the fair-share bound and the probe's end read RTT above min_rtt as the
 * bottleneck's queue). A path whose RTT varies without a queue (jitter on
 * a radio link, a loaded host or resolver answering late) shows CRUISE a
 * "queue" that the fair-share bound answers by shrinking the window
 * (Vegas's rule, fair_share below: rate x delay = LT_FAIR_PKTS) without
 * end: the delay does not fall with the window. 100 Mbit/s x 50 ms, 10 ms
 * of jitter each way, 3 % loss: the bound fell to 100 KB (12 Mbit/s)
 * within 5 s. While the path is lossy (qk_bbr_lt_lossy) a probe tells the
 * two apart: its UP raised inflight by G bytes; through a saturated
 * bottleneck (which a real standing queue means) that adds G / max_bw of
 * queue and the flow's rate can only take share from others. Here a round
 * of the probe delivered 5/4 of CRUISE's rate or more while its least RTT
 * rose by less than half of G / max_bw over CRUISE's: the delay CRUISE saw
 * was not queue. Its least delay becomes the floor that every queue
 * reading subtracts (at most min_rtt), the fair-share bound starts again,
 * inflight_longterm set by verdicts on the queue signal alone is lifted,
 * and the next UP is the draft's (qk_bbr_lt_up_gain_pct,
 * qk_bbr_lt_probe_queue_up). After LT_FLOOR_LOW_ROUNDS rounds in a row
 * whose least delay was below the floor it falls to the highest of them
 * (one round's least sample alone is noise). Not on clean paths: there two
 * bbr-lt flows split 26.6/73.4 % with it (a probe that takes share from a
 * flow that yields looks like room). Below LT_ROOM_MIN_PKTS packets a round
 * (CRUISE's rate x min_rtt) one probe is not enough: a 25 % gain is then
 * fewer than 8 packets a round, what ACK timing moves a round's count by
 * and what another flow's fair-share bound gives up in a round or two,
 * so two probes in a row must find room. On buffers of a few packets a
 * background learnt from overflow made two flows "lossy", and the first
 * probe of one flow that read the other's yielding as room gave it a floor
 * of 1.6-2.9 ms that the other lacked: it kept 82-83 % of the link (10,
 * 25 and 60 Mbit/s x 10 ms, 0.5 BDP, the second flow 1 s late). Failure
 * mode: a queue that stays while the probe's inflight goes elsewhere (a
 * bottleneck that grew its rate at that moment) is taken for jitter until
 * the floor falls again. */
#define LT_ROOM_RATE_PCT    125 /* the probe delivered 5/4 of CRUISE's rate ... */
#define LT_ROOM_RTT_DIV     2   /* ... and the RTT rose < 1/2 of what a queue would add */
#define LT_ROOM_MIN_PKTS    32  /* below this a round, two probes in a row */
#define LT_FLOOR_LOW_ROUNDS 8   /* rounds in a row below the floor that lower it */
/* Did the probe just watched show room: 5/4 of CRUISE's rate or more,
 * and less than half the RTT rise its extra inflight would add in a
 * queue? */
static bool probe_found_room(const qk_cc *cc)
{
    const struct qk_cc_bbr_state *b = &cc->u.bbr;
    const qk_bbr_lt *lt = &b->lt;
    if (!b->max_bw || b->min_rtt_ns == QK_TIME_INFINITE) return false;
    if (lt->probe_rate * 100 < lt->probe_base_rate * LT_ROOM_RATE_PCT) return false;
    if (lt->probe_inflight < lt->probe_base_inflight + 4 * cc->max_datagram_bytes) return false;
    double grow = (double)(lt->probe_inflight - lt->probe_base_inflight);
    double expect_ns = grow * 1e9 / (double)b->max_bw;
    double rise_ns = lt->probe_rate_rtt_ns > lt->probe_base_rtt_ns
                         ? (double)(lt->probe_rate_rtt_ns - lt->probe_base_rtt_ns)
                         : 0;
    return rise_ns * LT_ROOM_RTT_DIV < expect_ns;
}

static void lt_probe_verdict(qk_cc *cc)
{
    struct qk_cc_bbr_state *b = &cc->u.bbr;
    qk_bbr_lt *lt = &b->lt;
    lt->probe_eval = false;
    lt->probe_room = false;
    if (!probe_found_room(cc)) {
        lt->room_probes = 0;
        return;
    }
    lt->room_probes++;
    double round_pkts =
        (double)lt->probe_base_rate * (double)b->min_rtt_ns / 1e9 / (double)cc->max_datagram_bytes;
    if (round_pkts < LT_ROOM_MIN_PKTS && lt->room_probes < 2) return;
    qk_time floor = raw_queue_delay(b, lt->probe_base_rtt_ns);
    if (floor > b->min_rtt_ns) floor = b->min_rtt_ns;
    if (floor > lt->delay_floor_ns) lt->delay_floor_ns = floor;
    lt->fair_cap_bytes = 0;
    lt->probe_room = true;
    /* Verdicts that took that delay for queue (qk_bbr_lt_too_high's
     * "queued") set the long-term bound the probe just passed: lift it. */
    if (lt->queue_verdicts) b->inflight_longterm = QK_BBR_INF;
    lt->queue_verdicts = 0;
}

/* At a round's end, before its counters are reset: the delay floor's
 * fall (LT_FLOOR_LOW_ROUNDS), CRUISE's rate and least RTT, and the probe
 * being watched (lt_probe_verdict). */
static void round_delay_and_rate(qk_cc *cc, const qk_rate_sample *rs)
{
    struct qk_cc_bbr_state *b = &cc->u.bbr;
    qk_bbr_lt *lt = &b->lt;
    if (lt->round_min_rtt_ns && lt->round_time_start && rs->now > lt->round_time_start) {
        qk_time dt = rs->now - lt->round_time_start;
        uint64_t rate = (uint64_t)((double)(rs->total_delivered_bytes - lt->round_dlv_start) * 1e9 /
                                   (double)dt);
        qk_time rq = raw_queue_delay(b, lt->round_min_rtt_ns);
        if (rq >= lt->delay_floor_ns) {
            lt->floor_low_rounds = 0;
            lt->floor_low_max_ns = 0;
        } else { /* the jitter fell: LT_FLOOR_LOW_ROUNDS rounds in a row below the floor */
            if (rq > lt->floor_low_max_ns) lt->floor_low_max_ns = rq;
            if (++lt->floor_low_rounds >= LT_FLOOR_LOW_ROUNDS) {
                lt->delay_floor_ns = lt->floor_low_max_ns;
                lt->floor_low_rounds = 0;
                lt->floor_low_max_ns = 0;
            }
        }
        if (lt->round_cruise) {
            lt->cruise_rate = rate;
            lt->cruise_min_rtt_ns = lt->cruise_min_rtt_ns
                                        ? (3 * lt->cruise_min_rtt_ns + lt->round_min_rtt_ns) / 4
                                        : lt->round_min_rtt_ns;
        }
        if (lt->probe_eval) {
            if (rate > lt->probe_rate) {
                lt->probe_rate = rate;
                lt->probe_rate_rtt_ns = lt->round_min_rtt_ns;
            }
            if (b->mode != QK_BBR_PROBE_BW_UP) lt_probe_verdict(cc);
        }
    }
}

/* Per ACK, before bbr.c's model update (b->round_start is this ACK's, set
 * by update_max_bw later: the round boundary is read here from rs). */
void qk_bbr_lt_on_rate_sample(qk_cc *cc, const qk_rate_sample *rs)
{
    struct qk_cc_bbr_state *b = &cc->u.bbr;
    qk_bbr_lt *lt = &b->lt;
    if (rs->has_rtt && (!lt->round_min_rtt_ns || rs->rtt_ns < lt->round_min_rtt_ns))
        lt->round_min_rtt_ns = rs->rtt_ns;
    if (rs->has_rtt && rs->rtt_ns > lt->round_max_rtt_ns) lt->round_max_rtt_ns = rs->rtt_ns;
    if (rs->has_rtt)
        lt->rtt_recent_ns =
            lt->rtt_recent_ns ? (3 * lt->rtt_recent_ns + rs->rtt_ns) / 4 : rs->rtt_ns;
    bool round_end = rs->prior_delivered_bytes >= b->next_round_delivered;
    if (qk_bbr_lt_queue_up(cc)) lt->round_queue = true;
    if (lt->probe_eval && rs->bytes_in_flight > lt->probe_inflight)
        lt->probe_inflight = rs->bytes_in_flight;
    probe_base_follow(b);
    if (queue_now(b) < fair_delay(b)) lt->round_fair_queue = false;
    if (rs->has_rtt && queue_delay(b, rs->rtt_ns) < queue_threshold(b))
        lt->fair_empty_time = rs->now;
    if (!round_end) {
        if (!quiet_mode(b)) lt->round_quiet = false;
        if (b->mode != QK_BBR_PROBE_BW_CRUISE) lt->round_cruise = false;
        if (!qk_bbr_in_probe_bw(b)) lt->round_probe_bw = false;
        return;
    }
    fair_share(cc, rs);
    round_delay_and_rate(cc, rs);
    double mds = (double)cc->max_datagram_bytes;
    double dlv = (double)(rs->total_delivered_bytes - lt->round_dlv_start) / mds;
    double lost = (double)lt->round_lost_bytes / mds;
    /* A round whose every ACK saw the queue up by min_rtt / 16 (1 ms)
     * (round_fair_queue) was delivered by a saturated bottleneck: pacing
     * above max_bw (qk_bbr_lt_pacing_rate's loss compensation) then only
     * overflows the queue. Without this a learnt p confirms itself:
     * through a full bottleneck, sending bw / (1 - p) loses p of it, and
     * the flow that learnt the higher p keeps the link (10 Mbit/s x 10 ms,
     * 5-packet buffer, second flow 3 s late: 0.1 % of it for the first).
     * Learning is not gated on it: per-packet jitter raises the smoothed
     * RTT of every ACK of a lossy path's rounds, and p is what lets a
     * probe there tell jitter from queue (lt_probe_verdict). */
    lt->queue_stood = lt->round_fair_queue && lt->round_min_rtt_ns;
    /* A round that lost more than LT_P_MAX of its packets is not the
     * background (which is capped there): it is overflow, such as the
     * first Startup round of a flow that starts into a full buffer (that
     * round alone set p to 0.25, and the flow then took 99 % of the link
     * from the flow already there: 10 Mbit/s x 10 ms, 5-packet buffer). */
    if (lt->round_quiet && !lt->round_congested && !lt->round_ce && !lt->round_queue &&
        dlv + lost >= LT_BG_MIN_PKTS && lost <= LT_P_MAX * (dlv + lost))
        learn_background(cc, lost, dlv + lost);
    /* The buffer's size in delay: the largest RTT above min_rtt of a round
     * that lost packets with the queue signal up, kept as a maximum that
     * decays by 1/16 at each such round (fair_share's alpha). */
    if (lt->round_lost_bytes && lt->round_queue) {
        qk_time qd = raw_queue_delay(b, lt->round_max_rtt_ns);
        qk_time kept = lt->buf_delay_ns - lt->buf_delay_ns / 16;
        lt->buf_delay_ns = kept > qd ? kept : qd;
    }
    lt->prev_round_loss = lt->round_lost_bytes > 0 || lt->round_ce;
    lt->round_lost_bytes = 0;
    lt->round_dlv_start = rs->total_delivered_bytes;
    lt->round_time_start = rs->now;
    lt->round_fair_queue = true;
    lt->round_max_rtt_ns = 0;
    lt->round_min_rtt_ns = 0;
    lt->round_cruise = b->mode == QK_BBR_PROBE_BW_CRUISE;
    lt->round_probe_bw = qk_bbr_in_probe_bw(b);
    lt->round_quiet = quiet_mode(b);
    lt->round_congested = false;
    lt->round_ce = false;
    lt->round_queue = false;
}

/* Standing queue: over a window of at least one min_rtt (and 4 samples)
 * not one RTT sample came within one min_rtt of min_rtt, i.e. the
 * bottleneck held more than a base RTT of queue the whole window. Returns
 * the rate at which the window's ACKs delivered data (the saturated
 * bottleneck's rate for this flow; RS.delivery_rate samples would reach
 * back an RTT, to before the queue stood) when that happened, else 0.
 * The window lasts the recent RTT, at most 2 min_rtt: with a queue the
 * RTT is longer than min_rtt, and ACKs over one min_rtt sample part of a
 * round, such as the gap behind a burst of another flow's probe (100
 * Mbit/s x 100 ms, 2 BDP, second flow 1.5 s late: 5.1 Mbit/s in a window
 * whose round delivered 36.6, and the cut flow kept 36.0 % over 20-30 s);
 * at most 2 min_rtt so that a rate drop's queue is still answered soon. */
#define LT_WIN_MAX_RTTS 2
uint64_t qk_bbr_lt_standing_queue(qk_cc *cc, const qk_rate_sample *rs)
{
    struct qk_cc_bbr_state *b = &cc->u.bbr;
    qk_bbr_lt *lt = &b->lt;
    if (b->min_rtt_ns == QK_TIME_INFINITE) return 0;
    if (!lt->win_start) {
        lt->win_start = rs->now;
        lt->win_dlv_start = rs->total_delivered_bytes;
        lt->win_min_rtt_ns = QK_TIME_INFINITE;
        lt->win_samples = 0;
        return 0;
    }
    if (rs->has_rtt) {
        if (rs->rtt_ns < lt->win_min_rtt_ns) lt->win_min_rtt_ns = rs->rtt_ns;
        lt->win_samples++;
    }
    qk_time dt = rs->now - lt->win_start;
    qk_time span = lt->rtt_recent_ns > b->min_rtt_ns ? lt->rtt_recent_ns : b->min_rtt_ns;
    if (span > LT_WIN_MAX_RTTS * b->min_rtt_ns) span = LT_WIN_MAX_RTTS * b->min_rtt_ns;
    if (dt < span || lt->win_samples < 4) return 0;
    bool standing = lt->win_min_rtt_ns > 2 * b->min_rtt_ns;
    uint64_t dlv = rs->total_delivered_bytes - lt->win_dlv_start;
    lt->win_start = 0;
    return standing ? (uint64_t)((double)dlv * 1e9 / (double)dt) : 0;
}

/* The lossy-path rules (departing from draft-ietf-ccwg-bbr §5.3.3's
 * ProbeBW gains): with a background loss rate of LT_LOSSY_P or more, a
 * flow beside this one on the same randomly lossy path is limited by that
 * loss (a loss-based flow's window goes as 1 / sqrt(p) whatever room is
 * left), so its rate goes as 1 / RTT and every millisecond of queue this
 * flow keeps takes from it. The queue came from the probes (UP at 1.25 x
 * for two or three rounds until the queue signal, min_rtt / 4: 10-19 ms
 * of queue at 100 Mbit/s x 50 ms, drained in DOWN) and from CRUISE paced
 * above the link (the fair-share bound's pacing floor of 5/4 of its
 * window over min_rtt, bbr.c lt_fair_cruise). While lossy: CRUISE paces at
 * LT_LOSSY_CRUISE of the model's rate without that floor, UP at
 * LT_LOSSY_UP_PCT %, and a probe that began with no queue ends once the
 * queue is min_rtt / 16 (at least 1 ms) up. At the rate bound no phase
 * sends faster than another and the rules are off. */
bool qk_bbr_lt_lossy(const qk_cc *cc)
{
    return cc->u.bbr.lt.on && !qk_bbr_lt_at_rate_bound(cc) &&
           qk_bbr_lt_background(cc) >= LT_LOSSY_P;
}

/* UP's pacing gain: LT_LOSSY_UP_PCT on a lossy path, unless the last probe
 * found room (lt_probe_verdict): the flow is then well below the path's
 * rate and a 1.10x probe would take a third more per probe, every 2-3 s. */
uint32_t qk_bbr_lt_up_gain_pct(const qk_cc *cc, uint32_t draft_pct)
{
    return qk_bbr_lt_lossy(cc) && !cc->u.bbr.lt.probe_room ? LT_LOSSY_UP_PCT : draft_pct;
}

/* The queue that ends a probe: min_rtt / 4 (the queue signal), or on a
 * lossy path min_rtt / 16 (at least 1 ms), above the queue its REFILL
 * began with when the queue signal was up then (another flow's probe, a
 * loss-based competitor's standing queue), or above the least queue since
 * then if that is lower (probe_base_follow). */
bool qk_bbr_lt_probe_queue_up(const qk_cc *cc)
{
    const struct qk_cc_bbr_state *b = &cc->u.bbr;
    qk_time base = b->lt.probe_queue_base_ns, q = queue_now(b);
    if (!qk_bbr_lt_lossy(cc)) return q >= base + queue_threshold(b);
    if (b->lt.probe_room) return false; /* the last probe found room: the draft's end */
    qk_time t = b->min_rtt_ns == QK_TIME_INFINITE ? 0 : b->min_rtt_ns / LT_LOSSY_PROBE_DIV;
    return q >= base + (t > LT_QUEUE_MIN_NS ? t : LT_QUEUE_MIN_NS);
}

/* REFILL begins (bbr.c start_probe_bw_refill): the queue the probe's end
 * counts from, if the queue signal is up (qk_bbr_lt_probe_queue_up). */
void qk_bbr_lt_refill_began(qk_cc *cc)
{
    struct qk_cc_bbr_state *b = &cc->u.bbr;
    qk_time q = queue_now(b);
    b->lt.probe_queue_base_ns = q >= queue_threshold(b) ? q : 0;
}

uint64_t qk_bbr_lt_pacing_rate(const qk_cc *cc, uint64_t rate_bytes_per_s)
{
    const struct qk_cc_bbr_state *b = &cc->u.bbr;
    if (b->mode == QK_BBR_PROBE_BW_CRUISE && qk_bbr_lt_lossy(cc))
        rate_bytes_per_s = (uint64_t)((double)rate_bytes_per_s * LT_LOSSY_CRUISE);
    if (b->lt.on && b->mode != QK_BBR_PROBE_RTT && !b->lt.queue_stood) {
        /* What the path loses at random never reaches the bottleneck (or
         * left it already): sending bw / (1 - p_bg) delivers bw. Not while
         * the queue stood through the last round (queue_stood). */
        double p = qk_bbr_lt_background(cc);
        rate_bytes_per_s = (uint64_t)((double)rate_bytes_per_s / (1 - p));
    }
    if (cc->max_rate_bytes_per_s && rate_bytes_per_s > cc->max_rate_bytes_per_s)
        rate_bytes_per_s = cc->max_rate_bytes_per_s;
    return rate_bytes_per_s;
}
