/* SPDX-License-Identifier: MIT */
/* Path validation, RFC 9000 §8.2; amplification limit on new paths, §9.3. */
#include "transport/path/path.h"

#include <netinet/in.h>
#include <string.h>

#include "transport/recovery/rtt.h"

void qk_path_init(qk_path *p, const qk_addr *local, const qk_addr *peer, bool validated)
{
    memset(p, 0, sizeof *p);
    if (local) p->local = *local;
    if (peer) p->peer = *peer;
    p->validated = validated;
    p->retry_at = p->deadline = QK_TIME_INFINITE;
}

void qk_path_start_validation(qk_path *p, const uint8_t data[8], qk_time pto_ns, qk_time now)
{
    memcpy(p->challenge, data, 8);
    p->validating = true;
    p->challenge_due = true;
    p->challenges = 0;
    p->retry_at = QK_TIME_INFINITE;
    /* RFC 9000 §8.2.4: three times the larger of the current PTO and the PTO
     * of a new path (kInitialRtt, RFC 9002 §6.2.2). */
    qk_time fresh = 3 * QK_RTT_INITIAL_NS, pto = pto_ns > fresh ? pto_ns : fresh;
    p->deadline = now + 3 * pto;
}

void qk_path_on_challenge_sent(qk_path *p, qk_time pto_ns, qk_time now)
{
    p->challenge_due = false;
    /* RFC 9000 §8.2.1: not more often than an Initial would be: once per
     * PTO, backing off (RFC 9002 §6.2.1) so a dead path costs a few probes. */
    unsigned shift = p->challenges < 6 ? p->challenges : 6;
    p->challenges++;
    if (p->validating) p->retry_at = now + (pto_ns << shift);
}

bool qk_path_on_response(qk_path *p, const uint8_t data[8])
{
    /* RFC 9000 §8.2.3: the response must echo an outstanding challenge. */
    if (!p->validating || memcmp(p->challenge, data, 8)) return false;
    p->validating = false;
    p->challenge_due = false;
    p->validated = true;
    p->retry_at = p->deadline = QK_TIME_INFINITE;
    return true;
}

qk_time qk_path_next_timeout(const qk_path *p)
{
    if (!p->validating) return QK_TIME_INFINITE;
    return p->retry_at < p->deadline ? p->retry_at : p->deadline;
}

bool qk_path_on_timeout(qk_path *p, qk_time now)
{
    if (!p->validating) return false;
    if (now >= p->deadline) {
        p->validating = false;
        p->challenge_due = false;
        p->retry_at = p->deadline = QK_TIME_INFINITE;
        return true;
    }
    if (now >= p->retry_at) {
        p->challenge_due = true;
        p->retry_at = QK_TIME_INFINITE;
    }
    return false;
}

uint64_t qk_path_allowance(const qk_path *p)
{
    if (p->validated) return UINT64_MAX;
    uint64_t allow = 3 * p->rx_bytes; /* RFC 9000 §8.2.1, §9.3 */
    return allow > p->tx_bytes ? allow - p->tx_bytes : 0;
}
