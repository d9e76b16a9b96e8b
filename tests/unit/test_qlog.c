/* SPDX-License-Identifier: MIT */
/* qlog (qlog.c) through the caller's writer: every record is valid JSON-SEQ
 * (checked with jq), every event name is one of the qlog QUIC event schema
 * (draft-ietf-quic-qlog-quic-events-03) or quack's own "quack:" namespace,
 * every frame has its schema name (none "unknown"), connection_closed
 * carries the codes and the reason, and a lost packet is logged at the
 * time it was declared lost, with the window it left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "qk_pair.h"
#include "qk_test.h"

typedef struct trace {
    char *buf;
    size_t len, cap;
    int opened, closed;
} trace;

static trace traces[2]; /* [0] client, [1] server */

static void *t_open(void *ctx, const char *name)
{
    trace *t = &traces[strstr(name, "_server") ? 1 : 0];
    t->opened++;
    return t;
}

static void t_write(void *h, const char *data, size_t len)
{
    trace *t = h;
    if (t->len + len + 1 > t->cap) {
        t->cap = (t->len + len + 1) * 2;
        t->buf = realloc(t->buf, t->cap);
        assert_non_null(t->buf);
    }
    memcpy(t->buf + t->len, data, len);
    t->len += len;
    t->buf[t->len] = 0;
}

static void t_close(void *h)
{
    ((trace *)h)->closed++;
}

static const char *const event_names[] = {
    "connectivity:connection_closed", "connectivity:connection_state_updated",
    "transport:parameters_set",       "transport:packet_sent",
    "transport:packet_received",      "transport:version_information",
    "recovery:metrics_updated",       "recovery:packet_lost",
    "security:key_updated",
};

static bool known_event(const char *name, size_t len)
{
    if (len > 6 && !strncmp(name, "quack:", 6)) return true; /* our extensions */
    for (size_t i = 0; i < sizeof event_names / sizeof *event_names; i++)
        if (strlen(event_names[i]) == len && !strncmp(event_names[i], name, len)) return true;
    return false;
}

/* Every "name" is known, no frame is unknown; returns the records seen. */
static int check_names(const char *buf)
{
    int records = 0;
    for (const char *p = buf; (p = strchr(p, '\x1e')); p++) records++;
    for (const char *p = buf; (p = strstr(p, "\"name\":\"")); p++) {
        const char *n = p + 8, *e = strchr(n, '"');
        assert_non_null(e);
        if (!known_event(n, (size_t)(e - n))) fail_msg("unknown qlog event %.*s", (int)(e - n), n);
    }
    assert_null(strstr(buf, "\"frame_type\":\"unknown\""));
    return records;
}

static void jq_valid(const trace *t)
{
    char path[] = "/tmp/qk_qlog_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, t->buf, t->len), (ssize_t)t->len);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "jq --seq -e . %s >/dev/null 2>&1", path);
    int rc = system(cmd);
    unlink(path);
    assert_int_equal(rc, 0);
}

/* A pair at rtt whose both ends write qlog traces into traces[] (cleared). */
static void traced_pair(qk_pair *p, qk_time rtt)
{
    memset(traces, 0, sizeof traces);
    assert_int_equal(qk_pair_init(p, rtt), 0);
    p->ccfg.qlog_open = p->scfg.qlog_open = t_open;
    p->ccfg.qlog_write = p->scfg.qlog_write = t_write;
    p->ccfg.qlog_close = p->scfg.qlog_close = t_close;
}

static void test_qlog_schema(void **state)
{
    (void)state;
    qk_pair p;
    traced_pair(&p, 10 * QK_NS_PER_MS);
    p.scfg.initial_max_data_bytes = 8000; /* MAX_DATA, DATA_BLOCKED */
    p.scfg.initial_max_stream_data_bytes = 100000;
    p.scfg.autotune = false;
    p.ccfg.max_datagram_frame_bytes = p.scfg.max_datagram_frame_bytes = 1200;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    uint64_t a, b;
    assert_int_equal(qk_stream_open(p.cconn, true, &a), 0);
    size_t wa = 0, ra = 0;
    bool bad = false;
    qk_pair_write_pattern(p.cconn, a, 200000, &wa);
    assert_int_equal(qk_datagram_send(p.cconn, (const uint8_t *)"dgram", 5, 0), 0);
    assert_int_equal(qk_stream_open(p.cconn, true, &b), 0);
    assert_int_equal(qk_stream_write(p.cconn, b, (const uint8_t *)"x", 1, false), 1);
    assert_int_equal(qk_stream_reset(p.cconn, b, 7), 0); /* RESET_STREAM */
    qk_pair_flush(&p);
    qk_time end = p.now + 5 * QK_NS_PER_S;
    while (p.now < end && qk_pair_step(&p)) {
        if (p.sconn) qk_pair_read_pattern(p.sconn, a, &ra, &bad);
        qk_pair_write_pattern(p.cconn, a, 200000, &wa);
        if (ra == 200000) break;
    }
    assert_int_equal(ra, 200000);
    assert_false(bad);
    assert_int_equal(qk_conn_close(p.cconn, 0x42, "done \"here\""), 0);
    qk_pair_flush(&p);
    end = p.now + QK_NS_PER_S;
    while (p.now < end && qk_pair_step(&p)) {
    }
    qk_pair_free(&p); /* closes both traces */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(traces[i].opened, 1);
        assert_int_equal(traces[i].closed, 1);
        assert_true(check_names(traces[i].buf) > 20);
        jq_valid(&traces[i]);
    }
    const char *cli = traces[0].buf, *srv = traces[1].buf;
    const char *want[] = {
        "\"frame_type\":\"max_data\"",      "\"frame_type\":\"data_blocked\"",
        "\"frame_type\":\"reset_stream\"",  "\"frame_type\":\"new_token\"",
        "\"frame_type\":\"datagram\"",      "\"frame_type\":\"new_connection_id\"",
        "\"frame_type\":\"handshake_done\""};
    if (getenv("QK_QLOG_DUMP")) fprintf(stderr, "%s\n----\n%s\n", cli, srv);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(cli, want[i]) && !strstr(srv, want[i]))
            fail_msg("no %s in either qlog", want[i]);
    assert_non_null(strstr(cli, "\"owner\":\"local\",\"application_code\":66"));
    assert_non_null(strstr(cli, "\"reason\":\"done \\\"here\\\"\""));
    assert_non_null(strstr(srv, "\"owner\":\"remote\",\"application_code\":66"));
    for (int i = 0; i < 2; i++) free(traces[i].buf);
}

/* Endpoints freed with the connection open (the CLI on SIGTERM): each
 * trace is flushed, closed, valid to the end, and its last record is
 * connection_closed saying so. */
static void test_qlog_freed_open(void **state)
{
    (void)state;
    qk_pair p;
    traced_pair(&p, 10 * QK_NS_PER_MS);
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    qk_pair_free(&p);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(traces[i].closed, 1);
        jq_valid(&traces[i]);
        const char *last = strrchr(traces[i].buf, '\x1e');
        assert_non_null(last);
        assert_non_null(strstr(last, "\"name\":\"connectivity:connection_closed\""));
        assert_non_null(strstr(last, "\"owner\":\"local\",\"connection_code\":0"));
        assert_non_null(strstr(last, "\"reason\":\"endpoint freed with the connection open\""));
        assert_int_equal(traces[i].buf[traces[i].len - 1], '\n');
        free(traces[i].buf);
    }
}

/* The time of a record: its "time" field in ms. */
static double rec_time(const char *rec)
{
    const char *t = strstr(rec, "\"time\":");
    assert_non_null(t);
    return strtod(t + 7, NULL);
}

/* Under 5 % loss each way: every recovery:packet_lost record carries the
 * time of the ACK or of the loss timer that declared it (RFC 9002 §6.1.2
 * time-threshold losses are found by the timer, between records), and a
 * recovery:metrics_updated with that time follows it at once, so the
 * window reduction shows when it happens, not at the next packet sent.
 * Stamped with the previous record's time, as before, a timer-declared
 * loss appeared up to 9/8 RTT early and the reduction up to an RTT late.
 * Returns the losses seen. */
static int check_loss_records(const char *buf)
{
    int lost = 0;
    for (const char *p = strchr(buf, '\x1e'); p; p = strchr(p + 1, '\x1e')) {
        if (strncmp(strstr(p, "\"name\":\""), "\"name\":\"recovery:packet_lost\"", 29)) continue;
        lost++;
        double t = rec_time(p);
        const char *q = strchr(p + 1, '\x1e');
        bool metrics = false;
        for (; q && rec_time(q) == t; q = strchr(q + 1, '\x1e'))
            if (!strncmp(strstr(q, "\"name\":\""), "\"name\":\"recovery:metrics_updated\"", 33))
                metrics = true;
        if (!metrics) fail_msg("packet_lost at %.3f ms: no metrics_updated at that time", t);
        if (q && rec_time(q) < t)
            fail_msg("packet_lost at %.3f ms after a record at %.3f", t, rec_time(q));
    }
    return lost;
}

static void test_qlog_loss_stamped(void **state)
{
    (void)state;
    qk_pair p;
    traced_pair(&p, 25 * QK_NS_PER_MS);
    uint64_t rng = 17;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    p.filter = qk_pair_loss5_filter;
    p.filter_ctx = &rng;
    uint64_t a;
    assert_int_equal(qk_stream_open(p.cconn, true, &a), 0);
    const size_t total = 1000000;
    size_t wa = 0, ra = 0;
    bool bad = false;
    qk_pair_write_pattern(p.cconn, a, total, &wa);
    qk_pair_flush(&p);
    qk_time end = p.now + 60 * QK_NS_PER_S;
    while (p.now < end && ra < total && qk_pair_step(&p)) {
        if (p.sconn) qk_pair_read_pattern(p.sconn, a, &ra, &bad);
        qk_pair_write_pattern(p.cconn, a, total, &wa);
    }
    assert_int_equal(ra, total);
    assert_false(bad);
    qk_conn_stats st;
    qk_conn_stats_get(p.cconn, &st);
    qk_pair_free(&p);
    int lost = check_loss_records(traces[0].buf);
    fprintf(stderr, "  client: %d packet_lost records, %llu packets lost\n", lost,
            (unsigned long long)st.pkts_lost);
    assert_true(lost >= 10);
    assert_int_equal((uint64_t)lost, st.pkts_lost);
    for (int i = 0; i < 2; i++) free(traces[i].buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qlog_schema),
        cmocka_unit_test(test_qlog_freed_open),
        cmocka_unit_test(test_qlog_loss_stamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
