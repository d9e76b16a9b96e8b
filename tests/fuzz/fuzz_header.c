/* SPDX-License-Identifier: MIT */
/* Fuzz packet header parsing over a whole (coalesced) datagram. The first
 * input byte picks the local CID length. Each parsed header is re-encoded with
 * the encoders and parsed again; the fields must match. */
#include "wire/packet.h"
#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"

static uint8_t buf[70000];

/* memcmp that accepts NULL pointers for empty ranges */
static int eq(const void *a, const void *b, size_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}

static void same_cids(const qk_pkt_hdr *a, const qk_pkt_hdr *b)
{
    CHECK(a->dcid_len == b->dcid_len && eq(a->dcid, b->dcid, a->dcid_len));
    CHECK(a->scid_len == b->scid_len && eq(a->scid, b->scid, a->scid_len));
}

static void reencode_long(const qk_pkt_hdr *h, const uint8_t *pkt)
{
    size_t pn_len = qk_pkt_pn_len(h->first_byte);
    if (h->length > 16383 || h->pn_offset + pn_len > h->packet_len) return;
    uint64_t pn = 0;
    for (size_t i = 0; i < pn_len; i++) pn = (pn << 8) | pkt[h->pn_offset + i];
    qk_long_hdr_params p = {.type = h->type,
                            .version = h->version,
                            .dcid = h->dcid,
                            .dcid_len = h->dcid_len,
                            .scid = h->scid,
                            .scid_len = h->scid_len,
                            .token = h->token,
                            .token_len = h->token_len,
                            .pn = pn,
                            .pn_len = pn_len};
    size_t loff, poff;
    int n = qk_pkt_encode_long(buf, sizeof(buf), &p, &loff, &poff);
    CHECK(n > 0 && (size_t)n == poff + pn_len);
    CHECK(qk_pkt_patch_length(buf, loff, h->length) == 0);
    size_t rest = (size_t)h->length - pn_len;
    if (rest) memcpy(buf + n, pkt + h->pn_offset + pn_len, rest);
    qk_pkt_hdr g;
    CHECK(qk_pkt_parse(buf, (size_t)n + rest, 0, &g) == 0);
    CHECK(g.type == h->type && g.version == h->version && g.length == h->length);
    CHECK(g.token_len == h->token_len && eq(g.token, h->token, h->token_len));
    CHECK((g.first_byte | QK_HDR_LONG_RESERVED) == (h->first_byte | QK_HDR_LONG_RESERVED));
    CHECK(g.packet_len == (size_t)n + rest && g.pn_offset == poff);
    same_cids(h, &g);
}

static void reencode(const qk_pkt_hdr *h, const uint8_t *pkt, size_t cid_len)
{
    qk_pkt_hdr g;
    int n;
    switch (h->type) {
    case QK_PKT_INITIAL:
    case QK_PKT_0RTT:
    case QK_PKT_HANDSHAKE: reencode_long(h, pkt); break;
    case QK_PKT_1RTT: {
        size_t poff, pn_len = qk_pkt_pn_len(h->first_byte);
        n = qk_pkt_encode_short(buf, sizeof(buf), h->dcid, h->dcid_len, h->spin,
                                qk_pkt_key_phase(h->first_byte), 0, pn_len, &poff);
        CHECK(n > 0);
        CHECK(qk_pkt_parse(buf, (size_t)n, cid_len, &g) == 0);
        CHECK(g.type == QK_PKT_1RTT && g.spin == h->spin && g.pn_offset == poff);
        CHECK((g.first_byte | QK_HDR_SHORT_RESERVED) == (h->first_byte | QK_HDR_SHORT_RESERVED));
        CHECK(eq(g.dcid, h->dcid, cid_len));
        break;
    }
    case QK_PKT_VN: {
        static uint32_t vers[20000];
        if (h->n_versions == 0 || h->n_versions > 20000) break;
        for (size_t i = 0; i < h->n_versions; i++) vers[i] = qk_pkt_vn_version(h, i);
        n = qk_pkt_encode_vn(buf, sizeof(buf), h->first_byte, h->dcid, h->dcid_len, h->scid,
                             h->scid_len, vers, h->n_versions);
        CHECK(n > 0 && (size_t)n == h->packet_len);
        CHECK(!memcmp(buf, pkt, (size_t)n)); /* VN is fully determined by its fields */
        break;
    }
    case QK_PKT_RETRY:
        if (h->token_len == 0) break;
        n = qk_pkt_encode_retry(buf, sizeof(buf), h->version, h->first_byte, h->dcid, h->dcid_len,
                                h->scid, h->scid_len, h->token, h->token_len);
        CHECK(n > 0 && (size_t)n + QK_RETRY_TAG_LEN == h->packet_len);
        CHECK(!memcmp(buf, pkt, (size_t)n));
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t cid_len = data[0] % (QK_MAX_CID_LEN + 1);
    data++, size--;
    size_t off = 0;
    while (off < size) {
        const uint8_t *pkt = data + off;
        size_t left = size - off;
        qk_pkt_hdr h;
        const uint8_t *d;
        size_t dl;
        int rc = qk_pkt_parse(pkt, left, cid_len, &h);
        int prc = qk_packet_peek_dcid(pkt, left, cid_len, &d, &dl);
        if (rc == 0 || rc == QK_ERR_VERSION) {
            CHECK(prc == 0 && d == h.dcid && dl == h.dcid_len);
            CHECK(h.packet_len >= 1 && h.packet_len <= left);
        }
        if (rc == QK_ERR_VERSION) {
            CHECK(h.type == QK_PKT_UNKNOWN_VERSION && !qk_version_supported(h.version));
            CHECK(h.scid + h.scid_len <= pkt + left);
        }
        if (rc != 0) break;
        CHECK(h.pn_offset <= h.packet_len);
        reencode(&h, pkt, cid_len);
        off += h.packet_len;
    }
    return 0;
}
