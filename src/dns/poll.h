/* The DNS carrier's poll policy (client side), after dnstt (seed 004).
 *
 * The server can only send in answer to a query, so the client's queries
 * are the downstream window. A poll is an empty query. Policy:
 *  - every answer that carried data earns polls_per_response polls (the
 *    first replaces the query that just returned, the second grows the
 *    number in flight with the rate data arrives, like slow start counting
 *    messages; RFC 5681 §3.1 eq. 2 is the analogy dnstt draws);
 *  - with ack_as_poll, an outgoing data query (QUIC's ACKs, mostly) uses up
 *    one earned poll: it reaches the server just as well;
 *  - at most burst_cap polls are owed at once (dnstt's pollLimit, 16);
 *  - when nothing has been sent for idle_ns, one poll goes out and the
 *    idle delay doubles up to idle_max_ns; data or any sent query resets it.
 * Sans-I/O: the caller passes its clock. */
#ifndef QK_DNS_POLL_H
#define QK_DNS_POLL_H

#include <quack/common.h>
#include <stdbool.h>

#define QK_DNS_POLL_BURST_CAP 16
#define QK_DNS_POLL_IDLE_NS   (500 * QK_NS_PER_MS)
#define QK_DNS_POLL_IDLE_MAX  (10 * QK_NS_PER_S)

typedef struct qk_dns_poll_config {
    unsigned polls_per_response; /**< 0, 1 or 2 (default 2 via qk_dns_poll_config_default) */
    bool ack_as_poll;            /**< an outgoing data query replaces an owed poll */
    unsigned burst_cap;          /**< polls owed at most (default 16) */
    qk_time idle_ns;             /**< first idle poll delay (default 500 ms) */
    qk_time idle_max_ns;         /**< idle back-off cap (default 10 s) */
} qk_dns_poll_config;

typedef struct qk_dns_poll_stats {
    uint64_t polls_sent;      /**< empty queries */
    uint64_t idle_polls;      /**< of those, sent by the idle timer */
    uint64_t acks_as_polls;   /**< owed polls a data query replaced */
    uint64_t capped;          /**< polls not owed because of the burst cap */
    uint64_t responses_data;  /**< answers with at least one datagram */
    uint64_t responses_empty; /**< answers without */
} qk_dns_poll_stats;

typedef struct qk_dns_poll {
    qk_dns_poll_config cfg;
    unsigned owed;      /* polls to send now */
    qk_time idle_delay; /* current idle delay */
    qk_time idle_at;    /* next idle poll */
    qk_dns_poll_stats st;
} qk_dns_poll;

/** Defaults: 2 polls per data response, ACK-as-poll on, burst cap 16, 500 ms .. 10 s. */
void qk_dns_poll_config_default(qk_dns_poll_config *cfg);

/** Start at now (the idle timer runs from now). Zero fields of cfg take the defaults. */
void qk_dns_poll_init(qk_dns_poll *p, const qk_dns_poll_config *cfg, qk_time now);

/** An answer arrived; data says whether it carried at least one datagram. */
void qk_dns_poll_on_response(qk_dns_poll *p, bool data, qk_time now);

/** A query carrying a datagram was sent. */
void qk_dns_poll_on_data_sent(qk_dns_poll *p, qk_time now);

/** Whether a poll should go out now; if true, it is counted as sent. */
bool qk_dns_poll_take(qk_dns_poll *p, qk_time now);

/** When the next poll is due (now if polls are owed). */
qk_time qk_dns_poll_next_timeout(const qk_dns_poll *p, qk_time now);

#endif
