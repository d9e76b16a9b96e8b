/* SPDX-License-Identifier: MIT */
/** @file
 * quack — a server on every core: N worker threads, each with its own
 * endpoint, libev loop and UDP socket bound with SO_REUSEPORT to the same
 * address. Every connection ID a worker issues carries its index in clear
 * (qk_config.cid_encode_server_id, QUIC-LB plaintext format), so a datagram
 * that the kernel's 4-tuple hash delivers to another worker (after a client
 * migrated or a NAT rebound) is handed to the owner through a
 * mutex-protected queue and an ev_async wake-up, and counted as steered.
 * Datagrams without such a DCID (a client's first Initials) stay where the
 * kernel put them. Session-ticket keys and the 0-RTT anti-replay store
 * (qk_ticket_keys) and the static key (reset tokens, Retry and NEW_TOKEN
 * tokens) are shared by all workers, so what one issues the others accept.
 * The library stays thread-unaware: each endpoint is used by one thread.
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: qk_workers_break may be called from any
 * thread or a signal handler; the other functions from the thread that
 * created the workers.
 */
#ifndef QUACK_WORKERS_H
#define QUACK_WORKERS_H

#include <quack/driver.h>
#include <quack/io.h>
#include <quack/quack.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most workers qk_workers_new accepts. */
#define QK_WORKERS_MAX 64

/** A set of worker threads (opaque; qk_workers_new, qk_workers_del). */
typedef struct qk_workers qk_workers;

/** What the application does in each worker (all run in that worker's thread,
 * except start, which runs before the threads are started). */
typedef struct qk_workers_app {
    /** Per-worker application state for endpoint ep of worker index; NULL
     * fails qk_workers_new with QK_ERR_NOMEM. */
    void *(*start)(void *user, unsigned index, qk_endpoint *ep);
    /** The driver's application step (qk_io_ep_app_fn) with that state. */
    qk_io_ep_app_fn step;
    /** After the worker's loop ended and before its endpoint is freed (may be NULL). */
    void (*stop)(void *user, unsigned index, void *app);
    void *user; /**< passed to start and stop */
} qk_workers_app;

/** Counters, summed over the workers or per worker. */
typedef struct qk_workers_stats {
    uint64_t steered_short; /**< 1-RTT datagrams handed to the worker owning their DCID */
    uint64_t steered_long;  /**< long-header datagrams likewise (after a Retry, say) */
    uint64_t steer_dropped; /**< owner's queue full: dropped (QUIC recovers) */
    uint64_t rx_datagrams;  /**< datagrams read from this worker's socket */
} qk_workers_stats;

/**
 * Open n (1..QK_WORKERS_MAX) sockets on bind (SO_REUSEPORT; udp_flags as
 * qk_udp_open, e.g. QK_UDP_DUALSTACK) and n endpoints from cfg (copied; its
 * cid_encode_server_id / cid_server_id are set per worker; a server without
 * ticket_keys gets one shared set, and a zero static_key is replaced by one
 * random key for all). Port 0 picks one free port for all. Returns 0 and
 * *out, QK_ERR_INVALID_ARG, QK_ERR_CONFIG (cfg refused: qk_config_check),
 * QK_ERR_NOMEM, QK_ERR_IO (socket; errno tells), QK_ERR_UNSUPPORTED (cfg
 * sets a field this library is too old to know). A macro: qk_workers_new_ex
 * with no failed_socket.
 */
#define qk_workers_new(cfg, bind, udp_flags, n, app, out)                                          \
    qk_workers_new_ex((cfg), (bind), (udp_flags), (n), (app), NULL, (out))

/** A udp_flags bit of qk_workers_new_ex: no kernel steering (the
 * SO_ATTACH_REUSEPORT_EBPF program), user-space steering only (since 1.1). */
#define QK_WORKERS_NO_BPF (1u << 31)

/** How datagrams reach the worker their DCID names (qk_workers_steering). */
enum {
    QK_WORKERS_STEER_NONE = 0,   /**< one worker: nothing to steer */
    QK_WORKERS_STEER_USER = 1,   /**< the receiving worker hands them over (a queue, a wake-up) */
    QK_WORKERS_STEER_KERNEL = 2, /**< a SO_REUSEPORT BPF program delivers short-header datagrams
                                      to the owner's socket; user space steers what it misses */
};

/**
 * Which steering is in use (QK_WORKERS_STEER_*) and, in *why (may be NULL;
 * a static string), the reason: "SO_ATTACH_REUSEPORT_EBPF" for the kernel,
 * else why not (turned off by QK_WORKERS_NO_BPF, encrypted QUIC-LB CIDs the
 * program cannot read, built without libbpf, or the kernel's refusal, e.g.
 * without CAP_BPF). With n > 1 and a readable CID format, qk_workers_new
 * loads its SK_REUSEPORT program (docs/io.md) and attaches it to the listen
 * and preferred-address groups. Never fails (since 1.1).
 */
int qk_workers_steering(const qk_workers *w, const char **why);

/** Which socket qk_workers_new_ex could not open. */
enum {
    QK_WORKERS_SOCKET_NONE = 0,     /**< none failed (or not an I/O error) */
    QK_WORKERS_SOCKET_LISTEN,       /**< bind */
    QK_WORKERS_SOCKET_PREFERRED_V4, /**< cfg->preferred_addr_v4 */
    QK_WORKERS_SOCKET_PREFERRED_V6, /**< cfg->preferred_addr_v6 */
};

/**
 * qk_workers_new with a report of which bind failed. Both: when cfg has a preferred address
 * (preferred_addr_v4 / _v6, RFC 9000 §9.6), every worker binds a socket
 * there too (SO_REUSEPORT with n > 1; an IPv4 one v4-mapped when bind is
 * IPv6), its datagrams are steered like the listen socket's, and the
 * endpoints advertise the address worker 0 bound (qk_workers_preferred_addr).
 * The preferred-address CID carries the worker index like every other.
 * On QK_ERR_IO, *failed_socket (may be NULL) names the socket that could not
 * be bound (QK_WORKERS_SOCKET_*). Returns as qk_workers_new. cfg_bytes and
 * app_bytes: the caller's sizeof of each (see @ref abi "ABI").
 */
int qk_workers_new_ex_sized(const qk_config *cfg, size_t cfg_bytes, const qk_addr *bind,
                            unsigned udp_flags, unsigned n, const qk_workers_app *app,
                            size_t app_bytes, unsigned *failed_socket, qk_workers **out);

/** qk_workers_new_ex_sized() with the caller's sizeof(qk_config) and
 * sizeof(qk_workers_app). */
#define qk_workers_new_ex(cfg, bind, udp_flags, n, app, failed_socket, out)                        \
    qk_workers_new_ex_sized((cfg), sizeof(qk_config), (bind), (udp_flags), (n), (app),             \
                            sizeof(qk_workers_app), (failed_socket), (out))

/** The bound preferred address of family 0 (IPv4) or 1 (IPv6): true and
 * *out, or false when there is none. */
bool qk_workers_preferred_addr(const qk_workers *w, unsigned family, qk_addr *out);

/** The address the sockets are bound to. */
void qk_workers_local_addr(const qk_workers *w, qk_addr *out);

/**
 * Run worker 0 in the calling thread and the others in their own threads
 * until SIGINT/SIGTERM or qk_workers_break(); then stop and join all.
 * Returns 0, QK_ERR_NOMEM or QK_ERR_STATE (a thread could not start).
 */
int qk_workers_run(qk_workers *w);

/** Stop every worker's loop (any thread, or a signal handler). */
void qk_workers_break(qk_workers *w);

/** Worker i's endpoint (NULL past the count). Only its own thread may drive it
 * while running; after qk_workers_run returned anyone may read it. */
qk_endpoint *qk_workers_endpoint(qk_workers *w, unsigned i);

/** Worker i's loop (NULL past the count): e.g. to start a timer on
 * qk_io_loop_ev() before qk_workers_run (it then runs in that worker's
 * thread; stop it before qk_workers_del), or, after run returned, to ask
 * qk_io_loop_stop_signal() of worker 0 (which takes SIGINT/SIGTERM). */
qk_io_loop *qk_workers_loop(qk_workers *w, unsigned i);

/** Number of workers. */
unsigned qk_workers_count(const qk_workers *w);

/** Counters of worker i, or the sum over all with i = UINT32_MAX, into the
 * out_bytes the caller's struct has (use the macro qk_workers_get_stats()). */
void qk_workers_get_stats_sized(const qk_workers *w, unsigned i, qk_workers_stats *out,
                                size_t out_bytes);

/** qk_workers_get_stats_sized() with the caller's sizeof(qk_workers_stats). */
#define qk_workers_get_stats(w, i, out)                                                            \
    qk_workers_get_stats_sized((w), (i), (out), sizeof(qk_workers_stats))

/** Free everything (after run returned; NULL ok): stop callbacks were run by run. */
void qk_workers_del(qk_workers *w);

#ifdef __cplusplus
}
#endif
#endif
