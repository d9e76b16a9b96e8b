/* SPDX-License-Identifier: MIT */
/* `quack netem`: real-time UDP relay on loopback applying the simulator's link model. */
#include "cli_options.h"
#include "commands.h"
#include "sim/relay.h"
#include "sim/tcprelay.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static void netem_usage(FILE *f)
{
    fprintf(f,
            "usage: quack netem --listen ADDR:PORT --to ADDR:PORT [LINK OPTIONS]\n"
            "                   [--stats] [--duration TIME] [--seed N]\n"
            "       quack netem --listen ADDR:P1-P2 --to ADDR:Q1-Q2 [--blackhole-port Q:T1-[T2]]\n"
            "                   [LINK OPTIONS] ...\n"
            "       quack netem --tcp --listen ADDR:PORT --to ADDR:PORT [--delay T]\n"
            "                   [--rate R] [--limit BYTES] [fwd-/ret- forms] [--stats]\n\n"
            "--tcp: a TCP delay line. Each accepted connection gets one to --to; each\n"
            "direction's bytes pass a serializer at --rate and wait --delay, in segments\n"
            "of 1448 bytes; reading stops while --limit bytes (default 256kB) wait for\n"
            "the serializer, so TCP flow control holds the sender back. No loss.\n\n"
            "Relays UDP datagrams from clients at --listen to the server at --to through\n"
            "the forward link model, and replies back through the return link model to\n"
            "the last client seen. ECN codepoints are preserved and CE marks applied.\n\n"
            "Link options apply to both directions; prefix fwd- or ret- for one only\n"
            "(e.g. --fwd-loss 1%%). Keys (units in docs/sim.md):\n"
            "  --delay 25ms --jitter 1ms --rate 100mbit --loss 1%% --reorder 1%%\n"
            "  --reorder-delay 5ms --limit 150kB --limit-time 50ms --limit-pkts 1000\n"
            "  --aqm droptail|step|red --step-k 20pkt|1ms --red-min/--red-max/--red-max-p\n"
            "  --ge-p-gb/--ge-p-bg/--ge-loss-good/--ge-loss-bad --loss-list 3,7,10-12\n"
            "  --duplicate 1%% --corrupt 0.1%% --mtu 1500 --suspend-start/--suspend-period\n"
            "  --suspend/--suspend-count --rate-schedule 2s:50mbit --blackhole 3s-4s\n"
            "Without a limit option the queue holds 1000 packets (as Linux netem).\n\n"
            "Port ranges (a server that listens on many ports, e.g. quack tunnel's port\n"
            "hopping): --listen ADDR:P1-P2 --to ADDR:Q1-Q2, the same number of ports (at\n"
            "most 1024): port P1+i relays to Q1+i, one socket per listen port and one\n"
            "toward the server (which sees one client address on all its ports), every\n"
            "port through the same two links (one rate, queue, loss... for all).\n"
            "  --blackhole-port Q:T1-[T2]  drop everything to and from server port Q\n"
            "                   from T1 after the start, until T2 (none: for good),\n"
            "                   e.g. 20005:5s- (repeatable, up to 16; counted in\n"
            "                   --stats as dark_drops). Q = active: the port the\n"
            "                   client sent to last at T1 (a censor blocking the port\n"
            "                   in use), e.g. active:5s-\n"
            "--stats prints one line per second; SIGINT/SIGTERM stop cleanly.\n");
}

static int set_both(qk_relay_cfg *c, const char *opt, const char *val)
{
    char key[64];
    int which = 3; /* 1 = fwd, 2 = ret */
    if (!strncmp(opt, "fwd-", 4))
        which = 1, opt += 4;
    else if (!strncmp(opt, "ret-", 4))
        which = 2, opt += 4;
    if (strlen(opt) >= sizeof key) return QK_ERR_NOT_FOUND;
    for (size_t i = 0; (key[i] = opt[i] == '-' ? '_' : opt[i]); i++) {
    }
    const char *fix = NULL;
    int r = 0;
    if (which & 1) r = qk_sim_link_cfg_set(&c->fwd, key, val, &fix);
    if (!r && (which & 2)) r = qk_sim_link_cfg_set(&c->ret, key, val, &fix);
    if (r == QK_ERR_CONFIG)
        fprintf(stderr, "quack netem: --%s '%s': expected %s\n", opt, val, fix ? fix : "?");
    return r;
}

/* ADDR:P1-P2 (or ADDR:PORT): the address of P1 and the number of ports.
 * Returns 0 or QK_ERR_CONFIG. */
static int parse_range(const char *v, qk_addr *out, unsigned *n_ports)
{
    char buf[300];
    uint16_t lo, hi;
    *n_ports = 1;
    int r = cli_parse_port_range(v, buf, sizeof buf, &lo, &hi);
    if (!r) return qk_relay_parse_addr(v, out);
    if (r < 0 || qk_relay_parse_addr(buf, out)) return QK_ERR_CONFIG;
    if ((unsigned)(hi - lo) + 1 > QK_RELAY_MAX_PORTS) return QK_ERR_CONFIG;
    *n_ports = (unsigned)(hi - lo) + 1;
    return 0;
}

/* --blackhole-port Q:T1-[T2]. Returns 0 or QK_ERR_CONFIG. */
static int parse_dark(qk_relay_cfg *c, const char *v)
{
    char t1[64], t2[64] = "";
    unsigned port;
    int used = 0;
    if (c->n_dark == QK_RELAY_MAX_DARK) return QK_ERR_CONFIG;
    if (!strncmp(v, "active:", 7)) { /* port 0: the one in use at T1 */
        if (sscanf(v + 7, "%63[^-]-%n", t1, &used) != 1 || !used) return QK_ERR_CONFIG;
        used += 7;
        port = 0;
    } else if (sscanf(v, "%u:%63[^-]-%n", &port, t1, &used) != 2 || !used || !port ||
               port > 65535) {
        return QK_ERR_CONFIG;
    }
    if (strlen(v + used) >= sizeof t2) return QK_ERR_CONFIG;
    strcpy(t2, v + used);
    qk_relay_dark *d = &c->dark[c->n_dark];
    d->to_port = (uint16_t)port;
    d->end_ns = QK_TIME_INFINITE;
    if (qk_sim_parse_time(t1, &d->start_ns)) return QK_ERR_CONFIG;
    if (t2[0] && (qk_sim_parse_time(t2, &d->end_ns) || d->end_ns <= d->start_ns))
        return QK_ERR_CONFIG;
    c->n_dark++;
    return 0;
}

/* The port ranges of --listen and --to (n_listen, n_to ports) and the
 * --blackhole-port rules together. Returns 0 or 2 (printed). */
static int check_ranges(qk_relay_cfg *cfg, unsigned n_listen, unsigned n_to)
{
    if (n_listen != n_to) {
        fprintf(stderr,
                "quack netem: --listen has %u port(s), --to %u: give both ranges the same "
                "number of ports\n",
                n_listen, n_to);
        return 2;
    }
    cfg->n_ports = n_listen;
    for (size_t k = 0; k < cfg->n_dark; k++) {
        unsigned lo = qk_addr_port(&cfg->to);
        if (cfg->dark[k].to_port &&
            (cfg->dark[k].to_port < lo || cfg->dark[k].to_port >= lo + cfg->n_ports)) {
            fprintf(stderr, "quack netem: --blackhole-port %u is not a port of --to\n",
                    (unsigned)cfg->dark[k].to_port);
            return 2;
        }
    }
    return 0;
}

static int has_limit(const qk_sim_link_cfg *c)
{
    return c->limit_bytes || c->limit_ns || c->limit_pkts;
}

/* --tcp: only delay, rate and limit (fwd-/ret- forms too). */
static int tcp_set(qk_tcprelay_cfg *c, const char *opt, const char *val)
{
    int which = 3;
    if (!strncmp(opt, "fwd-", 4))
        which = 1, opt += 4;
    else if (!strncmp(opt, "ret-", 4))
        which = 2, opt += 4;
    qk_tcprelay_dir_cfg d;
    for (int k = 1; k <= 2; k++) {
        if (!(which & k)) continue;
        qk_tcprelay_dir_cfg *t = k == 1 ? &c->fwd : &c->ret;
        d = *t;
        int r;
        if (!strcmp(opt, "delay"))
            r = qk_sim_parse_time(val, &d.delay_ns);
        else if (!strcmp(opt, "rate"))
            r = qk_sim_parse_rate(val, &d.rate_bps);
        else if (!strcmp(opt, "limit"))
            r = qk_sim_parse_bytes(val, &d.limit_bytes);
        else
            return QK_ERR_NOT_FOUND;
        if (r) return QK_ERR_CONFIG;
        *t = d;
    }
    return 0;
}

static int netem_tcp(int argc, char **argv)
{
    qk_tcprelay_cfg c;
    memset(&c, 0, sizeof c);
    c.fwd.limit_bytes = c.ret.limit_bytes = 256u << 10;
    int have = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--tcp")) continue;
        if (!strcmp(a, "--stats")) {
            c.stats = stdout;
            continue;
        }
        if (strncmp(a, "--", 2) || i + 1 >= argc) {
            fprintf(stderr, "quack netem: unexpected argument '%s'; see quack netem --help\n", a);
            return 2;
        }
        const char *v = argv[++i];
        int r;
        if (!strcmp(a, "--listen"))
            r = qk_relay_parse_addr(v, &c.listen), have |= 1;
        else if (!strcmp(a, "--to"))
            r = qk_relay_parse_addr(v, &c.to), have |= 2;
        else if (!strcmp(a, "--duration"))
            r = qk_sim_parse_time(v, &c.duration_ns);
        else
            r = tcp_set(&c, a + 2, v);
        if (r == QK_ERR_NOT_FOUND) {
            fprintf(stderr,
                    "quack netem: --tcp takes --delay, --rate, --limit (and fwd-/ret-), "
                    "not '%s'\n",
                    a);
            return 2;
        }
        if (r) {
            fprintf(stderr,
                    "quack netem: %s '%s' is invalid (e.g. 30ms, 100mbit, 256kB, "
                    "127.0.0.1:4433)\n",
                    a, v);
            return 2;
        }
    }
    if (have != 3) {
        fprintf(stderr, "quack netem: --listen and --to are required\n");
        return 2;
    }
    install_signals();
    char err[256];
    if (qk_tcprelay_run(&c, &g_stop, err, sizeof err)) {
        fprintf(stderr, "quack netem: %s\n", err);
        return 1;
    }
    return 0;
}

static bool wants_tcp(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--tcp")) return true;
    return false;
}

/* Run the relay until a signal or --duration. Returns 0 or 1. */
static int netem_run(const qk_relay_cfg *cfg)
{
    struct rlimit rl; /* a socket per port: the soft open-files limit raised toward the hard one */
    rlim_t want = (rlim_t)cfg->n_ports + 64;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    install_signals();
    char err[512];
    qk_relay_result res;
    if (qk_relay_run(cfg, &g_stop, &res, err, sizeof err)) {
        fprintf(stderr, "quack netem: %s\n", err);
        return 1;
    }
    if (cfg->stats)
        printf("netem done: fwd %llu delivered, ret %llu delivered, %llu dropped by "
               "--blackhole-port\n",
               (unsigned long long)res.fwd.delivered_pkts,
               (unsigned long long)res.ret.delivered_pkts, (unsigned long long)res.dark_drops);
    return 0;
}

int qk_cmd_netem(int argc, char **argv)
{
    if (wants_tcp(argc, argv)) return netem_tcp(argc, argv);
    qk_relay_cfg c;
    memset(&c, 0, sizeof c);
    int have_listen = 0, have_to = 0;
    unsigned n_listen = 1, n_to = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            netem_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--stats")) {
            c.stats = stdout;
            continue;
        }
        if (strncmp(a, "--", 2) || i + 1 >= argc) {
            fprintf(stderr, "quack netem: unexpected argument '%s'%s\n\n", a,
                    i + 1 >= argc ? " (missing value?)" : "");
            netem_usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        int r = 0;
        if (!strcmp(a, "--listen")) {
            r = parse_range(v, &c.listen, &n_listen);
            have_listen = 1;
        } else if (!strcmp(a, "--to")) {
            r = parse_range(v, &c.to, &n_to);
            have_to = 1;
        } else if (!strcmp(a, "--blackhole-port")) {
            r = parse_dark(&c, v);
        } else if (!strcmp(a, "--duration")) {
            r = qk_sim_parse_time(v, &c.duration_ns);
        } else if (!strcmp(a, "--seed")) {
            char *end;
            c.seed = strtoull(v, &end, 0);
            r = *end || end == v ? QK_ERR_CONFIG : 0;
        } else {
            r = set_both(&c, a + 2, v);
            if (r == QK_ERR_NOT_FOUND) {
                fprintf(stderr, "quack netem: unknown option '%s'; see quack netem --help\n", a);
                return 2;
            }
            if (r) return 2;
            continue;
        }
        if (r) {
            fprintf(stderr, "quack netem: %s '%s' is invalid; use e.g. %s\n", a, v,
                    !strcmp(a, "--duration") ? "10s"
                    : !strcmp(a, "--seed")   ? "7"
                    : !strcmp(a, "--blackhole-port")
                        ? "20005:5s-, 20005:5s-8s or active:5s- (up to 16)"
                        : "127.0.0.1:4433, [::1]:4433 or 127.0.0.1:20000-20099 (up to "
                          "1024 ports)");
            return 2;
        }
    }
    if (!have_listen || !have_to) {
        fprintf(stderr, "quack netem: --listen and --to are required\n\n");
        netem_usage(stderr);
        return 2;
    }
    if (check_ranges(&c, n_listen, n_to)) return 2;
    if (!has_limit(&c.fwd)) c.fwd.limit_pkts = 1000;
    if (!has_limit(&c.ret)) c.ret.limit_pkts = 1000;
    const char *why;
    if (qk_sim_link_cfg_check(&c.fwd, &why) || qk_sim_link_cfg_check(&c.ret, &why)) {
        fprintf(stderr, "quack netem: %s\n", why);
        return 2;
    }
    return netem_run(&c);
}
