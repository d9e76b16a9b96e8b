/* Errors that say what to fix, shared by quack get, serve, perf and tunnel:
 * a failed handshake explained (pin mismatch with both keys, an untrusted
 * certificate with the --pin that would trust it, no common cipher suite or
 * ALPN, a timeout, nothing listening), the --insecure warning, and an
 * address option whose port is bad (a usage error: exit 2). */
#ifndef QK_APPS_CLI_ERRORS_H
#define QK_APPS_CLI_ERRORS_H

#include "perf.h"

#include <quack/io.h>
#include <quack/quack.h>
#include <stdbool.h>
#include <stdio.h>

/* How a client verifies its server. */
typedef enum cli_verify { CLI_VERIFY_SYSTEM, CLI_VERIFY_PIN, CLI_VERIFY_INSECURE } cli_verify;

/* "handshake failed: WHY - WHAT TO DO" for a QK_EV_CLOSED that came before
 * QK_EV_CONNECTED (ev->conn is still valid while the event is handled):
 * the library's reason (QK_ERR_TIMEOUT, QK_ERR_CONNECTION_REFUSED, a TLS
 * alert: its text names keys, suites or ALPN lists) and a hint. */
void cli_handshake_failed(const qk_event *ev, cli_verify v, char *out, size_t cap);

/* Server: one line "WHO: handshake failed with ADDR: REASON" on f for a
 * connection closed before its handshake completed (qk_conn_alpn NULL).
 * Returns true when it printed (the handshake had not completed). */
bool cli_log_failed_handshake(FILE *f, const char *who, const qk_event *ev);

/* The client's --handshake-timeout T at argv[*i] (advancing *i past T) of
 * `quack CMD`, into a->handshake_timeout_ns. Returns 1 when parsed, 0 when
 * argv[*i] is another option, 2 after a usage error was printed. */
int cli_parse_handshake_timeout(const char *cmd, int argc, char **argv, int *i, perf_admission *a);

/* Paths given to options: 0, or 2 after printing "WHO: OPT PATH: why"
 * (a usage error). NULL path: 0. */
int cli_check_dir(const char *who, const char *opt, const char *path);
int cli_check_file(const char *who, const char *opt, const char *path);

/* "WHO: --insecure: the server's certificate is NOT verified ..." on stderr. */
void cli_warn_insecure(const char *who);

/* Parse HOST:PORT given to option opt of `quack CMD`. Returns 0, 2 after
 * printing a usage error naming the option (bad port, malformed), or 1
 * after printing that the host name does not resolve. */
int cli_parse_addr(const char *cmd, const char *opt, const char *value, qk_addr *out);

#endif
