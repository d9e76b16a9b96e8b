/* SPDX-License-Identifier: MIT */
/* Link model: queue, AQM, loss, serializer and propagation of one direction. */
#include "sim/link.h"
#include "sim/aqm.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"

/* qk_sim_link_cfg crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with blackhole_end_ns. */
#define LINK_CFG_V1_BYTES QK_ABI_END(qk_sim_link_cfg, blackhole_end_ns)
QK_ABI_LAST_FIELD(qk_sim_link_cfg, blackhole_end_ns);

int qk_sim_link_cfg_import(qk_sim_link_cfg *dst, const qk_sim_link_cfg *caller, size_t caller_bytes)
{
    memset(dst, 0, sizeof *dst);
    return qk_abi_copy_in(dst, sizeof *dst, caller, caller_bytes, LINK_CFG_V1_BYTES);
}

/* ---- configuration ---- */

static int link_cfg_check(const qk_sim_link_cfg *c, const char **why)
{
    const char *w = NULL;
    double probs[] = {c->reorder_p,    c->red_max_p,   c->loss_p, c->ge_p_gb,  c->ge_p_bg,
                      c->ge_loss_good, c->ge_loss_bad, c->dup_p,  c->corrupt_p};
    for (size_t i = 0; i < sizeof probs / sizeof probs[0]; i++)
        if (!(probs[i] >= 0 && probs[i] <= 1)) w = "probabilities must be within [0, 1]";
    if (c->aqm == QK_SIM_AQM_DUALPI2 &&
        (c->dualpi2_alpha < 0 || c->dualpi2_beta < 0 || c->dualpi2_k < 0))
        w = "dualpi2 gains and coupling factor must be positive";
    if (c->aqm == QK_SIM_AQM_STEP && !c->step_k_pkts && !c->step_k_ns)
        w = "aqm step needs step_k (packets, e.g. 20pkt, or time, e.g. 1ms)";
    if (c->aqm == QK_SIM_AQM_RED &&
        (c->red_max_bytes <= c->red_min_bytes || c->red_max_p <= 0 || c->red_wq < 0))
        w = "aqm red needs red_min < red_max and red_max_p > 0";
    if (c->loss == QK_SIM_LOSS_GE && (c->ge_p_gb <= 0 || c->ge_p_bg <= 0))
        w = "Gilbert-Elliott needs ge_p_gb > 0 and ge_p_bg > 0";
    if (c->suspend_ns && c->suspend_count != 1 && c->suspend_period_ns <= c->suspend_ns)
        w = "suspend_period must be longer than suspend (the suspension length)";
    if (c->n_rate_schedule > QK_SIM_MAX_SCHEDULE || c->n_loss_list > QK_SIM_MAX_LOSS_LIST)
        w = "too many rate_schedule or loss_list entries";
    for (size_t i = 1; i < c->n_rate_schedule && i < QK_SIM_MAX_SCHEDULE; i++)
        if (c->rate_schedule[i].at_ns < c->rate_schedule[i - 1].at_ns)
            w = "rate_schedule times must be increasing";
    if (c->blackhole_end_ns < c->blackhole_start_ns) w = "blackhole end before its start";
    if (c->n_suspend_list > QK_SIM_MAX_SUSPEND) w = "too many suspend_list entries";
    for (size_t i = 0; i < c->n_suspend_list && i < QK_SIM_MAX_SUSPEND; i++)
        if (c->suspend_list[i][1] <= c->suspend_list[i][0] ||
            (i && c->suspend_list[i][0] < c->suspend_list[i - 1][1]))
            w = "suspend_list intervals must be increasing and disjoint";
    if (why) *why = w;
    return w ? QK_ERR_CONFIG : 0;
}

int qk_sim_link_cfg_check_sized(const qk_sim_link_cfg *cfg, size_t cfg_bytes, const char **why)
{
    qk_sim_link_cfg c;
    int rc = qk_sim_link_cfg_import(&c, cfg, cfg_bytes);
    if (!rc) return link_cfg_check(&c, why);
    if (why)
        *why = rc == QK_ERR_UNSUPPORTED
                   ? "the program sets a qk_sim_link_cfg field this libquack does not know: "
                     "install the libquack it was built for, or leave the field zero"
                   : "no configuration, or cfg_bytes below the first release's size";
    return QK_ERR_CONFIG;
}

int qk_link_init(qk_link *l, const qk_sim_link_cfg *cfg, qk_pkt_pool *pool, uint64_t seed)
{
    if (qk_sim_link_cfg_check(cfg, NULL)) return QK_ERR_CONFIG;
    memset(l, 0, sizeof *l);
    l->cfg = *cfg;
    if (l->cfg.aqm == QK_SIM_AQM_RED && l->cfg.red_wq == 0) l->cfg.red_wq = 0.002;
    l->pool = pool;
    qk_rng_seed(&l->rng, seed, 0x11);
    if (cfg->aqm == QK_SIM_AQM_DUALPI2) {
        l->dpi = malloc(sizeof *l->dpi);
        if (!l->dpi) return QK_ERR_NOMEM;
        qk_dualpi2_init(l->dpi, cfg);
    } else if (cfg->aqm == QK_SIM_AQM_FQ_CODEL) {
        l->fq = malloc(sizeof *l->fq);
        if (!l->fq || qk_fqcodel_init(l->fq, cfg)) {
            free(l->fq);
            l->fq = NULL;
            return QK_ERR_NOMEM;
        }
    }
    return 0;
}

static void list_drain(qk_pkt_pool *pool, qk_pkt_list *q)
{
    qk_pkt *p;
    while ((p = qk_pkt_list_pop(q))) qk_pkt_put(pool, p);
}

void qk_link_free(qk_link *l)
{
    list_drain(l->pool, &l->queue);
    list_drain(l->pool, &l->flight);
    if (l->in_service) qk_pkt_put(l->pool, l->in_service);
    if (l->dpi) {
        list_drain(l->pool, &l->dpi->lq);
        list_drain(l->pool, &l->dpi->cq);
        free(l->dpi);
        l->dpi = NULL;
    }
    if (l->fq) {
        qk_fqcodel_drain(l->fq, l->pool);
        qk_fqcodel_free(l->fq);
        free(l->fq);
        l->fq = NULL;
    }
    for (size_t i = 0; i < l->n_late; i++) qk_pkt_put(l->pool, l->late[i]);
    free(l->late);
    l->late = NULL;
    l->in_service = NULL;
    l->n_late = 0;
}

qk_time qk_link_tx_ns(uint64_t len, uint64_t rate_bps)
{
    if (!rate_bps) return 0;
    return (qk_time)(((unsigned __int128)len * 8 * QK_NS_PER_S) / rate_bps);
}

/* ---- schedules ---- */

static uint64_t rate_at(const qk_sim_link_cfg *c, qk_time t)
{
    uint64_t r = c->rate_bps;
    for (size_t i = 0; i < c->n_rate_schedule && c->rate_schedule[i].at_ns <= t; i++)
        r = c->rate_schedule[i].rate_bps;
    return r;
}

/* First time >= t at which the link is not suspended. */
static qk_time unsuspend_periodic(const qk_sim_link_cfg *c, qk_time t)
{
    if (!c->suspend_ns || t < c->suspend_start_ns) return t;
    qk_time off = t - c->suspend_start_ns;
    uint64_t k = c->suspend_period_ns ? off / c->suspend_period_ns : 0;
    if (c->suspend_count && k >= c->suspend_count) return t;
    qk_time begin = c->suspend_start_ns + k * c->suspend_period_ns;
    if (t < begin + c->suspend_ns) return begin + c->suspend_ns;
    return t;
}

qk_time qk_sim_link_unsuspend(const qk_sim_link_cfg *c, qk_time t)
{
    t = unsuspend_periodic(c, t);
    /* The explicit list is sorted: one pass moves t past every interval
     * holding it (back-to-back intervals chain). */
    for (size_t i = 0; i < c->n_suspend_list && i < QK_SIM_MAX_SUSPEND; i++)
        if (t >= c->suspend_list[i][0] && t < c->suspend_list[i][1]) t = c->suspend_list[i][1];
    return t;
}

/* ---- late (reordered) heap ---- */

static int late_less(const qk_pkt *a, const qk_pkt *b)
{
    return a->deliver_ns < b->deliver_ns || (a->deliver_ns == b->deliver_ns && a->seq < b->seq);
}

static int late_push(qk_link *l, qk_pkt *p)
{
    if (l->n_late == l->cap_late) {
        size_t cap = l->cap_late ? l->cap_late * 2 : 64;
        qk_pkt **n = realloc(l->late, cap * sizeof *n);
        if (!n) return QK_ERR_NOMEM;
        l->late = n;
        l->cap_late = cap;
    }
    size_t i = l->n_late++;
    while (i && late_less(p, l->late[(i - 1) / 2])) {
        l->late[i] = l->late[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    l->late[i] = p;
    return 0;
}

static qk_pkt *late_pop(qk_link *l)
{
    qk_pkt *top = l->late[0], *last = l->late[--l->n_late];
    size_t i = 0, n = l->n_late;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && late_less(l->late[c + 1], l->late[c])) c++;
        if (!late_less(l->late[c], last)) break;
        l->late[i] = l->late[c];
        i = c;
    }
    if (n) l->late[i] = last;
    return top;
}

/* ---- serializer and propagation ---- */

static void drop(qk_link *l, qk_pkt *p, qk_sim_drop why)
{
    l->st.dropped_pkts[why]++;
    if (l->hooks.drop) l->hooks.drop(l->hooks.ctx, p, why);
    qk_pkt_put(l->pool, p);
}

static void start_service(qk_link *l, qk_pkt *p, qk_time t)
{
    qk_time start = qk_sim_link_unsuspend(&l->cfg, t > l->tx_free_ns ? t : l->tx_free_ns);
    p->tx_end_ns =
        start + qk_link_tx_ns((uint64_t)p->len + l->cfg.overhead_bytes, rate_at(&l->cfg, start));
    l->tx_free_ns = p->tx_end_ns;
    l->in_service = p;
    qk_time sojourn = start - p->arrive_ns;
    l->st.qdelay_samples++;
    l->st.qdelay_sum_ns += sojourn;
    if (sojourn > l->st.qdelay_max_ns) l->st.qdelay_max_ns = sojourn;
    if (l->hooks.dequeue) l->hooks.dequeue(l->hooks.ctx, p, sojourn);
}

static int mark_ce(qk_link *l, qk_pkt *p);

/* The next packet to serialize: the FIFO's head, or what the scheduling AQM
 * (DualPI2, FQ-CoDel) picks at time now, its CE marks and drops applied. */
static qk_pkt *next_queued(qk_link *l, qk_time now)
{
    if (!l->dpi && !l->fq) return qk_pkt_list_pop(&l->queue);
    for (;;) {
        qk_aqm_verdict v;
        qk_pkt *p = l->dpi ? qk_dualpi2_dequeue(l->dpi, now, &l->rng, &v)
                           : qk_fqcodel_dequeue(l->fq, now, &v);
        if (!p) return NULL;
        if (v == QK_AQM_MARK) mark_ce(l, p);
        if (v != QK_AQM_DROP) return p;
        l->st.queue_bytes -= p->len;
        l->st.queue_pkts--;
        drop(l, p, QK_SIM_DROP_AQM);
    }
}

static void complete_service(qk_link *l)
{
    qk_pkt *p = l->in_service;
    l->in_service = NULL;
    l->st.queue_bytes -= p->len;
    l->st.queue_pkts--;
    qk_time d = p->tx_end_ns + l->cfg.delay_ns;
    if (l->cfg.jitter_ns) d += qk_rng_below(&l->rng, l->cfg.jitter_ns + 1);
    int late = l->cfg.reorder_p > 0 && qk_rng_chance(&l->rng, l->cfg.reorder_p);
    if (late) p->deliver_ns = d + l->cfg.reorder_delay_ns;
    if (late && late_push(l, p) == 0) {
        l->st.reordered_pkts++;
    } else {
        if (d < l->last_deliver_ns) d = l->last_deliver_ns; /* jitter keeps FIFO order */
        p->deliver_ns = d;
        l->last_deliver_ns = d;
        qk_pkt_list_push(&l->flight, p);
    }
    qk_pkt *n = next_queued(l, p->tx_end_ns);
    if (n)
        start_service(l, n, p->tx_end_ns);
    else
        l->red.idle_since = p->tx_end_ns ? p->tx_end_ns : 1;
}

static uint64_t advance(qk_link *l, qk_time now)
{
    uint64_t ev = 0;
    while (l->in_service && l->in_service->tx_end_ns <= now) {
        complete_service(l);
        ev++;
    }
    return ev;
}

qk_time qk_link_next(const qk_link *l)
{
    qk_time t = QK_TIME_INFINITE;
    if (l->in_service) t = l->in_service->tx_end_ns;
    if (l->flight.head && l->flight.head->deliver_ns < t) t = l->flight.head->deliver_ns;
    if (l->n_late && l->late[0]->deliver_ns < t) t = l->late[0]->deliver_ns;
    return t;
}

qk_pkt *qk_link_poll(qk_link *l, qk_time now, uint64_t *events)
{
    uint64_t ev = advance(l, now);
    qk_pkt *f = l->flight.head, *p = NULL;
    qk_pkt *r = l->n_late ? l->late[0] : NULL;
    if (f && f->deliver_ns <= now && (!r || !late_less(r, f)))
        p = qk_pkt_list_pop(&l->flight);
    else if (r && r->deliver_ns <= now)
        p = late_pop(l);
    if (p) {
        l->st.delivered_pkts++;
        l->st.delivered_bytes += p->len;
        ev++;
    }
    if (events) *events += ev;
    return p;
}

/* ---- admission: loss models and AQM ---- */

static int listed(const qk_sim_link_cfg *c, uint64_t idx)
{
    for (size_t i = 0; i < c->n_loss_list; i++)
        if (idx >= c->loss_list[i][0] && idx <= c->loss_list[i][1]) return 1;
    return 0;
}

static int lost(qk_link *l, uint64_t idx)
{
    const qk_sim_link_cfg *c = &l->cfg;
    int lose = listed(c, idx);
    switch (c->loss) {
    case QK_SIM_LOSS_BERNOULLI: lose |= qk_rng_chance(&l->rng, c->loss_p); break;
    case QK_SIM_LOSS_GE:
        /* Gilbert–Elliott: loss drawn in the current state, then one transition. */
        lose |= qk_rng_chance(&l->rng, l->ge_bad ? c->ge_loss_bad : c->ge_loss_good);
        if (qk_rng_chance(&l->rng, l->ge_bad ? c->ge_p_bg : c->ge_p_gb)) l->ge_bad = !l->ge_bad;
        break;
    default: break;
    }
    return lose;
}

/* Time to serialize the current backlog, headers (overhead_bytes) included. */
static qk_time backlog_ns(const qk_link *l, qk_time now)
{
    uint64_t bytes = l->st.queue_bytes + l->st.queue_pkts * (uint64_t)l->cfg.overhead_bytes;
    return qk_link_tx_ns(bytes, rate_at(&l->cfg, now));
}

static int mark_ce(qk_link *l, qk_pkt *p)
{
    if (p->ecn == QK_ECN_NOT_ECT) return 0;
    if (p->ecn != QK_ECN_CE) { /* RFC 3168 §5: set CE on ECT packets */
        p->ecn = QK_ECN_CE;
        l->st.marked_pkts++;
        if (l->hooks.mark) l->hooks.mark(l->hooks.ctx, p);
    }
    return 1;
}

/* RED (aqm.c) at an arrival: 1 to drop p. A mark on a packet that is not
 * ECN-capable is a drop (RFC 3168 §5). */
static int red(qk_link *l, qk_pkt *p, qk_time now)
{
    qk_aqm_verdict v = qk_red_admit(&l->red, &l->cfg, &l->rng, l->st.queue_bytes, l->st.queue_pkts,
                                    now, qk_link_tx_ns(1000, rate_at(&l->cfg, now)));
    if (v == QK_AQM_PASS) return 0;
    if (v == QK_AQM_MARK && mark_ce(l, p)) return 0;
    return 1;
}

static int admit(qk_link *l, qk_pkt *p, qk_time now)
{
    const qk_sim_link_cfg *c = &l->cfg;
    qk_sim_link_stats *st = &l->st;
    bool full = (c->limit_pkts && st->queue_pkts >= c->limit_pkts) ||
                (c->limit_bytes && st->queue_bytes + p->len > c->limit_bytes) ||
                (c->limit_ns && backlog_ns(l, now) > c->limit_ns);
    if (full && l->fq && l->in_service) {
        /* RFC 8290 §4.1.3: overflow drops from the head of the fattest queue. */
        p->arrive_ns = now;
        p->seq = l->seq++;
        qk_fqcodel_enqueue(l->fq, p, now);
        qk_pkt *fat = qk_fqcodel_drop_fattest(l->fq);
        if (fat == p) {
            drop(l, p, QK_SIM_DROP_QUEUE);
            return 0;
        }
        st->enqueued_pkts++;
        st->queue_bytes += p->len - fat->len;
        drop(l, fat, QK_SIM_DROP_QUEUE);
        return 1;
    }
    if (full) {
        drop(l, p, QK_SIM_DROP_QUEUE);
        return 0;
    }
    if (c->aqm == QK_SIM_AQM_STEP) {
        if (qk_step_admit(c, st->queue_pkts, backlog_ns(l, now)) == QK_AQM_MARK) mark_ce(l, p);
    } else if (c->aqm == QK_SIM_AQM_RED) {
        if (red(l, p, now)) {
            drop(l, p, QK_SIM_DROP_AQM);
            return 0;
        }
    }
    p->arrive_ns = now;
    p->seq = l->seq++;
    st->enqueued_pkts++;
    st->queue_bytes += p->len;
    st->queue_pkts++;
    if (st->queue_bytes > st->max_queue_bytes) st->max_queue_bytes = st->queue_bytes;
    if (l->dpi || l->fq) { /* the scheduling AQM decides what leaves next */
        if (l->dpi)
            qk_dualpi2_enqueue(l->dpi, p, now);
        else
            qk_fqcodel_enqueue(l->fq, p, now);
        if (!l->in_service && (p = next_queued(l, now))) start_service(l, p, now);
    } else if (l->in_service) {
        qk_pkt_list_push(&l->queue, p);
    } else {
        start_service(l, p, now);
    }
    l->red.idle_since = 0;
    return 1;
}

int qk_link_enqueue(qk_link *l, qk_pkt *p, qk_time now)
{
    const qk_sim_link_cfg *c = &l->cfg;
    advance(l, now);
    uint64_t idx = l->st.arrived_pkts++;
    if (c->blackhole_end_ns > c->blackhole_start_ns && now >= c->blackhole_start_ns &&
        now < c->blackhole_end_ns) {
        drop(l, p, QK_SIM_DROP_BLACKHOLE);
        return 0;
    }
    if (c->mtu_bytes && p->len > c->mtu_bytes) {
        drop(l, p, QK_SIM_DROP_MTU);
        return 0;
    }
    if (lost(l, idx)) {
        drop(l, p, QK_SIM_DROP_LOSS);
        return 0;
    }
    if (c->corrupt_p > 0 && p->len && qk_rng_chance(&l->rng, c->corrupt_p)) {
        p->data[qk_rng_below(&l->rng, p->len)] ^= 0xff;
        l->st.corrupted_pkts++;
    }
    qk_pkt *dup = NULL;
    if (c->dup_p > 0 && qk_rng_chance(&l->rng, c->dup_p)) {
        dup = qk_pkt_get(l->pool, p->len);
        if (dup) {
            uint8_t *keep = dup->data;
            uint32_t cap = dup->cap;
            memcpy(dup, p, offsetof(qk_pkt, inline_buf));
            dup->data = keep;
            dup->cap = cap;
            memcpy(dup->data, p->data, p->len);
            l->st.duplicated_pkts++;
        }
    }
    int ok = admit(l, p, now);
    if (dup) ok |= admit(l, dup, now);
    return ok;
}
