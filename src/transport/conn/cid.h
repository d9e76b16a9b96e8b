/* SPDX-License-Identifier: MIT */
/* A connection's connection IDs (RFC 9000 §5.1): ours, the peer's, those
 * being retired and those still routed after retirement (cid.c). Not a
 * public header. */
#ifndef QK_TRANSPORT_CONN_CID_H
#define QK_TRANSPORT_CONN_CID_H

#include <quack/quack.h>

#include "wire/frame.h"
#include "wire/packet.h"

#define QK_CONN_MAX_LOCAL_CIDS  8
#define QK_CONN_MAX_REMOTE_CIDS 8
#define QK_CONN_MAX_RETIRING    16 /* RFC 9000 §5.1.2: >= 2x active_connection_id_limit */
#define QK_CONN_MAX_LINGER_CIDS 8  /* our retired CIDs still routed here */

typedef struct qk_cid {
    uint8_t len;
    uint8_t b[QK_MAX_CID_LEN];
} qk_cid;

typedef struct qk_local_cid {
    qk_cid cid;
    uint64_t seq;
    uint8_t reset_token[QK_RESET_TOKEN_LEN];
    bool active;
    bool send_pending; /* NEW_CONNECTION_ID to (re)send */
} qk_local_cid;

/* One of our CIDs the peer retired, still routed to this connection until
 * expire_at so that packets reordered behind the RETIRE_CONNECTION_ID are
 * processed, never answered with a stateless reset. */
typedef struct qk_linger_cid {
    qk_cid cid;
    qk_time expire_at;
} qk_linger_cid;

typedef struct qk_remote_cid {
    qk_cid cid;
    uint64_t seq;
    uint8_t reset_token[QK_RESET_TOKEN_LEN];
    bool has_token;
    bool active;
} qk_remote_cid;

/* A peer CID we retired: RETIRE_CONNECTION_ID owed (pending) or unacked (sent). */
typedef struct qk_retiring_cid {
    uint64_t seq;
    bool sent;
} qk_retiring_cid;

/* The connection's part: qk_conn.cids. */
typedef struct qk_conn_cids {
    qk_cid odcid;        /* client's first DCID: Initial keys, original_dcid tparam */
    qk_cid peer_scid;    /* the scid the peer put in its first long header */
    qk_cid initial_dcid; /* DCID of the client's (current) Initials: Initial keys, server demux */
    qk_local_cid lcid[QK_CONN_MAX_LOCAL_CIDS];
    uint64_t lcid_next_seq;
    qk_remote_cid rcid[QK_CONN_MAX_REMOTE_CIDS];
    size_t rcid_cur;       /* index of the DCID we use */
    bool have_server_scid; /* client: switched DCID to the server's scid */
    qk_retiring_cid retiring[QK_CONN_MAX_RETIRING];
    size_t n_retiring;
    qk_linger_cid linger[QK_CONN_MAX_LINGER_CIDS];
    size_t n_linger;
} qk_conn_cids;

/* Issue NEW_CONNECTION_IDs up to the peer's active_connection_id_limit. */
int qk_cid_issue(qk_conn *c);
/* With cfg->cid_encode_server_id: write the QUIC-LB plaintext first octet
 * and the server ID into a freshly randomised CID of ours. */
void qk_cid_encode_server_id(const qk_config *cfg, qk_cid *cid);
/* NEW_CONNECTION_ID from the peer. Returns 0 or a QK_ERR_* transport error. */
int qk_cid_on_new(qk_conn *c, const qk_frame_new_cid *f);
/* RETIRE_CONNECTION_ID for one of ours; dcid is the packet's DCID. The
 * retired CID stays routed to c for 3 PTO (qk_cid_linger_expire). */
int qk_cid_on_retire(qk_conn *c, const uint8_t *dcid, size_t dcid_len, uint64_t seq, qk_time now);
/* Unroute the retired CIDs whose linger time is over (all with now =
 * QK_TIME_INFINITE, as qk_conn_del does). */
void qk_cid_linger_expire(qk_conn *c, qk_time now);
/* When the next retired CID is unrouted (QK_TIME_INFINITE: none lingers). */
qk_time qk_cid_linger_deadline(const qk_conn *c);
void qk_cid_on_retire_acked(qk_conn *c, uint64_t seq);
void qk_cid_on_retire_lost(qk_conn *c, uint64_t seq);
/* True when the datagram ends with the reset token of a peer CID (RFC 9000 §10.3.1). */
bool qk_cid_is_stateless_reset(const qk_conn *c, const uint8_t *dgram, size_t len);

#endif
