/* SPDX-License-Identifier: MIT */
/* The CLI's shared options (cli_options.c): what quack get, serve, perf and
 * tunnel parse alike (sizes, versions, controllers, addresses, admission,
 * certificates, the HTTP/3 commands' common flags), and the helpers around
 * them (usage errors, endpoint creation, listen errors, the RNG). */
#ifndef QK_APPS_CLI_OPTIONS_H
#define QK_APPS_CLI_OPTIONS_H

#include <quack/io.h>
#include <quack/quack.h>
#include <quack/workers.h>
#include <stdbool.h>
#include <stdio.h>

/* Datagram size the CLI's commands build: a 1500-byte MTU minus IPv6 + UDP headers. */
#define QK_CLI_DATAGRAM_BYTES 1452u

/* Server admission control (RFC 9000 §8.1.2): --retry, --max-handshakes,
 * --handshake-timeout, --max-connections, shared by serve, perf server and tunnel server. */
typedef struct cli_admission {
    bool retry_set, max_set, timeout_set, conns_set;
    qk_retry_mode retry;
    size_t max_handshakes;
    size_t max_connections;
    qk_time handshake_timeout_ns;
} cli_admission;

#define CLI_ADMISSION_HELP                                                                         \
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
int cli_parse_admission(cli_admission *a, int argc, char **argv, int *i, const char *who);
/** Set what was given on cfg. */
void cli_admission_apply(const cli_admission *a, qk_config *cfg);

/**
 * qk_endpoint_new(cfg), or NULL after printing "WHO: invalid configuration:
 * WHY" to stderr with qk_config_check()'s explanation (or "out of memory"
 * when the configuration is fine). The caller then exits non-zero.
 */
qk_endpoint *cli_endpoint_new(const qk_config *cfg, const char *who);

/* A usage error of `quack CMD`: prints "quack CMD: <message>" and where the
 * options are explained; returns 2 (the exit status for bad usage). */
__attribute__((format(printf, 2, 3))) int cli_usage_error(const char *cmd, const char *fmt, ...);

/* The options quack get and quack serve share (HTTP/3 commands). */
typedef struct cli_h3_opts {
    const char *qlog, *keylog, *cc, *version, *ciphers;
    bool ecn, no_gso, no_early_data;
    uint64_t key_update_pkts; /* 0: only at the AEAD limits */
} cli_h3_opts;

/* A shared flag (--ecn, --no-gso, --no-early-data, --key-update[=N]) of
 * quack get/serve: 1 when a was one and was set, 0 when it is not one,
 * 2 after a usage error was printed ("quack CMD: ..."). */
int cli_h3_flag(const char *cmd, cli_h3_opts *o, const char *a);

/* Where the value of shared option a goes, or NULL when a is not one. */
const char **cli_h3_opt(cli_h3_opts *o, const char *a);

/* Apply the shared options to cfg: qlog and key-log files, controller,
 * QUIC version. Returns 0, or 2 (usage error, printed as "WHO: ..."). */
int cli_h3_apply(const char *who, const cli_h3_opts *o, qk_config *cfg);

/* A string-valued option of a command's table (the CLI's one option-table
 * shape: name -> where its value goes). */
typedef struct cli_str_opt {
    const char *name;
    const char **dst;
} cli_str_opt;

/* Where the value of option a goes in tab (ended by a NULL name), or NULL. */
const char **cli_str_opt_find(const cli_str_opt *tab, const char *a);

/* "reno" / "newreno" / "cubic" / "bbr" -> *out. Returns 0 or QK_ERR_INVALID_ARG. */
int cli_parse_cc(const char *s, qk_cc_kind *out);

/* Server certificate: cert_file/key_file, or (cert_file NULL) a fresh
 * self-signed P-256 one in memory (*cert_pem, *key_pem: free them). Prints
 * "pin: HEX" on stdout. Returns 0 or the error (printed, prefixed by who). */
int cli_load_cert(const char *who, const char *cert_file, const char *key_file, qk_config *cfg,
                  char **cert_pem, char **key_pem);

/** Parse a QUIC version: "v1", "v2" or a number ("0x1a2a3a4a"). Returns 0 or
 *  QK_ERR_INVALID_ARG. */
int cli_parse_version(const char *s, uint32_t *v);

/** Parse "--key-update" (every QK_CLI_KEY_UPDATE_PKTS packets) or
 *  "--key-update=N" (every N >= 1 packets sent) into *pkts. Returns 1 when arg
 *  is not that option, 0 when parsed, QK_ERR_INVALID_ARG for a bad N. */
#define QK_CLI_KEY_UPDATE_PKTS 100u
int cli_parse_key_update(const char *arg, uint64_t *pkts);

/** getrandom()-backed qk_rng_fn. */
void cli_rng(void *ctx, uint8_t *buf, size_t len);

/** Parse "1048576", "64K", "1M", "1G" (binary units). Returns 0 or QK_ERR_INVALID_ARG. */
int cli_parse_size(const char *s, uint64_t *out);

/* --preferred-addr (RFC 9000 §9.6), for quack serve and quack perf server. */
#define CLI_PREFERRED_HELP                                                                         \
    "  --preferred-addr ADDR:PORT  also listen there and advertise it as the\n"                    \
    "                         preferred_address (RFC 9000 §9.6): clients move to it\n"            \
    "                         after the handshake; once per family (IPv4, IPv6)\n"

/** --preferred-addr's value into *v4 or *v6 by family (qk_config's
 *  preferred_addr_v4 / _v6). Returns 0, QK_ERR_INVALID_ARG (not ADDR:PORT
 *  with a port) or QK_ERR_LIMIT (that family was given already). */
int cli_parse_preferred(const char *s, qk_addr *v4, qk_addr *v6);

/** Why qk_workers_new_ex failed with rc, on stderr, prefixed by who: the
 *  configuration (QK_ERR_CONFIG), the preferred address whose socket could
 *  not be bound (which: QK_WORKERS_SOCKET_*), or the listen address addr_str. */
void cli_listen_error(const char *who, const qk_config *cfg, const char *addr_str, int rc,
                      unsigned which);

/* The client's --handshake-timeout T at argv[*i] (advancing *i past T) of
 * `quack CMD`, into a->handshake_timeout_ns. Returns 1 when parsed, 0 when
 * argv[*i] is another option, 2 after a usage error was printed. */
int cli_parse_handshake_timeout(const char *cmd, int argc, char **argv, int *i, cli_admission *a);

/* Parse HOST:PORT given to option opt of `quack CMD`. Returns 0, 2 after
 * printing a usage error naming the option (bad port, malformed), or 1
 * after printing that the host name does not resolve. */
int cli_parse_addr(const char *cmd, const char *opt, const char *value, qk_addr *out);

/* A port range ADDR:P1-P2 (quack tunnel --listen/--connect, quack netem):
 * ADDR:P1 is copied into addr (cap bytes) and P1, P2 into *lo, *hi.
 * Returns 1 when parsed, 0 when v has no range (no '-' after its last ':'),
 * QK_ERR_INVALID_ARG when the ports are not 1 <= P1 < P2 <= 65535 in
 * decimal, QK_ERR_LIMIT when ADDR:P1 does not fit in cap bytes. */
int cli_parse_port_range(const char *v, char *addr, size_t cap, uint16_t *lo, uint16_t *hi);

/* The tunnel's shared secret as --secret-file holds it: the file's bytes, a
 * trailing newline (LF or CRLF) dropped, CLI_SECRET_MIN_BYTES to cap of them
 * (quack tunnel --secret-file, quack get --proxy-secret-file). Returns 0 with
 * *len set, QK_ERR_IO when the file cannot be opened (errno says why),
 * QK_ERR_INVALID_ARG when it holds too few bytes or more than cap. */
#define CLI_SECRET_MIN_BYTES 16u
int cli_read_secret(const char *path, uint8_t *buf, size_t cap, size_t *len);

#endif
