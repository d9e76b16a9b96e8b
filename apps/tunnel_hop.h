/* SPDX-License-Identifier: MIT */
/* `quack tunnel` port hopping (UDP carrier, docs/tunnel.md "Port
 * hopping"): the server listens on a range of ports, one socket each, all
 * in one loop and one endpoint; the client moves its destination port
 * within the range every --hop-interval (qk_conn_hop: a probed and
 * validated new path, no new handshake). Private to apps/. */
#ifndef QK_APPS_TUNNEL_HOP_H
#define QK_APPS_TUNNEL_HOP_H

#include <quack/io.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* At most this many ports in a --listen / --connect range. */
#define TUN_HOP_MAX_PORTS 1024

/* The range options of one side. */
typedef struct tun_hop_opts {
    uint16_t lo, hi;       /* a range (lo < hi), or both 0 */
    qk_time interval_ns;   /* client: --hop-interval (0: no hopping) */
    const char *range_str; /* the option's value, for messages */
} tun_hop_opts;

/* --listen / --connect value v of `quack tunnel`: ADDR:P1-P2 puts the range
 * in h and "ADDR:P1" in buf (for the usual address parser) and returns 1;
 * any other value returns 0 (buf untouched); a malformed range prints a
 * usage error and returns 2 (the exit status). */
int tun_hop_take_range(tun_hop_opts *h, const char *opt, const char *v, char *buf, size_t cap);

/* --hop-interval DUR: 0, or 2 after a usage error. */
int tun_hop_parse_interval(tun_hop_opts *h, const char *v);

/* The options together (after the addresses were parsed): 0, or 2 after a
 * usage error. udp_carrier: the only carrier is udp. Picks the client's
 * first port at random. */
int tun_hop_check(tun_hop_opts *h, bool server, bool udp_carrier, qk_addr *addr);

/* --help lines. */
void tun_hop_usage(FILE *f);

/* Run time (cmd_tunnel.c's run_udp and run): the server's other sockets of
 * the range, opened next to the first and added to the loop; the client's
 * hop timer. */
typedef struct tun_hop tun_hop;

/* The client's connection now (NULL: none, or stopping) and how many flows
 * are open on it. */
typedef qk_conn *(*tun_hop_conn_fn)(void *ctx, size_t *flows_open);

/* *out: NULL when h asks for no range and no hops. Returns 0 or QK_ERR_NOMEM. */
int tun_hop_new(const tun_hop_opts *h, bool server, const char *who, tun_hop **out);

/* Server: open the range's sockets after first (bound to addr, the range's
 * first port) with qk_udp_open's flags. Returns 0 or a QK_ERR_* (after a
 * message on stderr). NULL hp: nothing. */
int tun_hop_open(tun_hop *hp, const qk_addr *addr, qk_udp *first, unsigned flags);

/* Server: add the sockets to loop; client: start hopping in loop's libev
 * loop, asking conn_fn(ctx) for the connection. Returns 0 or a QK_ERR_*. */
int tun_hop_start(tun_hop *hp, qk_io_loop *loop, tun_hop_conn_fn conn_fn, void *ctx);

/* Stop the timer (before the loop goes); free (closes the sockets
 * tun_hop_open opened). NULL: nothing. */
void tun_hop_stop(tun_hop *hp);
void tun_hop_del(tun_hop *hp);

/* The "stats: hop" line: server (ep: its handshakes) or client (conn: its
 * port now; may be NULL); t_ns: time since the start. NULL hp: nothing. */
void tun_hop_print_stats(const tun_hop *hp, const qk_endpoint *ep, const qk_conn *conn,
                         qk_time t_ns, FILE *f);

#endif
