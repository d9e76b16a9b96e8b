/* SPDX-License-Identifier: MIT */
/* A client and a server endpoint joined by an in-memory path with a fixed
 * one-way delay, driven on a virtual clock (like quinn-proto's test Pair).
 * For end-to-end tests of the connection without the full simulator. */
#ifndef QK_PAIR_H
#define QK_PAIR_H

#include <quack/quack.h>
#include <stdbool.h>

#define QK_PAIR_MAX_INFLIGHT 4096

typedef struct qk_pair_pkt {
    qk_time at;
    bool to_server;
    size_t len;
    uint8_t ecn;
    uint8_t data[1500];
} qk_pair_pkt;

/** Optional filter: return false to drop a datagram (idx counts per direction). */
typedef bool (*qk_pair_filter)(void *ctx, bool to_server, uint64_t idx, uint8_t *data, size_t *len);

typedef struct qk_pair {
    qk_config ccfg, scfg;
    qk_endpoint *client, *server;
    qk_conn *cconn; /* client's connection */
    qk_conn *sconn; /* server's accepted connection (after the first event) */
    qk_addr caddr, saddr;
    qk_time now;
    qk_time delay_ns;  /* one-way */
    uint64_t rate_bps; /* 0 = infinite; bits per second, serialisation per direction */
    qk_time busy_until[2];
    qk_pair_pkt *q; /* in flight */
    size_t nq;
    uint64_t sent_idx[2];
    uint64_t bytes[2]; /* bytes delivered per direction: [0] to server, [1] to client */
    qk_pair_filter filter;
    void *filter_ctx;
    uint64_t rng_c, rng_s;
    char *cert_pem, *key_pem;
    /* Events collected by qk_pair_step for tests to inspect. */
    qk_event cev[256], sev[256];
    size_t ncev, nsev;
} qk_pair;

/** An IPv4 test address 10.0.0.last:port. */
void qk_pair_set_addr(qk_addr *a, uint8_t last, uint16_t port);

/** Create a pair: configs start from qk_config_default(); adjust p->ccfg/scfg then qk_pair_start.
 */
int qk_pair_init(qk_pair *p, qk_time delay_ns);
/** Create endpoints and start the client connection. */
int qk_pair_start(qk_pair *p);
void qk_pair_free(qk_pair *p);
/** Advance to the next event (delivery or timer). Returns false when nothing is scheduled. */
bool qk_pair_step(qk_pair *p);
/** Step until cond(p, ctx) or the virtual deadline. Returns true if cond became true. */
bool qk_pair_run_until(qk_pair *p, bool (*cond)(qk_pair *, void *), void *ctx, qk_time deadline);
/** Run-until condition: both sides established and the client's handshake confirmed. */
bool qk_pair_confirmed(qk_pair *p, void *ctx);
/** The client's CLOSED event, or NULL. */
const qk_event *qk_pair_client_closed(qk_pair *p);
/** Run-until condition: the client reported CLOSED. */
bool qk_pair_client_gone(qk_pair *p, void *ctx);
/** Drive both endpoints' sends at the current time (after app writes). */
void qk_pair_flush(qk_pair *p);

/** The download tests' request: open a client bidirectional stream and send
 * the 8 bytes "download" with FIN. Returns 0, or the error of
 * qk_stream_open / a short write (QK_ERR_STATE). */
int qk_pair_request_download(qk_pair *p, uint64_t *sid);

/** The server's side of that request: read (and drop) up to its 8 bytes from
 * stream sid of conn s. Returns qk_stream_read's result (8 once it is all
 * there). */
long qk_pair_read_request(qk_conn *s, uint64_t sid);

/** A filter that drops 5% of the datagrams both ways at random; filter_ctx
 * is the uint64_t state of qk_test_rand64. */
bool qk_pair_loss5_filter(void *ctx, bool to_server, uint64_t idx, uint8_t *data, size_t *len);

/** Delivers to the client a Version Negotiation packet that echoes the CIDs
 * of its current Initials (RFC 8999 §6) and lists the n versions. Returns
 * qk_endpoint_recv's result, or QK_ERR_INVALID_ARG when it does not encode. */
int qk_pair_deliver_vn(qk_pair *p, const uint32_t *versions, size_t n);

/** Write qk_test_pattern bytes [*written, total) to stream sid until the
 * stream stops taking them (flow control, send buffer); the FIN goes with
 * the last byte. Advances *written. */
void qk_pair_write_pattern(qk_conn *c, uint64_t sid, size_t total, size_t *written);
/** Read everything readable from stream sid, checking each byte against
 * qk_test_pattern at its offset (*read); sets *mismatch on a wrong byte.
 * Returns true once the FIN has been read. */
bool qk_pair_read_pattern(qk_conn *c, uint64_t sid, size_t *read, bool *mismatch);

#endif
