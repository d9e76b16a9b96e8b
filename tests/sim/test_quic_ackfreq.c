/* SPDX-License-Identifier: MIT */
/* ACK-frequency extension end to end through the simulator,
 * asserting on the decoded frames the trace hook (qk_config.trace)
 * reports: the ACK frames the receiver actually sent and their ACK Delay
 * fields, ACK_FREQUENCY and IMMEDIATE_ACK frames. The path is 100 Mbit/s,
 * 10 ms each way, a 1-BDP queue (quic_env_link). */
#include "qk_test.h"
#include "quic_env.h"

#define MS QK_NS_PER_MS

/* What the tests need from both sides' traces. The client is the receiver
 * of a download. */
typedef struct rec {
    /* knobs */
    int mode;           /* server's ack_frequency */
    uint64_t threshold; /* fixed */
    qk_time delay_ns;   /* fixed */
    qk_time client_min_ack_delay_ns;
    qk_time steady_after_ns; /* count steady state from af_time + this */
    uint64_t window_bytes;   /* flow-control window (0 = 8 MiB) */
    /* client (receiver) */
    bool af_received;
    qk_time af_time;
    uint64_t rx_ae_steady, tx_acks_steady;
    bool pending; /* ack-eliciting packets received since the last ACK */
    qk_time first_pending;
    qk_time max_hold_ns; /* longest such wait, after ACK_FREQUENCY */
    qk_time max_delay_field_ns;
    uint64_t acks_after_af;
    bool imm_waiting;
    qk_time imm_rx_time;
    uint64_t imm_rx, imm_answered;
    qk_time max_imm_answer_ns;
    /* server (sender) */
    uint64_t af_sent, imm_sent;
    qk_time win_start, win_end; /* blackhole window */
    uint64_t win_imm, win_ping; /* IMMEDIATE_ACK / PING frames sent in it */
    uint64_t af_threshold_seen;
    /* frames that must never appear */
    uint64_t forbidden;
} rec;

static bool has_frame(const qk_trace_packet *p, uint64_t type)
{
    for (size_t i = 0; i < p->n_frames; i++)
        if (p->frames[i].type == type) return true;
    return false;
}

static void client_trace(rec *r, const qk_trace_packet *p)
{
    if (p->pkt_type != QK_TRACE_PKT_1RTT) return;
    qk_time t = p->time_ns;
    if (!p->sent) {
        if (has_frame(p, 0xaf) && !r->af_received) {
            r->af_received = true;
            r->af_time = t;
        }
        if (has_frame(p, 0x1f)) {
            r->imm_rx++;
            if (!r->imm_waiting) r->imm_rx_time = t;
            r->imm_waiting = true;
        }
        if (p->ack_eliciting) {
            if (!r->pending) r->first_pending = t;
            r->pending = true;
            if (r->af_received && t >= r->af_time + r->steady_after_ns) r->rx_ae_steady++;
        }
        return;
    }
    /* The transfer's last packet may carry IMMEDIATE_ACK (going idle); the
     * client answers it with CONNECTION_CLOSE, which ends all obligations. */
    if (has_frame(p, 0x1c) || has_frame(p, 0x1d)) r->imm_waiting = false;
    bool ack = has_frame(p, 0x02) || has_frame(p, 0x03);
    if (!ack) return;
    for (size_t i = 0; i < p->n_frames; i++) {
        if (p->frames[i].type != 0x02 && p->frames[i].type != 0x03) continue;
        if (r->af_received && p->frames[i].ack_delay_ns > r->max_delay_field_ns)
            r->max_delay_field_ns = p->frames[i].ack_delay_ns;
    }
    if (r->af_received) {
        r->acks_after_af++;
        if (r->pending && t - r->first_pending > r->max_hold_ns)
            r->max_hold_ns = t - r->first_pending;
        /* Policy-driven ACKs: piggybacked ones (on the client's own
         * ack-eliciting flow-control updates) are opportunistic. */
        if (t >= r->af_time + r->steady_after_ns && !p->ack_eliciting) r->tx_acks_steady++;
    }
    if (r->imm_waiting) {
        r->imm_answered++;
        if (t - r->imm_rx_time > r->max_imm_answer_ns) r->max_imm_answer_ns = t - r->imm_rx_time;
        r->imm_waiting = false;
    }
    r->pending = false;
}

static void server_trace(rec *r, const qk_trace_packet *p)
{
    if (!p->sent) return;
    for (size_t i = 0; i < p->n_frames; i++) {
        if (p->frames[i].type == 0xaf) {
            r->af_sent++;
            r->af_threshold_seen = p->frames[i].af_threshold;
        }
        if (p->frames[i].type == 0x1f) r->imm_sent++;
        bool in_win = p->time_ns >= r->win_start && p->time_ns < r->win_end;
        if (in_win && p->frames[i].type == 0x1f) r->win_imm++;
        if (in_win && p->frames[i].type == 0x01) r->win_ping++;
    }
}

static void on_trace(void *ctx, const qk_trace_packet *p)
{
    rec *r = ctx;
    if (!p->server && p->sent && (has_frame(p, 0xaf) || has_frame(p, 0x1f))) r->forbidden++;
    if (p->server && r->client_min_ack_delay_ns == 0 && p->sent &&
        (has_frame(p, 0xaf) || has_frame(p, 0x1f)))
        r->forbidden++;
    if (p->server)
        server_trace(r, p);
    else
        client_trace(r, p);
}

static void tune(void *ctx, qk_config *cfg, bool server)
{
    rec *r = ctx;
    cfg->trace = on_trace;
    cfg->trace_ctx = r;
    if (server) {
        cfg->ack_frequency = r->mode;
        cfg->ack_frequency_threshold = r->threshold;
        cfg->ack_frequency_delay_ns = r->delay_ns;
        cfg->min_ack_delay_ns = 1 * MS;
    } else {
        cfg->ack_frequency = 0; /* the client sends no data: ask nothing */
        cfg->min_ack_delay_ns = r->client_min_ack_delay_ns;
    }
}

/* Download size bytes over the standard path (ret may add impairments). */
static qk_simq_result download(rec *r, uint64_t size, const qk_sim_link_cfg *ret, uint64_t seed)
{
    qk_sim_link_cfg f = quic_env_link();
    quic_env e;
    assert_int_equal(quic_env_init(&e, seed, &f, ret ? ret : &f), 0);
    qk_simq_cfg c = {.size_bytes = size,
                     .cc = QK_CONFIG_CC_CUBIC,
                     .window_bytes = r->window_bytes ? r->window_bytes : 8u << 20,
                     .tune = tune,
                     .ctx = r};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    assert_true(quic_env_run_done(&e, q, 30 * QK_NS_PER_S));
    qk_simq_result res = *qk_simq_result_get(q);
    assert_false(res.mismatch);
    quic_env_free(&e);
    return res;
}

/* Threshold 10: the receiver sends one ACK per ~10 ack-eliciting packets at
 * steady state. The flow-control window (200 kB) stays below BDP + queue
 * (250 + 250 kB), so no queue overflow adds loss-driven immediate ACKs (the
 * reordering rule rightly acknowledges gaps at once). */
static void test_threshold_10(void **state)
{
    (void)state;
    rec r = {.mode = 1,
             .threshold = 10,
             .delay_ns = 25 * MS,
             .client_min_ack_delay_ns = 1 * MS,
             .steady_after_ns = 200 * MS,
             .window_bytes = 200000};
    qk_simq_result res = download(&r, 8u << 20, NULL, 901);
    assert_true(r.af_received);
    assert_int_equal(r.af_threshold_seen, 10);
    assert_int_equal(r.forbidden, 0);
    assert_true(r.rx_ae_steady > 2000);
    double ratio = (double)r.tx_acks_steady / (double)r.rx_ae_steady;
    fprintf(stderr, "threshold 10: %llu ACKs for %llu ack-eliciting packets = 1 per %.2f\n",
            (unsigned long long)r.tx_acks_steady, (unsigned long long)r.rx_ae_steady, 1 / ratio);
    fprintf(stderr, "client ACK frames %llu, immediate %llu; imm sent by server %llu\n",
            (unsigned long long)res.client_stats.ack_frames_sent,
            (unsigned long long)res.client_stats.ack_frames_sent_immediate,
            (unsigned long long)r.imm_sent);
    assert_true(ratio >= 1.0 / 12.5);
    assert_true(ratio <= 1.0 / 9.0);
    assert_int_equal(res.client_stats.ack_frequency_frames_received, r.af_sent);
}

/* Max delay honoured: threshold 1000 (never reached) and 5 ms: every ACK goes
 * out no later than 5 ms (+1 ms) after the first packet it covers, and its
 * ACK Delay field says so too. */
static void test_max_delay(void **state)
{
    (void)state;
    rec r = {.mode = 1,
             .threshold = 1000,
             .delay_ns = 5 * MS,
             .client_min_ack_delay_ns = 1 * MS,
             .steady_after_ns = 0};
    download(&r, 4u << 20, NULL, 902);
    assert_true(r.af_received);
    assert_true(r.acks_after_af > 20);
    fprintf(stderr, "max delay 5 ms: longest hold %.3f ms, largest ACK Delay field %.3f ms\n",
            (double)r.max_hold_ns / 1e6, (double)r.max_delay_field_ns / 1e6);
    assert_true(r.max_hold_ns <= 6 * MS);
    assert_true(r.max_delay_field_ns <= 6 * MS);
    /* It did delay: with threshold 1000 ACKs are timer-driven, ~5 ms. */
    assert_true(r.max_hold_ns >= 4 * MS);
}

/* A 300 ms blackhole of the data path mid-transfer: the server's PTO probes
 * carry IMMEDIATE_ACK instead of PING, and the client answers each at once
 * although its policy says threshold 100, 25 ms. */
static void test_pto_probe_immediate_ack(void **state)
{
    (void)state;
    rec r = {.mode = 1,
             .threshold = 100,
             .delay_ns = 25 * MS,
             .client_min_ack_delay_ns = 1 * MS,
             .steady_after_ns = 0,
             .win_start = 250 * MS,
             .win_end = 550 * MS};
    qk_sim_link_cfg ret = quic_env_link();
    ret.blackhole_start_ns = 250 * MS;
    ret.blackhole_end_ns = 550 * MS;
    qk_simq_result res = download(&r, 4u << 20, &ret, 903);
    fprintf(stderr,
            "blackhole: pto %llu, IMMEDIATE_ACK sent %llu received %llu answered %llu, "
            "slowest answer %.3f ms\n",
            (unsigned long long)res.server_stats.pto_count, (unsigned long long)r.imm_sent,
            (unsigned long long)r.imm_rx, (unsigned long long)r.imm_answered,
            (double)r.max_imm_answer_ns / 1e6);
    assert_true(res.server_stats.pto_count >= 1);
    assert_true(r.imm_sent >= 1);
    /* While the path is dark only PTO probes leave: with IMMEDIATE_ACK, no PING. */
    assert_true(r.win_imm >= 1);
    assert_int_equal(r.win_ping, 0);
    assert_int_equal(res.server_stats.immediate_acks_sent, r.imm_sent);
    assert_true(r.imm_rx >= 1);
    assert_int_equal(res.client_stats.immediate_acks_received, r.imm_rx);
    assert_true(r.imm_answered >= 1);
    assert_true(r.max_imm_answer_ns <= 1 * MS);
    assert_false(r.imm_waiting);
}

/* A client that does not advertise min_ack_delay is never sent ACK_FREQUENCY
 * or IMMEDIATE_ACK, not even in PTO probes (the server runs auto). */
static void test_no_frames_without_min_ack_delay(void **state)
{
    (void)state;
    rec r = {.mode = 2, .client_min_ack_delay_ns = 0};
    qk_sim_link_cfg ret = quic_env_link();
    ret.blackhole_start_ns = 250 * MS;
    ret.blackhole_end_ns = 450 * MS;
    qk_simq_result res = download(&r, 2u << 20, &ret, 904);
    assert_true(res.server_stats.pto_count >= 1);
    assert_int_equal(r.af_sent, 0);
    assert_int_equal(r.imm_sent, 0);
    assert_int_equal(r.forbidden, 0);
    assert_false(r.af_received);
    assert_int_equal(res.server_stats.ack_frequency_frames_sent, 0);
    /* RFC 9000 cadence: about one ACK per two packets. */
    double per = (double)res.client_stats.ack_frames_sent / (double)res.client_stats.pkts_received;
    assert_true(per > 0.4);
}

/* Defaults between two quack endpoints: auto is on, the sender asks, and the
 * receiver acknowledges far less often than every second packet. */
static void test_default_auto(void **state)
{
    (void)state;
    rec r = {.mode = 2, .client_min_ack_delay_ns = 1 * MS, .steady_after_ns = 300 * MS};
    qk_config d;
    qk_config_default(&d);
    assert_int_equal(d.ack_frequency, 2);
    assert_int_equal(d.min_ack_delay_ns, 1 * MS);
    qk_simq_result res = download(&r, 8u << 20, NULL, 905);
    assert_true(r.af_sent >= 1);
    assert_int_equal(r.forbidden, 0);
    double ratio = (double)r.tx_acks_steady / (double)r.rx_ae_steady;
    fprintf(stderr,
            "auto: %llu ACKs for %llu packets at steady state (1 per %.1f), %llu "
            "ACK_FREQUENCY frames\n",
            (unsigned long long)r.tx_acks_steady, (unsigned long long)r.rx_ae_steady, 1 / ratio,
            (unsigned long long)r.af_sent);
    assert_true(ratio <= 0.1);
    assert_int_equal(res.server_stats.ack_frequency_frames_sent, r.af_sent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threshold_10),
        cmocka_unit_test(test_max_delay),
        cmocka_unit_test(test_pto_probe_immediate_ack),
        cmocka_unit_test(test_no_frames_without_min_ack_delay),
        cmocka_unit_test(test_default_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
