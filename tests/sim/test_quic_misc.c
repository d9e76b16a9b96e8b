/* SPDX-License-Identifier: MIT */
/* covers: src/sim/flow_quic.c */
/* End-to-end behaviours through the simulator: handshake timing, 1,000
 * streams under a stream limit, idle timeout, application close, DATAGRAM
 * frames, anti-amplification, and the qlog event sequence. */
#include "qk_test.h"
#include "quic_env.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#define MS QK_NS_PER_MS

/* Handshake at 20 ms RTT: the client's first 1-RTT packet (carrying the data it
 * queued before the handshake) leaves 1 RTT after it connected. */
static void test_handshake_1rtt(void **s)
{
    (void)s;
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.delay_ns = 10 * MS;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 1, &l, &l), 0);
    qk_simq_cfg c = {.upload = true, .size_bytes = 4096, .keep_open = true};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_true(quic_env_run_done(&e, q, 2 * QK_NS_PER_S));
    const qk_simq_result *r = qk_simq_result_get(q);
    fprintf(stderr, "connected at %.3f ms, first 1-RTT send at %.3f ms, done at %.3f ms\n",
            r->connected_ns / 1e6, r->first_1rtt_ns / 1e6, r->completion_ns / 1e6);
    /* RFC 9001 §4.1: the client has 1-RTT keys once the server's flight arrived. */
    assert_true(r->first_1rtt_ns >= 20 * MS);
    assert_true(r->first_1rtt_ns <= 21 * MS);
    assert_true(r->connected_ns <= 21 * MS);
    /* the data arrives at the server 1.5 RTT after the start */
    assert_true(r->completion_ns <= 31 * MS);
    assert_false(r->mismatch);
    assert_int_equal(r->hash_read, r->hash_written);
    assert_string_equal(qk_conn_alpn(qk_simq_client_conn(q)), "quack-sim");
    assert_string_equal(qk_conn_alpn(qk_simq_server_conn(q)), "quack-sim");
    /* transport parameters: both advertised DATAGRAM support (1200 bytes) */
    uint8_t d[100] = {0};
    assert_int_equal(qk_datagram_send(qk_simq_client_conn(q), d, sizeof d, 0), 0);
    assert_int_equal(qk_datagram_send(qk_simq_server_conn(q), d, sizeof d, 0), 0);
    quic_env_free(&e);
}

/* 1,000 streams x 10 KiB under the server's limit of 100 concurrent streams. */
static void test_thousand_streams(void **s)
{
    (void)s;
    qk_sim_link_cfg l = quic_env_link();
    for (int up = 0; up < 2; up++) {
        quic_env e;
        assert_int_equal(quic_env_init(&e, 2 + (uint64_t)up, &l, &l), 0);
        qk_simq_cfg c = {.upload = up, .size_bytes = 1000 * 10240, .streams = 1000};
        qk_simq *q = quic_env_flow(&e, 4433, &c);
        bool done = quic_env_run_done(&e, q, 60 * QK_NS_PER_S);
        const qk_simq_result *r = qk_simq_result_get(q);
        fprintf(stderr,
                "%s: done=%d at %.3f s, %u streams, limit hits %llu, MAX_STREAMS raises %llu, "
                "max open %llu\n",
                up ? "upload" : "download", done, r->completion_ns / 1e9, r->streams_done,
                (unsigned long long)r->stream_limit_hits, (unsigned long long)r->streams_available,
                (unsigned long long)r->max_open_streams);
        assert_true(done);
        assert_int_equal(r->streams_done, 1000);
        assert_false(r->mismatch);
        assert_int_equal(r->read_bytes, 1000 * 10240);
        assert_int_equal(r->hash_read, r->hash_written);
        assert_true(r->stream_limit_hits > 0);   /* the limit was hit ... */
        assert_true(r->streams_available > 0);   /* ... and raised by MAX_STREAMS */
        assert_true(r->max_open_streams <= 100); /* never more than the server allows */
        quic_env_free(&e);
    }
}

static void idle_tune(void *ctx, qk_config *cfg, bool server)
{
    (void)ctx;
    (void)server;
    cfg->idle_timeout_ns = 2 * QK_NS_PER_S;
}

typedef struct close_times {
    qk_time client_ns, server_ns;
    int dgrams[2];     /* DATAGRAMs received: [0] by the client, [1] by the server */
    uint64_t dhash[2]; /* sum of their contents' hashes */
} close_times;

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void on_ev(void *ctx, qk_simq *q, bool server, const qk_event *ev, qk_time now)
{
    (void)q;
    close_times *t = ctx;
    if (ev->type == QK_EV_CLOSED) *(server ? &t->server_ns : &t->client_ns) = now;
    if (ev->type == QK_EV_DATAGRAM) {
        t->dgrams[server]++;
        t->dhash[server] += hash_bytes(ev->data, ev->len);
    }
}

/* A handshake, then nothing sent by either application for 10 s. */
static qk_simq *run_quiet(quic_env *e, qk_simq_tune_fn tune, close_times *t)
{
    qk_sim_link_cfg l = quic_env_link();
    assert_int_equal(quic_env_init(e, 3, &l, &l), 0);
    qk_simq_cfg c = {
        .no_transfer = true, .keep_open = true, .tune = tune, .on_event = on_ev, .ctx = t};
    qk_simq *q = quic_env_flow(e, 4433, &c);
    assert_non_null(q);
    qk_sim_run(e->sim, 10 * QK_NS_PER_S);
    return q;
}

static void test_idle_timeout(void **s)
{
    (void)s;
    quic_env e;
    close_times t = {0};
    qk_simq *q = run_quiet(&e, idle_tune, &t);
    const qk_simq_result *r = qk_simq_result_get(q);
    fprintf(stderr, "idle close: client %.3f s, server %.3f s\n", t.client_ns / 1e9,
            t.server_ns / 1e9);
    assert_true(r->connected);
    assert_true(r->client_closed);
    assert_true(r->server_closed);
    assert_false(r->client_close.remote); /* RFC 9000 §10.1: silently closed */
    assert_false(r->server_close.remote);
    /* the last packet was around 30 ms; idle timeout 2 s (at least 3 PTO, §10.1) */
    assert_true(t.client_ns >= 2 * QK_NS_PER_S && t.client_ns < 3 * QK_NS_PER_S);
    assert_true(t.server_ns >= 2 * QK_NS_PER_S && t.server_ns < 3 * QK_NS_PER_S);
    /* nothing was sent after the handshake: no CONNECTION_CLOSE went out */
    assert_null(qk_simq_client_conn(q));
    assert_null(qk_simq_server_conn(q));
    quic_env_free(&e);
}

static void keep_alive_tune(void *ctx, qk_config *cfg, bool server)
{
    (void)ctx;
    cfg->idle_timeout_ns = 2 * QK_NS_PER_S;
    if (!server) cfg->keep_alive_ns = 500 * QK_NS_PER_MS;
}

/* RFC 9000 §10.1.2: the client's keep-alive PINGs (every 500 ms of silence)
 * hold both ends under a 2 s idle timeout for 10 s; without them both close
 * at ~2 s (test_idle_timeout). */
static void test_keep_alive(void **s)
{
    (void)s;
    quic_env e;
    close_times t = {0};
    qk_simq *q = run_quiet(&e, keep_alive_tune, &t);
    const qk_simq_result *r = qk_simq_result_get(q);
    fprintf(stderr, "keep-alive: client sent %llu PINGs, server %llu; closed %d/%d\n",
            (unsigned long long)r->client_stats.keep_alives_sent,
            (unsigned long long)r->server_stats.keep_alives_sent, r->client_closed,
            r->server_closed);
    assert_true(r->connected);
    assert_false(r->client_closed);
    assert_false(r->server_closed);
    /* one PING per 500 ms of silence after the handshake (~30 ms): 19 or 20 */
    assert_true(r->client_stats.keep_alives_sent >= 18 && r->client_stats.keep_alives_sent <= 20);
    assert_int_equal(r->server_stats.keep_alives_sent, 0);
    quic_env_free(&e);
}

static void test_app_close(void **s)
{
    (void)s;
    qk_sim_link_cfg l = quic_env_link();
    quic_env e;
    assert_int_equal(quic_env_init(&e, 4, &l, &l), 0);
    close_times t = {0};
    qk_simq_cfg c = {.no_transfer = true, .keep_open = true, .on_event = on_ev, .ctx = &t};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    qk_sim_run(e.sim, 500 * MS);
    assert_non_null(qk_simq_client_conn(q));
    assert_int_equal(qk_conn_close(qk_simq_client_conn(q), 0x42, "going away"), 0);
    qk_simq_kick(q);
    qk_sim_run(e.sim, 3 * QK_NS_PER_S);
    const qk_simq_result *r = qk_simq_result_get(q);
    assert_true(r->server_closed);
    assert_true(r->server_close.remote);
    assert_true(r->server_close.app_error);
    assert_int_equal(r->server_close.error_code, 0x42);
    assert_string_equal(r->server_close.reason, "going away");
    fprintf(stderr, "application close: server CLOSED at %.3f s, client at %.3f s\n",
            t.server_ns / 1e9, t.client_ns / 1e9);
    /* one trip, then the draining period (RFC 9000 §10.2.2: 3 PTO) */
    assert_true(t.server_ns >= 510 * MS && t.server_ns < 2 * QK_NS_PER_S);
    assert_true(r->client_closed);
    assert_false(r->client_close.remote);
    assert_int_equal(r->client_close.error_code, 0x42);
    quic_env_free(&e);
}

static void test_datagrams(void **s)
{
    (void)s;
    qk_sim_link_cfg l = quic_env_link();
    quic_env e;
    assert_int_equal(quic_env_init(&e, 5, &l, &l), 0);
    close_times t = {0};
    qk_simq_cfg c = {.no_transfer = true, .keep_open = true, .on_event = on_ev, .ctx = &t};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    qk_sim_run(e.sim, 200 * MS);
    qk_conn *cc = qk_simq_client_conn(q), *sc = qk_simq_server_conn(q);
    assert_non_null(cc);
    assert_non_null(sc);
    uint64_t want[2] = {0, 0};
    uint8_t buf[1300];
    for (int i = 0; i < 10; i++) {
        size_t n = 100 + (size_t)i * 90;
        for (size_t j = 0; j < n; j++) buf[j] = (uint8_t)(i * 31 + j);
        assert_int_equal(qk_datagram_send(cc, buf, n, 0), 0);
        want[1] += hash_bytes(buf, n);
        for (size_t j = 0; j < n; j++) buf[j] = (uint8_t)(i * 17 + j * 3);
        assert_int_equal(qk_datagram_send(sc, buf, n, 0), 0);
        want[0] += hash_bytes(buf, n);
    }
    /* larger than the peer's max_datagram_frame_size (1200): refused locally */
    memset(buf, 0xab, sizeof buf);
    assert_int_equal(qk_datagram_send(cc, buf, 1201, 0), QK_ERR_TOO_LARGE);
    assert_int_equal(qk_datagram_send(sc, buf, 1300, 0), QK_ERR_TOO_LARGE);
    qk_simq_kick(q);
    qk_sim_run(e.sim, 1 * QK_NS_PER_S);
    assert_int_equal(t.dgrams[0], 10);
    assert_int_equal(t.dgrams[1], 10);
    assert_int_equal(t.dhash[0], want[0]);
    assert_int_equal(t.dhash[1], want[1]);
    quic_env_free(&e);
}

/* RFC 9000 §8.1: before validating the client's address the server sends at
 * most 3x the bytes it received. Every client datagram after the first is
 * dropped, so the address is never validated. */
static void test_amplification(void **s)
{
    (void)s;
    qk_sim_link_cfg f = quic_env_link(), r = quic_env_link();
    f.loss_list[0][0] = 1;
    f.loss_list[0][1] = UINT64_MAX;
    f.n_loss_list = 1;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 6, &f, &r), 0);
    qk_simq_cfg c = {.no_transfer = true};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    qk_sim_run(e.sim, 20 * QK_NS_PER_S);
    const qk_sim_link_stats *fs = qk_sim_link_stats_get(e.sim, e.fwd);
    const qk_sim_link_stats *rs = qk_sim_link_stats_get(e.sim, e.ret);
    fprintf(stderr, "server received %llu bytes, sent %llu bytes in %llu datagrams\n",
            (unsigned long long)fs->delivered_bytes,
            (unsigned long long)rs->arrived_pkts
                ? (unsigned long long)qk_simq_result_get(q)->server_tx_bytes
                : 0ull,
            (unsigned long long)rs->arrived_pkts);
    assert_int_equal(fs->delivered_pkts, 1);
    assert_true(fs->delivered_bytes >= 1200);
    assert_true(rs->delivered_bytes > 0);
    assert_true(rs->delivered_bytes <= 3 * fs->delivered_bytes);
    assert_int_equal(qk_simq_result_get(q)->server_tx_bytes, rs->delivered_bytes);
    quic_env_free(&e);
}

/* ---- qlog: every record parses as JSON; the event sequence is plausible. */

typedef struct jp {
    const char *p, *end;
} jp;

static bool j_value(jp *j, int depth);

static void j_ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'))
        j->p++;
}

static bool j_string(jp *j)
{
    if (j->p >= j->end || *j->p != '"') return false;
    for (j->p++; j->p < j->end; j->p++) {
        if (*j->p == '"') {
            j->p++;
            return true;
        }
        if (*j->p == '\\')
            j->p++;
        else if ((unsigned char)*j->p < 0x20)
            return false;
    }
    return false;
}

static bool j_number(jp *j)
{
    char *e;
    char tmp[64];
    size_t n = (size_t)(j->end - j->p) < sizeof tmp - 1 ? (size_t)(j->end - j->p) : sizeof tmp - 1;
    memcpy(tmp, j->p, n);
    tmp[n] = 0;
    if (!(tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9'))) return false;
    strtod(tmp, &e);
    if (e == tmp) return false;
    j->p += e - tmp;
    return true;
}

static bool j_lit(jp *j, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n)) return false;
    j->p += n;
    return true;
}

static bool j_container(jp *j, int depth, char close, bool obj)
{
    j->p++;
    j_ws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return true;
    }
    for (;;) {
        j_ws(j);
        if (obj) {
            if (!j_string(j)) return false;
            j_ws(j);
            if (j->p >= j->end || *j->p++ != ':') return false;
        }
        if (!j_value(j, depth + 1)) return false;
        j_ws(j);
        if (j->p >= j->end) return false;
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p++ == close) return true;
        return false;
    }
}

static bool j_value(jp *j, int depth)
{
    if (depth > 32) return false;
    j_ws(j);
    if (j->p >= j->end) return false;
    switch (*j->p) {
    case '{': return j_container(j, depth, '}', true);
    case '[': return j_container(j, depth, ']', false);
    case '"': return j_string(j);
    case 't': return j_lit(j, "true");
    case 'f': return j_lit(j, "false");
    case 'n': return j_lit(j, "null");
    default: return j_number(j);
    }
}

/* Parse one JSON-SEQ file; append each record's "name" (or "header") to names. */
static int parse_seq(const char *path, char names[][48], int cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[4 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(len < sizeof buf);
    int n = 0;
    size_t i = 0;
    while (i < len) {
        assert_int_equal(buf[i], 0x1e); /* RFC 7464: RS starts each record */
        size_t k = i + 1;
        while (k < len && buf[k] != 0x1e) k++;
        jp j = {buf + i + 1, buf + k};
        assert_true(j_value(&j, 0));
        j_ws(&j);
        assert_true(j.p == buf + k);
        assert_int_equal(buf[k - 1], '\n');
        const char *nm = memmem(buf + i, k - i, "\"name\":\"", 8);
        if (n < cap) {
            if (n == 0 || !nm) {
                snprintf(names[n], 48, "%s", nm ? "?" : "header");
            } else {
                nm += 8;
                const char *q = memchr(nm, '"', (size_t)(buf + k - nm));
                snprintf(names[n], 48, "%.*s", (int)(q - nm), nm);
            }
            n++;
        }
        i = k;
    }
    return n;
}

static int find(char names[][48], int n, int from, const char *what)
{
    for (int i = from; i < n; i++)
        if (!strcmp(names[i], what)) return i;
    return -1;
}

static void test_qlog(void **s)
{
    (void)s;
    char dir[] = "/tmp/quack-qlog-XXXXXX";
    assert_non_null(mkdtemp(dir));
    qk_sim_link_cfg l = quic_env_link();
    l.loss = QK_SIM_LOSS_BERNOULLI;
    l.loss_p = 0.02;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 8, &l, &l), 0);
    qk_simq_cfg c = {.size_bytes = 200000, .qlog_dir = dir};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_true(quic_env_run_done(&e, q, 30 * QK_NS_PER_S));
    qk_sim_run(e.sim, qk_sim_now(e.sim) + 2 * QK_NS_PER_S); /* closing and draining */
    quic_env_free(&e);                                      /* files are closed */
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    int files = 0;
    static char names[20000][48];
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        int n = parse_seq(path, names, 20000);
        bool server = strstr(de->d_name, "server") != NULL;
        fprintf(stderr, "%s: %d records\n", de->d_name, n);
        assert_true(n > 20);
        assert_string_equal(names[0], "header");
        /* our own parameters, then: client sends an Initial first; server receives one */
        assert_string_equal(names[1], "transport:parameters_set");
        int first =
            find(names, n, 1, server ? "transport:packet_received" : "transport:packet_sent");
        assert_int_equal(first, 2);
        /* the peer's parameters arrive during the handshake, before it completes */
        int peer = find(names, n, 2, "transport:parameters_set");
        assert_true(peer > first);
        int hs = find(names, n, 1, "connectivity:connection_state_updated");
        assert_true(hs > peer);
        assert_true(find(names, n, 1, "recovery:metrics_updated") > 0);
        assert_true(find(names, n, hs, "transport:packet_received") > hs);
        assert_true(find(names, n, hs, "transport:packet_sent") > hs);
        if (server) assert_true(find(names, n, 1, "recovery:packet_lost") > 0);
        assert_string_equal(names[n - 1], "connectivity:connection_closed");
        unlink(path);
        files++;
    }
    closedir(d);
    rmdir(dir);
    assert_int_equal(files, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_1rtt), cmocka_unit_test(test_thousand_streams),
        cmocka_unit_test(test_idle_timeout),   cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_app_close),      cmocka_unit_test(test_datagrams),
        cmocka_unit_test(test_amplification),  cmocka_unit_test(test_qlog),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
