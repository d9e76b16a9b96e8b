/* SPDX-License-Identifier: MIT */
/* Client side of the endpoint-level packets: Version Negotiation (RFC 9000
 * §6.2), Retry (§17.2.5.2, RFC 9001 §5.8), NEW_TOKEN (§8.1.3) and a
 * received stateless reset (§10.3.1). */
#include "transport/conn/conn.h"

#include <stdio.h>
#include <string.h>

#include "crypto/token.h"

/* A new connection attempt on the same object (Retry, or a VN we follow): the
 * Initial packets sent so far are gone without being lost (RFC 9002 §6.3, no
 * congestion signal); packet numbers continue (RFC 9000 §17.2.5.3). The whole
 * ClientHello goes again under the new Initial keys. */
static void restart_initial(qk_conn *c, qk_time now)
{
    qk_recovery_discard_space(&c->rec, QK_PN_SPACE_INITIAL, now);
    c->rec.sp[QK_PN_SPACE_INITIAL].discarded = false;
    qk_space *sp = &c->sp[QK_PN_SPACE_INITIAL];
    sp->probes = 0;
    qk_sendbuf_on_lost(&sp->crypto_send, 0, (size_t)sp->crypto_send.sent_off, false);
}

static bool vn_lists(const qk_pkt_hdr *h, uint32_t v)
{
    for (size_t i = 0; i < h->n_versions; i++)
        if (qk_pkt_vn_version(h, i) == v) return true;
    return false;
}

/* RFC 9000 §6.2: we offered c->offer_version and the server lists the
 * configured version: start a new attempt in that version. The server kept no
 * state, so the same ClientHello is sent again, under a fresh DCID (§7.2) and
 * the Initial keys of the new version (RFC 9001 §5.2, RFC 9369 §3.3.1). */
static void vn_restart(qk_conn *c, uint32_t version, qk_time now)
{
    char ev[96];
    snprintf(ev, sizeof ev, "{\"chosen_version\":\"%08x\",\"offered\":\"%08x\"}", version,
             c->restart.offer_version);
    c->restart.vn_restarted = true;
    c->restart.offer_version = 0;
    c->version = version;
    qk_cid d = {.len = c->cids.odcid.len};
    qk_conn_env_random(c, d.b, d.len);
    c->cids.odcid = c->cids.initial_dcid = d;
    c->cids.rcid[c->cids.rcid_cur].cid = d;
    int rc = qk_conn_install_initial_keys(c, &c->cids.initial_dcid);
    if (rc) {
        qk_conn_error(c, rc, 0, "version negotiation: initial keys", now);
        return;
    }
    restart_initial(c, now);
    qk_qlog_event(c, "transport:version_information", ev, now);
}

void qk_conn_on_vn(qk_conn *c, const qk_pkt_hdr *h, qk_time now)
{
    /* RFC 9000 §6.2: only before any other packet from the server (an earlier
     * VN included), and never after a Retry (the server spoke our version). */
    if (c->is_server || c->restart.got_packet || c->restart.retried || c->restart.vn_restarted ||
        c->state != QK_CONN_HANDSHAKE)
        return;
    /* RFC 8999 §6: the VN echoes our SCID (checked by demux) and our DCID. */
    if (h->scid_len != c->cids.initial_dcid.len ||
        memcmp(h->scid, c->cids.initial_dcid.b, h->scid_len))
        return;
    uint32_t offered = c->restart.offer_version ? c->restart.offer_version : c->version;
    /* RFC 9000 §6.2: a VN listing the version we chose is discarded. */
    if (vn_lists(h, offered)) return;
    uint32_t want = c->cfg->version ? c->cfg->version : QK_VERSION_1;
    if (c->restart.offer_version && vn_lists(h, want)) {
        vn_restart(c, want, now);
        return;
    }
    /* The list gets what the fixed text leaves of close.reason, so the whole
     * reason (with the version we offered) always fits. */
    char list[sizeof c->close.reason -
              (sizeof "version negotiation: server supports  (we offered 0x00000000)" - 1)];
    size_t off = 0;
    list[0] = 0;
    for (size_t i = 0; i < h->n_versions && off + 14 < sizeof list; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s0x%08x", i ? ", " : "",
                                qk_pkt_vn_version(h, i));
    c->close.err = QK_ERR_VERSION;
    c->close.code = 0;
    c->close.app = false;
    c->close.remote = true;
    snprintf(c->close.reason, sizeof c->close.reason,
             "version negotiation: server supports %s (we offered 0x%08x)",
             h->n_versions ? list : "nothing", offered);
    qk_qlog_event(c, "transport:version_information", "{\"server_versions\":\"vn\"}", now);
    /* No CONNECTION_CLOSE: the server does not speak our version. */
    qk_conn_enter_closed(c, now);
}

void qk_conn_on_retry(qk_conn *c, const uint8_t *pkt, const qk_pkt_hdr *h, qk_time now)
{
    /* RFC 9000 §17.2.5.2: one Retry per connection attempt, only before any
     * other server packet; an empty token or an SCID equal to our DCID is
     * discarded. */
    if (c->is_server || c->restart.retried || c->restart.got_packet ||
        c->state != QK_CONN_HANDSHAKE)
        return;
    if (h->version != c->version || h->token_len == 0 || h->token_len > sizeof c->restart.token)
        return;
    if (h->scid_len > QK_MAX_CID_LEN) return;
    if (h->scid_len == c->cids.initial_dcid.len &&
        !memcmp(h->scid, c->cids.initial_dcid.b, h->scid_len))
        return;
    /* RFC 9001 §5.8: the integrity tag over the pseudo-packet. */
    uint8_t pseudo[1 + QK_MAX_CID_LEN + 1500];
    size_t body = h->packet_len - QK_RETRY_TAG_LEN;
    int pl =
        qk_pkt_retry_pseudo(pseudo, sizeof pseudo, c->cids.odcid.b, c->cids.odcid.len, pkt, body);
    if (pl < 0 || qk_retry_tag_verify(c->version, pseudo, (size_t)pl, h->retry_tag)) return;

    c->restart.retried = true;
    memcpy(c->restart.token, h->token, h->token_len);
    c->restart.token_len = h->token_len;
    c->restart.retry_scid.len = (uint8_t)h->scid_len;
    memcpy(c->restart.retry_scid.b, h->scid, h->scid_len);
    /* §17.2.5.2: the Retry's SCID is our new DCID and keys the Initials. */
    c->cids.initial_dcid = c->restart.retry_scid;
    c->cids.rcid[c->cids.rcid_cur].cid = c->restart.retry_scid;
    int rc = qk_conn_install_initial_keys(c, &c->cids.initial_dcid);
    if (rc) {
        qk_conn_error(c, rc, 0, "retry: initial keys", now);
        return;
    }
    /* RFC 9002 §6.3: the ClientHello goes again, now with the token. */
    restart_initial(c, now);
    qk_qlog_event(c, "transport:packet_received", "{\"header\":{\"packet_type\":\"retry\"}}", now);
}

int qk_conn_on_new_token(qk_conn *c, const uint8_t *tok, size_t len, qk_time now)
{
    /* RFC 9000 §8.1.3: keep it for the next connection to this server. */
    qk_conn_env_store_token(c, &c->peer, tok, len, now);
    return 0;
}

void qk_conn_on_stateless_reset(qk_conn *c, qk_time now)
{
    if (c->state >= QK_CONN_DRAINING) return;
    c->close.err = QK_ERR_CLOSED;
    c->close.code = 0;
    c->close.app = false;
    c->close.remote = true;
    snprintf(c->close.reason, sizeof c->close.reason, "stateless reset");
    /* RFC 9000 §10.3.1: draining, and no more packets. */
    c->state = QK_CONN_DRAINING;
    c->close.send = false;
    c->timers.close_deadline = now + 3 * qk_conn_pto_ns(c);
    qk_qlog_event(c, "connectivity:connection_state_updated", "{\"new\":\"draining\"}", now);
}
