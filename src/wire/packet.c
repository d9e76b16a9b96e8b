/* SPDX-License-Identifier: MIT */
/* QUIC packet headers (RFC 9000 §17, RFC 8999, RFC 9369). */
#include "wire/packet.h"
#include "base/cursor.h"
#include "wire/pn.h"
#include <quack/common.h>

bool qk_version_supported(uint32_t version)
{
    return version == QK_VERSION_1 || version == QK_VERSION_2;
}

/* Long packet type bits <-> qk_pkt_type (RFC 9000 §17.2, RFC 9369 §3.2). */
static qk_pkt_type type_from_bits(uint32_t version, unsigned bits)
{
    static const qk_pkt_type v1[4] = {QK_PKT_INITIAL, QK_PKT_0RTT, QK_PKT_HANDSHAKE, QK_PKT_RETRY};
    static const qk_pkt_type v2[4] = {QK_PKT_RETRY, QK_PKT_INITIAL, QK_PKT_0RTT, QK_PKT_HANDSHAKE};
    return version == QK_VERSION_2 ? v2[bits & 3] : v1[bits & 3];
}

static int type_to_bits(uint32_t version, qk_pkt_type type)
{
    if (type > QK_PKT_RETRY) return -1;
    if (version == QK_VERSION_2) return (int)((type + 1) & 3);
    return (int)type;
}

/* Reads a length-prefixed CID of at most max bytes. */
static int read_cid(qk_rd *r, const uint8_t **cid, size_t *cid_len)
{
    uint8_t n;
    if (!qk_rd_u8(r, &n)) return QK_ERR_TRUNCATED;
    if (!qk_rd_bytes(r, n, cid)) return QK_ERR_TRUNCATED;
    *cid_len = n;
    return 0;
}

static int parse_vn(qk_rd *r, const uint8_t *buf, size_t len, qk_pkt_hdr *h)
{
    /* RFC 9000 §17.2.1: versions fill the rest of the datagram. */
    h->type = QK_PKT_VN;
    size_t left = qk_rd_left(r);
    if (left % 4 != 0) return QK_ERR_IGNORE;
    h->versions = r->p;
    h->n_versions = left / 4;
    h->pn_offset = (size_t)(r->p - buf);
    h->packet_len = len;
    return 0;
}

static int parse_long(const uint8_t *buf, size_t len, qk_pkt_hdr *h)
{
    qk_rd r = qk_rd_make(buf + 1, len - 1);
    int rc;
    h->is_long = true;
    if (!qk_rd_u32(&r, &h->version)) return QK_ERR_TRUNCATED;
    if ((rc = read_cid(&r, &h->dcid, &h->dcid_len)) < 0) return rc;
    if ((rc = read_cid(&r, &h->scid, &h->scid_len)) < 0) return rc;
    if (h->version == QK_VERSION_NEG) return parse_vn(&r, buf, len, h);
    if (!qk_version_supported(h->version)) {
        /* RFC 9000 §6 / RFC 8999 §5.1: enough to answer with Version Negotiation. */
        h->type = QK_PKT_UNKNOWN_VERSION;
        h->packet_len = len;
        return QK_ERR_VERSION;
    }
    /* RFC 9000 §17.2: v1 CIDs longer than 20 bytes: drop. */
    if (h->dcid_len > QK_MAX_CID_LEN || h->scid_len > QK_MAX_CID_LEN) return QK_ERR_IGNORE;
    /* RFC 9000 §17.2: fixed bit must be 1, else drop. */
    if (!(h->first_byte & QK_HDR_FIXED_BIT)) return QK_ERR_IGNORE;
    h->type = type_from_bits(h->version, (h->first_byte >> 4) & 3);
    if (h->type == QK_PKT_RETRY) {
        /* RFC 9000 §17.2.5: token fills the packet up to the 16-byte tag. */
        size_t left = qk_rd_left(&r);
        if (left < QK_RETRY_TAG_LEN) return QK_ERR_TRUNCATED;
        h->token = r.p;
        h->token_len = left - QK_RETRY_TAG_LEN;
        h->retry_tag = r.p + h->token_len;
        h->pn_offset = len;
        h->packet_len = len;
        return 0;
    }
    if (h->type == QK_PKT_INITIAL) {
        uint64_t tlen;
        /* RFC 9000 §17.2.2 */
        if (!qk_rd_varint(&r, &tlen)) return QK_ERR_TRUNCATED;
        if (tlen > qk_rd_left(&r)) return QK_ERR_TRUNCATED;
        qk_rd_bytes(&r, (size_t)tlen, &h->token);
        h->token_len = (size_t)tlen;
    }
    if (!qk_rd_varint(&r, &h->length)) return QK_ERR_TRUNCATED;
    if (h->length > qk_rd_left(&r)) return QK_ERR_TRUNCATED;
    h->pn_offset = (size_t)(r.p - buf);
    h->packet_len = h->pn_offset + (size_t)h->length;
    return 0;
}

int qk_pkt_parse(const uint8_t *buf, size_t len, size_t short_dcid_len, qk_pkt_hdr *h)
{
    *h = (qk_pkt_hdr){0};
    if (len < 1) return QK_ERR_TRUNCATED;
    h->first_byte = buf[0];
    if (buf[0] & QK_HDR_FORM_LONG) return parse_long(buf, len, h);
    /* RFC 9000 §17.3.1 */
    if (!(buf[0] & QK_HDR_FIXED_BIT)) return QK_ERR_IGNORE;
    if (short_dcid_len > QK_MAX_CID_LEN) return QK_ERR_INVALID_ARG;
    if (len < 1 + short_dcid_len) return QK_ERR_TRUNCATED;
    h->type = QK_PKT_1RTT;
    h->dcid = buf + 1;
    h->dcid_len = short_dcid_len;
    h->spin = (buf[0] & QK_HDR_SPIN_BIT) != 0;
    h->pn_offset = 1 + short_dcid_len;
    h->packet_len = len;
    return 0;
}

int qk_packet_peek_dcid(const uint8_t *buf, size_t len, size_t short_dcid_len, const uint8_t **dcid,
                        size_t *dcid_len)
{
    if (len < 1) return QK_ERR_INVALID_ARG;
    if (buf[0] & QK_HDR_FORM_LONG) {
        /* RFC 8999 §5.1: first byte, 32-bit version, DCID length, DCID. */
        if (len < 6 || len < 6 + (size_t)buf[5]) return QK_ERR_TRUNCATED;
        *dcid = buf + 6;
        *dcid_len = buf[5];
        return 0;
    }
    if (len < 1 + short_dcid_len) return QK_ERR_TRUNCATED;
    *dcid = buf + 1;
    *dcid_len = short_dcid_len;
    return 0;
}

int qk_pkt_check_reserved(uint8_t b)
{
    /* RFC 9000 §17.2 and §17.3.1: reserved bits MUST be 0 after unprotection. */
    uint8_t mask = (b & QK_HDR_FORM_LONG) ? QK_HDR_LONG_RESERVED : QK_HDR_SHORT_RESERVED;
    return (b & mask) ? QK_ERR_PROTOCOL_VIOLATION : 0;
}

int qk_pkt_encode_long(uint8_t *buf, size_t cap, const qk_long_hdr_params *p, size_t *length_off,
                       size_t *pn_off)
{
    if (!qk_version_supported(p->version)) return QK_ERR_INVALID_ARG;
    if (p->type != QK_PKT_INITIAL && p->type != QK_PKT_0RTT && p->type != QK_PKT_HANDSHAKE)
        return QK_ERR_INVALID_ARG;
    if (p->dcid_len > QK_MAX_CID_LEN || p->scid_len > QK_MAX_CID_LEN) return QK_ERR_INVALID_ARG;
    if (p->pn_len < 1 || p->pn_len > 4) return QK_ERR_INVALID_ARG;
    if (p->token_len && p->type != QK_PKT_INITIAL) return QK_ERR_INVALID_ARG;
    qk_wr w = qk_wr_make(buf, cap);
    uint8_t b0 = QK_HDR_FORM_LONG | QK_HDR_FIXED_BIT |
                 (uint8_t)(type_to_bits(p->version, p->type) << 4) | (uint8_t)(p->pn_len - 1);
    bool ok = qk_wr_u8(&w, b0) && qk_wr_u32(&w, p->version) && qk_wr_u8(&w, (uint8_t)p->dcid_len) &&
              qk_wr_bytes(&w, p->dcid, p->dcid_len) && qk_wr_u8(&w, (uint8_t)p->scid_len) &&
              qk_wr_bytes(&w, p->scid, p->scid_len);
    if (ok && p->type == QK_PKT_INITIAL) /* RFC 9000 §17.2.2 */
        ok = qk_wr_varint(&w, p->token_len) && qk_wr_bytes(&w, p->token, p->token_len);
    size_t loff = (size_t)(w.p - buf);
    ok = ok && qk_wr_varint_n(&w, 0, 2); /* patched by qk_pkt_patch_length() */
    size_t poff = (size_t)(w.p - buf);
    ok = ok && qk_wr_uint(&w, p->pn_len, p->pn);
    if (!ok) return QK_ERR_BUFFER_TOO_SMALL;
    if (length_off) *length_off = loff;
    if (pn_off) *pn_off = poff;
    return (int)(w.p - buf);
}

int qk_pkt_patch_length(uint8_t *buf, size_t length_off, uint64_t length)
{
    qk_wr w = qk_wr_make(buf + length_off, 2);
    return qk_wr_varint_n(&w, length, 2) ? 0 : QK_ERR_INVALID_ARG;
}

int qk_pkt_encode_short(uint8_t *buf, size_t cap, const uint8_t *dcid, size_t dcid_len, bool spin,
                        bool key_phase, uint64_t pn, size_t pn_len, size_t *pn_off)
{
    if (dcid_len > QK_MAX_CID_LEN || pn_len < 1 || pn_len > 4) return QK_ERR_INVALID_ARG;
    /* RFC 9000 §17.3.1: 0 1 S R R K P P */
    uint8_t b0 = QK_HDR_FIXED_BIT | (spin ? QK_HDR_SPIN_BIT : 0) |
                 (key_phase ? QK_HDR_KEY_PHASE : 0) | (uint8_t)(pn_len - 1);
    qk_wr w = qk_wr_make(buf, cap);
    if (!qk_wr_u8(&w, b0) || !qk_wr_bytes(&w, dcid, dcid_len)) return QK_ERR_BUFFER_TOO_SMALL;
    size_t poff = (size_t)(w.p - buf);
    if (!qk_wr_uint(&w, pn_len, pn)) return QK_ERR_BUFFER_TOO_SMALL;
    if (pn_off) *pn_off = poff;
    return (int)(w.p - buf);
}

int qk_pkt_encode_vn(uint8_t *buf, size_t cap, uint8_t random_byte, const uint8_t *dcid,
                     size_t dcid_len, const uint8_t *scid, size_t scid_len,
                     const uint32_t *versions, size_t n_versions)
{
    if (dcid_len > 255 || scid_len > 255 || n_versions == 0) return QK_ERR_INVALID_ARG;
    qk_wr w = qk_wr_make(buf, cap);
    /* RFC 9000 §17.2.1: form bit 1, other 7 bits unused (random). */
    bool ok = qk_wr_u8(&w, QK_HDR_FORM_LONG | (random_byte & 0x7f)) &&
              qk_wr_u32(&w, QK_VERSION_NEG) && qk_wr_u8(&w, (uint8_t)dcid_len) &&
              qk_wr_bytes(&w, dcid, dcid_len) && qk_wr_u8(&w, (uint8_t)scid_len) &&
              qk_wr_bytes(&w, scid, scid_len);
    for (size_t i = 0; ok && i < n_versions; i++) ok = qk_wr_u32(&w, versions[i]);
    if (!ok) return QK_ERR_BUFFER_TOO_SMALL;
    return (int)(w.p - buf);
}

uint32_t qk_pkt_vn_version(const qk_pkt_hdr *h, size_t i)
{
    const uint8_t *p = h->versions + 4 * i;
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

int qk_pkt_encode_retry(uint8_t *buf, size_t cap, uint32_t version, uint8_t random_bits,
                        const uint8_t *dcid, size_t dcid_len, const uint8_t *scid, size_t scid_len,
                        const uint8_t *token, size_t token_len)
{
    if (!qk_version_supported(version)) return QK_ERR_INVALID_ARG;
    if (dcid_len > QK_MAX_CID_LEN || scid_len > QK_MAX_CID_LEN || token_len == 0)
        return QK_ERR_INVALID_ARG;
    /* RFC 9000 §17.2.5: low 4 bits unused. */
    uint8_t b0 = QK_HDR_FORM_LONG | QK_HDR_FIXED_BIT |
                 (uint8_t)(type_to_bits(version, QK_PKT_RETRY) << 4) | (random_bits & 0x0f);
    qk_wr w = qk_wr_make(buf, cap);
    bool ok = qk_wr_u8(&w, b0) && qk_wr_u32(&w, version) && qk_wr_u8(&w, (uint8_t)dcid_len) &&
              qk_wr_bytes(&w, dcid, dcid_len) && qk_wr_u8(&w, (uint8_t)scid_len) &&
              qk_wr_bytes(&w, scid, scid_len) && qk_wr_bytes(&w, token, token_len);
    if (!ok) return QK_ERR_BUFFER_TOO_SMALL;
    return (int)(w.p - buf);
}

int qk_pkt_retry_pseudo(uint8_t *buf, size_t cap, const uint8_t *odcid, size_t odcid_len,
                        const uint8_t *retry, size_t retry_len)
{
    if (odcid_len > QK_MAX_CID_LEN) return QK_ERR_INVALID_ARG;
    qk_wr w = qk_wr_make(buf, cap);
    /* RFC 9001 §5.8: Retry Pseudo-Packet */
    if (!qk_wr_u8(&w, (uint8_t)odcid_len) || !qk_wr_bytes(&w, odcid, odcid_len) ||
        !qk_wr_bytes(&w, retry, retry_len))
        return QK_ERR_BUFFER_TOO_SMALL;
    return (int)(w.p - buf);
}
