/* SPDX-License-Identifier: MIT */
/** @file
 * quack — real UDP sockets and a libev loop driving a sans-I/O endpoint.
 *
 * qk_udp wraps one non-blocking UDP socket (IPv4, IPv6 or dual-stack) with
 * batched I/O (recvmmsg/sendmmsg), UDP GSO on send and GRO on receive (both
 * detected at run time, with fallbacks), ECN codepoints both ways, DF set, and
 * IP_PKTINFO/IPV6_PKTINFO for wildcard-bound servers.
 *
 * qk_io_loop drives anything that implements qk_io_driver_ops (the endpoint,
 * a relay, a test echo driver) from socket readiness and one timer.
 * See docs/io.md.
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: a qk_udp and a qk_io_loop are used by
 * one thread at a time (the loop's); qk_io_now is thread-safe.
 */
#ifndef QUACK_IO_H
#define QUACK_IO_H

#include <stdbool.h>
#include <quack/common.h>
#include <quack/quack.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop; /* libev */

/* ------------------------------------------------------------------------ */
/* Addresses                                                                */
/* ------------------------------------------------------------------------ */

/** Enough room for any string qk_addr_format() produces, with the NUL. */
#define QK_ADDR_STRLEN 72

/**
 * Parse `host:port`, `[v6]:port` or `[v6%scope]:port` into out. Numeric hosts
 * are parsed directly; other names go through getaddrinfo() (blocking) and the
 * first result is used. Returns 0, or QK_ERR_INVALID_ARG for a malformed
 * string / port out of range, QK_ERR_NOT_FOUND when the name does not resolve.
 */
int qk_addr_parse(const char *s, qk_addr *out);

/**
 * Format a into buf as "1.2.3.4:443" or "[::1]:443" (v4-mapped IPv6 addresses
 * print as IPv6). Returns the string length, QK_ERR_BUFFER_TOO_SMALL when cap
 * is too small, QK_ERR_INVALID_ARG for an unspecified or unknown address.
 */
int qk_addr_format(const qk_addr *a, char *buf, size_t cap);

/* qk_addr_equal, qk_addr_same_host, qk_addr_port: include/quack/common.h. */

/**
 * Point cfg's log writers at files: one NAME.sqlog qlog per connection in
 * qlog_dir (NULL or "" = no qlog; the string must outlive every endpoint
 * made from cfg), and the TLS key log (NSS format) appended to keylog_path,
 * or to $SSLKEYLOGFILE when keylog_path is NULL or "" (neither = no key
 * log). The key-log file is opened once per process. Returns 0,
 * QK_ERR_INVALID_ARG (cfg NULL) or QK_ERR_IO (the key-log file cannot be
 * opened for appending).
 */
int qk_io_log_files(qk_config *cfg, const char *qlog_dir, const char *keylog_path);

/* ------------------------------------------------------------------------ */
/* UDP sockets                                                              */
/* ------------------------------------------------------------------------ */

/** One UDP socket with batched I/O (opaque; qk_udp_open, qk_udp_close). */
typedef struct qk_udp qk_udp;

/** Flags for qk_udp_open(). */
enum {
    QK_UDP_DUALSTACK = 1u << 0, /**< IPv6 socket also accepts IPv4 (V6ONLY off) */
    QK_UDP_REUSEPORT = 1u << 1, /**< SO_REUSEPORT */
    QK_UDP_NO_GSO = 1u << 2,    /**< never use UDP_SEGMENT (always split batches) */
    QK_UDP_NO_GRO = 1u << 3,    /**< do not enable UDP_GRO on receive */
    QK_UDP_RECVERR = 1u << 4,   /**< IP_RECVERR / IPV6_RECVERR: queue ICMP errors for
                                     qk_udp_recv_error() (clients: fail fast when nothing
                                     listens; qk_io_loop drains them) */
};

/** Socket buffer size qk_udp_open() asks for (both directions). */
#define QK_UDP_DEFAULT_BUF_BYTES (8u << 20)

/** Largest datagram / GRO batch the socket can return: size receive buffers with it. */
#define QK_UDP_MAX_PAYLOAD_BYTES 65535u

/** What the socket can do, as detected at open time (gso may turn off later). */
typedef struct qk_udp_caps {
    bool gso;                      /**< UDP_SEGMENT in use for segment batches */
    bool gro;                      /**< UDP_GRO enabled: receives may return segment batches */
    bool ecn;                      /**< TOS / traffic class received with each datagram */
    bool pktinfo;                  /**< local address reported per datagram and settable on send */
    bool dualstack;                /**< an IPv6 socket that also carries IPv4 (V6ONLY off) */
    int family;                    /**< AF_INET or AF_INET6 */
    size_t rcvbuf_requested_bytes; /**< what we asked for */
    size_t sndbuf_requested_bytes; /**< what we asked for, send side */
    size_t rcvbuf_bytes;           /**< what the kernel reports (Linux doubles the request) */
    size_t sndbuf_bytes;           /**< what the kernel reports, send side */
    bool rcvbuf_capped;            /**< the kernel gave less than requested (raise rmem_max) */
    bool sndbuf_capped;            /**< same for wmem_max */
} qk_udp_caps;

/** Counters kept by a socket. */
typedef struct qk_udp_stats {
    uint64_t recv_calls;    /**< recvmmsg syscalls */
    uint64_t send_calls;    /**< sendmmsg syscalls */
    uint64_t rx_datagrams;  /**< datagram entries returned (a GRO batch counts once) */
    uint64_t tx_datagrams;  /**< UDP datagrams put on the wire (GSO segments counted) */
    uint64_t rx_truncated;  /**< datagrams dropped because the buffer was too small */
    uint64_t gso_fallbacks; /**< times GSO was disabled after EIO/EINVAL */
} qk_udp_stats;

/**
 * Open a non-blocking UDP socket bound to bind (port 0 picks one; a wildcard
 * address enables per-datagram local addresses). Enables ECN reporting,
 * pktinfo, DF (IP_PMTUDISC_PROBE / IPV6_DONTFRAG), GRO unless QK_UDP_NO_GRO,
 * GSO unless QK_UDP_NO_GSO, and asks for QK_UDP_DEFAULT_BUF_BYTES buffers
 * (SO_RCVBUFFORCE first, then SO_RCVBUF). On a dual-stack socket IPv4 peers
 * and local addresses appear as v4-mapped IPv6 addresses.
 * Returns 0 and sets *out, or QK_ERR_INVALID_ARG (bad address / flags),
 * QK_ERR_NOMEM, QK_ERR_IO (socket/bind failed; errno preserved).
 */
int qk_udp_open(const qk_addr *bind, unsigned flags, qk_udp **out);

/** Close the socket and free it. NULL is a no-op. */
void qk_udp_close(qk_udp *u);

/**
 * Ask for other socket buffer sizes (0 leaves a direction alone); updates the
 * caps. Returns 0, or QK_ERR_IO if the kernel refuses both ways of setting it.
 */
int qk_udp_set_buffers(qk_udp *u, size_t rcvbuf_bytes, size_t sndbuf_bytes);

/** The file descriptor (for an event loop). Owned by u. Never fails. */
int qk_udp_fd(const qk_udp *u);

/** The bound local address (with the kernel-chosen port). */
void qk_udp_local_addr(const qk_udp *u, qk_addr *out);

/** Current capabilities into out (out_bytes: the caller's sizeof(qk_udp_caps);
 * nothing past it is written). */
void qk_udp_get_caps_sized(const qk_udp *u, qk_udp_caps *out, size_t out_bytes);

/** qk_udp_get_caps_sized() with the caller's sizeof(qk_udp_caps). */
#define qk_udp_get_caps(u, out) qk_udp_get_caps_sized((u), (out), sizeof(qk_udp_caps))

/** Counters since open into out (out_bytes: the caller's sizeof(qk_udp_stats)). */
void qk_udp_get_stats_sized(const qk_udp *u, qk_udp_stats *out, size_t out_bytes);

/** qk_udp_get_stats_sized() with the caller's sizeof(qk_udp_stats). */
#define qk_udp_get_stats(u, out) qk_udp_get_stats_sized((u), (out), sizeof(qk_udp_stats))

/**
 * Receive up to n datagrams with one recvmmsg(). On input d[i].data points to
 * a caller buffer and d[i].len is its capacity (use QK_UDP_MAX_PAYLOAD_BYTES
 * when caps.gro, or GRO batches may be truncated and are then dropped). On
 * output each filled entry has len, peer, local (the destination address: the
 * bound address, or the pktinfo address on a wildcard socket), ecn, and
 * segment_bytes (non-zero for a GRO batch of equal segments, the last possibly
 * shorter; see qk_datagram_segment()).
 * Returns the number filled (>= 1), QK_ERR_AGAIN when nothing is waiting,
 * QK_ERR_IO on a socket error (errno preserved).
 */
int qk_udp_recv(qk_udp *u, qk_datagram *d, size_t n);

/** An error the kernel queued for a datagram we sent (QK_UDP_RECVERR). */
typedef struct qk_udp_error {
    qk_addr peer;     /**< where the datagram that failed was going */
    int err;          /**< errno value: ECONNREFUSED (port unreachable), EHOSTUNREACH, ... */
    bool icmp;        /**< reported by an ICMP / ICMPv6 message */
    bool unreachable; /**< ICMP port unreachable: nothing listens at peer */
} qk_udp_error;

/**
 * Pop one entry of the socket's error queue (recvmsg MSG_ERRQUEUE; needs
 * QK_UDP_RECVERR). Returns 0 and fills out up to out_bytes (the caller's
 * sizeof(qk_udp_error)), QK_ERR_AGAIN when the queue is empty (or
 * QK_UDP_RECVERR is off), QK_ERR_INVALID_ARG, QK_ERR_IO. The qk_udp_error
 * given to qk_io_driver_ops.on_error is the library's: read the fields you
 * know.
 */
int qk_udp_recv_error_sized(qk_udp *u, qk_udp_error *out, size_t out_bytes);

/** qk_udp_recv_error_sized() with the caller's sizeof(qk_udp_error). */
#define qk_udp_recv_error(u, out) qk_udp_recv_error_sized((u), (out), sizeof(qk_udp_error))

/**
 * Send n datagrams with as few sendmmsg() calls as possible. An entry with
 * segment_bytes != 0 is a run of equal segments (the last may be shorter),
 * sent with one UDP_SEGMENT message per at most 64 segments / 64 KiB, or
 * split into single datagrams when GSO is unavailable (the first EIO/EINVAL
 * on a GSO message turns GSO off for good and the message is resent split).
 * Per entry: ecn sets the TOS / traffic class by cmsg (no setsockopt), a
 * non-empty local sets the source address on a pktinfo socket.
 * Returns the number of entries fully sent (n when all went out). When the
 * socket would block, entries [ret, n) are unsent; if entry ret was partly
 * sent, its data/len were advanced past the segments already sent, so calling
 * again with d + ret continues exactly. Returns QK_ERR_AGAIN when no entry
 * was completed (d[0] may still have advanced), QK_ERR_IO (errno preserved)
 * when the first unsent datagram fails (e.g. EMSGSIZE, ENETUNREACH; the
 * caller typically drops that entry).
 */
int qk_udp_send(qk_udp *u, qk_datagram *d, size_t n);

/**
 * Segment i of a datagram that may be a GRO/GSO batch: fills out with a view
 * of the bytes (addresses and ecn copied, segment_bytes 0).
 * Returns 0, or QK_ERR_NOT_FOUND when i is past the last segment.
 */
int qk_datagram_segment(const qk_datagram *d, size_t i, qk_datagram *out);

/** Number of datagrams in d (1 unless segment_bytes splits it). */
size_t qk_datagram_segment_count(const qk_datagram *d);

/* ------------------------------------------------------------------------ */
/* Event loop                                                               */
/* ------------------------------------------------------------------------ */

/** CLOCK_MONOTONIC in nanoseconds: the clock the loop passes to drivers. */
qk_time qk_io_now(void);

/**
 * A sans-I/O driver. The loop calls these from one thread; none may block.
 */
typedef struct qk_io_driver_ops {
    /** Received datagrams (GRO batches already split, so every entry has
     * segment_bytes 0). data is only valid during the call. */
    void (*on_datagrams)(void *ctx, qk_datagram *d, size_t n, qk_time now);
    /** Fill up to max entries of out. Each out[i].data points to a
     * loop-owned buffer and out[i].len holds its capacity (buf_bytes, 64 KiB
     * by default: room for a GSO batch) on input; set len to the bytes
     * written, peer (required), local (optional source address), ecn and
     * segment_bytes (non-zero: a run of equal segments). Return how many
     * entries were filled; 0 means nothing to send now. Not called while an
     * earlier batch is still waiting for the socket to become writable. */
    size_t (*poll_send)(void *ctx, qk_datagram *out, size_t max, qk_time now);
    /** Absolute deadline (qk_io_now() clock) or QK_TIME_INFINITE. */
    qk_time (*next_timeout)(void *ctx);
    /** The deadline passed. */
    void (*on_timeout)(void *ctx, qk_time now);
    /** Optional (may be NULL): an error the socket queued (QK_UDP_RECVERR). */
    void (*on_error)(void *ctx, const qk_udp_error *e, qk_time now);
} qk_io_driver_ops;

/** Loop settings; zero fields take the defaults. */
typedef struct qk_io_loop_config {
    size_t recv_batch;  /**< datagrams per recvmmsg (default 32, max 64) */
    size_t send_batch;  /**< entries per poll_send (default 16, max 64) */
    size_t buf_bytes;   /**< bytes per buffer (default 65535) */
    struct ev_loop *ev; /**< run inside this libev loop; NULL = a private one */
} qk_io_loop_config;

/** A libev loop driving one driver over one or more sockets (opaque). */
typedef struct qk_io_loop qk_io_loop;

/** Loop counters. */
typedef struct qk_io_loop_stats {
    uint64_t wakeups;      /**< libev callbacks run */
    uint64_t rx_datagrams; /**< datagrams handed to on_datagrams (after GRO split) */
    uint64_t tx_entries;   /**< poll_send entries fully sent */
    uint64_t tx_dropped;   /**< entries dropped on a send error */
    uint64_t send_blocked; /**< times the socket would block on send */
    uint64_t timeouts;     /**< on_timeout calls */
} qk_io_loop_stats;

/**
 * Create a loop driving ops/ctx over socket u (not owned: close it after
 * qk_io_loop_del). ops (ops_bytes of it: the caller's
 * sizeof(qk_io_driver_ops); callbacks a smaller table lacks are NULL) and
 * cfg (cfg_bytes: the caller's sizeof(qk_io_loop_config); may be NULL) are
 * copied. Returns 0 and sets *out, or QK_ERR_INVALID_ARG (NULL ops
 * callback, batch above 64, buf_bytes above 65535, or below 65535 on a
 * socket with caps.gro: open it with QK_UDP_NO_GRO to use small buffers; a
 * size below the first release's), QK_ERR_UNSUPPORTED (ops or cfg sets a
 * field this library does not know), QK_ERR_NOMEM.
 */
int qk_io_loop_new_sized(qk_udp *u, const qk_io_driver_ops *ops, size_t ops_bytes, void *ctx,
                         const qk_io_loop_config *cfg, size_t cfg_bytes, qk_io_loop **out);

/** qk_io_loop_new_sized() with the caller's sizeof(qk_io_driver_ops) and
 * sizeof(qk_io_loop_config). */
#define qk_io_loop_new(u, ops, ctx, cfg, out)                                                      \
    qk_io_loop_new_sized((u), (ops), sizeof(qk_io_driver_ops), (ctx), (cfg),                       \
                         sizeof(qk_io_loop_config), (out))

/**
 * Also drive the loop's driver from socket u (not owned: close it after
 * qk_io_loop_del), e.g. a server's preferred address (qk_config
 * .preferred_addr_v4/_v6): its datagrams go to the same on_datagrams, and
 * a datagram poll_send fills leaves from the socket bound to its local
 * address (else a wildcard one on that port, else the first socket).
 * Another use: a server listening on a range of ports (port hopping). Up
 * to 1024 sockets besides the first. Returns 0, QK_ERR_INVALID_ARG (NULL,
 * already in the loop, or a GRO socket with buf_bytes below 65535),
 * QK_ERR_LIMIT or QK_ERR_NOMEM.
 */
int qk_io_loop_add_udp(qk_io_loop *l, qk_udp *u);

/** Stop watchers and free the loop (and its private libev loop). NULL is a no-op. */
void qk_io_loop_del(qk_io_loop *l);

/**
 * Run until qk_io_loop_break() or a registered signal. Flushes poll_send and
 * arms the timer first. Returns 0, or QK_ERR_STATE if called re-entrantly.
 */
int qk_io_loop_run(qk_io_loop *l);

/**
 * Ask the loop to stop; safe from driver callbacks, another thread or a
 * signal handler (uses ev_async). qk_io_loop_run() returns soon after.
 */
void qk_io_loop_break(qk_io_loop *l);

/**
 * Tell the loop that the driver has new data (e.g. the application wrote to a
 * stream outside a callback): it drains poll_send and re-arms the timer.
 * Must be called from the loop's thread.
 */
void qk_io_loop_kick(qk_io_loop *l);

/**
 * Carry on over socket u instead (not owned; the old one is not closed):
 * e.g. a client that moves to a new local port (RFC 9000 §9). Parked
 * datagrams go out through u. Must be called from the loop's thread.
 * Returns 0, or QK_ERR_INVALID_ARG (NULL, or u has GRO and the loop's
 * buffers are small).
 */
int qk_io_loop_replace_udp(qk_io_loop *l, qk_udp *u);

/**
 * Stop the loop when signum arrives (e.g. SIGINT, SIGTERM). Up to 4 signals.
 * Returns 0, QK_ERR_LIMIT when 4 are registered, QK_ERR_INVALID_ARG.
 */
int qk_io_loop_stop_on_signal(qk_io_loop *l, int signum);

/** The signal number once the loop stopped because of a signal, else 0. Never fails. */
int qk_io_loop_stop_signal(const qk_io_loop *l);

/** The libev loop, to add watchers of one's own (e.g. TCP sockets in the tunnel). */
struct ev_loop *qk_io_loop_ev(qk_io_loop *l);

/** Counters since creation into out (out_bytes: the caller's sizeof(qk_io_loop_stats)). */
void qk_io_loop_get_stats_sized(const qk_io_loop *l, qk_io_loop_stats *out, size_t out_bytes);

/** qk_io_loop_get_stats_sized() with the caller's sizeof(qk_io_loop_stats). */
#define qk_io_loop_get_stats(l, out)                                                               \
    qk_io_loop_get_stats_sized((l), (out), sizeof(qk_io_loop_stats))

#ifdef __cplusplus
}
#endif
#endif
