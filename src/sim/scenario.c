/* SPDX-License-Identifier: MIT */
/* Scenario files (INI via libinih): topology, links, flows, CSV time series. */
#include "sim/sim_int.h"

#include "base/abi.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

/* ---- flow types ----
 *
 * The built-in types are a const table (the flow modules export their
 * factories; nothing registers itself at run time). Types a program adds
 * (tests, benches) go in a small process-wide list after them. */

static const struct {
    const char *name;
    qk_sim_flow_factory fn;
} builtin_types[] = {
    {"cbr", qk_sim_cbr_factory},
    {"quic", qk_sim_quic_factory},
    {"media", qk_sim_media_factory},
};

#define MAX_FLOW_TYPES 16

static struct {
    char name[32];
    qk_sim_flow_factory fn;
    size_t ops_bytes; /* the registering program's sizeof(qk_sim_flow_ops) */
} g_types[MAX_FLOW_TYPES];
static size_t g_n_types;

/* qk_sim_flow_ops crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with free; a missing callback is NULL. */
#define FLOW_OPS_V1_BYTES QK_ABI_END(qk_sim_flow_ops, free)
QK_ABI_LAST_FIELD(qk_sim_flow_ops, free);

/* The factory of type name and the size of the ops its flows return. */
static qk_sim_flow_factory find_type(const char *name, size_t *ops_bytes)
{
    *ops_bytes = sizeof(qk_sim_flow_ops);
    for (size_t i = 0; i < sizeof builtin_types / sizeof *builtin_types; i++)
        if (!strcmp(builtin_types[i].name, name)) return builtin_types[i].fn;
    for (size_t i = 0; i < g_n_types; i++) {
        if (strcmp(g_types[i].name, name)) continue;
        *ops_bytes = g_types[i].ops_bytes;
        return g_types[i].fn;
    }
    return NULL;
}

int qk_sim_flow_type_register_sized(const char *name, qk_sim_flow_factory factory, size_t ops_bytes)
{
    size_t known;
    if (!name || !factory || strlen(name) >= sizeof g_types[0].name) return QK_ERR_INVALID_ARG;
    if (ops_bytes < FLOW_OPS_V1_BYTES || find_type(name, &known)) return QK_ERR_INVALID_ARG;
    if (g_n_types == MAX_FLOW_TYPES) return QK_ERR_LIMIT;
    strcpy(g_types[g_n_types].name, name);
    g_types[g_n_types].ops_bytes = ops_bytes;
    g_types[g_n_types++].fn = factory;
    return 0;
}

/* ---- the scenario ---- */

typedef struct entry {
    char *section, *key, *value;
    int line;
} entry;

typedef struct flow {
    char name[48];
    char type[32];
    void *obj;
    qk_sim_flow_ops ops; /* the factory's, copied at its size (all NULL before) */
    uint32_t id;
    FILE *csv;
    uint64_t last_bytes;
} flow;

/* Copy the ops a factory returned (ops_bytes of them) into fl. */
static int take_ops(flow *fl, const qk_sim_flow_ops *ops, size_t ops_bytes, char *err,
                    size_t err_cap)
{
    if (ops && !qk_abi_copy_in(&fl->ops, sizeof fl->ops, ops, ops_bytes, FLOW_OPS_V1_BYTES))
        return 0;
    if (ops && ops->free) ops->free(fl->obj);
    fl->obj = NULL;
    snprintf(err, err_cap,
             "type: the flow type's ops are missing or set a callback this "
             "libquack does not know; use the libquack it was built for");
    return QK_ERR_UNSUPPORTED;
}

typedef struct link_csv {
    FILE *f;
    qk_sim_link_stats prev;
} link_csv;

struct qk_sim_scenario {
    char path[512];
    qk_sim_run_opts opts;
    qk_sim *sim;
    entry *e;
    size_t n_e, cap_e;
    int cur_line;
    qk_time duration_ns, interval_ns;
    uint64_t stop_rpcs, stop_rpc_bytes; /* [sim] stop_rpcs / stop_rpc_size (0 = off / any) */
    qk_time end_ns;                     /* when the run ended (duration or stop_rpcs) */
    flow *flows;
    size_t n_flows;
    link_csv *lcsv;
    size_t n_lcsv;
    char *err;
    size_t err_cap;
};

static int fail(qk_sim_scenario *sc, const entry *e, const char *fmt, ...)
{
    int n = 0;
    if (e)
        n = snprintf(sc->err, sc->err_cap, "%s:%d: [%s] %s: ", sc->path, e->line, e->section,
                     e->key);
    else
        n = snprintf(sc->err, sc->err_cap, "%s: ", sc->path);
    if (n < 0 || (size_t)n >= sc->err_cap) return QK_ERR_CONFIG;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->err + n, sc->err_cap - (size_t)n, fmt, ap);
    va_end(ap);
    return QK_ERR_CONFIG;
}

/* inih reader that counts lines, so the handler knows where each key is. */
typedef struct reader {
    FILE *f;
    qk_sim_scenario *sc;
} reader;

static char *read_line(char *buf, int size, void *stream)
{
    reader *r = stream;
    char *s = fgets(buf, size, r->f);
    if (s) r->sc->cur_line++;
    return s;
}

static int on_kv(void *user, const char *section, const char *key, const char *value)
{
    qk_sim_scenario *sc = user;
    if (sc->n_e == sc->cap_e) {
        size_t cap = sc->cap_e ? sc->cap_e * 2 : 32;
        entry *n = realloc(sc->e, cap * sizeof *n);
        if (!n) return 0;
        sc->e = n;
        sc->cap_e = cap;
    }
    entry *e = &sc->e[sc->n_e];
    e->section = strdup(section);
    e->key = strdup(key);
    e->value = strdup(value);
    e->line = sc->cur_line;
    if (!e->section || !e->key || !e->value) {
        free(e->section);
        free(e->key);
        free(e->value);
        return 0;
    }
    sc->n_e++;
    return 1;
}

static const entry *get(const qk_sim_scenario *sc, const char *section, const char *key)
{
    const entry *found = NULL;
    for (size_t i = 0; i < sc->n_e; i++)
        if (!strcmp(sc->e[i].section, section) && !strcmp(sc->e[i].key, key)) found = &sc->e[i];
    return found; /* the last one wins, as in most INI readers */
}

static int has_section(const qk_sim_scenario *sc, const char *section)
{
    for (size_t i = 0; i < sc->n_e; i++)
        if (!strcmp(sc->e[i].section, section)) return 1;
    return 0;
}

/* ---- [sim] ---- */

static int parse_sim(qk_sim_scenario *sc, char *topology, size_t cap, uint64_t *senders,
                     uint64_t *receivers, uint64_t *seed)
{
    snprintf(topology, cap, "p2p");
    sc->duration_ns = 10 * QK_NS_PER_S;
    sc->interval_ns = 100 * QK_NS_PER_MS;
    *senders = 2;
    *receivers = 1;
    *seed = 1;
    for (size_t i = 0; i < sc->n_e; i++) {
        const entry *e = &sc->e[i];
        if (strcmp(e->section, "sim")) continue;
        int bad = 0;
        const char *fix = "";
        char *end;
        if (!strcmp(e->key, "duration")) {
            bad = qk_sim_parse_time(e->value, &sc->duration_ns) || !sc->duration_ns;
            fix = "a positive time, e.g. 10s";
        } else if (!strcmp(e->key, "interval")) {
            bad = qk_sim_parse_time(e->value, &sc->interval_ns) || !sc->interval_ns;
            fix = "a positive time, e.g. 100ms";
        } else if (!strcmp(e->key, "seed")) {
            *seed = strtoull(e->value, &end, 0);
            bad = end == e->value || *end;
            fix = "an integer, e.g. 42";
        } else if (!strcmp(e->key, "stop_rpcs")) {
            sc->stop_rpcs = strtoull(e->value, &end, 10);
            bad = end == e->value || *end || !sc->stop_rpcs;
            fix = "a positive count, e.g. 10000";
        } else if (!strcmp(e->key, "stop_rpc_size")) {
            bad = qk_sim_parse_bytes(e->value, &sc->stop_rpc_bytes) || !sc->stop_rpc_bytes;
            fix = "a byte count, e.g. 1MB";
        } else if (!strcmp(e->key, "topology")) {
            bad = strcmp(e->value, "p2p") && strcmp(e->value, "dumbbell");
            snprintf(topology, cap, "%s", e->value);
            fix = "p2p or dumbbell";
        } else if (!strcmp(e->key, "senders") || !strcmp(e->key, "receivers")) {
            uint64_t *v = e->key[0] == 's' ? senders : receivers;
            *v = strtoull(e->value, &end, 10);
            bad = end == e->value || *end || *v < 1 || *v > 250;
            fix = "a count from 1 to 250";
        } else {
            return fail(sc, e,
                        "unknown key; use duration, seed, topology, senders, receivers, "
                        "interval, stop_rpcs or stop_rpc_size");
        }
        if (bad) return fail(sc, e, "bad value '%s'; expected %s", e->value, fix);
    }
    return 0;
}

/* ---- links ---- */

static int link_cfg_from(qk_sim_scenario *sc, const char *section, qk_sim_link_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    const entry *last = NULL;
    for (size_t i = 0; i < sc->n_e; i++) {
        const entry *e = &sc->e[i];
        if (strcmp(e->section, section)) continue;
        last = e;
        const char *fix = NULL;
        int r = qk_sim_link_cfg_set(cfg, e->key, e->value, &fix);
        if (r == QK_ERR_NOT_FOUND)
            return fail(sc, e, "unknown link key; see docs/sim.md for the link parameters");
        if (r) return fail(sc, e, "bad value '%s'; expected %s", e->value, fix);
    }
    const char *why;
    if (qk_sim_link_cfg_check(cfg, &why)) {
        if (last) return fail(sc, last, "%s", why);
        return fail(sc, NULL, "[%s]: %s", section, why);
    }
    return 0;
}

static int add_link(qk_sim_scenario *sc, const char *name, int from, int to, const char *section)
{
    qk_sim_link_cfg cfg;
    int r = link_cfg_from(sc, section, &cfg);
    if (r) return r;
    r = qk_sim_link_add(sc->sim, name, from, to, &cfg);
    if (r < 0) return fail(sc, NULL, "cannot create link %s (%s)", name, qk_strerror(r));
    return r;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        int r_ = (x);                                                                              \
        if (r_ < 0) return r_;                                                                     \
    } while (0)

/* The forward ([link.forward]) and return ([link.return]) links between
 * hosts a and b, with the routes that send everything across them. */
static int add_path(qk_sim_scenario *sc, int a, int b)
{
    int f = add_link(sc, "forward", a, b, "link.forward");
    TRY(f);
    int rt = add_link(sc, "return", b, a, "link.return");
    TRY(rt);
    TRY(qk_sim_route_add(sc->sim, a, -1, f));
    TRY(qk_sim_route_add(sc->sim, b, -1, rt));
    return 0;
}

static int build_p2p(qk_sim_scenario *sc)
{
    qk_sim *s = sc->sim;
    int a = qk_sim_host_add(s, "a", 0x0a000001), b = qk_sim_host_add(s, "b", 0x0a000002);
    if (a < 0 || b < 0) return fail(sc, NULL, "out of memory");
    return add_path(sc, a, b);
}

static int build_dumbbell(qk_sim_scenario *sc, uint64_t senders, uint64_t receivers)
{
    qk_sim *s = sc->sim;
    char name[48];
    int left = qk_sim_host_add(s, "left", 0x0a000001),
        right = qk_sim_host_add(s, "right", 0x0a000002);
    if (left < 0 || right < 0) return fail(sc, NULL, "out of memory");
    TRY(add_path(sc, left, right));
    for (uint64_t i = 1; i <= senders + receivers; i++) {
        int snd = i <= senders;
        uint64_t k = snd ? i : i - senders;
        snprintf(name, sizeof name, "%c%u", snd ? 's' : 'r', (unsigned)k);
        int h = qk_sim_host_add(s, name, (snd ? 0x0a000100u : 0x0a000200u) + (uint32_t)k);
        if (h < 0) return fail(sc, NULL, "cannot add host %s", name);
        int hub = snd ? left : right;
        const char *sec = snd ? "link.access" : "link.edge";
        snprintf(name, sizeof name, "%s.%c%u.up", snd ? "access" : "edge", snd ? 's' : 'r',
                 (unsigned)k);
        int up = add_link(sc, name, h, hub, sec);
        TRY(up);
        snprintf(name, sizeof name, "%s.%c%u.down", snd ? "access" : "edge", snd ? 's' : 'r',
                 (unsigned)k);
        int down = add_link(sc, name, hub, h, sec);
        TRY(down);
        TRY(qk_sim_route_add(s, h, -1, up));
        TRY(qk_sim_route_add(s, hub, h, down));
    }
    return 0;
}

/* ---- flows ---- */

static int build_flows(qk_sim_scenario *sc)
{
    for (size_t i = 0; i < sc->n_e; i++) {
        const entry *e0 = &sc->e[i];
        if (strncmp(e0->section, "flow.", 5)) continue;
        int seen = 0;
        for (size_t j = 0; j < i; j++) seen |= !strcmp(sc->e[j].section, e0->section);
        if (seen) continue;
        const char *fname = e0->section + 5;
        size_t n = 0;
        for (size_t j = i; j < sc->n_e; j++) n += !strcmp(sc->e[j].section, e0->section);
        qk_sim_kv *kv = calloc(n, sizeof *kv);
        if (!kv) return fail(sc, NULL, "out of memory");
        n = 0;
        for (size_t j = i; j < sc->n_e; j++)
            if (!strcmp(sc->e[j].section, e0->section))
                kv[n++] = (qk_sim_kv){sc->e[j].key, sc->e[j].value, sc->e[j].line};
        const entry *te = get(sc, e0->section, "type"), *fe = get(sc, e0->section, "from"),
                    *to = get(sc, e0->section, "to");
        const char *type = te ? te->value : "cbr";
        int r = 0;
        size_t ops_bytes;
        qk_sim_flow_factory fn = find_type(type, &ops_bytes);
        int from = fe ? qk_sim_host_find(sc->sim, fe->value) : -1;
        int dst = to ? qk_sim_host_find(sc->sim, to->value) : -1;
        if (!fn)
            r = fail(sc, te, "unknown flow type '%s'; built-in types: cbr, quic", type);
        else if (!fe || !to)
            r = fail(sc, e0,
                     "flow needs 'from' and 'to' host names (p2p: a, b; dumbbell: "
                     "s1..sN, r1..rM)");
        else if (from < 0)
            r = fail(sc, fe, "no host '%s'; p2p has a and b, dumbbell s1..sN and r1..rM",
                     fe->value);
        else if (dst < 0)
            r = fail(sc, to, "no host '%s'; p2p has a and b, dumbbell s1..sN and r1..rM",
                     to->value);
        flow *fl = NULL;
        if (!r) {
            flow *nf = realloc(sc->flows, (sc->n_flows + 1) * sizeof *nf);
            if (!nf)
                r = fail(sc, NULL, "out of memory");
            else {
                sc->flows = nf;
                fl = &sc->flows[sc->n_flows];
                memset(fl, 0, sizeof *fl);
                snprintf(fl->name, sizeof fl->name, "%s", fname);
                snprintf(fl->type, sizeof fl->type, "%s", type);
                fl->id = (uint32_t)sc->n_flows;
            }
        }
        if (!r) {
            char ferr[256] = "";
            qk_sim_flow_args a = {fname, kv, n, from, dst, (int)fl->id, ferr, sizeof ferr};
            qk_sim_set_current_flow(sc->sim, fl->id);
            const qk_sim_flow_ops *ops = NULL;
            int fr = fn(sc->sim, &a, &fl->obj, &ops);
            if (fr >= 0) fr = take_ops(fl, ops, ops_bytes, ferr, sizeof ferr);
            qk_sim_set_current_flow(sc->sim, QK_SIM_NO_FLOW);
            if (fr < 0) {
                /* the factory names the key first: "key: problem; fix" */
                const entry *ke = e0;
                char key[32] = "";
                sscanf(ferr, "%31[^:]", key);
                const entry *k2 = get(sc, e0->section, key);
                if (k2) ke = k2;
                r = snprintf(sc->err, sc->err_cap, "%s:%d: [%s] %s", sc->path, ke->line,
                             e0->section, ferr[0] ? ferr : "flow creation failed") < 0
                        ? QK_ERR_CONFIG
                        : QK_ERR_CONFIG;
            } else {
                sc->n_flows++;
            }
        }
        free(kv);
        if (r) return r;
    }
    return 0;
}

static int check_sections(qk_sim_scenario *sc, const char *topology)
{
    int dumb = !strcmp(topology, "dumbbell");
    for (size_t i = 0; i < sc->n_e; i++) {
        const char *s = sc->e[i].section;
        if (!strcmp(s, "sim") || !strcmp(s, "link.forward") || !strcmp(s, "link.return") ||
            !strncmp(s, "flow.", 5))
            continue;
        if (dumb && (!strcmp(s, "link.access") || !strcmp(s, "link.edge"))) continue;
        return fail(sc, &sc->e[i],
                    "unknown section [%s]; use [sim], [link.forward], "
                    "[link.return], %s[flow.NAME]",
                    s, dumb ? "[link.access], [link.edge], " : "");
    }
    return 0;
}

/* qk_sim_run_opts crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with progress. */
#define RUN_OPTS_V1_BYTES QK_ABI_END(qk_sim_run_opts, progress)
QK_ABI_LAST_FIELD(qk_sim_run_opts, progress);

qk_sim_scenario *qk_sim_scenario_load_sized(const char *path, const qk_sim_run_opts *opts,
                                            size_t opts_bytes, char *err, size_t err_cap)
{
    qk_sim_scenario *sc = calloc(1, sizeof *sc);
    if (!sc) {
        snprintf(err, err_cap, "%s: out of memory", path);
        return NULL;
    }
    snprintf(sc->path, sizeof sc->path, "%s", path);
    if (opts && qk_abi_copy_in(&sc->opts, sizeof sc->opts, opts, opts_bytes, RUN_OPTS_V1_BYTES)) {
        snprintf(err, err_cap,
                 "%s: the program's qk_sim_run_opts sets a field this libquack does not know "
                 "(or is smaller than the first release's): use the libquack it was built for",
                 path);
        qk_sim_scenario_del(sc);
        return NULL;
    }
    sc->err = err;
    sc->err_cap = err_cap;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_cap, "%s: cannot open: %s", path, strerror(errno));
        qk_sim_scenario_del(sc);
        return NULL;
    }
    reader rd = {f, sc};
    int pr = ini_parse_stream(read_line, &rd, on_kv, sc);
    fclose(f);
    if (pr) {
        if (pr > 0)
            snprintf(err, err_cap,
                     "%s:%d: syntax error; lines are [section], key = value or "
                     "; comment",
                     path, pr);
        else
            snprintf(err, err_cap, "%s: cannot read (out of memory)", path);
        qk_sim_scenario_del(sc);
        return NULL;
    }
    char topology[32];
    uint64_t senders, receivers, seed;
    int r = parse_sim(sc, topology, sizeof topology, &senders, &receivers, &seed);
    if (!r) r = check_sections(sc, topology);
    if (!r && !has_section(sc, "link.forward"))
        r = fail(sc, NULL, "no [link.forward] section; add one with at least rate and delay");
    if (!r) {
        if (sc->opts.has_seed) seed = sc->opts.seed;
        if (sc->opts.duration_ns) sc->duration_ns = sc->opts.duration_ns;
        sc->sim = qk_sim_new(seed);
        if (!sc->sim) r = fail(sc, NULL, "out of memory");
    }
    if (!r)
        r = !strcmp(topology, "dumbbell") ? build_dumbbell(sc, senders, receivers) : build_p2p(sc);
    if (!r) r = build_flows(sc);
    if (!r && !sc->n_flows)
        r = fail(sc, NULL,
                 "no [flow.NAME] section; add e.g. [flow.f1] "
                 "type = cbr, from = a, to = b, rate = 10mbit");
    if (r) {
        qk_sim_scenario_del(sc);
        return NULL;
    }
    sc->err = NULL;
    return sc;
}

qk_sim *qk_sim_scenario_sim(qk_sim_scenario *sc)
{
    return sc->sim;
}

size_t qk_sim_scenario_flow_count(const qk_sim_scenario *sc)
{
    return sc->n_flows;
}

int qk_sim_scenario_flow_summary_sized(qk_sim_scenario *sc, size_t i, const char **name,
                                       qk_sim_flow_summary *caller, size_t caller_bytes)
{
    if (i >= sc->n_flows) return QK_ERR_NOT_FOUND;
    qk_sim_flow_summary s = {0}, *out = &s;
    out->completion_ns = QK_TIME_INFINITE;
    out->owd_p50_ns = out->owd_p99_ns = QK_TIME_INFINITE;
    sc->flows[i].ops.summary(sc->flows[i].obj, sc->sim, out);
    qk_abi_copy_out(caller, caller_bytes, &s, sizeof s);
    if (name) *name = sc->flows[i].name;
    return 0;
}

void qk_sim_scenario_del(qk_sim_scenario *sc)
{
    if (!sc) return;
    for (size_t i = 0; i < sc->n_flows; i++) {
        if (sc->flows[i].ops.free) sc->flows[i].ops.free(sc->flows[i].obj);
        if (sc->flows[i].csv) fclose(sc->flows[i].csv);
    }
    for (size_t i = 0; i < sc->n_lcsv; i++)
        if (sc->lcsv[i].f) fclose(sc->lcsv[i].f);
    free(sc->lcsv);
    free(sc->flows);
    qk_sim_del(sc->sim);
    for (size_t i = 0; i < sc->n_e; i++) {
        free(sc->e[i].section);
        free(sc->e[i].key);
        free(sc->e[i].value);
    }
    free(sc->e);
    free(sc);
}

/* ---- CSV time series ---- */

typedef struct sampler {
    qk_sim_scenario *sc;
    qk_time next_ns;
    int failed;
} sampler;

static qk_time sampler_next(void *ctx)
{
    sampler *s = ctx;
    return s->next_ns <= s->sc->duration_ns ? s->next_ns : QK_TIME_INFINITE;
}

static void sampler_tick(void *ctx, qk_sim *sim, qk_time now)
{
    sampler *s = ctx;
    qk_sim_scenario *sc = s->sc;
    double t = (double)now / 1e9, iv = (double)sc->interval_ns / 1e9;
    for (size_t i = 0; i < sc->n_lcsv; i++) {
        const qk_sim_link_stats *st = qk_sim_link_stats_get(sim, (int)i);
        qk_sim_link_stats *p = &sc->lcsv[i].prev;
        uint64_t drops = 0, pdrops = 0;
        for (int d = 0; d < QK_SIM_DROP_N; d++) {
            drops += st->dropped_pkts[d];
            pdrops += p->dropped_pkts[d];
        }
        uint64_t nq = st->qdelay_samples - p->qdelay_samples;
        double qd = nq ? (double)(st->qdelay_sum_ns - p->qdelay_sum_ns) / (double)nq / 1e6 : 0;
        if (fprintf(sc->lcsv[i].f, "%.6f,%llu,%llu,%.0f,%llu,%llu,%llu,%.6f\n", t,
                    (unsigned long long)st->queue_bytes, (unsigned long long)st->queue_pkts,
                    (double)(st->delivered_bytes - p->delivered_bytes) * 8 / iv,
                    (unsigned long long)(st->delivered_pkts - p->delivered_pkts),
                    (unsigned long long)(drops - pdrops),
                    (unsigned long long)(st->marked_pkts - p->marked_pkts), qd) < 0)
            s->failed = 1;
        *p = *st;
    }
    for (size_t i = 0; i < sc->n_flows; i++) {
        flow *f = &sc->flows[i];
        if (!f->csv) continue;
        uint64_t b = f->ops.recv_bytes ? f->ops.recv_bytes(f->obj) : 0;
        if (fprintf(f->csv, "%.6f,%llu,%.0f\n", t, (unsigned long long)b,
                    (double)(b - f->last_bytes) * 8 / iv) < 0)
            s->failed = 1;
        f->last_bytes = b;
    }
    s->next_ns += sc->interval_ns;
}

static const qk_sim_node_ops sampler_ops = {NULL, sampler_next, sampler_tick};

static int csv_path(char *buf, size_t cap, const char *dir, const char *kind, const char *name,
                    int tmp)
{
    int n = snprintf(buf, cap, "%s/%s_%s.csv%s", dir, kind, name, tmp ? ".tmp" : "");
    return n < 0 || (size_t)n >= cap ? QK_ERR_INVALID_ARG : 0;
}

static int open_csvs(qk_sim_scenario *sc, char *err, size_t cap)
{
    const char *dir = sc->opts.out_dir;
    char p[1024];
    /* mkdir -p */
    snprintf(p, sizeof p, "%s", dir);
    for (char *c = p + 1; *c; c++)
        if (*c == '/') {
            *c = 0;
            mkdir(p, 0777);
            *c = '/';
        }
    if (mkdir(dir, 0777) && errno != EEXIST) {
        snprintf(err, cap, "%s: cannot create directory: %s", dir, strerror(errno));
        return QK_ERR_IO;
    }
    sc->n_lcsv = qk_sim_link_count(sc->sim);
    sc->lcsv = calloc(sc->n_lcsv ? sc->n_lcsv : 1, sizeof *sc->lcsv);
    if (!sc->lcsv) return QK_ERR_NOMEM;
    for (size_t i = 0; i < sc->n_lcsv + sc->n_flows; i++) {
        int is_link = i < sc->n_lcsv;
        const char *name =
            is_link ? qk_sim_link_name(sc->sim, (int)i) : sc->flows[i - sc->n_lcsv].name;
        FILE *f = NULL;
        if (!csv_path(p, sizeof p, dir, is_link ? "link" : "flow", name, 1)) f = fopen(p, "w");
        if (!f) {
            snprintf(err, cap, "%s: cannot write: %s", p, strerror(errno));
            return QK_ERR_IO;
        }
        fputs(is_link ? "time_s,queue_bytes,queue_pkts,throughput_bps,delivered_pkts,drops,"
                        "marks,qdelay_avg_ms\n"
                      : "time_s,recv_bytes,goodput_bps\n",
              f);
        if (is_link)
            sc->lcsv[i].f = f;
        else
            sc->flows[i - sc->n_lcsv].csv = f;
    }
    return 0;
}

/* Close every CSV; rename the .tmp files into place only when all went well. */
static int close_csvs(qk_sim_scenario *sc, int ok, char *err, size_t cap)
{
    char a[1024], b[1024];
    int r = 0;
    for (size_t i = 0; i < sc->n_lcsv + sc->n_flows; i++) {
        int is_link = i < sc->n_lcsv;
        FILE **f = is_link ? &sc->lcsv[i].f : &sc->flows[i - sc->n_lcsv].csv;
        const char *name =
            is_link ? qk_sim_link_name(sc->sim, (int)i) : sc->flows[i - sc->n_lcsv].name;
        if (!*f) continue;
        if (fclose(*f)) ok = 0;
        *f = NULL;
        csv_path(a, sizeof a, sc->opts.out_dir, is_link ? "link" : "flow", name, 1);
        csv_path(b, sizeof b, sc->opts.out_dir, is_link ? "link" : "flow", name, 0);
        if (!ok || rename(a, b)) {
            if (ok) snprintf(err, cap, "%s: cannot rename: %s", a, strerror(errno));
            remove(a);
            r = QK_ERR_IO;
        }
    }
    if (r && !ok) snprintf(err, cap, "%s: writing CSV failed (disk full?)", sc->opts.out_dir);
    return r;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define STOP_CHECK_NS (10 * QK_NS_PER_MS) /* stop_rpcs: checked this often */

/* RPCs completed by the RPC flows of size stop_rpc_size (any size if 0). */
static uint64_t rpcs_done(qk_sim_scenario *sc)
{
    uint64_t n = 0;
    for (size_t i = 0; i < sc->n_flows; i++) {
        qk_sim_flow_summary s;
        qk_sim_scenario_flow_summary(sc, i, NULL, &s);
        if (s.rpc_size_bytes && (!sc->stop_rpc_bytes || s.rpc_size_bytes == sc->stop_rpc_bytes))
            n += s.rpcs_done;
    }
    return n;
}

int qk_sim_scenario_run(qk_sim_scenario *sc, char *err, size_t err_cap)
{
    sampler *smp = calloc(1, sizeof *smp);
    if (!smp || qk_sim_own(sc->sim, smp, free)) {
        snprintf(err, err_cap, "out of memory");
        return QK_ERR_NOMEM;
    }
    *smp = (sampler){sc, sc->interval_ns, 0};
    if (sc->opts.out_dir) {
        int r = open_csvs(sc, err, err_cap);
        if (r) {
            close_csvs(sc, 0, err, err_cap);
            return r;
        }
        if (qk_sim_timer_add(sc->sim, &sampler_ops, smp) < 0) {
            close_csvs(sc, 0, err, err_cap);
            snprintf(err, err_cap, "out of memory");
            return QK_ERR_NOMEM;
        }
    }
    double w0 = wall_s(), last = w0;
    qk_time step = sc->duration_ns / 100 ? sc->duration_ns / 100 : 1;
    if (sc->stop_rpcs && step > STOP_CHECK_NS) step = STOP_CHECK_NS;
    for (qk_time t = 0; t < sc->duration_ns;) {
        t = t + step < sc->duration_ns ? t + step : sc->duration_ns;
        qk_sim_run(sc->sim, t);
        sc->end_ns = t;
        if (sc->stop_rpcs && rpcs_done(sc) >= sc->stop_rpcs) break;
        double w = wall_s();
        if (sc->opts.progress && w - last >= 1.0) {
            fprintf(sc->opts.progress, "sim: %5.1f%% (t=%.3fs of %.3fs, %llu events, %.1fs wall)\n",
                    100.0 * (double)t / (double)sc->duration_ns, (double)t / 1e9,
                    (double)sc->duration_ns / 1e9, (unsigned long long)qk_sim_events(sc->sim),
                    w - w0);
            last = w;
        }
    }
    if (sc->opts.out_dir) return close_csvs(sc, !smp->failed, err, err_cap);
    return 0;
}

/* ---- summary tables ---- */

static void fmt_ms(char *b, size_t cap, qk_time t)
{
    if (t == QK_TIME_INFINITE)
        snprintf(b, cap, "-");
    else
        snprintf(b, cap, "%.3f", (double)t / 1e6);
}

/* The schedule a link's suspend_random key drew, for scripts that need it
 * (bench/media.sh computes each frame's floor from it):
 * "suspend_list forward = 1000ms-1088ms, ...". */
static void print_random_suspensions(const qk_sim_scenario *sc, FILE *f)
{
    for (size_t i = 0; i < qk_sim_link_count(sc->sim); i++) {
        const char *name = qk_sim_link_name(sc->sim, (int)i);
        bool random = false;
        for (size_t k = 0; k < sc->n_e; k++)
            random |= !strncmp(sc->e[k].section, "link.", 5) &&
                      !strcmp(sc->e[k].section + 5, name) &&
                      !strcmp(sc->e[k].key, "suspend_random");
        const qk_sim_link_cfg *c = qk_sim_link_cfg_get(sc->sim, (int)i);
        if (!random || !c->n_suspend_list) continue;
        fprintf(f, "%ssuspend_list %s =", i ? "" : "\n", name);
        for (size_t k = 0; k < c->n_suspend_list; k++)
            fprintf(f, "%s %llums-%llums", k ? "," : "",
                    (unsigned long long)(c->suspend_list[k][0] / QK_NS_PER_MS),
                    (unsigned long long)(c->suspend_list[k][1] / QK_NS_PER_MS));
        fprintf(f, "\n");
    }
}

void qk_sim_scenario_print(qk_sim_scenario *sc, FILE *f)
{
    fprintf(f, "%-12s %-5s %12s %12s %10s %7s %7s %9s %9s %9s %9s %9s  %s\n", "flow", "type",
            "sent_B", "recv_B", "goodput", "drops", "marks", "qd_p50ms", "qd_p99ms", "owd_p50",
            "owd_p99", "done_s", "extra");
    for (size_t i = 0; i < sc->n_flows; i++) {
        qk_sim_flow_summary s;
        const char *name;
        qk_sim_scenario_flow_summary(sc, i, &name, &s);
        const qk_sim_flow_acct *a = qk_sim_flow_acct_get(sc->sim, sc->flows[i].id);
        char q50[24], q99[24], o50[24], o99[24], done[24], gp[24];
        fmt_ms(q50, sizeof q50, a ? qk_hist_pct(&a->qdelay, 50) : QK_TIME_INFINITE);
        fmt_ms(q99, sizeof q99, a ? qk_hist_pct(&a->qdelay, 99) : QK_TIME_INFINITE);
        fmt_ms(o50, sizeof o50, s.owd_p50_ns);
        fmt_ms(o99, sizeof o99, s.owd_p99_ns);
        if (s.completion_ns == QK_TIME_INFINITE)
            snprintf(done, sizeof done, "-");
        else
            snprintf(done, sizeof done, "%.3f", (double)s.completion_ns / 1e9);
        if (s.goodput_bps >= 1e9)
            snprintf(gp, sizeof gp, "%.3fG", s.goodput_bps / 1e9);
        else
            snprintf(gp, sizeof gp, "%.3fM", s.goodput_bps / 1e6);
        fprintf(f, "%-12s %-5s %12llu %12llu %10s %7llu %7llu %9s %9s %9s %9s %9s  %s\n", name,
                sc->flows[i].type, (unsigned long long)s.sent_bytes,
                (unsigned long long)s.recv_bytes, gp, (unsigned long long)(a ? a->drops : 0),
                (unsigned long long)(a ? a->marks : 0), q50, q99, o50, o99, done, s.extra);
    }
    fprintf(f, "\n%-20s %10s %12s %8s %8s %8s %8s %8s %12s %10s\n", "link", "deliv_pkt", "deliv_B",
            "q_drop", "aqm", "loss", "other", "marks", "max_queue_B", "qd_avg_ms");
    for (size_t i = 0; i < qk_sim_link_count(sc->sim); i++) {
        const qk_sim_link_stats *st = qk_sim_link_stats_get(sc->sim, (int)i);
        uint64_t other = st->dropped_pkts[QK_SIM_DROP_MTU] +
                         st->dropped_pkts[QK_SIM_DROP_BLACKHOLE] +
                         st->dropped_pkts[QK_SIM_DROP_NOMEM];
        fprintf(f, "%-20s %10llu %12llu %8llu %8llu %8llu %8llu %8llu %12llu %10.3f\n",
                qk_sim_link_name(sc->sim, (int)i), (unsigned long long)st->delivered_pkts,
                (unsigned long long)st->delivered_bytes,
                (unsigned long long)st->dropped_pkts[QK_SIM_DROP_QUEUE],
                (unsigned long long)st->dropped_pkts[QK_SIM_DROP_AQM],
                (unsigned long long)st->dropped_pkts[QK_SIM_DROP_LOSS], (unsigned long long)other,
                (unsigned long long)st->marked_pkts, (unsigned long long)st->max_queue_bytes,
                st->qdelay_samples ? (double)st->qdelay_sum_ns / (double)st->qdelay_samples / 1e6
                                   : 0.0);
    }
    print_random_suspensions(sc, f);
    fprintf(f, "\nseed %llu, %llu events, %llu no-route drops\n",
            (unsigned long long)qk_sim_seed(sc->sim), (unsigned long long)qk_sim_events(sc->sim),
            (unsigned long long)qk_sim_noroute_drops(sc->sim));
    if (sc->stop_rpcs && sc->end_ns < sc->duration_ns)
        fprintf(f, "stopped at %.3f s: %llu RPCs done (stop_rpcs)\n", (double)sc->end_ns / 1e9,
                (unsigned long long)rpcs_done(sc));
}
