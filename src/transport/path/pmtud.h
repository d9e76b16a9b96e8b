/* SPDX-License-Identifier: MIT */
/* Datagram Packetization Layer PMTU Discovery (RFC 8899 via RFC 9000 §14.3):
 * probe upward from the 1200-byte base with PING+PADDING packets, binary
 * search between the largest size that got through and the smallest that
 * failed MAX_PROBES times, and fall back to the base when full-size packets
 * vanish (black hole), searching again later. Pure state machine: the
 * connection sends the probes and reports what became of them. */
#ifndef QK_TRANSPORT_PMTUD_H
#define QK_TRANSPORT_PMTUD_H

#include <quack/common.h>
#include <stdbool.h>

#define QK_PMTUD_BASE_BYTES   1200 /* RFC 9000 §14: the minimum every path carries */
#define QK_PMTUD_MAX_PROBES   3    /* RFC 8899 §5.1.2 MAX_PROBES */
#define QK_PMTUD_STEP_BYTES   16   /* search ends when the bracket is this narrow */
#define QK_PMTUD_BH_LOST_PKTS 3    /* full-size losses after the last full-size ack */
#define QK_PMTUD_BH_PTOS      3    /* consecutive PTOs with full-size packets */
#define QK_PMTUD_RAISE_NS     (600 * QK_NS_PER_S) /* RFC 8899 §5.1.1 PMTU_RAISE_TIMER */
#define QK_PMTUD_BH_RETRY_NS  (5 * QK_NS_PER_S)   /* search again after a black hole */

typedef struct qk_pmtud {
    bool enabled;
    bool searching;
    uint32_t max_bytes;   /* upper bound: local config, the peer's max_udp_payload_size */
    uint32_t cur_bytes;   /* confirmed datagram size in use */
    uint32_t lo, hi;      /* search bracket: lo got through; hi failed (max + 1: untried) */
    uint32_t probe_bytes; /* size of the probe in flight, 0 = none */
    uint32_t fails;       /* consecutive losses of probes of probe_bytes */
    qk_time raise_at;     /* when a finished search starts again */
    qk_time bh_mark;      /* send time of the newest acknowledged full-size packet */
    uint32_t bh_lost;     /* full-size packets lost that were sent after bh_mark */
    qk_time bh_last_lost; /* send time of the newest of them */
    uint64_t probes_sent, probes_lost, black_holes;
} qk_pmtud;

/** Initialise at the base size; enabled only when max_bytes > 1200. Never fails. */
void qk_pmtud_init(qk_pmtud *p, bool enabled, uint32_t max_bytes);

/** Lower the upper bound (the peer's max_udp_payload_size, RFC 9000 §18.2). */
void qk_pmtud_set_max(qk_pmtud *p, uint32_t max_bytes);

/** Begin searching (the handshake is confirmed, the path validated). */
void qk_pmtud_start(qk_pmtud *p, qk_time now);

/** Size of the probe to send now, or 0 (none due, one in flight, disabled). */
uint32_t qk_pmtud_probe_size(qk_pmtud *p, qk_time now);

/** A probe of size bytes was sent. */
void qk_pmtud_on_probe_sent(qk_pmtud *p, uint32_t size);

/** A probe was acknowledged: size is confirmed. Returns the size to use now. */
uint32_t qk_pmtud_on_probe_acked(qk_pmtud *p, uint32_t size, qk_time now);

/** A probe was declared lost (never a congestion signal, RFC 9000 §14.4). */
void qk_pmtud_on_probe_lost(qk_pmtud *p, uint32_t size, qk_time now);

/** A non-probe packet of size bytes sent at time_sent was acknowledged (acked) or lost. */
void qk_pmtud_on_packet(qk_pmtud *p, uint32_t size, qk_time time_sent, bool acked);

/**
 * After an ACK or loss timer was fully processed (acks and losses may be
 * reported in either order): true when full-size packets vanished while
 * none got through, a black hole; the size fell back to the base
 * (RFC 8899 §4.3) and the caller shrinks its datagrams.
 */
bool qk_pmtud_check(qk_pmtud *p, qk_time now);

/** The PTO fired for the pto_count-th time in a row. Returns true on a fallback. */
bool qk_pmtud_on_pto(qk_pmtud *p, uint32_t pto_count, qk_time now);

/** Restart from the base (a new path, RFC 9000 §14.3 / §9.4). */
void qk_pmtud_reset(qk_pmtud *p, qk_time now);

#endif
