/* SPDX-License-Identifier: MIT */
/* Stream map: local opening within MAX_STREAMS, peer-initiated creation with
 * implicit opening (RFC 9000 §3.2), stream id legality, MAX_STREAMS credit,
 * STREAMS_BLOCKED, removal, and 1,000 streams without leaks. */
#include "qk_test.h"
#include "transport/streams/streams.h"
#include <quack/common.h>
#include <string.h>

static void init_map(qk_streams *m, bool server, uint64_t bidi, uint64_t uni)
{
    qk_streams_config cfg = {.is_server = server,
                             .max_streams_bidi = bidi,
                             .max_streams_uni = uni,
                             .max_stream_data_bidi_local = 1000,
                             .max_stream_data_bidi_remote = 2000,
                             .max_stream_data_uni = 3000,
                             .send_buffer_bytes = 4096};
    assert_int_equal(qk_streams_init(m, &cfg), 0);
}

static void peer_params(qk_streams *m, uint64_t bidi, uint64_t uni)
{
    qk_streams_peer_params p = {.max_streams_bidi = bidi,
                                .max_streams_uni = uni,
                                .max_stream_data_bidi_local = 111,
                                .max_stream_data_bidi_remote = 222,
                                .max_stream_data_uni = 333};
    assert_int_equal(qk_streams_set_peer_params(m, &p), 0);
}

static void test_open_local(void **state)
{
    (void)state;
    qk_streams m;
    init_map(&m, false, 10, 10);
    qk_stream *s;
    /* Before the peer's parameters, no credit. */
    assert_int_equal(qk_streams_open(&m, false, &s), QK_ERR_STREAM_LIMIT);
    peer_params(&m, 2, 1);
    assert_int_equal(qk_streams_open(&m, false, &s), 0);
    assert_int_equal(s->id, 0);              /* client bidi */
    assert_int_equal(s->send_max_data, 222); /* peer's bidi_remote */
    assert_int_equal(s->recv.limit, 1000);   /* our bidi_local */
    assert_int_equal(qk_streams_open(&m, false, &s), 0);
    assert_int_equal(s->id, 4);
    assert_int_equal(qk_streams_open(&m, true, &s), 0);
    assert_int_equal(s->id, 2); /* client uni */
    assert_int_equal(s->send_max_data, 333);
    assert_int_equal(s->recv_state, QK_RECV_NONE);
    uint64_t v;
    assert_false(qk_streams_want_streams_blocked(&m, false, &v));
    assert_int_equal(qk_streams_open(&m, false, &s), QK_ERR_STREAM_LIMIT);
    assert_null(s);
    assert_true(qk_streams_want_streams_blocked(&m, false, &v));
    assert_int_equal(v, 2);
    qk_streams_on_streams_blocked_sent(&m, false);
    assert_false(qk_streams_want_streams_blocked(&m, false, &v));
    assert_int_equal(qk_streams_open(&m, false, &s), QK_ERR_STREAM_LIMIT);
    assert_false(qk_streams_want_streams_blocked(&m, false, &v)); /* once per limit */
    qk_streams_on_streams_blocked_lost(&m, false, 2);
    assert_true(qk_streams_want_streams_blocked(&m, false, &v));
    /* MAX_STREAMS raises (RFC 9000 §19.11); smaller is ignored; > 2^60 is an error. */
    assert_int_equal(qk_streams_on_max_streams(&m, false, 1), 0);
    assert_int_equal(m.local_limit[QK_STREAMS_BIDI], 2);
    assert_int_equal(qk_streams_on_max_streams(&m, false, (1ull << 60) + 1), QK_ERR_FRAME_ENCODING);
    assert_int_equal(qk_streams_on_max_streams(&m, false, 3), 0);
    assert_false(qk_streams_want_streams_blocked(&m, false, &v));
    assert_int_equal(qk_streams_open(&m, false, &s), 0);
    assert_int_equal(s->id, 8);
    assert_ptr_equal(qk_streams_get(&m, 4), qk_streams_get(&m, 4));
    assert_non_null(qk_streams_get(&m, 4));
    assert_null(qk_streams_get(&m, 12));
    qk_streams_peer_params bad = {.max_streams_bidi = (1ull << 60) + 1};
    assert_int_equal(qk_streams_set_peer_params(&m, &bad), QK_ERR_TRANSPORT_PARAMETER);
    qk_streams_free(&m);
}

static void test_peer_streams(void **state)
{
    (void)state;
    qk_streams m;
    init_map(&m, true, 4, 2); /* we are the server */
    peer_params(&m, 5, 5);
    qk_stream *s;
    /* Client bidi id 8 (index 2) implicitly opens 0 and 4 (RFC 9000 §3.2). */
    assert_int_equal(qk_streams_get_for_frame(&m, 8, QK_FRAME_TO_RECV, &s), 0);
    assert_non_null(s);
    assert_int_equal(s->id, 8);
    assert_int_equal(m.count, 3);
    assert_non_null(qk_streams_get(&m, 0));
    assert_non_null(qk_streams_get(&m, 4));
    assert_int_equal(s->recv.limit, 2000);   /* our bidi_remote */
    assert_int_equal(s->send_max_data, 111); /* peer's bidi_local */
    assert_ptr_equal(qk_streams_poll_new_remote(&m), qk_streams_get(&m, 0));
    assert_ptr_equal(qk_streams_poll_new_remote(&m), qk_streams_get(&m, 4));
    assert_ptr_equal(qk_streams_poll_new_remote(&m), s);
    assert_null(qk_streams_poll_new_remote(&m));
    /* Lower id: existing, no creation. */
    qk_stream *t;
    assert_int_equal(qk_streams_get_for_frame(&m, 4, QK_FRAME_TO_SEND, &t), 0);
    assert_int_equal(t->id, 4);
    assert_int_equal(m.count, 3);
    /* Index 4 is beyond our limit of 4 (§4.6). */
    assert_int_equal(qk_streams_get_for_frame(&m, 16, QK_FRAME_TO_RECV, &t), QK_ERR_STREAM_LIMIT);
    assert_int_equal(qk_streams_get_for_frame(&m, 12, QK_FRAME_TO_RECV, &t), 0);
    /* Peer uni: 2 allowed; MAX_STREAM_DATA/STOP_SENDING on them is illegal (§19.10, §19.5). */
    assert_int_equal(qk_streams_get_for_frame(&m, 2, QK_FRAME_TO_SEND, &t), QK_ERR_STREAM_STATE);
    assert_int_equal(qk_streams_get_for_frame(&m, 6, QK_FRAME_TO_RECV, &t), 0);
    assert_int_equal(t->recv.limit, 3000);
    assert_int_equal(t->send_state, QK_SEND_NONE);
    assert_int_equal(qk_streams_get_for_frame(&m, 10, QK_FRAME_TO_RECV, &t), QK_ERR_STREAM_LIMIT);
    /* Our streams: server bidi 1 not opened yet -> STREAM_STATE (§19.8). */
    assert_int_equal(qk_streams_get_for_frame(&m, 1, QK_FRAME_TO_RECV, &t), QK_ERR_STREAM_STATE);
    assert_int_equal(qk_streams_get_for_frame(&m, 1, QK_FRAME_TO_SEND, &t), QK_ERR_STREAM_STATE);
    assert_int_equal(qk_streams_open(&m, false, &t), 0);
    assert_int_equal(t->id, 1);
    assert_int_equal(qk_streams_get_for_frame(&m, 1, QK_FRAME_TO_RECV, &t), 0);
    assert_int_equal(t->id, 1);
    /* Our uni stream 3: STREAM for it is illegal even once opened (§19.8). */
    assert_int_equal(qk_streams_open(&m, true, &t), 0);
    assert_int_equal(t->id, 3);
    assert_int_equal(qk_streams_get_for_frame(&m, 3, QK_FRAME_TO_RECV, &t), QK_ERR_STREAM_STATE);
    assert_int_equal(qk_streams_get_for_frame(&m, 3, QK_FRAME_TO_SEND, &t), 0);
    assert_int_equal(qk_streams_get_for_frame(&m, 7, QK_FRAME_TO_SEND, &t), QK_ERR_STREAM_STATE);
    /* Iteration sees every stream once. */
    size_t n = 0;
    for (qk_stream *it = qk_streams_next(&m, NULL); it; it = qk_streams_next(&m, it)) n++;
    assert_int_equal(n, m.count);
    assert_int_equal(n, 8); /* peer bidi 0,4,8,12; peer uni 2,6; ours 1, 3 */
    qk_streams_free(&m);
}

/* Close a peer uni stream: FIN received and read. */
static void finish_peer_uni(qk_streams *m, qk_stream *s)
{
    uint8_t b[1] = {0};
    assert_int_equal(qk_stream_on_stream(s, 0, b, 1, true), 0);
    assert_int_equal(qk_stream_recv_read(s, b, 1), 1);
    assert_true(qk_stream_is_closed(s));
    assert_int_equal(qk_streams_gc(m, s), 1);
}

static void test_max_streams_credit(void **state)
{
    (void)state;
    qk_streams m;
    init_map(&m, true, 10, 10);
    qk_stream *s;
    uint64_t v;
    /* Peer opens uni streams 0..9 (ids 2, 6, ...). */
    assert_int_equal(
        qk_streams_get_for_frame(&m, qk_stream_id_make(9, false, true), QK_FRAME_TO_RECV, &s), 0);
    assert_int_equal(
        qk_streams_get_for_frame(&m, qk_stream_id_make(10, false, true), QK_FRAME_TO_RECV, &s),
        QK_ERR_STREAM_LIMIT);
    assert_int_equal(qk_streams_gc(&m, qk_streams_get(&m, 2)), 0); /* still open */
    for (uint64_t i = 0; i < 4; i++)
        finish_peer_uni(&m, qk_streams_get(&m, qk_stream_id_make(i, false, true)));
    assert_false(qk_streams_want_max_streams(&m, true, &v)); /* 4 < half of 10 */
    finish_peer_uni(&m, qk_streams_get(&m, qk_stream_id_make(4, false, true)));
    assert_true(qk_streams_want_max_streams(&m, true, &v)); /* 5 returned */
    assert_int_equal(v, 15);
    assert_false(qk_streams_want_max_streams(&m, false, &v));
    qk_streams_on_max_streams_sent(&m, true);
    assert_false(qk_streams_want_max_streams(&m, true, &v));
    qk_streams_on_max_streams_lost(&m, true, 15);
    assert_true(qk_streams_want_max_streams(&m, true, &v));
    qk_streams_on_max_streams_sent(&m, true);
    /* Frames for a closed (removed) stream are ignored, not errors. */
    assert_int_equal(qk_streams_get_for_frame(&m, 2, QK_FRAME_TO_RECV, &s), 0);
    assert_null(s);
    /* Index 14 is now allowed, 15 is not. */
    assert_int_equal(
        qk_streams_get_for_frame(&m, qk_stream_id_make(14, false, true), QK_FRAME_TO_RECV, &s), 0);
    assert_int_equal(
        qk_streams_get_for_frame(&m, qk_stream_id_make(15, false, true), QK_FRAME_TO_RECV, &s),
        QK_ERR_STREAM_LIMIT);
    /* STREAMS_BLOCKED at a stale limit: MAX_STREAMS again (a lost update). */
    assert_int_equal(qk_streams_on_streams_blocked(&m, true, 10), 0);
    assert_true(qk_streams_want_max_streams(&m, true, &v));
    assert_int_equal(v, 15);
    assert_int_equal(qk_streams_on_streams_blocked(&m, true, (1ull << 60) + 1),
                     QK_ERR_FRAME_ENCODING);
    /* The pending list holds nothing yet; a STOP_SENDING request links a stream. */
    assert_null(qk_streams_pending_head(&m));
    s = qk_streams_get(&m, qk_stream_id_make(7, false, true));
    assert_int_equal(qk_stream_recv_stop(s, 1), 0);
    assert_ptr_equal(qk_streams_pending_head(&m), s);
    qk_streams_free(&m); /* frees pending streams too (ASan checks) */
}

/* 1,000 streams of each kind opened, used and closed under tight limits. */
static void test_thousand_streams(void **state)
{
    (void)state;
    qk_streams cli, srv;
    init_map(&cli, false, 0, 0);
    init_map(&srv, true, 16, 8);
    peer_params(&cli, 16, 8);
    uint8_t data[300], out[300];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 1);
    int done_bidi = 0, done_uni = 0;
    while (done_bidi < 1000 || done_uni < 1000) {
        bool uni = done_uni < done_bidi;
        qk_stream *c;
        int rc = qk_streams_open(&cli, uni, &c);
        if (rc == QK_ERR_STREAM_LIMIT) {
            uint64_t v;
            assert_true(qk_streams_want_max_streams(&srv, uni, &v));
            qk_streams_on_max_streams_sent(&srv, uni);
            assert_int_equal(qk_streams_on_max_streams(&cli, uni, v), 0);
            continue;
        }
        assert_int_equal(rc, 0);
        size_t len = 1 + (c->id % 200); /* within the peer's stream credit (222) */
        assert_int_equal(qk_stream_send_write(c, data, len), (long)len);
        assert_int_equal(qk_stream_finish(c), 0);
        uint64_t off;
        size_t n;
        bool fin;
        assert_int_equal(qk_stream_next_range(c, 1200, &off, &n, &fin), 1);
        assert_true(fin);
        assert_int_equal(qk_sendbuf_copy(&c->send, off, n, out), 0);
        qk_stream_on_sent(c, off, n, fin);
        qk_stream *s;
        assert_int_equal(qk_streams_get_for_frame(&srv, c->id, QK_FRAME_TO_RECV, &s), 0);
        assert_non_null(s);
        assert_ptr_equal(qk_streams_poll_new_remote(&srv), s);
        assert_int_equal(qk_stream_on_stream(s, off, out, n, fin), 0);
        assert_int_equal(qk_stream_recv_read(s, out, sizeof out), (long)len);
        assert_memory_equal(out, data, len);
        qk_stream_on_acked(c, off, n, fin);
        if (!uni) { /* the server answers with an empty FIN */
            assert_int_equal(qk_stream_finish(s), 0);
            assert_int_equal(qk_stream_next_range(s, 1200, &off, &n, &fin), 1);
            qk_stream_on_sent(s, off, n, fin);
            qk_stream_on_acked(s, off, n, fin);
            assert_int_equal(qk_stream_on_stream(c, off, NULL, 0, fin), 0);
            assert_int_equal(qk_stream_recv_read(c, out, sizeof out), 0);
        }
        assert_int_equal(qk_streams_gc(&srv, s), 1);
        assert_int_equal(qk_streams_gc(&cli, c), 1);
        if (uni)
            done_uni++;
        else
            done_bidi++;
    }
    assert_int_equal(cli.count, 0);
    assert_int_equal(srv.count, 0);
    assert_int_equal(srv.remote_opened[QK_STREAMS_BIDI], 1000);
    assert_int_equal(srv.remote_opened[QK_STREAMS_UNI], 1000);
    /* Credit returned in half-window steps: limit = closed + window. */
    assert_int_equal(srv.remote_limit[QK_STREAMS_BIDI], 1000 + 16);
    assert_int_equal(srv.remote_limit[QK_STREAMS_UNI], 1000 + 8);
    qk_streams_free(&cli);
    qk_streams_free(&srv);
}

/* Many live streams force hash-table growth; lookups stay correct. */
static void test_table_growth(void **state)
{
    (void)state;
    qk_streams m;
    init_map(&m, true, 5000, 0);
    qk_stream *s;
    assert_int_equal(
        qk_streams_get_for_frame(&m, qk_stream_id_make(4999, false, false), QK_FRAME_TO_RECV, &s),
        0);
    assert_int_equal(m.count, 5000);
    assert_true(m.nbuckets >= 5000);
    for (uint64_t i = 0; i < 5000; i++) {
        qk_stream *t = qk_streams_get(&m, qk_stream_id_make(i, false, false));
        assert_non_null(t);
        assert_int_equal(t->id, qk_stream_id_make(i, false, false));
    }
    assert_null(qk_streams_get(&m, qk_stream_id_make(5000, false, false)));
    qk_streams_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_local),         cmocka_unit_test(test_peer_streams),
        cmocka_unit_test(test_max_streams_credit), cmocka_unit_test(test_thousand_streams),
        cmocka_unit_test(test_table_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
