/* SPDX-License-Identifier: MIT */
/* The "cbr" flow type: a CBR source on `from` and a sink on `to`. */
#include "sim/flow_quic.h"
#include "sim/sim_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct cbr_flow {
    qk_sim_cbr *src;
    qk_sim_sink *sink;
    qk_sim_cbr_cfg cfg;
} cbr_flow;

static void cbr_summary(void *obj, qk_sim *sim, qk_sim_flow_summary *o)
{
    cbr_flow *f = obj;
    const qk_sim_sink_stats *st = qk_sim_sink_stats_get(f->sink);
    o->sent_bytes = qk_sim_cbr_sent_bytes(f->src);
    o->sent_pkts = qk_sim_cbr_sent_pkts(f->src);
    o->recv_bytes = st->bytes;
    o->recv_pkts = st->pkts;
    qk_time end = f->cfg.stop_ns < qk_sim_now(sim) ? f->cfg.stop_ns : qk_sim_now(sim);
    if (end > f->cfg.start_ns)
        o->goodput_bps = (double)st->bytes * 8e9 / (double)(end - f->cfg.start_ns);
    o->owd_p50_ns = qk_sim_sink_owd_pct(f->sink, 50);
    o->owd_p99_ns = qk_sim_sink_owd_pct(f->sink, 99);
    snprintf(o->extra, sizeof o->extra, "ce=%llu corrupt=%llu dup=%llu reord=%llu",
             (unsigned long long)st->ce_pkts, (unsigned long long)st->corrupt_pkts,
             (unsigned long long)st->dup_pkts, (unsigned long long)st->reordered_pkts);
}

static uint64_t cbr_recv_bytes(void *obj)
{
    return qk_sim_sink_stats_get(((cbr_flow *)obj)->sink)->bytes;
}

static const qk_sim_flow_ops cbr_flow_ops = {cbr_summary, cbr_recv_bytes, free};

static int bad(const qk_sim_flow_args *a, const char *key, const char *val, const char *fix)
{
    snprintf(a->err, a->err_cap, "%s: bad value '%s'; expected %s", key, val, fix);
    return QK_ERR_CONFIG;
}

int qk_sim_cbr_factory(qk_sim *sim, const qk_sim_flow_args *a, void **out,
                       const qk_sim_flow_ops **ops)
{
    qk_sim_cbr_cfg c = {.rate_bps = 1000000, .size_bytes = 1200, .stop_ns = QK_TIME_INFINITE};
    for (size_t i = 0; i < a->n_kv; i++) {
        const char *k = a->kv[i].key, *v = a->kv[i].value;
        uint64_t n;
        if (!strcmp(k, "type") || !strcmp(k, "from") || !strcmp(k, "to")) continue;
        if (!strcmp(k, "rate")) {
            if (qk_sim_parse_rate(v, &c.rate_bps) || !c.rate_bps)
                return bad(a, k, v, "a positive rate, e.g. 10mbit");
        } else if (!strcmp(k, "size")) {
            if (qk_sim_parse_bytes(v, &n) || n < 24 || n > 65507)
                return bad(a, k, v, "a datagram size from 24 to 65507 bytes");
            c.size_bytes = (uint32_t)n;
        } else if (!strcmp(k, "start")) {
            if (qk_sim_parse_time(v, &c.start_ns)) return bad(a, k, v, "a time, e.g. 1s");
        } else if (!strcmp(k, "stop")) {
            if (qk_sim_parse_time(v, &c.stop_ns)) return bad(a, k, v, "a time, e.g. 9s");
        } else if (!strcmp(k, "count")) {
            if (qk_sim_parse_bytes(v, &c.max_pkts)) return bad(a, k, v, "a packet count");
        } else if (!strcmp(k, "ecn")) {
            if (!strcasecmp(v, "not-ect") || !strcasecmp(v, "none"))
                c.ecn = QK_ECN_NOT_ECT;
            else if (!strcasecmp(v, "ect0"))
                c.ecn = QK_ECN_ECT0;
            else if (!strcasecmp(v, "ect1"))
                c.ecn = QK_ECN_ECT1;
            else if (!strcasecmp(v, "ce"))
                c.ecn = QK_ECN_CE;
            else
                return bad(a, k, v, "not-ect, ect0, ect1 or ce");
        } else {
            snprintf(a->err, a->err_cap,
                     "%s: unknown key for type cbr; use rate, size, start, stop, count, ecn", k);
            return QK_ERR_CONFIG;
        }
    }
    if (c.stop_ns <= c.start_ns) return bad(a, "stop", "", "a stop time after start");
    cbr_flow *f = calloc(1, sizeof *f);
    if (!f) return QK_ERR_NOMEM;
    uint16_t port = (uint16_t)(10000 + a->flow_id);
    c.dst = qk_sim_host_addr(sim, a->to_host, port);
    int r = qk_sim_sink_add(sim, a->to_host, port, &f->sink);
    if (r >= 0) r = qk_sim_cbr_add(sim, a->from_host, port, &c, &f->src);
    if (r < 0) {
        free(f);
        snprintf(a->err, a->err_cap, "from: cannot create the flow's nodes (%s)", qk_strerror(r));
        return r;
    }
    f->cfg = c;
    *out = f;
    *ops = &cbr_flow_ops;
    return 0;
}
