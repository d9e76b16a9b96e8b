/* SPDX-License-Identifier: MIT */
/* The connection: qk_conn, built from named parts each declared in the
 * header of the file that owns it (cid.h, retry.h, conn_path.h, prefaddr.h,
 * session.h, timers.h, qlog.h, conn_recv.h), and the functions of conn.c.
 * Every file of src/transport/conn/ includes this one. Not a public header. */
#ifndef QK_TRANSPORT_CONN_H
#define QK_TRANSPORT_CONN_H

#include <quack/quack.h>

#include <string.h>

#include "crypto/packet.h"
#include "crypto/tls.h"
#include "transport/recovery/ack.h"
#include "transport/recovery/ackfreq.h"
#include "transport/recovery/cc/cc.h"
#include "transport/streams/flow.h"
#include "transport/conn/keyupdate.h"
#include "transport/recovery/pacer.h"
#include "transport/path/path.h"
#include "transport/path/pmtud.h"
#include "transport/recovery/recovery.h"
#include "transport/recovery/rtt.h"
#include "transport/path/feedback.h"
#include "transport/streams/sched.h"
#include "transport/streams/sendbuf.h"
#include "transport/streams/recvbuf.h"
#include "transport/streams/streams.h"
#include "wire/frame.h"
#include "wire/packet.h"
#include "wire/tparams.h"
#include "transport/conn/cid.h"
#include "transport/conn/conn_flow.h"
#include "transport/conn/conn_path.h"
#include "transport/conn/conn_recv.h"
#include "transport/conn/prefaddr.h"
#include "transport/conn/qlog.h"
#include "transport/conn/retry.h"
#include "transport/conn/session.h"
#include "transport/conn/timers.h"
#include "transport/endpoint/slot.h"

/* The public neutral urgency is the streams' and the scheduler's default. */
_Static_assert(QK_STREAM_DEFAULT_URGENCY == QK_URGENCY_DEFAULT &&
                   QK_SCHED_DEFAULT_URGENCY == QK_URGENCY_DEFAULT &&
                   QK_SCHED_URGENCIES == QK_URGENCY_MAX + 1,
               "RFC 9218 §4.1 urgencies: public and internal values differ");

#define QK_CONN_CRYPTO_BUF_BYTES  (64 * 1024) /* RFC 9000 §7.5: at least 4096 */
#define QK_CONN_MAX_ACK_RANGES_IN 256         /* ranges of a received ACK we process */

typedef enum qk_conn_state {
    QK_CONN_HANDSHAKE = 0,
    QK_CONN_ESTABLISHED,
    QK_CONN_CLOSING,  /* we sent CONNECTION_CLOSE (RFC 9000 §10.2.1) */
    QK_CONN_DRAINING, /* the peer sent CONNECTION_CLOSE (RFC 9000 §10.2.2) */
    QK_CONN_CLOSED,   /* gone; freed after the CLOSED event */
} qk_conn_state;

/* Extra inputs of a new connection (qk_conn_new_ex). */
typedef struct qk_conn_opts {
    uint32_t version;         /* 0 = cfg->version or v1 */
    const qk_cid *orig_dcid;  /* server: original DCID from a Retry token */
    const qk_cid *retry_scid; /* server: the SCID of our Retry (= this Initial's DCID) */
    bool validated;           /* server: a token validated the client's address */
    const uint8_t *token;     /* client: token for our Initials (NEW_TOKEN) */
    size_t token_len;
    const uint8_t *session; /* client: qk_conn_session_get() data to resume */
    size_t session_len;
} qk_conn_opts;

/* Connection-level "what to send" flags: the frames are rebuilt at send time
 * with current values, never replayed. */
enum {
    QK_PEND_MAX_DATA = 1u << 0,
    QK_PEND_HANDSHAKE_DONE = 1u << 1,
    QK_PEND_PING = 1u << 3,
    QK_PEND_NEW_TOKEN = 1u << 5,
};

/* One packet number space with its keys and CRYPTO stream. */
typedef struct qk_space {
    uint64_t next_pn;
    qk_ack_tracker ack;
    qk_sendbuf crypto_send;
    qk_recvbuf crypto_recv;
    qk_pkt_keys rx, tx;
    bool has_rx, has_tx;
    bool discarded;
    unsigned probes; /* ack-eliciting probe packets owed (PTO) */
} qk_space;

/* Outgoing DATAGRAM frames waiting for room (bounded ring). */
typedef struct qk_dgram_out {
    uint8_t *data;
    size_t len;
    uint8_t urgency; /* RFC 9218 §4.1, the queue is kept in urgency order */
    uint64_t id;     /* qk_datagram_send_ex's id (ACKED/LOST events); 0 = untracked */
} qk_dgram_out;

/* A stream whose acknowledged prefix grew during the ACK being processed:
 * one QK_EV_STREAM_ACKED per stream and ACK frame (qk_conn_note_acked). */
typedef struct qk_acked_note {
    uint64_t stream_id, offset;
    void *user; /* the stream's pointer (the stream may be forgotten by the flush) */
    bool fin;
} qk_acked_note;

typedef struct qk_endpoint_core qk_endpoint_core;

/* How the connection ends (conn.c): qk_conn.close. */
typedef struct qk_conn_closing {
    uint64_t code, frame_type;
    bool app, remote;
    int err;
    char reason[256];
    bool send; /* a CONNECTION_CLOSE packet is owed */
} qk_conn_closing;

/* What a connection needs from its owner (normally the endpoint, a stub in
 * unit tests), handed over at creation: events out, connection-ID
 * registration, randomness, the flow-control memory budget and token keys.
 * Every function pointer may be NULL (no-op; random NULL fills with zeros,
 * which only a test may want). */
typedef struct qk_conn_env {
    void *ctx;
    void (*push_event)(void *ctx, const qk_event *ev);
    /* Register / unregister a local CID for demultiplexing; 0 or QK_ERR_*. */
    int (*add_cid)(void *ctx, const qk_cid *cid, qk_conn *c);
    void (*remove_cid)(void *ctx, const qk_cid *cid);
    void (*random)(void *ctx, uint8_t *buf, size_t len);
    /* RFC 9000 §10.3.2: reset token of one of our CIDs. */
    void (*reset_token)(void *ctx, const qk_cid *cid, uint8_t token[QK_RESET_TOKEN_LEN]);
    /* Server: seal a NEW_TOKEN token for peer; its length or a QK_ERR_*. */
    int (*mint_token)(void *ctx, const qk_addr *peer, qk_time now, uint8_t *out, size_t cap);
    /* Client: remember a NEW_TOKEN token for the server at peer. */
    void (*store_token)(void *ctx, const qk_addr *peer, const uint8_t *tok, size_t len,
                        qk_time now);
    qk_flow_budget *budget;      /* shared flow-control budget, NULL = none */
    qk_flow_budget *send_budget; /* shared send-buffer budget, NULL = none */
    /* The application touched c (write, read, close, ...): it may have
     * something to send; the endpoint puts it on its ready list. */
    void (*wake)(void *ctx, qk_conn *c);
    /* RFC 9000 §10.3.1: the peer gave c this stateless-reset token / c no
     * longer holds it. The endpoint indexes them by hash (candidates only:
     * qk_cid_is_stateless_reset decides). */
    void (*add_reset_token)(void *ctx, const uint8_t token[QK_RESET_TOKEN_LEN], qk_conn *c);
    void (*remove_reset_token)(void *ctx, const uint8_t token[QK_RESET_TOKEN_LEN], qk_conn *c);
    /* Server: certificate, key and priority loaded once for every
     * connection (crypto/tls.h); NULL = each connection loads its own. */
    const qk_tls_creds *tls_creds;
    bool ecn_ack_bug; /* test only: qk_endpoint_set_ecn_ack_bug */
} qk_conn_env;

struct qk_conn {
    qk_conn_env env; /* the owner's services (a copy) */
    const qk_config *cfg;
    bool is_server;
    qk_conn_state state;
    uint32_t version;
    qk_addr local, peer;     /* the current path's addresses (= paths.cur.local, .peer) */
    qk_conn_paths paths;     /* current and alternative path (conn_path.c) */
    qk_conn_prefaddr pref;   /* client: the server's preferred address (prefaddr.c) */
    qk_conn_cids cids;       /* connection IDs (cid.c) */
    qk_conn_held held;       /* server: 1-RTT packets that came before the keys (conn_recv.c) */
    qk_conn_restart restart; /* client: Retry, VN, the token it echoes (retry.c) */

    /* TLS and packet protection. */
    qk_tls *tls;
    qk_space sp[QK_PN_SPACE_COUNT];
    bool key_phase;         /* current 1-RTT key phase, both directions (RFC 9001 §6) */
    qk_conn_zrtt zrtt;      /* resumption and 0-RTT (session.c) */
    uint64_t first_1rtt_pn; /* our first 1-RTT packet (earlier app-space pns were 0-RTT) */
    qk_keyupdate ku;        /* next/previous 1-RTT keys, update rules (keyupdate.c) */

    /* Recovery and congestion control. */
    qk_rtt rtt;
    qk_cc cc;
    qk_recovery rec;
    qk_pacer pacer;
    uint8_t tx_ecn;         /* codepoint of the last datagram qk_conn_send built */
    qk_time pacing_wait;    /* next time the pacer allows a packet (timer) */
    bool cwnd_limited;      /* the last packet sent was cwnd-limited (RFC 9002 §7.8) */
    uint64_t max_udp_bytes; /* datagram size we build */
    qk_pmtud pmtud;         /* DPLPMTUD (pmtud.c) */
    bool pmtud_started;

    /* Flow control and streams. */
    qk_flow_rx flow_rx;
    qk_flow_tx flow_tx;
    /* Send-side memory over all streams (conn_flow.c): written and not yet
     * acknowledged, written and never sent; a write was cut short by a
     * connection-level limit (writers are woken when room returns). */
    uint64_t send_held_bytes, send_unsent_bytes;
    bool send_capped;
    qk_time flow_tick_ns; /* next window shrink check (conn_flow.c) */
    qk_streams streams;
    qk_sched sched;

    /* Transport parameters. */
    qk_tparams local_tp, peer_tp;
    bool have_peer_tp;
    uint64_t peer_ack_delay_exponent;

    /* Handshake and address validation. */
    bool handshake_complete, handshake_confirmed;
    /* Recorded by the recovery sink, applied after the ACK (qk_conn_apply_deferred). */
    bool defer_confirm, defer_max_ack_delay;
    bool address_validated;        /* server: peer address validated (RFC 9000 §8.1) */
    bool sent_handshake;           /* client: sent a Handshake packet (discard Initial) */
    uint64_t unvalidated_rx_bytes; /* bytes received before validation */
    uint64_t unvalidated_tx_bytes; /* bytes sent before validation */
    bool connected_event, confirmed_event, new_conn_event; /* raised once each */

    qk_conn_timers timers; /* deadlines (timers.h) */

    qk_conn_closing close; /* how the connection ends (conn.c) */

    /* ACK-frequency extension (ack-frequency-12). */
    qk_ackfreq af;        /* sender side: what we ask the peer */
    bool ackfreq_seen;    /* receiver side: the peer sent ACK_FREQUENCY */
    uint64_t ackfreq_seq; /* receiver side: largest ACK_FREQUENCY sequence number processed */

    /* Pending control frames (QK_PEND_*). */
    uint32_t pend;

    /* DATAGRAM (RFC 9221). */
    qk_dgram_out *dgq;
    size_t dgq_head, dgq_count, dgq_cap;
    uint64_t dgram_last_id; /* the last id qk_datagram_send_ex gave */

    /* STREAM_ACKED events owed after the current ACK (qk_conn_note_acked). */
    qk_acked_note *acked;
    size_t acked_n, acked_cap;

    /* CC bypass for urgent traffic (qk_config.bypass_urgency_limit). */
    qk_bypass_bucket bypass;
    uint8_t bypass_limit; /* urgency strictly below may bypass; 0 = off */
    bool urgent_sent;     /* urgent (below bypass_limit) data went out, last at urgent_tx_ns */
    qk_time urgent_tx_ns;

    /* Lost-feedback detection (path/feedback.c). While degraded, packets are
     * sent as not cwnd-limited: their ACKs do not grow the window. */
    qk_feedback fb;
    /* A simulator's oracle (qk_conn_set_feedback_oracle): when set, it says
     * whether non-urgent data waits, in place of feedback_late's rule. */
    bool (*fb_oracle)(void *ctx, qk_time now);
    void *fb_oracle_ctx;

    qk_conn_stats stats;
    void *user;
    qk_conn_qlog qlog; /* (qlog.c) */
    qk_ep_slot ep;     /* the endpoint's bookkeeping, never read here (endpoint/slot.h) */
};

/* ---- conn.c: lifecycle, TLS glue, the recovery sink, closing ---- */
/* The credentials part of cfg's TLS configuration into *tc: certificate and
 * key (files or PEM) and the priority string cfg->ciphers asks for, written
 * into prio (cap bytes; tc->priority NULL = the TLS layer's default). Shared
 * by every connection's handshake (conn.c) and the endpoint's credentials
 * loaded once (endpoint.c). 0, or QK_ERR_CONFIG for an unknown or refused
 * cipher. */
int qk_conn_tls_credentials(const qk_config *cfg, qk_tls_config *tc, char *prio, size_t cap);
qk_conn *qk_conn_new(const qk_conn_env *env, const qk_config *cfg, bool is_server,
                     const qk_addr *local, const qk_addr *peer, const qk_cid *dcid,
                     const qk_cid *scid, const char *server_name, qk_time now, int *err);
qk_conn *qk_conn_new_ex(const qk_conn_env *env, const qk_config *cfg, bool is_server,
                        const qk_addr *local, const qk_addr *peer, const qk_cid *dcid,
                        const qk_cid *scid, const char *server_name, const qk_conn_opts *opts,
                        qk_time now, int *err);
void qk_conn_del(qk_conn *c);
/* (Re)derive the Initial keys from the client's DCID (RFC 9001 §5.2). */
int qk_conn_install_initial_keys(qk_conn *c, const qk_cid *dcid);
/* Close with a transport error (err is a QK_ERR_*), optionally naming the frame type. */
void qk_conn_error(qk_conn *c, int err, uint64_t frame_type, const char *reason, qk_time now);
/* Drive TLS after CRYPTO data arrived; installs keys, queues handshake bytes. */
int qk_conn_drive_tls(qk_conn *c, qk_time now);
void qk_conn_discard_space(qk_conn *c, qk_pn_space space, qk_time now);
void qk_conn_enter_closed(qk_conn *c, qk_time now);
/* Client before handshake completion: datagrams to the peer cannot be
 * delivered (ICMP); closes silently with reason. True when it closed. */
bool qk_conn_on_unreachable(qk_conn *c, const char *reason, qk_time now);
void qk_conn_schedule_stream(qk_conn *c, qk_stream *s);
/* A short write left the application waiting: STREAM_WRITABLE once there is room. */
void qk_conn_notify_writable(qk_conn *c, qk_stream *s);
/* RFC 9000 §3.3: a stream whose both halves are terminal is forgotten. */
void qk_conn_forget_if_closed(qk_conn *c, qk_stream *s);
/* Apply what the recovery sink deferred during an ACK (handshake confirmation,
 * a new PTO max_ack_delay, STREAM_ACKED events); called after every
 * qk_recovery_on_ack_received. */
void qk_conn_apply_deferred(qk_conn *c, qk_time now);
/* The acknowledged prefix of s (with qk_stream_notify_acked on) grew:
 * QK_EV_STREAM_ACKED is owed, raised by qk_conn_apply_deferred. */
void qk_conn_note_acked(qk_conn *c, qk_stream *s);
/* The handshake is confirmed (RFC 9001 §4.1.2): QK_EV_HANDSHAKE_CONFIRMED,
 * once, after QK_EV_CONNECTED. */
void qk_conn_confirmed_event(qk_conn *c);
/* Key update (RFC 9001 §6): initiate one now; force skips the "previous update
 * acknowledged" rule (tests of a misbehaving peer). Returns 0 or QK_ERR_STATE. */
int qk_conn_key_update_now(qk_conn *c, bool force, qk_time now);
/* DPLPMTUD decided a new datagram size. */
void qk_conn_set_mtu(qk_conn *c, uint64_t bytes);
/* Before sending: update keys when due (config, AEAD limits, RFC 9001 §6.6). */
void qk_conn_key_update_check(qk_conn *c, qk_time now);

/* ---- conn_api.c (beside the public API) ---- */
/* What the simulator and the benches see of c's loss recovery and
 * congestion controller (sim/flow_quic.c qk_simq_cc_probe_get). */
void qk_conn_cc_probe(const qk_conn *c, qk_cc_probe *cc, qk_recovery_stats *rec,
                      uint64_t *bytes_in_flight);

/* ---- session.c (inline: they read qk_conn) ---- */
/* Client: may 0-RTT packets be built now? */
static inline bool qk_session_can_send_0rtt(const qk_conn *c)
{
    return !c->is_server && c->zrtt.has_early && c->zrtt.on_remembered && !c->handshake_complete &&
           !c->sp[QK_PN_SPACE_APP].has_tx;
}

/* May application data go out in 1-RTT packets? After the handshake, and
 * before it on a server that accepted 0-RTT: its answers to 0-RTT requests
 * leave as 0.5-RTT data, right after its Finished (RFC 9001 §4.1.1, §5.7). */
static inline bool qk_session_app_data_ok(const qk_conn *c)
{
    return c->handshake_complete || (c->is_server && c->zrtt.has_early && c->have_peer_tp);
}

/* ---- conn_send.c ---- */
/* Build one datagram into buf (cap bytes). Returns its length, 0 when nothing is due. */
size_t qk_conn_send(qk_conn *c, uint8_t *buf, size_t cap, qk_time now);

/**
 * ECN codepoint of the datagram qk_conn_send just built (RFC 9000 §13.4.2):
 * ECT(0) when qk_config.ecn is on and validation has not failed (at most
 * QK_ECN_TESTING_PKTS marked packets before the peer's counts validate),
 * else QK_ECN_NOT_ECT. Never fails.
 */
static inline uint8_t qk_conn_tx_ecn(const qk_conn *c)
{
    return c->tx_ecn;
}

/* The stream limits a peer's transport parameters grant (RFC 9000 §18.2):
 * the current ones, or those remembered for 0-RTT (§7.4.1). */
static inline qk_streams_peer_params qk_conn_stream_limits(const qk_tparams *tp)
{
    return (qk_streams_peer_params){
        .max_streams_bidi = tp->initial_max_streams_bidi,
        .max_streams_uni = tp->initial_max_streams_uni,
        .max_stream_data_bidi_local = tp->initial_max_stream_data_bidi_local,
        .max_stream_data_bidi_remote = tp->initial_max_stream_data_bidi_remote,
        .max_stream_data_uni = tp->initial_max_stream_data_uni,
    };
}

/* ---- the owner's services (qk_conn_env), NULL-safe ---- */
/* A scalable controller (DCTCP, Prague) answers each ECN mark an AQM sets
 * per packet (RFC 8257, RFC 9331): its sender keeps bursts and packet sizes
 * to what the marking threshold expects (pacer lateness, ACK-frequency burst
 * mode and window fill are off for it: conn.c, conn_send.c). */
static inline bool qk_conn_cc_scalable(const qk_config *cfg)
{
    return cfg->cc == QK_CONFIG_CC_PRAGUE || cfg->cc == QK_CONFIG_CC_DCTCP;
}

/* The events that name a stream (qk_event.stream_id, stream_user). */
static inline bool qk_event_is_stream(qk_event_type t)
{
    return (t >= QK_EV_STREAM_OPENED && t <= QK_EV_STREAM_STOP) || t == QK_EV_STREAM_ACKED;
}

/* Queue ev for the application; stream events get the stream's user
 * pointer and, for OPENED and READABLE, its 0-RTT flag (conn.c). */
void qk_conn_push_event(qk_conn *c, const qk_event *ev);
static inline int qk_conn_env_add_cid(qk_conn *c, const qk_cid *cid)
{
    return c->env.add_cid ? c->env.add_cid(c->env.ctx, cid, c) : 0;
}
static inline void qk_conn_env_remove_cid(qk_conn *c, const qk_cid *cid)
{
    if (c->env.remove_cid) c->env.remove_cid(c->env.ctx, cid);
}
static inline void qk_conn_env_random(qk_conn *c, uint8_t *buf, size_t len)
{
    if (c->env.random)
        c->env.random(c->env.ctx, buf, len);
    else
        memset(buf, 0, len);
}
static inline void qk_conn_env_reset_token(qk_conn *c, const qk_cid *cid,
                                           uint8_t token[QK_RESET_TOKEN_LEN])
{
    if (c->env.reset_token)
        c->env.reset_token(c->env.ctx, cid, token);
    else
        memset(token, 0, QK_RESET_TOKEN_LEN);
}
static inline int qk_conn_env_mint_token(qk_conn *c, const qk_addr *peer, qk_time now, uint8_t *out,
                                         size_t cap)
{
    return c->env.mint_token ? c->env.mint_token(c->env.ctx, peer, now, out, cap) : QK_ERR_STATE;
}
static inline void qk_conn_env_store_token(qk_conn *c, const qk_addr *peer, const uint8_t *tok,
                                           size_t len, qk_time now)
{
    if (c->env.store_token) c->env.store_token(c->env.ctx, peer, tok, len, now);
}

static inline void qk_conn_env_wake(qk_conn *c)
{
    if (c->env.wake) c->env.wake(c->env.ctx, c);
}
static inline void qk_conn_env_add_reset_token(qk_conn *c, const uint8_t *token)
{
    if (c->env.add_reset_token) c->env.add_reset_token(c->env.ctx, token, c);
}
static inline void qk_conn_env_remove_reset_token(qk_conn *c, const uint8_t *token)
{
    if (c->env.remove_reset_token) c->env.remove_reset_token(c->env.ctx, token, c);
}

static inline qk_pn_space qk_space_of_pkt(qk_pkt_type t)
{
    return t == QK_PKT_INITIAL     ? QK_PN_SPACE_INITIAL
           : t == QK_PKT_HANDSHAKE ? QK_PN_SPACE_HANDSHAKE
                                   : QK_PN_SPACE_APP;
}

static inline qk_crypto_level qk_level_of_space(qk_pn_space s)
{
    return s == QK_PN_SPACE_INITIAL     ? QK_LEVEL_INITIAL
           : s == QK_PN_SPACE_HANDSHAKE ? QK_LEVEL_HANDSHAKE
                                        : QK_LEVEL_APPLICATION;
}

static inline qk_remote_cid *qk_conn_dcid(qk_conn *c)
{
    return &c->cids.rcid[c->cids.rcid_cur];
}

#endif
