/* SPDX-License-Identifier: MIT */
/* Chunked byte storage addressed by stream offset (see strbuf.h). */
#include "transport/streams/strbuf.h"

#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

#define BLK QK_STRBUF_BLOCK_BYTES

/* Freed blocks of this thread: a stack of pointers (the blocks themselves
 * are not touched, they are usually cold). Per thread so endpoints on
 * different threads never share it; bounded so an idle thread holds at most
 * QK_STRBUF_POOL_BLOCKS * BLK bytes. */
static _Thread_local uint8_t *pool[QK_STRBUF_POOL_BLOCKS];
static _Thread_local size_t pool_n;

static uint8_t *block_alloc(void)
{
    return pool_n ? pool[--pool_n] : malloc(BLK);
}

static void block_release(uint8_t *b)
{
    if (pool_n < QK_STRBUF_POOL_BLOCKS)
        pool[pool_n++] = b;
    else
        free(b);
}

size_t qk_strbuf_pool_blocks(void)
{
    return pool_n;
}

void qk_strbuf_pool_trim(void)
{
    while (pool_n) free(pool[--pool_n]);
}

void qk_blockring_init(qk_blockring *r)
{
    memset(r, 0, sizeof *r);
}

void qk_blockring_free(qk_blockring *r)
{
    qk_blockring_release(r);
    free(r->slot);
    uint64_t base = r->base_block;
    memset(r, 0, sizeof *r);
    r->base_block = base;
}

static uint8_t **slot_at(const qk_blockring *r, uint64_t block)
{
    return &r->slot[(r->head + (size_t)(block - r->base_block)) & (r->cap - 1)];
}

/* Make the ring cover blocks [base_block, base_block + nblocks). */
static int ring_reserve(qk_blockring *r, uint64_t nblocks)
{
    if (nblocks <= r->cap) return 0;
    if (nblocks > ((size_t)-1 >> 4) / sizeof(uint8_t *)) return QK_ERR_NOMEM;
    size_t cap = r->cap ? r->cap : 4;
    while (cap < nblocks) cap *= 2;
    uint8_t **slot = calloc(cap, sizeof *slot);
    if (!slot) return QK_ERR_NOMEM;
    for (size_t i = 0; i < r->cap; i++) slot[i] = r->slot[(r->head + i) & (r->cap - 1)];
    free(r->slot);
    r->slot = slot;
    r->cap = cap;
    r->head = 0;
    return 0;
}

static uint8_t *block_get(qk_blockring *r, uint64_t block)
{
    uint8_t **p = slot_at(r, block);
    if (*p) return *p;
    if (r->spare) {
        *p = r->spare;
        r->spare = NULL;
    } else {
        *p = block_alloc();
        if (!*p) return NULL;
    }
    r->nalloc++;
    return *p;
}

int qk_blockring_write(qk_blockring *r, uint64_t off, const uint8_t *src, size_t len)
{
    uint64_t base = r->base_block * BLK;
    if (off + len <= base) return 0;
    if (off < base) {
        src += base - off;
        len -= (size_t)(base - off);
        off = base;
    }
    if (len == 0) return 0;
    int rc = ring_reserve(r, (off + len - 1) / BLK - r->base_block + 1);
    if (rc) return rc;
    while (len) {
        uint64_t block = off / BLK;
        size_t in = (size_t)(off % BLK);
        size_t n = BLK - in < len ? BLK - in : len;
        uint8_t *b = block_get(r, block);
        if (!b) return QK_ERR_NOMEM;
        memcpy(b + in, src, n);
        src += n;
        off += n;
        len -= n;
    }
    return 0;
}

size_t qk_blockring_peek(const qk_blockring *r, uint64_t off, size_t max, const uint8_t **p)
{
    *p = NULL;
    uint64_t block = off / BLK;
    if (block < r->base_block || block - r->base_block >= r->cap) return 0;
    uint8_t *b = *slot_at(r, block);
    if (!b) return 0;
    size_t in = (size_t)(off % BLK);
    *p = b + in;
    return BLK - in < max ? BLK - in : max;
}

void qk_blockring_read(const qk_blockring *r, uint64_t off, uint8_t *dst, size_t len)
{
    while (len) {
        size_t in = (size_t)(off % BLK);
        size_t n = BLK - in < len ? BLK - in : len;
        const uint8_t *p;
        if (qk_blockring_peek(r, off, n, &p))
            memcpy(dst, p, n);
        else
            memset(dst, 0, n);
        dst += n;
        off += n;
        len -= n;
    }
}

void qk_blockring_advance(qk_blockring *r, uint64_t off)
{
    uint64_t target = off / BLK;
    while (r->base_block < target) {
        if (r->nalloc == 0) { /* nothing held: jump the base directly */
            r->head = 0;
            r->base_block = target;
            return;
        }
        uint8_t **p = &r->slot[r->head];
        if (*p) {
            r->nalloc--;
            if (!r->spare)
                r->spare = *p;
            else
                block_release(*p);
            *p = NULL;
        }
        r->head = (r->head + 1) & (r->cap - 1);
        r->base_block++;
    }
}

void qk_blockring_release(qk_blockring *r)
{
    for (size_t i = 0; i < r->cap; i++) {
        if (r->slot[i]) block_release(r->slot[i]);
        r->slot[i] = NULL;
    }
    if (r->spare) block_release(r->spare);
    r->spare = NULL;
    r->nalloc = 0;
}

size_t qk_blockring_mem_bytes(const qk_blockring *r)
{
    return (r->nalloc + (r->spare ? 1 : 0)) * BLK;
}
