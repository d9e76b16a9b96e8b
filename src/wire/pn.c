/* SPDX-License-Identifier: MIT */
/* Packet number truncation and reconstruction (RFC 9000 §17.1, A.2, A.3). */
#include "wire/pn.h"
#include <quack/common.h>

size_t qk_pn_encode_len(uint64_t full_pn, uint64_t largest_acked)
{
    /* RFC 9000 A.2: num_unacked = full_pn - largest_acked (full_pn + 1 if none);
     * min_bits = log2(num_unacked) + 1; bytes = ceil(min_bits / 8). */
    uint64_t num_unacked;
    if (largest_acked == QK_PN_NONE || largest_acked > full_pn)
        num_unacked = full_pn + 1;
    else
        num_unacked = full_pn - largest_acked;
    /* RFC 9000 §17.1: 2 * num_unacked must fit in the truncated range. */
    for (size_t n = 1; n < 4; n++)
        if (num_unacked < (1ull << (8 * n - 1))) return n;
    return 4;
}

int qk_pn_encode(uint8_t *buf, size_t cap, uint64_t full_pn, size_t pn_len)
{
    if (pn_len < 1 || pn_len > 4) return QK_ERR_INVALID_ARG;
    if (cap < pn_len) return QK_ERR_BUFFER_TOO_SMALL;
    for (size_t i = pn_len; i-- > 0;) {
        buf[i] = (uint8_t)full_pn;
        full_pn >>= 8;
    }
    return (int)pn_len;
}

uint64_t qk_pn_decode(uint64_t largest_pn, uint64_t truncated_pn, size_t pn_len)
{
    if (pn_len < 1) pn_len = 1;
    if (pn_len > 4) pn_len = 4;
    /* RFC 9000 A.3 */
    uint64_t expected = largest_pn == QK_PN_NONE ? 0 : largest_pn + 1;
    uint64_t win = 1ull << (8 * pn_len);
    uint64_t hwin = win / 2;
    uint64_t mask = win - 1;
    truncated_pn &= mask;
    uint64_t candidate = (expected & ~mask) | truncated_pn;
    if (candidate + hwin <= expected && candidate < (1ull << 62) - win) return candidate + win;
    if (candidate > expected + hwin && candidate >= win) return candidate - win;
    return candidate;
}
