/* `quack perf`: pattern, options helpers, tables (see perf.h). */
#include "cli_errors.h"
#include "perf.h"

#include <stdarg.h>
#include <quack/cert.h>
#include <quack/sim.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

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

void perf_rng(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    while (len) {
        ssize_t r = getrandom(buf, len, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            abort(); /* no randomness: nothing safe to do */
        }
        buf += r;
        len -= (size_t)r;
    }
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
    perf_admission_apply(&o->admission, cfg); /* client: only --handshake-timeout */
    cfg->keep_alive_ns = o->keep_alive_ns;
    cfg->ecn = !o->no_ecn;
    qk_io_log_files(cfg, o->qlog_dir, NULL); /* $SSLKEYLOGFILE unreadable: no key log */
    cfg->rng = perf_rng;
    cfg->max_udp_payload_bytes = o->max_udp_bytes ? o->max_udp_bytes : QK_PERF_DATAGRAM_BYTES;
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

int perf_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-') return QK_ERR_INVALID_ARG;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return QK_ERR_INVALID_ARG;
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default: break;
    }
    if (*end == 'i' || *end == 'B') end++;
    if (*end == 'B') end++;
    if (*end) return QK_ERR_INVALID_ARG;
    if (shift && v > (UINT64_MAX >> shift)) return QK_ERR_INVALID_ARG;
    *out = (uint64_t)v << shift;
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

typedef struct col {
    qk_time *ns;  /* durations */
    double *tput; /* throughputs */
} col;

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

void perf_print_stats(FILE *f, const qk_conn_stats *st)
{
    fprintf(f,
            "stats: rtt min %.3f ms smoothed %.3f ms var %.3f ms latest %.3f ms\n"
            "stats: cwnd %llu B ssthresh %llu B in_flight %llu B\n"
            "stats: pkts sent %llu received %llu lost %llu spurious %llu\n"
            "stats: bytes sent %llu received %llu; stream bytes sent %llu received %llu\n"
            "stats: ack frames sent %llu received %llu; pto %llu; congestion events %llu; "
            "keep-alives %llu\n"
            "stats: ack_frequency sent %llu received %llu; immediate_ack sent %llu received %llu\n"
            "stats: streams opened local %llu remote %llu; ecn ce received %llu\n",
            st->min_rtt_ns / 1e6, st->smoothed_rtt_ns / 1e6, st->rttvar_ns / 1e6,
            st->latest_rtt_ns / 1e6, (unsigned long long)st->cwnd_bytes,
            (unsigned long long)st->ssthresh_bytes, (unsigned long long)st->bytes_in_flight,
            (unsigned long long)st->pkts_sent, (unsigned long long)st->pkts_received,
            (unsigned long long)st->pkts_lost, (unsigned long long)st->pkts_spurious,
            (unsigned long long)st->bytes_sent, (unsigned long long)st->bytes_received,
            (unsigned long long)st->stream_bytes_sent,
            (unsigned long long)st->stream_bytes_received, (unsigned long long)st->ack_frames_sent,
            (unsigned long long)st->ack_frames_received, (unsigned long long)st->pto_count,
            (unsigned long long)st->congestion_events, (unsigned long long)st->keep_alives_sent,
            (unsigned long long)st->ack_frequency_frames_sent,
            (unsigned long long)st->ack_frequency_frames_received,
            (unsigned long long)st->immediate_acks_sent,
            (unsigned long long)st->immediate_acks_received,
            (unsigned long long)st->streams_opened_local,
            (unsigned long long)st->streams_opened_remote, (unsigned long long)st->ecn_ce_received);
    static const char *const ecn_states[] = {"off", "testing", "capable", "failed"};
    printf("stats: ecn %s; sent ect0 %llu; received ect0 %llu ect1 %llu ce %llu; "
           "peer reported ce %llu in %llu acks\n",
           ecn_states[st->ecn_state < 4 ? st->ecn_state : 0],
           (unsigned long long)st->pkts_sent_ect0, (unsigned long long)st->ecn_ect0_received,
           (unsigned long long)st->ecn_ect1_received, (unsigned long long)st->ecn_ce_received,
           (unsigned long long)st->ecn_ce_reported, (unsigned long long)st->ecn_ce_events);
    fprintf(f,
            "stats: rx window conn %llu B, stream %llu B (peak %llu B); rx buffered %llu B "
            "(peak %llu B)\n",
            (unsigned long long)st->conn_rx_window_bytes,
            (unsigned long long)st->max_stream_rx_window_bytes,
            (unsigned long long)st->peak_stream_rx_window_bytes,
            (unsigned long long)st->rx_buffered_bytes,
            (unsigned long long)st->peak_rx_buffered_bytes);
    static const char *const pref[] = {"none", "offered", "probing", "moved", "failed"};
    fprintf(f, "stats: path migrations %llu, validations %llu; preferred address %s\n",
            (unsigned long long)st->migrations, (unsigned long long)st->path_validations,
            pref[st->preferred_address < 5 ? st->preferred_address : 0]);
}

int perf_parse_preferred(const char *s, qk_addr *v4_out, qk_addr *v6_out)
{
    qk_addr a;
    if (!s || qk_addr_parse(s, &a) || !qk_addr_port(&a)) return QK_ERR_INVALID_ARG;
    qk_addr v4;
    qk_addr *dst = qk_addr_unmap_v4(&a, &v4) ? v4_out : v6_out; /* IPv4 or v4-mapped */
    if (dst->len) return QK_ERR_LIMIT;
    *dst = a;
    return 0;
}

void perf_listen_error(const char *who, const qk_config *cfg, const char *addr_str, int rc,
                       unsigned which)
{
    if (rc == QK_ERR_CONFIG) {
        char why[256];
        qk_config_check(cfg, why, sizeof why);
        fprintf(stderr, "%s: invalid configuration: %s\n", who, why);
        return;
    }
    const char *err = rc == QK_ERR_NOMEM ? "out of memory" : strerror(errno);
    if (which == QK_WORKERS_SOCKET_PREFERRED_V4 || which == QK_WORKERS_SOCKET_PREFERRED_V6) {
        const qk_addr *a = which == QK_WORKERS_SOCKET_PREFERRED_V4 ? &cfg->preferred_addr_v4
                                                                   : &cfg->preferred_addr_v6;
        char buf[QK_ADDR_STRLEN] = "?";
        qk_addr_format(a, buf, sizeof buf);
        fprintf(stderr, "%s: --preferred-addr %s: cannot listen there: %s\n", who, buf, err);
        return;
    }
    fprintf(stderr, "%s: cannot listen on %s: %s\n", who, addr_str, err);
}

void perf_workers_addrs(const qk_workers *w, char *buf, size_t cap)
{
    qk_addr la;
    char pbuf[QK_ADDR_STRLEN];
    for (unsigned f = 0; f < 2; f++) /* RFC 9000 §9.6 */
        if (qk_workers_preferred_addr(w, f, &la) && qk_addr_format(&la, pbuf, sizeof pbuf) >= 0)
            printf("preferred address %s\n", pbuf);
    qk_workers_local_addr(w, &la);
    if (qk_addr_format(&la, buf, cap) < 0) snprintf(buf, cap, "?");
}

void perf_print_workers_stats(FILE *f, qk_workers *w)
{
    unsigned n = qk_workers_count(w);
    if (n == 1) {
        perf_print_endpoint_stats(f, qk_workers_endpoint(w, 0));
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        fprintf(f, "worker %u ", i);
        perf_print_endpoint_stats(f, qk_workers_endpoint(w, i));
    }
    qk_workers_stats st;
    qk_workers_get_stats(w, UINT32_MAX, &st);
    fprintf(f, "workers: %u steered_short %llu steered_long %llu steer_dropped %llu\n", n,
            (unsigned long long)st.steered_short, (unsigned long long)st.steered_long,
            (unsigned long long)st.steer_dropped);
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

qk_endpoint *perf_endpoint_new(const qk_config *cfg, const char *who)
{
    qk_endpoint *ep = qk_endpoint_new(cfg);
    if (ep) return ep;
    char why[256];
    if (qk_config_check(cfg, why, sizeof why))
        fprintf(stderr, "%s: invalid configuration: %s\n", who, why);
    else
        fprintf(stderr, "%s: cannot create the endpoint: out of memory\n", who);
    return NULL;
}

int perf_parse_version(const char *s, uint32_t *v)
{
    if (!strcmp(s, "v1") || !strcmp(s, "v2")) {
        *v = s[1] == '1' ? QK_VERSION_1 : QK_VERSION_2;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || x > 0xffffffffull || s[0] == '-') return QK_ERR_INVALID_ARG;
    *v = (uint32_t)x;
    return 0;
}

int perf_parse_key_update(const char *arg, uint64_t *pkts)
{
    if (!strcmp(arg, "--key-update")) {
        *pkts = QK_CLI_KEY_UPDATE_PKTS;
        return 0;
    }
    if (strncmp(arg, "--key-update=", 13)) return 1;
    const char *v = arg + 13;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || n == 0 || v[0] == '-') return QK_ERR_INVALID_ARG;
    *pkts = n;
    return 0;
}

int perf_parse_cc(const char *s, qk_cc_kind *out)
{
    return qk_cc_kind_parse(s, out);
}

/* Certificate: the given files, or a fresh self-signed P-256 one in memory. */
int perf_load_cert(const char *who, const char *cert_file, const char *key_file, qk_config *cfg,
                   char **cert_pem, char **key_pem)
{
    uint8_t pin[QK_PIN_BYTES];
    char hex[65];
    int rc;
    if (cert_file) {
        cfg->cert_file = cert_file;
        cfg->key_file = key_file;
        rc = qk_cert_pin_file(cert_file, pin);
        if (rc) {
            fprintf(stderr, "%s: cannot read certificate %s (error %d)\n", who, cert_file, rc);
            return rc;
        }
    } else {
        rc = qk_cert_generate("localhost", (int64_t)time(NULL) - 3600, 30, cert_pem, key_pem);
        if (rc) {
            fprintf(stderr, "%s: cannot generate a certificate (error %d)\n", who, rc);
            return rc;
        }
        cfg->cert_pem = *cert_pem;
        cfg->key_pem = *key_pem;
        qk_cert_pin_pem(*cert_pem, strlen(*cert_pem), pin);
    }
    qk_pin_to_hex(pin, hex);
    printf("pin: %s\n", hex);
    return 0;
}

int perf_parse_admission(perf_admission *a, int argc, char **argv, int *i, const char *who)
{
    const char *o = argv[*i];
    if (!strcmp(o, "--retry")) {
        const char *v = *i + 1 < argc ? argv[*i + 1] : "";
        a->retry_set = true;
        a->retry = QK_RETRY_ALWAYS; /* bare --retry, as before */
        if (!strcmp(v, "auto") || !strcmp(v, "always") || !strcmp(v, "never")) {
            a->retry = v[1] == 'u' ? QK_RETRY_AUTO : v[1] == 'l' ? QK_RETRY_ALWAYS : QK_RETRY_NEVER;
            ++*i;
        }
        return 1;
    }
    if (strcmp(o, "--max-handshakes") && strcmp(o, "--handshake-timeout") &&
        strcmp(o, "--max-connections"))
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", who, o);
        return -1;
    }
    const char *v = argv[++*i];
    if (strcmp(o, "--handshake-timeout")) { /* --max-handshakes, --max-connections: a count */
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end || n < 1 || n > (1ull << 24)) {
            fprintf(stderr, "%s: %s wants 1..16777216, not '%s'\n", who, o, v);
            return -1;
        }
        if (!strcmp(o, "--max-connections")) {
            a->max_connections = (size_t)n;
            a->conns_set = true;
        } else {
            a->max_handshakes = (size_t)n;
            a->max_set = true;
        }
    } else {
        if (qk_sim_parse_time(v, &a->handshake_timeout_ns) || !a->handshake_timeout_ns) {
            fprintf(stderr, "%s: --handshake-timeout wants a time, e.g. 5s or 500ms, not '%s'\n",
                    who, v);
            return -1;
        }
        a->timeout_set = true;
    }
    return 1;
}

void perf_admission_apply(const perf_admission *a, qk_config *cfg)
{
    if (a->retry_set) cfg->retry = a->retry; /* RFC 9000 §8.1.2 */
    if (a->max_set) cfg->max_handshakes = a->max_handshakes;
    if (a->timeout_set) cfg->handshake_timeout_ns = a->handshake_timeout_ns;
    if (a->conns_set) cfg->max_connections = a->max_connections;
}

void perf_print_endpoint_stats(FILE *f, const qk_endpoint *ep)
{
    qk_endpoint_stats st;
    qk_endpoint_stats_get(ep, &st);
    fprintf(f,
            "endpoint: initials_accepted %llu initials_validated %llu retry_sent %llu "
            "retry_load %llu drops_handshakes %llu drops_connections %llu initials_dropped %llu "
            "handshakes_now %llu resets_sent %llu vn_sent %llu send_buffered_peak_bytes %llu\n",
            (unsigned long long)st.initials_accepted, (unsigned long long)st.initials_validated,
            (unsigned long long)st.retry_sent, (unsigned long long)st.retry_load,
            (unsigned long long)st.drops_handshakes, (unsigned long long)st.drops_connections,
            (unsigned long long)st.initials_dropped, (unsigned long long)st.handshakes_now,
            (unsigned long long)st.resets_sent, (unsigned long long)st.vn_sent,
            (unsigned long long)st.send_buffered_peak_bytes);
}

const char **perf_str_opt_find(const perf_str_opt *tab, const char *a)
{
    for (; tab->name; tab++)
        if (!strcmp(tab->name, a)) return tab->dst;
    return NULL;
}

const char **perf_h3_opt(perf_h3_opts *o, const char *a)
{
    const perf_str_opt tab[] = {{"--qlog", &o->qlog},       {"--keylog", &o->keylog},
                                {"--cc", &o->cc},           {"--quic-version", &o->version},
                                {"--ciphers", &o->ciphers}, {NULL, NULL}};
    return perf_str_opt_find(tab, a);
}

int perf_h3_flag(const char *cmd, perf_h3_opts *o, const char *a)
{
    if (!strcmp(a, "--ecn"))
        o->ecn = true;
    else if (!strcmp(a, "--no-gso"))
        o->no_gso = true;
    else if (!strcmp(a, "--no-early-data"))
        o->no_early_data = true;
    else if (!strncmp(a, "--key-update", 12)) {
        if (perf_parse_key_update(a, &o->key_update_pkts))
            return perf_usage_error(cmd, "%s: want --key-update or --key-update=N (N >= 1 packets)",
                                    a);
    } else
        return 0;
    return 1;
}

int perf_h3_apply(const char *who, const perf_h3_opts *o, qk_config *cfg)
{
    if (cli_check_dir(who, "--qlog", o->qlog)) return 2;
    if (qk_io_log_files(cfg, o->qlog, o->keylog)) {
        fprintf(stderr, "%s: --keylog %s (or $SSLKEYLOGFILE): cannot open it for appending\n", who,
                o->keylog ? o->keylog : getenv("SSLKEYLOGFILE"));
        return 2;
    }
    if (o->cc && qk_cc_kind_parse(o->cc, &cfg->cc)) { /* default: cubic */
        fprintf(stderr, "%s: --cc %s: use one of %s\n", who, o->cc, qk_cc_kind_names());
        return 2;
    }
    /* qk_endpoint_new explains an unsupported one (qk_config_check). */
    if (o->version && perf_parse_version(o->version, &cfg->version)) {
        fprintf(stderr, "%s: --quic-version %s: want v1, v2 or a number\n", who, o->version);
        return 2;
    }
    cfg->key_update_after_pkts = o->key_update_pkts; /* RFC 9001 §6.1 */
    cfg->ecn = o->ecn;
    cfg->early_data = !o->no_early_data; /* RFC 9001 §4.6 */
    cfg->ciphers = o->ciphers;
    /* A version or cipher list the library refuses is a usage error: name
     * the option (qk_config_check's text says what it accepts). */
    char why[300];
    if (qk_config_check(cfg, why, sizeof why) == 0) return 0;
    const char *opt = !strncmp(why, "version", 7)   ? "--quic-version"
                      : !strncmp(why, "ciphers", 7) ? "--ciphers"
                                                    : NULL;
    if (!opt) return 0; /* other fields: explained by perf_endpoint_new */
    fprintf(stderr, "%s: %s %s: %s\n", who, opt, opt[2] == 'q' ? o->version : o->ciphers, why);
    return 2;
}

int perf_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "quack %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'quack %s --help' for the options.\n", cmd);
    return 2;
}
