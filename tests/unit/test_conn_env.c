/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/conn.c src/transport/conn/conn_ctrl.c */
/* A connection on its own: two qk_conn joined by hand, each given a stub
 * qk_conn_env instead of an endpoint (the services are recorded, not
 * implemented by endpoint.c). Also the DATA_BLOCKED rule of RFC 9000 §4.1
 * at connection level. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "qk_pair.h"
#include "qk_stub_env.h"
#include "qk_test.h"
#include "transport/conn/conn.h"
#include "wire/packet.h"

/* Every datagram from one connection to the other, at time now. */
static size_t shuttle(qk_conn *from, qk_conn *to, qk_time now)
{
    uint8_t buf[1500];
    size_t n, count = 0;
    while ((n = qk_conn_send(from, buf, sizeof buf, now)) > 0) {
        qk_datagram d = {.data = buf, .len = n, .local = to->local, .peer = from->local};
        qk_conn_recv(to, &d, now);
        count++;
    }
    return count;
}

static void test_handshake_without_endpoint(void **state)
{
    (void)state;
    char *cert, *key;
    assert_int_equal(qk_cert_generate("quack.test", 0, 36500, &cert, &key), 0);
    qk_config ccfg, scfg;
    qk_config_default(&ccfg);
    ccfg.alpn[0] = "test";
    ccfg.alpn_count = 1;
    ccfg.insecure = true;
    scfg = ccfg;
    scfg.insecure = false;
    scfg.server = true;
    scfg.cert_pem = cert;
    scfg.key_pem = key;
    qk_addr ca, sa;
    qk_pair_set_addr(&ca, 1, 40000);
    qk_pair_set_addr(&sa, 2, 443);

    qk_stub_env cs, ss;
    qk_conn_env cenv = qk_stub_env_init(&cs, 1), senv = qk_stub_env_init(&ss, 2);
    qk_time now = QK_NS_PER_S;
    int err = 0;
    qk_conn *cl = qk_conn_new(&cenv, &ccfg, false, &ca, &sa, NULL, NULL, "quack.test", now, &err);
    assert_non_null(cl);
    /* The client registered its CID and drew its CIDs from the stub's RNG. */
    assert_int_equal(cs.n_cids, 1);
    assert_memory_equal(cs.cids[0].b, cl->cids.lcid[0].cid.b, cl->cids.lcid[0].cid.len);
    assert_true(cs.n_random >= 2);

    uint8_t buf[1500];
    size_t n = qk_conn_send(cl, buf, sizeof buf, now);
    assert_true(n >= 1200); /* RFC 9000 §14.1 */
    qk_pkt_hdr h;
    assert_int_equal(qk_pkt_parse(buf, n, 0, &h), 0);
    assert_int_equal(h.type, QK_PKT_INITIAL);
    qk_cid dcid = {.len = (uint8_t)h.dcid_len}, scid = {.len = (uint8_t)h.scid_len};
    memcpy(dcid.b, h.dcid, h.dcid_len);
    memcpy(scid.b, h.scid, h.scid_len);
    qk_conn *sv = qk_conn_new(&senv, &scfg, true, &sa, &ca, &dcid, &scid, NULL, now, &err);
    assert_non_null(sv);
    assert_int_equal(ss.n_cids, 2); /* its own CID and the client's Initial DCID */
    qk_datagram d = {.data = buf, .len = n, .local = sa, .peer = ca};
    qk_conn_recv(sv, &d, now);

    for (int i = 0; i < 20 && !(qk_stub_has_event(&cs, QK_EV_CONNECTED) && cl->handshake_confirmed);
         i++) {
        now += QK_NS_PER_MS;
        shuttle(sv, cl, now);
        shuttle(cl, sv, now);
    }
    assert_true(qk_stub_has_event(&cs, QK_EV_CONNECTED));
    assert_true(qk_stub_has_event(&ss, QK_EV_CONNECTED));
    assert_true(cl->handshake_confirmed); /* deferred out of the ACK loop, then applied */
    /* The handshake timeout is over once the handshake completed: no stale
     * deadline may drive the timer (it would spin at it, 10 s in). */
    assert_int_equal(cl->timers.handshake_deadline, QK_TIME_INFINITE);
    assert_int_equal(sv->timers.handshake_deadline, QK_TIME_INFINITE);
    assert_true(cl->sp[QK_PN_SPACE_HANDSHAKE].discarded);
    /* The server no longer routes by the client's Initial DCID. */
    for (size_t i = 0; i < ss.n_cids; i++)
        assert_false(ss.cids[i].len == dcid.len && !memcmp(ss.cids[i].b, dcid.b, dcid.len));
    qk_conn_del(cl);
    qk_conn_del(sv);
    assert_int_equal(cs.n_cids, 0); /* every registered CID was unregistered */
    assert_int_equal(ss.n_cids, 0);
    free(cert);
    free(key);
}

/* RFC 9000 §4.1: a sender blocked by the connection window sends
 * DATA_BLOCKED, even when nothing else is owed (no ACK, no data). */
static void test_data_blocked_sent(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.initial_max_data_bytes = 8000;
    p.scfg.autotune = false;
    p.scfg.max_conn_window_bytes = 8000;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    uint64_t sid;
    assert_int_equal(qk_stream_open(p.cconn, true, &sid), 0);
    size_t written = 0;
    qk_pair_write_pattern(p.cconn, sid, 64000, &written);
    qk_pair_flush(&p);
    /* The server never reads: its window stays at 8000 bytes. */
    qk_time end = p.now + QK_NS_PER_S;
    while (p.now < end && qk_pair_step(&p)) {
    }
    qk_conn_stats st;
    qk_conn_stats_get(p.cconn, &st);
    assert_int_equal(qk_flow_tx_available(&p.cconn->flow_tx), 0); /* blocked at 8000 */
    assert_int_equal(st.data_blocked_sent, 1);                    /* once per limit (§4.1) */
    qk_pair_free(&p);
}

/* QK_EV_DATAGRAM's payload is the endpoint's copy: the caller may reuse its
 * receive buffer before it polls (it pointed into that buffer before). */
static void test_datagram_event_owns_payload(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 5 * QK_NS_PER_MS), 0);
    p.ccfg.max_datagram_frame_bytes = p.scfg.max_datagram_frame_bytes = 1200;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    uint8_t msg[300];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)(i * 7 + 1);
    assert_int_equal(qk_datagram_send(p.cconn, msg, sizeof msg, 0), 0);
    uint8_t buf[1500];
    qk_datagram out = {.data = buf, .len = sizeof buf};
    assert_int_equal(qk_endpoint_send(p.client, &out, 1, p.now), 1);
    out.local = p.saddr;
    out.peer = p.caddr;
    assert_int_equal(qk_endpoint_recv(p.server, &out, p.now), 0);
    memset(buf, 0xee, sizeof buf); /* the receive buffer is reused */
    qk_event ev;
    bool seen = false;
    while (qk_endpoint_poll_event(p.server, &ev))
        if (ev.type == QK_EV_DATAGRAM) {
            assert_int_equal(ev.len, sizeof msg);
            assert_memory_equal(ev.data, msg, sizeof msg);
            seen = true;
        }
    assert_true(seen);
    qk_pair_free(&p);
}

static bool drop_all(void *ctx, bool to_server, uint64_t idx, uint8_t *data, size_t *len)
{
    return false;
}

/* A client whose server never answers gives up at the handshake timeout
 * (10 s by default), not at the 30 s idle timeout, and says why. */
static void test_handshake_timeout(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.filter = drop_all;
    qk_time start = p.now;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, start + 60 * QK_NS_PER_S));
    const qk_event *ev = qk_pair_client_closed(&p);
    assert_non_null(ev);
    assert_int_equal(ev->reason_err, QK_ERR_TIMEOUT);
    assert_non_null(strstr(ev->reason, "handshake timeout"));
    assert_non_null(strstr(ev->reason, "nothing received"));
    assert_true(p.now >= start + 10 * QK_NS_PER_S && p.now < start + 11 * QK_NS_PER_S);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_without_endpoint),
        cmocka_unit_test(test_data_blocked_sent),
        cmocka_unit_test(test_datagram_event_owns_payload),
        cmocka_unit_test(test_handshake_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
