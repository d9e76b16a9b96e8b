/* SPDX-License-Identifier: MIT */
/* 1-RTT key update (RFC 9001 §6): the next-generation receive keys held in
 * advance, the previous receive keys kept for reordered packets, the rules
 * that decide when we may initiate an update, and the AEAD usage limits
 * (§6.6). The connection owns the CURRENT keys (its 1-RTT space rx/tx and
 * key_phase); this module rotates them in place. No clock, no I/O. */
#ifndef QK_TRANSPORT_KEYUPDATE_H
#define QK_TRANSPORT_KEYUPDATE_H

#include <quack/common.h>
#include <stdbool.h>

#include "crypto/packet.h"

/** Which receive keys a packet needs. */
typedef enum qk_ku_keys {
    QK_KU_CURRENT = 0,
    QK_KU_PREVIOUS = 1,
    QK_KU_NEXT = 2,
} qk_ku_keys;

typedef struct qk_keyupdate {
    uint8_t rx_secret[QK_SECRET_MAX_BYTES]; /* secret of rx_next */
    uint8_t tx_secret[QK_SECRET_MAX_BYTES]; /* secret of the current send keys */
    size_t rx_secret_len, tx_secret_len;
    qk_pkt_keys rx_next, rx_prev;
    bool has_next, has_prev;
    qk_time prev_until;    /* discard rx_prev at this time (QK_TIME_INFINITE: not yet armed) */
    uint64_t rx_lowest_pn; /* lowest pn opened with the current keys, UINT64_MAX = none */
    uint64_t tx_first_pn;  /* first pn sent with the current keys */
    bool awaiting_ack;     /* no packet of the current phase acknowledged yet */
    bool ack_sent;         /* we acknowledged a packet of the current phase */
    qk_time confirmed_at;  /* when awaiting_ack last cleared */
    uint64_t tx_pkts;      /* packets sealed with the current send keys */
    uint64_t tx_since_own; /* packets sent since we last initiated (key_update_after_pkts) */
    uint64_t rx_failures;  /* 1-RTT packets that failed authentication, any keys */
    uint64_t updates, initiated, prev_key_pkts;
} qk_keyupdate;

/** Initialise (no keys yet). Never fails. */
void qk_ku_init(qk_keyupdate *ku);

/** Wipe secrets and free the held keys. Safe on a zeroed struct. */
void qk_ku_free(qk_keyupdate *ku);

/**
 * The TLS stack installed the 1-RTT secret for one direction; cur are the
 * keys the connection just derived from it. For the read side the next
 * generation is derived at once (RFC 9001 §6.3: no timing side channel).
 * Returns 0 or the error of qk_pkt_keys_next (QK_ERR_TLS, QK_ERR_NOMEM,
 * QK_ERR_STATE, QK_ERR_INVALID_ARG).
 */
int qk_ku_set_secret(qk_keyupdate *ku, bool is_write, const qk_pkt_keys *cur, const uint8_t *secret,
                     size_t len);

/**
 * Choose the receive keys for a short-header packet with key phase bit
 * pkt_phase and recovered packet number pn (RFC 9001 §6.5). Drops the
 * previous keys first when their time is up. Returns the keys and sets
 * *which, or NULL when the packet cannot be opened (drop it).
 */
qk_pkt_keys *qk_ku_rx_select(qk_keyupdate *ku, qk_pkt_keys *cur, bool cur_phase, bool pkt_phase,
                             uint64_t pn, qk_ku_keys *which, qk_time now);

/**
 * A short-header packet opened with keys `which` (it is not a duplicate).
 * NEXT means the peer initiated an update: we switch (send keys too,
 * RFC 9001 §6.2) unless the peer updated twice without waiting for our
 * acknowledgement. pto_ns sizes how long the previous keys stay (3 PTO).
 * Returns 0, QK_ERR_KEY_UPDATE, or an error of the key derivation.
 */
int qk_ku_on_opened(qk_keyupdate *ku, qk_ku_keys which, uint64_t pn, qk_pkt_keys *rx_cur,
                    qk_pkt_keys *tx_cur, bool *phase, uint64_t next_tx_pn, qk_time pto_ns,
                    qk_time now);

/**
 * Rotate: previous <- current receive keys, current <- next, derive a new
 * next; current send keys move to the next generation; *phase flips.
 * next_tx_pn is the first packet number the new send keys protect.
 * Returns 0, QK_ERR_STATE (no 1-RTT secrets yet) or a derivation error.
 */
int qk_ku_switch(qk_keyupdate *ku, qk_pkt_keys *rx_cur, qk_pkt_keys *tx_cur, bool *phase,
                 uint64_t next_tx_pn, qk_time now);

/** We sent an ACK frame in the 1-RTT space whose Largest Acknowledged is largest. */
void qk_ku_on_ack_sent(qk_keyupdate *ku, uint64_t largest);

/** The peer acknowledged 1-RTT packets up to largest_acked. */
void qk_ku_on_acked(qk_keyupdate *ku, uint64_t largest_acked, qk_time now);

/** RFC 9001 §6.1: a new update needs an acknowledgement of the current phase. */
static inline bool qk_ku_can_initiate(const qk_keyupdate *ku)
{
    return ku->rx_secret_len && ku->tx_secret_len && !ku->awaiting_ack;
}

/** RFC 9001 §6.6: confidentiality limit in packets (UINT64_MAX: none that matters). */
uint64_t qk_ku_confidentiality_limit(qk_crypto_suite s);
/** RFC 9001 §6.6: integrity limit in failed decryptions. */
uint64_t qk_ku_integrity_limit(qk_crypto_suite s);

/**
 * Should we initiate an update now? after_pkts (0 = never by count) and, in
 * any case, three quarters of the confidentiality limit; not before 3 PTO
 * after the previous update was acknowledged (RFC 9001 §6.5).
 */
bool qk_ku_want_update(const qk_keyupdate *ku, qk_crypto_suite s, uint64_t after_pkts,
                       qk_time pto_ns, qk_time now);

#endif
