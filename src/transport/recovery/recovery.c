/* SPDX-License-Identifier: MIT */
/* Loss detection and recovery, RFC 9002 §6 and Appendix A. */
#include "transport/recovery/recovery.h"

#include <stdlib.h>
#include <string.h>

enum { SLOT_EMPTY = 0, SLOT_LIVE = 1, SLOT_ACKED = 2 /* acked by the ACK being processed */ };

#define QK_RECOVERY_SET_RANGES 64
/* RFC 8985 §6.2: reo_wnd_mult falls back to 1 after 16 recoveries without
 * spurious losses; it grows at most to reo_wnd = srtt. */
#define QK_RECOVERY_REO_WND_PERSIST  16
#define QK_RECOVERY_REO_WND_MULT_MAX 64

/* ---- configuration and lifetime ---------------------------------------- */

int qk_recovery_init(qk_recovery *r, const qk_recovery_config *cfg, qk_rtt *rtt, qk_cc *cc,
                     const qk_recovery_sink *sink)
{
    if (!rtt) return QK_ERR_INVALID_ARG;
    memset(r, 0, sizeof *r);
    if (cfg) r->cfg = *cfg;
    if (!r->cfg.packet_threshold) r->cfg.packet_threshold = QK_RECOVERY_PACKET_THRESHOLD;
    if (!r->cfg.time_threshold_den) {
        r->cfg.time_threshold_num = QK_RTT_TIME_THRESHOLD_NUM;
        r->cfg.time_threshold_den = QK_RTT_TIME_THRESHOLD_DEN;
    }
    if (r->cfg.time_threshold_num < r->cfg.time_threshold_den) return QK_ERR_INVALID_ARG;
    r->time_threshold_num = r->cfg.time_threshold_num;
    r->reo_wnd_mult = 1;
    r->reo_wnd_persist = QK_RECOVERY_REO_WND_PERSIST;
    if (!r->cfg.max_ack_delay_ns) r->cfg.max_ack_delay_ns = QK_ACK_DEFAULT_MAX_DELAY_NS;
    if (!r->cfg.max_tracked_packets) r->cfg.max_tracked_packets = (size_t)1 << 18;
    if (!r->cfg.max_tracked_frames) r->cfg.max_tracked_frames = (size_t)1 << 20;
    r->rtt = rtt;
    r->cc = cc;
    if (sink) r->sink = *sink;
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) {
        qk_rangeset_init(&r->sp[s].lost, QK_RECOVERY_SET_RANGES);
        qk_rangeset_init(&r->sp[s].skipped, QK_RECOVERY_SET_RANGES);
    }
    /* RFC 9002 §A.6: a server never needs the client's address validated. */
    r->peer_address_validated = r->cfg.is_server;
    r->timer = QK_TIME_INFINITE;
    return 0;
}

static void space_free(qk_recovery_space *sp)
{
    free(sp->pkts);
    free(sp->frames);
    sp->pkts = NULL;
    sp->frames = NULL;
    sp->pkt_cap = sp->frame_cap = 0;
    qk_rangeset_free(&sp->lost);
    qk_rangeset_free(&sp->skipped);
}

void qk_recovery_free(qk_recovery *r)
{
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) space_free(&r->sp[s]);
}

/* ---- small helpers ------------------------------------------------------ */

static inline qk_sent_packet *slot(const qk_recovery_space *sp, uint64_t pn)
{
    return &sp->pkts[pn & (sp->pkt_cap - 1)];
}

/* Add [a, b) to a bounded set, forgetting the lowest ranges when full. */
static void set_add(qk_rangeset *s, uint64_t a, uint64_t b)
{
    while (qk_rangeset_add(s, a, b) == QK_ERR_LIMIT) {
        if (s->n == 0) return;
        if (a < s->r[0].end) return; /* older than all we keep */
        qk_rangeset_remove_below(s, s->r[0].end);
    }
}

/* True when [a, b] (inclusive) intersects s. */
static bool set_intersects(const qk_rangeset *s, uint64_t a, uint64_t b)
{
    size_t i = qk_rangeset_lower_bound(s, a);
    return i < s->n && s->r[i].start <= b;
}

static qk_time shift_time(qk_time d, uint32_t shift)
{
    if (shift >= 32 || d > (QK_TIME_INFINITE >> shift)) return QK_TIME_INFINITE / 4;
    return d << shift;
}

static bool any_ae_in_flight(const qk_recovery *r)
{
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++)
        if (r->sp[s].ack_eliciting_in_flight) return true;
    return false;
}

static void copy_frames(qk_recovery *r, const qk_recovery_space *sp, const qk_sent_packet *p)
{
    for (uint16_t i = 0; i < p->n_frames; i++)
        r->scratch[i] = sp->frames[(p->frame_pos + i) & (sp->frame_cap - 1)];
}

/* ---- ring growth (amortised; never per packet) --------------------------- */

static int grow_pkts(qk_recovery *r, qk_recovery_space *sp, uint64_t need)
{
    if (need <= sp->pkt_cap) return 0;
    if (need > r->cfg.max_tracked_packets) return QK_ERR_LIMIT;
    size_t cap = sp->pkt_cap ? sp->pkt_cap : 64;
    while (cap < need) cap *= 2;
    qk_sent_packet *n = calloc(cap, sizeof *n);
    if (!n) return QK_ERR_NOMEM;
    for (uint64_t pn = sp->base_pn; pn < sp->next_pn && sp->pkt_cap; pn++) {
        qk_sent_packet *o = slot(sp, pn);
        if (o->state != SLOT_EMPTY && o->pn == pn) n[pn & (cap - 1)] = *o;
    }
    free(sp->pkts);
    sp->pkts = n;
    sp->pkt_cap = cap;
    return 0;
}

static int grow_frames(qk_recovery *r, qk_recovery_space *sp, uint64_t need)
{
    if (need <= sp->frame_cap) return 0;
    if (need > r->cfg.max_tracked_frames) return QK_ERR_LIMIT;
    size_t cap = sp->frame_cap ? sp->frame_cap : 256;
    while (cap < need) cap *= 2;
    qk_sent_frame *n = malloc(cap * sizeof *n);
    if (!n) return QK_ERR_NOMEM;
    for (uint64_t pos = sp->frame_tail; pos < sp->frame_head; pos++)
        n[pos & (cap - 1)] = sp->frames[pos & (sp->frame_cap - 1)];
    free(sp->frames);
    sp->frames = n;
    sp->frame_cap = cap;
    return 0;
}

/* Move base past finished slots and release their frames. */
static void advance_base(qk_recovery_space *sp)
{
    while (sp->base_pn < sp->next_pn) {
        qk_sent_packet *p = slot(sp, sp->base_pn);
        if (p->state != SLOT_EMPTY && p->pn == sp->base_pn) break;
        sp->base_pn++;
    }
    if (sp->base_pn < sp->next_pn)
        sp->frame_tail = slot(sp, sp->base_pn)->frame_pos;
    else
        sp->frame_tail = sp->frame_head;
}

/* ---- loss detection timer, RFC 9002 §A.8 -------------------------------- */

static qk_time pto_base_ns(const qk_recovery *r)
{
    return shift_time(qk_rtt_pto_ns(r->rtt, 0), r->pto_count);
}

/* GetPtoTimeAndSpace(); returns QK_TIME_INFINITE when no space qualifies. */
static qk_time pto_time_and_space(const qk_recovery *r, qk_time now, qk_pn_space *space)
{
    qk_time duration = pto_base_ns(r);
    if (!any_ae_in_flight(r)) {
        /* RFC 9002 §6.2.2.1: client anti-deadlock PTO from now. */
        *space = r->have_handshake_keys ? QK_PN_SPACE_HANDSHAKE : QK_PN_SPACE_INITIAL;
        return now + duration;
    }
    qk_time best = QK_TIME_INFINITE;
    *space = QK_PN_SPACE_INITIAL;
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) {
        const qk_recovery_space *sp = &r->sp[s];
        if (sp->discarded || !sp->ack_eliciting_in_flight) continue;
        if (s == QK_PN_SPACE_APP) {
            /* RFC 9002 §6.2.1: no Application PTO before confirmation. */
            if (!r->handshake_confirmed) break;
            duration += shift_time(r->cfg.max_ack_delay_ns, r->pto_count);
        }
        qk_time t = sp->time_of_last_ack_eliciting + duration;
        if (t < best) {
            best = t;
            *space = (qk_pn_space)s;
        }
    }
    return best;
}

static qk_time earliest_loss_time(const qk_recovery *r, qk_pn_space *space)
{
    qk_time best = 0;
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) {
        qk_time t = r->sp[s].loss_time;
        if (t && (!best || t < best)) {
            best = t;
            *space = (qk_pn_space)s;
        }
    }
    return best;
}

static void set_timer(qk_recovery *r, qk_time now)
{
    qk_pn_space s;
    qk_time lt = earliest_loss_time(r, &s);
    if (lt) { /* RFC 9002 §A.8: time-threshold loss first */
        r->timer = lt;
        return;
    }
    /* RFC 9002 §6.2.2.1: a server at the amplification limit arms nothing. */
    if (r->amplification_blocked) {
        r->timer = QK_TIME_INFINITE;
        return;
    }
    if (!any_ae_in_flight(r) && r->peer_address_validated) {
        r->timer = QK_TIME_INFINITE;
        return;
    }
    r->timer = pto_time_and_space(r, now, &s);
}

qk_time qk_recovery_next_timeout(const qk_recovery *r)
{
    return r->timer;
}

qk_time qk_recovery_pto_ns(const qk_recovery *r, qk_pn_space space)
{
    qk_time d = pto_base_ns(r);
    if (space == QK_PN_SPACE_APP) d += shift_time(r->cfg.max_ack_delay_ns, r->pto_count);
    return d;
}

/* ---- delivery-rate sampling, draft-ietf-ccwg-bbr §4.1.2 ------------------- */

/* Snapshot the connection's delivery state into an in-flight packet about
 * to be counted (draft-ietf-ccwg-bbr §4.1.2.2 OnPacketSent), after telling
 * a rate-based controller about the transmit (§5.2.2 OnTransmit). */
static void rate_on_sent(qk_recovery *r, qk_sent_packet *p, qk_time now)
{
    qk_delivery_state *d = &r->dlv;
    qk_cc *cc = r->cc;
    if (cc && cc->ops && cc->ops->on_transmit) {
        qk_cc_sent s = {.now = now,
                        .bytes = p->size_bytes,
                        .bytes_in_flight_before = r->bytes_in_flight,
                        .conn_app_limited = d->app_limited_until != 0,
                        .cwnd_limited = !p->app_limited};
        cc->ops->on_transmit(cc, &s);
    }
    if (r->bytes_in_flight == 0) d->first_sent_time = d->delivered_time = now;
    p->rs_first_sent_time = d->first_sent_time;
    p->rs_delivered_time = d->delivered_time;
    p->rs_delivered_bytes = d->delivered_bytes;
    p->rs_lost_bytes = d->lost_bytes;
    p->rs_app_limited = d->app_limited_until != 0;
    uint64_t tx = r->bytes_in_flight + p->size_bytes; /* includes P */
    p->rs_tx_in_flight_bytes = tx > UINT32_MAX ? UINT32_MAX : (uint32_t)tx;
}

void qk_recovery_mark_app_limited(qk_recovery *r)
{
    /* draft-ietf-ccwg-bbr §4.1.2.4 MarkConnectionAppLimited */
    uint64_t mark = r->dlv.delivered_bytes + r->bytes_in_flight;
    r->dlv.app_limited_until = mark ? mark : 1;
}

/* draft-ietf-ccwg-bbr §4.1.2.3 UpdateRateSample, for one newly acked
 * in-flight packet. */
static void rate_on_acked(qk_recovery *r, const qk_sent_packet *p, qk_rate_sample *rs, qk_time now)
{
    qk_delivery_state *d = &r->dlv;
    d->delivered_bytes += p->size_bytes;
    d->delivered_time = now;
    rs->newly_acked_bytes += p->size_bytes;
    /* IsNewestPacket(P): the most recently sent packet delivered so far. */
    bool newest = p->time_sent > d->first_sent_time ||
                  (p->time_sent == d->first_sent_time && p->pn > rs->last_pn);
    if (rs->has_data && !newest) return;
    rs->has_data = true;
    rs->prior_delivered_bytes = p->rs_delivered_bytes;
    rs->prior_time = p->rs_delivered_time;
    rs->is_app_limited = p->rs_app_limited;
    rs->send_elapsed_ns = p->time_sent - p->rs_first_sent_time;
    rs->ack_elapsed_ns = d->delivered_time - p->rs_delivered_time;
    rs->last_pn = p->pn;
    rs->tx_in_flight_bytes = p->rs_tx_in_flight_bytes;
    rs->lost_bytes = p->rs_lost_bytes; /* made a difference in rate_generate */
    rs->has_rtt = now >= p->time_sent;
    rs->rtt_ns = rs->has_rtt ? now - p->time_sent : 0;
    d->first_sent_time = p->time_sent;
}

/* draft-ietf-ccwg-bbr §4.1.2.3 GenerateRateSample. */
static void rate_generate(qk_recovery *r, qk_rate_sample *rs)
{
    qk_delivery_state *d = &r->dlv;
    /* Clear the app-limited mark once the bubble is acked and gone. */
    if (d->app_limited_until && d->delivered_bytes > d->app_limited_until) d->app_limited_until = 0;
    rs->total_delivered_bytes = d->delivered_bytes;
    rs->total_lost_bytes = d->lost_bytes;
    rs->bytes_in_flight = r->bytes_in_flight;
    if (!rs->has_data) return;                       /* nothing delivered on this ACK */
    rs->lost_bytes = d->lost_bytes - rs->lost_bytes; /* RS.lost = C.lost - P.lost */
    /* The longer of the send and ACK intervals (§4.1.1.2.4). */
    rs->interval_ns =
        rs->send_elapsed_ns > rs->ack_elapsed_ns ? rs->send_elapsed_ns : rs->ack_elapsed_ns;
    rs->delivered_bytes = d->delivered_bytes - rs->prior_delivered_bytes;
    /* An interval below min_rtt is no reliable rate sample. */
    if (rs->interval_ns < r->rtt->min_rtt_ns || rs->interval_ns == 0) return;
    rs->delivery_rate_bytes_per_s =
        (uint64_t)((unsigned __int128)rs->delivered_bytes * QK_NS_PER_S / rs->interval_ns);
}

#define QK_RECOVERY_BW_WINDOW_NS (4 * QK_NS_PER_S)

/* The max filter behind qk_recovery_max_delivery_rate: two windows. */
static void bw_max_update(qk_recovery *r, const qk_rate_sample *rs)
{
    if (!rs->delivery_rate_bytes_per_s) return;
    if (rs->now >= r->bw_window_start + QK_RECOVERY_BW_WINDOW_NS) {
        bool adjacent = rs->now < r->bw_window_start + 2 * QK_RECOVERY_BW_WINDOW_NS;
        /* A window whose samples were all app-limited below the max (the
         * sender held data back) measured nothing: the max stands, as in a
         * filter that only ages on samples it takes. The cost: a path that
         * slows while every sample is app-limited keeps the old max until one
         * is not (media with a bulk neighbour, 50 -> 20 Mbit/s: audio +4.0 ms
         * over one way 5-15 s after, +3.1 when the max aged out). */
        if (r->bw_max_cur || !adjacent) r->bw_max_prev = adjacent ? r->bw_max_cur : 0;
        r->bw_max_cur = 0;
        r->bw_window_start = rs->now;
    }
    if (rs->is_app_limited && rs->delivery_rate_bytes_per_s <= qk_recovery_max_delivery_rate(r))
        return;
    if (rs->delivery_rate_bytes_per_s > r->bw_max_cur)
        r->bw_max_cur = rs->delivery_rate_bytes_per_s;
}

uint64_t qk_recovery_max_delivery_rate(const qk_recovery *r)
{
    return r->bw_max_cur > r->bw_max_prev ? r->bw_max_cur : r->bw_max_prev;
}

/* ---- sending ----------------------------------------------------------- */

int qk_recovery_on_packet_sent(qk_recovery *r, qk_pn_space space, const qk_sent_packet *pkt,
                               const qk_sent_frame *frames, size_t n, qk_time now)
{
    if ((unsigned)space >= QK_PN_SPACE_COUNT || !pkt) return QK_ERR_INVALID_ARG;
    if (n > QK_RECOVERY_MAX_FRAMES_PER_PKT || (n && !frames)) return QK_ERR_INVALID_ARG;
    qk_recovery_space *sp = &r->sp[space];
    if (sp->discarded) return QK_ERR_STATE;
    uint64_t pn = pkt->pn;
    if (pn < sp->next_pn || pn >= ((uint64_t)1 << 62)) return QK_ERR_INVALID_ARG;
    if (sp->base_pn == sp->next_pn) { /* nothing tracked: restart the window here */
        sp->base_pn = pn;
        sp->frame_tail = sp->frame_head;
    }
    int rc = grow_pkts(r, sp, pn - sp->base_pn + 1);
    if (rc) return rc;
    rc = grow_frames(r, sp, sp->frame_head + n - sp->frame_tail);
    if (rc) return rc;
    /* Skipped pns (RFC 9000 §21.4 optimistic-ACK defence) must never be acked. */
    if (pn > sp->next_pn) set_add(&sp->skipped, sp->next_pn, pn);

    qk_sent_packet *p = slot(sp, pn);
    *p = *pkt;
    p->time_sent = now;
    p->state = SLOT_LIVE;
    p->n_frames = (uint16_t)n;
    p->frame_pos = sp->frame_head;
    for (size_t i = 0; i < n; i++)
        sp->frames[(sp->frame_head + i) & (sp->frame_cap - 1)] = frames[i];
    sp->frame_head += n;
    sp->next_pn = pn + 1;

    r->stats.packets_sent++;
    r->stats.bytes_sent += pkt->size_bytes;
    /* RFC 9002 §A.5 OnPacketSent */
    if (p->in_flight) {
        if (p->ack_eliciting) {
            sp->time_of_last_ack_eliciting = now;
            sp->ack_eliciting_in_flight++;
        }
        rate_on_sent(r, p, now);
        sp->bytes_in_flight += p->size_bytes;
        r->bytes_in_flight += p->size_bytes;
        if (r->cc && r->cc->ops && r->cc->ops->on_packet_sent)
            r->cc->ops->on_packet_sent(r->cc, p->size_bytes, now);
        set_timer(r, now);
    }
    return 0;
}

uint64_t qk_recovery_recent_max_in_flight(qk_recovery *r, uint64_t inflight_now, qk_time now)
{
    qk_time period = r->rtt->smoothed_rtt_ns ? r->rtt->smoothed_rtt_ns : QK_NS_PER_MS;
    if (now >= r->flight_period_start + period) {
        /* A new period: keep the previous one so the window spans >= 1 RTT. */
        bool adjacent = now < r->flight_period_start + 2 * period;
        r->flight_max_prev = adjacent ? r->flight_max_cur : 0;
        r->flight_max_cur = 0;
        r->flight_period_start = now;
    }
    if (inflight_now > r->flight_max_cur) r->flight_max_cur = inflight_now;
    return r->flight_max_cur > r->flight_max_prev ? r->flight_max_cur : r->flight_max_prev;
}

const qk_sent_packet *qk_recovery_find(const qk_recovery *r, qk_pn_space space, uint64_t pn)
{
    if ((unsigned)space >= QK_PN_SPACE_COUNT) return NULL;
    const qk_recovery_space *sp = &r->sp[space];
    if (!sp->pkt_cap || pn < sp->base_pn || pn >= sp->next_pn) return NULL;
    const qk_sent_packet *p = slot(sp, pn);
    return p->state == SLOT_LIVE && p->pn == pn ? p : NULL;
}

/* Take p out of flight accounting. */
static void remove_from_flight(qk_recovery *r, qk_recovery_space *sp, const qk_sent_packet *p)
{
    if (!p->in_flight) return;
    sp->bytes_in_flight -= p->size_bytes;
    r->bytes_in_flight -= p->size_bytes;
    if (p->ack_eliciting) sp->ack_eliciting_in_flight--;
}

/* ---- loss detection, RFC 9002 §6.1 / §A.10 -------------------------------- */

typedef struct loss_pass {
    qk_time now;
    qk_time last_loss_sent; /* newest in-flight, non-probe lost packet, 0 = none */
    bool found;
    qk_pn_space space;
    uint64_t n_lost;     /* packets declared lost in this pass */
    uint64_t first_lost; /* smallest of them */
    /* persistent congestion run, RFC 9002 §7.6.2 */
    bool in_run;
    uint64_t run_ae;
    qk_time run_start, run_end;
    bool persistent;
} loss_pass;

static void declare_lost(qk_recovery *r, qk_pn_space space, qk_sent_packet *p, loss_pass *lp)
{
    qk_recovery_space *sp = &r->sp[space];
    remove_from_flight(r, sp, p);
    r->stats.packets_lost++;
    r->stats.bytes_lost += p->size_bytes;
    set_add(&sp->lost, p->pn, p->pn + 1);
    lp->found = true;
    /* RFC 9000 §13.4.2: every ECT packet sent while testing was lost: the
     * path (or the peer) may be dropping them; stop marking. */
    if (p->ecn && r->ecn_state == QK_ECN_STATE_TESTING &&
        ++r->ecn_testing_lost >= QK_ECN_TESTING_PKTS)
        r->ecn_state = QK_ECN_STATE_FAILED;
    /* RFC 9000 §14.4: a lost PMTU probe is not a congestion signal. */
    if (p->in_flight && !p->is_pmtu_probe && p->time_sent >= lp->last_loss_sent)
        lp->last_loss_sent = p->time_sent ? p->time_sent : 1;
    if (p->in_flight && !p->is_pmtu_probe) {
        /* C.lost (draft-ietf-ccwg-bbr §4.1.2.1.1) and BBR HandleLostPacket (§5.2.4). */
        r->dlv.lost_bytes += p->size_bytes;
        qk_cc *cc = r->cc;
        if (cc && cc->ops && cc->ops->on_packet_lost) {
            qk_cc_lost l = {.now = lp->now,
                            .sent_time = p->time_sent,
                            .pn = p->pn,
                            .bytes = p->size_bytes,
                            .tx_in_flight_bytes = p->rs_tx_in_flight_bytes,
                            .lost_at_send_bytes = p->rs_lost_bytes,
                            .total_lost_bytes = r->dlv.lost_bytes,
                            .total_delivered_bytes = r->dlv.delivered_bytes,
                            .is_app_limited = p->rs_app_limited};
            cc->ops->on_packet_lost(cc, &l);
        }
    }
    if (!lp->n_lost++) lp->first_lost = p->pn; /* every loss must prove spurious to undo */
    lp->space = space;
    p->state = SLOT_EMPTY;
    if (r->sink.on_lost) {
        copy_frames(r, sp, p);
        r->sink.on_lost(r->sink.ctx, space, p, r->scratch, p->n_frames);
    }
}

/* Track a run of losses with no acknowledgement in between. */
static void pc_note(qk_recovery *r, loss_pass *lp, const qk_sent_packet *p)
{
    qk_time pc = QK_RECOVERY_PC_THRESHOLD * qk_rtt_pto_ns(r->rtt, r->cfg.max_ack_delay_ns);
    /* RFC 9002 §7.6.2: both packets sent after an RTT sample existed. */
    /* RFC 9000 §14.4: a lost PMTU probe is no congestion signal, persistent or not. */
    if (!p->ack_eliciting || p->is_pmtu_probe || !qk_rtt_has_sample(r->rtt)) return;
    if (p->time_sent <= r->rtt->first_sample_time) return;
    if (!lp->in_run) {
        lp->in_run = true;
        lp->run_ae = 0;
        lp->run_start = p->time_sent;
    }
    lp->run_ae++;
    lp->run_end = p->time_sent;
    if (lp->run_ae >= 2 && lp->run_end - lp->run_start > pc) lp->persistent = true;
}

/* The time threshold (rtt.c, RFC 9002 §6.1.2), and once reordering was
 * seen at least its base plus the RACK reordering window (RFC 8985 §6.2),
 * min(mult x min_rtt / 4, srtt). */
static qk_time loss_delay(const qk_recovery *r)
{
    qk_time d = qk_rtt_loss_delay_ns(r->rtt, r->time_threshold_num, r->cfg.time_threshold_den);
    if (!r->reordering_seen) return d;
    const qk_rtt *rtt = r->rtt;
    qk_time base = qk_rtt_loss_base_ns(rtt);
    qk_time wnd = (qk_time)r->reo_wnd_mult * (rtt->min_rtt_ns / 4);
    if (wnd > rtt->smoothed_rtt_ns) wnd = rtt->smoothed_rtt_ns;
    return base + wnd > d ? base + wnd : d;
}

static void detect_lost(qk_recovery *r, qk_pn_space space, qk_time now, loss_pass *lp)
{
    qk_recovery_space *sp = &r->sp[space];
    sp->loss_time = 0;
    lp->now = now;
    if (!sp->has_largest_acked || !sp->pkt_cap) return;
    qk_time delay = loss_delay(r);
    uint64_t threshold = r->cfg.packet_threshold > r->reorder_threshold ? r->cfg.packet_threshold
                                                                        : r->reorder_threshold;
    /* RFC 8985 §6.2: once reordering is seen, only time declares losses. */
    if (r->reordering_seen) threshold = UINT64_MAX;
    uint64_t end = sp->largest_acked < sp->next_pn ? sp->largest_acked : sp->next_pn;
    for (uint64_t pn = sp->base_pn; pn < end; pn++) {
        qk_sent_packet *p = slot(sp, pn);
        if (p->pn != pn || p->state == SLOT_EMPTY) {
            /* An earlier acknowledgement between two losses breaks the run
             * (RFC 9002 §7.6.2); earlier losses and skipped pns do not. */
            if (!qk_rangeset_contains(&sp->lost, pn) && !qk_rangeset_contains(&sp->skipped, pn))
                lp->in_run = false;
            continue;
        }
        if (p->state == SLOT_ACKED) {
            lp->in_run = false;
            continue;
        }
        /* RFC 9002 §6.1.1 packet threshold, §6.1.2 time threshold. */
        if ((threshold != UINT64_MAX && sp->largest_acked >= pn + threshold) ||
            now >= p->time_sent + delay) {
            pc_note(r, lp, p);
            declare_lost(r, space, p, lp);
        } else {
            qk_time t = p->time_sent + delay;
            if (!sp->loss_time || t < sp->loss_time) sp->loss_time = t;
        }
    }
}

/* RFC 9002 §A.10 OnPacketsLost: one congestion event, maybe persistent. */
static void on_losses(qk_recovery *r, const loss_pass *lp, qk_time now)
{
    qk_cc *cc = r->cc;
    if (lp->last_loss_sent && cc && cc->ops && cc->ops->on_congestion_event) {
        uint64_t events = cc->congestion_events;
        cc->ops->on_congestion_event(cc, lp->last_loss_sent, false, now);
        if (cc->congestion_events != events) { /* a new response: a new undo episode */
            /* RFC 8985 §6.2: decay the reordering window after 16 responses. */
            if (r->reo_wnd_mult > 1 && --r->reo_wnd_persist == 0) {
                r->reo_wnd_mult = 1;
                r->reo_wnd_persist = QK_RECOVERY_REO_WND_PERSIST;
            }
            r->undo_armed = true;
            r->undo_lost_pkts = lp->n_lost;
            r->undo_first_pn = lp->first_lost;
            r->undo_space = lp->space;
        } else if (r->undo_armed && lp->space == r->undo_space) {
            r->undo_lost_pkts += lp->n_lost; /* more losses of the same episode */
        }
    }
    if (lp->persistent) {
        r->undo_armed = false; /* RFC 9002 §7.6.2: never undone */
        r->stats.persistent_congestion++;
        if (cc && cc->ops && cc->ops->on_persistent_congestion)
            cc->ops->on_persistent_congestion(cc, now);
    }
}

/* ---- ACK processing, RFC 9002 §A.7 --------------------------------------- */

static int validate_ack(const qk_recovery_space *sp, const qk_ack_received *ack)
{
    if (!ack->ranges || ack->n_ranges == 0) return QK_ERR_INVALID_ARG;
    for (size_t i = 0; i < ack->n_ranges; i++) {
        const qk_ack_range *a = &ack->ranges[i];
        if (a->smallest > a->largest) return QK_ERR_FRAME_ENCODING;
        if (i && a->largest >= ack->ranges[i - 1].smallest) return QK_ERR_FRAME_ENCODING;
    }
    /* RFC 9000 §13.1: acknowledging a pn never sent is PROTOCOL_VIOLATION. */
    if (ack->ranges[0].largest >= sp->next_pn) return QK_ERR_PROTOCOL_VIOLATION;
    for (size_t i = 0; i < ack->n_ranges; i++)
        if (set_intersects(&sp->skipped, ack->ranges[i].smallest, ack->ranges[i].largest))
            return QK_ERR_PROTOCOL_VIOLATION;
    return 0;
}

typedef struct ack_pass {
    uint64_t episode_first; /* in: undo episode's first pn in this space (UINT64_MAX = none) */
    uint64_t spurious_episode;
    uint64_t reorder_distance; /* largest (Largest Acknowledged - pn) of a spurious loss */
    uint64_t newly;
    uint64_t newly_ect0, newly_ect1;
    uint64_t acked_bytes;
    bool any_ae;
    const qk_sent_packet *largest; /* the Largest Acknowledged, if newly acked */
    uint64_t spurious;
    bool had_largest;      /* in: a Largest Acknowledged existed before this ACK */
    uint64_t prev_largest; /* in: its value */
    bool reordered;        /* a newly acked pn lies below prev_largest */
} ack_pass;

/* Pass 1: mark newly acked slots; note spurious losses. */
static void mark_acked(qk_recovery_space *sp, const qk_ack_received *ack, ack_pass *ap)
{
    for (size_t i = 0; i < ack->n_ranges; i++) {
        uint64_t lo = ack->ranges[i].smallest, hi = ack->ranges[i].largest;
        /* Acked after being declared lost: spurious (RFC 9002 §6.1 note). */
        if (set_intersects(&sp->lost, lo, hi)) {
            size_t j = qk_rangeset_lower_bound(&sp->lost, lo);
            for (; j < sp->lost.n && sp->lost.r[j].start <= hi; j++) {
                uint64_t a = sp->lost.r[j].start > lo ? sp->lost.r[j].start : lo;
                uint64_t b = sp->lost.r[j].end - 1 < hi ? sp->lost.r[j].end - 1 : hi;
                ap->spurious += b - a + 1;
                if (b >= ap->episode_first) {
                    uint64_t from = a > ap->episode_first ? a : ap->episode_first;
                    ap->spurious_episode += b - from + 1;
                }
                /* The receiver saw ranges[0].largest before this late pn. */
                uint64_t d = ack->ranges[0].largest - a;
                if (d > ap->reorder_distance) ap->reorder_distance = d;
            }
            if (qk_rangeset_remove(&sp->lost, lo, hi + 1) < 0)
                qk_rangeset_remove_below(&sp->lost, hi + 1);
        }
        if (!sp->pkt_cap || hi < sp->base_pn) continue;
        if (lo < sp->base_pn) lo = sp->base_pn;
        for (uint64_t pn = lo; pn <= hi; pn++) {
            qk_sent_packet *p = slot(sp, pn);
            if (p->state != SLOT_LIVE || p->pn != pn) continue;
            p->state = SLOT_ACKED;
            ap->newly++;
            /* RFC 8985 §6.2 RACK_detect_reordering: delivered after a
             * later-sent packet was. */
            if (ap->had_largest && pn < ap->prev_largest) ap->reordered = true;
            if (p->ack_eliciting) ap->any_ae = true;
            if (p->in_flight) ap->acked_bytes += p->size_bytes;
            if (p->ecn == QK_ECN_ECT0) ap->newly_ect0++;
            if (p->ecn == QK_ECN_ECT1) ap->newly_ect1++;
            if (pn == ack->ranges[0].largest) ap->largest = p;
        }
    }
}

/* Pass 2: hand newly acked packets to cc and the sink, free their slots. */
static void finish_acked(qk_recovery *r, qk_pn_space space, const qk_ack_received *ack,
                         qk_rate_sample *rs, qk_time now)
{
    qk_recovery_space *sp = &r->sp[space];
    qk_cc *cc = r->cc;
    for (size_t i = 0; i < ack->n_ranges; i++) {
        uint64_t lo = ack->ranges[i].smallest, hi = ack->ranges[i].largest;
        if (!sp->pkt_cap || hi < sp->base_pn) continue;
        if (lo < sp->base_pn) lo = sp->base_pn;
        for (uint64_t pn = lo; pn <= hi; pn++) {
            qk_sent_packet *p = slot(sp, pn);
            if (p->state != SLOT_ACKED || p->pn != pn) continue;
            remove_from_flight(r, sp, p);
            r->stats.packets_acked++;
            p->state = SLOT_EMPTY;
            if (p->in_flight) rate_on_acked(r, p, rs, now);
            if (p->in_flight && cc && cc->ops && cc->ops->on_packet_acked) {
                qk_cc_ack a = {.now = now,
                               .sent_time = p->time_sent,
                               .bytes = p->size_bytes,
                               .smoothed_rtt_ns = r->rtt->smoothed_rtt_ns,
                               .min_rtt_ns = r->rtt->min_rtt_ns,
                               .latest_rtt_ns = r->rtt->latest_rtt_ns,
                               .bytes_in_flight = r->bytes_in_flight,
                               .app_limited = p->app_limited};
                cc->ops->on_packet_acked(cc, &a);
            }
            if (r->sink.on_acked) {
                copy_frames(r, sp, p);
                r->sink.on_acked(r->sink.ctx, space, p, r->scratch, p->n_frames);
            }
        }
    }
}

/* RFC 9000 §13.4.2 validation and RFC 9002 §A.7 ProcessECN. */
static void process_ecn(qk_recovery *r, qk_recovery_space *sp, const qk_ack_received *ack,
                        const ack_pass *ap, bool largest_advanced, qk_time now)
{
    uint64_t newly_ect = ap->newly_ect0 + ap->newly_ect1;
    if (largest_advanced && newly_ect && r->ecn_state != QK_ECN_STATE_FAILED) {
        bool ok = ack->has_ecn && ack->ect0 >= sp->ecn_ect0 && ack->ect1 >= sp->ecn_ect1 &&
                  ack->ce >= sp->ecn_ce;
        if (ok) {
            uint64_t d0 = ack->ect0 - sp->ecn_ect0, d1 = ack->ect1 - sp->ecn_ect1;
            uint64_t dce = ack->ce - sp->ecn_ce;
            /* RFC 9000 §13.4.2.1: increases cover the newly acked ECT packets. */
            ok = d0 + dce >= ap->newly_ect0 && d1 + dce >= ap->newly_ect1;
        }
        r->ecn_state = ok ? QK_ECN_STATE_CAPABLE : QK_ECN_STATE_FAILED;
    }
    if (!ack->has_ecn) return;
    uint64_t dce = ack->ce > sp->ecn_ce ? ack->ce - sp->ecn_ce : 0;
    if (ack->ect0 > sp->ecn_ect0) sp->ecn_ect0 = ack->ect0;
    if (ack->ect1 > sp->ecn_ect1) sp->ecn_ect1 = ack->ect1;
    if (ack->ce > sp->ecn_ce) sp->ecn_ce = ack->ce;
    if (!dce || r->ecn_state == QK_ECN_STATE_FAILED) return;
    r->stats.ecn_ce_events++;
    qk_cc *cc = r->cc;
    qk_time sent = ap->largest ? ap->largest->time_sent : now;
    if (cc && cc->ops && cc->ops->on_congestion_event)
        cc->ops->on_congestion_event(cc, sent, true, now);
    if (cc && cc->ops && cc->ops->on_ecn) cc->ops->on_ecn(cc, dce, ap->acked_bytes, now);
}

/* Late acknowledgements of packets declared lost. RFC 9002 §6.1 lets the
 * thresholds adapt: the packet threshold becomes the observed reordering
 * distance (capped; it only matters until reordering is seen), and the RACK
 * reordering window grows by min_rtt / 4, once per round trip (RFC 8985
 * §6.2, where a DSACK plays the late ACK's part). When every loss behind
 * the current congestion response proved spurious, the response is undone
 * (RFC 9438 §4.9; cc may not support it). */
static void on_spurious(qk_recovery *r, const ack_pass *ap, qk_time now)
{
    r->stats.spurious_losses += ap->spurious;
    uint64_t want = ap->reorder_distance + 1;
    if (want > QK_RECOVERY_MAX_PACKET_THRESHOLD) want = QK_RECOVERY_MAX_PACKET_THRESHOLD;
    if (want > r->reorder_threshold) r->reorder_threshold = want;
    if (r->reordering_seen && now >= r->reo_grow_round_end) {
        if (r->reo_wnd_mult < QK_RECOVERY_REO_WND_MULT_MAX) r->reo_wnd_mult++;
        r->reo_grow_round_end = now + r->rtt->smoothed_rtt_ns;
    }
    r->reordering_seen = true;
    r->reo_wnd_persist = QK_RECOVERY_REO_WND_PERSIST;
    if (!ap->spurious_episode || !r->undo_armed) return;
    r->undo_lost_pkts -=
        ap->spurious_episode < r->undo_lost_pkts ? ap->spurious_episode : r->undo_lost_pkts;
    if (r->undo_lost_pkts) return;
    r->undo_armed = false;
    r->stats.undos++;
    if (r->cc && r->cc->ops && r->cc->ops->on_spurious_loss)
        r->cc->ops->on_spurious_loss(r->cc, now);
}

int qk_recovery_on_ack_received(qk_recovery *r, qk_pn_space space, const qk_ack_received *ack,
                                qk_time now)
{
    if ((unsigned)space >= QK_PN_SPACE_COUNT || !ack) return QK_ERR_INVALID_ARG;
    qk_recovery_space *sp = &r->sp[space];
    if (sp->discarded) return QK_ERR_STATE;
    int rc = validate_ack(sp, ack);
    if (rc) return rc;

    uint64_t largest = ack->ranges[0].largest;
    ack_pass ap = {0};
    ap.had_largest = sp->has_largest_acked;
    ap.prev_largest = sp->largest_acked;
    bool advanced = !sp->has_largest_acked || largest > sp->largest_acked;
    if (advanced) sp->largest_acked = largest;
    sp->has_largest_acked = true;

    ap.episode_first = r->undo_armed && r->undo_space == space ? r->undo_first_pn : UINT64_MAX;
    mark_acked(sp, ack, &ap);
    if (ap.reordered) r->reordering_seen = true;
    if (ap.spurious) on_spurious(r, &ap, now);
    if (!ap.newly) return 0;

    /* RFC 9002 §5.1: sample when the largest is newly acked and something
     * ack-eliciting was newly acked. */
    if (ap.largest && ap.any_ae && now >= ap.largest->time_sent) {
        /* RFC 9002 §5.3: Initial ACKs are not delayed by the peer. */
        qk_time delay = space == QK_PN_SPACE_INITIAL ? 0 : ack->ack_delay_ns;
        qk_rtt_update(r->rtt, now - ap.largest->time_sent, delay, r->cfg.max_ack_delay_ns,
                      r->handshake_confirmed, now);
    }
    process_ecn(r, sp, ack, &ap, advanced, now);

    loss_pass lp = {0};
    uint64_t lost_before = r->dlv.lost_bytes;
    detect_lost(r, space, now, &lp);
    if (lp.found) on_losses(r, &lp, now);
    qk_rate_sample rs = {.now = now};
    finish_acked(r, space, ack, &rs, now);
    advance_base(sp);
    rs.newly_lost_bytes = r->dlv.lost_bytes - lost_before;
    rate_generate(r, &rs);
    bw_max_update(r, &rs);
    r->last_rs = rs;
    qk_cc *cc = r->cc;
    if (rs.has_data && cc && cc->ops && cc->ops->on_rate_sample) {
        cc->ops->on_rate_sample(cc, &rs);
        if (cc->mark_app_limited) qk_recovery_mark_app_limited(r);
        cc->mark_app_limited = false;
    }

    /* RFC 9002 §A.7: reset the backoff unless the client is unsure the
     * server validated its address. */
    if (r->peer_address_validated) r->pto_count = 0;
    set_timer(r, now);
    return (int)(ap.newly > INT32_MAX ? INT32_MAX : ap.newly);
}

/* ---- timeout, RFC 9002 §A.9 ---------------------------------------------- */

int qk_recovery_on_timeout(qk_recovery *r, qk_time now, qk_recovery_timeout *out)
{
    if (!out) return QK_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (r->timer == QK_TIME_INFINITE || now < r->timer) return 0;
    qk_pn_space space = QK_PN_SPACE_INITIAL;
    if (earliest_loss_time(r, &space)) {
        loss_pass lp = {0};
        detect_lost(r, space, now, &lp);
        if (lp.found) on_losses(r, &lp, now);
        advance_base(&r->sp[space]);
        out->kind = QK_RECOVERY_TIMEOUT_LOSS;
        out->space = space;
        set_timer(r, now);
        return 0;
    }
    out->kind = QK_RECOVERY_TIMEOUT_PROBE;
    if (!any_ae_in_flight(r)) {
        /* RFC 9002 §6.2.2.1: client anti-deadlock probe. */
        out->space = r->have_handshake_keys ? QK_PN_SPACE_HANDSHAKE : QK_PN_SPACE_INITIAL;
        out->probe_pkts = 1;
    } else {
        pto_time_and_space(r, now, &out->space);
        out->probe_pkts = 2; /* RFC 9002 §6.2.4: up to two */
    }
    r->pto_count++; /* RFC 9002 §6.2.1: exponential backoff */
    r->stats.pto_count_total++;
    set_timer(r, now);
    return 0;
}

/* ---- discard and inputs -------------------------------------------------- */

int qk_recovery_discard_space(qk_recovery *r, qk_pn_space space, qk_time now)
{
    if ((unsigned)space >= QK_PN_SPACE_COUNT) return QK_ERR_INVALID_ARG;
    qk_recovery_space *sp = &r->sp[space];
    if (sp->discarded) return 0;
    /* RFC 9002 §6.4: remove in-flight bytes, not counted as lost. */
    r->bytes_in_flight -= sp->bytes_in_flight;
    space_free(sp);
    memset(sp, 0, sizeof *sp);
    qk_rangeset_init(&sp->lost, QK_RECOVERY_SET_RANGES);
    qk_rangeset_init(&sp->skipped, QK_RECOVERY_SET_RANGES);
    sp->discarded = true;
    r->pto_count = 0; /* RFC 9002 §A.11 */
    set_timer(r, now);
    return 0;
}

int qk_recovery_lose_all(qk_recovery *r, qk_pn_space space, qk_time now)
{
    if ((unsigned)space >= QK_PN_SPACE_COUNT) return QK_ERR_INVALID_ARG;
    qk_recovery_space *sp = &r->sp[space];
    for (uint64_t pn = sp->base_pn; sp->pkt_cap && pn < sp->next_pn; pn++) {
        qk_sent_packet *p = slot(sp, pn);
        if (p->pn != pn || p->state != SLOT_LIVE) continue;
        remove_from_flight(r, sp, p);
        set_add(&sp->lost, pn, pn + 1);
        p->state = SLOT_EMPTY;
        if (r->sink.on_lost) {
            copy_frames(r, sp, p);
            r->sink.on_lost(r->sink.ctx, space, p, r->scratch, p->n_frames);
        }
    }
    sp->loss_time = 0;
    set_timer(r, now);
    return 0;
}

void qk_recovery_set_handshake_confirmed(qk_recovery *r, qk_time now)
{
    r->handshake_confirmed = true;
    r->peer_address_validated = true; /* RFC 9002 §A.6: implied */
    set_timer(r, now);
}

void qk_recovery_set_peer_address_validated(qk_recovery *r, qk_time now)
{
    r->peer_address_validated = true;
    set_timer(r, now);
}

void qk_recovery_set_amplification_blocked(qk_recovery *r, bool blocked, qk_time now)
{
    r->amplification_blocked = blocked;
    set_timer(r, now);
}

void qk_recovery_set_have_handshake_keys(qk_recovery *r, bool have, qk_time now)
{
    r->have_handshake_keys = have;
    set_timer(r, now);
}

void qk_recovery_set_max_ack_delay(qk_recovery *r, qk_time max_ack_delay_ns, qk_time now)
{
    r->cfg.max_ack_delay_ns = max_ack_delay_ns;
    set_timer(r, now);
}

void qk_recovery_set_packet_threshold(qk_recovery *r, uint64_t pkts)
{
    r->cfg.packet_threshold = pkts ? pkts : QK_RECOVERY_PACKET_THRESHOLD;
}
