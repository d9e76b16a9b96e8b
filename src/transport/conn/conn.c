/* SPDX-License-Identifier: MIT */
/* Connection lifecycle and TLS glue: construction and teardown, the
 * handshake driven through TLS, the recovery sink (what an acknowledged or
 * lost packet means to the connection), closing. The public stream and
 * DATAGRAM API is conn_api.c, the timers timers.c. */
#include "transport/conn/conn.h"

#include <stdlib.h>
#include <string.h>

#include "crypto/keys.h"
#include "transport/conn/conn_tx.h"

/* A short write left the application waiting: tell it once there is room
 * again (at least a quarter of the buffer, so it is not woken per packet). */
void qk_conn_notify_writable(qk_conn *c, qk_stream *s)
{
    if (!s->write_blocked || s->send_state == QK_SEND_RESET_SENT) return;
    size_t room = qk_conn_send_room(c, s, NULL);
    if (room == 0 || room < s->send.max_buffered_bytes / 4) return;
    s->write_blocked = false;
    qk_event ev = {.type = QK_EV_STREAM_WRITABLE, .conn = c, .stream_id = s->id};
    qk_conn_push_event(c, &ev);
}

void qk_conn_push_event(qk_conn *c, const qk_event *ev)
{
    if (!c->env.push_event) return;
    qk_event e = *ev;
    if (qk_event_is_stream(e.type)) {
        const qk_stream *s = qk_streams_get(&c->streams, e.stream_id);
        if (s && !e.stream_user) e.stream_user = s->user;
        /* RFC 9001 §9.2: data that came in 0-RTT packets can be replayed. */
        if (s && (e.type == QK_EV_STREAM_OPENED || e.type == QK_EV_STREAM_READABLE))
            e.zero_rtt = s->rx_0rtt;
    }
    c->env.push_event(c->env.ctx, &e);
}

/* The offset STREAM_ACKED reports: the acknowledged prefix of s's data, and
 * whether the FIN (a virtual byte at the final size, sendbuf.h) is in it. */
static qk_acked_note acked_note_of(const qk_stream *s)
{
    qk_acked_note n = {.stream_id = s->id, .offset = s->send.acked_off, .user = s->user};
    if (s->send.fin && n.offset > s->send.write_off) {
        n.offset = s->send.write_off;
        n.fin = true;
    }
    return n;
}

static void push_acked(qk_conn *c, const qk_acked_note *n)
{
    qk_event ev = {.type = QK_EV_STREAM_ACKED,
                   .conn = c,
                   .stream_id = n->stream_id,
                   .offset = n->offset,
                   .fin = n->fin,
                   .stream_user = n->user};
    qk_conn_push_event(c, &ev);
}

void qk_conn_note_acked(qk_conn *c, qk_stream *s)
{
    qk_acked_note n = acked_note_of(s);
    if (s->acked_note) {
        c->acked[s->acked_note - 1] = n; /* coalesced: one event per ACK frame */
        return;
    }
    if (c->acked_n == c->acked_cap) {
        size_t cap = c->acked_cap ? 2 * c->acked_cap : 16;
        qk_acked_note *a = realloc(c->acked, cap * sizeof *a);
        if (!a) {
            push_acked(c, &n); /* no memory to coalesce: raise it now */
            return;
        }
        c->acked = a;
        c->acked_cap = cap;
    }
    c->acked[c->acked_n++] = n;
    s->acked_note = (uint32_t)c->acked_n;
}

/* The STREAM_ACKED events the last ACK frame owes, in the order the streams
 * first advanced. */
static void flush_acked(qk_conn *c)
{
    for (size_t i = 0; i < c->acked_n; i++) {
        qk_stream *s = qk_streams_get(&c->streams, c->acked[i].stream_id);
        if (s) s->acked_note = 0;
        push_acked(c, &c->acked[i]);
    }
    c->acked_n = 0;
}

void qk_conn_confirmed_event(qk_conn *c)
{
    if (c->confirmed_event || !c->connected_event || !c->handshake_confirmed) return;
    c->confirmed_event = true;
    qk_event ev = {.type = QK_EV_HANDSHAKE_CONFIRMED, .conn = c};
    qk_conn_push_event(c, &ev);
}

static void sink_on_acked(void *ctx, qk_pn_space space, const qk_sent_packet *pkt,
                          const qk_sent_frame *frames, size_t n);
static void sink_on_lost(void *ctx, qk_pn_space space, const qk_sent_packet *pkt,
                         const qk_sent_frame *frames, size_t n);

static void random_cid(qk_conn *c, qk_cid *cid, size_t len)
{
    cid->len = (uint8_t)len;
    qk_conn_env_random(c, cid->b, len);
}

int qk_conn_install_initial_keys(qk_conn *c, const qk_cid *dcid)
{
    uint8_t cs[QK_INITIAL_SECRET_BYTES], ss[QK_INITIAL_SECRET_BYTES];
    int rc = qk_crypto_initial_secrets(c->version, dcid->b, dcid->len, cs, ss);
    if (rc) return rc;
    qk_space *s = &c->sp[QK_PN_SPACE_INITIAL];
    qk_pkt_keys_free(&s->tx);
    qk_pkt_keys_free(&s->rx);
    /* RFC 9001 §5.2: Initial packets use AES-128-GCM. */
    rc = qk_pkt_keys_init_ex(&s->tx, c->version, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_AUTO,
                             c->is_server ? ss : cs, sizeof cs);
    if (!rc)
        rc = qk_pkt_keys_init_ex(&s->rx, c->version, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_AUTO,
                                 c->is_server ? cs : ss, sizeof cs);
    qk_crypto_wipe(cs, sizeof cs);
    qk_crypto_wipe(ss, sizeof ss);
    s->has_tx = s->has_rx = rc == 0;
    return rc;
}

static void fill_local_tparams(qk_conn *c)
{
    const qk_config *cfg = c->cfg;
    qk_tparams *tp = &c->local_tp;
    qk_tparams_init(tp);
    tp->present = QK_TPB_MAX_IDLE_TIMEOUT | QK_TPB_MAX_UDP_PAYLOAD_SIZE | QK_TPB_INITIAL_MAX_DATA |
                  QK_TPB_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL |
                  QK_TPB_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE | QK_TPB_INITIAL_MAX_STREAM_DATA_UNI |
                  QK_TPB_INITIAL_MAX_STREAMS_BIDI | QK_TPB_INITIAL_MAX_STREAMS_UNI |
                  QK_TPB_ACK_DELAY_EXPONENT | QK_TPB_MAX_ACK_DELAY |
                  QK_TPB_ACTIVE_CONNECTION_ID_LIMIT | QK_TPB_INITIAL_SCID;
    tp->max_idle_timeout_ms = cfg->idle_timeout_ns / QK_NS_PER_MS;
    tp->max_udp_payload_size = 65527;
    tp->initial_max_data = cfg->initial_max_data_bytes;
    tp->initial_max_stream_data_bidi_local = cfg->initial_max_stream_data_bytes;
    tp->initial_max_stream_data_bidi_remote = cfg->initial_max_stream_data_bytes;
    tp->initial_max_stream_data_uni = cfg->initial_max_stream_data_bytes;
    tp->initial_max_streams_bidi = cfg->max_streams_bidi;
    tp->initial_max_streams_uni = cfg->max_streams_uni;
    tp->ack_delay_exponent = cfg->ack_delay_exponent;
    tp->max_ack_delay_ms = cfg->max_ack_delay_ns / QK_NS_PER_MS;
    tp->active_connection_id_limit = cfg->active_cid_limit;
    tp->initial_scid.len = c->cids.lcid[0].cid.len;
    memcpy(tp->initial_scid.id, c->cids.lcid[0].cid.b, c->cids.lcid[0].cid.len);
    if (cfg->min_ack_delay_ns) {
        /* ack-frequency-12 §3: we accept ACK_FREQUENCY / IMMEDIATE_ACK. */
        tp->present |= QK_TPB_MIN_ACK_DELAY;
        tp->min_ack_delay_us = cfg->min_ack_delay_ns / QK_NS_PER_US;
    }
    if (cfg->disable_active_migration) {
        tp->present |= QK_TPB_DISABLE_ACTIVE_MIGRATION; /* RFC 9000 §18.2 */
        tp->disable_active_migration = true;
    }
    if (cfg->max_datagram_frame_bytes) {
        tp->present |= QK_TPB_MAX_DATAGRAM_FRAME_SIZE;
        tp->max_datagram_frame_size = cfg->max_datagram_frame_bytes;
    }
    if (c->is_server) {
        /* RFC 9000 §7.3: the server echoes the client's first DCID. */
        tp->present |= QK_TPB_ORIGINAL_DCID | QK_TPB_STATELESS_RESET_TOKEN;
        tp->original_dcid.len = c->cids.odcid.len;
        memcpy(tp->original_dcid.id, c->cids.odcid.b, c->cids.odcid.len);
        memcpy(tp->stateless_reset_token, c->cids.lcid[0].reset_token, QK_RESET_TOKEN_LEN);
        if (c->restart.retried) {
            /* RFC 9000 §7.3: after a Retry, name the Retry's SCID. */
            tp->present |= QK_TPB_RETRY_SCID;
            tp->retry_scid.len = c->restart.retry_scid.len;
            memcpy(tp->retry_scid.id, c->restart.retry_scid.b, c->restart.retry_scid.len);
        }
        qk_conn_prefaddr_advertise(c, tp); /* RFC 9000 §9.6 */
    }
}

int qk_conn_tls_credentials(const qk_config *cfg, qk_tls_config *tc, char *prio, size_t cap)
{
    const char *bad;
    tc->cert_file = cfg->cert_file;
    tc->key_file = cfg->key_file;
    tc->cert_pem = cfg->cert_pem;
    tc->key_pem = cfg->key_pem;
    tc->priority = NULL; /* the TLS layer's default */
    if (!cfg->ciphers) return 0;
    if (qk_tls_priority_for_ciphers(cfg->ciphers, prio, cap, &bad)) return QK_ERR_CONFIG;
    tc->priority = prio;
    return 0;
}

static int init_tls(qk_conn *c, const char *server_name, const uint8_t *session, size_t session_len)
{
    const qk_config *cfg = c->cfg;
    qk_tls_config tc;
    memset(&tc, 0, sizeof tc);
    for (size_t i = 0; i < cfg->alpn_count && i < QK_TLS_ALPN_MAX; i++) tc.alpn[i] = cfg->alpn[i];
    tc.alpn_count = cfg->alpn_count < QK_TLS_ALPN_MAX ? cfg->alpn_count : QK_TLS_ALPN_MAX;
    tc.server_name = server_name;
    tc.keylog = cfg->keylog;
    tc.keylog_ctx = cfg->keylog_ctx;
    /* RFC 9001 §4.5-4.6: tickets (server), a session to resume (client), 0-RTT. */
    tc.tickets = c->is_server && cfg->session_tickets ? cfg->ticket_keys : NULL;
    tc.early_data = cfg->early_data;
    tc.session = session;
    tc.session_len = session_len;
    if (cfg->insecure)
        tc.verify = QK_TLS_VERIFY_INSECURE;
    else if (cfg->has_pin) {
        tc.verify = QK_TLS_VERIFY_PIN;
        memcpy(tc.pin_sha256, cfg->pin_sha256, QK_TLS_PIN_BYTES);
    } else
        tc.verify = QK_TLS_VERIFY_SYSTEM;

    uint8_t tp[512];
    int n = qk_tparams_encode(&c->local_tp, c->is_server, tp, sizeof tp);
    if (n < 0) return n;
    char prio[256];
    if (qk_conn_tls_credentials(cfg, &tc, prio, sizeof prio)) return QK_ERR_CONFIG;
    if (c->is_server) tc.creds = c->env.tls_creds; /* loaded once by the owner */
    int err = 0;
    c->tls = qk_tls_new(&tc, c->is_server, tp, (size_t)n, &err);
    return c->tls ? 0 : (err ? err : QK_ERR_TLS);
}

/* The client's first flight failed with a session to resume: GnuTLS does
 * that when the ticket has expired and early data is enabled (it leaves the
 * PSK out of the ClientHello, then fails to set the early keys). RFC 9001
 * §4.5 resumption is an option, not a requirement: start again as a full
 * handshake, as if no session had been given. Nothing was sent yet and no
 * secret installed (qk_conn_drive_tls fails before either). */
static int restart_without_session(qk_conn *c, const char *server_name, qk_time now)
{
    qk_tls_del(c->tls);
    c->tls = NULL;
    c->zrtt.have_remembered = false;
    c->stats.session_fallbacks++;
    int rc = init_tls(c, server_name, NULL, 0);
    return rc ? rc : qk_conn_drive_tls(c, now);
}

static void init_space(qk_conn *c, qk_pn_space s)
{
    qk_ack_policy pol;
    qk_ack_policy_default(&pol);
    if (s == QK_PN_SPACE_APP) {
        pol.ack_eliciting_threshold = c->cfg->ack_eliciting_threshold;
        pol.max_ack_delay_ns = c->cfg->max_ack_delay_ns;
        pol.ecn_ack_bug = c->env.ecn_ack_bug;
    } else {
        pol.max_ack_delay_ns = 0; /* RFC 9000 §13.2.1: Initial/Handshake ACK at once */
    }
    qk_ack_tracker_init(&c->sp[s].ack, s, &pol, QK_ACK_DEFAULT_MAX_RANGES);
    qk_sendbuf_init(&c->sp[s].crypto_send, QK_CONN_CRYPTO_BUF_BYTES);
    qk_recvbuf_init_crypto(&c->sp[s].crypto_recv, QK_CONN_CRYPTO_BUF_BYTES);
}

static int init_streams(qk_conn *c)
{
    const qk_config *cfg = c->cfg;
    qk_streams_config sc = {
        .is_server = c->is_server,
        .max_streams_bidi = cfg->max_streams_bidi,
        .max_streams_uni = cfg->max_streams_uni,
        .max_stream_data_bidi_local = cfg->initial_max_stream_data_bytes,
        .max_stream_data_bidi_remote = cfg->initial_max_stream_data_bytes,
        .max_stream_data_uni = cfg->initial_max_stream_data_bytes,
        .send_buffer_bytes = cfg->max_stream_send_buffer_bytes,
        .autotune = cfg->autotune,
        .max_stream_window_bytes = cfg->max_stream_window_bytes,
        .budget = c->env.budget,
        .autotune_rule = cfg->autotune_rule,
    };
    qk_sched_init(&c->sched);
    return qk_streams_init(&c->streams, &sc);
}

qk_conn *qk_conn_new(const qk_conn_env *env, const qk_config *cfg, bool is_server,
                     const qk_addr *local, const qk_addr *peer, const qk_cid *dcid,
                     const qk_cid *scid, const char *server_name, qk_time now, int *err)
{
    return qk_conn_new_ex(env, cfg, is_server, local, peer, dcid, scid, server_name, NULL, now,
                          err);
}

/* Connection IDs and address validation state of a new connection. */
static void init_cids(qk_conn *c, const qk_cid *dcid, const qk_cid *scid, const qk_conn_opts *o)
{
    random_cid(c, &c->cids.lcid[0].cid, c->cfg->cid_bytes);
    qk_cid_encode_server_id(c->cfg, &c->cids.lcid[0].cid);
    c->cids.lcid[0].active = true;
    qk_conn_env_reset_token(c, &c->cids.lcid[0].cid, c->cids.lcid[0].reset_token);
    c->cids.lcid_next_seq = 1;
    if (c->is_server) {
        c->cids.initial_dcid = *dcid; /* the DCID of the client's Initial: keys, demux */
        /* RFC 9000 §7.3: after a Retry, the original DCID comes from the token. */
        c->cids.odcid = o && o->orig_dcid ? *o->orig_dcid : *dcid;
        if (o && o->retry_scid) {
            c->restart.retry_scid = *o->retry_scid;
            c->restart.retried = true;
        }
        c->cids.rcid[0].cid = *scid; /* the client's SCID becomes our DCID */
        c->cids.peer_scid = *scid;
        c->address_validated = o && o->validated; /* RFC 9000 §8.1 */
    } else {
        random_cid(c, &c->cids.odcid, 8); /* RFC 9000 §7.2: at least 8 random bytes */
        c->cids.initial_dcid = c->cids.odcid;
        c->cids.rcid[0].cid = c->cids.odcid;
        c->address_validated = true;
        if (o && o->token_len && o->token_len <= sizeof c->restart.token) {
            memcpy(c->restart.token, o->token, o->token_len); /* RFC 9000 §8.1.3 */
            c->restart.token_len = o->token_len;
        }
    }
    c->cids.rcid[0].active = true;
}

/* RTT, congestion control, loss recovery, pacing and connection flow control. */
static int init_feedback(qk_conn *c, qk_time now)
{
    const qk_config *cfg = c->cfg;
    int rc;
    qk_rtt_init(&c->rtt, QK_RTT_INITIAL_NS);
    if ((rc = qk_cc_init(&c->cc, (qk_cc_algo)cfg->cc, c->max_udp_bytes, now))) return rc;
    if (cfg->cc_max_rate_bps) qk_cc_set_max_rate(&c->cc, cfg->cc_max_rate_bps / 8, now);
    qk_recovery_config rcfg = {.is_server = c->is_server};
    qk_recovery_sink sink = {.ctx = c, .on_acked = sink_on_acked, .on_lost = sink_on_lost};
    if ((rc = qk_recovery_init(&c->rec, &rcfg, &c->rtt, &c->cc, &sink))) return rc;
    qk_pacer_init(&c->pacer, QK_PACER_DEFAULT_BURST_PKTS);
    /* RFC 9331 §4.3: the L queue marks bursts; an L4S (or DCTCP) sender does
     * not catch up after a late wake-up (pacer.h QK_PACER_MAX_LATE_NS). */
    if (qk_conn_cc_scalable(cfg)) qk_pacer_set_late_max(&c->pacer, 0);
    if (cfg->pacing_gain_ca_pct) qk_pacer_set_gain_ca(&c->pacer, cfg->pacing_gain_ca_pct);
    /* RFC 9002 §7.7: bursts as large as the loop timer needs (pacer.h); a
     * scalable controller's bursts stay short (see pacer_floor_pkts). */
    qk_pacer_set_burst_interval(&c->pacer,
                                qk_conn_cc_scalable(cfg) ? QK_PACER_BURST_INTERVAL_NS / 8
                                                         : QK_PACER_BURST_INTERVAL_NS,
                                QK_PACER_MAX_BURST_BYTES);
    /* The connection window is not charged to the endpoint budget: the peer
     * can make us hold only min(connection credit, sum of stream credit),
     * and the streams' growth is charged. Charging both counted a
     * connection's memory about twice, and 30 streams on 1 Gbit/s x 150 ms
     * under a 64 MiB budget got 41 % of the link (73 % now; bench/flowtune.sh
     * experiment 5, docs/experiments/flow-control.md "Budget"). */
    qk_flow_rx_init(&c->flow_rx, cfg->initial_max_data_bytes, cfg->max_conn_window_bytes,
                    cfg->autotune, NULL);
    c->flow_rx.rule = (cfg->autotune_rule & 1) ? QK_FLOW_RULE_EPOCH : QK_FLOW_RULE_RTT2;
    c->flow_rx.plain_doubling = (cfg->autotune_rule & 2) != 0;
    c->flow_rx.climb_doubling = true; /* flow.h: must not lag slow start */
    qk_flow_tx_init(&c->flow_tx, 0);
    return 0;
}

/* The CC bypass (urgencies below the limit, through a bucket)
 * and the ACK-frequency sender policy. */
static void init_bypass_ackfreq(qk_conn *c, qk_time now)
{
    const qk_config *cfg = c->cfg;
    if (cfg->bypass_urgency_limit && cfg->bypass_rate_bps && cfg->bypass_bucket_bytes) {
        c->bypass_limit = cfg->bypass_urgency_limit;
        qk_bypass_init(&c->bypass, cfg->bypass_rate_bps, cfg->bypass_bucket_bytes, now);
        for (uint8_t u = 0; u < QK_SCHED_URGENCIES && u < c->bypass_limit; u++)
            qk_sched_set_bypass(&c->sched, u, true);
    }
    qk_ackfreq_config afc = {.mode = (qk_ackfreq_mode)cfg->ack_frequency,
                             .threshold = cfg->ack_frequency_threshold,
                             .max_delay_ns = cfg->ack_frequency_delay_ns,
                             .reordering_threshold = cfg->ack_frequency_reorder,
                             .paced = qk_conn_cc_scalable(cfg)};
    qk_ackfreq_init(&c->af, &afc);
}

qk_conn *qk_conn_new_ex(const qk_conn_env *env, const qk_config *cfg, bool is_server,
                        const qk_addr *local, const qk_addr *peer, const qk_cid *dcid,
                        const qk_cid *scid, const char *server_name, const qk_conn_opts *opts,
                        qk_time now, int *err)
{
    qk_conn *c = calloc(1, sizeof *c);
    int rc = QK_ERR_NOMEM;
    if (!c) goto fail_nomem;
    if (env) c->env = *env;
    c->cfg = cfg;
    c->is_server = is_server;
    c->version = opts && opts->version ? opts->version : cfg->version ? cfg->version : QK_VERSION_1;
    if (!is_server && cfg->offer_version && cfg->offer_version != c->version) {
        /* RFC 9000 §6.2: offer another version first. An unknown one is only a
         * header (the server cannot read the packet); Initial keys stay those
         * of the configured version. */
        c->restart.offer_version = cfg->offer_version;
        if (qk_version_supported(cfg->offer_version)) c->version = cfg->offer_version;
    }
    if (local) c->local = *local;
    c->peer = *peer;
    qk_path_init(&c->paths.cur, &c->local, &c->peer, true); /* §8.1 covers the first path */
    c->paths.dg_local = c->local;
    c->paths.dg_peer = c->peer;
    /* RFC 9000 §14.3: with DPLPMTUD start at the 1200-byte base and search up. */
    qk_pmtud_init(&c->pmtud, cfg->pmtud, (uint32_t)cfg->max_udp_payload_bytes);
    c->max_udp_bytes = c->pmtud.enabled ? QK_PMTUD_BASE_BYTES : cfg->max_udp_payload_bytes;
    c->stats.pmtu_bytes = c->max_udp_bytes;
    c->timers.idle_deadline = c->timers.close_deadline = QK_TIME_INFINITE;
    c->timers.handshake_deadline =
        cfg->handshake_timeout_ns ? now + cfg->handshake_timeout_ns : QK_TIME_INFINITE;
    c->pacing_wait = 0;
    c->first_1rtt_pn = UINT64_MAX;
    qk_ku_init(&c->ku);
    qk_feedback_init(&c->fb);

    init_cids(c, dcid, scid, opts);

    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) init_space(c, (qk_pn_space)s);
    if ((rc = qk_conn_install_initial_keys(c, &c->cids.initial_dcid))) goto fail;

    if ((rc = init_feedback(c, now))) goto fail;
    if ((rc = init_streams(c))) goto fail;
    init_bypass_ackfreq(c, now);
    fill_local_tparams(c);
    const uint8_t *sess = NULL;
    size_t sess_len = 0;
    if (!is_server && opts && opts->session_len &&
        (rc = qk_session_parse(c, opts->session, opts->session_len, &sess, &sess_len)))
        goto fail;
    if ((rc = init_tls(c, server_name, sess, sess_len))) goto fail;
    if ((rc = qk_conn_env_add_cid(c, &c->cids.lcid[0].cid))) goto fail;
    if (is_server && (rc = qk_conn_env_add_cid(c, &c->cids.initial_dcid))) goto fail;
    c->timers.idle_timeout_ns = cfg->idle_timeout_ns;
    c->timers.keep_alive_ns = cfg->keep_alive_ns;
    qk_conn_touch_idle(c, now);
    qk_qlog_open(c, now); /* no-op without qk_config.qlog_open */
    qk_qlog_params(c, true, &c->local_tp, now);
    if (!is_server && (rc = qk_conn_drive_tls(c, now)) < 0 &&
        (!sess || (rc = restart_without_session(c, server_name, now)) < 0))
        goto fail;
    return c;
fail:
    qk_conn_del(c);
fail_nomem:
    if (err) *err = rc;
    return NULL;
}

void qk_conn_del(qk_conn *c)
{
    if (!c) return;
    for (size_t i = 0; i < QK_CONN_MAX_LOCAL_CIDS; i++)
        if (c->cids.lcid[i].active) qk_conn_env_remove_cid(c, &c->cids.lcid[i].cid);
    qk_cid_linger_expire(c, QK_TIME_INFINITE);
    qk_conn_held_free(c);
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++)
        if (c->cids.rcid[i].has_token)
            qk_conn_env_remove_reset_token(c, c->cids.rcid[i].reset_token);
    if (c->is_server && !c->handshake_complete) qk_conn_env_remove_cid(c, &c->cids.initial_dcid);
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) {
        qk_ack_tracker_free(&c->sp[s].ack);
        qk_sendbuf_free(&c->sp[s].crypto_send);
        qk_recvbuf_free(&c->sp[s].crypto_recv);
        qk_pkt_keys_free(&c->sp[s].rx);
        qk_pkt_keys_free(&c->sp[s].tx);
    }
    qk_ku_free(&c->ku);
    qk_pkt_keys_free(&c->zrtt.early);
    qk_recovery_free(&c->rec);
    qk_conn_send_release(c);
    qk_streams_free(&c->streams);
    qk_flow_rx_free(&c->flow_rx);
    for (size_t i = 0; i < c->dgq_count; i++) free(c->dgq[(c->dgq_head + i) % c->dgq_cap].data);
    free(c->dgq);
    free(c->acked);
    qk_tls_del(c->tls);
    qk_qlog_close(c);
    free(c);
}

/* ---- TLS glue ---- */

static int apply_peer_tparams(qk_conn *c, qk_time now)
{
    size_t len;
    const uint8_t *p = qk_tls_peer_tparams(c->tls, &len);
    if (!p) return QK_ERR_CRYPTO_ALERT(QK_TLS_ALERT_MISSING_EXTENSION); /* RFC 9001 §8.2 */
    qk_tparams *tp = &c->peer_tp;
    int rc = qk_tparams_decode(p, len, !c->is_server, tp);
    if (rc < 0) return rc;
    /* RFC 9000 §7.3: authenticate the connection IDs. */
    if (!(tp->present & QK_TPB_INITIAL_SCID) || tp->initial_scid.len != c->cids.peer_scid.len ||
        memcmp(tp->initial_scid.id, c->cids.peer_scid.b, c->cids.peer_scid.len))
        return QK_ERR_TRANSPORT_PARAMETER;
    if (!c->is_server) {
        if (!(tp->present & QK_TPB_ORIGINAL_DCID) || tp->original_dcid.len != c->cids.odcid.len ||
            memcmp(tp->original_dcid.id, c->cids.odcid.b, c->cids.odcid.len))
            return QK_ERR_TRANSPORT_PARAMETER;
        /* RFC 9000 §7.3: retry_source_connection_id iff we processed a Retry. */
        bool has_rscid = (tp->present & QK_TPB_RETRY_SCID) != 0;
        if (has_rscid != c->restart.retried ||
            (c->restart.retried &&
             (tp->retry_scid.len != c->restart.retry_scid.len ||
              memcmp(tp->retry_scid.id, c->restart.retry_scid.b, c->restart.retry_scid.len))))
            return QK_ERR_TRANSPORT_PARAMETER;
        if (tp->present & QK_TPB_STATELESS_RESET_TOKEN) {
            memcpy(c->cids.rcid[0].reset_token, tp->stateless_reset_token, QK_RESET_TOKEN_LEN);
            c->cids.rcid[0].has_token = true;
            qk_conn_env_add_reset_token(c, c->cids.rcid[0].reset_token);
        }
        if ((rc = qk_conn_prefaddr_on_tparams(c))) return rc; /* RFC 9000 §9.6 */
    }
    c->have_peer_tp = true;
    qk_qlog_params(c, false, tp, now);
    c->peer_ack_delay_exponent = tp->ack_delay_exponent;
    qk_flow_tx_on_max(&c->flow_tx, tp->initial_max_data);
    qk_streams_peer_params spp = qk_conn_stream_limits(tp);
    if ((rc = qk_streams_set_peer_params(&c->streams, &spp))) return rc;
    qk_recovery_set_max_ack_delay(&c->rec, tp->max_ack_delay_ms * QK_NS_PER_MS, now);
    /* ack-frequency-12 §3: only a peer that advertised min_ack_delay is asked. */
    qk_ackfreq_set_peer(&c->af, (tp->present & QK_TPB_MIN_ACK_DELAY) != 0,
                        tp->min_ack_delay_us * QK_NS_PER_US);
    /* RFC 9000 §10.1: the effective idle timeout is the minimum of both. */
    qk_time peer_idle = tp->max_idle_timeout_ms * QK_NS_PER_MS;
    if (peer_idle && (!c->timers.idle_timeout_ns || peer_idle < c->timers.idle_timeout_ns))
        c->timers.idle_timeout_ns = peer_idle;
    if (tp->max_udp_payload_size < c->max_udp_bytes) c->max_udp_bytes = tp->max_udp_payload_size;
    qk_pmtud_set_max(
        &c->pmtud,
        (uint32_t)(tp->max_udp_payload_size < UINT32_MAX ? tp->max_udp_payload_size : UINT32_MAX));
    /* Streams the application opened before the handshake may now send. */
    for (qk_stream *s = qk_streams_next(&c->streams, NULL); s; s = qk_streams_next(&c->streams, s))
        qk_conn_schedule_stream(c, s);
    return 0;
}

static void on_handshake_complete(qk_conn *c, qk_time now)
{
    c->handshake_complete = true;
    c->timers.handshake_deadline = QK_TIME_INFINITE; /* qk_config.handshake_timeout_ns met */
    c->state = QK_CONN_ESTABLISHED;
    /* The handshake timeout no longer applies (a stale deadline in the past
     * made qk_conn_next_timeout report "due" forever: drivers spun). */
    c->timers.handshake_deadline = QK_TIME_INFINITE;
    if (c->is_server) {
        /* RFC 9001 §4.1.2: the server's handshake is confirmed at completion. */
        c->handshake_confirmed = true;
        c->pend |= QK_PEND_HANDSHAKE_DONE;
        qk_recovery_set_handshake_confirmed(&c->rec, now);
        qk_conn_discard_space(c, QK_PN_SPACE_HANDSHAKE, now);
        qk_conn_env_remove_cid(c, &c->cids.initial_dcid);
        /* RFC 9000 §8.1.3: a token for the client's next connection. */
        if (c->cfg->new_token_lifetime_ns) c->pend |= QK_PEND_NEW_TOKEN;
    }
    qk_cid_issue(c); /* RFC 9000 §5.1.1: spare CIDs up to the peer's limit */
    if (!c->connected_event) {
        c->connected_event = true;
        qk_event ev = {.type = QK_EV_CONNECTED, .conn = c};
        qk_conn_push_event(c, &ev);
    }
    qk_conn_confirmed_event(c); /* the server's: RFC 9001 §4.1.2 */
    qk_qlog_event(c, "connectivity:connection_state_updated", "{\"new\":\"handshake_complete\"}",
                  now);
}

static int install_secret(qk_conn *c, qk_crypto_level level, int is_write, qk_crypto_suite suite,
                          const uint8_t *secret, size_t len)
{
    qk_pn_space s = level == QK_LEVEL_HANDSHAKE     ? QK_PN_SPACE_HANDSHAKE
                    : level == QK_LEVEL_APPLICATION ? QK_PN_SPACE_APP
                                                    : QK_PN_SPACE_COUNT;
    if (level == QK_LEVEL_EARLY) return qk_session_install_early(c, is_write, suite, secret, len);
    if (s == QK_PN_SPACE_COUNT) return 0;
    if (c->cfg->no_protection) suite = QK_SUITE_NULL;
    qk_pkt_keys *k = is_write ? &c->sp[s].tx : &c->sp[s].rx;
    qk_pkt_keys_free(k);
    int rc = qk_pkt_keys_init_ex(k, c->version, suite, QK_AEAD_BACKEND_AUTO, secret, len);
    if (rc) return rc;
    if (is_write)
        c->sp[s].has_tx = true;
    else
        c->sp[s].has_rx = true;
    /* RFC 9001 §6: 1-RTT secrets are kept for key updates. */
    if (s == QK_PN_SPACE_APP && (rc = qk_ku_set_secret(&c->ku, is_write, k, secret, len)))
        return rc;
    if (s == QK_PN_SPACE_HANDSHAKE && !c->is_server)
        qk_recovery_set_have_handshake_keys(&c->rec, true, 0);
    return 0;
}

int qk_conn_drive_tls(qk_conn *c, qk_time now)
{
    int hs = qk_tls_handshake(c->tls);
    if (hs < 0 && hs != QK_ERR_AGAIN) return hs;
    qk_crypto_level level;
    int is_write;
    qk_crypto_suite suite;
    uint8_t secret[QK_SECRET_MAX_BYTES];
    size_t slen;
    int rc = 0;
    while (!rc && qk_tls_poll_secret(c->tls, &level, &is_write, &suite, secret, &slen) == 0)
        rc = install_secret(c, level, is_write, suite, secret, slen);
    qk_crypto_wipe(secret, sizeof secret);
    if (rc) return rc;
    static const qk_crypto_level levels[] = {QK_LEVEL_INITIAL, QK_LEVEL_HANDSHAKE,
                                             QK_LEVEL_APPLICATION};
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) {
        const uint8_t *p;
        size_t len;
        if (qk_tls_out(c->tls, levels[s], &p, &len) || !len) continue;
        long w = qk_sendbuf_write(&c->sp[s].crypto_send, p, len);
        if (w < 0 || (size_t)w != len) return QK_ERR_CRYPTO_BUFFER;
        qk_tls_consume(c->tls, levels[s], len);
    }
    /* RFC 9001 §4.6.1: a server that accepted 0-RTT uses the client's
     * parameters from its ClientHello for the streams 0-RTT opens at once. */
    if (c->is_server && c->zrtt.has_early && !c->have_peer_tp &&
        qk_tls_peer_tparams(c->tls, NULL) && (rc = apply_peer_tparams(c, now)))
        return rc;
    if (hs == 0 && !c->handshake_complete) {
        if (!c->have_peer_tp && (rc = apply_peer_tparams(c, now))) return rc;
        if ((rc = qk_session_on_handshake(c, now))) return rc;
        on_handshake_complete(c, now);
    }
    qk_session_poll_ticket(c);
    return 0;
}

/* RFC 9001 §4.9: keys of a space are discarded; its packets leave flight. */
void qk_conn_discard_space(qk_conn *c, qk_pn_space space, qk_time now)
{
    qk_space *s = &c->sp[space];
    if (s->discarded) return;
    s->discarded = true;
    s->has_rx = s->has_tx = false;
    s->probes = 0;
    qk_pkt_keys_free(&s->rx);
    qk_pkt_keys_free(&s->tx);
    qk_recovery_discard_space(&c->rec, space, now);
    /* Its CRYPTO stream is never sent or read again: free its buffers. */
    qk_sendbuf_free(&s->crypto_send);
    qk_recvbuf_free(&s->crypto_recv);
    qk_sendbuf_init(&s->crypto_send, QK_CONN_CRYPTO_BUF_BYTES);
    qk_recvbuf_init_crypto(&s->crypto_recv, QK_CONN_CRYPTO_BUF_BYTES);
}

/* ---- recovery sink: rebuild what was lost, release what was acked ---- */

/* RFC 9000 §3.3: a stream whose both halves are terminal is forgotten. */
void qk_conn_forget_if_closed(qk_conn *c, qk_stream *s)
{
    if (!qk_stream_is_closed(s)) return;
    qk_conn_send_account(c, s);
    qk_sched_remove(&c->sched, &s->sched);
    qk_streams_gc(&c->streams, s);
}

static void sink_on_acked(void *ctx, qk_pn_space space, const qk_sent_packet *pkt,
                          const qk_sent_frame *frames, size_t n)
{
    qk_conn *c = ctx;
    if (space == QK_PN_SPACE_APP) {
        if (pkt->is_pmtu_probe) {
            uint64_t before = c->max_udp_bytes;
            uint64_t now_bytes =
                qk_pmtud_on_probe_acked(&c->pmtud, pkt->size_bytes, pkt->time_sent);
            if (now_bytes > before) qk_conn_set_mtu(c, now_bytes);
        } else {
            qk_pmtud_on_packet(&c->pmtud, pkt->size_bytes, pkt->time_sent, true);
        }
    }
    for (size_t i = 0; i < n; i++) qk_ctrl_on_acked(c, space, &frames[i]);
    /* RFC 9001 §4.1.2: the client's handshake is confirmed when a 1-RTT
     * packet is acknowledged (or HANDSHAKE_DONE arrives); an acknowledged
     * 0-RTT packet does not count (the server may not have our Finished). */
    if (space == QK_PN_SPACE_APP && !c->is_server && c->handshake_complete &&
        !c->handshake_confirmed && pkt->pn >= c->first_1rtt_pn)
        c->defer_confirm = true; /* applied after the ACK (qk_conn_apply_deferred) */
}

static void sink_on_lost(void *ctx, qk_pn_space space, const qk_sent_packet *pkt,
                         const qk_sent_frame *frames, size_t n)
{
    qk_conn *c = ctx;
    qk_qlog_lost(c, space, pkt->pn);
    if (space == QK_PN_SPACE_APP) {
        /* RFC 9000 §14.4: a lost probe says nothing about congestion. */
        if (pkt->is_pmtu_probe) {
            qk_pmtud_on_probe_lost(&c->pmtud, pkt->size_bytes, pkt->time_sent);
        } else {
            qk_pmtud_on_packet(&c->pmtud, pkt->size_bytes, pkt->time_sent, false);
        }
    }
    for (size_t i = 0; i < n; i++) qk_ctrl_on_lost(c, space, &frames[i]);
}

/* Actions the sink recorded while recovery.c was inside its ACK loop
 * (recovery.h: the sink never calls back into recovery). */
void qk_conn_apply_deferred(qk_conn *c, qk_time now)
{
    if (c->defer_max_ack_delay) {
        c->defer_max_ack_delay = false;
        /* ack-frequency-12 §7: PTO uses the largest delay that may be in effect. */
        qk_recovery_set_max_ack_delay(
            &c->rec, qk_ackfreq_pto_delay(&c->af, c->peer_tp.max_ack_delay_ms * QK_NS_PER_MS), now);
    }
    if (c->defer_confirm) {
        /* RFC 9001 §4.1.2: the client's handshake is confirmed when a 1-RTT
         * packet is acknowledged (or HANDSHAKE_DONE arrives). */
        c->defer_confirm = false;
        c->handshake_confirmed = true;
        qk_recovery_set_handshake_confirmed(&c->rec, now);
        qk_conn_discard_space(c, QK_PN_SPACE_HANDSHAKE, now);
        qk_conn_confirmed_event(c);
    }
    if (c->acked_n) flush_acked(c);
}

/* ---- closing ---- */

void qk_conn_enter_closed(qk_conn *c, qk_time now)
{
    if (c->state == QK_CONN_CLOSED) return;
    c->state = QK_CONN_CLOSED;
    qk_event ev = {.type = QK_EV_CLOSED,
                   .conn = c,
                   .error_code = c->close.code,
                   .frame_type = c->close.frame_type,
                   .app_error = c->close.app,
                   .remote = c->close.remote,
                   .reason_err = c->close.err};
    snprintf(ev.reason, sizeof ev.reason, "%s", c->close.reason);
    qk_conn_push_event(c, &ev);
    qk_qlog_closed(c, now);
}

static void enter_closing(qk_conn *c, qk_time now)
{
    if (c->state >= QK_CONN_CLOSING) return;
    c->state = QK_CONN_CLOSING;
    c->close.send = true;
    c->timers.close_deadline = now + 3 * qk_conn_pto_ns(c); /* RFC 9000 §10.2 */
}

void qk_conn_error(qk_conn *c, int err, uint64_t frame_type, const char *reason, qk_time now)
{
    if (c->state >= QK_CONN_CLOSING) return;
    c->close.err = err;
    c->close.code = qk_err_transport_code(err);
    c->close.frame_type = frame_type;
    c->close.app = false;
    c->close.remote = false;
    /* A TLS failure: the TLS layer's text says what went wrong. */
    if (!reason && err <= QK_ERR_CRYPTO_BASE && err >= -0x11ff && c->tls &&
        strcmp(qk_tls_last_error(c->tls), "no error"))
        reason = qk_tls_last_error(c->tls);
    snprintf(c->close.reason, sizeof c->close.reason, "%s", reason ? reason : qk_strerror(err));
    enter_closing(c, now);
}

/* ---- stream scheduling ---- */

void qk_conn_schedule_stream(qk_conn *c, qk_stream *s)
{
    if (!c->have_peer_tp && !c->zrtt.on_remembered) return; /* 0-RTT: RFC 9000 §7.4.1 */
    if (s->send_state == QK_SEND_NONE || !qk_sendbuf_has_pending(&s->send)) return;
    if (!s->sched.queued) qk_sched_add(&c->sched, &s->sched, s->urgency, s->incremental);
}

/* ---- DPLPMTUD ---- */

void qk_conn_set_mtu(qk_conn *c, uint64_t bytes)
{
    if (bytes < QK_PMTUD_BASE_BYTES) bytes = QK_PMTUD_BASE_BYTES;
    /* DNS-carrier profile (docs/dns.md): never above a sub-1200 maximum. */
    if (c->cfg->min_datagram_bytes && bytes > c->cfg->max_udp_payload_bytes)
        bytes = c->cfg->max_udp_payload_bytes;
    c->max_udp_bytes = bytes;
    c->cc.max_datagram_bytes = bytes; /* RFC 9002 §7.2: windows count max_datagram_size */
    c->stats.pmtu_bytes = bytes;
}

/* ---- key update (RFC 9001 §6) ---- */

int qk_conn_key_update_now(qk_conn *c, bool force, qk_time now)
{
    qk_space *sp = &c->sp[QK_PN_SPACE_APP];
    /* RFC 9001 §6.1: not before the handshake is confirmed, and not again
     * before a packet of the current phase was acknowledged. */
    if (c->state != QK_CONN_ESTABLISHED || !c->handshake_confirmed || !sp->has_tx || !sp->has_rx)
        return QK_ERR_STATE;
    if (!force && !qk_ku_can_initiate(&c->ku)) return QK_ERR_STATE;
    int rc = qk_ku_switch(&c->ku, &sp->rx, &sp->tx, &c->key_phase, sp->next_pn, now);
    if (rc) return rc;
    c->ku.initiated++;
    c->ku.tx_since_own = 0;
    c->stats.key_updates++;
    c->stats.key_updates_initiated++;
    qk_qlog_event(c, "security:key_updated", "{\"trigger\":\"local_update\"}", now);
    return 0;
}

void qk_conn_key_update_check(qk_conn *c, qk_time now)
{
    qk_space *sp = &c->sp[QK_PN_SPACE_APP];
    if (c->state != QK_CONN_ESTABLISHED || !c->handshake_confirmed || !sp->has_tx) return;
    qk_crypto_suite suite = sp->tx.suite;
    /* RFC 9001 §6.6: never exceed the confidentiality limit; close instead. */
    if (c->ku.tx_pkts >= qk_ku_confidentiality_limit(suite)) {
        qk_conn_error(c, QK_ERR_AEAD_LIMIT, 0, "AEAD confidentiality limit reached", now);
        return;
    }
    if (qk_ku_want_update(&c->ku, suite, c->cfg->key_update_after_pkts, qk_conn_pto_ns(c), now))
        qk_conn_key_update_now(c, false, now);
}

/* ---- an unreachable peer ---- */

/* A client whose handshake is in progress learns that its datagrams cannot
 * be delivered to the server (RFC 8085 §5.2: ICMP port unreachable): it
 * closes silently at once, nobody is there to receive a CONNECTION_CLOSE.
 * Returns true when it closed. */
bool qk_conn_on_unreachable(qk_conn *c, const char *reason, qk_time now)
{
    if (c->is_server || c->handshake_complete || c->state >= QK_CONN_CLOSING) return false;
    c->close.err = QK_ERR_CONNECTION_REFUSED;
    c->close.code = 0;
    c->close.remote = false;
    snprintf(c->close.reason, sizeof c->close.reason, "%s", reason ? reason : "unreachable");
    qk_conn_enter_closed(c, now);
    return true;
}
