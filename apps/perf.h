/* SPDX-License-Identifier: MIT */
/* `quack perf`: the QUIC perf protocol (ALPN "perf", as in quinn's and
 * quic-go's perf tools). The client opens a bidirectional stream per request,
 * writes the download size as an 8-byte big-endian integer, then the upload
 * bytes, then FIN; the server drains the upload and sends that many bytes
 * back, then FIN. Both directions carry a deterministic pattern (see
 * perf_pattern) so each side checks every byte it receives. */
#ifndef QK_APPS_PERF_H
#define QK_APPS_PERF_H

#include <quack/io.h>
#include <quack/quack.h>
#include <quack/workers.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli_options.h"
#include "cli_stats.h"

#define QK_PERF_ALPN        "perf"
#define QK_PERF_ALPN_NOPROT "perf-noprot" /* --no-protection: a mismatch fails the handshake */
#define QK_PERF_PERIOD      65521u        /* pattern period: prime, so chunk slips show */
#define QK_PERF_CHUNK_BYTES 65536u        /* bytes readable from perf_pattern() */
#define QK_PERF_MAX_STREAMS 1000u

typedef struct perf_opts {
    bool server;
    const char *addr_str;
    qk_addr addr;
    const char *cert_file, *key_file;
    const char *pin;
    bool insecure;
    double duration_s; /* 0: one round of --streams requests */
    uint64_t download_bytes, upload_bytes;
    unsigned streams;
    qk_cc_kind cc;
    uint32_t pacing_gain_pct; /**< qk_config.pacing_gain_ca_pct (0 = default) */
    qk_time keep_alive_ns;    /**< qk_config.keep_alive_ns (0 = off) */
    bool no_protection;
    bool no_ecn; /* ECN (ECT(0) marking, RFC 9000 §13.4) is on unless --no-ecn */
    const char *qlog_dir;
    bool stats;
    bool quiet;              /* no progress lines */
    cli_admission admission; /* server */
    unsigned threads;        /* server: --threads N (0: 1) */
    /* Flow control (0 = perf's defaults). */
    int autotune;              /* 1 on, -1 off, 0 default (on) */
    uint64_t window_bytes;     /* initial stream receive window */
    uint64_t max_window_bytes; /* auto-tuning cap per stream */
    uint64_t budget_bytes;     /* endpoint receive-memory budget */
    uint64_t max_udp_bytes;    /* --max-udp-payload (0 = QK_CLI_DATAGRAM_BYTES) */
    /* --ack-frequency: what to ask the peer (ack-frequency-12). */
    bool ackfreq_set; /* false: the library defaults */
    qk_ackfreq_mode ackfreq_mode;
    uint64_t ackfreq_threshold; /* fixed */
    uint64_t ackfreq_delay_us;  /* fixed, 0 = 25 ms */
    uint64_t ackfreq_reorder;   /* fixed, 0 = the loss packet threshold */
    /* preferred_address (RFC 9000 §9.6): server --preferred-addr, client --no-preferred-addr */
    qk_addr preferred_v4, preferred_v6;
    bool no_preferred;
} perf_opts;

/** Parse off|auto|THRESHOLD[,DELAY_US[,REORDER]] into o. Returns 0 or QK_ERR_INVALID_ARG. */
int perf_parse_ackfreq(const char *s, perf_opts *o);

/** Pointer to QK_PERF_CHUNK_BYTES pattern bytes starting at stream offset off. */
const uint8_t *perf_pattern(uint64_t off);

/** True when buf[0..len) (len <= QK_PERF_CHUNK_BYTES) equals the pattern at off. */
bool perf_pattern_check(const uint8_t *buf, size_t len, uint64_t off);

/** Settings shared by client and server (ALPN, CC, windows, qlog, datagram size). */
void perf_config(qk_config *cfg, const perf_opts *o);

/** Per-request measurements, nanoseconds. */
typedef struct perf_sample {
    qk_time upload_ns, download_ns, fbl_ns;
    uint64_t upload_bytes, download_bytes;
} perf_sample;

/** Print the seed-style table (rows AVG P0 P10 P50 P90 P100) of n samples; sorts a copy. */
void perf_print_table(FILE *f, const perf_sample *s, size_t n);

/** Print one progress line: elapsed, rx/tx Mbit/s over the last interval, RTT, cwnd, lost. */
void perf_print_progress(FILE *f, const char *who, double elapsed_s, double interval_s,
                         uint64_t rx_bytes, uint64_t tx_bytes, const qk_conn_stats *st);

/** Run the server on --threads workers (quack/workers.h) / the client. Returns 0 or a QK_ERR_*. */
int perf_server(const perf_opts *o);
int perf_client(const perf_opts *o);

#endif
