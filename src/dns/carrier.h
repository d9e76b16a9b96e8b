/* SPDX-License-Identifier: MIT */
/* The DNS carrier's internals (sans-I/O); the public API is
 * include/quack/dns.h. See docs/dns.md.
 *
 * Query name: base32(client id (2) | kind (1) | payload) in labels of at most
 * QK_DNS_LABEL_CHARS characters, then the tunnel domain. kind 0 is a poll
 * (payload: 4 random bytes, so no two names are equal and no cache can
 * answer them), kind 1 carries one QUIC datagram. QTYPE TXT, EDNS(0) 1232.
 * Answer: one TXT record, TTL 0, whose strings concatenated hold 0..n
 * datagrams, each prefixed by its length (2 bytes, network order). */
#ifndef QK_DNS_CARRIER_H
#define QK_DNS_CARRIER_H

#include <quack/common.h>
#include <quack/dns.h>
#include <stdbool.h>

#include "dns/msg.h"

#define QK_DNS_LABEL_CHARS 63 /* RFC 1035 §2.3.4 */
#define QK_DNS_HDR_BYTES   3  /* client id (16 bits) + kind */
#define QK_DNS_KIND_POLL   0
#define QK_DNS_KIND_DATA   1

/* ------------------------------------------------------------------------ */
/* Base32 (RFC 4648 §6 alphabet, lower case, no padding)                    */
/* ------------------------------------------------------------------------ */

/** Characters base32 needs for n bytes. */
size_t qk_base32_len(size_t n);

/** Encode n bytes into out (qk_base32_len(n) characters, no NUL). */
void qk_base32_encode(const uint8_t *in, size_t n, char *out);

/**
 * Decode n characters, either case. Returns the byte count, or
 * QK_ERR_PROTOCOL_VIOLATION (a character outside the alphabet, or non-zero
 * bits left over), QK_ERR_BUFFER_TOO_SMALL.
 */
int qk_base32_decode(const char *in, size_t n, uint8_t *out, size_t cap);

/* ------------------------------------------------------------------------ */
/* Client (the struct behind quack/dns.h's opaque qk_dns_client)            */
/* ------------------------------------------------------------------------ */

struct qk_dns_client {
    qk_dns_name domain;
    size_t domain_text;  /* characters of the domain's text form */
    size_t max_qname;    /* text characters */
    size_t max_dgram;    /* QUIC datagram bytes that fit one name */
    uint32_t id;         /* client id (random) */
    uint16_t edns_bytes; /* advertised in queries */
};

/**
 * Set up a client (embedded) for domain, names of at most max_qname text
 * characters (0 = 253), client id id. Returns 0, or QK_ERR_INVALID_ARG (bad
 * domain, max_qname outside 60..253 or leaving no room for a datagram).
 */
int qk_dns_client_init(qk_dns_client *c, const char *domain, size_t max_qname, uint32_t id);

/** Largest QUIC datagram one query can carry under domain and max_qname (0: none fits). */
size_t qk_dns_max_datagram(size_t domain_text, size_t max_qname);

/**
 * The carrier payload of a query name under domain (the labels before it,
 * base32-decoded, either case). Returns its length, QK_ERR_NOT_FOUND (not
 * under domain, or the domain itself), QK_ERR_PROTOCOL_VIOLATION (not
 * base32), QK_ERR_BUFFER_TOO_SMALL.
 */
int qk_dns_name_payload(const qk_dns_name *name, const qk_dns_name *domain, uint8_t *out,
                        size_t cap);

#endif
