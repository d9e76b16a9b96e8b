/* SPDX-License-Identifier: MIT */
/** @file
 * quack — the DNS carrier (docs/dns.md), sans-I/O.
 *
 * QUIC datagrams travel in DNS through recursive resolvers: the client puts
 * each datagram in one query name (base32 in labels under the tunnel domain,
 * QTYPE TXT, EDNS(0) 1232), the server, authoritative for the domain, answers
 * each query with a TXT record holding the downstream datagrams that fit. The
 * server can only speak when asked, so the client's poll policy (empty
 * queries) is the downstream window, as in dnstt.
 *
 * Three pieces, none doing I/O (the caller owns sockets and clocks):
 *  - the client codec (qk_dns_client): datagram -> query, answer -> datagrams;
 *  - the poll policy (qk_dns_poll): when to send empty queries;
 *  - the server (qk_dns_server): queries in, upstream datagrams out,
 *    downstream datagrams queued and sent in answers to held queries.
 * The QUIC endpoints on both ends run the carrier's profile (docs/dns.md):
 * qk_config.min_datagram_bytes lowered to fit one query name.
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: each qk_dns_client, qk_dns_poll and
 * qk_dns_server is used by one thread at a time; different objects may be
 * used from different threads at once.
 */
#ifndef QUACK_DNS_H
#define QUACK_DNS_H

#include <quack/common.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest query name, text form (255 bytes on the wire; RFC 1035 §2.3.4). */
#define QK_DNS_MAX_QNAME_TEXT 253
/** Shortest name limit the client accepts: below it hardly a datagram fits. */
#define QK_DNS_MIN_QNAME_TEXT 60
/** EDNS(0) payload size the client advertises (DNS flag day 2020). */
#define QK_DNS_EDNS_BYTES 1232
/** Largest downstream QUIC datagram (fits a 1232-byte answer; docs/dns.md). */
#define QK_DNS_SERVER_DGRAM_MAX 900
/** Largest DNS message either side builds or reads. */
#define QK_DNS_MAX_MSG_BYTES 4096
/** Server default: longest a query is held for data. Short, or unbound's
 * timeouts and retransmissions cut the rate (docs/experiments/dns.md). */
#define QK_DNS_PATIENCE_NS (30 * QK_NS_PER_MS)

/** Poll policy default: polls owed at most (dnstt's pollLimit). */
#define QK_DNS_POLL_BURST_CAP 16
/** Poll policy default: first idle poll delay (dnstt's). */
#define QK_DNS_POLL_IDLE_NS (500 * QK_NS_PER_MS)
/** Poll policy default: idle back-off cap, in nanoseconds (dnstt's). */
#define QK_DNS_POLL_IDLE_MAX (10 * QK_NS_PER_S)

/* ------------------------------------------------------------------------ */
/* Names                                                                    */
/* ------------------------------------------------------------------------ */

/**
 * Check a tunnel domain ("t.example.com"): a valid name of at least one
 * label. Returns 0 or QK_ERR_INVALID_ARG.
 */
int qk_dns_domain_check(const char *domain);

/**
 * The largest QUIC datagram one query carries under domain with names of at
 * most max_qname text characters (0 = QK_DNS_MAX_QNAME_TEXT): what the
 * client's qk_config.max_udp_payload_bytes should be. Returns the byte
 * count, or QK_ERR_INVALID_ARG (bad domain, max_qname outside
 * QK_DNS_MIN_QNAME_TEXT..QK_DNS_MAX_QNAME_TEXT or leaving under 32 bytes).
 */
int qk_dns_datagram_bytes(const char *domain, size_t max_qname);

/** The synthetic address of client id (fd00::/96 + id, port 53): the peer
 * address the server's endpoint sees for that client, and the one the client
 * connects to (id 0) to reach the server. */
void qk_dns_client_addr(uint32_t id, qk_addr *out);

/** The client id of a synthetic address. Returns 0 or QK_ERR_NOT_FOUND (not one). */
int qk_dns_addr_client(const qk_addr *a, uint32_t *id);

/* ------------------------------------------------------------------------ */
/* Client codec                                                             */
/* ------------------------------------------------------------------------ */

/** A client codec (opaque; qk_dns_client_new, qk_dns_client_del). */
typedef struct qk_dns_client qk_dns_client;

/**
 * Create a client codec for domain, names of at most max_qname text
 * characters (0 = 253), client id id (its low 16 bits go in every name).
 * Returns 0 and sets *out, QK_ERR_INVALID_ARG (as qk_dns_datagram_bytes),
 * QK_ERR_NOMEM.
 */
int qk_dns_client_new(const char *domain, size_t max_qname, uint32_t id, qk_dns_client **out);

/** Free c. NULL is a no-op. */
void qk_dns_client_del(qk_dns_client *c);

/** The largest datagram a query of c carries. */
size_t qk_dns_client_max_datagram(const qk_dns_client *c);

/**
 * Build a query with DNS id qid carrying datagram dg (len bytes), or a poll
 * (dg NULL, len 0) made unique by nonce (so no cache answers it). Returns
 * the message length, or QK_ERR_TOO_LARGE (len above
 * qk_dns_client_max_datagram), QK_ERR_BUFFER_TOO_SMALL (cap).
 */
int qk_dns_client_query(const qk_dns_client *c, uint16_t qid, const uint8_t *dg, size_t len,
                        const uint8_t nonce[4], uint8_t *out, size_t cap);

/** Called for each datagram of an answer; data is valid during the call. */
typedef void (*qk_dns_dgram_fn)(void *ctx, const uint8_t *data, size_t len);

/**
 * Take a response: check it answers one of c's queries (QR set, question
 * under the domain with c's client id), and call fn for every datagram in
 * its TXT answer. Returns the number of datagrams (0: an empty answer or
 * NODATA), QK_ERR_IGNORE (not a response to us), QK_ERR_PROTOCOL_VIOLATION
 * (an error rcode or a malformed payload).
 */
int qk_dns_client_response(const qk_dns_client *c, const uint8_t *msg, size_t len,
                           qk_dns_dgram_fn fn, void *ctx);

/* ------------------------------------------------------------------------ */
/* Poll policy (client side), after dnstt                                   */
/* ------------------------------------------------------------------------ */
/* The server can only send in answer to a query, so the client's queries are
 * the downstream window. A poll is an empty query. Policy:
 *  - every answer that carried data earns polls_per_response polls (the first
 *    replaces the query that just returned, the second grows the number in
 *    flight with the rate data arrives, like slow start counting messages;
 *    RFC 5681 §3.1 eq. 2 is the analogy dnstt draws);
 *  - with ack_as_poll, an outgoing data query (QUIC's ACKs, mostly) uses up
 *    one earned poll: it reaches the server just as well;
 *  - at most burst_cap polls are owed at once (dnstt's pollLimit, 16);
 *  - when nothing has been sent for idle_ns, one poll goes out and the idle
 *    delay doubles up to idle_max_ns; data or any sent query resets it;
 *  - for idle_ns after an answer with data, the idle timer polls every
 *    50 ms (the server may still owe a retransmission, and can send it only
 *    into a held query), without backing off;
 *  - a data query after a lull (no answer with data for idle_ns) takes polls
 *    along up to 10 queries (the server's initial window, RFC 9002 §7.2),
 *    once a lull, at most burst_cap, none with polls_per_response 0. */

/** Poll policy settings; zero fields take the defaults (polls_per_response: use
 * qk_dns_poll_config_default for the default 2). */
typedef struct qk_dns_poll_config {
    unsigned polls_per_response; /**< 0, 1 or 2 */
    bool ack_as_poll;            /**< an outgoing data query replaces an owed poll */
    unsigned burst_cap;          /**< polls owed at most (default 16) */
    qk_time idle_ns;             /**< first idle poll delay (default 500 ms) */
    qk_time idle_max_ns;         /**< idle back-off cap (default 10 s) */
} qk_dns_poll_config;

/** Poll policy counters, and two gauges. */
typedef struct qk_dns_poll_stats {
    uint64_t polls_sent;      /**< empty queries */
    uint64_t idle_polls;      /**< of those, sent by the idle timer */
    uint64_t acks_as_polls;   /**< owed polls a data query replaced */
    uint64_t capped;          /**< polls not owed because of the burst cap */
    uint64_t responses_data;  /**< answers with at least one datagram */
    uint64_t responses_empty; /**< answers without */
    uint64_t owed_now;        /**< polls to send now */
    qk_time idle_delay_ns;    /**< the idle delay now (backs off while nothing happens) */
} qk_dns_poll_stats;

/** Poll policy state (opaque; qk_dns_poll_new, qk_dns_poll_del). */
typedef struct qk_dns_poll qk_dns_poll;

/** Defaults: 2 polls per data response, ACK-as-poll on, burst cap 16, 500 ms .. 10 s.
 * cfg_bytes is the caller's sizeof(qk_dns_poll_config) (fields this library does
 * not know come back zero). */
void qk_dns_poll_config_default_sized(qk_dns_poll_config *cfg, size_t cfg_bytes);

/** qk_dns_poll_config_default_sized() with the caller's sizeof(qk_dns_poll_config). */
#define qk_dns_poll_config_default(cfg)                                                            \
    qk_dns_poll_config_default_sized((cfg), sizeof(qk_dns_poll_config))

/**
 * A poll policy starting at now (the idle timer runs from now). cfg is
 * copied (cfg_bytes of it: the caller's sizeof(qk_dns_poll_config)); zero
 * fields take the defaults. Returns 0 and sets *out, QK_ERR_INVALID_ARG
 * (NULL, or cfg_bytes below the first release's size), QK_ERR_UNSUPPORTED
 * (cfg sets a field this library does not know), QK_ERR_NOMEM.
 */
int qk_dns_poll_new_sized(const qk_dns_poll_config *cfg, size_t cfg_bytes, qk_time now,
                          qk_dns_poll **out);

/** qk_dns_poll_new_sized() with the caller's sizeof(qk_dns_poll_config). */
#define qk_dns_poll_new(cfg, now, out)                                                             \
    qk_dns_poll_new_sized((cfg), sizeof(qk_dns_poll_config), (now), (out))

/** Free p. NULL is a no-op. */
void qk_dns_poll_del(qk_dns_poll *p);

/** Copy the counters into out (out_bytes: the caller's sizeof(qk_dns_poll_stats)). */
void qk_dns_poll_get_stats_sized(const qk_dns_poll *p, qk_dns_poll_stats *out, size_t out_bytes);

/** qk_dns_poll_get_stats_sized() with the caller's sizeof(qk_dns_poll_stats). */
#define qk_dns_poll_get_stats(p, out)                                                              \
    qk_dns_poll_get_stats_sized((p), (out), sizeof(qk_dns_poll_stats))

/** An answer arrived; data says whether it carried at least one datagram. */
void qk_dns_poll_on_response(qk_dns_poll *p, bool data, qk_time now);

/** A query carrying a datagram was sent. */
void qk_dns_poll_on_data_sent(qk_dns_poll *p, qk_time now);

/** Whether a poll should go out now; if true, it is counted as sent. */
bool qk_dns_poll_take(qk_dns_poll *p, qk_time now);

/** When the next poll is due (now if polls are owed). */
qk_time qk_dns_poll_next_timeout(const qk_dns_poll *p, qk_time now);

/* ------------------------------------------------------------------------ */
/* Server                                                                   */
/* ------------------------------------------------------------------------ */

/** Server settings; zero fields take the defaults. */
typedef struct qk_dns_server_config {
    const char *domain;  /**< the zone we are authoritative for (required) */
    qk_time patience_ns; /**< longest a query waits for data (default QK_DNS_PATIENCE_NS) */
    uint32_t rate_qps;   /**< per-client query rate limit (default 20000/s) */
    uint32_t rate_burst; /**< token bucket depth (default 2000) */
    size_t max_clients;  /**< clients tracked at once (default 64) */
    size_t queue_pkts;   /**< downstream datagrams queued per client (default 256) */
    size_t max_held;     /**< queries held per client (default 256) */
} qk_dns_server_config;

/** Server counters. */
typedef struct qk_dns_server_stats {
    uint64_t queries;       /**< well-formed queries for our zone */
    uint64_t data_queries;  /**< carrying a datagram */
    uint64_t polls;         /**< empty queries (polls) */
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

/** A DNS carrier server (opaque; qk_dns_server_new, qk_dns_server_del). */
typedef struct qk_dns_server qk_dns_server;

/** One upstream datagram taken from a query. */
typedef struct qk_dns_upstream {
    qk_addr client;      /**< the client's stable synthetic address (qk_dns_client_addr) */
    const uint8_t *data; /**< valid until the next call into the server */
    size_t len;          /**< bytes of data */
} qk_dns_upstream;

/**
 * Create a server (cfg copied, cfg_bytes of it: the caller's
 * sizeof(qk_dns_server_config)). Returns 0 and sets *out, QK_ERR_INVALID_ARG
 * (no or bad domain, cfg_bytes below the first release's size),
 * QK_ERR_UNSUPPORTED (cfg sets a field this library does not know),
 * QK_ERR_NOMEM.
 */
int qk_dns_server_new_sized(const qk_dns_server_config *cfg, size_t cfg_bytes, qk_dns_server **out);

/** qk_dns_server_new_sized() with the caller's sizeof(qk_dns_server_config). */
#define qk_dns_server_new(cfg, out)                                                                \
    qk_dns_server_new_sized((cfg), sizeof(qk_dns_server_config), (out))

/** Free s. NULL is a no-op. */
void qk_dns_server_del(qk_dns_server *s);

/**
 * Take one message from a resolver at address from. A query carrying a
 * datagram seen for the first time fills *up and returns 1; otherwise
 * returns 0 (a poll, a duplicate, a non-carrier query answered at once, a
 * rate-limited or malformed message). Never fails.
 */
int qk_dns_server_on_query_sized(qk_dns_server *s, const uint8_t *msg, size_t len,
                                 const qk_addr *from, qk_time now, qk_dns_upstream *up,
                                 size_t up_bytes);

/** qk_dns_server_on_query_sized() with the caller's sizeof(qk_dns_upstream): *up
 * is filled up to the caller's size. */
#define qk_dns_server_on_query(s, msg, len, from, now, up)                                         \
    qk_dns_server_on_query_sized((s), (msg), (len), (from), (now), (up), sizeof(qk_dns_upstream))

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

/** Copy the counters into out (out_bytes: the caller's sizeof(qk_dns_server_stats)). */
void qk_dns_server_get_stats_sized(const qk_dns_server *s, qk_dns_server_stats *out,
                                   size_t out_bytes);

/** qk_dns_server_get_stats_sized() with the caller's sizeof(qk_dns_server_stats). */
#define qk_dns_server_get_stats(s, out)                                                            \
    qk_dns_server_get_stats_sized((s), (out), sizeof(qk_dns_server_stats))

#ifdef __cplusplus
}
#endif

#endif
