/* SPDX-License-Identifier: MIT */
/* Fuzz the tunnel session layer's decoders (src/tunnel/session_wire.h): a
 * stream of control messages, a flow header and its reply. Invariants: no
 * crash; a decoded message re-encodes to the same bytes (known types) and
 * never claims more bytes than it was given; the replay ring keeps its
 * offsets whatever ACK offsets arrive. */
#include <string.h>

#include "fuzz_check.h"
#include "tunnel/session_wire.h"

static void ring_ops(const uint8_t *data, size_t size)
{
    qk_tsw_ring r = {0};
    uint64_t read_off = 0;
    for (size_t i = 0; i + 1 < size; i += 2) {
        size_t n = data[i + 1];
        if (data[i] & 1) { /* bytes in */
            if (r.len == r.cap && qk_tsw_ring_grow(&r, r.cap ? 2 * r.cap : 16)) break;
            size_t room;
            uint8_t *p = qk_tsw_ring_tail(&r, &room);
            if (n > room) n = room;
            memset(p, (int)read_off, n);
            qk_tsw_ring_commit(&r, n);
            read_off += n;
        } else { /* an ACK somewhere around the held bytes */
            uint64_t off = r.base + n;
            int rc = qk_tsw_ring_ack(&r, off);
            CHECK(rc == (off > read_off ? -1 : 0));
        }
        CHECK(r.base + r.len == read_off && r.len <= r.cap);
        size_t got;
        const uint8_t *p = qk_tsw_ring_at(&r, r.base, &got);
        CHECK(r.len ? p && got > 0 && got <= r.len : got == 0);
    }
    qk_tsw_ring_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        qk_tsw_msg m;
        long n = qk_tsw_msg_decode(data + off, size - off, &m);
        if (n <= 0) break;
        CHECK((size_t)n <= size - off);
        if (m.type == QK_TSW_HELLO || m.type == QK_TSW_WELCOME || m.type == QK_TSW_ACK) {
            uint8_t out[QK_TSW_MSG_MAX];
            size_t len = qk_tsw_msg_encode(&m, out);
            CHECK(len == (size_t)n && !memcmp(out, data + off, len));
        }
        off += (size_t)n;
    }
    if (size >= QK_TSW_FLOW_HDR_BYTES) {
        qk_tsw_flow_hdr h;
        uint8_t out[QK_TSW_FLOW_HDR_BYTES];
        if (!qk_tsw_flow_hdr_decode(data, &h)) {
            qk_tsw_flow_hdr_encode(&h, out);
            CHECK(!memcmp(out, data, sizeof out));
        }
        qk_tsw_flow_reply r;
        uint8_t rout[QK_TSW_FLOW_REPLY_BYTES];
        if (!qk_tsw_flow_reply_decode(data, &r)) {
            qk_tsw_flow_reply_encode(&r, rout);
            CHECK(!memcmp(rout, data, sizeof rout));
        }
    }
    ring_ops(data, size);
    return 0;
}
