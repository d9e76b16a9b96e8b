/* SPDX-License-Identifier: MIT */
/* `quack tunnel`: the state cmd_tunnel.c and tunnel_auto.c (carrier lists)
 * share. Private to apps/ (docs/tunnel.md "Carrier fallback"). */
#ifndef QK_APPS_TUNNEL_APP_H
#define QK_APPS_TUNNEL_APP_H

#include "cli_options.h"
#include "tunnel_dns.h"
#include "tunnel_hop.h"

#include <ev.h>
#include <quack/driver.h>
#include <quack/tunnel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Carrier lists (--carrier LIST|auto, tunnel_auto.c): the list (order =
 * preference), which one is in use, the fallback counters. */
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

#define TUN_MAX_ALLOW 64

/* The carriers; selected in one place (qk_cmd_tunnel's switch). */
typedef enum tun_carrier {
    TUN_CARRIER_UDP = 0, /* QUIC over UDP (default) */
    TUN_CARRIER_TCP = 1, /* yamux over TLS 1.3 over TCP */
    TUN_CARRIER_DNS = 2, /* QUIC in DNS queries through resolvers (apps/tunnel_dns.c) */
} tun_carrier;

/* Per carrier, by tun_carrier: its --carrier name, what the listening line
 * says it carries flows over, and the progress line's label. */
typedef struct tun_carrier_info {
    const char *name, *listen_label, *rate_label;
} tun_carrier_info;
extern const tun_carrier_info tun_carriers[3];

typedef struct tun_opts {
    bool server;
    tun_carrier carrier; /* the first (best) of cars */
    tun_auto cars;       /* --carrier LIST|auto (tunnel_auto.c); n 1 for one carrier */
    bool fixed_window;
    const char *udp_str, *tcp_str; /* server: --listen / --to; client: --connect / --listen */
    qk_addr udp, tcp;
    const char *cert_file, *key_file, *pin, *qlog_dir;
    const char *log_file; /* --log: stderr goes here; SIGHUP reopens it */
    bool insecure, quiet, stats;
    bool no_gso;             /* --no-gso: one datagram per send (captures show each packet) */
    cli_admission admission; /* server: --retry, --max-handshakes, --handshake-timeout;
                                 client: --handshake-timeout */
    qk_cc_kind cc;
    bool cc_set;            /* --cc given; else bbr-lt */
    uint64_t bandwidth_bps; /* --bandwidth (0: none) */
    qk_time keep_alive_ns, idle_timeout_ns;
    qk_time reconnect_max_ns, hold_ns; /* client: backoff cap (0 = no redial); backlog wait */
    uint64_t max_flows;
    uint64_t flow_buffer_bytes, session_buffer_bytes; /* --session-buffer, --session-cap */
    qk_time session_linger_ns;                        /* --session-linger */
    size_t session_max;                               /* server: --session-max (0: default) */
    bool socks5;                                      /* server: --to socks5 */
    bool open_proxy;                      /* server: --open-proxy (socks5 without access control) */
    const char *state_dir;                /* server: --state-dir (its key and certificate) */
    qk_tunnel_allow allow[TUN_MAX_ALLOW]; /* server: --allow rules */
    size_t n_allow;
    char socks_user[256], socks_pass[256]; /* --socks-auth-file USER:PASS */
    const char *udp_fwd_str;               /* --udp-listen (client) / --udp-to (server) */
    qk_addr udp_fwd;
    qk_time udp_idle_ns;
    unsigned udp_urgency;
    uint8_t secret[1024]; /* --secret-file */
    size_t secret_len;
    tun_dns_opts dns;           /* --carrier dns (apps/tunnel_dns.c) */
    const char *dns_listen_str; /* server with dns in a list: --dns-listen */
    const char *sni;            /* client: --sni, else the name in --connect; NULL: none */
    char sni_buf[256];
    char authority[300];    /* client: :authority of the HTTP/3 CONNECTs */
    const char *masquerade; /* server: --masquerade DIR (strangers' website) */
    const char *keylog;     /* --keylog FILE: TLS secrets (NSS format) */
    qk_addr dns_listen;
    tun_hop_opts hop; /* port ranges, --hop-interval (apps/tunnel_hop.c) */
} tun_opts;

typedef struct tun tun;

/* cmd_tunnel.c's side, called by tunnel_auto.c: dial QUIC over UDP
 * (s->conn); start the TLS/TCP carrier; a carrier session came up; the
 * endpoints' events. */
typedef struct tun_hooks {
    int (*dial)(tun *s);
    int (*start_tcp)(tun *s);
    void (*session_up)(tun *s, const qk_tunnel_carrier *car, void *sess);
    qk_io_ep_app_fn app;
} tun_hooks;

typedef struct tun {
    const tun_hooks *hooks;
    const tun_opts *o;
    const char *who;
    qk_endpoint *ep;
    qk_conn *conn;      /* client */
    qk_io_loop *loop;   /* udp */
    qk_tunnel_tcp *tcp; /* tcp */
    /* client: the carrier session up now (qk_conn *, qk_yamux *) and its carrier */
    void *sess;
    const qk_tunnel_carrier *sess_car;
    qk_conn **conns; /* server: the connections up now, closed by stop() */
    size_t n_conns, cap_conns;
    const char *stop_reason; /* server: CONNECTION_CLOSE's reason */
    struct ev_loop *evl;
    qk_tunnel *t;
    qk_tunnel_udp *udp;   /* --udp-listen / --udp-to */
    struct h3_site *site; /* server: what HTTP/3 strangers get (tunnel_h3.c) */
    ev_timer tick, exit_timer, redial;
    ev_signal sigint, sigterm, sighup;
    qk_tunnel_stats mark;
    const qk_config *cfg;
    tun_auto cars;    /* client: the list, the carrier in use, the fallback counters */
    int up_carrier;   /* client: the carrier of the last session up (-1: none yet) */
    qk_conn *probe;   /* client on a worse carrier: a QUIC handshake to try UDP again */
    ev_timer probe_w; /* every --probe-interval while on a worse carrier */
    bool tcp_probe;   /* client on dns: a TLS/TCP connection to try tcp again is under way */
    qk_conn *left;    /* client: the dns connection a probe moved us away from */
    /* dns in a carrier list: its own endpoint (the DNS profile) in the same loop */
    qk_endpoint *dns_ep;
    qk_io_loop *dns_loop;
    qk_udp *dns_u;
    tun_dns *dns2;
    tun_dns *dns;
    qk_time start, last_tick;
    qk_time backoff_ns; /* client: the next redial's delay before jitter */
    unsigned attempts;  /* client: redials since the connection was last up */
    bool listening;     /* client: the TCP listener is open (the first connection came up) */
    bool stopping;
    int exit_code; /* TUN_EXIT_*: why it ended */
    tun_hop *hop;  /* port hopping at run time (apps/tunnel_hop.c), or NULL */
} tun;

/* tunnel_auto.c: the client's carrier list at run time, and the DNS carrier
 * of a list (both sides). */
int tun_auto_dial(tun *s);
bool tun_auto_next(tun *s, const char *why);
void tun_auto_probe_event(tun *s, const qk_event *ev);
/* Client: the TLS/TCP carrier's session came up (y) or ended (NULL): true
 * when it was a probe from dns (handled: the session moved to it, or the
 * probe failed). */
bool tun_auto_tcp_probe(tun *s, qk_yamux *y);
void tun_auto_up(tun *s);
int tun_auto_start_dns(tun *s);
void tun_auto_stop_dns(tun *s);

#endif
