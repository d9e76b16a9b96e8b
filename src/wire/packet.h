/* SPDX-License-Identifier: MIT */
/* QUIC packet headers (RFC 9000 §17, RFC 8999 invariants, RFC 9369 v2 types).
 *
 * The parser stops at the packet number: the low bits of the first byte and
 * the packet number are header-protected (RFC 9001 §5.4), so the crypto layer
 * removes protection, then calls qk_pkt_check_reserved() and qk_pn_decode().
 * Every pointer in a parsed header points into the caller's datagram. */
#ifndef QK_WIRE_PACKET_H
#define QK_WIRE_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QK_VERSION_1       0x00000001u /* RFC 9000 */
#define QK_VERSION_2       0x6b3343cfu /* RFC 9369 */
#define QK_VERSION_NEG     0x00000000u /* Version Negotiation (RFC 9000 §17.2.1) */
#define QK_MAX_CID_LEN     20          /* RFC 9000 §17.2 (v1 and v2) */
#define QK_RETRY_TAG_LEN   16          /* RFC 9001 §5.8 */
#define QK_RESET_TOKEN_LEN 16          /* RFC 9000 §10.3 */

/* First-byte bits (RFC 9000 §17.2, §17.3.1). */
#define QK_HDR_FORM_LONG       0x80
#define QK_HDR_FIXED_BIT       0x40
#define QK_HDR_SPIN_BIT        0x20 /* short header, not protected */
#define QK_HDR_KEY_PHASE       0x04 /* short header, protected */
#define QK_HDR_PN_LEN          0x03 /* protected: pn length - 1 */
#define QK_HDR_LONG_RESERVED   0x0c
#define QK_HDR_SHORT_RESERVED  0x18
#define QK_HDR_LONG_PROTECTED  0x0f /* RFC 9001 §5.4.1 mask bits */
#define QK_HDR_SHORT_PROTECTED 0x1f

typedef enum qk_pkt_type {
    QK_PKT_INITIAL = 0,
    QK_PKT_0RTT = 1,
    QK_PKT_HANDSHAKE = 2,
    QK_PKT_RETRY = 3,
    QK_PKT_VN = 4,   /* Version Negotiation */
    QK_PKT_1RTT = 5, /* short header */
    QK_PKT_UNKNOWN_VERSION = 6,
} qk_pkt_type;

/** A parsed (still protected) packet header. */
typedef struct qk_pkt_hdr {
    uint8_t first_byte; /**< as received (low bits still protected) */
    bool is_long;
    qk_pkt_type type;
    uint32_t version; /**< 0 for short headers */
    const uint8_t *dcid;
    size_t dcid_len;
    const uint8_t *scid; /**< long headers only */
    size_t scid_len;
    const uint8_t *token; /**< Initial and Retry tokens */
    size_t token_len;
    uint64_t length;          /**< Initial/0-RTT/Handshake: Length field (pn + payload) */
    size_t pn_offset;         /**< offset of the packet number from the packet start */
    size_t packet_len;        /**< bytes of this packet in the datagram (coalescing) */
    bool spin;                /**< short header spin bit */
    const uint8_t *retry_tag; /**< Retry: the 16-byte integrity tag */
    const uint8_t *versions;  /**< VN: raw 32-bit version list */
    size_t n_versions;        /**< VN: number of versions in the list */
} qk_pkt_hdr;

/** True for versions this stack parses (QUIC v1 and v2). */
bool qk_version_supported(uint32_t version);

/**
 * Parse the header of the packet at buf (len = bytes left in the datagram).
 * short_dcid_len: length of our connection IDs (short headers carry no length).
 * Returns 0 and fills *h, or:
 *  QK_ERR_TRUNCATED  input ends early or Length exceeds the datagram (drop);
 *  QK_ERR_IGNORE     fixed bit is 0 (RFC 9000 §17.2), a v1/v2 CID longer than 20
 *                    bytes (RFC 9000 §17.2), or a VN list that is not a multiple
 *                    of 4 (drop);
 *  QK_ERR_VERSION    long header with an unsupported version: *h still has
 *                    type QK_PKT_UNKNOWN_VERSION, version, dcid and scid (up to
 *                    255 bytes, RFC 8999 §5.1) for Version Negotiation, and
 *                    packet_len = len.
 * For VN the fixed bit is not checked (RFC 9000 §17.2.1: unused bits).
 */
int qk_pkt_parse(const uint8_t *buf, size_t len, size_t short_dcid_len, qk_pkt_hdr *h);

/**
 * Find the destination CID of a packet without parsing further (endpoint
 * demux). Long header: the encoded DCID (any length up to 255); short header:
 * short_dcid_len bytes. Returns 0, QK_ERR_TRUNCATED or QK_ERR_INVALID_ARG
 * (empty input).
 */
int qk_packet_peek_dcid(const uint8_t *buf, size_t len, size_t short_dcid_len, const uint8_t **dcid,
                        size_t *dcid_len);

/**
 * After header protection is removed: check that the reserved bits of the
 * unprotected first byte are zero (RFC 9000 §17.2, §17.3.1).
 * Returns 0 or QK_ERR_PROTOCOL_VIOLATION.
 */
int qk_pkt_check_reserved(uint8_t unprotected_first_byte);

/** Packet number length (1..4) from an unprotected first byte. */
static inline size_t qk_pkt_pn_len(uint8_t unprotected_first_byte)
{
    return (size_t)(unprotected_first_byte & QK_HDR_PN_LEN) + 1;
}

/** The key phase bit of an unprotected short-header first byte. */
static inline bool qk_pkt_key_phase(uint8_t unprotected_first_byte)
{
    return (unprotected_first_byte & QK_HDR_KEY_PHASE) != 0;
}

/** What to put in a long header (Initial, 0-RTT, Handshake). */
typedef struct qk_long_hdr_params {
    qk_pkt_type type; /**< QK_PKT_INITIAL, QK_PKT_0RTT or QK_PKT_HANDSHAKE */
    uint32_t version; /**< QK_VERSION_1 or QK_VERSION_2 */
    const uint8_t *dcid;
    size_t dcid_len; /**< <= 20 */
    const uint8_t *scid;
    size_t scid_len;      /**< <= 20 */
    const uint8_t *token; /**< Initial only (may be NULL with token_len 0) */
    size_t token_len;
    uint64_t pn;   /**< full packet number; the low pn_len bytes are written */
    size_t pn_len; /**< 1..4 */
} qk_long_hdr_params;

/**
 * Write a long header up to and including the packet number. The Length
 * field is written as a 2-byte varint placeholder: call qk_pkt_patch_length()
 * once the payload is known. Reserved bits are 0.
 * Returns header bytes written (pn included), or QK_ERR_BUFFER_TOO_SMALL /
 * QK_ERR_INVALID_ARG (bad type, version, CID length or pn_len).
 * *length_off and *pn_off receive the offsets of the Length field and the pn.
 */
int qk_pkt_encode_long(uint8_t *buf, size_t cap, const qk_long_hdr_params *p, size_t *length_off,
                       size_t *pn_off);

/**
 * Fill the 2-byte Length field at buf + length_off with length (= pn_len +
 * payload + AEAD tag). Returns 0 or QK_ERR_INVALID_ARG if length > 16383.
 */
int qk_pkt_patch_length(uint8_t *buf, size_t length_off, uint64_t length);

/**
 * Write a short header (RFC 9000 §17.3.1) up to and including the packet
 * number. Returns bytes written, QK_ERR_BUFFER_TOO_SMALL or QK_ERR_INVALID_ARG
 * (dcid_len > 20 or pn_len not 1..4). *pn_off = offset of the pn.
 */
int qk_pkt_encode_short(uint8_t *buf, size_t cap, const uint8_t *dcid, size_t dcid_len, bool spin,
                        bool key_phase, uint64_t pn, size_t pn_len, size_t *pn_off);

/**
 * Write a Version Negotiation packet (RFC 9000 §17.2.1). random_byte supplies
 * the 7 unused first-byte bits. dcid/scid echo the client's scid/dcid (up to
 * 255 bytes each). Returns bytes written, QK_ERR_BUFFER_TOO_SMALL, or
 * QK_ERR_INVALID_ARG (CID > 255 bytes, no versions).
 */
int qk_pkt_encode_vn(uint8_t *buf, size_t cap, uint8_t random_byte, const uint8_t *dcid,
                     size_t dcid_len, const uint8_t *scid, size_t scid_len,
                     const uint32_t *versions, size_t n_versions);

/** The i-th version (i < h->n_versions) of a parsed VN packet. */
uint32_t qk_pkt_vn_version(const qk_pkt_hdr *h, size_t i);

/**
 * Write a Retry packet without its integrity tag (RFC 9000 §17.2.5): the
 * caller computes the tag over qk_pkt_retry_pseudo() and appends it.
 * random_bits supplies the 4 unused first-byte bits. Returns bytes written,
 * QK_ERR_BUFFER_TOO_SMALL or QK_ERR_INVALID_ARG (bad version, CID > 20,
 * empty token).
 */
int qk_pkt_encode_retry(uint8_t *buf, size_t cap, uint32_t version, uint8_t random_bits,
                        const uint8_t *dcid, size_t dcid_len, const uint8_t *scid, size_t scid_len,
                        const uint8_t *token, size_t token_len);

/**
 * Build the Retry pseudo-packet (RFC 9001 §5.8): ODCID length, ODCID, then the
 * Retry packet without its tag (retry, retry_len). Returns bytes written,
 * QK_ERR_BUFFER_TOO_SMALL or QK_ERR_INVALID_ARG (odcid_len > 20).
 */
int qk_pkt_retry_pseudo(uint8_t *buf, size_t cap, const uint8_t *odcid, size_t odcid_len,
                        const uint8_t *retry, size_t retry_len);

#endif
