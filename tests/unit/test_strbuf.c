/* SPDX-License-Identifier: MIT */
/* Block ring (src/transport/streams/strbuf.c): freed blocks are reused from a bounded
 * per-thread pool instead of going back to malloc. */
#include "qk_test.h"

#include "transport/streams/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define BLK QK_STRBUF_BLOCK_BYTES

static void test_blocks_recycled(void **state)
{
    (void)state;
    qk_strbuf_pool_trim();
    qk_blockring r;
    qk_blockring_init(&r);
    static uint8_t data[8 * BLK];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7);
    const uint8_t *first[8];
    assert_int_equal(qk_blockring_write(&r, 0, data, sizeof data), 0);
    for (size_t b = 0; b < 8; b++)
        assert_int_equal(qk_blockring_peek(&r, b * BLK, BLK, &first[b]), BLK);
    /* Everything acknowledged: one block stays as the ring's spare, 7 go to the pool. */
    qk_blockring_advance(&r, sizeof data);
    assert_int_equal(r.nalloc, 0);
    assert_int_equal(qk_blockring_mem_bytes(&r), BLK);
    assert_int_equal(qk_strbuf_pool_blocks(), 7);
    /* The next 8 blocks are the same memory (no malloc), holding the new bytes. */
    assert_int_equal(qk_blockring_write(&r, sizeof data, data, sizeof data), 0);
    assert_int_equal(qk_strbuf_pool_blocks(), 0);
    for (size_t b = 0; b < 8; b++) {
        const uint8_t *p;
        assert_int_equal(qk_blockring_peek(&r, sizeof data + b * BLK, BLK, &p), BLK);
        bool found = false;
        for (size_t k = 0; k < 8; k++) found = found || p == first[k];
        assert_true(found);
    }
    uint8_t out[sizeof data];
    qk_blockring_read(&r, sizeof data, out, sizeof out);
    assert_memory_equal(out, data, sizeof data);
    /* Another ring (another stream) reuses what this one freed. */
    qk_blockring_free(&r);
    assert_int_equal(qk_strbuf_pool_blocks(), 8);
    qk_blockring r2;
    qk_blockring_init(&r2);
    assert_int_equal(qk_blockring_write(&r2, 0, data, 3 * BLK), 0);
    assert_int_equal(qk_strbuf_pool_blocks(), 5);
    qk_blockring_free(&r2);
    qk_strbuf_pool_trim();
    assert_int_equal(qk_strbuf_pool_blocks(), 0);
}

static void test_pool_bounded(void **state)
{
    (void)state;
    qk_strbuf_pool_trim();
    qk_blockring r;
    qk_blockring_init(&r);
    size_t n = (QK_STRBUF_POOL_BLOCKS + 100) * BLK;
    uint8_t *data = calloc(1, n);
    assert_non_null(data);
    assert_int_equal(qk_blockring_write(&r, 0, data, n), 0);
    assert_int_equal(qk_blockring_mem_bytes(&r), n);
    qk_blockring_advance(&r, n);
    /* At most QK_STRBUF_POOL_BLOCKS stay pooled; the rest went back to malloc. */
    assert_int_equal(qk_strbuf_pool_blocks(), QK_STRBUF_POOL_BLOCKS);
    qk_blockring_free(&r);
    assert_int_equal(qk_strbuf_pool_blocks(), QK_STRBUF_POOL_BLOCKS);
    qk_strbuf_pool_trim(); /* ASan's leak check sees the pool freed */
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_recycled),
        cmocka_unit_test(test_pool_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
