/* SPDX-License-Identifier: MIT */
/* 1-RTT key update, RFC 9001 §6. */
#include "transport/conn/keyupdate.h"

#include <string.h>

void qk_ku_init(qk_keyupdate *ku)
{
    memset(ku, 0, sizeof *ku);
    ku->prev_until = QK_TIME_INFINITE;
    ku->rx_lowest_pn = UINT64_MAX;
    ku->ack_sent = true; /* no update happened: nothing owed */
}

void qk_ku_free(qk_keyupdate *ku)
{
    qk_crypto_wipe(ku->rx_secret, sizeof ku->rx_secret);
    qk_crypto_wipe(ku->tx_secret, sizeof ku->tx_secret);
    if (ku->has_next) qk_pkt_keys_free(&ku->rx_next);
    if (ku->has_prev) qk_pkt_keys_free(&ku->rx_prev);
    ku->has_next = ku->has_prev = false;
}

int qk_ku_set_secret(qk_keyupdate *ku, bool is_write, const qk_pkt_keys *cur, const uint8_t *secret,
                     size_t len)
{
    if (len > QK_SECRET_MAX_BYTES) return QK_ERR_INVALID_ARG;
    if (is_write) {
        memcpy(ku->tx_secret, secret, len);
        ku->tx_secret_len = len;
        return 0;
    }
    memcpy(ku->rx_secret, secret, len);
    ku->rx_secret_len = len;
    if (ku->has_next) qk_pkt_keys_free(&ku->rx_next);
    /* RFC 9001 §6.3: the next receive keys exist before they are needed. */
    int rc = qk_pkt_keys_next(&ku->rx_next, cur, ku->rx_secret, len);
    ku->has_next = rc == 0;
    return rc;
}

static void drop_prev(qk_keyupdate *ku)
{
    if (ku->has_prev) qk_pkt_keys_free(&ku->rx_prev);
    ku->has_prev = false;
    ku->prev_until = QK_TIME_INFINITE;
}

qk_pkt_keys *qk_ku_rx_select(qk_keyupdate *ku, qk_pkt_keys *cur, bool cur_phase, bool pkt_phase,
                             uint64_t pn, qk_ku_keys *which, qk_time now)
{
    /* RFC 9001 §6.5: previous keys live about 3 PTO after the new phase began. */
    if (ku->has_prev && now >= ku->prev_until) drop_prev(ku);
    if (pkt_phase == cur_phase) {
        *which = QK_KU_CURRENT;
        return cur;
    }
    /* RFC 9001 §6.5: lower than any pn of the current phase -> previous keys,
     * otherwise the next keys (the peer initiated an update). */
    if (pn < ku->rx_lowest_pn && ku->has_prev) {
        *which = QK_KU_PREVIOUS;
        return &ku->rx_prev;
    }
    if (pn < ku->rx_lowest_pn && ku->rx_lowest_pn == UINT64_MAX && ku->updates) {
        /* We initiated and the peer has not caught up: its old-phase packets
         * need the previous keys, which are gone. */
        return NULL;
    }
    if (!ku->has_next) return NULL;
    *which = QK_KU_NEXT;
    return &ku->rx_next;
}

int qk_ku_switch(qk_keyupdate *ku, qk_pkt_keys *rx_cur, qk_pkt_keys *tx_cur, bool *phase,
                 uint64_t next_tx_pn, qk_time now)
{
    (void)now;
    if (!ku->has_next || !ku->tx_secret_len) return QK_ERR_STATE;
    /* RFC 9001 §6.1: the next write secret is "quic ku" of the current one. */
    qk_pkt_keys tx_new;
    int rc = qk_pkt_keys_next(&tx_new, tx_cur, ku->tx_secret, ku->tx_secret_len);
    if (rc) return rc;
    qk_pkt_keys rx_new;
    rc = qk_pkt_keys_next(&rx_new, &ku->rx_next, ku->rx_secret, ku->rx_secret_len);
    if (rc) {
        qk_pkt_keys_free(&tx_new);
        return rc;
    }
    /* RFC 9001 §6.4: keys used for sending can go at once. */
    qk_pkt_keys_free(tx_cur);
    *tx_cur = tx_new;
    if (ku->has_prev) qk_pkt_keys_free(&ku->rx_prev);
    ku->rx_prev = *rx_cur;
    ku->has_prev = true;
    ku->prev_until = QK_TIME_INFINITE; /* armed by the first new-phase packet */
    *rx_cur = ku->rx_next;
    ku->rx_next = rx_new;
    *phase = !*phase;
    ku->rx_lowest_pn = UINT64_MAX;
    ku->tx_first_pn = next_tx_pn;
    ku->awaiting_ack = true;
    ku->ack_sent = false;
    ku->tx_pkts = 0;
    ku->updates++;
    return 0;
}

int qk_ku_on_opened(qk_keyupdate *ku, qk_ku_keys which, uint64_t pn, qk_pkt_keys *rx_cur,
                    qk_pkt_keys *tx_cur, bool *phase, uint64_t next_tx_pn, qk_time pto_ns,
                    qk_time now)
{
    switch (which) {
    case QK_KU_PREVIOUS: ku->prev_key_pkts++; return 0;
    case QK_KU_CURRENT:
        if (ku->rx_lowest_pn == UINT64_MAX && ku->has_prev) ku->prev_until = now + 3 * pto_ns;
        if (pn < ku->rx_lowest_pn) ku->rx_lowest_pn = pn;
        return 0;
    case QK_KU_NEXT: break;
    }
    /* RFC 9001 §6.2: a second update before we acknowledged a packet of the
     * first one means the peer did not wait for confirmation. */
    if (!ku->ack_sent) return QK_ERR_KEY_UPDATE;
    int rc = qk_ku_switch(ku, rx_cur, tx_cur, phase, next_tx_pn, now);
    if (rc) return rc;
    ku->rx_lowest_pn = pn;
    ku->prev_until = now + 3 * pto_ns;
    return 0;
}

void qk_ku_on_ack_sent(qk_keyupdate *ku, uint64_t largest)
{
    if (ku->rx_lowest_pn != UINT64_MAX && largest >= ku->rx_lowest_pn) ku->ack_sent = true;
}

void qk_ku_on_acked(qk_keyupdate *ku, uint64_t largest_acked, qk_time now)
{
    if (ku->awaiting_ack && largest_acked >= ku->tx_first_pn) {
        ku->awaiting_ack = false;
        ku->confirmed_at = now;
    }
}

uint64_t qk_ku_confidentiality_limit(qk_crypto_suite s)
{
    switch (s) {
    case QK_SUITE_AES_128_GCM:
    case QK_SUITE_AES_256_GCM: return 1ull << 23; /* RFC 9001 §6.6 */
    case QK_SUITE_CHACHA20_POLY1305: return 1ull << 62;
    case QK_SUITE_AES_128_CCM: return 2965820; /* RFC 9001 §6.6, Appendix B.2: 2^21.5 */
    default: return UINT64_MAX;
    }
}

uint64_t qk_ku_integrity_limit(qk_crypto_suite s)
{
    switch (s) {
    case QK_SUITE_AES_128_GCM:
    case QK_SUITE_AES_256_GCM: return 1ull << 52; /* RFC 9001 §6.6 */
    case QK_SUITE_CHACHA20_POLY1305: return 1ull << 36;
    case QK_SUITE_AES_128_CCM: return 2965820; /* RFC 9001 §6.6, Appendix B.2: 2^21.5 */
    default: return UINT64_MAX;
    }
}

bool qk_ku_want_update(const qk_keyupdate *ku, qk_crypto_suite s, uint64_t after_pkts,
                       qk_time pto_ns, qk_time now)
{
    if (!qk_ku_can_initiate(ku)) return false;
    uint64_t conf = qk_ku_confidentiality_limit(s);
    bool due = (after_pkts && ku->tx_since_own >= after_pkts) ||
               (conf != UINT64_MAX && ku->tx_pkts >= conf / 4 * 3);
    if (!due) return false;
    /* RFC 9001 §6.5: wait 3 PTO after the previous update was confirmed. */
    return !ku->updates || now >= ku->confirmed_at + 3 * pto_ns;
}
