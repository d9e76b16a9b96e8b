/* SPDX-License-Identifier: MIT */
/** @file
 * quack — glue between an endpoint and a qk_io_loop: a qk_io_driver_ops
 * implementation that feeds received datagrams to a qk_endpoint, pulls its
 * datagrams into UDP GSO batches, and lets the application drain events
 * after every step. For programs that run one endpoint on one socket and
 * let libev own the loop (examples/echo_server.c); a program with its own
 * loop calls the endpoint directly (examples/poll_client.c).
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: a driver, its endpoint and its loop
 * are used only from the thread that runs the loop.
 */
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

/** The glue state (opaque; qk_io_ep_driver_new, qk_io_ep_driver_del). */
typedef struct qk_io_ep_driver qk_io_ep_driver;

/**
 * Make the glue for endpoint ep (not owned). datagram_max_bytes is the
 * largest datagram the endpoint may produce (its max_udp_payload_bytes;
 * 1200..65527); app_fn (may be NULL) is called with app after every step.
 * Returns 0 and sets *out, QK_ERR_INVALID_ARG or QK_ERR_NOMEM.
 */
int qk_io_ep_driver_new(qk_endpoint *ep, size_t datagram_max_bytes, qk_io_ep_app_fn app_fn,
                        void *app, qk_io_ep_driver **out);

/** Free d (not the endpoint; delete the loop driving it first). NULL is a no-op. */
void qk_io_ep_driver_del(qk_io_ep_driver *d);

/**
 * Create a qk_io_loop driving d over socket u (as qk_io_loop_new with the
 * glue's callbacks; cfg may be NULL, cfg_bytes is the caller's
 * sizeof(qk_io_loop_config)). Returns what qk_io_loop_new_sized returns:
 * 0, QK_ERR_INVALID_ARG, QK_ERR_UNSUPPORTED or QK_ERR_NOMEM.
 */
int qk_io_ep_driver_loop_new_sized(qk_io_ep_driver *d, qk_udp *u, const qk_io_loop_config *cfg,
                                   size_t cfg_bytes, qk_io_loop **out);

/** qk_io_ep_driver_loop_new_sized() with the caller's sizeof(qk_io_loop_config). */
#define qk_io_ep_driver_loop_new(d, u, cfg, out)                                                   \
    qk_io_ep_driver_loop_new_sized((d), (u), (cfg), sizeof(qk_io_loop_config), (out))

/** Called for each received datagram before the endpoint sees it; return
 * true when it was taken elsewhere (e.g. handed to the worker thread that
 * owns its connection ID) and is not given to the endpoint. */
typedef bool (*qk_io_ep_steer_fn)(void *steer_ctx, const qk_datagram *d, qk_time now);

/** Offer each received datagram to steer(steer_ctx, ...) first (NULL = none). */
void qk_io_ep_driver_set_steer(qk_io_ep_driver *d, qk_io_ep_steer_fn steer, void *steer_ctx);

/** The counters into out (out_bytes: the caller's sizeof(qk_io_ep_stats)). */
void qk_io_ep_driver_get_stats_sized(const qk_io_ep_driver *d, qk_io_ep_stats *out,
                                     size_t out_bytes);

/** qk_io_ep_driver_get_stats_sized() with the caller's sizeof(qk_io_ep_stats). */
#define qk_io_ep_driver_get_stats(d, out)                                                          \
    qk_io_ep_driver_get_stats_sized((d), (out), sizeof(qk_io_ep_stats))

#ifdef __cplusplus
}
#endif

#endif
