/* SPDX-License-Identifier: MIT */
/* `quack tunnel --carrier LIST|auto`: the carrier list (tunnel_auto.h). */
#include "tunnel_auto.h"

#include <string.h>

static int add_name(tun_auto *a, const char *name, size_t len, const char *const *names,
                    size_t n_names)
{
    for (unsigned c = 0; c < n_names; c++) {
        if (strlen(names[c]) != len || memcmp(names[c], name, len)) continue;
        if (tun_auto_has(a, c) || a->n == TUN_AUTO_MAX) return -1; /* a repeat */
        a->order[a->n++] = c;
        return 0;
    }
    return -1;
}

int tun_auto_parse(tun_auto *a, const char *v, const char *const *names, size_t n_names)
{
    a->n = 0;
    a->cur = 0;
    a->is_auto = !strcmp(v, "auto");
    if (a->is_auto) v = "udp,tcp"; /* dns joins when its options are given (tun_auto_add) */
    for (const char *p = v;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (add_name(a, p, len, names, n_names)) return -1;
        if (!comma) return 0;
        p = comma + 1;
    }
}

void tun_auto_add(tun_auto *a, unsigned c)
{
    if (!tun_auto_has(a, c) && a->n < TUN_AUTO_MAX) a->order[a->n++] = c;
}

bool tun_auto_has(const tun_auto *a, unsigned c)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->order[i] == c) return true;
    return false;
}

unsigned tun_auto_current(const tun_auto *a)
{
    return a->n ? a->order[a->cur] : 0;
}

void tun_auto_usage(FILE *f)
{
    fputs("Carrier lists (docs/tunnel.md \"Carrier fallback\"):\n"
          "  --carrier udp,tcp,dns  several carriers, best first (udp first); auto =\n"
          "                         udp,tcp, and dns too when --domain is given.\n"
          "                         server: one process, one key, one session table:\n"
          "                         QUIC on --listen (UDP), yamux/TLS on the same port\n"
          "                         (TCP), DNS on --dns-listen; a client's flows resume\n"
          "                         over whichever carrier it comes back on.\n"
          "                         client: dials udp (--handshake-timeout, default 2s\n"
          "                         with a list), on failure or loss the next one at\n"
          "                         once (tcp: connect refused or TLS failed; dns:\n"
          "                         --resolver, --domain), after the last from the top\n"
          "                         with --reconnect-max backoff. On tcp or dns it\n"
          "                         tries a QUIC handshake over udp every\n"
          "                         --probe-interval and moves its flows back when one\n"
          "                         completes. Each change: a \"carrier A -> B (switch\n"
          "                         N)\" log line; --stats adds carrier=,\n"
          "                         carrier_switches=, carrier_probes=,\n"
          "                         carrier_probes_failed=\n"
          "  --dns-listen ADDR:PORT server: the DNS carrier's UDP port in a list\n"
          "  --probe-interval TIME  client with a list: how often to try udp again\n"
          "                         (default 5s)\n",
          f);
}
