/* SPDX-License-Identifier: MIT */
/* Packet number truncation and reconstruction (RFC 9000 §17.1, A.2, A.3). */
#ifndef QK_WIRE_PN_H
#define QK_WIRE_PN_H

#include <stddef.h>
#include <stdint.h>

/** Largest packet number (RFC 9000 §12.3). */
#define QK_PN_MAX ((1ull << 62) - 1)
/** "No packet number yet" (no packet acknowledged / received). */
#define QK_PN_NONE UINT64_MAX

/**
 * Number of bytes (1..4) to encode full_pn with, given the largest packet
 * number the peer acknowledged in this space (QK_PN_NONE if none):
 * twice the unacknowledged range must be representable (RFC 9000 §17.1, A.2).
 * Returns 4 when even 4 bytes do not suffice (the caller must not let that happen).
 */
size_t qk_pn_encode_len(uint64_t full_pn, uint64_t largest_acked);

/**
 * Write the low pn_len (1..4) bytes of full_pn big-endian.
 * Returns pn_len, QK_ERR_INVALID_ARG for a bad pn_len,
 * QK_ERR_BUFFER_TOO_SMALL when cap < pn_len.
 */
int qk_pn_encode(uint8_t *buf, size_t cap, uint64_t full_pn, size_t pn_len);

/**
 * Reconstruct a full packet number from its truncated form (RFC 9000 A.3).
 * largest_pn: largest packet number successfully processed in this space
 * (QK_PN_NONE if none, then the expected number is 0). pn_len: 1..4 bytes.
 * Never fails; the result is at most QK_PN_MAX.
 */
uint64_t qk_pn_decode(uint64_t largest_pn, uint64_t truncated_pn, size_t pn_len);

#endif
