/* SPDX-License-Identifier: MIT */
/* The UDP carrier of `quack tunnel` as HTTP/3 (docs/tunnel.md "Wire format"):
 * every tunnel stream (the session layer's control stream and each TCP flow)
 * is an HTTP CONNECT request (RFC 9114 §4.4) whose DATA frames carry the
 * stream's bytes; the secret is proved by a header on each CONNECT. The
 * server answers every other request, and a CONNECT without the proof, as
 * the masquerade site (h3_site.c) does. One tun_h3 per QUIC connection with
 * ALPN h3; it is the carrier session (`sess`) of tun_h3_carrier. */
#ifndef QK_APPS_TUNNEL_H3_H
#define QK_APPS_TUNNEL_H3_H

#include "h3_site.h"

#include <quack/h3.h>
#include <quack/tunnel.h>

typedef struct tun_h3 tun_h3;

/* The request header that proves the secret (a standard proxy header, RFC
 * 9110 §11.7.2): "Bearer " and 64 hex digits of HMAC-SHA256(secret, the TLS
 * exporter of the connection) (qk_tunnel_auth_mac). */
#define TUN_H3_AUTH_HEADER "proxy-authorization"

typedef struct tun_h3_config {
    bool server;
    const char *authority; /* client: :authority of its CONNECTs (host:port) */
    const uint8_t *secret; /* NULL/0: no proof sent (client) or asked (server) */
    size_t secret_len;
    h3_site *site; /* server: answers strangers (and CONNECTs without the proof) */
    /* Client: the server answered a CONNECT (or CONNECT-UDP) with a status other than 2xx
     * (status 0: unreadable): the proof was refused. */
    void (*refused)(void *ctx, tun_h3 *w, unsigned status);
    void *ctx;
} tun_h3_config;

extern const qk_tunnel_carrier tun_h3_carrier;

/* Start HTTP/3 on connection c (its handshake done, ALPN h3): the client
 * opens its control stream, the server its HTTP/3 layer for the site. cfg
 * is copied (the strings and the site it points to are kept). NULL: out of
 * memory or no stream credit (the connection is then closed). */
tun_h3 *tun_h3_new(qk_conn *c, const tun_h3_config *cfg);
void tun_h3_del(tun_h3 *w);
qk_conn *tun_h3_conn(const tun_h3 *w);

/* One event of w's connection: the tunnel's streams go to t (which may be
 * NULL), the others to HTTP/3. QK_EV_CLOSED is passed on; the caller frees
 * w after it. Returns true when something was queued to send. */
bool tun_h3_on_event(tun_h3 *w, qk_tunnel *t, const qk_event *ev);

/* UDP sessions (qk_tunnel_udp_config.send): a frame (4-byte session id,
 * payload) out as an HTTP Datagram of the session's CONNECT-UDP stream (the
 * client opens it with the first frame). The client holds its datagrams
 * until the server's SETTINGS enable HTTP Datagrams (RFC 9297 §2.1.1; at most
 * 2,048 or 1 MiB wait). Returns 0 (sent or held), QK_ERR_LIMIT (dropped: too
 * many held), QK_ERR_STATE (the server takes no HTTP Datagrams) or another
 * error of qk_datagram_send. */
int tun_h3_udp_send(tun_h3 *w, const uint8_t *frame, size_t len, uint8_t urgency);
/* A DATAGRAM event of w's connection: an HTTP Datagram, handed to u in
 * qk_tunnel_udp's frame format (unknown streams and contexts dropped). */
void tun_h3_datagram(tun_h3 *w, qk_tunnel_udp *u, const qk_event *ev);

/* Client: end (FIN) the CONNECT-UDP requests of sessions without a datagram
 * for idle_ns (--udp-idle), so their streams are freed. */
void tun_h3_udp_sweep(tun_h3 *w, qk_time now_ns, qk_time idle_ns);

/* Server: move the site's HTTP/3 output into the streams. True: wrote. */
bool tun_h3_flush(tun_h3 *w);

#endif
