/* SPDX-License-Identifier: MIT */
/* What `quack perf`'s client and server share (see perf.h): the byte
 * pattern both directions carry, the configuration both build, the
 * --ack-frequency option, the results table and progress lines. */
#include "perf.h"

#include <errno.h>
#include <quack/sim.h>
#include <stdlib.h>
#include <string.h>

static uint8_t pattern_buf[QK_PERF_PERIOD + QK_PERF_CHUNK_BYTES];
static bool pattern_ready;

static void pattern_init(void)
{
    /* Byte i of every stream is a hash of (i mod QK_PERF_PERIOD). */
    for (uint32_t i = 0; i < sizeof pattern_buf; i++)
        pattern_buf[i] = (uint8_t)(((i % QK_PERF_PERIOD) * 2654435761u) >> 24);
    pattern_ready = true;
}

const uint8_t *perf_pattern(uint64_t off)
{
    if (!pattern_ready) pattern_init();
    return pattern_buf + off % QK_PERF_PERIOD;
}

bool perf_pattern_check(const uint8_t *buf, size_t len, uint64_t off)
{
    return len <= QK_PERF_CHUNK_BYTES && memcmp(buf, perf_pattern(off), len) == 0;
}

void perf_config(qk_config *cfg, const perf_opts *o)
{
    qk_config_default(cfg);
    cfg->server = o->server;
    cfg->alpn[0] = o->no_protection ? QK_PERF_ALPN_NOPROT : QK_PERF_ALPN;
    cfg->alpn_count = 1;
    cfg->no_protection = o->no_protection;
    cfg->cc = o->cc;
    cfg->pacing_gain_ca_pct = o->pacing_gain_pct;
    cli_admission_apply(&o->admission, cfg); /* client: only --handshake-timeout */
    cfg->keep_alive_ns = o->keep_alive_ns;
    cfg->ecn = !o->no_ecn;
    qk_io_log_files(cfg, o->qlog_dir, NULL); /* $SSLKEYLOGFILE unreadable: no key log */
    cfg->rng = cli_rng;
    cfg->max_udp_payload_bytes = o->max_udp_bytes ? o->max_udp_bytes : QK_CLI_DATAGRAM_BYTES;
    cfg->initial_max_data_bytes = 32u << 20;
    cfg->initial_max_stream_data_bytes = 16u << 20;
    cfg->max_stream_send_buffer_bytes = 4u << 20;
    if (o->autotune) cfg->autotune = o->autotune > 0;
    if (o->window_bytes) {
        cfg->initial_max_stream_data_bytes = o->window_bytes;
        cfg->initial_max_data_bytes = 4 * o->window_bytes; /* the 64 KiB / 256 KiB ratio */
    }
    if (o->max_window_bytes) {
        cfg->max_stream_window_bytes = o->max_window_bytes;
        cfg->max_conn_window_bytes = o->max_window_bytes + o->max_window_bytes / 2;
        if (cfg->max_stream_send_buffer_bytes < o->max_window_bytes)
            cfg->max_stream_send_buffer_bytes = o->max_window_bytes;
    }
    if (o->budget_bytes) cfg->recv_budget_bytes = o->budget_bytes;
    cfg->preferred_addr_v4 = o->preferred_v4; /* RFC 9000 §9.6 */
    cfg->preferred_addr_v6 = o->preferred_v6;
    cfg->disable_preferred_address = o->no_preferred;
    cfg->max_streams_bidi = QK_PERF_MAX_STREAMS;
    cfg->idle_timeout_ns = 10 * QK_NS_PER_S;
    if (o->ackfreq_set) {
        cfg->ack_frequency = o->ackfreq_mode;
        cfg->ack_frequency_threshold = o->ackfreq_threshold;
        cfg->ack_frequency_delay_ns =
            (o->ackfreq_delay_us ? o->ackfreq_delay_us : 25000) * QK_NS_PER_US;
        cfg->ack_frequency_reorder = o->ackfreq_reorder;
    }
}

int perf_parse_ackfreq(const char *s, perf_opts *o)
{
    if (!s || !*s) return QK_ERR_INVALID_ARG;
    o->ackfreq_set = true;
    o->ackfreq_threshold = o->ackfreq_delay_us = o->ackfreq_reorder = 0;
    qk_ackfreq_mode m;
    /* "fixed" alone has no values: THRESHOLD[,DELAY_US[,REORDER]] below. */
    if (!qk_ackfreq_mode_parse(s, &m) && m != QK_ACKFREQ_FIXED) {
        o->ackfreq_mode = m;
        return 0;
    }
    o->ackfreq_mode = QK_ACKFREQ_FIXED;
    uint64_t v[3] = {0, 0, 0};
    const char *p = s;
    for (int i = 0; i < 3; i++) {
        char *end;
        if (*p < '0' || *p > '9') return QK_ERR_INVALID_ARG;
        errno = 0;
        unsigned long long x = strtoull(p, &end, 10);
        if (errno || end == p) return QK_ERR_INVALID_ARG;
        v[i] = x;
        if (*end == 0) break;
        if (*end != ',' || i == 2) return QK_ERR_INVALID_ARG;
        p = end + 1;
    }
    /* ack-frequency-12 §4: the delay must stay below 2^14 ms. */
    if (v[1] >= (1ull << 14) * 1000) return QK_ERR_INVALID_ARG;
    o->ackfreq_threshold = v[0];
    o->ackfreq_delay_us = v[1];
    o->ackfreq_reorder = v[2];
    return 0;
}

static void fmt_duration(char *b, size_t cap, qk_time ns)
{
    if (ns < QK_NS_PER_MS)
        snprintf(b, cap, "%.2fµs", (double)ns / 1e3);
    else if (ns < QK_NS_PER_S)
        snprintf(b, cap, "%.2fms", (double)ns / 1e6);
    else
        snprintf(b, cap, "%.2fs", (double)ns / 1e9);
}

static double mib_per_s(uint64_t bytes, qk_time ns)
{
    if (ns == 0) ns = 1;
    return (double)bytes / (1024.0 * 1024.0) / ((double)ns / 1e9);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile on a sorted array. */
static size_t rank(size_t n, unsigned p)
{
    return (size_t)(((double)p / 100.0) * (double)(n - 1) + 0.5);
}

void perf_print_table(FILE *f, const perf_sample *s, size_t n)
{
    if (n == 0) {
        fprintf(f, "no request completed: no table\n");
        return;
    }
    qk_time *d[3];
    double *t[2];
    for (int i = 0; i < 3; i++) d[i] = malloc(n * sizeof(qk_time));
    for (int i = 0; i < 2; i++) t[i] = malloc(n * sizeof(double));
    if (!d[0] || !d[1] || !d[2] || !t[0] || !t[1]) {
        fprintf(f, "out of memory for the table\n");
        goto out;
    }
    qk_time sum_d[3] = {0};
    double sum_t[2] = {0};
    for (size_t i = 0; i < n; i++) {
        d[0][i] = s[i].upload_ns;
        d[1][i] = s[i].download_ns;
        d[2][i] = s[i].fbl_ns;
        t[0][i] = mib_per_s(s[i].upload_bytes, s[i].upload_ns);
        t[1][i] = mib_per_s(s[i].download_bytes, s[i].download_ns);
        for (int k = 0; k < 3; k++) sum_d[k] += d[k][i];
        for (int k = 0; k < 2; k++) sum_t[k] += t[k][i];
    }
    for (int k = 0; k < 3; k++) qsort(d[k], n, sizeof(qk_time), cmp_u64);
    for (int k = 0; k < 2; k++) qsort(t[k], n, sizeof(double), cmp_dbl);
    fprintf(f, "      │ Upload Duration │ Download Duration │ FBL        │ Upload Throughput │ "
               "Download Throughput\n");
    fprintf(f, "──────┼─────────────────┼───────────────────┼────────────┼───────────────────┼"
               "────────────────────\n");
    static const unsigned pct[] = {0, 10, 50, 90, 100};
    for (int row = -1; row < 5; row++) {
        char label[8], a[24], b[24], c[24];
        qk_time v[3];
        double w[2];
        if (row < 0) {
            snprintf(label, sizeof label, "AVG");
            for (int k = 0; k < 3; k++) v[k] = sum_d[k] / n;
            for (int k = 0; k < 2; k++) w[k] = sum_t[k] / (double)n;
        } else {
            snprintf(label, sizeof label, "P%u", pct[row]);
            size_t r = rank(n, pct[row]);
            for (int k = 0; k < 3; k++) v[k] = d[k][r];
            for (int k = 0; k < 2; k++) w[k] = t[k][r];
        }
        fmt_duration(a, sizeof a, v[0]);
        fmt_duration(b, sizeof b, v[1]);
        fmt_duration(c, sizeof c, v[2]);
        /* "µ" is two bytes but one column: pad by display width. */
        fprintf(f, "%-5s │ %*s │ %*s │ %*s │ %12.2f MiB/s │ %14.2f MiB/s\n", label,
                15 + (strstr(a, "µ") ? 1 : 0), a, 17 + (strstr(b, "µ") ? 1 : 0), b,
                10 + (strstr(c, "µ") ? 1 : 0), c, w[0], w[1]);
    }
out:
    for (int i = 0; i < 3; i++) free(d[i]);
    for (int i = 0; i < 2; i++) free(t[i]);
}

void perf_print_progress(FILE *f, const char *who, double elapsed_s, double interval_s,
                         uint64_t rx_bytes, uint64_t tx_bytes, const qk_conn_stats *st)
{
    if (interval_s <= 0) interval_s = 1;
    fprintf(f,
            "[%s] %6.2fs  down %8.1f Mbit/s  up %8.1f Mbit/s  rtt %7.3f ms  cwnd %8llu B  "
            "lost %llu pkts\n",
            who, elapsed_s, (double)rx_bytes * 8 / 1e6 / interval_s,
            (double)tx_bytes * 8 / 1e6 / interval_s, st->smoothed_rtt_ns / 1e6,
            (unsigned long long)st->cwnd_bytes, (unsigned long long)st->pkts_lost);
}
