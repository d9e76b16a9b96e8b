/* SPDX-License-Identifier: MIT */
/* `quack tunnel` port hopping (UDP carrier, docs/tunnel.md "Port
 * hopping"): the server listens on a range of ports, one socket each, all
 * in one loop and one endpoint; the client moves its destination port
 * within the range every --hop-interval (qk_conn_hop: a probed and
 * validated new path, no new handshake). Private to apps/. */
#ifndef QK_APPS_TUNNEL_HOP_H
#define QK_APPS_TUNNEL_HOP_H

#include <quack/io.h>
#include <stdint.h>
#include <stdio.h>

/* At most this many ports in a --listen / --connect range. */
#define TUN_HOP_MAX_PORTS 1024

typedef struct tun tun;
typedef struct tun_opts tun_opts;

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

/* Run time, by cmd_tunnel.c's run_udp/run: the server's other sockets of
 * the range (opened next to the first, then added to the loop), the
 * client's hop timer; their end; the "stats: hop" line. Return 0 or a
 * QK_ERR_* (after a message). */
int tun_hop_open(tun *s, qk_udp *first, unsigned udp_flags);
int tun_hop_start(tun *s);
void tun_hop_stop(tun *s);
void tun_hop_close(tun *s);
void tun_hop_print_stats(tun *s, FILE *f);

#endif
