/* SPDX-License-Identifier: MIT */
/** @file
 * quack — glue between an endpoint and a qk_io_loop: a qk_io_driver_ops
 * implementation that feeds received datagrams to a qk_endpoint, pulls its
 * datagrams into UDP GSO batches, and lets the application drain events
 * after every step. For programs that run one endpoint on one socket and
 * let libev own the loop (examples/echo_server.c); a program with its own
 * loop calls the endpoint directly (examples/poll_client.c). */
#ifndef QUACK_DRIVER_H
#define QUACK_DRIVER_H

#include <quack/io.h>
#include <quack/quack.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Called after the endpoint received datagrams, ran its timers, or before a
 * send batch is built: the application drains qk_endpoint_poll_event() and
 * queues stream data. Return true when it queued something new (the driver
 * then tries to send again). No error codes.
 */
typedef bool (*qk_io_ep_app_fn)(void *app, qk_endpoint *ep, qk_time now);

/** Counters of the glue. */
typedef struct qk_io_ep_stats {
    uint64_t rx_datagrams; /**< datagrams handed to qk_endpoint_recv */
    uint64_t tx_datagrams; /**< datagrams produced by qk_endpoint_send */
    uint64_t tx_batches;   /**< loop entries filled (a GSO batch counts once) */
    uint64_t tx_carried;   /**< datagrams that did not fit a batch and opened the next */
} qk_io_ep_stats;

/** The glue state. Embed it; pass &qk_io_ep_driver_ops and the struct to qk_io_loop_new. */
typedef struct qk_io_ep_driver {
    qk_endpoint *ep;           /**< the endpoint driven (not owned) */
    size_t datagram_max_bytes; /**< capacity offered to qk_endpoint_send per datagram */
    qk_io_ep_app_fn app_fn;    /**< may be NULL */
    void *app;                 /**< passed to app_fn */
    uint8_t *carry;            /**< one datagram that ended a batch (datagram_max_bytes) */
    qk_datagram carry_d;       /**< the carried datagram's addresses and length */
    bool has_carry;            /**< carry holds a datagram */
    qk_io_ep_stats stats;      /**< counters, read them any time */
    /** Optional: offered each received datagram first; returning true means
     * it was taken elsewhere (e.g. handed to the worker thread that owns its
     * connection ID) and is not given to ep. NULL = none. */
    bool (*steer)(void *steer_ctx, const qk_datagram *d, qk_time now);
    void *steer_ctx; /**< passed to steer */
} qk_io_ep_driver;

/** The ops table to give qk_io_loop_new together with a qk_io_ep_driver. */
extern const qk_io_driver_ops qk_io_ep_driver_ops;

/**
 * Initialise d for endpoint ep. datagram_max_bytes is the largest datagram
 * the endpoint may produce (its max_udp_payload_bytes; 1200..65527).
 * Returns 0, QK_ERR_INVALID_ARG or QK_ERR_NOMEM.
 */
int qk_io_ep_driver_init(qk_io_ep_driver *d, qk_endpoint *ep, size_t datagram_max_bytes,
                         qk_io_ep_app_fn app_fn, void *app);

/** Free what qk_io_ep_driver_init allocated (not the endpoint). */
void qk_io_ep_driver_free(qk_io_ep_driver *d);

#ifdef __cplusplus
}
#endif

#endif
