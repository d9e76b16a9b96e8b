/* SPDX-License-Identifier: MIT */
/* Values with units for scenario files and `quack netem`; link options by key. */
#include "sim/sim_int.h"
#include "sim/link.h"

#include "base/abi.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Parse "<number><suffix>" with a table of (suffix, multiplier). */
typedef struct unit {
    const char *sfx;
    double mul;
} unit;

static int parse_units(const char *s, const unit *u, double *out)
{
    if (!s) return QK_ERR_CONFIG;
    while (isspace((unsigned char)*s)) s++;
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0) return QK_ERR_CONFIG;
    while (isspace((unsigned char)*end)) end++;
    size_t n = strlen(end);
    while (n && isspace((unsigned char)end[n - 1])) n--;
    for (; u->sfx; u++)
        if (strlen(u->sfx) == n && !strncasecmp(end, u->sfx, n)) {
            *out = v * u->mul;
            return 0;
        }
    return QK_ERR_CONFIG;
}

int qk_sim_parse_time(const char *s, qk_time *out)
{
    static const unit u[] = {{"", 1e9}, {"s", 1e9},    {"ms", 1e6}, {"us", 1e3},
                             {"ns", 1}, {"min", 6e10}, {NULL, 0}};
    double v;
    if (parse_units(s, u, &v) || v > 1.8e19) return QK_ERR_CONFIG;
    *out = (qk_time)llround(v);
    return 0;
}

int qk_sim_parse_rate(const char *s, uint64_t *out)
{
    static const unit u[] = {{"", 1},       {"bit", 1},    {"bps", 1},    {"kbit", 1e3},
                             {"kbps", 1e3}, {"k", 1e3},    {"mbit", 1e6}, {"mbps", 1e6},
                             {"m", 1e6},    {"gbit", 1e9}, {"gbps", 1e9}, {"g", 1e9},
                             {NULL, 0}};
    double v;
    if (parse_units(s, u, &v) || v > 1.8e19) return QK_ERR_CONFIG;
    *out = (uint64_t)llround(v);
    return 0;
}

int qk_sim_parse_bytes(const char *s, uint64_t *out)
{
    static const unit u[] = {{"", 1},     {"b", 1},      {"kb", 1e3},      {"mb", 1e6},
                             {"gb", 1e9}, {"kib", 1024}, {"mib", 1048576}, {NULL, 0}};
    double v;
    if (parse_units(s, u, &v) || v > 1.8e19) return QK_ERR_CONFIG;
    *out = (uint64_t)llround(v);
    return 0;
}

int qk_sim_parse_prob(const char *s, double *out)
{
    static const unit u[] = {{"", 1}, {"%", 0.01}, {NULL, 0}};
    double v;
    if (parse_units(s, u, &v) || v > 1) return QK_ERR_CONFIG;
    *out = v;
    return 0;
}

static int parse_count(const char *s, uint64_t *out, const char *sfx)
{
    unit u[] = {{"", 1}, {sfx, 1}, {NULL, 0}};
    double v;
    if (parse_units(s, u, &v) || v != floor(v) || v > 1.8e19) return QK_ERR_CONFIG;
    *out = (uint64_t)v;
    return 0;
}

static int parse_bool(const char *s, bool *out)
{
    if (!strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "on"))
        *out = true;
    else if (!strcasecmp(s, "no") || !strcasecmp(s, "false") || !strcmp(s, "0") ||
             !strcasecmp(s, "off"))
        *out = false;
    else
        return QK_ERR_CONFIG;
    return 0;
}

/* "3, 7, 100-110" -> inclusive ranges of arrival indices (0-based). */
static int parse_loss_list(qk_sim_link_cfg *c, const char *s)
{
    c->n_loss_list = 0;
    while (*s) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        char *end;
        unsigned long long a = strtoull(s, &end, 10), b = a;
        if (end == s) return QK_ERR_CONFIG;
        s = end;
        if (*s == '-') {
            b = strtoull(s + 1, &end, 10);
            if (end == s + 1 || b < a) return QK_ERR_CONFIG;
            s = end;
        }
        if (c->n_loss_list == QK_SIM_MAX_LOSS_LIST) return QK_ERR_CONFIG;
        c->loss_list[c->n_loss_list][0] = a;
        c->loss_list[c->n_loss_list++][1] = b;
        while (*s == ' ') s++;
        if (*s && *s != ',') return QK_ERR_CONFIG;
    }
    return 0;
}

static int parse_period(const char *s, qk_time *a, qk_time *b);

/* "0.9s-1s, 1.9s-2s" -> explicit suspensions, appended: the list may span
 * several suspend_list lines (libinih's lines are short). */
static int parse_suspend_list(qk_sim_link_cfg *c, const char *s)
{
    char buf[8192];
    if (strlen(s) >= sizeof buf) return QK_ERR_CONFIG;
    strcpy(buf, s);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (c->n_suspend_list == QK_SIM_MAX_SUSPEND) return QK_ERR_CONFIG;
        qk_time *iv = c->suspend_list[c->n_suspend_list];
        while (*tok == ' ') tok++;
        if (parse_period(tok, &iv[0], &iv[1]) || iv[1] <= iv[0]) return QK_ERR_CONFIG;
        if (c->n_suspend_list && iv[0] < c->suspend_list[c->n_suspend_list - 1][1])
            return QK_ERR_CONFIG;
        c->n_suspend_list++;
    }
    return 0;
}

/* "seed 3, count 30, length 20ms-300ms, gap 10ms-400ms, start 1s" ->
 * qk_sim_suspend_gen; every field is required. */
int qk_sim_suspend_gen_parse(const char *s, qk_sim_suspend_gen *g)
{
    char buf[512];
    if (strlen(s) >= sizeof buf) return QK_ERR_CONFIG;
    strcpy(buf, s);
    unsigned seen = 0;
    memset(g, 0, sizeof *g);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        char *v = strchr(tok, ' ');
        if (!v) return QK_ERR_CONFIG;
        *v++ = 0;
        uint64_t n;
        int r = QK_ERR_CONFIG;
        if (!strcmp(tok, "seed") && !(r = parse_count(v, &n, "")))
            g->seed = n, seen |= 1;
        else if (!strcmp(tok, "count") && !(r = parse_count(v, &n, "")) && n &&
                 n <= QK_SIM_MAX_SUSPEND)
            g->count = (uint32_t)n, seen |= 2;
        else if (!strcmp(tok, "length") && !(r = parse_period(v, &g->len_min_ns, &g->len_max_ns)))
            seen |= 4;
        else if (!strcmp(tok, "gap") && !(r = parse_period(v, &g->gap_min_ns, &g->gap_max_ns)))
            seen |= 8;
        else if (!strcmp(tok, "start") && !(r = qk_sim_parse_time(v, &g->start_ns)))
            seen |= 16;
        else
            return QK_ERR_CONFIG;
    }
    return seen == 31 && g->len_min_ns >= QK_NS_PER_MS && g->gap_min_ns >= QK_NS_PER_MS
               ? 0
               : QK_ERR_CONFIG;
}

/* A draw in whole milliseconds from [lo, hi]. */
static qk_time draw_ms(qk_rng *r, qk_time lo, qk_time hi)
{
    uint64_t a = lo / QK_NS_PER_MS, b = hi / QK_NS_PER_MS;
    return (a + qk_rng_below(r, b - a + 1)) * QK_NS_PER_MS;
}

int qk_sim_suspend_gen_fill(const qk_sim_suspend_gen *g, qk_sim_link_cfg *c)
{
    qk_rng r;
    qk_rng_seed(&r, g->seed, QK_SIM_SUSPEND_GEN_STREAM);
    qk_time t = g->start_ns;
    if (c->n_suspend_list && t < c->suspend_list[c->n_suspend_list - 1][1]) return QK_ERR_CONFIG;
    for (uint32_t i = 0; i < g->count; i++) {
        if (c->n_suspend_list == QK_SIM_MAX_SUSPEND) return QK_ERR_CONFIG;
        qk_time len = draw_ms(&r, g->len_min_ns, g->len_max_ns);
        qk_time *iv = c->suspend_list[c->n_suspend_list++];
        iv[0] = t;
        iv[1] = t + len;
        t += len + draw_ms(&r, g->gap_min_ns, g->gap_max_ns);
    }
    return 0;
}

/* "2s:50mbit, 5s:100mbit" */
static int parse_schedule(qk_sim_link_cfg *c, const char *s)
{
    char buf[1024];
    if (strlen(s) >= sizeof buf) return QK_ERR_CONFIG;
    strcpy(buf, s);
    c->n_rate_schedule = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon || c->n_rate_schedule == QK_SIM_MAX_SCHEDULE) return QK_ERR_CONFIG;
        *colon = 0;
        qk_sim_rate_step *st = &c->rate_schedule[c->n_rate_schedule];
        if (qk_sim_parse_time(tok, &st->at_ns) || qk_sim_parse_rate(colon + 1, &st->rate_bps))
            return QK_ERR_CONFIG;
        if (c->n_rate_schedule && st->at_ns < st[-1].at_ns) return QK_ERR_CONFIG;
        c->n_rate_schedule++;
    }
    return 0;
}

/* "3s-4s" */
static int parse_period(const char *s, qk_time *a, qk_time *b)
{
    char buf[128];
    if (strlen(s) >= sizeof buf) return QK_ERR_CONFIG;
    strcpy(buf, s);
    char *dash = strchr(buf, '-');
    if (!dash) return QK_ERR_CONFIG;
    *dash = 0;
    if (qk_sim_parse_time(buf, a) || qk_sim_parse_time(dash + 1, b) || *b < *a)
        return QK_ERR_CONFIG;
    return 0;
}

static int set_aqm(qk_sim_link_cfg *c, const char *v)
{
    if (!strcasecmp(v, "droptail") || !strcasecmp(v, "fifo"))
        c->aqm = QK_SIM_AQM_DROPTAIL;
    else if (!strcasecmp(v, "step"))
        c->aqm = QK_SIM_AQM_STEP;
    else if (!strcasecmp(v, "red"))
        c->aqm = QK_SIM_AQM_RED;
    else if (!strcasecmp(v, "dualpi2"))
        c->aqm = QK_SIM_AQM_DUALPI2;
    else if (!strcasecmp(v, "fq_codel") || !strcasecmp(v, "fq-codel"))
        c->aqm = QK_SIM_AQM_FQ_CODEL;
    else
        return QK_ERR_CONFIG;
    return 0;
}

/* step_k: "20pkt" (packets) or a time ("1ms"). */
static int set_step_k(qk_sim_link_cfg *c, const char *v)
{
    uint64_t n;
    c->step_k_pkts = 0;
    c->step_k_ns = 0;
    if (!parse_count(v, &n, "pkt") && strpbrk(v, "pP")) {
        c->step_k_pkts = n;
        return n ? 0 : QK_ERR_CONFIG;
    }
    static const unit u[] = {{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {NULL, 0}};
    double t;
    if (parse_units(v, u, &t) || t < 1) return QK_ERR_CONFIG;
    c->step_k_ns = (qk_time)llround(t);
    return 0;
}

/* The AQM parameters (step, RED, DualPI2, FQ-CoDel): false when k is not
 * one of them, else true with *rc the parse result and *f the expected form. */
static bool aqm_key(qk_sim_link_cfg *c, const char *k, const char *v, const char **f, int *rc)
{
    int r;
    uint64_t n;
#define IS(name) (!strcmp(k, name))
    if (IS("step_k"))
        r = set_step_k(c, v), *f = "packets (e.g. 20pkt) or a time (e.g. 1ms)";
    else if (IS("red_min"))
        r = qk_sim_parse_bytes(v, &c->red_min_bytes), *f = "a size in bytes, e.g. 30kB";
    else if (IS("red_max"))
        r = qk_sim_parse_bytes(v, &c->red_max_bytes), *f = "a size in bytes, e.g. 90kB";
    else if (IS("red_max_p"))
        r = qk_sim_parse_prob(v, &c->red_max_p), *f = "a probability, e.g. 10%";
    else if (IS("red_wq"))
        r = qk_sim_parse_prob(v, &c->red_wq), *f = "an EWMA weight in [0,1], e.g. 0.002";
    else if (IS("red_ecn"))
        r = parse_bool(v, &c->red_ecn), *f = "yes or no";
    else if (IS("dualpi2_target"))
        r = qk_sim_parse_time(v, &c->dualpi2_target_ns), *f = "a time, e.g. 15ms";
    else if (IS("dualpi2_tupdate"))
        r = qk_sim_parse_time(v, &c->dualpi2_tupdate_ns), *f = "a time, e.g. 16ms";
    else if (IS("dualpi2_l_thresh"))
        r = qk_sim_parse_time(v, &c->dualpi2_l_thresh_ns), *f = "a time, e.g. 1ms";
    else if (IS("dualpi2_l_range"))
        r = qk_sim_parse_time(v, &c->dualpi2_l_range_ns), *f = "a time, e.g. 400us (0 = step)";
    else if (IS("dualpi2_alpha") || IS("dualpi2_beta") || IS("dualpi2_k")) {
        double *d = IS("dualpi2_alpha")  ? &c->dualpi2_alpha
                    : IS("dualpi2_beta") ? &c->dualpi2_beta
                                         : &c->dualpi2_k;
        char *end;
        *d = strtod(v, &end);
        r = (*end || !(*d > 0) || *d > 1000) ? QK_ERR_CONFIG : 0;
        *f = "a positive number (alpha 0.16 Hz, beta 3 Hz, k 2)";
    } else if (IS("fq_flows") || IS("fq_quantum")) {
        r = qk_sim_parse_bytes(v, &n), *f = "a positive count (flows 1024, quantum 1514)";
        if (!r && (!n || n > 65536)) r = QK_ERR_CONFIG;
        if (!r) *(IS("fq_flows") ? &c->fq_flows : &c->fq_quantum_bytes) = (uint32_t)n;
    } else if (IS("codel_target"))
        r = qk_sim_parse_time(v, &c->codel_target_ns), *f = "a time, e.g. 5ms";
    else if (IS("codel_interval"))
        r = qk_sim_parse_time(v, &c->codel_interval_ns), *f = "a time, e.g. 100ms";
    else if (IS("fq_ecn")) {
        bool on = true;
        r = parse_bool(v, &on), *f = "yes or no";
        c->fq_no_ecn = !on;
    } else
        return false;
#undef IS
    *rc = r;
    return true;
}

static int link_cfg_set(qk_sim_link_cfg *c, const char *k, const char *v, const char **fix)
{
    const char *f = NULL;
    int r = 0;
    uint64_t n;
#define IS(name) (!strcmp(k, name))
    if (IS("rate"))
        r = qk_sim_parse_rate(v, &c->rate_bps),
        f = "a rate in bit/s, e.g. 100mbit, 5gbit, 0 = infinite";
    else if (IS("delay"))
        r = qk_sim_parse_time(v, &c->delay_ns), f = "a time, e.g. 30ms";
    else if (IS("jitter"))
        r = qk_sim_parse_time(v, &c->jitter_ns), f = "a time, e.g. 2ms";
    else if (IS("reorder"))
        r = qk_sim_parse_prob(v, &c->reorder_p), f = "a probability, e.g. 1% or 0.01";
    else if (IS("reorder_delay"))
        r = qk_sim_parse_time(v, &c->reorder_delay_ns), f = "a time, e.g. 5ms";
    else if (IS("limit"))
        r = qk_sim_parse_bytes(v, &c->limit_bytes), f = "a size in bytes, e.g. 150kB";
    else if (IS("limit_time"))
        r = qk_sim_parse_time(v, &c->limit_ns), f = "a time, e.g. 50ms";
    else if (IS("limit_pkts"))
        r = parse_count(v, &c->limit_pkts, "pkt"), f = "a packet count, e.g. 1000";
    else if (IS("aqm"))
        r = set_aqm(c, v), f = "one of droptail, step, red, dualpi2, fq_codel";
    else if (aqm_key(c, k, v, &f, &r))
        ; /* r and f set */
    else if (IS("loss")) {
        r = qk_sim_parse_prob(v, &c->loss_p), f = "a probability, e.g. 1% or 0.01";
        if (!r) c->loss = c->loss_p > 0 ? QK_SIM_LOSS_BERNOULLI : QK_SIM_LOSS_NONE;
    } else if (IS("ge_p_gb") || IS("ge_p_bg") || IS("ge_loss_good") || IS("ge_loss_bad")) {
        double *d = IS("ge_p_gb")        ? &c->ge_p_gb
                    : IS("ge_p_bg")      ? &c->ge_p_bg
                    : IS("ge_loss_good") ? &c->ge_loss_good
                                         : &c->ge_loss_bad;
        r = qk_sim_parse_prob(v, d), f = "a probability, e.g. 1% or 0.01";
        c->loss = QK_SIM_LOSS_GE;
    } else if (IS("loss_list"))
        r = parse_loss_list(c, v), f = "packet indices from 0, e.g. 3, 7, 100-110";
    else if (IS("duplicate"))
        r = qk_sim_parse_prob(v, &c->dup_p), f = "a probability, e.g. 1%";
    else if (IS("corrupt"))
        r = qk_sim_parse_prob(v, &c->corrupt_p), f = "a probability, e.g. 0.1%";
    else if (IS("mtu")) {
        r = qk_sim_parse_bytes(v, &n), f = "a size in bytes, e.g. 1500";
        if (!r && n > 65535) r = QK_ERR_CONFIG;
        if (!r) c->mtu_bytes = (uint32_t)n;
    } else if (IS("overhead")) {
        r = qk_sim_parse_bytes(v, &n), f = "bytes per packet, e.g. 28 (IPv4 + UDP) or 48 (IPv6)";
        if (!r && n > 1000) r = QK_ERR_CONFIG;
        if (!r) c->overhead_bytes = (uint32_t)n;
    } else if (IS("suspend_start"))
        r = qk_sim_parse_time(v, &c->suspend_start_ns), f = "a time, e.g. 1s";
    else if (IS("suspend_period"))
        r = qk_sim_parse_time(v, &c->suspend_period_ns), f = "a time, e.g. 500ms";
    else if (IS("suspend"))
        r = qk_sim_parse_time(v, &c->suspend_ns), f = "a time, e.g. 150ms";
    else if (IS("suspend_count")) {
        r = parse_count(v, &n, "x"), f = "a count, e.g. 20 (0 = unbounded)";
        if (!r && n > UINT32_MAX) r = QK_ERR_CONFIG;
        if (!r) c->suspend_count = (uint32_t)n;
    } else if (IS("suspend_list"))
        r = parse_suspend_list(c, v), f = "increasing START-END periods, e.g. 0.9s-1s, 1.9s-2s";
    else if (IS("suspend_random")) {
        qk_sim_suspend_gen g;
        r = qk_sim_suspend_gen_parse(v, &g) || qk_sim_suspend_gen_fill(&g, c);
        f = "seed N, count N (1-128), length MIN-MAX, gap MIN-MAX, start TIME, e.g. seed 3, "
            "count 30, length 20ms-300ms, gap 10ms-400ms, start 1s (after any suspend_list)";
    } else if (IS("rate_schedule"))
        r = parse_schedule(c, v), f = "increasing TIME:RATE pairs, e.g. 2s:50mbit, 5s:100mbit";
    else if (IS("blackhole"))
        r = parse_period(v, &c->blackhole_start_ns, &c->blackhole_end_ns),
        f = "a period START-END, e.g. 3s-4s";
    else
        return QK_ERR_NOT_FOUND;
#undef IS
    if (fix) *fix = f;
    return r ? QK_ERR_CONFIG : 0;
}

int qk_sim_link_cfg_set_sized(qk_sim_link_cfg *cfg, size_t cfg_bytes, const char *key,
                              const char *value, const char **fix)
{
    qk_sim_link_cfg c;
    int rc = qk_sim_link_cfg_import(&c, cfg, cfg_bytes);
    if (rc) return rc == QK_ERR_UNSUPPORTED ? QK_ERR_CONFIG : rc;
    rc = link_cfg_set(&c, key, value, fix);
    if (rc) return rc;
    /* A key whose field the caller's (older) struct lacks is unknown to it. */
    const unsigned char *b = (const unsigned char *)&c;
    for (size_t i = cfg_bytes; i < sizeof c; i++)
        if (b[i]) return QK_ERR_NOT_FOUND;
    qk_abi_copy_out(cfg, cfg_bytes, &c, sizeof c);
    return 0;
}
