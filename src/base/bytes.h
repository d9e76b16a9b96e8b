/* SPDX-License-Identifier: MIT */
/* Big-endian integers in byte buffers (network order), for the few places
 * that write fixed-size fields without a qk_wr cursor. */
#ifndef QK_BASE_BYTES_H
#define QK_BASE_BYTES_H

#include <stdint.h>

static inline void qk_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline uint32_t qk_get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif
