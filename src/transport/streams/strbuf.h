/* SPDX-License-Identifier: MIT */
/* Chunked byte storage addressed by stream offset, shared by the stream
 * receive buffer (reassembly) and send buffer (retransmission).
 *
 * A block ring holds fixed-size blocks (QK_STRBUF_BLOCK_BYTES) for the offset
 * window [base_block * BLOCK, ...). Blocks are allocated when first written and
 * freed when the window's base moves past them, so memory follows the bytes
 * actually held, never the whole history. Freed blocks go to a per-thread
 * pool (at most QK_STRBUF_POOL_BLOCKS, shared by every ring of the thread),
 * so a steady stream (ACKs free a run of blocks, writes refill it) does no
 * malloc/free at all; one spare per ring keeps the common case local. */
#ifndef QK_TRANSPORT_STRBUF_H
#define QK_TRANSPORT_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QK_STRBUF_BLOCK_BYTES 4096u
/** Freed blocks a thread keeps for reuse by any ring (8 MiB). */
#define QK_STRBUF_POOL_BLOCKS 2048u

/** Largest stream offset: 2^62 - 1 (RFC 9000 §19.8). */
#define QK_STREAM_MAX_OFFSET ((1ull << 62) - 1)

typedef struct qk_blockring {
    uint8_t **slot;      /**< ring of block pointers (NULL = not allocated) */
    size_t cap;          /**< slots in the ring, a power of two (0 = none yet) */
    size_t head;         /**< slot holding block number base_block */
    uint64_t base_block; /**< block number (offset / BLOCK) of the head slot */
    uint8_t *spare;      /**< one cached free block */
    size_t nalloc;       /**< blocks currently allocated in the ring */
} qk_blockring;

/** Initialise an empty ring whose window starts at offset 0. */
void qk_blockring_init(qk_blockring *r);

/** Free every block. The ring is empty and reusable (window kept). */
void qk_blockring_free(qk_blockring *r);

/**
 * Copy len bytes from src to offsets [off, off + len), allocating blocks.
 * Bytes below the window base are skipped. Returns 0 or QK_ERR_NOMEM (then
 * some of the bytes may have been written).
 */
int qk_blockring_write(qk_blockring *r, uint64_t off, const uint8_t *src, size_t len);

/**
 * Copy len bytes at [off, off + len) into dst. Blocks never written read as
 * zeros. off must be at or above the window base. Never fails.
 */
void qk_blockring_read(const qk_blockring *r, uint64_t off, uint8_t *dst, size_t len);

/**
 * Pointer to the byte at off and the number of bytes that follow it in the
 * same block (capped at max). Returns 0 (and *p = NULL) when the block is not
 * allocated or off is below the window base.
 */
size_t qk_blockring_peek(const qk_blockring *r, uint64_t off, size_t max, const uint8_t **p);

/** Move the window base to the block holding off, freeing blocks below it. */
void qk_blockring_advance(qk_blockring *r, uint64_t off);

/** Give every block back (spare included) when nothing in the ring is needed
 * any more, keeping its window: an idle stream holds no block (a later write
 * takes one from the pool again). */
void qk_blockring_release(qk_blockring *r);

/** Bytes of block memory held (allocated blocks, spare included). */
size_t qk_blockring_mem_bytes(const qk_blockring *r);

/** Blocks in this thread's pool of freed blocks (<= QK_STRBUF_POOL_BLOCKS). */
size_t qk_strbuf_pool_blocks(void);

/** Give this thread's pooled blocks back to malloc. Never fails. */
void qk_strbuf_pool_trim(void);

#endif
