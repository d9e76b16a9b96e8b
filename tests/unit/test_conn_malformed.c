/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/conn_recv.c */
/* Hostile input against an established connection (RFC 9000 §12.4, §19, §4,
 * §5.1, §13.1, §17): each malformed frame, frame in the wrong packet type or
 * illegal stream / flow-control transition is sealed with the sender's real
 * keys (tests/support/qk_inject) and must close the receiver with the RFC
 * error code -- checked on the receiver's state, its CLOSED event, and the
 * CONNECTION_CLOSE the other side decodes from the wire. */
#include "qk_inject.h"
#include "qk_pair.h"
#include "qk_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/conn/conn.h"

#define NO_FT    UINT64_MAX
#define DEADLINE (10 * QK_NS_PER_S)

/* Wire codes, RFC 9000 §20.1. */
enum {
    FLOW_CONTROL_ERROR = 0x3,
    STREAM_LIMIT_ERROR = 0x4,
    STREAM_STATE_ERROR = 0x5,
    FINAL_SIZE_ERROR = 0x6,
    FRAME_ENCODING_ERROR = 0x7,
    CONNECTION_ID_LIMIT_ERROR = 0x9,
    PROTOCOL_VIOLATION = 0xa,
};

typedef struct mcase {
    const char *name;
    const char *hex;                    /* frames, hex */
    uint64_t code;                      /* expected wire code */
    uint64_t ftype;                     /* expected frame type in CONNECTION_CLOSE, NO_FT to skip */
    uint8_t set_bits;                   /* OR'ed into the unprotected first byte */
    bool to_client;                     /* inject server -> client instead */
    uint64_t max_data, max_stream_data; /* receiver config overrides (0 = default) */
    uint64_t max_datagram;              /* receiver max_datagram_frame_size (0 = off) */
    bool ackfreq;                       /* receiver advertises min_ack_delay 1 ms */
} mcase;

static bool established(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->cconn && p->sconn && qk_conn_established(p->cconn) && qk_conn_established(p->sconn) &&
           p->cconn->handshake_confirmed && p->nq == 0;
}

static void start_established(qk_pair *p, const mcase *mc)
{
    assert_int_equal(qk_pair_init(p, 10 * QK_NS_PER_MS), 0);
    qk_config *rc = mc && mc->to_client ? &p->ccfg : &p->scfg;
    if (mc && mc->max_data) rc->initial_max_data_bytes = mc->max_data;
    if (mc && mc->max_stream_data) rc->initial_max_stream_data_bytes = mc->max_stream_data;
    if (mc && mc->max_datagram) rc->max_datagram_frame_bytes = mc->max_datagram;
    /* ack-frequency off unless the case negotiates it: the *_not_negotiated
     * cases need it */
    rc->min_ack_delay_ns = mc && mc->ackfreq ? 1 * QK_NS_PER_MS : 0;
    assert_int_equal(qk_pair_start(p), 0);
    assert_true(qk_pair_run_until(p, established, NULL, p->now + 2 * QK_NS_PER_S));
}

static const qk_event *find_closed(const qk_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ev[i].type == QK_EV_CLOSED) return &ev[i];
    return NULL;
}

static bool both_closed(qk_pair *p, void *ctx)
{
    (void)ctx;
    return find_closed(p->sev, p->nsev) && find_closed(p->cev, p->ncev);
}

/* The receiver (victim) must be closing with code/ftype; then both sides must
 * report CLOSED within bounded virtual time: the victim locally, the other
 * side remotely with the same code read from the CONNECTION_CLOSE frame. */
static void expect_close(qk_pair *p, bool victim_is_server, uint64_t code, uint64_t ftype)
{
    qk_conn *v = victim_is_server ? p->sconn : p->cconn;
    assert_non_null(v);
    if (v->state != QK_CONN_CLOSING || v->close.code != code)
        fprintf(stderr, "victim state %d code 0x%llx ft 0x%llx reason '%s'\n", (int)v->state,
                (unsigned long long)v->close.code, (unsigned long long)v->close.frame_type,
                v->close.reason);
    assert_int_equal(v->state, QK_CONN_CLOSING);
    assert_int_equal(v->close.code, code);
    if (ftype != NO_FT) assert_int_equal(v->close.frame_type, ftype);
    size_t steps = 0;
    while (!both_closed(p, NULL) && p->now < 1 * QK_NS_PER_S + 60 * QK_NS_PER_S && steps < 10000) {
        if (!qk_pair_step(p)) break;
        steps++;
    }
    const qk_event *vs =
        find_closed(victim_is_server ? p->sev : p->cev, victim_is_server ? p->nsev : p->ncev);
    const qk_event *os =
        find_closed(victim_is_server ? p->cev : p->sev, victim_is_server ? p->ncev : p->nsev);
    assert_non_null(vs);
    assert_int_equal(vs->error_code, code);
    assert_false(vs->remote);
    assert_false(vs->app_error);
    assert_int_equal(vs->reason_err, -(int)(0x1000 + code));
    assert_non_null(os);
    assert_int_equal(os->error_code, code);
    assert_true(os->remote);
    assert_false(os->app_error);
}

static void run_case(void **state)
{
    const mcase *mc = *state;
    qk_pair p;
    uint8_t frames[1100];
    long n = qk_test_hex(mc->hex, frames, sizeof frames);
    assert_true(n >= 0);
    start_established(&p, mc);
    assert_int_equal(
        qk_pair_inject(&p, !mc->to_client, QK_PKT_1RTT, frames, (size_t)n, mc->set_bits), 0);
    expect_close(&p, !mc->to_client, mc->code, mc->ftype);
    qk_pair_free(&p);
}

#define C(nm, hx, cd, ft, ...)                                                                     \
    {                                                                                              \
        .name = nm, .hex = hx, .code = cd, .ftype = ft, __VA_ARGS__                                \
    }

#define NCID(seq, rpt) "18 " seq " " rpt " 08 0102030405060708 00112233445566778899aabbccddeeff "

static const mcase cases[] = {
    /* ---- broken fields: FRAME_ENCODING_ERROR (RFC 9000 §12.4, §19) ---- */
    C("stream_truncated", "0e 00", FRAME_ENCODING_ERROR, 0x0e),
    C("stream_len_past_packet", "0a 00 10 41 41", FRAME_ENCODING_ERROR, 0x0a),
    C("max_data_bad_varint", "10 c0 00 00", FRAME_ENCODING_ERROR, 0x10),
    C("ack_bad_varint", "02 80", FRAME_ENCODING_ERROR, 0x02),
    /* §19.8: offset + length beyond 2^62 - 1 */
    C("stream_beyond_2_62", "0e 00 ff ff ff ff ff ff ff ff 01 41", FRAME_ENCODING_ERROR, 0x0e),
    /* §19.3.1: a gap that takes the next range below zero */
    C("ack_range_underflow", "02 05 00 01 00 05 00", FRAME_ENCODING_ERROR, 0x02),
    C("ack_first_range_underflow", "02 05 00 00 06", FRAME_ENCODING_ERROR, 0x02),
    /* §19.15: length 0 or > 20 */
    C("new_cid_len_0", "18 01 00 00 00112233445566778899aabbccddeeff", FRAME_ENCODING_ERROR, 0x18),
    C("new_cid_len_21",
      "18 01 00 15 000102030405060708090a0b0c0d0e0f1011121314 00112233445566778899aabbccddeeff",
      FRAME_ENCODING_ERROR, 0x18),
    /* §19.15: retire_prior_to > seq */
    C("new_cid_retire_gt_seq", NCID("01", "02"), FRAME_ENCODING_ERROR, 0x18),
    /* §19.11, §19.14: stream counts above 2^60 */
    C("max_streams_bidi_2_60", "12 d0 00 00 00 00 00 00 01", FRAME_ENCODING_ERROR, 0x12),
    C("max_streams_uni_2_60", "13 d0 00 00 00 00 00 00 01", FRAME_ENCODING_ERROR, 0x13),
    C("streams_blocked_2_60", "16 d0 00 00 00 00 00 00 01", FRAME_ENCODING_ERROR, 0x16),
    /* §19.19: reason phrase longer than the packet */
    C("close_reason_past_packet", "1c 00 00 20 41", FRAME_ENCODING_ERROR, 0x1c),
    C("close_app_reason_past_packet", "1d 00 20 41", FRAME_ENCODING_ERROR, 0x1d),
    /* a range count far beyond what the packet can hold must fail fast (§19.3) */
    C("ack_huge_range_count", "02 05 00 bf ff ff ff 00", FRAME_ENCODING_ERROR, 0x02),
    C("crypto_truncated", "06 00 05 01", FRAME_ENCODING_ERROR, 0x06),
    C("reset_stream_truncated", "04 00 00", FRAME_ENCODING_ERROR, 0x04),
    C("path_challenge_truncated", "1a 01 02 03", FRAME_ENCODING_ERROR, 0x1a),
    /* §12.4: unknown frame types, one- and four-byte encodings */
    C("unknown_type", "21", FRAME_ENCODING_ERROR, 0x21),
    C("unknown_type_4byte", "80 01 23 45", FRAME_ENCODING_ERROR, 0x12345),
    C("unknown_after_ping", "01 01 21", FRAME_ENCODING_ERROR, 0x21),
    /* §19.7: an empty NEW_TOKEN (server -> client) */
    C("new_token_empty", "07 00", FRAME_ENCODING_ERROR, 0x07, .to_client = true),

    /* ---- a hostile server: the client closes with the same codes ---- */
    C("client_max_streams_2_60", "12 d0 00 00 00 00 00 00 01", FRAME_ENCODING_ERROR, 0x12,
      .to_client = true),
    C("client_stream_on_unopened_local", "0a 00 01 41", STREAM_STATE_ERROR, 0x0a,
      .to_client = true),
    C("client_stream_beyond_max_streams", "0a 41 91 01 41", STREAM_LIMIT_ERROR, 0x0a,
      .to_client = true),
    C("client_beyond_max_stream_data", "0e 01 43 e8 01 41", FLOW_CONTROL_ERROR, 0x0e,
      .to_client = true, .max_stream_data = 1000),
    C("client_final_size_change", "0b 01 05 4141414141 0b 01 03 414141", FINAL_SIZE_ERROR, 0x0b,
      .to_client = true),
    C("client_ack_unsent_pn", "02 67 10 00 00 00", PROTOCOL_VIOLATION, 0x02, .to_client = true),
    C("client_new_cid_beyond_limit",
      NCID("11", "00") NCID("12", "00") NCID("13", "00") NCID("14", "00"),
      CONNECTION_ID_LIMIT_ERROR, 0x18, .to_client = true),
    C("client_empty_packet", "", PROTOCOL_VIOLATION, NO_FT, .to_client = true),
    C("client_reserved_bits", "01", PROTOCOL_VIOLATION, NO_FT, .set_bits = 0x10, .to_client = true),

    /* ---- frames the peer may not send: PROTOCOL_VIOLATION ---- */
    C("handshake_done_from_client", "1e", PROTOCOL_VIOLATION, 0x1e),  /* §19.20 */
    C("new_token_from_client", "07 01 aa", PROTOCOL_VIOLATION, 0x07), /* §19.7 */
    C("ack_frequency_not_negotiated", "40 af 00 01 40 64 00", PROTOCOL_VIOLATION, 0xaf),
    C("immediate_ack_not_negotiated", "1f", PROTOCOL_VIOLATION, 0x1f), /* ack-freq §5 */
    /* ack-frequency-12 §4, negotiated (we advertise min_ack_delay 1 ms): a
     * requested max ack delay below it, or of 2^14 ms or more, is a
     * PROTOCOL_VIOLATION; a frame whose sequence number is not above the
     * largest seen is ignored before any check (seq 62 with 25 ms, then seq
     * 61 with 500 us: no error until the HANDSHAKE_DONE after them). The
     * client's own sender has used the low sequence numbers by then. */
    C("ack_frequency_delay_below_min", "40 af 3c 01 41 f4 00", PROTOCOL_VIOLATION, 0xaf,
      .ackfreq = true),
    C("ack_frequency_delay_2_14_ms", "40 af 3c 01 80 fa 00 00 00", PROTOCOL_VIOLATION, 0xaf,
      .ackfreq = true),
    C("ack_frequency_old_seq_ignored", "40 af 3e 0a 80 00 61 a8 03 40 af 3d 01 41 f4 00 1e",
      PROTOCOL_VIOLATION, 0x1e, .ackfreq = true),
    C("datagram_not_negotiated", "31 01 41", PROTOCOL_VIOLATION, 0x31), /* RFC 9221 §3 */
    /* RFC 9221 §3: larger than the max_datagram_frame_size we advertised (8) */
    C("datagram_too_large", "31 08 4142434445464748", PROTOCOL_VIOLATION, 0x31, .max_datagram = 8),
    C("ack_unsent_pn", "02 67 10 00 00 00", PROTOCOL_VIOLATION, 0x02), /* §13.1 */
    C("empty_packet", "", PROTOCOL_VIOLATION, NO_FT),                  /* §12.4 */
    C("padding_only_ok_then_bad", "00 00 00 1e", PROTOCOL_VIOLATION, 0x1e),
    C("reserved_bits_set", "01", PROTOCOL_VIOLATION, NO_FT, .set_bits = 0x18), /* §17.3.1 */
    C("reserved_bit_low", "01", PROTOCOL_VIOLATION, NO_FT, .set_bits = 0x08),
    /* §19.16: retiring the CID the packet is addressed to (seq 0, the only one) */
    C("retire_cid_in_use", "19 00", PROTOCOL_VIOLATION, 0x19),
    C("retire_unissued_cid", "19 40 63", PROTOCOL_VIOLATION, 0x19), /* §19.16 */

    /* ---- stream state (RFC 9000 §3, §19.8, §19.4, §19.5, §19.10) ---- */
    C("stream_on_local_uni", "0a 03 01 41", STREAM_STATE_ERROR, 0x0a),
    C("stream_on_unopened_local_bidi", "0a 01 01 41", STREAM_STATE_ERROR, 0x0a),
    C("reset_on_local_uni", "04 03 00 00", STREAM_STATE_ERROR, 0x04),
    C("stop_sending_on_remote_uni", "05 02 00", STREAM_STATE_ERROR, 0x05),
    C("max_stream_data_on_remote_uni", "11 02 40 64", STREAM_STATE_ERROR, 0x11),
    C("max_stream_data_on_unopened_local", "11 01 40 64", STREAM_STATE_ERROR, 0x11),
    C("stop_sending_on_unopened_local", "05 01 00", STREAM_STATE_ERROR, 0x05),
    C("stream_data_blocked_on_local_uni", "15 03 00", STREAM_STATE_ERROR, 0x15),
    /* §4.6: stream 400 is the 101st client bidi stream; the limit is 100 */
    C("stream_beyond_max_streams", "0a 41 90 01 41", STREAM_LIMIT_ERROR, 0x0a),
    C("uni_stream_beyond_max_streams", "0a 41 92 01 41", STREAM_LIMIT_ERROR, 0x0a),

    /* ---- flow control (RFC 9000 §4.1) ---- */
    C("beyond_max_stream_data", "0e 00 43 e8 01 41", FLOW_CONTROL_ERROR, 0x0e,
      .max_stream_data = 1000),
    C("beyond_max_data", "0e 00 45 db 01 41 0a 04 01 41", FLOW_CONTROL_ERROR, 0x0a,
      .max_data = 1500),
    C("reset_beyond_max_stream_data", "04 00 00 43 e9", FLOW_CONTROL_ERROR, 0x04,
      .max_stream_data = 1000),

    /* RFC 9000 §7.5: CRYPTO data beyond what we buffer */
    C("crypto_beyond_buffer", "06 80 04 00 00 01 41", 0xd, 0x06),

    /* ---- final size (RFC 9000 §4.5) ---- */
    C("final_size_change", "0b 00 05 4141414141 0b 00 03 414141", FINAL_SIZE_ERROR, 0x0b),
    C("data_beyond_final_size", "0b 00 02 4141 0e 00 05 01 41", FINAL_SIZE_ERROR, 0x0e),
    C("reset_below_received", "0a 00 05 4141414141 04 00 00 02", FINAL_SIZE_ERROR, 0x04),
    C("reset_differs_from_fin", "0b 00 02 4141 04 00 00 03", FINAL_SIZE_ERROR, 0x04),

    /* ---- connection IDs (RFC 9000 §5.1.1) ---- */
    /* Sequence numbers above those the real peer issued (it fills our limit). */
    C("new_cid_beyond_limit", NCID("11", "00") NCID("12", "00") NCID("13", "00") NCID("14", "00"),
      CONNECTION_ID_LIMIT_ERROR, 0x18),
    C("new_cid_same_seq_other_cid",
      NCID("01", "00") "18 01 00 08 1111111111111111 00112233445566778899aabbccddeeff",
      PROTOCOL_VIOLATION, 0x18),
};

/* RFC 9000 §12.4 Table 3: STREAM is not allowed in Handshake packets. Drop
 * everything the client sends after its first Initial so the server keeps
 * its Handshake keys while the client has its own. */
static bool drop_client_after_first(void *ctx, bool to_server, uint64_t idx, uint8_t *d, size_t *l)
{
    (void)ctx;
    (void)d;
    (void)l;
    return !to_server || idx == 0;
}

static bool client_has_hs_keys(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->cconn && p->cconn->sp[QK_PN_SPACE_HANDSHAKE].has_tx && p->nq == 0;
}

static void hs_case(const char *hex, uint64_t code)
{
    qk_pair p;
    uint8_t frames[256];
    long n = qk_test_hex(hex, frames, sizeof frames);
    assert_true(n > 0);
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.filter = drop_client_after_first;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, client_has_hs_keys, NULL, p.now + QK_NS_PER_S));
    p.filter = NULL;
    assert_int_equal(qk_pair_inject(&p, true, QK_PKT_HANDSHAKE, frames, (size_t)n, 0), 0);
    size_t steps = 0;
    while (!find_closed(p.sev, p.nsev) && steps++ < 10000 && p.now < 60 * QK_NS_PER_S)
        if (!qk_pair_step(&p)) break;
    const qk_event *ev = find_closed(p.sev, p.nsev);
    assert_non_null(ev);
    assert_int_equal(ev->error_code, code);
    assert_false(ev->remote);
    qk_pair_free(&p);
}

static void test_stream_in_handshake(void **state)
{
    (void)state;
    hs_case("0a 00 01 41", PROTOCOL_VIOLATION);
}

static void test_handshake_done_in_handshake(void **state)
{
    (void)state;
    hs_case("1e", PROTOCOL_VIOLATION);
}

static void test_max_data_in_handshake(void **state)
{
    (void)state;
    hs_case("10 44 00", PROTOCOL_VIOLATION);
}

/* A fresh client Initial that carries STREAM (RFC 9000 §12.4 Table 3). */
static void initial_case(const char *hex, uint64_t code)
{
    qk_pair p;
    uint8_t frames[256], dg[1500];
    long n = qk_test_hex(hex, frames, sizeof frames);
    assert_true(n > 0);
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.server = qk_endpoint_new(&p.scfg);
    assert_non_null(p.server);
    static const uint8_t dcid[8] = {1, 2, 3, 4, 5, 6, 7, 8}, scid[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    int len = qk_inject_client_initial(dg, sizeof dg, dcid, 8, scid, 8, 0, frames, (size_t)n, 1200);
    assert_int_equal(len, 1200);
    qk_datagram d = {.data = dg, .len = (size_t)len, .peer = p.caddr, .local = p.saddr};
    assert_int_equal(qk_endpoint_recv(p.server, &d, p.now), 0);
    assert_int_equal(qk_endpoint_conn_count(p.server), 1);
    /* The server answers with CONNECTION_CLOSE in an Initial packet (§10.2.3). */
    uint8_t out[1500];
    qk_datagram o = {.data = out, .len = sizeof out};
    assert_true(qk_endpoint_send(p.server, &o, 1, p.now) == 1);
    assert_int_equal(out[0] & 0xb0, 0x80); /* long header, type Initial (bits 0x30 = 0) */
    qk_event ev = {0};
    bool closed = false;
    for (int i = 0; i < 100 && !closed; i++) {
        qk_time t = qk_endpoint_next_timeout(p.server);
        if (t == QK_TIME_INFINITE) break;
        if (t > p.now) p.now = t;
        qk_endpoint_on_timeout(p.server, p.now);
        while (qk_endpoint_poll_event(p.server, &ev))
            if (ev.type == QK_EV_CLOSED) {
                closed = true;
                break;
            }
    }
    assert_true(closed);
    assert_int_equal(ev.error_code, code);
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);
    qk_pair_free(&p);
}

static void test_stream_in_initial(void **state)
{
    (void)state;
    initial_case("0a 00 01 41", PROTOCOL_VIOLATION);
}

static void test_new_token_in_initial(void **state)
{
    (void)state;
    initial_case("07 01 aa", PROTOCOL_VIOLATION);
}

/* RFC 9000 §5.1.1, §5.1.2: a flood of NEW_CONNECTION_ID frames that retire
 * the previous ones must not grow what we store; the server never tracks
 * more than active_connection_id_limit CIDs. */
static void test_new_cid_flood(void **state)
{
    (void)state;
    qk_pair p;
    start_established(&p, NULL);
    qk_conn *s = p.sconn;
    unsigned seq;
    /* Start above the sequence numbers the real client issued (1..3). */
    for (seq = 16; seq <= 2000 && p.sconn; seq++) {
        uint8_t f[64];
        size_t n = 0;
        f[n++] = 0x18;
        f[n++] = (uint8_t)(0x40 | seq >> 8); /* 2-byte varints */
        f[n++] = (uint8_t)seq;
        f[n++] = (uint8_t)(0x40 | (seq - 1) >> 8);
        f[n++] = (uint8_t)(seq - 1);
        f[n++] = 8;
        for (int i = 0; i < 8; i++) f[n++] = (uint8_t)(seq * 7 + (unsigned)i);
        for (int i = 0; i < 16; i++) f[n++] = (uint8_t)(seq + (unsigned)i);
        int rc = qk_pair_inject(&p, true, QK_PKT_1RTT, f, n, 0);
        if (rc) break;
        size_t active = 0;
        for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++) active += s->cids.rcid[i].active;
        assert_true(active <= p.scfg.active_cid_limit);
        if (s->state != QK_CONN_ESTABLISHED) {
            /* RFC 9000 §5.1.2 allows CONNECTION_ID_LIMIT_ERROR when retirements pile up. */
            assert_int_equal(s->close.code, CONNECTION_ID_LIMIT_ERROR);
            break;
        }
        /* Virtual time stands still: the server's packets now go to CIDs the
         * client never issued, so letting time run would only idle it out. */
    }
    if (getenv("QK_DEBUG_FLOOD"))
        fprintf(stderr, "flood stopped at seq %u, server state %d\n", seq, (int)s->state);
    /* Either every frame was absorbed, or the server closed with the limit error. */
    /* RETIRE_CONNECTION_IDs are never acknowledged here (the server now sends
     * to CIDs the client never issued), so at least QK_CONN_MAX_RETIRING
     * retirements (seq 0..3 at once, then one per frame) are tracked first. */
    assert_true(seq >= 16 + QK_CONN_MAX_RETIRING - 4);
    assert_true(seq > 2000 || s->close.code == CONNECTION_ID_LIMIT_ERROR);
    qk_pair_free(&p);
}

/* After a close, further hostile packets are answered at most with another
 * CONNECTION_CLOSE and never reopen anything (RFC 9000 §10.2.1). */
static void test_garbage_while_closing(void **state)
{
    (void)state;
    qk_pair p;
    start_established(&p, NULL);
    uint8_t f[] = {0x21};
    assert_int_equal(qk_pair_inject(&p, true, QK_PKT_1RTT, f, 1, 0), 0);
    uint8_t g[] = {0x0a, 0x00, 0x01, 0x41};
    for (int i = 0; i < 50; i++) qk_pair_inject(&p, true, QK_PKT_1RTT, g, sizeof g, 0);
    expect_close(&p, true, FRAME_ENCODING_ERROR, 0x21);
    qk_pair_free(&p);
}

/* Post-handshake CRYPTO data that is not a valid TLS message: the TLS stack
 * rejects it and we close with a CRYPTO_ERROR (RFC 9001 §4.8: 0x0100 + alert)
 * or PROTOCOL_VIOLATION, never crash. */
static void test_crypto_garbage_1rtt(void **state)
{
    (void)state;
    qk_pair p;
    start_established(&p, NULL);
    uint8_t f[] = {0x06, 0x00, 0x08, 0x01, 0x00, 0x00, 0x04, 0x03, 0x03, 0x00, 0x00};
    assert_int_equal(qk_pair_inject(&p, true, QK_PKT_1RTT, f, sizeof f, 0), 0);
    if (getenv("QK_DEBUG_CRYPTO"))
        fprintf(stderr, "state %d code 0x%llx reason '%s'\n", (int)p.sconn->state,
                (unsigned long long)p.sconn->close.code, p.sconn->close.reason);
    uint64_t code = p.sconn->close.code;
    assert_true((code >= 0x100 && code <= 0x1ff) || code == PROTOCOL_VIOLATION);
    expect_close(&p, true, code, 0x06);
    qk_pair_free(&p);
}

/* A well-formed CONNECTION_CLOSE from the peer: draining, remote close, its code. */
static void test_peer_close_is_reported(void **state)
{
    (void)state;
    qk_pair p;
    start_established(&p, NULL);
    uint8_t f[] = {0x1c, 0x0a, 0x00, 0x03, 'b', 'a', 'd'};
    assert_int_equal(qk_pair_inject(&p, true, QK_PKT_1RTT, f, sizeof f, 0), 0);
    assert_int_equal(p.sconn->state, QK_CONN_DRAINING);
    size_t steps = 0;
    while (!find_closed(p.sev, p.nsev) && steps++ < 1000)
        if (!qk_pair_step(&p)) break;
    const qk_event *ev = find_closed(p.sev, p.nsev);
    assert_non_null(ev);
    assert_true(ev->remote);
    assert_int_equal(ev->error_code, PROTOCOL_VIOLATION);
    assert_string_equal(ev->reason, "bad");
    qk_pair_free(&p);
}

/* A peer fragmenting a stream into many one-byte islands (every other
 * offset) must not make us track unbounded gaps (recvbuf max_ranges). */
static void test_stream_gap_bomb(void **state)
{
    (void)state;
    qk_pair p;
    start_established(&p, NULL);
    qk_conn *s = p.sconn;
    unsigned i;
    for (i = 0; i < 3000 && s->state == QK_CONN_ESTABLISHED; i += 40) {
        uint8_t f[1100];
        size_t n = 0;
        for (unsigned j = i; j < i + 40; j++) {
            uint32_t off = 2 * j + 1;
            f[n++] = 0x0e; /* STREAM, OFF, LEN */
            f[n++] = 0x00;
            f[n++] = (uint8_t)(0x80 | off >> 24); /* 4-byte varint */
            f[n++] = (uint8_t)(off >> 16);
            f[n++] = (uint8_t)(off >> 8);
            f[n++] = (uint8_t)off;
            f[n++] = 0x01;
            f[n++] = 0x41;
        }
        assert_int_equal(qk_pair_inject(&p, true, QK_PKT_1RTT, f, n, 0), 0);
    }
    if (getenv("QK_DEBUG_GAPS"))
        fprintf(stderr, "gaps: %u islands, state %d code 0x%llx '%s'\n", i, (int)s->state,
                (unsigned long long)s->close.code, s->close.reason);
    /* RFC 9000 §21.9 leaves the response to the implementation: we close once
     * the gap bound (QK_RECVBUF_DEFAULT_MAX_RANGES) is hit, with INTERNAL_ERROR. */
    assert_int_equal(s->state, QK_CONN_CLOSING);
    assert_int_equal(s->close.code, 0x1);
    assert_true(i >= QK_RECVBUF_DEFAULT_MAX_RANGES && i <= QK_RECVBUF_DEFAULT_MAX_RANGES + 40);
    qk_pair_free(&p);
}

int main(void)
{
    enum { NC = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[NC + 10];
    for (size_t i = 0; i < NC; i++) {
        tests[i] = (struct CMUnitTest){
            .name = cases[i].name, .test_func = run_case, .initial_state = (void *)&cases[i]};
    }
    tests[NC + 0] = (struct CMUnitTest)cmocka_unit_test(test_stream_in_handshake);
    tests[NC + 1] = (struct CMUnitTest)cmocka_unit_test(test_handshake_done_in_handshake);
    tests[NC + 2] = (struct CMUnitTest)cmocka_unit_test(test_max_data_in_handshake);
    tests[NC + 3] = (struct CMUnitTest)cmocka_unit_test(test_stream_in_initial);
    tests[NC + 4] = (struct CMUnitTest)cmocka_unit_test(test_new_token_in_initial);
    tests[NC + 5] = (struct CMUnitTest)cmocka_unit_test(test_new_cid_flood);
    tests[NC + 6] = (struct CMUnitTest)cmocka_unit_test(test_garbage_while_closing);
    tests[NC + 7] = (struct CMUnitTest)cmocka_unit_test(test_crypto_garbage_1rtt);
    tests[NC + 8] = (struct CMUnitTest)cmocka_unit_test(test_peer_close_is_reported);
    tests[NC + 9] = (struct CMUnitTest)cmocka_unit_test(test_stream_gap_bomb);
    return _cmocka_run_group_tests("conn_malformed", tests, NC + 10, NULL, NULL);
}
