/* SPDX-License-Identifier: MIT */
/* Token-bucket pacer, RFC 9002 §7.7. Integer arithmetic with a carried
 * remainder so the long-run rate is exact (no drift). */
#include "transport/recovery/pacer.h"

typedef unsigned __int128 qk_u128;

void qk_pacer_init(qk_pacer *p, uint64_t burst_pkts)
{
    *p = (qk_pacer){0};
    p->burst_pkts = burst_pkts ? burst_pkts : QK_PACER_DEFAULT_BURST_PKTS;
    p->gain_ca_pct = QK_PACER_GAIN_CA_PCT;
    p->late_max_ns = QK_PACER_MAX_LATE_NS;
}

void qk_pacer_set_late_max(qk_pacer *p, qk_time late_max_ns)
{
    p->late_max_ns = late_max_ns;
}

void qk_pacer_set_gain_ca(qk_pacer *p, uint64_t gain_pct)
{
    p->gain_ca_pct = gain_pct < 100 ? 100 : gain_pct;
}

void qk_pacer_set_burst_interval(qk_pacer *p, qk_time interval_ns, uint64_t max_burst_bytes)
{
    p->burst_interval_ns = interval_ns;
    p->max_burst_bytes = max_burst_bytes;
}

/* The bucket depth: burst_pkts datagrams, or what the current rate earns in
 * the burst interval when that is more (capped). */
static uint64_t quantum_for(const qk_pacer *p, uint64_t max_datagram_bytes)
{
    uint64_t q = p->burst_pkts * max_datagram_bytes;
    if (!p->burst_interval_ns || !p->rate_den || p->max_burst_bytes <= q) return q;
    qk_u128 earned = (qk_u128)p->burst_interval_ns * p->rate_num / p->rate_den;
    if (earned > p->max_burst_bytes) earned = p->max_burst_bytes;
    return earned > q ? (uint64_t)earned : q;
}

void qk_pacer_set_window_limited(qk_pacer *p, bool window_limited)
{
    p->window_limited = window_limited;
}

void qk_pacer_set_slow_start(qk_pacer *p, bool slow_start)
{
    p->slow_start = slow_start;
}

/* Add the tokens earned between last_ns and now at the current rate. */
static void refill(qk_pacer *p, qk_time now)
{
    if (now <= p->last_ns) return;
    qk_time dt = now - p->last_ns;
    p->last_ns = now;
    if (p->rate_den == 0) { /* not pacing: the bucket stays full */
        p->late_bytes = 0;
        p->tokens_bytes = (int64_t)p->quantum_bytes;
        p->frac = 0;
        return;
    }
    int64_t cap = (int64_t)(p->quantum_bytes + p->late_bytes);
    if (p->tokens_bytes >= cap) {
        p->frac = 0;
        return;
    }
    qk_u128 num = (qk_u128)dt * p->rate_num + p->frac;
    qk_u128 add = num / p->rate_den;
    uint64_t room = (uint64_t)(cap - p->tokens_bytes);
    if (add >= room) { /* bucket full: the excess is not saved up */
        p->tokens_bytes = cap;
        p->frac = 0;
    } else {
        p->tokens_bytes += (int64_t)add;
        p->frac = (uint64_t)(num % p->rate_den);
    }
}

/* The caller was told to wait until wake_ns and comes back at now: what the
 * current rate earned in the lateness (at most QK_PACER_MAX_LATE_NS) may go
 * on top of the quantum (QK_PACER_MAX_LATE_NS). */
static void note_lateness(qk_pacer *p, qk_time now)
{
    if (p->wake_ns && now > p->wake_ns && p->rate_den) {
        qk_time late = now - p->wake_ns;
        if (late > p->late_max_ns) late = p->late_max_ns;
        p->late_bytes = (uint64_t)((qk_u128)late * p->rate_num / p->rate_den);
    }
    p->wake_ns = 0;
}

/* Clip the bucket to the quantum (plus a lateness allowance still unspent). */
static void clip_tokens(qk_pacer *p)
{
    int64_t cap = (int64_t)(p->quantum_bytes + p->late_bytes);
    if (p->tokens_bytes > cap) p->tokens_bytes = cap;
}

/* A wait is due: remember when it ends, to notice a late return. */
static qk_time wait_until(qk_pacer *p, qk_time t)
{
    p->wake_ns = t;
    return t;
}

qk_time qk_pacer_next_send_time(qk_pacer *p, qk_time now, uint64_t cwnd_bytes, qk_time srtt_ns,
                                uint64_t max_datagram_bytes)
{
    if (!p->started) {
        p->started = true;
        p->last_ns = now;
        p->quantum_bytes = p->burst_pkts * max_datagram_bytes;
        p->tokens_bytes = (int64_t)p->quantum_bytes; /* the first burst may go at once */
    }
    note_lateness(p, now);
    refill(p, now); /* at the rate in force until now */
    if (srtt_ns == 0 || cwnd_bytes == 0) {
        p->rate_num = p->rate_den = 0; /* no RTT yet: do not pace */
        p->quantum_bytes = p->burst_pkts * max_datagram_bytes;
        if (p->tokens_bytes > (int64_t)p->quantum_bytes)
            p->tokens_bytes = (int64_t)p->quantum_bytes;
        return now;
    }
    /* RFC 9002 §7.7: rate = N * cwnd / smoothed_rtt, in bytes per ns as
     * (gain_pct * cwnd) / (100 * srtt). */
    uint64_t gain = p->gain_ca_pct;
    if (p->slow_start)
        gain = QK_PACER_GAIN_SS_PCT;
    else if (!p->window_limited && gain < QK_PACER_GAIN_SLACK_PCT)
        gain = QK_PACER_GAIN_SLACK_PCT;
    uint64_t num = gain * cwnd_bytes, den = 100 * srtt_ns;
    if (num != p->rate_num || den != p->rate_den) {
        /* Keep the fractional byte: rescale the remainder to the new base. */
        p->frac = p->rate_den ? (uint64_t)((qk_u128)p->frac * den / p->rate_den) : 0;
        p->rate_num = num;
        p->rate_den = den;
    }
    p->quantum_bytes = quantum_for(p, max_datagram_bytes);
    clip_tokens(p);
    if (p->tokens_bytes >= (int64_t)max_datagram_bytes) return now;
    uint64_t need = (uint64_t)((int64_t)max_datagram_bytes - p->tokens_bytes);
    /* Smallest wait w with (w * num + frac) / den >= need. */
    qk_u128 target = (qk_u128)need * den - p->frac;
    qk_u128 wait = (target + num - 1) / num;
    return wait_until(p, now + (qk_time)wait);
}

/* Switch to rate num/den bytes per ns, keeping the fractional byte. */
static void set_rate(qk_pacer *p, uint64_t num, uint64_t den)
{
    if (num == p->rate_num && den == p->rate_den) return;
    p->frac = p->rate_den ? (uint64_t)((qk_u128)p->frac * den / p->rate_den) : 0;
    p->rate_num = num;
    p->rate_den = den;
}

/* Tokens permitting, now; else when a full packet's worth exists. */
static qk_time wait_for_packet(qk_pacer *p, qk_time now, uint64_t max_datagram_bytes)
{
    if (p->tokens_bytes >= (int64_t)max_datagram_bytes) return now;
    uint64_t need = (uint64_t)((int64_t)max_datagram_bytes - p->tokens_bytes);
    qk_u128 target = (qk_u128)need * p->rate_den - p->frac;
    qk_u128 wait = (target + p->rate_num - 1) / p->rate_num;
    return wait_until(p, now + (qk_time)wait);
}

qk_time qk_pacer_next_send_time_rate(qk_pacer *p, qk_time now, uint64_t rate_bytes_per_s,
                                     uint64_t quantum_bytes, uint64_t max_datagram_bytes)
{
    if (!p->started) {
        p->started = true;
        p->last_ns = now;
        p->quantum_bytes = p->burst_pkts * max_datagram_bytes;
        p->tokens_bytes = (int64_t)p->quantum_bytes;
    }
    note_lateness(p, now);
    refill(p, now);
    uint64_t floor_bytes = p->burst_pkts * max_datagram_bytes;
    p->quantum_bytes = quantum_bytes > floor_bytes ? quantum_bytes : floor_bytes;
    clip_tokens(p);
    if (rate_bytes_per_s == 0) {
        p->rate_num = p->rate_den = 0;
        return now;
    }
    set_rate(p, rate_bytes_per_s, QK_NS_PER_S); /* bytes per ns as num / den */
    return wait_for_packet(p, now, max_datagram_bytes);
}

qk_time qk_pacer_next_send_time_cc(qk_pacer *p, qk_time now, const qk_cc *cc, qk_time srtt_ns)
{
    if (cc->pacing_rate_bytes_per_s)
        return qk_pacer_next_send_time_rate(p, now, cc->pacing_rate_bytes_per_s,
                                            cc->send_quantum_bytes, cc->max_datagram_bytes);
    p->slow_start = qk_cc_in_slow_start(cc);
    return qk_pacer_next_send_time(p, now, cc->cwnd_bytes, srtt_ns, cc->max_datagram_bytes);
}

void qk_pacer_on_sent(qk_pacer *p, uint64_t bytes, qk_time now)
{
    refill(p, now);
    if (p->rate_den == 0) return; /* not pacing */
    int64_t floor_bytes = -(int64_t)p->quantum_bytes;
    int64_t t = p->tokens_bytes - (int64_t)bytes;
    p->tokens_bytes = t < floor_bytes ? floor_bytes : t;
    if (p->tokens_bytes <= (int64_t)p->quantum_bytes) p->late_bytes = 0; /* allowance spent */
}

void qk_pacer_on_idle(qk_pacer *p)
{
    p->wake_ns = 0;
}

uint64_t qk_pacer_quantum_bytes(const qk_pacer *p)
{
    return p->quantum_bytes;
}

uint64_t qk_pacer_rate_bytes_per_s(const qk_pacer *p)
{
    if (p->rate_den == 0) return 0;
    return (uint64_t)((qk_u128)p->rate_num * QK_NS_PER_S / p->rate_den);
}

uint64_t qk_pacer_pkts_after(const qk_pacer *p, uint64_t bytes, uint64_t max_datagram_bytes)
{
    if (p->rate_den == 0) return UINT64_MAX;
    int64_t left = p->tokens_bytes - (int64_t)bytes;
    if (left < (int64_t)max_datagram_bytes || !max_datagram_bytes) return 0;
    /* A packet may go while the bucket holds at least one datagram's worth. */
    return (uint64_t)left / max_datagram_bytes;
}

void qk_pacer_set_burst_pkts(qk_pacer *p, uint64_t burst_pkts)
{
    p->burst_pkts = burst_pkts ? burst_pkts : QK_PACER_DEFAULT_BURST_PKTS;
}
