/* SPDX-License-Identifier: MIT */
/* The simulator link's AQMs: step marking (RFC 8257 §3.1), RED, DualPI2
 * (RFC 9332) and FQ-CoDel (RFC 8290, CoDel per RFC 8289). */
#include "sim/aqm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- step marking ---- */

qk_aqm_verdict qk_step_admit(const qk_sim_link_cfg *c, uint64_t queue_pkts, qk_time backlog_ns)
{
    /* DCTCP step marking (RFC 8257 §3.1): CE when the instantaneous queue exceeds K. */
    if ((c->step_k_pkts && queue_pkts > c->step_k_pkts) ||
        (c->step_k_ns && backlog_ns > c->step_k_ns))
        return QK_AQM_MARK;
    return QK_AQM_PASS;
}

/* ---- RED ---- */

qk_aqm_verdict qk_red_admit(qk_red *r, const qk_sim_link_cfg *c, qk_rng *rng, uint64_t queue_bytes,
                            uint64_t queue_pkts, qk_time now, qk_time pkt_1000_ns)
{
    if (queue_pkts == 0 && r->idle_since) {
        qk_time s = pkt_1000_ns;
        double m = s ? (double)(now - r->idle_since) / (double)s : 0;
        r->avg *= pow(1 - c->red_wq, m);
    }
    r->avg = (1 - c->red_wq) * r->avg + c->red_wq * (double)queue_bytes;
    double avg = r->avg, mn = (double)c->red_min_bytes, mx = (double)c->red_max_bytes;
    int hit = 0;
    if (avg < mn) {
        r->count = -1;
    } else if (avg >= mx) {
        hit = 1;
    } else {
        r->count++;
        double pb = c->red_max_p * (avg - mn) / (mx - mn);
        double d = 1 - (double)r->count * pb;
        hit = d <= 0 || qk_rng_chance(rng, pb / d);
    }
    if (!hit) return QK_AQM_PASS;
    r->count = 0;
    return c->red_ecn ? QK_AQM_MARK : QK_AQM_DROP;
}

/* ---- DualPI2 ---- */

void qk_dualpi2_init(qk_dualpi2 *d, const qk_sim_link_cfg *c)
{
    memset(d, 0, sizeof *d);
    /* RFC 9332 §A.1 defaults: target 15 ms, Tupdate 16 ms, RTT_max 100 ms,
     * alpha = 0.1 Tupdate / RTT_max^2 = 0.16 Hz, beta = 0.3 / RTT_max = 3 Hz,
     * k = 2, p_Cmax = min(1 / k^2, 1), Time-shifted FIFO with tshift =
     * 2 target, L ramp from 800 us over 400 us. */
    d->target_ns = c->dualpi2_target_ns ? c->dualpi2_target_ns : 15 * QK_NS_PER_MS;
    d->tupdate_ns = c->dualpi2_tupdate_ns ? c->dualpi2_tupdate_ns : 16 * QK_NS_PER_MS;
    d->alpha_u = c->dualpi2_alpha > 0 ? c->dualpi2_alpha : 0.16;
    d->beta_u = c->dualpi2_beta > 0 ? c->dualpi2_beta : 3.0;
    d->k = c->dualpi2_k > 0 ? c->dualpi2_k : 2.0;
    d->l_step_ns = c->dualpi2_l_thresh_ns ? c->dualpi2_l_thresh_ns : 800 * QK_NS_PER_US;
    d->l_range_ns = c->dualpi2_l_thresh_ns ? c->dualpi2_l_range_ns : 400 * QK_NS_PER_US;
    d->tshift_ns = 2 * d->target_ns;
    d->p_cmax = 1.0 / (d->k * d->k) < 1.0 ? 1.0 / (d->k * d->k) : 1.0;
}

void qk_dualpi2_enqueue(qk_dualpi2 *d, qk_pkt *p, qk_time now)
{
    qk_dualpi2_update(d, now);
    /* RFC 9332 §2.3 / RFC 9331 §5.1: ECT(1) and CE go to the L queue. */
    if ((p->ecn & 3) == QK_ECN_ECT1 || (p->ecn & 3) == QK_ECN_CE) {
        qk_pkt_list_push(&d->lq, p);
        d->l_pkts++;
    } else {
        qk_pkt_list_push(&d->cq, p);
        d->c_pkts++;
    }
}

void qk_dualpi2_update(qk_dualpi2 *d, qk_time now)
{
    if (!d->started) {
        d->started = true;
        d->next_update_ns = now + d->tupdate_ns;
        return;
    }
    while (now >= d->next_update_ns) {
        qk_time at = d->next_update_ns;
        /* RFC 9332 §A.1: curq = queuing time of the first Classic packet. */
        qk_time q = d->cq.head && at > d->cq.head->arrive_ns ? at - d->cq.head->arrive_ns : 0;
        double curq = (double)q / 1e9, prevq = (double)d->prev_q_ns / 1e9;
        double target = (double)d->target_ns / 1e9;
        /* p' += alpha (curq - target) + beta (curq - prevq) */
        d->p += d->alpha_u * (curq - target) + d->beta_u * (curq - prevq);
        if (d->p < 0) d->p = 0;
        if (d->p > 1) d->p = 1;
        d->prev_q_ns = q;
        d->next_update_ns += d->tupdate_ns;
        if (!d->cq.head && !d->lq.head && now > d->next_update_ns + 64 * d->tupdate_ns) {
            /* long idle: p' only decays; jump ahead without 1000s of steps */
            qk_time skip = (now - d->next_update_ns) / d->tupdate_ns;
            d->p -= d->alpha_u * target * (double)skip;
            if (d->p < 0) d->p = 0;
            d->next_update_ns += skip * d->tupdate_ns;
        }
    }
}

double qk_dualpi2_p_cl(const qk_dualpi2 *d)
{
    double p = d->k * d->p; /* RFC 9332 §2.4: p_CL = k p' */
    return p < 1 ? p : 1;
}

double qk_dualpi2_p_c(const qk_dualpi2 *d)
{
    double p = d->p * d->p; /* RFC 9332 §2.4: p_C = p'^2 */
    return p < d->p_cmax ? p : d->p_cmax;
}

double qk_dualpi2_p_l(const qk_dualpi2 *d, qk_time sojourn_ns)
{
    /* RFC 9332 §A.1 laqm(): a ramp (a step when the range is 0). */
    double native;
    if (sojourn_ns < d->l_step_ns)
        native = 0;
    else if (sojourn_ns >= d->l_step_ns + d->l_range_ns)
        native = 1;
    else
        native = (double)(sojourn_ns - d->l_step_ns) / (double)d->l_range_ns;
    double cl = qk_dualpi2_p_cl(d);
    return native > cl ? native : cl; /* RFC 9332 §2.4: p_L = max(p'_L, p_CL) */
}

qk_pkt *qk_dualpi2_dequeue(qk_dualpi2 *d, qk_time now, qk_rng *rng, qk_aqm_verdict *v)
{
    qk_dualpi2_update(d, now);
    *v = QK_AQM_PASS;
    qk_pkt *l = d->lq.head, *c = d->cq.head;
    if (!l && !c) return NULL;
    /* RFC 9332 §A.1: time-shifted FIFO, L first unless the C head has waited
     * tshift longer. */
    bool take_l = l && (!c || l->arrive_ns <= c->arrive_ns + d->tshift_ns);
    if (take_l) {
        qk_pkt *p = qk_pkt_list_pop(&d->lq);
        d->l_pkts--;
        qk_time soj = now > p->arrive_ns ? now - p->arrive_ns : 0;
        if (qk_rng_chance(rng, qk_dualpi2_p_l(d, soj))) *v = QK_AQM_MARK;
        return p;
    }
    qk_pkt *p = qk_pkt_list_pop(&d->cq);
    d->c_pkts--;
    if (qk_rng_chance(rng, qk_dualpi2_p_c(d)))
        *v = (p->ecn & 3) == QK_ECN_NOT_ECT ? QK_AQM_DROP : QK_AQM_MARK;
    return p;
}

/* ---- FQ-CoDel ---- */

int qk_fqcodel_init(qk_fqcodel *f, const qk_sim_link_cfg *c)
{
    memset(f, 0, sizeof *f);
    /* RFC 8290 §5: 1024 queues, quantum 1514 bytes, CoDel target 5 ms,
     * interval 100 ms, ECN marking on. */
    f->n_qs = c->fq_flows ? c->fq_flows : 1024;
    f->quantum_bytes = c->fq_quantum_bytes ? c->fq_quantum_bytes : 1514;
    f->target_ns = c->codel_target_ns ? c->codel_target_ns : 5 * QK_NS_PER_MS;
    f->interval_ns = c->codel_interval_ns ? c->codel_interval_ns : 100 * QK_NS_PER_MS;
    f->ecn = !c->fq_no_ecn;
    f->qs = calloc(f->n_qs, sizeof *f->qs);
    return f->qs ? 0 : QK_ERR_NOMEM;
}

void qk_fqcodel_free(qk_fqcodel *f)
{
    free(f->qs);
    f->qs = NULL;
}

static uint32_t flow_hash(const qk_pkt *p)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over the 5-tuple (UDP) */
    uint32_t v[5] = {p->src_ip, p->dst_ip, p->src_port, p->dst_port, 17};
    for (int i = 0; i < 5; i++) {
        h ^= v[i];
        h *= 0x100000001b3ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static void list_add(qk_codel_q **head, qk_codel_q **tail, qk_codel_q *q)
{
    q->next = NULL;
    if (*tail)
        (*tail)->next = q;
    else
        *head = q;
    *tail = q;
}

static qk_codel_q *list_pop_q(qk_codel_q **head, qk_codel_q **tail)
{
    qk_codel_q *q = *head;
    if (q) {
        *head = q->next;
        if (!*head) *tail = NULL;
        q->next = NULL;
    }
    return q;
}

void qk_fqcodel_enqueue(qk_fqcodel *f, qk_pkt *p, qk_time now)
{
    (void)now;
    qk_codel_q *q = &f->qs[flow_hash(p) % f->n_qs];
    qk_pkt_list_push(&q->q, p);
    q->bytes += p->len;
    q->pkts++;
    f->total_pkts++;
    if (q->list == 0) { /* RFC 8290 §4.1: a new flow joins the new list */
        q->list = 1;
        q->deficit = f->quantum_bytes;
        list_add(&f->new_head, &f->new_tail, q);
    }
}

qk_pkt *qk_fqcodel_drop_fattest(qk_fqcodel *f)
{
    qk_codel_q *fat = NULL;
    for (uint32_t i = 0; i < f->n_qs; i++)
        if (f->qs[i].pkts && (!fat || f->qs[i].bytes > fat->bytes)) fat = &f->qs[i];
    if (!fat) return NULL;
    qk_pkt *p = qk_pkt_list_pop(&fat->q);
    fat->bytes -= p->len;
    fat->pkts--;
    f->total_pkts--;
    return p;
}

/* RFC 8289 dodequeue(): the head packet and whether it is OK to drop. */
static qk_pkt *codel_head(qk_fqcodel *f, qk_codel_q *q, qk_time now, bool *ok_to_drop)
{
    *ok_to_drop = false;
    qk_pkt *p = qk_pkt_list_pop(&q->q);
    if (!p) {
        q->first_above_ns = 0;
        return NULL;
    }
    q->bytes -= p->len;
    q->pkts--;
    f->total_pkts--;
    qk_time soj = now > p->arrive_ns ? now - p->arrive_ns : 0;
    if (soj < f->target_ns || q->bytes <= f->quantum_bytes) {
        q->first_above_ns = 0;
    } else if (q->first_above_ns == 0) {
        q->first_above_ns = now + f->interval_ns;
    } else if (now >= q->first_above_ns) {
        *ok_to_drop = true;
    }
    return p;
}

static qk_time control_law(const qk_fqcodel *f, qk_time t, uint32_t count)
{
    return t + (qk_time)((double)f->interval_ns / sqrt((double)count)); /* RFC 8289 §5.5 */
}

/* RFC 8289 dequeue(), one signal per call: the link calls again after a drop. */
static qk_pkt *codel_dequeue(qk_fqcodel *f, qk_codel_q *q, qk_time now, qk_aqm_verdict *v)
{
    bool ok;
    qk_pkt *p = codel_head(f, q, now, &ok);
    *v = QK_AQM_PASS;
    if (!p) {
        q->dropping = false;
        return NULL;
    }
    bool signal = false;
    if (q->dropping) {
        if (!ok) {
            q->dropping = false;
        } else if (now >= q->drop_next_ns) {
            q->count++;
            q->drop_next_ns = control_law(f, q->drop_next_ns, q->count);
            signal = true;
        }
    } else if (ok) {
        q->dropping = true;
        uint32_t delta = q->count - q->lastcount;
        q->count = delta > 1 && now - q->drop_next_ns < 16 * f->interval_ns ? delta : 1;
        q->drop_next_ns = control_law(f, now, q->count);
        q->lastcount = q->count;
        signal = true;
    }
    if (signal) /* RFC 8290 §4.2: CE on ECN-capable packets instead of a drop */
        *v = f->ecn && (p->ecn & 3) != QK_ECN_NOT_ECT ? QK_AQM_MARK : QK_AQM_DROP;
    return p;
}

qk_pkt *qk_fqcodel_dequeue(qk_fqcodel *f, qk_time now, qk_aqm_verdict *v)
{
    *v = QK_AQM_PASS;
    for (;;) {
        /* RFC 8290 §4.2: new queues first, then old ones, deficit round robin. */
        bool from_new = f->new_head != NULL;
        qk_codel_q *q = from_new ? f->new_head : f->old_head;
        if (!q) return NULL;
        if (q->deficit <= 0) {
            q->deficit += f->quantum_bytes;
            if (from_new)
                list_pop_q(&f->new_head, &f->new_tail);
            else
                list_pop_q(&f->old_head, &f->old_tail);
            q->list = 2;
            list_add(&f->old_head, &f->old_tail, q);
            continue;
        }
        qk_pkt *p = codel_dequeue(f, q, now, v);
        if (!p) {
            if (from_new) { /* to the end of the old list (RFC 8290 §4.2) */
                list_pop_q(&f->new_head, &f->new_tail);
                q->list = 2;
                list_add(&f->old_head, &f->old_tail, q);
            } else {
                list_pop_q(&f->old_head, &f->old_tail);
                q->list = 0;
            }
            continue;
        }
        q->deficit -= p->len;
        return p;
    }
}

void qk_fqcodel_drain(qk_fqcodel *f, qk_pkt_pool *pool)
{
    for (uint32_t i = 0; i < f->n_qs; i++) {
        qk_pkt *p;
        while ((p = qk_pkt_list_pop(&f->qs[i].q))) qk_pkt_put(pool, p);
        f->qs[i].bytes = f->qs[i].pkts = 0;
    }
    f->total_pkts = 0;
}
