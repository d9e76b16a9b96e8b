/* SPDX-License-Identifier: MIT */
/*
 * bench_server_scale: what one datagram costs a server as its number of
 * connections grows, sans-I/O and in-process: a client endpoint
 * and a server endpoint exchange datagrams through memory.
 *  - handshakes/s: 200 new connections (client and server work together,
 *    one thread) on top of 0, 1,000 and 10,000 established ones;
 *  - per-datagram cost of a junk short-header datagram (unknown CID: the
 *    stateless-reset lookup and the send path) at each of those levels;
 *  - handshakes/s with 1 and 2 threads (--threads-only: just this), each
 *    thread with its own client and server endpoint as a `quack serve
 *    --threads` worker has its own, measured in wall-clock time, and the
 *    ratio.
 * Usage: bench_server_scale [--write docs/perf.md] [--threads-only] [MAX_CONNS (default 10000)]
 * With --write it replaces the sections between its markers in that file.
 */
#include <quack/cert.h>
#include <quack/quack.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH  64
#define NEW_HS 200

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void rng(void *ctx, uint8_t *buf, size_t len)
{
    uint64_t *s = ctx;
    for (size_t i = 0; i < len; i++) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        buf[i] = (uint8_t)*s;
    }
}

static void addr4(qk_addr *a, uint32_t ip, uint16_t port)
{
    memset(a, 0, sizeof *a);
    struct sockaddr_in *s = (struct sockaddr_in *)&a->ss;
    s->sin_family = AF_INET;
    s->sin_addr.s_addr = htonl(ip);
    s->sin_port = htons(port);
    a->len = sizeof *s;
}

typedef struct bench {
    qk_endpoint *cli, *srv;
    qk_time now;
    uint8_t bufs[BATCH][1500];
    uint64_t established;
} bench;

static void drain_events(bench *b)
{
    qk_event ev;
    while (qk_endpoint_poll_event(b->cli, &ev))
        if (ev.type == QK_EV_CONNECTED) b->established++;
    while (qk_endpoint_poll_event(b->srv, &ev)) {
    }
}

/* Move datagrams both ways until neither side has one; then timers. */
static void pump(bench *b)
{
    for (int round = 0; round < 10000; round++) {
        size_t moved = 0;
        for (int dir = 0; dir < 2; dir++) {
            qk_endpoint *from = dir ? b->srv : b->cli, *to = dir ? b->cli : b->srv;
            qk_datagram out[BATCH];
            for (;;) {
                for (int i = 0; i < BATCH; i++)
                    out[i] = (qk_datagram){.data = b->bufs[i], .len = sizeof b->bufs[i]};
                size_t n = qk_endpoint_send(from, out, BATCH, b->now);
                for (size_t i = 0; i < n; i++) {
                    qk_datagram in = out[i];
                    in.local = out[i].peer;
                    in.peer = out[i].local;
                    qk_endpoint_recv(to, &in, b->now);
                }
                moved += n;
                if (n < BATCH) break;
            }
        }
        drain_events(b);
        if (!moved) break;
        b->now += 100 * QK_NS_PER_US;
    }
}

/* Open n connections; returns the handshakes completed per wall second. */
static double connect_n(bench *b, size_t n, size_t first)
{
    uint64_t before = b->established;
    double t0 = wall();
    qk_addr srv;
    addr4(&srv, 0x7f000001, 4433);
    for (size_t i = 0; i < n; i += 100) {
        for (size_t k = i; k < n && k < i + 100; k++) {
            size_t id = first + k;
            qk_addr local;
            addr4(&local, 0x7f000002 + (uint32_t)(id / 50000), (uint16_t)(10000 + id % 50000));
            qk_conn *c;
            if (qk_connect(b->cli, &local, &srv, "localhost", b->now, &c)) {
                fprintf(stderr, "qk_connect failed at %zu\n", id);
                exit(1);
            }
        }
        pump(b);
    }
    double dt = wall() - t0;
    if (b->established - before != n) {
        fprintf(stderr, "only %llu of %zu handshakes completed\n",
                (unsigned long long)(b->established - before), n);
        exit(1);
    }
    return (double)n / dt;
}

/* Mean wall time of qk_endpoint_recv + qk_endpoint_send for a junk
 * short-header datagram to an unknown CID, in ns. */
static double junk_cost_ns(bench *b, unsigned count)
{
    uint64_t s = 12345;
    uint8_t dg[1200];
    qk_addr from, to;
    addr4(&to, 0x7f000001, 4433);
    qk_datagram out[BATCH];
    double t0 = wall();
    for (unsigned i = 0; i < count; i++) {
        rng(&s, dg, sizeof dg);
        dg[0] = (uint8_t)(0x40 | (dg[0] & 0x3f)); /* short header, fixed bit */
        addr4(&from, 0x0a000000 + (i & 0xffff), (uint16_t)(1024 + (i & 0x7fff)));
        qk_datagram in = {.data = dg, .len = sizeof dg, .local = to, .peer = from};
        qk_endpoint_recv(b->srv, &in, b->now);
        for (int k = 0; k < BATCH; k++)
            out[k] = (qk_datagram){.data = b->bufs[k], .len = sizeof b->bufs[k]};
        qk_endpoint_send(b->srv, out, BATCH, b->now);
        b->now += QK_NS_PER_US;
    }
    return (wall() - t0) * 1e9 / count;
}

typedef struct row {
    size_t conns;
    double hs_per_s, junk_ns;
} row;

static int write_section(const char *path, const char *text, const char *tag, const char *title)
{
    char begin[96], end[96];
    snprintf(begin, sizeof begin, "<!-- %s:begin -->", tag);
    snprintf(end, sizeof end, "<!-- %s:end -->", tag);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *doc = malloc((size_t)n + 1);
    if (!doc || fread(doc, 1, (size_t)n, f) != (size_t)n) return -1;
    doc[n] = 0;
    fclose(f);
    char *b = strstr(doc, begin), *e = b ? strstr(b, end) : NULL;
    f = fopen(path, "wb");
    if (!f) return -1;
    if (b && e) {
        fwrite(doc, 1, (size_t)(b - doc), f);
        fprintf(f, "%s\n%s%s", begin, text, e);
    } else {
        fprintf(f, "%s\n## %s\n\n%s\n%s%s\n", doc, title, begin, text, end);
    }
    free(doc);
    return fclose(f);
}

/* ---- handshakes/s with 1 and 2 threads ---------------------------------- */

#define THREAD_HS 400 /* handshakes per thread */

typedef struct hs_job {
    qk_config cc, sc;
    uint64_t seed_c, seed_s;
} hs_job;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One worker: its own client and server endpoints, THREAD_HS handshakes. */
static void *hs_thread(void *arg)
{
    hs_job *j = arg;
    j->cc.rng_ctx = &j->seed_c;
    j->sc.rng_ctx = &j->seed_s;
    bench *b = calloc(1, sizeof *b);
    if (!b) exit(1);
    b->now = QK_NS_PER_S;
    b->cli = qk_endpoint_new(&j->cc);
    b->srv = qk_endpoint_new(&j->sc);
    if (!b->cli || !b->srv) exit(1);
    connect_n(b, THREAD_HS, 0);
    qk_endpoint_del(b->cli);
    qk_endpoint_del(b->srv);
    free(b);
    return NULL;
}

/* Handshakes per wall-clock second with t threads working at once; *cores:
 * the process's CPU time over the wall time (how many cores it really got). */
static double threads_rate(const qk_config *cc, const qk_config *sc, unsigned t, double *cores)
{
    hs_job jobs[2];
    pthread_t th[2];
    double t0 = mono(), c0 = wall();
    for (unsigned i = 0; i < t; i++) {
        jobs[i] = (hs_job){.cc = *cc, .sc = *sc, .seed_c = 11 + i, .seed_s = 101 + i};
        if (pthread_create(&th[i], NULL, hs_thread, &jobs[i])) exit(1);
    }
    for (unsigned i = 0; i < t; i++) pthread_join(th[i], NULL);
    double dt = mono() - t0;
    *cores = (wall() - c0) / dt;
    return (double)(t * THREAD_HS) / dt;
}

static int threads_section(const qk_config *cc, const qk_config *sc, const char *out_path)
{
    double best[2] = {0, 0}, cores[2] = {0, 0}, load[1] = {0};
    for (int rep = 0; rep < 3; rep++) /* best of 3: the machine is shared */
        for (unsigned t = 1; t <= 2; t++) {
            double c, r = threads_rate(cc, sc, t, &c);
            if (r > best[t - 1]) {
                best[t - 1] = r;
                cores[t - 1] = c;
            }
        }
    if (getloadavg(load, 1) != 1) load[0] = -1;
    char text[1400];
    snprintf(text, sizeof text,
             "Written by `bench_server_scale --threads-only` (%s build): each thread runs its\n"
             "own client and server endpoint (as each `quack serve --threads` worker has its\n"
             "own endpoint) and completes %d handshakes; wall-clock time, best of 3, on a\n"
             "machine with %ld cores shared with other jobs.\n\n"
             "| threads | handshakes/s | cores the process got (CPU time / wall time) | "
             "handshakes per CPU second |\n"
             "|---:|---:|---:|---:|\n| 1 | %.0f | %.2f | %.0f |\n| 2 | %.0f | %.2f | %.0f |\n\n"
             "Ratio 2 threads / 1 thread: %.2fx in handshakes/s, %.2fx per CPU second (load\n"
             "average %.1f when written: the wall-clock ratio can only approach 2 when the\n"
             "second thread gets a core of its own; the per-CPU-second ratio near 1 says the\n"
             "threads do not slow each other down).\n",
#ifdef NDEBUG
             "release",
#else
             "debug",
#endif
             THREAD_HS, sysconf(_SC_NPROCESSORS_ONLN), best[0], cores[0], best[0] / cores[0],
             best[1], cores[1], best[1] / cores[1], best[1] / best[0],
             (best[1] / cores[1]) / (best[0] / cores[0]), load[0]);
    fputs(text, stdout);
    if (out_path && write_section(out_path, text, "bench_server_threads",
                                  "Handshakes/s with 1 and 2 threads")) {
        fprintf(stderr, "cannot update %s\n", out_path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *out_path = NULL;
    size_t max_conns = 10000;
    bool threads_only = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--write") && i + 1 < argc)
            out_path = argv[++i];
        else if (!strcmp(argv[i], "--threads-only"))
            threads_only = true;
        else
            max_conns = (size_t)strtoull(argv[i], NULL, 10);
    }
    if (max_conns < 1000) max_conns = 1000;
    char *cert, *key;
    if (qk_cert_generate("localhost", 0, 30, &cert, &key)) return 1;
    uint64_t rc_ = 1, rs_ = 2;
    qk_config cc, sc;
    qk_config_default(&cc);
    cc.alpn[0] = "bench";
    cc.alpn_count = 1;
    cc.insecure = true;
    cc.rng = rng;
    cc.rng_ctx = &rc_;
    cc.max_connections = max_conns + 2 * NEW_HS;
    cc.idle_timeout_ns = 3600 * QK_NS_PER_S;
    sc = cc;
    sc.server = true;
    sc.insecure = false;
    sc.cert_pem = cert;
    sc.key_pem = key;
    sc.rng_ctx = &rs_;
    sc.max_handshakes = 100000; /* no Retry: every handshake completes here */
    if (threads_only) {
        int trc = threads_section(&cc, &sc, out_path);
        free(cert);
        free(key);
        return trc;
    }
    bench b = {.now = QK_NS_PER_S};
    b.cli = qk_endpoint_new(&cc);
    b.srv = qk_endpoint_new(&sc);
    if (!b.cli || !b.srv) return 1;
    size_t levels[3] = {0, 1000, max_conns};
    row rows[3];
    size_t have = 0;
    for (int l = 0; l < 3; l++) {
        if (levels[l] > have) connect_n(&b, levels[l] - have, have);
        have = levels[l];
        rows[l].conns = qk_endpoint_conn_count(b.srv);
        rows[l].junk_ns = junk_cost_ns(&b, 100000);
        rows[l].hs_per_s = connect_n(&b, NEW_HS, have);
        have += NEW_HS;
        fprintf(stderr, "%zu connections: junk %.0f ns, %.0f handshakes/s\n", rows[l].conns,
                rows[l].junk_ns, rows[l].hs_per_s);
    }
    char text[2048];
    int n =
        snprintf(text, sizeof text,
                 "Written by `bench_server_scale` (%s build, one thread, client and server\n"
                 "in one process; CPU time of the process, so other load on the machine counts\n"
                 "less; compare rows, not runs).\n\n"
                 "| established connections | junk short-header datagram (ns) | "
                 "vs 0 | handshakes/s (200 new) |\n|---:|---:|---:|---:|\n",
#ifdef NDEBUG
                 "release"
#else
                 "debug"
#endif
        );
    for (int l = 0; l < 3; l++)
        n += snprintf(text + n, sizeof text - (size_t)n, "| %zu | %.0f | %.2fx | %.0f |\n",
                      rows[l].conns, rows[l].junk_ns, rows[l].junk_ns / rows[0].junk_ns,
                      rows[l].hs_per_s);
    fputs(text, stdout);
    int rc = 0;
    if (out_path && write_section(out_path, text, "bench_server_scale",
                                  "Server scale (`bench_server_scale`)")) {
        fprintf(stderr, "cannot update %s\n", out_path);
        rc = 1;
    }
    qk_endpoint_del(b.cli);
    qk_endpoint_del(b.srv);
    free(cert);
    free(key);
    return rc;
}
