/* The DNS carrier (sans-I/O): QUIC datagrams in DNS queries (client) and
 * TXT answers (server). See docs/dns.md.
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
#include <stdbool.h>

#include "dns/msg.h"

#define QK_DNS_LABEL_CHARS      63   /* RFC 1035 §2.3.4 */
#define QK_DNS_MAX_QNAME_TEXT   253  /* text form; 255 bytes on the wire */
#define QK_DNS_MIN_QNAME_TEXT   60   /* below this hardly a datagram fits */
#define QK_DNS_EDNS_BYTES       1232 /* DNS flag day 2020 */
#define QK_DNS_HDR_BYTES        3    /* client id (16 bits) + kind */
#define QK_DNS_KIND_POLL        0
#define QK_DNS_KIND_DATA        1
#define QK_DNS_SERVER_DGRAM_MAX 900 /* downstream QUIC datagrams (docs/dns.md) */
#define QK_DNS_MAX_MSG_BYTES    4096
/* Longest a query is held for data: short, or unbound's timeouts and
 * retransmissions cut the rate (docs/experiments/dns.md). */
#define QK_DNS_PATIENCE_NS (30 * QK_NS_PER_MS)

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
/* Client                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct qk_dns_client {
    qk_dns_name domain;
    size_t domain_text;  /* characters of the domain's text form */
    size_t max_qname;    /* text characters */
    size_t max_dgram;    /* QUIC datagram bytes that fit one name */
    uint32_t id;         /* client id (random) */
    uint16_t edns_bytes; /* advertised in queries */
} qk_dns_client;

/**
 * Set up a client for domain ("t.example.com"), names of at most max_qname
 * text characters (0 = 253), client id id. Returns 0, or QK_ERR_INVALID_ARG
 * (bad domain, max_qname outside 60..253 or leaving no room for a datagram).
 */
int qk_dns_client_init(qk_dns_client *c, const char *domain, size_t max_qname, uint32_t id);

/** Largest QUIC datagram one query can carry under domain and max_qname (0: none fits). */
size_t qk_dns_max_datagram(size_t domain_text, size_t max_qname);

/**
 * Build a query with id qid carrying datagram dg (len bytes), or a poll
 * (dg NULL, len 0) made unique by nonce. Returns the message length, or
 * QK_ERR_TOO_LARGE (len above c->max_dgram), QK_ERR_BUFFER_TOO_SMALL.
 */
int qk_dns_client_query(const qk_dns_client *c, uint16_t qid, const uint8_t *dg, size_t len,
                        const uint8_t nonce[4], uint8_t *out, size_t cap);

/** Called for each datagram of an answer; data is valid during the call. */
typedef void (*qk_dns_dgram_fn)(void *ctx, const uint8_t *data, size_t len);

/**
 * Take a response: check it answers one of our queries (QR, question under
 * our domain with our client id), and call fn for every datagram in its TXT
 * answer. Returns the number of datagrams (0: an empty answer or NODATA),
 * QK_ERR_IGNORE (not a response to us), QK_ERR_PROTOCOL_VIOLATION (an
 * error rcode or malformed payload).
 */
int qk_dns_client_response(const qk_dns_client *c, const uint8_t *msg, size_t len,
                           qk_dns_dgram_fn fn, void *ctx);

/* ------------------------------------------------------------------------ */
/* Server                                                                   */
/* ------------------------------------------------------------------------ */

/** Server settings; zero fields take the defaults. */
typedef struct qk_dns_server_config {
    const char *domain;  /**< the zone we are authoritative for (required) */
    qk_time patience_ns; /**< longest a query waits for data (default 30 ms) */
    uint32_t rate_qps;   /**< per-client query rate limit (default 20000/s) */
    uint32_t rate_burst; /**< token bucket depth (default 2000) */
    size_t max_clients;  /**< clients tracked at once (default 64) */
    size_t queue_pkts;   /**< downstream datagrams queued per client (default 64) */
    size_t max_held;     /**< queries held per client (default 256) */
} qk_dns_server_config;

/** Server counters. */
typedef struct qk_dns_server_stats {
    uint64_t queries;      /**< well-formed queries for our zone */
    uint64_t data_queries; /**< carrying a datagram */
    uint64_t polls;
    uint64_t duplicates;    /**< a name seen before (resolver retransmit) */
    uint64_t replayed;      /**< duplicates answered with the data sent before */
    uint64_t answers_data;  /**< TXT answers with at least one datagram */
    uint64_t answers_empty; /**< TXT answers without (patience ran out) */
    uint64_t dgrams_down;   /**< datagrams sent in answers */
    uint64_t other;         /**< NXDOMAIN / NODATA / SOA / NS / REFUSED / FORMERR answers */
    uint64_t rate_limited;  /**< queries dropped by the per-client limit */
    uint64_t dropped_down;  /**< downstream datagrams dropped (queue full, too large) */
    uint64_t malformed;     /**< messages dropped or answered FORMERR */
} qk_dns_server_stats;

typedef struct qk_dns_server qk_dns_server;

/** One upstream datagram taken from a query. */
typedef struct qk_dns_upstream {
    qk_addr client;      /**< the client's stable synthetic address (fd00::/96 + id) */
    const uint8_t *data; /**< valid until the next call into the server */
    size_t len;
} qk_dns_upstream;

/**
 * Create a server. Returns 0 and sets *out, QK_ERR_INVALID_ARG (no or bad
 * domain), QK_ERR_NOMEM.
 */
int qk_dns_server_new(const qk_dns_server_config *cfg, qk_dns_server **out);

/** Free s. NULL is a no-op. */
void qk_dns_server_del(qk_dns_server *s);

/**
 * Take one message from a resolver at address from. A query carrying a
 * datagram seen for the first time fills *up and returns 1; otherwise
 * returns 0 (a poll, a duplicate, a non-carrier query answered at once, a
 * rate-limited or malformed message). Never fails.
 */
int qk_dns_server_on_query(qk_dns_server *s, const uint8_t *msg, size_t len, const qk_addr *from,
                           qk_time now, qk_dns_upstream *up);

/**
 * Queue a downstream datagram for the client at synthetic address to.
 * Returns 0, QK_ERR_NOT_FOUND (no such client), QK_ERR_TOO_LARGE (over
 * QK_DNS_SERVER_DGRAM_MAX), QK_ERR_LIMIT (its queue is full; dropped).
 */
int qk_dns_server_push(qk_dns_server *s, const qk_addr *to, const uint8_t *dg, size_t len);

/** True when some client has held queries and room in its queue (worth asking QUIC for data). */
bool qk_dns_server_wants_data(const qk_dns_server *s);

/**
 * The next response due at now into buf (cap bytes), its destination in *to.
 * Returns its length, 0 when nothing is due.
 */
size_t qk_dns_server_next_response(qk_dns_server *s, qk_time now, uint8_t *buf, size_t cap,
                                   qk_addr *to);

/** When the oldest held query runs out of patience (QK_TIME_INFINITE: none held). */
qk_time qk_dns_server_next_timeout(const qk_dns_server *s);

/** Copy the counters. */
void qk_dns_server_get_stats(const qk_dns_server *s, qk_dns_server_stats *out);

/**
 * The carrier payload of a query name under domain (the labels before it,
 * base32-decoded, either case). Returns its length, QK_ERR_NOT_FOUND (not
 * under domain, or the domain itself), QK_ERR_PROTOCOL_VIOLATION (not
 * base32), QK_ERR_BUFFER_TOO_SMALL.
 */
int qk_dns_name_payload(const qk_dns_name *name, const qk_dns_name *domain, uint8_t *out,
                        size_t cap);

/** Synthetic address of client id (fd00::/96 + id, port 53). */
void qk_dns_client_addr(uint32_t id, qk_addr *out);

/** The client id of a synthetic address. Returns 0 or QK_ERR_NOT_FOUND (not one). */
int qk_dns_addr_client(const qk_addr *a, uint32_t *id);

#endif
