/* SPDX-License-Identifier: MIT */
/* Resumption and 0-RTT (RFC 9001 §4.5-4.6, RFC 9000 §7.4.1): the session
 * data a client keeps, the 0-RTT keys, the remembered transport parameters
 * and what happens when the server accepts or rejects early data. */
#include "transport/conn/conn.h"
#include "base/bytes.h"

#include <string.h>

#include "crypto/keys.h"
#include "crypto/token.h"

#define SESSION_MAGIC     "QKS1"
#define SESSION_HDR_BYTES 12 /* magic, TLS data length, parameters length */
#define SESSION_MAC_BYTES 32 /* HMAC-SHA256 under a constant key: a checksum */

/* A damaged session file is refused here, before GnuTLS parses it (its
 * parser trusts the lengths inside). Not a protection against a forged one:
 * the file is the user's own. */
static void session_mac(const uint8_t *data, size_t len, uint8_t mac[SESSION_MAC_BYTES])
{
    static const uint8_t key[] = "quack session v1";
    qk_hkdf_extract(QK_HASH_SHA256, key, sizeof key - 1, data, len, mac);
}

/* Layout: "QKS1" | u32 n | GnuTLS session data (n) | u32 m | the server's
 * encoded transport parameters (m) | HMAC-SHA256 of all that (32). */
long qk_conn_session_get(const qk_conn *c, uint8_t *buf, size_t cap)
{
    if (!c || c->is_server || (!buf && cap)) return QK_ERR_INVALID_ARG;
    size_t tl, pl;
    const uint8_t *t = qk_tls_ticket(c->tls, &tl);
    const uint8_t *p = qk_tls_peer_tparams(c->tls, &pl);
    if (!t || !p || !c->handshake_complete) return QK_ERR_AGAIN;
    size_t need = SESSION_HDR_BYTES + tl + pl + SESSION_MAC_BYTES;
    if (need > cap) return QK_ERR_TOO_LARGE;
    memcpy(buf, SESSION_MAGIC, 4);
    qk_put_be32(buf + 4, (uint32_t)tl);
    memcpy(buf + 8, t, tl);
    qk_put_be32(buf + 8 + tl, (uint32_t)pl);
    memcpy(buf + 12 + tl, p, pl);
    session_mac(buf, need - SESSION_MAC_BYTES, buf + need - SESSION_MAC_BYTES);
    return (long)need;
}

bool qk_conn_early_data(const qk_conn *c)
{
    return c && qk_session_can_send_0rtt(c);
}

int qk_session_parse(qk_conn *c, const uint8_t *data, size_t len, const uint8_t **tls,
                     size_t *tls_len)
{
    uint8_t mac[SESSION_MAC_BYTES];
    if (len < SESSION_HDR_BYTES + SESSION_MAC_BYTES || memcmp(data, SESSION_MAGIC, 4))
        return QK_ERR_CONFIG;
    len -= SESSION_MAC_BYTES;
    session_mac(data, len, mac);
    if (!qk_crypto_memeq(mac, data + len, SESSION_MAC_BYTES)) return QK_ERR_CONFIG;
    uint32_t tl = qk_get_be32(data + 4);
    if (tl == 0 || tl > len - SESSION_HDR_BYTES) return QK_ERR_CONFIG;
    uint32_t pl = qk_get_be32(data + 8 + tl);
    if (pl != len - SESSION_HDR_BYTES - tl) return QK_ERR_CONFIG;
    if (qk_tparams_decode(data + SESSION_HDR_BYTES + tl, pl, true, &c->zrtt.remembered) < 0)
        return QK_ERR_CONFIG;
    c->zrtt.have_remembered = true;
    *tls = data + 8;
    *tls_len = tl;
    return 0;
}

/* RFC 9000 §7.4.1: 0-RTT data obeys the limits the server announced before. */
static void apply_remembered(qk_conn *c)
{
    const qk_tparams *tp = &c->zrtt.remembered;
    qk_streams_peer_params spp = qk_conn_stream_limits(tp);
    if (qk_streams_set_peer_params(&c->streams, &spp)) return;
    qk_flow_tx_on_max(&c->flow_tx, tp->initial_max_data);
    c->zrtt.on_remembered = true;
    for (qk_stream *s = qk_streams_next(&c->streams, NULL); s; s = qk_streams_next(&c->streams, s))
        qk_conn_schedule_stream(c, s);
}

int qk_session_install_early(qk_conn *c, int is_write, qk_crypto_suite suite, const uint8_t *secret,
                             size_t len)
{
    /* RFC 9001 §4.6.1: the client writes 0-RTT, the server reads it. */
    if ((is_write != 0) == c->is_server) return 0;
    if (c->cfg->no_protection) suite = QK_SUITE_NULL;
    qk_pkt_keys_free(&c->zrtt.early);
    int rc =
        qk_pkt_keys_init_ex(&c->zrtt.early, c->version, suite, QK_AEAD_BACKEND_AUTO, secret, len);
    if (rc) return rc;
    c->zrtt.has_early = true;
    if (!c->is_server && c->zrtt.have_remembered) apply_remembered(c);
    return 0;
}

/* RFC 9000 §7.4.1: accepting 0-RTT, the server must not reduce these. */
static bool params_shrunk(const qk_tparams *old, const qk_tparams *now)
{
    return now->active_connection_id_limit < old->active_connection_id_limit ||
           now->initial_max_data < old->initial_max_data ||
           now->initial_max_stream_data_bidi_local < old->initial_max_stream_data_bidi_local ||
           now->initial_max_stream_data_bidi_remote < old->initial_max_stream_data_bidi_remote ||
           now->initial_max_stream_data_uni < old->initial_max_stream_data_uni ||
           now->initial_max_streams_bidi < old->initial_max_streams_bidi ||
           now->initial_max_streams_uni < old->initial_max_streams_uni ||
           /* RFC 9221 §3: nor the DATAGRAM size */
           now->max_datagram_frame_size < old->max_datagram_frame_size;
}

/* RFC 9001 §4.6.2, RFC 9000 §17.2.3: a client whose 0-RTT was rejected
 * resends everything it carried in 1-RTT packets: every 0-RTT packet still
 * in flight is taken as lost (not a congestion signal). The server starts
 * from its new parameters. */
static void on_rejected(qk_conn *c, qk_time now)
{
    qk_recovery_lose_all(&c->rec, QK_PN_SPACE_APP, now);
    c->flow_tx.max_data_bytes = c->peer_tp.initial_max_data;
    for (qk_stream *s = qk_streams_next(&c->streams, NULL); s; s = qk_streams_next(&c->streams, s))
        qk_conn_schedule_stream(c, s);
}

int qk_session_on_handshake(qk_conn *c, qk_time now)
{
    c->stats.resumed = (uint8_t)qk_tls_resumed(c->tls);
    int st = qk_tls_early_status(c->tls);
    c->stats.zerortt = st == QK_TLS_EARLY_ACCEPTED ? 1 : st == QK_TLS_EARLY_REJECTED ? 2 : 0;
    qk_qlog_event(c, "quack:zero_rtt",
                  st == QK_TLS_EARLY_ACCEPTED   ? "{\"status\":\"accepted\"}"
                  : st == QK_TLS_EARLY_REJECTED ? "{\"status\":\"rejected\"}"
                                                : "{\"status\":\"none\"}",
                  now);
    if (c->is_server) return 0;
    bool sent = c->stats.zerortt_pkts_sent > 0;
    /* RFC 9001 §4.9.3: the client drops 0-RTT keys with 1-RTT keys in hand. */
    if (c->zrtt.has_early) {
        qk_pkt_keys_free(&c->zrtt.early);
        c->zrtt.has_early = false;
    }
    if (st == QK_TLS_EARLY_ACCEPTED && c->zrtt.have_remembered &&
        params_shrunk(&c->zrtt.remembered, &c->peer_tp)) {
        /* RFC 9000 §7.4.1 */
        qk_conn_error(c, QK_ERR_PROTOCOL_VIOLATION, 0,
                      "server accepted 0-RTT but reduced the remembered transport parameters", now);
        return QK_ERR_PROTOCOL_VIOLATION;
    }
    if (st == QK_TLS_EARLY_REJECTED && sent) on_rejected(c, now);
    return 0;
}

void qk_session_poll_ticket(qk_conn *c)
{
    if (c->is_server) return;
    unsigned n = qk_tls_ticket_count(c->tls);
    if (n == c->zrtt.tickets_seen || !c->handshake_complete) return;
    c->zrtt.tickets_seen = n;
    qk_event ev = {.type = QK_EV_SESSION_TICKET, .conn = c};
    qk_conn_push_event(c, &ev);
}
