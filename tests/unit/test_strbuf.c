/* Block ring (src/transport/strbuf.c): freed blocks are reused from a bounded
 * free list instead of going back to malloc. */
#include "qk_test.h"

#include "transport/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define BLK QK_STRBUF_BLOCK_BYTES

static void test_blocks_recycled(void **state)
{
    (void)state;
    qk_blockring r;
    qk_blockring_init(&r);
    static uint8_t data[8 * BLK];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7);
    const uint8_t *first[8];
    assert_int_equal(qk_blockring_write(&r, 0, data, sizeof data), 0);
    for (size_t b = 0; b < 8; b++)
        assert_int_equal(qk_blockring_peek(&r, b * BLK, BLK, &first[b]), BLK);
    /* Everything acknowledged: the 8 blocks go to the free list, still counted. */
    qk_blockring_advance(&r, sizeof data);
    assert_int_equal(r.nalloc, 0);
    assert_int_equal(r.nspare, 8);
    assert_int_equal(qk_blockring_mem_bytes(&r), 8 * BLK);
    /* The next 8 blocks are the same memory (no malloc), and hold the new bytes. */
    assert_int_equal(qk_blockring_write(&r, sizeof data, data, sizeof data), 0);
    assert_int_equal(r.nspare, 0);
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
    qk_blockring_free(&r);
}

static void test_free_list_bounded(void **state)
{
    (void)state;
    qk_blockring r;
    qk_blockring_init(&r);
    size_t n = 4 * QK_STRBUF_SPARE_BLOCKS * BLK;
    uint8_t *data = calloc(1, n);
    assert_non_null(data);
    assert_int_equal(qk_blockring_write(&r, 0, data, n), 0);
    assert_int_equal(qk_blockring_mem_bytes(&r), n);
    qk_blockring_advance(&r, n);
    /* Only QK_STRBUF_SPARE_BLOCKS stay cached; the rest went back to malloc. */
    assert_int_equal(r.nspare, QK_STRBUF_SPARE_BLOCKS);
    assert_int_equal(qk_blockring_mem_bytes(&r), QK_STRBUF_SPARE_BLOCKS * BLK);
    qk_blockring_free(&r); /* frees the free list too (ASan checks for leaks) */
    assert_int_equal(qk_blockring_mem_bytes(&r), 0);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_recycled),
        cmocka_unit_test(test_free_list_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
