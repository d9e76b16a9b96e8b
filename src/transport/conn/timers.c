/* SPDX-License-Identifier: MIT */
/* The connection's timers: one table, each timer a row with its deadline
 * and what firing it does. qk_conn_next_timeout takes the earliest armed
 * deadline, qk_conn_on_timeout fires the due rows in table order. */
#include "transport/conn/conn.h"

#include <stdio.h>

qk_time qk_conn_pto_ns(const qk_conn *c)
{
    return qk_rtt_pto_ns(&c->rtt, c->have_peer_tp ? c->peer_tp.max_ack_delay_ms * QK_NS_PER_MS
                                                  : QK_ACK_DEFAULT_MAX_DELAY_NS);
}

void qk_conn_touch_idle(qk_conn *c, qk_time now)
{
    c->timers.last_rx_ns = now;
    if (!c->timers.idle_timeout_ns) return;
    /* RFC 9000 §10.1: at least 3 PTOs. */
    qk_time t = c->timers.idle_timeout_ns, pto3 = 3 * qk_conn_pto_ns(c);
    c->timers.idle_deadline = now + (t > pto3 ? t : pto3);
}

/* RFC 9000 §10.1.2: when a keep-alive PING is due (never while one is
 * already queued, so an unsendable PING cannot spin the timer). */
static qk_time keep_alive_deadline(const qk_conn *c)
{
    if (!c->timers.keep_alive_ns || !c->handshake_complete || c->state != QK_CONN_ESTABLISHED ||
        (c->pend & QK_PEND_PING))
        return QK_TIME_INFINITE;
    qk_time last = c->timers.last_rx_ns > c->timers.last_ack_eliciting_sent
                       ? c->timers.last_rx_ns
                       : c->timers.last_ack_eliciting_sent;
    return last + c->timers.keep_alive_ns;
}

/* Lost-feedback timing inputs of the current path. */
static qk_feedback_params feedback_params(const qk_conn *c)
{
    return (qk_feedback_params){
        .srtt_ns = c->rtt.smoothed_rtt_ns,
        .max_ack_delay_ns = c->have_peer_tp ? c->peer_tp.max_ack_delay_ms * QK_NS_PER_MS : 0,
        .pto_ns = qk_conn_pto_ns(c),
        /* Only a bypass drip can hide a dead path from the PTO/idle timers. */
        .failed_ns = c->bypass_limit ? c->cfg->path_failed_ns : 0};
}

static qk_time feedback_deadline(const qk_conn *c)
{
    if (!c->handshake_complete || c->state != QK_CONN_ESTABLISHED) return QK_TIME_INFINITE;
    qk_feedback_params fp = feedback_params(c);
    return qk_feedback_next_timeout(&c->fb, &fp);
}

void qk_conn_set_feedback_oracle(qk_conn *c, bool (*fn)(void *ctx, qk_time now), void *ctx)
{
    c->fb_oracle = fn;
    c->fb_oracle_ctx = ctx;
}

void qk_conn_feedback_on_ack(qk_conn *c, qk_time now)
{
    uint64_t out = 0;
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) out += c->rec.sp[s].ack_eliciting_in_flight;
    qk_feedback_on_ack(&c->fb, out > 0, now);
}

/* No ACK for about an RTT past when one was due: the path is
 * degraded (the controller's window stops growing, commit_packet); silent
 * past qk_config.path_failed_ns: it failed, the connection closes saying
 * so (a bypass drip keeps packets outstanding, so the RACK/PTO timers alone
 * would wait for the idle timeout). Returns true when it closed. */
static bool feedback_on_timeout(qk_conn *c, qk_time now)
{
    if (now < feedback_deadline(c)) return false;
    qk_feedback_params fp = feedback_params(c);
    qk_time since = c->fb.wait_since;
    qk_feedback_state st = qk_feedback_check(&c->fb, &fp, now);
    if (st == QK_FEEDBACK_DEGRADED) {
        c->stats.path_degraded_events++;
        qk_conn_push_event(c, &(qk_event){.type = QK_EV_PATH_DEGRADED, .conn = c});
        return false;
    }
    if (st != QK_FEEDBACK_FAILED) return false;
    c->stats.path_failed = 1;
    qk_conn_push_event(c, &(qk_event){.type = QK_EV_PATH_FAILED, .conn = c});
    /* Nothing reaches the peer: close silently, as the idle timeout would. */
    c->close.err = QK_ERR_TIMEOUT;
    snprintf(c->close.reason, sizeof c->close.reason, "path failed: no acknowledgement for %.0f ms",
             (double)(now - since) / 1e6);
    qk_conn_enter_closed(c, now);
    return true;
}

/* ---- the rows' deadlines and actions ---- */

static qk_time idle_deadline(const qk_conn *c)
{
    return c->timers.idle_deadline;
}

/* RFC 9000 §10.1: silently close. */
static bool idle_fire(qk_conn *c, qk_time now)
{
    c->close.err = QK_ERR_CLOSED;
    snprintf(c->close.reason, sizeof c->close.reason, "idle timeout");
    qk_conn_enter_closed(c, now);
    return true;
}

static qk_time handshake_deadline(const qk_conn *c)
{
    return c->timers.handshake_deadline;
}

static bool handshake_fire(qk_conn *c, qk_time now)
{
    if (c->handshake_complete) return false;
    c->close.err = QK_ERR_TIMEOUT; /* unvalidated or silent peer: no CLOSE */
    snprintf(c->close.reason, sizeof c->close.reason,
             "handshake timeout: not complete after %.1f s (%s)",
             (double)c->cfg->handshake_timeout_ns / 1e9,
             c->stats.pkts_received ? "the peer answered, then went silent"
                                    : "nothing received from the peer");
    c->stats.handshake_timeouts++;
    qk_conn_enter_closed(c, now);
    return true;
}

static qk_time close_deadline(const qk_conn *c)
{
    return c->timers.close_deadline;
}

/* RFC 9000 §10.2: the closing or draining period is over. */
static bool close_fire(qk_conn *c, qk_time now)
{
    qk_conn_enter_closed(c, now);
    return true;
}

static bool linger_fire(qk_conn *c, qk_time now)
{
    qk_cid_linger_expire(c, now); /* retired CIDs past their 3 PTO (cid.c) */
    return false;
}

static qk_time pacing_deadline(const qk_conn *c)
{
    return c->pacing_wait ? c->pacing_wait : QK_TIME_INFINITE;
}

static bool pacing_fire(qk_conn *c, qk_time now)
{
    (void)now;
    c->pacing_wait = 0;
    return false;
}

static bool keep_alive_fire(qk_conn *c, qk_time now)
{
    (void)now;
    c->pend |= QK_PEND_PING;
    return false;
}

static bool path_fire(qk_conn *c, qk_time now)
{
    qk_conn_path_on_timeout(c, now);
    return false;
}

/* Delayed ACKs of the spaces we can send in: qk_conn_send writes them. */
static qk_time ack_deadline(const qk_conn *c)
{
    qk_time t = QK_TIME_INFINITE;
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) {
        if (c->sp[s].discarded || !c->sp[s].has_tx) continue;
        qk_time a = qk_ack_deadline(&c->sp[s].ack);
        if (a < t) t = a;
    }
    return t;
}

static qk_time recovery_deadline(const qk_conn *c)
{
    return qk_recovery_next_timeout(&c->rec);
}

/* Loss detection or PTO (RFC 9002 §6). */
static bool recovery_fire(qk_conn *c, qk_time now)
{
    qk_recovery_timeout to;
    c->qlog.last = now; /* packet_lost records: the timer's time, not the last record's */
    int trc = qk_recovery_on_timeout(&c->rec, now, &to);
    qk_conn_apply_deferred(c, now);
    /* The reduction and the smaller bytes_in_flight, when they happen. */
    if (trc == 0 && to.kind == QK_RECOVERY_TIMEOUT_LOSS) qk_qlog_metrics(c, now);
    if (trc != 0 || to.kind != QK_RECOVERY_TIMEOUT_PROBE) return false;
    c->sp[to.space].probes += to.probe_pkts;
    c->stats.pto_count++;
    /* RFC 8899 §4.3: full-size packets that keep vanishing: a black hole. */
    if (qk_pmtud_on_pto(&c->pmtud, c->rec.pto_count, now)) qk_conn_set_mtu(c, c->pmtud.cur_bytes);
    /* RFC 9002 §6.2.4: a probe carries data when it can. In the handshake
     * spaces that is the unacknowledged CRYPTO data: a PING alone never
     * recovers a lost ClientHello (the server has no state to answer it with). */
    if (to.space != QK_PN_SPACE_APP) {
        qk_sendbuf *cb = &c->sp[to.space].crypto_send;
        if (cb->sent_off > cb->acked_off)
            qk_sendbuf_on_lost(cb, cb->acked_off, (size_t)(cb->sent_off - cb->acked_off), false);
    }
    return false;
}

static bool feedback_fire(qk_conn *c, qk_time now)
{
    return feedback_on_timeout(c, now);
}

/* ---- the table ---- */

/* When a row counts: armed (its deadline is a candidate for the next
 * timeout) and fired, while the connection is open (handshake or
 * established) or closing/draining. */
enum {
    ARM_OPEN = 1 << 0,
    FIRE_OPEN = 1 << 1,
    ARM_CLOSING = 1 << 2,
    FIRE_CLOSING = 1 << 3,
    OPEN = ARM_OPEN | FIRE_OPEN,
};

typedef struct conn_timer {
    const char *name;
    qk_time (*deadline)(const qk_conn *c); /* QK_TIME_INFINITE: not armed */
    /* NULL: nothing to do here (qk_conn_send acts on it). Returns true when
     * the connection closed: the rows after it do not run. */
    bool (*fire)(qk_conn *c, qk_time now);
    unsigned when;
} conn_timer;

/* In firing order. A row sees what the rows before it did (the path row
 * runs after keep-alive queued its PING, recovery last). Retired CIDs keep
 * expiring while closing, but only the close deadline wakes a closing
 * connection (RFC 9000 §10.2: nothing else is sent or timed). */
static const conn_timer conn_timers[] = {
    {"linger", qk_cid_linger_deadline, linger_fire, OPEN | FIRE_CLOSING},
    {"close", close_deadline, close_fire, ARM_CLOSING | FIRE_CLOSING},
    {"idle", idle_deadline, idle_fire, OPEN},
    {"handshake", handshake_deadline, handshake_fire, OPEN},
    {"feedback", feedback_deadline, feedback_fire, OPEN},
    {"pacing", pacing_deadline, pacing_fire, OPEN},
    {"keep_alive", keep_alive_deadline, keep_alive_fire, OPEN},
    {"path", qk_conn_path_next_timeout, path_fire, OPEN},
    {"recovery", recovery_deadline, recovery_fire, OPEN},
    {"ack", ack_deadline, NULL, OPEN},
};

#define N_CONN_TIMERS (sizeof conn_timers / sizeof conn_timers[0])

qk_time qk_conn_next_timeout(const qk_conn *c)
{
    if (c->state == QK_CONN_CLOSED) return 0; /* let the endpoint reap it */
    unsigned mask = c->state >= QK_CONN_CLOSING ? ARM_CLOSING : ARM_OPEN;
    qk_time t = QK_TIME_INFINITE;
    for (size_t i = 0; i < N_CONN_TIMERS; i++) {
        if (!(conn_timers[i].when & mask)) continue;
        qk_time d = conn_timers[i].deadline(c);
        if (d < t) t = d;
    }
    return t;
}

void qk_conn_on_timeout(qk_conn *c, qk_time now)
{
    if (c->state == QK_CONN_CLOSED) return;
    unsigned mask = c->state >= QK_CONN_CLOSING ? FIRE_CLOSING : FIRE_OPEN;
    for (size_t i = 0; i < N_CONN_TIMERS; i++) {
        const conn_timer *row = &conn_timers[i];
        if (!(row->when & mask) || !row->fire || now < row->deadline(c)) continue;
        if (row->fire(c, now)) return;
    }
}
