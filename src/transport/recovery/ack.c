/* SPDX-License-Identifier: MIT */
/* Receiver-side ACK tracking and the decision of when to acknowledge:
 * RFC 9000 §13.2 and draft-ietf-quic-ack-frequency-12 §6. */
#include "transport/recovery/ack.h"

#include <string.h>

void qk_ack_policy_default(qk_ack_policy *p)
{
    p->ack_eliciting_threshold = 1; /* RFC 9000 §13.2.2: every second packet */
    p->max_ack_delay_ns = QK_ACK_DEFAULT_MAX_DELAY_NS;
    p->reordering_threshold = 1; /* RFC 9000 §13.2.1 behaviour */
    p->ce_immediate = true;
    p->ecn_ack_bug = false;
}

int qk_ack_tracker_init(qk_ack_tracker *t, qk_pn_space space, const qk_ack_policy *policy,
                        size_t max_ranges)
{
    if ((unsigned)space >= QK_PN_SPACE_COUNT) return QK_ERR_INVALID_ARG;
    memset(t, 0, sizeof *t);
    t->space = space;
    if (policy)
        t->policy = *policy;
    else
        qk_ack_policy_default(&t->policy);
    qk_rangeset_init(&t->received, max_ranges ? max_ranges : QK_ACK_DEFAULT_MAX_RANGES);
    return 0;
}

void qk_ack_tracker_free(qk_ack_tracker *t)
{
    qk_rangeset_free(&t->received);
}

void qk_ack_tracker_set_policy(qk_ack_tracker *t, const qk_ack_policy *p)
{
    t->policy = *p;
}

void qk_ack_tracker_set_idle(qk_ack_tracker *t, qk_time idle_ack_ns)
{
    t->idle_ack_ns = idle_ack_ns;
}

/* The pending record new arrivals belong to. */
static qk_ack_pending *arrivals(qk_ack_tracker *t)
{
    return t->built ? &t->post : &t->cur;
}

static void demand(qk_ack_pending *p, uint32_t why, qk_time now)
{
    if (!p->why) p->why_time = now;
    p->why |= why;
}

/* Smallest pn >= from that was not received. */
static uint64_t smallest_missing(const qk_rangeset *s, uint64_t from)
{
    size_t i = qk_rangeset_lower_bound(s, from);
    if (i < s->n && s->r[i].start <= from) return s->r[i].end;
    return from;
}

/*
 * ack-frequency-12 §6.2, parametrised by the Reordering Threshold k. Called
 * after pn (ack-eliciting) was recorded and largest_ae_pn updated.
 * Largest Unacked = largest_ae_pn; Largest Acked = largest_acked;
 * Largest Reported Missing = Largest Acked - k; Unreported Missing = pns in
 * (Largest Reported Missing, Largest Unacked) not received.
 * With k == 1 this is RFC 9000 §13.2.1: a gap below a new largest, or a pn
 * below one already received.
 */
static bool reordered(const qk_ack_tracker *t, uint64_t pn, bool had_ae, uint64_t prev_ae)
{
    uint64_t k = t->policy.reordering_threshold;
    if (k == 0) return false; /* ack-frequency-12 §6.2: ignore reordering */
    /* RFC 9000 §13.2.1: pn lower than an ack-eliciting packet already received. */
    if (k == 1 && had_ae && pn < prev_ae) return true;
    /* Condition 2: pn <= Largest Acked - k (the sender may already call it lost). */
    if (t->has_largest_acked && t->largest_acked >= k && pn <= t->largest_acked - k) return true;
    /* Condition 1: Largest Unacked - smallest Unreported Missing >= k. */
    uint64_t from = 0;
    if (t->has_largest_acked && t->largest_acked >= k) from = t->largest_acked - k + 1;
    if (from < t->floor_pn) from = t->floor_pn;
    /* Below the first pn we ever tracked nothing counts as missing. */
    uint64_t lo = qk_rangeset_min(&t->received);
    if (from < lo) from = lo;
    uint64_t m = smallest_missing(&t->received, from);
    uint64_t lu = t->largest_ae_pn;
    return m < lu && lu - m >= k;
}

/* Record pn, dropping the oldest ranges when the set is full. Returns 1 if pn
 * must be treated as a duplicate, 0 if recorded, or an error. */
static int record(qk_ack_tracker *t, uint64_t pn)
{
    for (;;) {
        int rc = qk_rangeset_add(&t->received, pn, pn + 1);
        if (rc >= 0) return 0;
        if (rc != QK_ERR_LIMIT) return rc;
        /* Older than everything kept: refuse it rather than forget newer ranges. */
        if (pn < t->received.r[0].start) return 1;
        /* Full: forget the lowest range; everything below its end now counts
         * as received (RFC 9000 §12.3: discard unless certain it is new). */
        t->floor_pn = t->received.r[0].end;
        qk_rangeset_remove_below(&t->received, t->floor_pn);
        t->stats.ranges_dropped++;
        if (pn < t->floor_pn) return 1;
    }
}

static size_t gap_of(const qk_ack_tracker *t, uint64_t pn)
{
    for (size_t i = 0; i < t->n_gaps; i++)
        if (pn >= t->gaps[i].start && pn < t->gaps[i].end) return i;
    return SIZE_MAX;
}

/* Remember [start, end) as never received; the oldest gap goes when full. */
static void gap_push(qk_ack_tracker *t, uint64_t start, uint64_t end)
{
    if (start >= end) return;
    if (t->n_gaps == QK_ACK_MAX_GAPS) {
        memmove(t->gaps, t->gaps + 1, (QK_ACK_MAX_GAPS - 1) * sizeof *t->gaps);
        t->n_gaps--;
    }
    t->gaps[t->n_gaps++] = (qk_range){start, end};
}

/* pn of gap i arrived: it is no longer missing. */
static void gap_take(qk_ack_tracker *t, size_t i, uint64_t pn)
{
    qk_range g = t->gaps[i];
    memmove(t->gaps + i, t->gaps + i + 1, (t->n_gaps - i - 1) * sizeof *t->gaps);
    t->n_gaps--;
    gap_push(t, g.start, pn);
    gap_push(t, pn + 1, g.end);
}

bool qk_ack_is_duplicate(const qk_ack_tracker *t, uint64_t pn)
{
    if (qk_rangeset_contains(&t->received, pn)) return true;
    return pn < t->floor_pn && gap_of(t, pn) == SIZE_MAX;
}

int qk_ack_on_packet_received(qk_ack_tracker *t, uint64_t pn, bool ack_eliciting, uint8_t ecn,
                              qk_time now)
{
    if (qk_ack_is_duplicate(t, pn)) {
        t->stats.duplicates++; /* RFC 9000 §12.3 */
        return 1;
    }
    int rc = record(t, pn);
    if (rc < 0) return rc;
    if (rc == 1) {
        t->stats.duplicates++;
        return 1;
    }
    size_t g = pn < t->floor_pn ? gap_of(t, pn) : SIZE_MAX;
    if (g != SIZE_MAX) gap_take(t, g, pn); /* a late packet into a gap: new, reported */
    t->stats.packets_received++;
    t->bug_armed = false; /* a later arrival: the bug's ACK would cover it */
    uint64_t prior_ect0 = t->ecn_ect0, prior_ect1 = t->ecn_ect1, prior_ce = t->ecn_ce;
    /* RFC 9000 §13.4.1: count ECN codepoints of every new packet. */
    bool ce = (ecn & 3) == QK_ECN_CE;
    switch (ecn & 3) {
    case QK_ECN_ECT0: t->ecn_ect0++; break;
    case QK_ECN_ECT1: t->ecn_ect1++; break;
    case QK_ECN_CE: t->ecn_ce++; break;
    default: break;
    }
    if (!t->has_largest || pn > t->largest_pn) {
        t->has_largest = true;
        t->largest_pn = pn;
        t->largest_recv_time = now; /* RFC 9000 §13.2.5: ACK Delay reference */
    }
    qk_ack_pending *p = arrivals(t);
    p->any_new = true;
    bool prev_ce = t->last_was_ce;
    t->last_was_ce = ce;
    /* RFC 9000 §13.2.1: non-ack-eliciting packets never trigger an ACK alone. */
    if (!ack_eliciting) return 0;
    if (t->policy.ecn_ack_bug && ce != prev_ce && !t->built && t->cur.ae_pkts &&
        t->largest_pn == pn && qk_rangeset_min(&t->received) < pn) {
        /* Seed 003's bug, on purpose: ACK the prior state now and forget pn. */
        t->bug_armed = true;
        t->bug_pn = pn;
        t->bug_ect0 = prior_ect0;
        t->bug_ect1 = prior_ect1;
        t->bug_ce = prior_ce;
        demand(&t->cur, QK_ACK_WHY_CE, now);
        if (!t->has_largest_ae || pn > t->largest_ae_pn) t->largest_ae_pn = pn;
        t->has_largest_ae = true;
        return 0;
    }

    if (p->ae_pkts++ == 0) p->first_time = now;
    bool had_ae = t->has_largest_ae;
    uint64_t prev_ae = t->largest_ae_pn;
    if (!had_ae || pn > prev_ae) {
        t->has_largest_ae = true;
        t->largest_ae_pn = pn;
    }
    /* ack-frequency-12 §6: after a long idle period (no ACK sent for more
     * than a smoothed RTT) the first ack-eliciting packet is acknowledged
     * soon, so the sender's RTT and loss state is refreshed. */
    if (t->idle_ack_ns && t->has_sent_ack && p->ae_pkts == 1 && now > t->last_ack_sent_ns &&
        now - t->last_ack_sent_ns > t->idle_ack_ns)
        demand(p, QK_ACK_WHY_IDLE, now);
    /* RFC 9000 §13.2.1: Initial and Handshake packets are acknowledged at once. */
    if (t->space != QK_PN_SPACE_APP) demand(p, QK_ACK_WHY_HANDSHAKE, now);
    /* RFC 9000 §13.2.2 / ack-frequency-12 §6: more than the threshold. */
    if (p->ae_pkts > t->policy.ack_eliciting_threshold) demand(p, QK_ACK_WHY_THRESHOLD, now);
    if (reordered(t, pn, had_ae, prev_ae)) demand(p, QK_ACK_WHY_REORDER, now);
    /* RFC 9000 §13.2.1: CE at once; ack-frequency-12 §6.3: with a threshold
     * above 1 only when the previous packet was not CE. */
    if (ce && t->policy.ce_immediate && (t->policy.ack_eliciting_threshold <= 1 || !prev_ce))
        demand(p, QK_ACK_WHY_CE, now);
    return 0;
}

void qk_ack_on_immediate_ack_frame(qk_ack_tracker *t, qk_time now)
{
    /* ack-frequency-12 §5: IMMEDIATE_ACK asks for an ACK without delay. */
    demand(arrivals(t), QK_ACK_WHY_FRAME, now);
}

static qk_time pending_deadline(const qk_ack_pending *p, qk_time max_ack_delay_ns)
{
    if (p->why) return p->why_time;
    if (p->ae_pkts) return p->first_time + max_ack_delay_ns;
    return QK_TIME_INFINITE;
}

qk_time qk_ack_deadline(const qk_ack_tracker *t)
{
    qk_time d = pending_deadline(&t->cur, t->policy.max_ack_delay_ns);
    if (t->built) {
        qk_time d2 = pending_deadline(&t->post, t->policy.max_ack_delay_ns);
        if (d2 < d) d = d2;
    }
    return d;
}

bool qk_ack_should_ack_now(const qk_ack_tracker *t, qk_time now)
{
    return qk_ack_deadline(t) <= now;
}

bool qk_ack_has_new(const qk_ack_tracker *t)
{
    return t->cur.any_new || (t->built && t->post.any_new);
}

uint32_t qk_ack_immediate_reasons(const qk_ack_tracker *t)
{
    return t->cur.why | (t->built ? t->post.why : 0);
}

/* Fold b into a (both become owed by the same ACK). */
static void merge(qk_ack_pending *a, const qk_ack_pending *b)
{
    if (b->ae_pkts && (!a->ae_pkts || b->first_time < a->first_time)) a->first_time = b->first_time;
    a->ae_pkts += b->ae_pkts;
    a->any_new |= b->any_new;
    if (b->why && (!a->why || b->why_time < a->why_time)) a->why_time = b->why_time;
    a->why |= b->why;
}

/* policy.ecn_ack_bug: report what arrived before bug_pn, with the counts
 * before it (pn is the newest pn, at the top of the last range). */
static void bug_prior_ack(qk_ack_tracker *t, qk_ack_frame_info *out)
{
    size_t n = out->n_ranges;
    memcpy(t->bug_ranges, out->ranges, n * sizeof *out->ranges);
    if (t->bug_ranges[n - 1].start + 1 >= t->bug_ranges[n - 1].end)
        n--;
    else
        t->bug_ranges[n - 1].end = t->bug_pn;
    if (n == 0) return; /* nothing before pn was kept: report normally */
    out->ranges = t->bug_ranges;
    out->n_ranges = n;
    out->largest = t->bug_ranges[n - 1].end - 1;
    out->ack_delay_ns = 0;
    out->ack_delay = 0;
    out->ect0 = t->bug_ect0;
    out->ect1 = t->bug_ect1;
    out->ce = t->bug_ce;
}

int qk_ack_build(qk_ack_tracker *t, qk_time now, uint8_t ack_delay_exponent, qk_ack_frame_info *out)
{
    if (ack_delay_exponent > 20) return QK_ERR_INVALID_ARG; /* RFC 9000 §18.2 */
    if (qk_rangeset_empty(&t->received)) return QK_ERR_AGAIN;
    if (t->built) { /* rebuilt before sending: this ACK covers both */
        merge(&t->cur, &t->post);
        memset(&t->post, 0, sizeof t->post);
    }
    memset(out, 0, sizeof *out);
    out->largest = qk_rangeset_max(&t->received);
    qk_time delay = 0;
    if (out->largest == t->largest_pn && now > t->largest_recv_time)
        delay = now - t->largest_recv_time;
    out->ack_delay_ns = delay;
    /* RFC 9000 §19.3: microseconds scaled down by 2^ack_delay_exponent. */
    out->ack_delay = (delay / QK_NS_PER_US) >> ack_delay_exponent;
    /* RFC 9000 §13.2.3: a receiver limits the ranges it reports; the newest
     * ones matter (older ones were in earlier ACKs). Without a cap every ACK
     * after a burst of losses repeats ~100 ranges (400-byte ACK-only packets)
     * until an ACK of the ACK arrives: 8% of the ACK bytes on a 1 Mbit/s
     * return path in experiment 3. */
    size_t n = t->received.n;
    size_t keep = n > QK_ACK_MAX_FRAME_RANGES ? QK_ACK_MAX_FRAME_RANGES : n;
    out->ranges = t->received.r + (n - keep);
    out->n_ranges = keep;
    out->ect0 = t->ecn_ect0;
    out->ect1 = t->ecn_ect1;
    out->ce = t->ecn_ce;
    /* RFC 9000 §19.3.2: ACK_ECN once any ECN-marked packet was seen. */
    out->ecn = (t->ecn_ect0 | t->ecn_ect1 | t->ecn_ce) != 0;
    if (t->bug_armed) bug_prior_ack(t, out);
    t->built = true;
    t->built_largest = out->largest;
    return 0;
}

int qk_ack_on_ack_sent(qk_ack_tracker *t, qk_time now)
{
    if (!t->built) return QK_ERR_STATE;
    t->stats.acks_sent++;
    if (t->cur.why)
        t->stats.immediate_acks++;
    else if (t->cur.ae_pkts && now >= t->cur.first_time + t->policy.max_ack_delay_ns)
        t->stats.delayed_acks++;
    /* ack-frequency-12 §6.2: Largest Acked is what the sent ACK reported. */
    if (!t->has_largest_acked || t->built_largest > t->largest_acked)
        t->largest_acked = t->built_largest;
    t->has_largest_acked = true;
    t->has_sent_ack = true;
    t->last_ack_sent_ns = now;
    /* ack-frequency-12 §6: every ACK resets counters and timer, but only for
     * what it covered; later arrivals keep their own obligation. */
    t->cur = t->post;
    memset(&t->post, 0, sizeof t->post);
    t->built = false;
    t->bug_armed = false;
    return 0;
}

void qk_ack_on_ack_frame_acked(qk_ack_tracker *t, uint64_t largest)
{
    /* RFC 9000 §13.2.4: the peer has seen every range up to largest; stop
     * reporting below it. Keep largest itself so an ACK stays buildable. */
    if (largest <= t->floor_pn) return;
    if (t->has_largest && largest > t->largest_pn) largest = t->largest_pn;
    /* RFC 9000 §12.3 only asks that no packet be processed twice: the pns
     * below largest that never arrived stay acceptable (a probe steered
     * between threads or sockets can arrive after the ACK of the ACK). */
    uint64_t cur = t->floor_pn;
    for (size_t i = 0; i < t->received.n && t->received.r[i].start < largest; i++) {
        if (t->received.r[i].end <= cur) continue;
        gap_push(t, cur, t->received.r[i].start);
        cur = t->received.r[i].end;
    }
    gap_push(t, cur, largest);
    qk_rangeset_remove_below(&t->received, largest);
    if (largest > t->floor_pn) t->floor_pn = largest;
}
