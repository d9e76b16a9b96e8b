/* SPDX-License-Identifier: MIT */
/* The ACK-frequency sender policy (draft-ietf-quic-ack-frequency-12): what to ask the peer
 * (ACK_FREQUENCY) and when to send IMMEDIATE_ACK. */
#include "transport/recovery/ackfreq.h"

#include <strings.h>

#include <string.h>

void qk_ackfreq_init(qk_ackfreq *a, const qk_ackfreq_config *cfg)
{
    memset(a, 0, sizeof *a);
    a->cfg = *cfg;
    if (!a->cfg.max_threshold) a->cfg.max_threshold = QK_ACKFREQ_DEFAULT_MAX_THRESHOLD;
}

void qk_ackfreq_set_peer(qk_ackfreq *a, bool supports, qk_time min_ack_delay_ns)
{
    a->peer_supports = supports;
    a->peer_min_delay_ns = min_ack_delay_ns;
}

/* A standing queue: srtt more than 1/8 above the path's min RTT (unknown:
 * none). */
static bool standing_queue(const qk_ackfreq *a, qk_time srtt_ns)
{
    return a->min_rtt_ns && srtt_ns * 8 > a->min_rtt_ns * 9;
}

static bool changed(uint64_t old, uint64_t now)
{
    /* A relevant change is at least 20% either way. */
    uint64_t d = old > now ? old - now : now - old;
    return d * 5 >= old || (old == 0) != (now == 0);
}

/* AUTO / AUTO_THRESHOLD: the request derived from cwnd and the RTT. */
static qk_ackfreq_req auto_request(qk_ackfreq *a, uint64_t cwnd_bytes, uint64_t mds_bytes,
                                   qk_time srtt_ns, bool slow_start, uint64_t packet_threshold)
{
    qk_ackfreq_req w;
    /* §8.1: threshold at most the packets per cwnd; delay at most the RTT.
     * T is ~8 per cwnd in slow start (the RFC 9000 cadence while the
     * window is small), ~4 per cwnd after (Chromium's ACK decimation).
     * AUTO places the ACK points itself while the path holds no
     * standing queue: IMMEDIATE_ACK on the last packet of what it can
     * send back to back, at most once per T <= 3/4 of the cap data
     * packets (qk_ackfreq_want_immediate), so the peer acknowledges a
     * whole burst as its last packet arrives instead of holding part of
     * it for the next burst or the delay timer; the peer's threshold is
     * a backstop at min(2T, cap) so its own count rarely splits a burst
     * (exp. 2 in docs/experiments/ack-frequency.md: 0.995 of the RFC
     * default's goodput at 0.098 ACKs per packet, vs 0.965 at 0.122
     * with the threshold alone). The cap is 16 by default: beyond the
     * pacer's burst the freed packets wait for pacing tokens while the
     * receiver holds the next ones (exp. 4: cap 64 -7%, 32 -2%, 16
     * -0.9% before the burst-end rule).
     * AUTO_THRESHOLD (and AUTO with a standing queue): the peer's
     * threshold is T capped at 16, plus the window-full IMMEDIATE_ACK. */
    uint64_t cwnd_pkts = cwnd_bytes / mds_bytes;
    uint64_t th = slow_start ? cwnd_pkts / 8 : cwnd_pkts / 4;
    /* Burst-end ACK points only while the path holds no standing queue
     * (srtt within 1/8 of min_rtt): then the peer's hold is the only
     * delay a window-limited sender pays for (exp. 2). With a queue the
     * bottleneck clocks the flow, the hold costs nothing while the queue
     * lasts, and larger bursts only feed drop-tail losses: keep the
     * threshold and the window-full rule. */
    a->burst_mode = a->cfg.mode == QK_ACKFREQ_AUTO && !standing_queue(a, srtt_ns);
    /* Not for an ECN-scalable sender (DCTCP, Prague): its bottleneck marks
     * a queue of K packets (RFC 8257 §3.1), under 1 ms in an L4S queue (RFC
     * 9332 Appendix A: its ramp starts at 800 us), so a 2T-packet burst is marked whatever the
     * flow's window; RFC 9331 §4.3 / RFC 9330 expect L4S senders to pace. The pacer keeps its small
     * burst and the peer's threshold sets the ACK points. */
    if (a->cfg.paced) a->burst_mode = false;
    uint64_t wire;
    if (a->burst_mode && a->refill == QK_ACKFREQ_REFILL_ON) {
        /* Refill after a reduction that drained the queue the flow had
         * built: the window is about one pipe and no queue keeps the
         * bottleneck busy while the peer holds packets. A paced flow
         * sends no burst ends, so the peer's backstop threshold decides,
         * and the window runs dry once per RTT for as long as the peer
         * holds up to 16 packets (exp. 4: 116 us each at 100 Mbit/s,
         * srtt 42 vs 40.1 ms, 86-92 vs 93-96 Mbit/s for 1.5 s after
         * slow start). RFC 9000's cadence until the window's growth has
         * built a queue longer than the hold (qk_ackfreq_on_congestion). */
        th = wire = 1;
    } else if (a->burst_mode) {
        uint64_t th_max = a->cfg.max_threshold * 3 / 4;
        if (th > th_max) th = th_max;
        if (th < 1) th = 1;
        wire = th > 1 ? 2 * th : 1;
        if (wire > a->cfg.max_threshold) wire = a->cfg.max_threshold;
        if (wire < th) wire = th;
    } else {
        if (th > a->cfg.max_threshold) th = a->cfg.max_threshold;
        if (th < 1) th = 1;
        wire = th;
    }
    a->mark_every = th;
    qk_time delay = srtt_ns / 4;
    if (delay > 25 * QK_NS_PER_MS) delay = 25 * QK_NS_PER_MS;
    w.threshold = wire;
    w.max_delay_ns = delay;
    /* §9: reordering threshold = the sender's packet threshold. */
    w.reordering_threshold = packet_threshold;
    return w;
}

void qk_ackfreq_update(qk_ackfreq *a, uint64_t cwnd_bytes, uint64_t mds_bytes, qk_time srtt_ns,
                       bool slow_start, uint64_t packet_threshold, qk_time now)
{
    if (!a->peer_supports || a->cfg.mode == QK_ACKFREQ_OFF || !mds_bytes) return;
    qk_ackfreq_req w;
    if (a->cfg.mode == QK_ACKFREQ_FIXED) {
        w.threshold = a->cfg.threshold;
        w.max_delay_ns = a->cfg.max_delay_ns;
        w.reordering_threshold =
            a->cfg.reordering_threshold ? a->cfg.reordering_threshold : packet_threshold;
    } else {
        w = auto_request(a, cwnd_bytes, mds_bytes, srtt_ns, slow_start, packet_threshold);
    }
    /* §4: never below the peer's min_ack_delay. */
    if (w.max_delay_ns < a->peer_min_delay_ns) w.max_delay_ns = a->peer_min_delay_ns;
    w.seq = 0;
    a->want = w;
    a->have_want = true;
    if (!a->have_sent) {
        a->pending = true;
        return;
    }
    bool rel = w.threshold != a->sent.threshold && changed(a->sent.threshold, w.threshold);
    rel = rel || changed(a->sent.max_delay_ns, w.max_delay_ns);
    rel = rel || w.reordering_threshold != a->sent.reordering_threshold;
    /* At most once per RTT. */
    if (rel && now - a->last_sent_ns >= srtt_ns) a->pending = true;
}

bool qk_ackfreq_poll(qk_ackfreq *a, qk_ackfreq_req *out)
{
    if (!a->pending || !a->have_want || !a->peer_supports) return false;
    *out = a->want;
    out->seq = a->next_seq;
    return true;
}

void qk_ackfreq_on_sent(qk_ackfreq *a, const qk_ackfreq_req *req, qk_time now)
{
    a->next_seq = req->seq + 1;
    a->sent = *req;
    a->have_sent = true;
    a->pending = false;
    a->last_sent_ns = now;
    /* The "no ACK for an RTT" clock starts with the first request. */
    if (a->frames_sent == 0 && a->last_ack_rx_ns < now) a->last_ack_rx_ns = now;
    a->frames_sent++;
    if (req->max_delay_ns > a->max_inflight_delay_ns) a->max_inflight_delay_ns = req->max_delay_ns;
}

void qk_ackfreq_on_lost(qk_ackfreq *a, uint64_t seq)
{
    /* Re-sent with a new sequence number, unless a newer request superseded it. */
    if (a->have_sent && seq == a->sent.seq) a->pending = true;
}

void qk_ackfreq_on_acked(qk_ackfreq *a, uint64_t seq)
{
    if (!a->have_sent || seq != a->sent.seq) return;
    /* The newest request is in effect: older, larger delays no longer apply. */
    a->acked_delay_ns = a->sent.max_delay_ns;
    a->max_inflight_delay_ns = a->sent.max_delay_ns;
}

qk_time qk_ackfreq_pto_delay(const qk_ackfreq *a, qk_time tp_max_ack_delay_ns)
{
    if (!a->have_sent) return tp_max_ack_delay_ns;
    qk_time d = a->max_inflight_delay_ns;
    return d > tp_max_ack_delay_ns ? d : tp_max_ack_delay_ns;
}

bool qk_ackfreq_immediate_allowed(const qk_ackfreq *a)
{
    /* ack-frequency-12 §3: only to a peer that advertised min_ack_delay. */
    return a->peer_supports;
}

void qk_ackfreq_request_immediate(qk_ackfreq *a)
{
    if (a->peer_supports) a->imm_requested = true;
}

static bool rate_ok(const qk_ackfreq *a, qk_time srtt_ns, qk_time now)
{
    return !a->has_imm || now - a->last_imm_ns >= srtt_ns;
}

uint32_t qk_ackfreq_want_immediate(const qk_ackfreq *a, const qk_ackfreq_pkt *pk)
{
    if (!a->peer_supports) return 0;
    uint32_t why = 0;
    /* ack-frequency-12 §5: a probe wants an answer now, not after the peer's
     * (possibly raised) delay; IMMEDIATE_ACK replaces the PING. */
    if (pk->probe) why |= QK_IMM_PROBE;
    /* §8.3 PMTU probes, §8.4 first non-probing packet after migration. */
    if (a->imm_requested) why |= QK_IMM_REQUESTED;
    /* The rest only matters once we asked the peer to acknowledge less. */
    if (!a->have_sent) return why;
    /* §8.1: going application-limited with a large ack delay would hold the
     * last ACK back; ask for it with the last data packet, and for the
     * first one after, which gives a fresh RTT sample. */
    if (pk->data && a->idle) why |= QK_IMM_IDLE_EXIT;
    if (pk->data && !pk->more_data && !a->idle && rate_ok(a, pk->srtt_ns, pk->now))
        why |= QK_IMM_IDLE_ENTER;
    /* §8.1 (a congestion controller limited by the window relies on ACKs to
     * send more): the peer holds up to its threshold of our packets, and
     * they count in bytes in flight (RFC 9002 §7) though they left the
     * network. Ask for the ACK with the last packet the sender can send
     * now, at most once per `every` data packets:
     * - FIXED, AUTO_THRESHOLD, AUTO with a standing queue: when the packet
     *   fills the window, once per T - 1;
     * - AUTO without a standing queue: at the end of a burst (cwnd
     *   full or pacer empty after it),
     *   once per mark_every packets; shorter bursts ride with the next one,
     *   so bursts settle at mark_every..2 * mark_every packets, each
     *   acknowledged as its last packet arrives. */
    if (pk->data && pk->more_data && a->sent.threshold > 1) {
        bool fixed = !a->burst_mode;
        uint64_t every = fixed ? a->sent.threshold - 1 : a->mark_every;
        bool last = fixed ? pk->cwnd_full : pk->cwnd_full || pk->burst_left == 0;
        if (last && a->pkts_since_full + 1 >= every) why |= QK_IMM_CWND_FULL;
    }
    /* §8.1/§8.2: at least one ACK per RTT while ack-eliciting packets are
     * outstanding. */
    if (pk->ae_in_flight && pk->now - a->last_ack_rx_ns > pk->srtt_ns &&
        rate_ok(a, pk->srtt_ns, pk->now))
        why |= QK_IMM_NO_ACK;
    return why;
}

void qk_ackfreq_on_data_sent(qk_ackfreq *a, uint32_t why)
{
    if (why & QK_IMM_CWND_FULL)
        a->pkts_since_full = 0;
    else
        a->pkts_since_full++;
}

void qk_ackfreq_on_immediate_sent(qk_ackfreq *a, uint32_t why, qk_time now)
{
    if (why & QK_IMM_REQUESTED) a->imm_requested = false;
    if (why & QK_IMM_IDLE_EXIT) a->idle = false;
    if (why & QK_IMM_IDLE_ENTER) a->idle = true;
    if (why & (QK_IMM_IDLE_ENTER | QK_IMM_NO_ACK)) {
        a->has_imm = true;
        a->last_imm_ns = now;
    }
}

void qk_ackfreq_on_ack_received(qk_ackfreq *a, qk_time now)
{
    a->last_ack_rx_ns = now;
}

uint64_t qk_ackfreq_cwnd_allowance(const qk_ackfreq *a, uint64_t cwnd_bytes, uint64_t mds_bytes)
{
    if (!a->have_sent || a->sent.threshold <= 1) return 0;
    /* An RFC 9000 receiver holds at most one ack-eliciting packet back; one
     * with threshold T holds up to T. Those packets have left the network
     * but still count in bytes in flight until the ACK comes, so a
     * cwnd-limited sender keeps on average (T - 1) / 2 packets fewer in the
     * network than the RFC 9000 sender the congestion controller was tuned
     * for (measured: -6% goodput at 0.1% loss with T ~ 10, cwnd ~ 45
     * packets). Allow that many more bytes in flight, so the network holds
     * what the congestion controller meant it to hold. Never more than
     * cwnd / 8 (what auto's T = cwnd / 4 gives): after the window collapses
     * the threshold on the wire lags by up to an RTT and must not inflate a
     * small window. */
    uint64_t allow = (a->sent.threshold - 1) * mds_bytes / 2;
    return allow < cwnd_bytes / 8 ? allow : cwnd_bytes / 8;
}

uint64_t qk_ackfreq_pacer_burst_pkts(const qk_ackfreq *a)
{
    /* AUTO without a standing queue: an ACK from the peer releases up to its threshold at
     * once (bursts the sender marks hold T..2T packets). The pacer must let
     * such a burst go back to back, or its tail trickles out at the pacing
     * rate and the peer holds the head until the tail arrives (exp. 2 in
     * docs/experiments/ack-frequency.md: default 10-packet quantum 0.967 of
     * the RFC default's goodput at 0.113 ACKs per packet; quantum =
     * threshold 0.990 at pacing gain 1.25 but 0.981 at 0.103 at gain 1;
     * 2 x threshold 0.995 at 0.098). */
    if (!a->burst_mode || !a->have_sent || a->sent.threshold <= 1) return 0;
    return 2 * a->sent.threshold;
}

void qk_ackfreq_set_min_rtt(qk_ackfreq *a, qk_time min_rtt_ns)
{
    a->min_rtt_ns = min_rtt_ns;
}

void qk_ackfreq_on_congestion(qk_ackfreq *a, uint64_t congestion_events, qk_time srtt_ns)
{
    qk_time m = a->min_rtt_ns;
    if (congestion_events != a->cong_events) {
        a->cong_events = congestion_events;
        a->refill = standing_queue(a, srtt_ns) ? QK_ACKFREQ_REFILL_DRAIN : QK_ACKFREQ_REFILL_NONE;
    }
    if (!m) return;
    bool queue = srtt_ns * 16 > m * 17;
    if (a->refill == QK_ACKFREQ_REFILL_DRAIN && !queue)
        a->refill = QK_ACKFREQ_REFILL_ON;
    else if (a->refill == QK_ACKFREQ_REFILL_ON && queue)
        a->refill = QK_ACKFREQ_REFILL_NONE;
}

/* ---- public names (quack.h) ---- */

static const char *const mode_names[] = {"off", "fixed", "auto", "auto-threshold"};

int qk_ackfreq_mode_parse(const char *name, qk_ackfreq_mode *out)
{
    for (size_t i = 0; name && out && i < sizeof mode_names / sizeof *mode_names; i++)
        if (!strcasecmp(name, mode_names[i])) {
            *out = (qk_ackfreq_mode)i;
            return 0;
        }
    return QK_ERR_INVALID_ARG;
}

const char *qk_ackfreq_mode_name(qk_ackfreq_mode mode)
{
    return (unsigned)mode < sizeof mode_names / sizeof *mode_names ? mode_names[mode] : "unknown";
}
