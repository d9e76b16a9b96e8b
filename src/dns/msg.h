/* SPDX-License-Identifier: MIT */
/* DNS message codec (RFC 1035 §4, EDNS(0) RFC 6891): pure encode/decode, no
 * state, no allocation. Decoding follows compression pointers (RFC 1035
 * §4.1.4) with a bound on the number of jumps and on the name's length, so
 * any input terminates; names keep the case they arrived in (resolvers
 * randomise it, draft-vixie-dnsext-dns0x20; compare with
 * qk_dns_name_suffix(), which ignores case, RFC 4343). Encoding never
 * compresses except for the answer's name, written as a pointer to the
 * question (offset 12). */
#ifndef QK_DNS_MSG_H
#define QK_DNS_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cursor.h"
#include <quack/common.h>

#define QK_DNS_MAX_NAME_BYTES  255 /* RFC 1035 §2.3.4, wire form with the root */
#define QK_DNS_MAX_LABEL_BYTES 63  /* RFC 1035 §2.3.4 */
#define QK_DNS_HEADER_BYTES    12
#define QK_DNS_MAX_ANSWERS     8      /* answers kept by qk_dns_decode (more are skipped) */
#define QK_DNS_MAX_JUMPS       32     /* compression pointers followed per name */
#define QK_DNS_TXT_STRING_MAX  255    /* RFC 1035 §3.3.14: <character-string> */
#define QK_DNS_OPT_RR_BYTES    11     /* root name, type, class, ttl, rdlen (no options) */
#define QK_DNS_QUESTION_PTR    0xc00c /* a pointer to the question's name */

enum {
    QK_DNS_TYPE_A = 1,
    QK_DNS_TYPE_NS = 2,
    QK_DNS_TYPE_CNAME = 5,
    QK_DNS_TYPE_SOA = 6,
    QK_DNS_TYPE_NULL = 10,
    QK_DNS_TYPE_TXT = 16,
    QK_DNS_TYPE_AAAA = 28,
    QK_DNS_TYPE_OPT = 41, /* RFC 6891 §6.1.1 */
    QK_DNS_CLASS_IN = 1,
};

enum {
    QK_DNS_RCODE_NOERROR = 0,
    QK_DNS_RCODE_FORMERR = 1,
    QK_DNS_RCODE_SERVFAIL = 2,
    QK_DNS_RCODE_NXDOMAIN = 3,
    QK_DNS_RCODE_NOTIMP = 4,
    QK_DNS_RCODE_REFUSED = 5,
};

/* Header flags (RFC 1035 §4.1.1). */
#define QK_DNS_FLAG_QR       0x8000u
#define QK_DNS_FLAG_AA       0x0400u
#define QK_DNS_FLAG_TC       0x0200u
#define QK_DNS_FLAG_RD       0x0100u
#define QK_DNS_FLAG_RA       0x0080u
#define QK_DNS_OPCODE(flags) (((flags) >> 11) & 0xfu)
#define QK_DNS_RCODE(flags)  ((flags)&0xfu)

/** A domain name in uncompressed wire form (length-prefixed labels, ending with the root). */
typedef struct qk_dns_name {
    uint8_t wire[QK_DNS_MAX_NAME_BYTES];
    size_t len; /* bytes in wire, including the root's 0 */
} qk_dns_name;

/** One resource record; rdata points into the decoded message. */
typedef struct qk_dns_rr {
    qk_dns_name name;
    uint16_t type, rclass;
    uint32_t ttl;
    const uint8_t *rdata;
    uint16_t rdlen;
} qk_dns_rr;

/** A decoded message: header, the first question, the first answers, EDNS(0). */
typedef struct qk_dns_msg {
    uint16_t id, flags;
    uint16_t qdcount, ancount, nscount, arcount;
    bool has_question;
    qk_dns_name qname;
    uint16_t qtype, qclass;
    qk_dns_rr an[QK_DNS_MAX_ANSWERS];
    size_t n_an;
    bool has_edns;
    uint16_t edns_size; /* requester's UDP payload size (RFC 6891 §6.2.3) */
    uint8_t edns_version;
} qk_dns_msg;

/**
 * Read a possibly compressed name at *off of msg (len bytes) into out and
 * advance *off past it (past the first pointer when compressed). Returns 0,
 * QK_ERR_TRUNCATED (input ends), QK_ERR_PROTOCOL_VIOLATION (label type 01/10,
 * a pointer forward or to itself, more than QK_DNS_MAX_JUMPS pointers, a
 * name over 255 bytes).
 */
int qk_dns_name_read(const uint8_t *msg, size_t len, size_t *off, qk_dns_name *out);

/**
 * Decode a message. Keeps the first question, the first QK_DNS_MAX_ANSWERS
 * answers and the OPT record (EDNS(0)) of the additional section; authority
 * records are skipped. Returns 0, QK_ERR_TRUNCATED, QK_ERR_PROTOCOL_VIOLATION
 * (bad name, two OPT records, OPT not in the additional section or not at
 * the root), QK_ERR_INVALID_ARG (NULL).
 */
int qk_dns_decode(const uint8_t *buf, size_t len, qk_dns_msg *m);

/**
 * Text ("t.example.com" or "t.example.com.") to wire form. Returns 0 or
 * QK_ERR_INVALID_ARG (empty label, label over 63, name over 255 bytes).
 */
int qk_dns_name_from_text(const char *text, qk_dns_name *out);

/**
 * Wire form to text without the final dot ("" for the root). Returns the
 * length, or QK_ERR_BUFFER_TOO_SMALL.
 */
int qk_dns_name_to_text(const qk_dns_name *n, char *buf, size_t cap);

/**
 * Whether name ends with suffix, comparing ASCII case-insensitively (RFC 4343)
 * on label boundaries. On true, *prefix_bytes is the wire length of the labels
 * before the suffix (0 when equal).
 */
bool qk_dns_name_suffix(const qk_dns_name *name, const qk_dns_name *suffix, size_t *prefix_bytes);

/** Write the 12-byte header. Returns false when w is too small. */
bool qk_dns_put_header(qk_wr *w, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns,
                       uint16_t ar);

/** Write a name (uncompressed) and the question's type and class. */
bool qk_dns_put_question(qk_wr *w, const qk_dns_name *name, uint16_t type, uint16_t rclass);

/** Write an RR header whose name is the pointer QK_DNS_QUESTION_PTR, then rdata. */
bool qk_dns_put_rr_ptr(qk_wr *w, uint16_t type, uint32_t ttl, const uint8_t *rdata, uint16_t rdlen);

/**
 * Write a TXT RR (name: pointer to the question) whose RDATA holds data as
 * consecutive <character-string>s of at most 255 bytes (RFC 1035 §3.3.14;
 * one empty string when len is 0).
 */
bool qk_dns_put_txt(qk_wr *w, uint32_t ttl, const uint8_t *data, size_t len);

/** RDATA bytes qk_dns_put_txt needs for len bytes of data. */
size_t qk_dns_txt_rdata_bytes(size_t len);

/** Write an OPT RR (EDNS(0), RFC 6891 §6.1.2) advertising udp_size. */
bool qk_dns_put_opt(qk_wr *w, uint16_t udp_size);

/**
 * Concatenate the <character-string>s of a TXT RDATA into out. Returns the
 * byte count, QK_ERR_TRUNCATED (a string runs past rdlen),
 * QK_ERR_BUFFER_TOO_SMALL.
 */
int qk_dns_txt_read(const uint8_t *rdata, size_t rdlen, uint8_t *out, size_t cap);

#endif
