/* SPDX-License-Identifier: MIT */
/* `quack tunnel --carrier LIST|auto`: the carrier list (order = preference),
 * which one is in use, and the fallback counters (docs/tunnel.md "Carrier
 * fallback"). The I/O that dials and switches stays in cmd_tunnel.c. */
#ifndef QK_APPS_TUNNEL_AUTO_H
#define QK_APPS_TUNNEL_AUTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <quack/quack.h>

#define TUN_AUTO_MAX 3 /* udp, tcp, dns */

/* Default wait for a QUIC handshake over UDP before the next carrier is
 * tried (a client with a list and no --handshake-timeout). */
#define TUN_AUTO_HANDSHAKE_NS (2 * QK_NS_PER_S)
/* Default --probe-interval: how often a client on a worse carrier tries the
 * better ones. */
#define TUN_AUTO_PROBE_NS (5 * QK_NS_PER_S)

typedef struct tun_auto {
    unsigned order[TUN_AUTO_MAX]; /* carrier numbers, best first */
    size_t n;                     /* entries in order (1: a single carrier) */
    bool is_auto;                 /* --carrier auto */
    size_t cur;                   /* client: index in order being dialled or in use */
    qk_time probe_ns;             /* --probe-interval */
    uint64_t switches;            /* client: carrier changes once a session was up */
    uint64_t probes;              /* client: probes of a better carrier started */
    uint64_t probes_failed;       /* ... that did not come up */
} tun_auto;

/* Parse --carrier's value: "auto" (every carrier, in names' order) or a
 * comma list of names[0..n_names) without repeats. Returns 0, or -1 (the
 * caller prints the usage error). */
int tun_auto_parse(tun_auto *a, const char *v, const char *const *names, size_t n_names);

/* --help lines for carrier lists. */
void tun_auto_usage(FILE *f);

/* Append carrier c (last) unless listed. */
void tun_auto_add(tun_auto *a, unsigned c);

/* True when carrier c is in the list. */
bool tun_auto_has(const tun_auto *a, unsigned c);

/* The carrier in use (or being dialled). */
unsigned tun_auto_current(const tun_auto *a);

#endif
