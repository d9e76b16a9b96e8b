/* SPDX-License-Identifier: MIT */
/* Network paths (RFC 9000 §8.2, §9): one path's addresses, its validation
 * with PATH_CHALLENGE / PATH_RESPONSE and timers, the PATH_RESPONSE it owes,
 * and the anti-amplification budget of an unvalidated peer address. The
 * connection keeps the current path and at most one other (a path being
 * probed for migration, or the previous path after a peer address change). */
#ifndef QK_TRANSPORT_PATH_H
#define QK_TRANSPORT_PATH_H

#include <quack/common.h>
#include <stdbool.h>

#define QK_PATH_MIN_DGRAM_BYTES 1200 /* RFC 9000 §8.2.1: probes expand to 1200 */

typedef struct qk_path {
    qk_addr local, peer;
    bool validated;
    bool validating;     /* a PATH_CHALLENGE is outstanding */
    bool challenge_due;  /* send (or resend) the PATH_CHALLENGE */
    unsigned challenges; /* PATH_CHALLENGEs sent in this validation (backoff) */
    uint8_t challenge[8];
    qk_time retry_at;  /* resend the challenge at this time */
    qk_time deadline;  /* abandon validation at this time */
    bool response_due; /* a PATH_RESPONSE to send on this path */
    uint8_t response[8];
    uint64_t rx_bytes, tx_bytes; /* while unvalidated: the 3x budget (RFC 9000 §9.3) */
    size_t dcid_idx;             /* remote CID slot used on this path */
} qk_path;

/** Initialise a path between local and peer. Never fails. */
void qk_path_init(qk_path *p, const qk_addr *local, const qk_addr *peer, bool validated);

/**
 * Start validating (RFC 9000 §8.2.1) with 8 unpredictable bytes. The attempt
 * is abandoned after 3 x max(pto_ns, the PTO of a new path with kInitialRtt)
 * (§8.2.4). Never fails.
 */
void qk_path_start_validation(qk_path *p, const uint8_t data[8], qk_time pto_ns, qk_time now);

/** A PATH_CHALLENGE went out on p: the next one only after a PTO, doubled
 * for each one already sent (as Initial retransmissions back off). */
void qk_path_on_challenge_sent(qk_path *p, qk_time pto_ns, qk_time now);

/** A PATH_RESPONSE arrived: true when it answers p's challenge (p is now validated). */
bool qk_path_on_response(qk_path *p, const uint8_t data[8]);

/** Earliest timer of p (QK_TIME_INFINITE when none). */
qk_time qk_path_next_timeout(const qk_path *p);

/** Timers: returns true when validation failed (abandoned) at now. */
bool qk_path_on_timeout(qk_path *p, qk_time now);

/** Bytes we may still send on p: unlimited once validated, else 3x received minus sent. */
uint64_t qk_path_allowance(const qk_path *p);

#endif
