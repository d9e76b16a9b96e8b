/* SPDX-License-Identifier: MIT */
/* Congestion control: algorithm selection and the pieces every algorithm
 * shares (RFC 9002 §7). */
#include "transport/recovery/cc/cc.h"

#include <quack/quack.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

uint64_t qk_cc_initial_window(uint64_t max_datagram_bytes)
{
    /* RFC 9002 §7.2: min(10 * max_datagram_size, max(14720, 2 * max_datagram_size)) */
    uint64_t floor_bytes = 2 * max_datagram_bytes > 14720 ? 2 * max_datagram_bytes : 14720;
    uint64_t ten = 10 * max_datagram_bytes;
    return ten < floor_bytes ? ten : floor_bytes;
}

void qk_cc_reset_common(qk_cc *cc)
{
    cc->cwnd_bytes = qk_cc_initial_window(cc->max_datagram_bytes);
    cc->ssthresh_bytes = UINT64_MAX; /* RFC 9002 §7.3.1: slow start until a loss */
    cc->recovery_start_time = 0;
    cc->in_recovery = false;
    cc->state = QK_CC_SLOW_START;
    cc->pacing_rate_bytes_per_s = 0;
    cc->send_quantum_bytes = 0;
    cc->mark_app_limited = false;
    memset(&cc->u, 0, sizeof cc->u);
    memset(&cc->delivered, 0, sizeof cc->delivered);
}

void qk_cc_delivered_on_ack(qk_cc *cc, const qk_cc_ack *ack)
{
    qk_cc_delivered *d = &cc->delivered;
    if (ack->smoothed_rtt_ns) d->rtt_ns = ack->smoothed_rtt_ns;
    qk_time step = d->rtt_ns / QK_CC_DLV_STEPS;
    if (step == 0) step = 1;
    if (d->n == 0) d->first_ack_t = ack->now;
    if (d->n == 0 || ack->now >= d->snap[d->head].t + step) {
        d->head = d->n == 0 ? 0 : (d->head + 1) % QK_CC_DLV_SLOTS;
        if (d->n < QK_CC_DLV_SLOTS) d->n++;
        d->snap[d->head].t = ack->now;
        d->snap[d->head].total_bytes = d->total_bytes;
    }
    d->last_ack_t = ack->now;
    d->total_bytes += ack->bytes;
}

uint64_t qk_cc_delivered_last_rtt(const qk_cc *cc)
{
    const qk_cc_delivered *d = &cc->delivered;
    if (d->n == 0 || d->rtt_ns == 0 || d->last_ack_t < d->rtt_ns) return UINT64_MAX;
    qk_time from = d->last_ack_t - d->rtt_ns;
    uint32_t oldest = (d->head + QK_CC_DLV_SLOTS + 1 - d->n) % QK_CC_DLV_SLOTS;
    /* Not a whole round trip of history yet (or the ring is too short). */
    if (d->snap[oldest].t > from) return UINT64_MAX;
    /* The oldest snapshot taken at or after `from` (the newest one is, as
     * snapshots are 1/16 RTT apart): the acks since were within the RTT. */
    uint32_t i = d->head, pick = d->head;
    for (uint32_t k = 0; k < d->n && d->snap[i].t >= from; k++) {
        pick = i;
        i = (i + QK_CC_DLV_SLOTS - 1) % QK_CC_DLV_SLOTS;
    }
    return d->total_bytes - d->snap[pick].total_bytes;
}

bool qk_cc_early_loss(const qk_cc *cc, qk_time sent_time, bool is_ecn)
{
    if (is_ecn || cc->cwnd_bytes >= cc->ssthresh_bytes) return false;
    /* RFC 9002 A.7 processes an ACK's losses before its acked packets, so
     * the loss found by the very first ACK comes before any ack here; the
     * window is then still the initial one (only acks grow it). */
    if (cc->delivered.n == 0) return cc->cwnd_bytes <= qk_cc_initial_window(cc->max_datagram_bytes);
    return sent_time < cc->delivered.first_ack_t;
}

uint64_t qk_cc_reduction_base(const qk_cc *cc)
{
    if (cc->cwnd_bytes >= cc->ssthresh_bytes) return cc->cwnd_bytes;
    uint64_t dlv = qk_cc_delivered_last_rtt(cc);
    if (dlv == UINT64_MAX) return cc->cwnd_bytes;
    if (dlv < qk_cc_min_window(cc)) dlv = qk_cc_min_window(cc);
    return dlv < cc->cwnd_bytes ? dlv : cc->cwnd_bytes;
}

bool qk_cc_in_recovery_period(const qk_cc *cc, qk_time sent_time)
{
    /* RFC 9002 §7.3.2 / Appendix B.5: a packet sent before the start of the
     * current recovery period cannot start another one. congestion_events
     * guards the initial recovery_start_time of 0 (times may start at 0). */
    return cc->congestion_events > 0 && sent_time <= cc->recovery_start_time;
}

void qk_cc_persistent_recovery(qk_cc *cc, qk_time now)
{
    cc->recovery_start_time = now;
    cc->in_recovery = true;
    if (!cc->congestion_events) cc->congestion_events = 1; /* qk_cc_in_recovery_period */
}

void qk_cc_undo_recovery(qk_cc *cc, qk_time prev_recovery_start_time)
{
    cc->recovery_start_time = prev_recovery_start_time;
    cc->in_recovery = false;
    if (cc->congestion_events) cc->congestion_events--;
}

void qk_cc_update_state(qk_cc *cc, bool app_limited)
{
    if (cc->in_recovery)
        cc->state = QK_CC_RECOVERY;
    else if (app_limited)
        cc->state = QK_CC_APP_LIMITED;
    else if (cc->cwnd_bytes < cc->ssthresh_bytes)
        cc->state = QK_CC_SLOW_START;
    else
        cc->state = QK_CC_CONGESTION_AVOIDANCE;
}

int qk_cc_init(qk_cc *cc, qk_cc_algo algo, uint64_t max_datagram_bytes, qk_time now)
{
    const qk_cc_ops *ops;
    switch (algo) {
    case QK_CC_NEWRENO: ops = &qk_cc_newreno_ops; break;
    case QK_CC_CUBIC: ops = &qk_cc_cubic_ops; break;
    case QK_CC_DCTCP: ops = &qk_cc_dctcp_ops; break;
    case QK_CC_BBR: ops = &qk_cc_bbr_ops; break;
    case QK_CC_PRAGUE: ops = &qk_cc_prague_ops; break;
    case QK_CC_BBR_LT: ops = &qk_cc_bbr_lt_ops; break;
    default: return QK_ERR_INVALID_ARG;
    }
    /* RFC 9000 §14: every QUIC path carries at least 1200-byte datagrams;
     * the connection enforces that, except in the DNS-carrier profile
     * (qk_config.min_datagram_bytes, docs/dns.md), which goes down to 32. */
    if (max_datagram_bytes < 32) return QK_ERR_INVALID_ARG;
    memset(cc, 0, sizeof *cc);
    cc->ops = ops;
    cc->max_datagram_bytes = max_datagram_bytes;
    ops->reset(cc, now);
    return 0;
}

const char *qk_cc_algo_name(qk_cc_algo algo)
{
    switch (algo) {
    case QK_CC_NEWRENO: return "newreno";
    case QK_CC_CUBIC: return "cubic";
    case QK_CC_DCTCP: return "dctcp";
    case QK_CC_BBR: return "bbr";
    case QK_CC_PRAGUE: return "prague";
    case QK_CC_BBR_LT: return "bbr-lt";
    }
    return "unknown";
}

int qk_cc_algo_parse(const char *name)
{
    if (!name) return QK_ERR_INVALID_ARG;
    if (!strcasecmp(name, "reno") || !strcasecmp(name, "newreno")) return QK_CC_NEWRENO;
    if (!strcasecmp(name, "cubic")) return QK_CC_CUBIC;
    if (!strcasecmp(name, "dctcp")) return QK_CC_DCTCP;
    if (!strcasecmp(name, "bbr") || !strcasecmp(name, "bbr3")) return QK_CC_BBR;
    if (!strcasecmp(name, "prague")) return QK_CC_PRAGUE;
    if (!strcasecmp(name, "bbr-lt")) return QK_CC_BBR_LT;
    return QK_ERR_INVALID_ARG;
}

/* ---- public names (quack.h) ---- */

int qk_cc_kind_parse(const char *name, qk_cc_kind *out)
{
    int a = qk_cc_algo_parse(name);
    if (a < 0 || !out) return QK_ERR_INVALID_ARG;
    *out = (qk_cc_kind)a;
    return 0;
}

const char *qk_cc_kind_name(qk_cc_kind kind)
{
    return qk_cc_algo_name((qk_cc_algo)kind);
}

const char *qk_cc_kind_names(void)
{
    static char names[128];
    if (names[0]) return names;
    size_t n = 0;
    for (int a = 0; a < 16; a++) {
        const char *s = qk_cc_algo_name((qk_cc_algo)a);
        if (!strcmp(s, "unknown")) continue;
        int k = snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", s);
        if (k < 0 || (size_t)k >= sizeof names - n) break;
        n += (size_t)k;
    }
    return names;
}

void qk_cc_probe_get(const qk_cc *cc, qk_cc_probe *out)
{
    *out = (qk_cc_probe){.congestion_events = cc->congestion_events,
                         .cwnd_bytes = cc->cwnd_bytes,
                         .ssthresh_bytes = cc->ssthresh_bytes,
                         .max_datagram_bytes = cc->max_datagram_bytes,
                         .pacing_rate_bytes_per_s = cc->pacing_rate_bytes_per_s};
    if (cc->ops && cc->ops->probe) cc->ops->probe(cc, out);
}
