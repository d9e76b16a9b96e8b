/* SPDX-License-Identifier: MIT */
/* The tunnel's carriers: sessions that give streams (include/quack/tunnel.h).
 * QUIC: a qk_conn; yamux: a qk_yamux session (over TLS/TCP, tcp_carrier.c). */
#include <quack/tunnel.h>
#include <quack/yamux.h>

#include "tunnel/tcp_carrier.h"

/* Both ends of every flow's stream: incremental, so flows take turns. */
static void quic_set_priority(void *sess, uint64_t sid)
{
    qk_stream_set_priority(sess, sid, QK_TUNNEL_STREAM_URGENCY, true); /* RFC 9218 §4 */
}

static int quic_open(void *sess, uint64_t *sid)
{
    int rc = qk_stream_open(sess, true, sid);
    if (!rc) quic_set_priority(sess, *sid);
    return rc;
}

static long quic_write(void *sess, uint64_t sid, const uint8_t *buf, size_t len, bool fin)
{
    return qk_stream_write(sess, sid, buf, len, fin);
}

static long quic_read(void *sess, uint64_t sid, uint8_t *buf, size_t cap, bool *fin)
{
    return qk_stream_read(sess, sid, buf, cap, fin);
}

static void quic_abort(void *sess, uint64_t sid, uint64_t app_error, bool reset_send,
                       bool stop_recv)
{
    /* RFC 9000 §3.5: RESET_STREAM ends our side, STOP_SENDING asks for theirs. */
    if (reset_send) qk_stream_reset(sess, sid, app_error);
    if (stop_recv) qk_stream_stop(sess, sid, app_error);
}

static int quic_export_key(void *sess, const char *label, uint8_t *out, size_t len)
{
    return qk_conn_export_keying_material(sess, label, NULL, 0, out, len);
}

static void quic_close(void *sess, uint64_t app_error, const char *reason)
{
    qk_conn_close(sess, app_error, reason); /* RFC 9000 §10.2: CONNECTION_CLOSE 0x1d */
}

const qk_tunnel_carrier qk_tunnel_carrier_quic = {.name = "quic",
                                                  .open = quic_open,
                                                  .write = quic_write,
                                                  .read = quic_read,
                                                  .abort = quic_abort,
                                                  .export_key = quic_export_key,
                                                  .close = quic_close,
                                                  .accepted = quic_set_priority};

static int yamux_open(void *sess, uint64_t *sid)
{
    uint32_t id;
    int rc = qk_yamux_open(sess, &id);
    if (!rc) *sid = id;
    return rc;
}

static long yamux_write(void *sess, uint64_t sid, const uint8_t *buf, size_t len, bool fin)
{
    return qk_yamux_write(sess, (uint32_t)sid, buf, len, fin);
}

static long yamux_read(void *sess, uint64_t sid, uint8_t *buf, size_t cap, bool *fin)
{
    return qk_yamux_read(sess, (uint32_t)sid, buf, cap, fin);
}

static void yamux_abort(void *sess, uint64_t sid, uint64_t app_error, bool reset_send,
                        bool stop_recv)
{
    (void)app_error; /* yamux has no error codes on RST */
    (void)reset_send;
    (void)stop_recv;
    qk_yamux_reset(sess, (uint32_t)sid); /* spec.md: RST ends both directions */
}

const qk_tunnel_carrier qk_tunnel_carrier_yamux = {.name = "yamux",
                                                   .open = yamux_open,
                                                   .write = yamux_write,
                                                   .read = yamux_read,
                                                   .abort = yamux_abort,
                                                   /* sessions of qk_tunnel_tcp only */
                                                   .export_key = qk_tunnel_tcp_export_key,
                                                   .close = qk_tunnel_tcp_close_session};
