/* SPDX-License-Identifier: MIT */
/* Errors that say what to fix (see cli_errors.h). */
#include "cli_errors.h"

#include <quack/cert.h>
#include <quack/sim.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The hint after the library's reason: what the user can change. */
static const char *hint(const qk_event *ev, cli_verify v, char *buf, size_t cap)
{
    if (ev->reason_err == QK_ERR_TIMEOUT)
        return " - is a server running at that address and port, and reachable? "
               "(--handshake-timeout T waits longer)";
    if (ev->remote || ev->reason_err == QK_ERR_CONNECTION_REFUSED) return "";
    if (!strncmp(ev->reason, "certificate pin mismatch", 24))
        return " - check --pin (the server prints 'pin: HEX' when it starts)";
    if (!strncmp(ev->reason, "untrusted certificate", 21) && v == CLI_VERIFY_SYSTEM) {
        uint8_t spki[QK_PIN_BYTES];
        char hex[65];
        if (ev->conn && qk_conn_peer_spki_sha256(ev->conn, spki) == 0) {
            qk_pin_to_hex(spki, hex);
            snprintf(buf, cap,
                     " - if you trust this server, use --pin %s (quack serve and quack perf "
                     "server print their pin), or --insecure to skip verification",
                     hex);
            return buf;
        }
        return " - use --pin HEX with the server's key (quack serve prints it), or --insecure";
    }
    return "";
}

void cli_handshake_failed(const qk_event *ev, cli_verify v, char *out, size_t cap)
{
    char buf[256];
    const char *h = hint(ev, v, buf, sizeof buf);
    const char *why = ev->reason[0] ? ev->reason : qk_strerror(ev->reason_err);
    if (ev->remote)
        snprintf(out, cap, "handshake failed: the server closed the connection: %s (code 0x%llx)%s",
                 why, (unsigned long long)ev->error_code, h);
    else
        snprintf(out, cap, "handshake failed: %s%s", why, h);
}

bool cli_log_failed_handshake(FILE *f, const char *who, const qk_event *ev)
{
    if (ev->type != QK_EV_CLOSED || !ev->conn || qk_conn_alpn(ev->conn)) return false;
    qk_addr peer;
    char addr[QK_ADDR_STRLEN];
    qk_conn_peer_addr(ev->conn, &peer);
    if (qk_addr_format(&peer, addr, sizeof addr) < 0) snprintf(addr, sizeof addr, "?");
    fprintf(f, "%s: handshake failed with %s: %s%s\n", who, addr,
            ev->remote ? "the client closed the connection: " : "",
            ev->reason[0] ? ev->reason : qk_strerror(ev->reason_err));
    return true;
}

int cli_check_dir(const char *who, const char *opt, const char *path)
{
    struct stat st;
    if (!path) return 0;
    int rc = stat(path, &st);
    if (rc == 0 && S_ISDIR(st.st_mode)) return 0;
    fprintf(stderr, "%s: %s %s: %s\n", who, opt, path,
            rc == 0 ? "not a directory" : "no such directory (create it first)");
    return 2;
}

int cli_check_file(const char *who, const char *opt, const char *path)
{
    if (!path || access(path, R_OK) == 0) return 0;
    fprintf(stderr, "%s: %s %s: cannot read it (%s)\n", who, opt, path, strerror(errno));
    return 2;
}

void cli_warn_insecure(const char *who)
{
    fprintf(stderr,
            "%s: warning: --insecure: the server's certificate is NOT verified (anyone on the "
            "path can impersonate it); use --pin HEX instead\n",
            who);
}
