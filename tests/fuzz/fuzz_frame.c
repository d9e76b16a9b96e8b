/* SPDX-License-Identifier: MIT */
/* Fuzz the frame decoder: every decoded frame must re-encode to bytes that
 * decode to the same fields; ACK ranges must iterate consistently and survive
 * a trip through the range encoder. */
#include "wire/frame.h"
#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"

enum { MAX_RANGES = 256 };

static void check_ack(const qk_frame_ack *ack)
{
    static qk_range desc[MAX_RANGES], asc[MAX_RANGES];
    qk_ack_iter it;
    uint64_t lo, hi, n = 0, prev_lo = 0;
    qk_ack_iter_init(&it, ack);
    while (qk_ack_iter_next(&it, &lo, &hi)) {
        CHECK(lo <= hi);
        if (n) CHECK(hi + 1 < prev_lo); /* descending with a gap of at least one */
        prev_lo = lo;
        if (n < MAX_RANGES) desc[n] = (qk_range){lo, hi + 1};
        n++;
    }
    CHECK(n == ack->range_count + 1);
    if (n > MAX_RANGES) return;
    for (uint64_t i = 0; i < n; i++) asc[i] = desc[n - 1 - i];
    static uint8_t buf[8192];
    size_t nw = 0;
    uint64_t ecn[3] = {ack->ect0, ack->ect1, ack->ce};
    int len = qk_frame_encode_ack(buf, sizeof(buf), asc, (size_t)n, ack->ack_delay,
                                  ack->has_ecn ? ecn : NULL, &nw);
    CHECK(len > 0 && nw == n);
    qk_frame g;
    CHECK(qk_frame_decode(buf, (size_t)len, &g) == len);
    CHECK(g.u.ack.largest == ack->largest && g.u.ack.range_count == ack->range_count);
    qk_ack_iter_init(&it, &g.u.ack);
    for (uint64_t i = 0; i < n; i++) {
        CHECK(qk_ack_iter_next(&it, &lo, &hi));
        CHECK(lo == desc[i].start && hi + 1 == desc[i].end);
    }
    CHECK(!qk_ack_iter_next(&it, &lo, &hi));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t buf[70000];
    size_t off = 0;
    while (off < size) {
        qk_frame f, g;
        int n = qk_frame_decode(data + off, size - off, &f);
        if (n < 0) break;
        CHECK(n > 0 && (size_t)n <= size - off);
        off += (size_t)n;
        (void)qk_frame_allowed(f.type, QK_PKT_1RTT);
        (void)qk_frame_is_ack_eliciting(f.type);
        int m = qk_frame_encode(&f, buf, sizeof(buf));
        CHECK(m > 0);
        CHECK(qk_frame_decode(buf, (size_t)m, &g) == m);
        CHECK(qk_frame_equal(&f, &g));
        /* the sizing helper assumes offset 0 is omitted, as the builder does */
        if (qk_frame_is_stream(f.type) && (f.u.stream.offset || !(f.type & QK_STREAM_BIT_OFF)))
            CHECK((size_t)m == qk_frame_stream_header_len(f.u.stream.stream_id, f.u.stream.offset,
                                                          f.u.stream.len, f.u.stream.has_length) +
                                   f.u.stream.len);
        if (f.type == QK_FT_ACK || f.type == QK_FT_ACK_ECN) check_ack(&f.u.ack);
    }
    return 0;
}
