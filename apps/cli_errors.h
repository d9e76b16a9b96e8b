/* SPDX-License-Identifier: MIT */
/* Errors that say what to fix, shared by quack get, serve, perf and tunnel:
 * a failed handshake explained (pin mismatch with both keys, an untrusted
 * certificate with the --pin that would trust it, no common cipher suite or
 * ALPN, a timeout, nothing listening), the --insecure warning, and an
 * address option whose port is bad (a usage error: exit 2). */
#ifndef QK_APPS_CLI_ERRORS_H
#define QK_APPS_CLI_ERRORS_H

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

/* Paths given to options: 0, or 2 after printing "WHO: OPT PATH: why"
 * (a usage error). NULL path: 0. */
int cli_check_dir(const char *who, const char *opt, const char *path);
int cli_check_file(const char *who, const char *opt, const char *path);

/* "WHO: --insecure: the server's certificate is NOT verified ..." on stderr. */
void cli_warn_insecure(const char *who);

#endif
