/* SPDX-License-Identifier: MIT */
/* Inside src/tunnel: what the yamux carrier table (carriers.c) needs from
 * the TLS/TCP carrier (tcp_carrier.c) for sessions it made. */
#ifndef QK_TUNNEL_TCP_CARRIER_H
#define QK_TUNNEL_TCP_CARRIER_H

#include <stddef.h>
#include <stdint.h>

/* TLS exporter (RFC 8446 §7.5) of the connection yamux session sess runs
 * on. Returns 0, QK_ERR_UNSUPPORTED (not a session of qk_tunnel_tcp),
 * QK_ERR_TLS. */
int qk_tunnel_tcp_export_key(void *sess, const char *label, uint8_t *out, size_t len);

/* End session sess: GoAway(code), then the TCP connection closes once it
 * is out. No-op for a session qk_tunnel_tcp did not make. */
void qk_tunnel_tcp_close_session(void *sess, uint64_t code, const char *reason);

#endif
