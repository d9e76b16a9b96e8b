/* SPDX-License-Identifier: MIT */
/* `quack tunnel --carrier dns`: the I/O side of the DNS carrier (sockets,
 * resolvers, timers) around the sans-I/O src/dns modules. The tunnel's QUIC
 * endpoint runs unchanged above it; this file implements qk_io_driver_ops
 * so that qk_io_loop drives it. See docs/dns.md. */
#ifndef QK_APPS_TUNNEL_DNS_H
#define QK_APPS_TUNNEL_DNS_H

#include <stdio.h>

#include <quack/driver.h>
#include <quack/io.h>
#include <quack/quack.h>

#define TUN_DNS_MAX_RESOLVERS 8
#define TUN_DNS_POOL_SOCKETS  16

/** Carrier options from the command line. */
typedef struct tun_dns_opts {
    bool on;                                         /**< --carrier dns */
    const char *domain;                              /**< --domain */
    const char *resolver_str[TUN_DNS_MAX_RESOLVERS]; /**< --resolver, repeatable (client) */
    qk_addr resolver[TUN_DNS_MAX_RESOLVERS];
    size_t n_resolvers;
    size_t max_qname_len; /**< --max-qname-len (default 253) */
    int polls;            /**< --polls 0|1|2 (default 2; -1 = default) */
    int ack_as_poll;      /**< --ack-as-poll on|off (default on; -1 = default) */
    unsigned burst_cap;   /**< --burst-cap N (default 16) */
    qk_time patience_ns;  /**< --patience TIME (server, default 30 ms) */
} tun_dns_opts;

typedef struct tun_dns tun_dns;

/** Reset o to "not given". */
void tun_dns_opts_init(tun_dns_opts *o);

/**
 * Parse one DNS option a with value v. Returns 1 when a is not a DNS
 * option, 0 when parsed, 2 after printing an error (bad value).
 */
int tun_dns_parse_opt(tun_dns_opts *o, const char *a, const char *v);

/** Check the options once parsed. Returns 0, or 2 after printing the problem. */
int tun_dns_check(tun_dns_opts *o, bool server);

/** Usage lines for --help. */
void tun_dns_usage(FILE *f);

/**
 * Apply the carrier's QUIC profile to cfg (docs/dns.md): small datagrams
 * (min_datagram_bytes), the client's size from the name limit, PMTUD off,
 * no ACK_FREQUENCY (the client's ACKs are polls).
 */
void tun_dns_config(const tun_dns_opts *o, bool server, qk_config *cfg);

/** The address the client connects to (the server's synthetic address). */
void tun_dns_server_addr(qk_addr *out);

/**
 * Create the carrier for endpoint ep. Server: u is the socket queries arrive
 * on. Client: u is NULL and the carrier opens its pool of sockets;
 * tun_dns_socket() gives the one to create the loop with. app/app_ctx as
 * for qk_io_ep_driver. Returns 0, QK_ERR_NOMEM, QK_ERR_IO, QK_ERR_INVALID_ARG.
 */
int tun_dns_new(const tun_dns_opts *o, bool server, qk_endpoint *ep, qk_udp *u, qk_io_ep_app_fn app,
                void *app_ctx, tun_dns **out);

/** The socket to give qk_io_loop_new. */
qk_udp *tun_dns_socket(tun_dns *d);

/** After qk_io_loop_new: watch the client's other pool sockets in the same loop. */
void tun_dns_attach(tun_dns *d, qk_io_loop *l);

/** The driver ops (ctx: the tun_dns). */
extern const qk_io_driver_ops tun_dns_ops;

/** Print the carrier's counters and poll state. */
void tun_dns_print_stats(const tun_dns *d, FILE *f);

/** Stop watchers, close the client's sockets, free d. NULL is a no-op. */
void tun_dns_del(tun_dns *d);

#endif
