/* `quack perf`: the QUIC perf protocol (ALPN "perf", as in quinn's and
 * quic-go's perf tools). The client opens a bidirectional stream per request,
 * writes the download size as an 8-byte big-endian integer, then the upload
 * bytes, then FIN; the server drains the upload and sends that many bytes
 * back, then FIN. Both directions carry a deterministic pattern (see
 * perf_pattern) so each side checks every byte it receives. */
#ifndef QK_APPS_PERF_H
#define QK_APPS_PERF_H

#include <quack/io.h>
#include <quack/quack.h>
#include <quack/workers.h>
#include <stdbool.h>
#include <stdio.h>

#define QK_PERF_ALPN           "perf"
#define QK_PERF_ALPN_NOPROT    "perf-noprot" /* --no-protection: a mismatch fails the handshake */
#define QK_PERF_PERIOD         65521u        /* pattern period: prime, so chunk slips show */
#define QK_PERF_CHUNK_BYTES    65536u        /* bytes readable from perf_pattern() */
#define QK_PERF_DATAGRAM_BYTES 1452u         /* 1500-byte MTU minus IPv6 + UDP headers */
#define QK_PERF_MAX_STREAMS    1000u

/* Server admission control (RFC 9000 §8.1.2): --retry, --max-handshakes,
 * --handshake-timeout, --max-connections, shared by serve, perf server and tunnel server. */
typedef struct perf_admission {
    bool retry_set, max_set, timeout_set, conns_set;
    qk_retry_mode retry;
    size_t max_handshakes;
    size_t max_connections;
    qk_time handshake_timeout_ns;
} perf_admission;

#define PERF_ADMISSION_HELP                                                                        \
    "  --retry [MODE]         Retry (RFC 9000 §8.1.2): auto (default: above\n"                    \
    "                         --max-handshakes unvalidated handshakes), always (also\n"            \
    "                         bare --retry) or never (then drop above the limit)\n"                \
    "  --max-handshakes N     unvalidated handshakes in progress before Retry\n"                   \
    "                         (default max connections / 8); Initials are dropped at 2N\n"         \
    "  --handshake-timeout T  close half-open connections after T (default 10s)\n"                 \
    "  --max-connections N    connections at once (default 1024 per worker); one more\n"           \
    "                         is refused at once with CONNECTION_REFUSED\n"

/** Parse the admission option at argv[*i] (advancing *i past its value).
 * Returns 1 when it was one, 0 when argv[*i] is not an admission option, or
 * -1 after printing why the value is bad (prefixed by who). */
int perf_parse_admission(perf_admission *a, int argc, char **argv, int *i, const char *who);
/** Set what was given on cfg. */
void perf_admission_apply(const perf_admission *a, qk_config *cfg);
/** One line of the endpoint's admission and stateless counters. */
void perf_print_endpoint_stats(FILE *f, const qk_endpoint *ep);

typedef struct perf_opts {
    bool server;
    const char *addr_str;
    qk_addr addr;
    const char *cert_file, *key_file;
    const char *pin;
    bool insecure;
    double duration_s; /* 0: one round of --streams requests */
    uint64_t download_bytes, upload_bytes;
    unsigned streams;
    qk_cc_kind cc;
    uint32_t pacing_gain_pct; /**< qk_config.pacing_gain_ca_pct (0 = default) */
    qk_time keep_alive_ns;    /**< qk_config.keep_alive_ns (0 = off) */
    bool no_protection;
    bool no_ecn; /* ECN (ECT(0) marking, RFC 9000 §13.4) is on unless --no-ecn */
    const char *qlog_dir;
    bool stats;
    bool quiet;               /* no progress lines */
    perf_admission admission; /* server */
    unsigned threads;         /* server: --threads N (0: 1) */
    /* Flow control (0 = perf's defaults). */
    int autotune;              /* 1 on, -1 off, 0 default (on) */
    uint64_t window_bytes;     /* initial stream receive window */
    uint64_t max_window_bytes; /* auto-tuning cap per stream */
    uint64_t budget_bytes;     /* endpoint receive-memory budget */
    uint64_t max_udp_bytes;    /* --max-udp-payload (0 = QK_PERF_DATAGRAM_BYTES) */
    /* --ack-frequency: what to ask the peer (ack-frequency-12). */
    bool ackfreq_set; /* false: the library defaults */
    qk_ackfreq_mode ackfreq_mode;
    uint64_t ackfreq_threshold; /* fixed */
    uint64_t ackfreq_delay_us;  /* fixed, 0 = 25 ms */
    uint64_t ackfreq_reorder;   /* fixed, 0 = the loss packet threshold */
    /* preferred_address (RFC 9000 §9.6): server --preferred-addr, client --no-preferred-addr */
    qk_addr preferred_v4, preferred_v6;
    bool no_preferred;
} perf_opts;

/** Parse off|auto|THRESHOLD[,DELAY_US[,REORDER]] into o. Returns 0 or QK_ERR_INVALID_ARG. */
int perf_parse_ackfreq(const char *s, perf_opts *o);

/** Pointer to QK_PERF_CHUNK_BYTES pattern bytes starting at stream offset off. */
const uint8_t *perf_pattern(uint64_t off);

/** True when buf[0..len) (len <= QK_PERF_CHUNK_BYTES) equals the pattern at off. */
bool perf_pattern_check(const uint8_t *buf, size_t len, uint64_t off);

/**
 * qk_endpoint_new(cfg), or NULL after printing "WHO: invalid configuration:
 * WHY" to stderr with qk_config_check()'s explanation (or "out of memory"
 * when the configuration is fine). The caller then exits non-zero.
 */
qk_endpoint *perf_endpoint_new(const qk_config *cfg, const char *who);

/* A usage error of `quack CMD`: prints "quack CMD: <message>" and where the
 * options are explained; returns 2 (the exit status for bad usage). */
__attribute__((format(printf, 2, 3))) int perf_usage_error(const char *cmd, const char *fmt, ...);

/* The options quack get and quack serve share (HTTP/3 commands). */
typedef struct perf_h3_opts {
    const char *qlog, *keylog, *cc, *version, *ciphers;
    bool ecn, no_gso, no_early_data;
    uint64_t key_update_pkts; /* 0: only at the AEAD limits */
} perf_h3_opts;

/* A shared flag (--ecn, --no-gso, --no-early-data, --key-update[=N]) of
 * quack get/serve: 1 when a was one and was set, 0 when it is not one,
 * 2 after a usage error was printed ("quack CMD: ..."). */
int perf_h3_flag(const char *cmd, perf_h3_opts *o, const char *a);

/* Where the value of shared option a goes, or NULL when a is not one. */
const char **perf_h3_opt(perf_h3_opts *o, const char *a);

/* Apply the shared options to cfg: qlog and key-log files, controller,
 * QUIC version. Returns 0, or 2 (usage error, printed as "WHO: ..."). */
int perf_h3_apply(const char *who, const perf_h3_opts *o, qk_config *cfg);

/* A string-valued option of a command's table (the CLI's one option-table
 * shape: name -> where its value goes). */
typedef struct perf_str_opt {
    const char *name;
    const char **dst;
} perf_str_opt;

/* Where the value of option a goes in tab (ended by a NULL name), or NULL. */
const char **perf_str_opt_find(const perf_str_opt *tab, const char *a);

/* "reno" / "newreno" / "cubic" / "bbr" -> *out. Returns 0 or QK_ERR_INVALID_ARG. */
int perf_parse_cc(const char *s, qk_cc_kind *out);

/* Server certificate: cert_file/key_file, or (cert_file NULL) a fresh
 * self-signed P-256 one in memory (*cert_pem, *key_pem: free them). Prints
 * "pin: HEX" on stdout. Returns 0 or the error (printed, prefixed by who). */
int perf_load_cert(const char *who, const char *cert_file, const char *key_file, qk_config *cfg,
                   char **cert_pem, char **key_pem);

/** Parse a QUIC version: "v1", "v2" or a number ("0x1a2a3a4a"). Returns 0 or
 *  QK_ERR_INVALID_ARG. */
int perf_parse_version(const char *s, uint32_t *v);

/** Parse "--key-update" (every QK_CLI_KEY_UPDATE_PKTS packets) or
 *  "--key-update=N" (every N >= 1 packets sent) into *pkts. Returns 1 when arg
 *  is not that option, 0 when parsed, QK_ERR_INVALID_ARG for a bad N. */
#define QK_CLI_KEY_UPDATE_PKTS 100u
int perf_parse_key_update(const char *arg, uint64_t *pkts);

/** getrandom()-backed qk_rng_fn. */
void perf_rng(void *ctx, uint8_t *buf, size_t len);

/** Settings shared by client and server (ALPN, CC, windows, qlog, datagram size). */
void perf_config(qk_config *cfg, const perf_opts *o);

/** Parse "1048576", "64K", "1M", "1G" (binary units). Returns 0 or QK_ERR_INVALID_ARG. */
int perf_parse_size(const char *s, uint64_t *out);

/** Per-request measurements, nanoseconds. */
typedef struct perf_sample {
    qk_time upload_ns, download_ns, fbl_ns;
    uint64_t upload_bytes, download_bytes;
} perf_sample;

/** Print the seed-style table (rows AVG P0 P10 P50 P90 P100) of n samples; sorts a copy. */
void perf_print_table(FILE *f, const perf_sample *s, size_t n);

/** Print connection statistics. */
void perf_print_stats(FILE *f, const qk_conn_stats *st);

/** Print one progress line: elapsed, rx/tx Mbit/s over the last interval, RTT, cwnd, lost. */
void perf_print_progress(FILE *f, const char *who, double elapsed_s, double interval_s,
                         uint64_t rx_bytes, uint64_t tx_bytes, const qk_conn_stats *st);

/* --preferred-addr (RFC 9000 §9.6), for quack serve and quack perf server. */
#define PERF_PREFERRED_HELP                                                                        \
    "  --preferred-addr ADDR:PORT  also listen there and advertise it as the\n"                    \
    "                         preferred_address (RFC 9000 §9.6): clients move to it\n"            \
    "                         after the handshake; once per family (IPv4, IPv6)\n"

/** --preferred-addr's value into *v4 or *v6 by family (qk_config's
 *  preferred_addr_v4 / _v6). Returns 0, QK_ERR_INVALID_ARG (not ADDR:PORT
 *  with a port) or QK_ERR_LIMIT (that family was given already). */
int perf_parse_preferred(const char *s, qk_addr *v4, qk_addr *v6);

/** Why qk_workers_new_ex failed with rc, on stderr, prefixed by who: the
 *  configuration (QK_ERR_CONFIG), the preferred address whose socket could
 *  not be bound (which: QK_WORKERS_SOCKET_*), or the listen address addr_str. */
void perf_listen_error(const char *who, const qk_config *cfg, const char *addr_str, int rc,
                       unsigned which);

/** Print "preferred address ADDR" on stdout for each preferred address w
 *  bound (RFC 9000 §9.6), and format the listen address into buf ("?" when
 *  it does not fit). */
void perf_workers_addrs(const qk_workers *w, char *buf, size_t cap);

/** --stats after the workers stopped: the endpoint's counters (one worker),
 *  or "worker I " + those per worker and a "workers: N steered_short ..." line. */
void perf_print_workers_stats(FILE *f, qk_workers *w);

/** Run the server on --threads workers (quack/workers.h) / the client. Returns 0 or a QK_ERR_*. */
int perf_server(const perf_opts *o);
int perf_client(const perf_opts *o);

#endif
