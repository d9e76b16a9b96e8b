/* SPDX-License-Identifier: MIT */
/* `quack serve` in a fleet behind a load balancer (docs/deploy.md):
 * --lb-config FILE (QUIC-LB connection IDs, quack/quiclb.h) and
 * --fleet-keys FILE (one secret from which every server derives its token,
 * stateless-reset and session-ticket keys). */
#ifndef QK_APPS_SERVE_FLEET_H
#define QK_APPS_SERVE_FLEET_H

#include <stdbool.h>
#include <stdint.h>

#include <quack/quack.h>
#include <quack/quiclb.h>

/* What the options asked for, and what they made (freed by serve_fleet_free). */
typedef struct serve_fleet {
    const char *lb_config;  /* --lb-config FILE */
    const char *fleet_keys; /* --fleet-keys FILE */
    bool fleet_early_data;  /* --fleet-early-data: accept 0-RTT anyway */
    bool no_bpf;            /* --no-bpf: user-space worker steering only */
    qk_quiclb *lb;
    qk_ticket_keys *tk;
    unsigned key_id; /* key_id of the key file */
    char summary[160];
} serve_fleet;

#define SERVE_FLEET_HELP                                                                           \
    "  --lb-config FILE       QUIC-LB routable connection IDs (draft-ietf-quic-load-\n"            \
    "                         balancers-21): [quic-lb] config_id, server_id (hex),\n"              \
    "                         nonce_len, key (hex, optional: encrypted CIDs),\n"                   \
    "                         encode_length; the file the balancer shares\n"                       \
    "                         (docs/deploy.md)\n"                                                  \
    "  --fleet-keys FILE      key_id = N and secret = HEX (32..64 bytes), the same on\n"           \
    "                         every server: token, stateless-reset and session-ticket\n"           \
    "                         keys derive from it, so any server validates a token,\n"             \
    "                         resets a connection or resumes a session another issued.\n"          \
    "                         0-RTT is then refused (no anti-replay store is shared)\n"            \
    "  --fleet-early-data     with --fleet-keys: accept 0-RTT anyway (a replay to another\n"       \
    "                         server is not detected: docs/deploy.md)\n"                           \
    "  --no-bpf               with --threads N: steer datagrams to their worker in user\n"         \
    "                         space only (default: a SO_REUSEPORT BPF program does it in\n"        \
    "                         the kernel when it can; the server says which at start)\n"

/* Consume argv[*i] (and its value) when it is one of the options above:
 * 1 when taken, 0 when not ours, 2 after printing a usage error. */
int serve_fleet_opt(serve_fleet *f, int argc, char **argv, int *i);

/* Load the files into cfg (quiclb, cid_bytes, static_key, ticket_keys,
 * early_data). 0, or 2 after printing what is wrong and how to fix it. */
int serve_fleet_apply(serve_fleet *f, qk_config *cfg);

void serve_fleet_free(serve_fleet *f);

#endif
