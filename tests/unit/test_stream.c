/* SPDX-License-Identifier: MIT */
/* Stream: id rules (RFC 9000 §2.1) and the send/receive state machines
 * (§3.1, §3.2), frame legality (§19.4, §19.5, §19.8, §19.10, §19.13), final
 * size (§4.5), and "what to send" flags. */
#include "qk_test.h"
#include "transport/streams/stream.h"
#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

static void test_ids(void **state)
{
    (void)state;
    /* RFC 9000 §2.1 table: 0x0 client bidi, 0x1 server bidi, 0x2 client uni, 0x3 server uni. */
    assert_false(qk_stream_id_is_server(0));
    assert_false(qk_stream_id_is_uni(0));
    assert_true(qk_stream_id_is_server(1));
    assert_false(qk_stream_id_is_uni(1));
    assert_false(qk_stream_id_is_server(2));
    assert_true(qk_stream_id_is_uni(2));
    assert_true(qk_stream_id_is_server(3));
    assert_true(qk_stream_id_is_uni(3));
    assert_int_equal(qk_stream_id_index(4), 1);
    assert_int_equal(qk_stream_id_index(15), 3);
    assert_int_equal(qk_stream_id_make(3, true, true), 15);
    assert_int_equal(qk_stream_id_make(1, false, false), 4);
    assert_int_equal(qk_stream_id_make(2, true, false), 9);
    assert_true(qk_stream_id_is_local(4, false));
    assert_false(qk_stream_id_is_local(4, true));
    assert_true(qk_stream_id_is_local(7, true));
}

static qk_stream_list plist;

static void mk(qk_stream *s, uint64_t id, bool send, bool recv)
{
    qk_stream_params p = {.has_send = send,
                          .has_recv = recv,
                          .recv_max_data = 1000,
                          .send_max_data = 100,
                          .send_buffer_bytes = 10000,
                          .pend_list = &plist};
    qk_stream_init(s, id, &p);
}

static void test_recv_states(void **state)
{
    (void)state;
    qk_stream s;
    mk(&s, 1, true, true);
    const uint8_t *d = (const uint8_t *)"abcdefghij";
    uint8_t out[16];
    assert_int_equal(s.recv_state, QK_RECV_RECV);
    assert_int_equal(qk_stream_on_stream(&s, 5, d + 5, 5, true), 0);
    assert_int_equal(s.recv_state, QK_RECV_SIZE_KNOWN);
    assert_int_equal(qk_stream_recv_read(&s, out, sizeof out), 0);
    assert_int_equal(qk_stream_on_stream(&s, 0, d, 5, false), 0);
    assert_int_equal(s.recv_state, QK_RECV_DATA_RECVD);
    assert_int_equal(qk_stream_recv_read(&s, out, 4), 4);
    assert_int_equal(s.recv_state, QK_RECV_DATA_RECVD);
    assert_false(qk_stream_read_done(&s));
    assert_int_equal(qk_stream_recv_read(&s, out + 4, 12), 6);
    assert_memory_equal(out, d, 10);
    assert_int_equal(s.recv_state, QK_RECV_DATA_READ);
    assert_true(qk_stream_read_done(&s));
    /* Late duplicates are fine; data past the final size is not (§4.5). */
    assert_int_equal(qk_stream_on_stream(&s, 0, d, 10, true), 0);
    assert_int_equal(qk_stream_on_stream(&s, 8, d, 3, false), QK_ERR_FINAL_SIZE);
    assert_int_equal(qk_stream_on_reset_stream(&s, 7, 11), QK_ERR_FINAL_SIZE);
    assert_int_equal(qk_stream_on_reset_stream(&s, 7, 10), 0);
    assert_int_equal(s.recv_state, QK_RECV_DATA_READ);
    qk_stream_free(&s);
}

static void test_recv_reset(void **state)
{
    (void)state;
    qk_stream s;
    mk(&s, 0, true, true);
    uint8_t d[100] = {0}, out[100];
    assert_int_equal(qk_stream_on_stream(&s, 0, d, 50, false), 0);
    assert_int_equal(qk_stream_on_reset_stream(&s, 9, 40), QK_ERR_FINAL_SIZE); /* below data */
    assert_int_equal(qk_stream_on_reset_stream(&s, 9, 1001), QK_ERR_FLOW_CONTROL);
    assert_int_equal(s.recv_state, QK_RECV_RECV);
    assert_int_equal(qk_stream_on_reset_stream(&s, 9, 60), 0);
    assert_int_equal(s.recv_state, QK_RECV_RESET_RECVD);
    assert_int_equal(s.peer_reset_error, 9);
    assert_int_equal(s.recv.max_off, 60); /* credit consumed: charge the connection */
    assert_int_equal(qk_stream_on_reset_stream(&s, 9, 61), QK_ERR_FINAL_SIZE);
    assert_int_equal(qk_stream_on_reset_stream(&s, 9, 60), 0); /* repeated: fine */
    assert_int_equal(qk_stream_on_stream(&s, 55, d, 5, true), 0);
    assert_int_equal(qk_stream_on_stream(&s, 55, d, 6, false), QK_ERR_FINAL_SIZE);
    assert_int_equal(qk_stream_on_stream(&s, 0, d, 10, true), QK_ERR_FINAL_SIZE);
    assert_int_equal(qk_stream_recv_read(&s, out, sizeof out), QK_ERR_CLOSED);
    assert_int_equal(s.recv_state, QK_RECV_RESET_READ);
    assert_true(qk_stream_read_done(&s));
    /* FIN then reset with another size (§4.5). */
    qk_stream t;
    mk(&t, 4, true, true);
    assert_int_equal(qk_stream_on_stream(&t, 0, d, 10, true), 0);
    assert_int_equal(qk_stream_on_reset_stream(&t, 1, 20), QK_ERR_FINAL_SIZE);
    assert_int_equal(qk_stream_on_reset_stream(&t, 1, 10), 0);
    qk_stream_free(&s);
    qk_stream_free(&t);
}

static void test_send_states(void **state)
{
    (void)state;
    qk_stream s;
    mk(&s, 0, true, true);
    uint8_t d[300] = {0};
    uint64_t off;
    size_t len;
    bool fin;
    assert_int_equal(s.send_state, QK_SEND_READY);
    assert_int_equal(qk_stream_next_range(&s, 1000, &off, &len, &fin), 0);
    assert_int_equal(qk_stream_send_write(&s, d, 300), 300);
    assert_int_equal(s.send_state, QK_SEND_READY);
    /* Limited by the peer's MAX_STREAM_DATA (100). */
    assert_int_equal(qk_stream_next_range(&s, 1000, &off, &len, &fin), 1);
    assert_int_equal(len, 100);
    qk_stream_on_sent(&s, off, len, fin);
    assert_int_equal(s.send_state, QK_SEND_SEND);
    assert_int_equal(qk_stream_next_range(&s, 1000, &off, &len, &fin), 0);
    assert_true(s.pending & QK_STREAM_PEND_STREAM_DATA_BLOCKED);
    assert_int_equal(s.blocked_at, 100);
    qk_stream_on_control_sent(&s, QK_STREAM_PEND_STREAM_DATA_BLOCKED);
    assert_int_equal(qk_stream_next_range(&s, 1000, &off, &len, &fin), 0);
    assert_false(s.pending & QK_STREAM_PEND_STREAM_DATA_BLOCKED); /* once per limit */
    qk_stream_on_control_lost(&s, QK_STREAM_PEND_STREAM_DATA_BLOCKED);
    assert_true(s.pending & QK_STREAM_PEND_STREAM_DATA_BLOCKED); /* still blocked: again */
    assert_int_equal(qk_stream_on_max_stream_data(&s, 50), 0);   /* lower: ignored */
    assert_int_equal(s.send_max_data, 100);
    assert_int_equal(qk_stream_on_max_stream_data(&s, 1000), 0);
    assert_false(s.pending & QK_STREAM_PEND_STREAM_DATA_BLOCKED);
    assert_int_equal(qk_stream_finish(&s), 0);
    assert_int_equal(qk_stream_send_write(&s, d, 1), QK_ERR_STATE);
    assert_int_equal(qk_stream_next_range(&s, 1000, &off, &len, &fin), 1);
    assert_int_equal(off, 100);
    assert_int_equal(len, 200);
    assert_true(fin);
    qk_stream_on_sent(&s, off, len, fin);
    assert_int_equal(s.send_state, QK_SEND_DATA_SENT);
    qk_stream_on_lost(&s, 100, 200, true);
    assert_int_equal(qk_stream_next_range(&s, 1000, &off, &len, &fin), 1); /* retransmit */
    assert_int_equal(off, 100);
    qk_stream_on_sent(&s, off, len, fin);
    qk_stream_on_acked(&s, 0, 100, false);
    assert_int_equal(s.send_state, QK_SEND_DATA_SENT);
    qk_stream_on_acked(&s, 100, 200, true);
    assert_int_equal(s.send_state, QK_SEND_DATA_RECVD);
    assert_int_equal(qk_stream_send_reset(&s, 1), QK_ERR_STATE); /* terminal */
    assert_int_equal(qk_stream_on_stop_sending(&s, 5), 0);       /* nothing to reset */
    assert_int_equal(s.send_state, QK_SEND_DATA_RECVD);
    assert_false(qk_stream_is_closed(&s)); /* receive side still open */
    qk_stream_free(&s);
}

static void test_send_reset(void **state)
{
    (void)state;
    qk_stream s;
    mk(&s, 0, true, true);
    uint8_t d[300] = {0};
    uint64_t off;
    size_t len;
    bool fin;
    qk_stream_send_write(&s, d, 80);
    qk_stream_next_range(&s, 50, &off, &len, &fin);
    qk_stream_on_sent(&s, off, len, fin);
    assert_int_equal(qk_stream_send_reset(&s, 42), 0);
    assert_int_equal(s.send_state, QK_SEND_RESET_SENT);
    assert_int_equal(s.reset_final_size, 50); /* bytes sent, RFC 9000 §4.5 */
    assert_true(s.pending & QK_STREAM_PEND_RESET_STREAM);
    assert_int_equal(qk_stream_next_range(&s, 1000, &off, &len, &fin), 0);
    assert_int_equal(qk_stream_send_write(&s, d, 1), QK_ERR_STATE);
    assert_int_equal(qk_stream_send_reset(&s, 1), QK_ERR_STATE);
    qk_stream_on_control_sent(&s, QK_STREAM_PEND_RESET_STREAM);
    qk_stream_on_control_lost(&s, QK_STREAM_PEND_RESET_STREAM);
    assert_true(s.pending & QK_STREAM_PEND_RESET_STREAM); /* rebuilt */
    qk_stream_on_control_sent(&s, QK_STREAM_PEND_RESET_STREAM);
    qk_stream_on_reset_acked(&s);
    assert_int_equal(s.send_state, QK_SEND_RESET_RECVD);
    qk_stream_on_control_lost(&s, QK_STREAM_PEND_RESET_STREAM);
    assert_false(s.pending & QK_STREAM_PEND_RESET_STREAM); /* no longer needed */
    qk_stream_free(&s);
}

static void test_stop_sending(void **state)
{
    (void)state;
    qk_stream s;
    mk(&s, 0, true, true);
    uint8_t d[10] = {0};
    qk_stream_send_write(&s, d, 10);
    /* RFC 9000 §3.5: STOP_SENDING in Ready/Send -> RESET_STREAM with its code. */
    assert_int_equal(qk_stream_on_stop_sending(&s, 77), 0);
    assert_true(s.peer_stopped);
    assert_int_equal(s.send_state, QK_SEND_RESET_SENT);
    assert_int_equal(s.reset_error, 77);
    assert_int_equal(s.reset_final_size, 0);
    /* Our STOP_SENDING on the receive side. */
    assert_int_equal(qk_stream_recv_stop(&s, 3), 0);
    assert_true(s.pending & QK_STREAM_PEND_STOP_SENDING);
    assert_int_equal(s.stop_error, 3);
    assert_int_equal(qk_stream_on_reset_stream(&s, 3, 0), 0);
    assert_false(s.pending & QK_STREAM_PEND_STOP_SENDING); /* reset arrived: not needed */
    qk_stream_on_control_lost(&s, QK_STREAM_PEND_STOP_SENDING);
    assert_false(s.pending & QK_STREAM_PEND_STOP_SENDING);
    qk_stream_free(&s);
}

static void test_illegal_frames(void **state)
{
    (void)state;
    uint8_t d[4] = {0};
    /* Send-only (our uni stream): no STREAM/RESET_STREAM/STREAM_DATA_BLOCKED. */
    qk_stream so;
    mk(&so, 2, true, false);
    assert_int_equal(so.recv_state, QK_RECV_NONE);
    assert_int_equal(qk_stream_on_stream(&so, 0, d, 4, false), QK_ERR_STREAM_STATE);
    assert_int_equal(qk_stream_on_reset_stream(&so, 0, 0), QK_ERR_STREAM_STATE);
    assert_int_equal(qk_stream_on_stream_data_blocked(&so, 0), QK_ERR_STREAM_STATE);
    assert_int_equal(qk_stream_on_stop_sending(&so, 0), 0);
    assert_int_equal(qk_stream_recv_read(&so, d, 4), QK_ERR_STATE);
    assert_int_equal(qk_stream_recv_stop(&so, 0), QK_ERR_STATE);
    /* Receive-only (peer's uni stream): no MAX_STREAM_DATA/STOP_SENDING. */
    qk_stream ro;
    mk(&ro, 3, false, true);
    assert_int_equal(ro.send_state, QK_SEND_NONE);
    assert_int_equal(qk_stream_on_max_stream_data(&ro, 10), QK_ERR_STREAM_STATE);
    assert_int_equal(qk_stream_on_stop_sending(&ro, 0), QK_ERR_STREAM_STATE);
    assert_int_equal(qk_stream_send_write(&ro, d, 4), QK_ERR_STATE);
    assert_int_equal(qk_stream_finish(&ro), QK_ERR_STATE);
    assert_int_equal(qk_stream_send_reset(&ro, 0), QK_ERR_STATE);
    assert_int_equal(qk_stream_on_stream(&ro, 0, d, 4, true), 0);
    /* Flow control (§4.1). */
    assert_int_equal(qk_stream_on_stream(&ro, 996, d, 4, false), QK_ERR_FINAL_SIZE);
    qk_stream big;
    mk(&big, 3, false, true);
    assert_int_equal(qk_stream_on_stream(&big, 998, d, 4, false), QK_ERR_FLOW_CONTROL);
    assert_int_equal(qk_stream_on_stream(&big, 1ull << 62, d, 0, false), QK_ERR_FLOW_CONTROL);
    qk_stream_free(&so);
    qk_stream_free(&ro);
    qk_stream_free(&big);
}

static void test_credit_and_pending_list(void **state)
{
    (void)state;
    memset(&plist, 0, sizeof plist);
    qk_stream a, b;
    mk(&a, 3, false, true);
    mk(&b, 7, false, true);
    uint8_t d[1000] = {0}, out[1000];
    assert_int_equal(qk_stream_on_stream(&a, 0, d, 1000, false), 0);
    assert_int_equal(qk_stream_recv_read(&a, out, 400), 400);
    assert_int_equal(a.pending, 0); /* 600 credit left >= half the window */
    assert_int_equal(qk_stream_recv_read(&a, out, 200), 200);
    /* 400 < 500 left: limit moves to read offset + window (RFC 9000 §4.2). */
    assert_true(a.pending & QK_STREAM_PEND_MAX_STREAM_DATA);
    assert_int_equal(a.recv.limit, 1600);
    assert_ptr_equal(plist.head, &a);
    assert_int_equal(plist.count, 1);
    assert_int_equal(qk_stream_recv_stop(&b, 1), 0);
    assert_int_equal(plist.count, 2);
    qk_stream_on_control_sent(&a, QK_STREAM_PEND_MAX_STREAM_DATA);
    assert_int_equal(plist.count, 1);
    assert_ptr_equal(plist.head, &b);
    /* STREAM_DATA_BLOCKED at an old limit: our update was lost, send it again. */
    assert_int_equal(qk_stream_on_stream_data_blocked(&a, 1000), 0);
    assert_true(a.pending & QK_STREAM_PEND_MAX_STREAM_DATA);
    assert_int_equal(plist.count, 2);
    qk_stream_on_control_sent(&a, QK_STREAM_PEND_MAX_STREAM_DATA);
    qk_stream_on_control_lost(&a, QK_STREAM_PEND_MAX_STREAM_DATA);
    assert_true(a.pending & QK_STREAM_PEND_MAX_STREAM_DATA);
    /* FIN received: no more MAX_STREAM_DATA needed (§3.2 Size Known). */
    assert_int_equal(qk_stream_on_stream(&a, 1000, d, 10, true), 0);
    assert_false(a.pending & QK_STREAM_PEND_MAX_STREAM_DATA);
    qk_stream_free(&b); /* unlinks */
    assert_int_equal(plist.count, 0);
    assert_null(plist.head);
    qk_stream_free(&a);
}

static void test_closed_and_priority(void **state)
{
    (void)state;
    qk_stream s;
    mk(&s, 3, false, true);
    uint8_t d[1] = {0};
    assert_false(qk_stream_is_closed(&s));
    assert_int_equal(qk_stream_on_stream(&s, 0, d, 1, true), 0);
    assert_false(qk_stream_is_closed(&s));
    assert_int_equal(qk_stream_recv_read(&s, d, 1), 1);
    assert_true(qk_stream_is_closed(&s));
    assert_int_equal(s.urgency, 3);
    qk_stream_apply_priority(&s, 9, true);
    assert_int_equal(s.urgency, 7);
    assert_true(s.incremental);
    assert_string_equal(qk_recv_state_name(s.recv_state), "Data Read");
    assert_string_equal(qk_send_state_name(QK_SEND_RESET_SENT), "Reset Sent");
    qk_stream_free(&s);
}

typedef struct net_pkt {
    uint64_t off;
    size_t len;
    bool fin;
    uint8_t *bytes;
} net_pkt;

/* End to end: a sender stream feeds a receiver stream through a network that
 * loses, reorders and duplicates, with credit flowing back as MAX_STREAM_DATA.
 * The receiver must read the source byte-exact and both sides must finish. */
static void run_pair(uint64_t seed, size_t total)
{
    uint8_t *src = malloc(total), *dst = malloc(total);
    net_pkt *net = calloc(4096, sizeof *net);
    size_t nnet = 0;
    uint64_t st = seed;
    for (size_t i = 0; i < total; i++) src[i] = (uint8_t)qk_test_rand64(&st);
    qk_stream_params sp = {.has_send = true, .send_max_data = 2000, .send_buffer_bytes = 8000};
    qk_stream_params rp = {.has_recv = true, .recv_max_data = 2000};
    qk_stream snd, rcv;
    qk_stream_init(&snd, 2, &sp);
    qk_stream_init(&rcv, 2, &rp);
    size_t written = 0, got = 0;
    int steps = 0;
    while (!(snd.send_state == QK_SEND_DATA_RECVD && qk_stream_read_done(&rcv))) {
        assert_true(++steps < 1000000);
        if (written < total) {
            long n = qk_stream_send_write(&snd, src + written, total - written);
            assert_true(n >= 0);
            written += (size_t)n;
            if (written == total) assert_int_equal(qk_stream_finish(&snd), 0);
        }
        uint64_t r = qk_test_rand64(&st) % 100;
        if (r < 40 && nnet < 4096) {
            net_pkt p;
            size_t max_len = 1 + (size_t)(qk_test_rand64(&st) % 1200);
            if (qk_stream_next_range(&snd, max_len, &p.off, &p.len, &p.fin)) {
                assert_true(p.off + p.len <= snd.send_max_data);
                p.bytes = malloc(p.len + 1);
                assert_int_equal(qk_sendbuf_copy(&snd.send, p.off, p.len, p.bytes), 0);
                qk_stream_on_sent(&snd, p.off, p.len, p.fin);
                net[nnet++] = p;
            }
        } else if (r < 75 && nnet) {
            size_t i = (size_t)(qk_test_rand64(&st) % nnet);
            net_pkt p = net[i];
            uint64_t fate = qk_test_rand64(&st) % 100;
            if (fate < 15) { /* lost */
                qk_stream_on_lost(&snd, p.off, p.len, p.fin);
            } else {
                assert_int_equal(qk_stream_on_stream(&rcv, p.off, p.bytes, p.len, p.fin), 0);
                qk_stream_on_acked(&snd, p.off, p.len, p.fin);
            }
            if (fate >= 90) continue; /* duplicated: stays in the network */
            free(p.bytes);
            net[i] = net[--nnet];
        } else {
            size_t cap = (size_t)(qk_test_rand64(&st) % 3000);
            long n = qk_stream_recv_read(&rcv, dst + got, cap);
            assert_true(n >= 0);
            got += (size_t)n;
        }
        if (rcv.pending & QK_STREAM_PEND_MAX_STREAM_DATA) {
            qk_stream_on_control_sent(&rcv, QK_STREAM_PEND_MAX_STREAM_DATA);
            if (qk_test_rand64(&st) % 5 == 0)
                qk_stream_on_control_lost(&rcv, QK_STREAM_PEND_MAX_STREAM_DATA);
            else
                assert_int_equal(qk_stream_on_max_stream_data(&snd, rcv.recv.limit), 0);
        }
        if (snd.pending & QK_STREAM_PEND_STREAM_DATA_BLOCKED) {
            qk_stream_on_control_sent(&snd, QK_STREAM_PEND_STREAM_DATA_BLOCKED);
            assert_int_equal(qk_stream_on_stream_data_blocked(&rcv, snd.blocked_at), 0);
        }
        /* Receive memory stays within the window (plus partial blocks). */
        assert_true(qk_recvbuf_mem_bytes(&rcv.recv) <= 2000 + 3 * QK_STRBUF_BLOCK_BYTES);
    }
    assert_int_equal(got, total);
    assert_memory_equal(src, dst, total);
    assert_int_equal(rcv.recv_state, QK_RECV_DATA_READ);
    while (nnet) free(net[--nnet].bytes);
    qk_stream_free(&snd);
    qk_stream_free(&rcv);
    free(net);
    free(src);
    free(dst);
}

static void test_pair_random(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 8; seed++)
        run_pair(seed * 0x9E3779B97F4A7C15ull, 20000 + seed * 3001);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_recv_states),
        cmocka_unit_test(test_recv_reset),
        cmocka_unit_test(test_send_states),
        cmocka_unit_test(test_send_reset),
        cmocka_unit_test(test_stop_sending),
        cmocka_unit_test(test_illegal_frames),
        cmocka_unit_test(test_credit_and_pending_list),
        cmocka_unit_test(test_closed_and_priority),
        cmocka_unit_test(test_pair_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
