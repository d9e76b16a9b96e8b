/* SPDX-License-Identifier: MIT */
/* Client-side Version Negotiation (RFC 9000 §6.2) through an in-memory pair:
 * qk_config.offer_version makes the client offer another version first; a VN
 * listing qk_config.version restarts the attempt in that version, at most once,
 * and never after any other packet from the server (the downgrade rule). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "qk_pair.h"
#include "qk_test.h"
#include "transport/conn/conn.h"
#include "wire/packet.h"

#define UNKNOWN_VERSION 0x1a2a3a4au

/* What crossed the path: long-header versions and DCIDs toward the server
 * (read from the invariant header, RFC 8999 §5.1), VN packets toward the client. */
typedef struct watch {
    uint32_t version[64];
    uint8_t dcid[64][QK_MAX_CID_LEN];
    size_t dcid_len[64];
    size_t n_long; /* long-header datagrams to the server */
    unsigned vns;  /* VN packets to the client */
    bool drop_vn;  /* drop every VN (the client must not react) */
} watch;

static bool watch_filter(void *ctx, bool to_server, uint64_t idx, uint8_t *d, size_t *len)
{
    (void)idx;
    watch *w = ctx;
    if (*len < 7 || !(d[0] & 0x80)) return true;
    uint32_t v = (uint32_t)d[1] << 24 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 8 | d[4];
    if (!to_server) {
        if (v == 0) w->vns++;
        return !(v == 0 && w->drop_vn);
    }
    if (w->n_long < 64 && d[5] <= QK_MAX_CID_LEN && 6u + d[5] <= *len) {
        w->version[w->n_long] = v;
        memcpy(w->dcid[w->n_long], d + 6, d[5]);
        w->dcid_len[w->n_long] = d[5];
        w->n_long++;
    }
    return true;
}

static bool restarted(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->cconn->restart.vn_restarted;
}

static bool server_readable(qk_pair *p, void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < p->nsev; i++)
        if (p->sev[i].type == QK_EV_STREAM_READABLE) return true;
    return false;
}

static bool got_server_packet(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->cconn->restart.got_packet;
}

/* Offer an unknown version, get a VN from the quack server (v1, v2, a greased
 * one), restart in v1 under a fresh DCID, complete the handshake, move data. */
static void test_offer_unknown_then_v1(void **state)
{
    (void)state;
    qk_pair p;
    watch w = {0};
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.ccfg.offer_version = UNKNOWN_VERSION;
    p.filter = watch_filter;
    p.filter_ctx = &w;
    assert_int_equal(qk_pair_start(&p), 0);
    qk_time t0 = p.now;
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(w.vns, 1);
    assert_true(w.n_long >= 2);
    assert_int_equal(w.version[0], UNKNOWN_VERSION);
    /* Every packet after the VN is v1, with another DCID (RFC 9000 §7.2). */
    for (size_t i = 1; i < w.n_long; i++) assert_int_equal(w.version[i], QK_VERSION_1);
    assert_int_equal(w.dcid_len[1], 8);
    assert_memory_not_equal(w.dcid[0], w.dcid[1], 8);
    assert_int_equal(p.cconn->version, QK_VERSION_1);
    assert_int_equal(p.sconn->version, QK_VERSION_1);
    assert_true(p.cconn->restart.vn_restarted);
    /* One extra round trip (20 ms here), not a timeout. */
    assert_true(p.now - t0 < 100 * QK_NS_PER_MS);

    uint64_t sid;
    assert_int_equal(qk_stream_open(p.cconn, true, &sid), 0);
    static const uint8_t msg[] = "after version negotiation";
    assert_int_equal(qk_stream_write(p.cconn, sid, msg, sizeof msg, true), (long)sizeof msg);
    qk_pair_flush(&p);
    assert_true(qk_pair_run_until(&p, server_readable, NULL, p.now + 200 * QK_NS_PER_MS));
    uint8_t buf[64];
    bool fin = false;
    assert_int_equal(qk_stream_read(p.sconn, sid, buf, sizeof buf, &fin), (long)sizeof msg);
    assert_memory_equal(buf, msg, sizeof msg);
    assert_true(fin);
    qk_pair_free(&p);
}

/* The restart goes to qk_config.version: v2 (other Initial salt and labels,
 * RFC 9369 §3.3). */
static void test_offer_unknown_then_v2(void **state)
{
    (void)state;
    qk_pair p;
    watch w = {0};
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.ccfg.offer_version = UNKNOWN_VERSION;
    p.ccfg.version = QK_VERSION_2;
    p.filter = watch_filter;
    p.filter_ctx = &w;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(w.vns, 1);
    assert_int_equal(w.version[0], UNKNOWN_VERSION);
    assert_int_equal(w.version[1], QK_VERSION_2);
    assert_int_equal(p.sconn->version, QK_VERSION_2);
    qk_pair_free(&p);
}

/* Offer v2 (a version with real keys) to a v1-only server: the VN lists v1,
 * the client re-derives v1 Initial keys and completes. */
static void test_offer_v2_falls_back_to_v1(void **state)
{
    (void)state;
    qk_pair p;
    watch w = {0};
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.version = QK_VERSION_1;
    p.ccfg.offer_version = QK_VERSION_2;
    p.filter = watch_filter;
    p.filter_ctx = &w;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_int_equal(p.cconn->version, QK_VERSION_2);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(w.vns, 1);
    assert_int_equal(w.version[0], QK_VERSION_2);
    assert_int_equal(w.version[1], QK_VERSION_1);
    assert_int_equal(p.sconn->version, QK_VERSION_1);
    qk_pair_free(&p);
}

/* A server offering v2 first that speaks v2 simply completes in v2; a VN
 * arriving after that packet is a downgrade attempt and is ignored (§6.2). */
static void test_vn_after_packet_ignored(void **state)
{
    (void)state;
    qk_pair p;
    watch w = {0};
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.ccfg.offer_version = QK_VERSION_2;
    p.filter = watch_filter;
    p.filter_ctx = &w;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, got_server_packet, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(p.cconn->version, QK_VERSION_2);
    uint32_t v1_only[1] = {QK_VERSION_1};
    assert_int_equal(qk_pair_deliver_vn(&p, v1_only, 1), 0);
    assert_false(p.cconn->restart.vn_restarted);
    assert_int_equal(p.cconn->version, QK_VERSION_2);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(p.sconn->version, QK_VERSION_2);
    assert_int_equal(w.vns, 0);
    assert_null(qk_pair_client_closed(&p));
    qk_pair_free(&p);
}

/* After one VN restarted the attempt, a second VN (even one listing nothing we
 * speak) is discarded (§6.2: "including an earlier Version Negotiation"). */
static void test_second_vn_ignored(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.ccfg.offer_version = UNKNOWN_VERSION;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, restarted, NULL, p.now + 5 * QK_NS_PER_S));
    uint32_t bogus[2] = {0x5a5a5a5a, 0x00000042};
    assert_int_equal(qk_pair_deliver_vn(&p, bogus, 2), 0);
    assert_int_equal(p.cconn->state, QK_CONN_HANDSHAKE);
    assert_int_equal(p.cconn->version, QK_VERSION_1);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_null(qk_pair_client_closed(&p));
    qk_pair_free(&p);
}

/* A VN listing the version we offered is discarded; one not listing ours
 * ends the attempt with QK_ERR_VERSION naming what we offered. */
static void test_vn_without_our_version_fails(void **state)
{
    (void)state;
    qk_pair p;
    watch w = {.drop_vn = true};
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.ccfg.offer_version = UNKNOWN_VERSION;
    p.filter = watch_filter;
    p.filter_ctx = &w;
    assert_int_equal(qk_pair_start(&p), 0);
    uint32_t with_offer[2] = {QK_VERSION_1, UNKNOWN_VERSION};
    assert_int_equal(qk_pair_deliver_vn(&p, with_offer, 2), 0);
    assert_false(p.cconn->restart.vn_restarted);
    assert_int_equal(p.cconn->state, QK_CONN_HANDSHAKE);
    uint32_t v2_only[2] = {0x7a7a7a7a, QK_VERSION_2};
    assert_int_equal(qk_pair_deliver_vn(&p, v2_only, 2), 0);
    qk_pair_step(&p);
    const qk_event *ev = qk_pair_client_closed(&p);
    assert_non_null(ev);
    assert_int_equal(ev->reason_err, QK_ERR_VERSION);
    assert_non_null(strstr(ev->reason, "0x6b3343cf"));
    assert_non_null(strstr(ev->reason, "we offered 0x1a2a3a4a"));
    qk_pair_free(&p);
}

/* Against a v1-only quack server with qk_config.version = v2, the VN lists
 * v1 only: the client gives up cleanly in one round trip. */
static void test_no_common_version(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.version = QK_VERSION_1;
    p.ccfg.version = QK_VERSION_2;
    p.ccfg.offer_version = UNKNOWN_VERSION;
    assert_int_equal(qk_pair_start(&p), 0);
    qk_time t0 = p.now;
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + 2 * QK_NS_PER_S));
    const qk_event *ev = qk_pair_client_closed(&p);
    assert_int_equal(ev->reason_err, QK_ERR_VERSION);
    assert_non_null(strstr(ev->reason, "server supports"));
    assert_non_null(strstr(ev->reason, "0x00000001"));
    assert_true(p.now - t0 < 50 * QK_NS_PER_MS);
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offer_unknown_then_v1),
        cmocka_unit_test(test_offer_unknown_then_v2),
        cmocka_unit_test(test_offer_v2_falls_back_to_v1),
        cmocka_unit_test(test_vn_after_packet_ignored),
        cmocka_unit_test(test_second_vn_ignored),
        cmocka_unit_test(test_vn_without_our_version_fails),
        cmocka_unit_test(test_no_common_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
