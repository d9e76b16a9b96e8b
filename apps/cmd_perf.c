/* SPDX-License-Identifier: MIT */
/* `quack perf server|client`: option parsing (see perf.h for the protocol). */
#include "cli_errors.h"
#include "commands.h"
#include "perf.h"

#include <quack/workers.h>

#include <stdarg.h>
#include <quack/sim.h>
#include <stdlib.h>
#include <string.h>

static void perf_usage(FILE *f)
{
    fprintf(f,
            "usage: quack perf server --listen ADDR:PORT [options]\n"
            "       quack perf client --connect ADDR:PORT [options]\n"
            "\n"
            "QUIC perf protocol (ALPN \"perf\", as quinn's and quic-go's perf tools): per\n"
            "request the client opens a bidirectional stream, sends the download size\n"
            "(8 bytes, big-endian), the upload bytes and FIN; the server drains the upload\n"
            "and sends the requested bytes back. Both sides check every byte received\n"
            "against a deterministic pattern.\n"
            "\n"
            "server options:\n"
            "  --listen ADDR:PORT     address to listen on, e.g. 127.0.0.1:4433, [::]:4433\n"
            "                         (port 0 picks a free one; printed as 'listening on')\n"
            "  --cert FILE --key FILE certificate and key (PEM); without them a self-signed\n"
            "                         P-256 certificate is generated in memory\n"
            "                         The server prints 'pin: HEX' (SHA-256 of its public key)\n"
            "                         for the client's --pin. It runs until "
            "SIGINT/SIGTERM.\n"
            "  --threads N            worker threads, each with its own endpoint and\n"
            "                         SO_REUSEPORT socket (default 1)\n" CLI_ADMISSION_HELP
                CLI_PREFERRED_HELP "client options:\n"
            "  --connect ADDR:PORT    server address\n"
            "  --pin HEX              accept only the server key with this SHA-256 SPKI pin\n"
            "  --insecure             do not verify the server at all\n"
            "  --handshake-timeout T  give up when the handshake has not completed after T\n"
            "                         (default 10s)\n"
            "  --duration S           issue requests back to back for S seconds\n"
            "                         (without it: one round of --streams requests)\n"
            "  --download-size N      bytes the server sends per request (default 1M;\n"
            "                         suffixes K, M, G = KiB, MiB, GiB)\n"
            "  --upload-size N        bytes the client sends per request (default 1M)\n"
            "  --streams N            concurrent requests (default 1, max %u)\n"
            "  --no-preferred-addr    stay on the address connected to even when the server\n"
            "                         offers a preferred_address (RFC 9000 §9.6)\n"
            "common options:\n"
            "  --cc reno|cubic|bbr    congestion controller (default cubic)\n"
            "  --pacing-gain PCT      pacing rate in congestion avoidance = PCT/100 x\n"
            "                         cwnd / smoothed RTT (100..400, default 100)\n"
            "  --keep-alive TIME      send a PING after TIME without traffic (e.g. 15s,\n"
            "                         500ms; below the 10 s idle timeout; default off)\n"
            "  --no-protection        null packet protection (benchmarks only); both sides\n"
            "                         must set it: it uses ALPN \"perf-noprot\", so a\n"
            "                         mismatched pair fails the handshake\n"
            "  --no-ecn               send Not-ECT (default: ECT(0), validated per RFC 9000\n"
            "                         §13.4.2; --stats shows the ECN counts)\n"
            "  --qlog DIR             write a qlog per connection into DIR\n"
            "  --ack-frequency off|auto|auto-threshold|THRESHOLD[,DELAY_US[,REORDER]]\n"
            "                         what to ask the peer with ACK_FREQUENCY (default auto;\n"
            "                         only a peer advertising min_ack_delay is asked):\n"
            "                         off = RFC 9000 ACKs; auto = threshold from cwnd and\n"
            "                         RTT, plus IMMEDIATE_ACK at the end of each burst\n"
            "                         while no queue stands; auto-threshold = auto without\n"
            "                         the burst-end ACKs (for comparison); or a fixed\n"
            "                         ack-eliciting threshold, max delay (us, default\n"
            "                         25000) and reordering threshold (default 3)\n"
            "  --autotune on|off      grow receive windows when credit goes fast (default on)\n"
            "  --window BYTES         initial stream receive window (connection: 4x);\n"
            "                         default 16M stream / 32M connection\n"
            "  --max-window BYTES     auto-tuning cap per stream (connection: 1.5x;\n"
            "                         default 64M / 96M)\n"
            "  --budget BYTES         cap on receive-window growth for this endpoint\n"
            "                         (all connections; default none)\n"
            "  --max-udp-payload N    largest UDP payload sent (1200..65527, default 1452);\n"
            "                         DPLPMTUD probes up to it, and the peer's\n"
            "                         max_udp_payload_size caps it (RFC 9000 §14, §18.2)\n"
            "  --stats                print connection statistics at the end\n"
            "  --quiet                no per-second progress lines\n"
            "  -h, --help             this text\n"
            "\n"
            "Progress (stderr, once per second): elapsed, download/upload Mbit/s, smoothed\n"
            "RTT, congestion window, lost packets. At the end the client prints the table of\n"
            "upload/download durations, first-byte latency (FBL) and throughputs per request\n"
            "(AVG, P0, P10, P50, P90, P100) and the requests per second. Exit status 0 when\n"
            "every request completed (or the duration ended) with every byte verified.\n",
            QK_PERF_MAX_STREAMS);
}

__attribute__((format(printf, 1, 2))) static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "quack perf: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'quack perf --help' for the options.\n");
    return 2;
}

/* parse_*_opt's answer for an option that is not theirs. */
#define OPT_NOT_MINE (-1)

/* The value of an option that takes one: *v = argv[++*i] (NULL for a flag).
 * Returns 0, or an exit code when the value is missing. */
static int option_value(int argc, char **argv, int *i, const char **v)
{
    const char *a = argv[*i];
    static const char *const with_arg[] = {
        "--listen",   "--connect",         "--cert",        "--key",        "--pin",
        "--duration", "--download-size",   "--upload-size", "--streams",    "--cc",
        "--qlog",     "--ack-frequency",   "--autotune",    "--window",     "--max-window",
        "--budget",   "--max-udp-payload", "--pacing-gain", "--keep-alive", "--preferred-addr",
        "--threads"};
    *v = NULL;
    for (size_t k = 0; k < sizeof with_arg / sizeof with_arg[0]; k++)
        if (!strcmp(a, with_arg[k])) {
            if (*i + 1 >= argc) return bad("%s needs a value", a);
            *v = argv[++*i];
        }
    return 0;
}

/* Where to listen or connect and how the server is known: --listen,
 * --connect, --cert, --key, --pin. Returns 0, an exit code, or OPT_NOT_MINE. */
static int parse_endpoint_opt(perf_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--listen") || !strcmp(a, "--connect")) {
        if ((o->server != !strcmp(a, "--listen")))
            return bad("%s does not apply to this side (server: --listen, client: --connect)", a);
        o->addr_str = v;
        int arc = cli_parse_addr("perf", a, v, &o->addr);
        if (arc) return arc;
    } else if (!strcmp(a, "--cert")) {
        o->cert_file = v;
    } else if (!strcmp(a, "--key")) {
        o->key_file = v;
    } else if (!strcmp(a, "--pin")) {
        o->pin = v;
    } else {
        return OPT_NOT_MINE;
    }
    return 0;
}

/* The requests the client makes: --duration, --download-size, --upload-size,
 * --streams. Returns 0, an exit code, or OPT_NOT_MINE. */
static int parse_load_opt(perf_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--duration")) {
        char *end;
        o->duration_s = strtod(v, &end);
        if (*end || !(o->duration_s > 0) || o->duration_s > 86400)
            return bad("--duration wants seconds in (0, 86400], not '%s'", v);
    } else if (!strcmp(a, "--download-size") || !strcmp(a, "--upload-size")) {
        uint64_t *dst = a[2] == 'd' ? &o->download_bytes : &o->upload_bytes;
        if (cli_parse_size(v, dst)) return bad("bad size '%s' (e.g. 1048576, 64K, 1M, 1G)", v);
    } else if (!strcmp(a, "--streams")) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > (long)QK_PERF_MAX_STREAMS)
            return bad("--streams wants 1..1000, not '%s'", v);
        o->streams = (unsigned)n;
    } else {
        return OPT_NOT_MINE;
    }
    return 0;
}

/* How packets are sent: --cc, --ack-frequency, --pacing-gain, --keep-alive,
 * --max-udp-payload. Returns 0, an exit code, or OPT_NOT_MINE. */
static int parse_sending_opt(perf_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--cc")) {
        if (cli_parse_cc(v, &o->cc))
            return bad("--cc wants one of %s, not '%s'", qk_cc_kind_names(), v);
    } else if (!strcmp(a, "--ack-frequency")) {
        if (perf_parse_ackfreq(v, o))
            return bad(
                "--ack-frequency wants off, auto, auto-threshold or THRESHOLD[,DELAY_US[,REORDER]] "
                "(e.g. 10,25000,3), not '%s'",
                v);
    } else if (!strcmp(a, "--pacing-gain")) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 100 || n > 400)
            return bad("--pacing-gain wants a percentage 100..400 (RFC 9002 §7.7 N >= 1), not '%s'",
                       v);
        o->pacing_gain_pct = (uint32_t)n;
    } else if (!strcmp(a, "--threads")) {
        char *end;
        long n = strtol(v, &end, 10);
        if (!o->server) return bad("%s", "--threads applies to the server");
        if (*end || n < 1 || n > QK_WORKERS_MAX) return bad("--threads wants 1..64, not '%s'", v);
        o->threads = (unsigned)n;
    } else if (!strcmp(a, "--keep-alive")) {
        /* RFC 9000 §10.1.2: useful only below the idle timeout (10 s here). */
        if (qk_sim_parse_time(v, &o->keep_alive_ns) || !o->keep_alive_ns ||
            o->keep_alive_ns >= 10 * QK_NS_PER_S)
            return bad("--keep-alive wants a time below the 10 s idle timeout, e.g. 2s or 500ms, "
                       "not '%s'",
                       v);
    } else if (!strcmp(a, "--max-udp-payload")) {
        if (cli_parse_size(v, &o->max_udp_bytes) || o->max_udp_bytes < 1200 ||
            o->max_udp_bytes > 65527)
            return bad("--max-udp-payload wants 1200..65527 bytes, not '%s'", v);
    } else if (!strcmp(a, "--preferred-addr")) {
        if (!o->server) return bad("%s", "--preferred-addr is a server option");
        if (cli_parse_preferred(v, &o->preferred_v4, &o->preferred_v6))
            return bad("--preferred-addr %s: want ADDR:PORT, at most one per address family", v);
    } else if (!strcmp(a, "--no-preferred-addr")) {
        if (o->server) return bad("%s", "--no-preferred-addr is a client option");
        o->no_preferred = true;
    } else {
        return OPT_NOT_MINE;
    }
    return 0;
}

/* The receive windows: --autotune, --window, --max-window, --budget. Returns
 * 0, an exit code, or OPT_NOT_MINE. */
static int parse_window_opt(perf_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--autotune")) {
        if (!strcmp(v, "on"))
            o->autotune = 1;
        else if (!strcmp(v, "off"))
            o->autotune = -1;
        else
            return bad("--autotune wants on or off, not '%s'", v);
    } else if (!strcmp(a, "--window") || !strcmp(a, "--max-window") || !strcmp(a, "--budget")) {
        uint64_t *dst = !strcmp(a, "--window")       ? &o->window_bytes
                        : !strcmp(a, "--max-window") ? &o->max_window_bytes
                                                     : &o->budget_bytes;
        if (cli_parse_size(v, dst) || *dst < 16384 || *dst > (1ull << 40))
            return bad("bad size '%s' for a window or budget (16K to 1T, e.g. 64K, 16M)", v);
    } else {
        return OPT_NOT_MINE;
    }
    return 0;
}

/* The options without a value, and --qlog DIR. Returns 0 or OPT_NOT_MINE. */
static int parse_flag_opt(perf_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--qlog"))
        o->qlog_dir = v;
    else if (!strcmp(a, "--insecure"))
        o->insecure = true;
    else if (!strcmp(a, "--no-protection"))
        o->no_protection = true;
    else if (!strcmp(a, "--no-ecn"))
        o->no_ecn = true;
    else if (!strcmp(a, "--stats"))
        o->stats = true;
    else if (!strcmp(a, "--quiet"))
        o->quiet = true;
    else
        return OPT_NOT_MINE;
    return 0;
}

/* Parse one option at argv[*i]. Returns 0, or an exit code for a bad option. */
static int parse_opt(perf_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (o->server) {
        int r = cli_parse_admission(&o->admission, argc, argv, i, "quack perf server");
        if (r) return r < 0 ? 2 : 0;
    }
    const char *v;
    int rc = option_value(argc, argv, i, &v);
    if (rc) return rc;
    rc = parse_endpoint_opt(o, a, v);
    if (rc == OPT_NOT_MINE) rc = parse_load_opt(o, a, v);
    if (rc == OPT_NOT_MINE) rc = parse_sending_opt(o, a, v);
    if (rc == OPT_NOT_MINE) rc = parse_window_opt(o, a, v);
    if (rc == OPT_NOT_MINE) rc = parse_flag_opt(o, a, v);
    if (rc == OPT_NOT_MINE) rc = v ? 0 : bad("unknown option '%s'", a);
    return rc;
}

static int check_opts(perf_opts *o)
{
    if (!o->addr_str)
        return bad("%s", o->server ? "the server needs --listen ADDR:PORT"
                                   : "the client needs --connect ADDR:PORT");
    if (o->server) {
        if (!o->cert_file != !o->key_file) return bad("%s", "--cert and --key go together");
        if (o->pin || o->insecure || o->duration_s > 0 || o->streams)
            return bad("%s", "--pin, --insecure, --duration and --streams are client options");
    } else {
        if (o->cert_file || o->key_file) return bad("%s", "--cert/--key are server options");
        if (!o->pin && !o->insecure)
            return bad("%s", "the client needs --pin HEX (printed by the server) or --insecure");
        if (o->pin && o->insecure) return bad("%s", "--pin and --insecure exclude each other");
        if (!o->streams) o->streams = 1;
    }
    return 0;
}

int qk_cmd_perf(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        perf_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    perf_opts o = {.cc = QK_CONFIG_CC_CUBIC, .download_bytes = 1u << 20, .upload_bytes = 1u << 20};
    if (!strcmp(argv[1], "server"))
        o.server = true;
    else if (strcmp(argv[1], "client"))
        return bad("unknown mode '%s' (want server or client)", argv[1]);
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            perf_usage(stdout);
            return 0;
        }
        int rc = o.server ? 0 : cli_parse_handshake_timeout("perf", argc, argv, &i, &o.admission);
        if (rc == 1) continue;
        if (rc) return rc;
        rc = parse_opt(&o, argc, argv, &i);
        if (rc) return rc;
    }
    int rc = check_opts(&o);
    if (rc) return rc;
    const char *who = o.server ? "quack perf server" : "quack perf client";
    if (cli_check_dir(who, "--qlog", o.qlog_dir) || cli_check_file(who, "--cert", o.cert_file) ||
        cli_check_file(who, "--key", o.key_file))
        return 2;
    if (o.insecure) cli_warn_insecure("quack perf client");
    rc = o.server ? perf_server(&o) : perf_client(&o);
    return rc ? 1 : 0;
}
