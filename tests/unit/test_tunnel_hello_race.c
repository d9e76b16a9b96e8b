/* SPDX-License-Identifier: MIT */
/* covers: src/tunnel/session.c src/tunnel/tunnel.c
 * The tunnel server and a flow that overtakes its session's HELLO. A client
 * on a fresh session opens flows right behind HELLO (no round trip for
 * WELCOME), and over QUIC the flow's stream may arrive first (HELLO's packet
 * lost, streams delivered independently). The server must hold the flow
 * until HELLO, then answer it and connect it, not refuse it as a protocol
 * error. Driven through an in-memory carrier (qk_tunnel_carrier) in one
 * libev loop, the target a loopback TCP listener. */
#include "qk_test.h"

#include "tunnel/session_wire.h"

#include <arpa/inet.h>
#include <ev.h>
#include <netinet/in.h>
#include <quack/tunnel.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One in-memory stream: what the client sent (in), what the server wrote (out). */
typedef struct fstream {
    uint8_t in[256], out[1024];
    size_t in_len, in_off, out_len;
    bool aborted;
} fstream;

typedef struct fsess {
    fstream st[2]; /* [0]: stream 0 (control), [1]: stream 4 (the flow) */
} fsess;

static fstream *at(void *sess, uint64_t sid)
{
    return &((fsess *)sess)->st[sid == 0 ? 0 : 1];
}

static int f_open(void *sess, uint64_t *sid)
{
    (void)sess;
    (void)sid;
    return QK_ERR_STATE; /* the server opens nothing here */
}

static long f_write(void *sess, uint64_t sid, const uint8_t *buf, size_t len, bool fin)
{
    (void)fin;
    fstream *s = at(sess, sid);
    if (len > sizeof s->out - s->out_len) len = sizeof s->out - s->out_len;
    memcpy(s->out + s->out_len, buf, len);
    s->out_len += len;
    return (long)len;
}

static long f_read(void *sess, uint64_t sid, uint8_t *buf, size_t cap, bool *fin)
{
    fstream *s = at(sess, sid);
    *fin = false;
    size_t n = s->in_len - s->in_off;
    if (!n) return QK_ERR_AGAIN;
    if (n > cap) n = cap;
    memcpy(buf, s->in + s->in_off, n);
    s->in_off += n;
    return (long)n;
}

static void f_abort(void *sess, uint64_t sid, uint64_t app_error, bool reset_send, bool stop_recv)
{
    (void)app_error;
    (void)reset_send;
    (void)stop_recv;
    at(sess, sid)->aborted = true;
}

static const qk_tunnel_carrier fake = {
    .name = "fake", .open = f_open, .write = f_write, .read = f_read, .abort = f_abort};

static void no_kick(void *ctx)
{
    (void)ctx;
}

/* Bytes the client puts on stream sid, then the events the carrier would give. */
static void client_sends(qk_tunnel *t, fsess *c, uint64_t sid, const uint8_t *b, size_t n)
{
    fstream *s = at(c, sid);
    memcpy(s->in + s->in_len, b, n);
    s->in_len += n;
    qk_tunnel_on_stream_event(t, &fake, c, QK_TUNNEL_EV_OPENED, sid);
    qk_tunnel_on_stream_event(t, &fake, c, QK_TUNNEL_EV_READABLE, sid);
}

static void test_flow_before_hello_waits_for_it(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(lfd >= 0);
    qk_tunnel_config cfg = {.server = true, .kick = no_kick};
    struct sockaddr_in *sin = (struct sockaddr_in *)&cfg.target.ss;
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cfg.target.len = sizeof *sin;
    assert_int_equal(bind(lfd, (struct sockaddr *)sin, sizeof *sin), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&cfg.target.ss, &cfg.target.len), 0);
    struct ev_loop *ev = ev_loop_new(EVFLAG_AUTO);
    qk_tunnel *t;
    assert_int_equal(qk_tunnel_new(ev, &cfg, &t), 0);
    fsess c;
    memset(&c, 0, sizeof c);

    /* The flow's stream first: preamble, header (new flow 0), its bytes. */
    uint8_t fb[1 + QK_TSW_FLOW_HDR_BYTES + 4] = {QK_TSW_FLOW_PREAMBLE};
    qk_tsw_flow_hdr h = {.resume = false, .flow_id = 0, .recv_off = 0};
    qk_tsw_flow_hdr_encode(&h, fb + 1);
    memcpy(fb + 1 + QK_TSW_FLOW_HDR_BYTES, "ping", 4);
    client_sends(t, &c, 4, fb, sizeof fb);
    assert_false(c.st[1].aborted); /* held, not refused */
    assert_int_equal(c.st[1].out_len, 0);
    assert_int_equal(qk_tunnel_flow_count(t), 1);

    /* Then the control stream: HELLO for a fresh session. */
    uint8_t cb[1 + QK_TSW_MSG_MAX] = {QK_TSW_CTL_PREAMBLE};
    qk_tsw_msg m = {.type = QK_TSW_HELLO};
    size_t n = 1 + qk_tsw_msg_encode(&m, cb + 1);
    client_sends(t, &c, 0, cb, n);
    qk_tsw_msg w;
    assert_true(qk_tsw_msg_decode(c.st[0].out, c.st[0].out_len, &w) > 0);
    assert_int_equal(w.type, QK_TSW_WELCOME);
    assert_int_equal(w.status, QK_TSW_WELCOME_NEW);
    /* The flow goes on: its reply (ok, nothing received yet), and a connect. */
    assert_false(c.st[1].aborted);
    assert_int_equal(c.st[1].out_len, QK_TSW_FLOW_REPLY_BYTES);
    qk_tsw_flow_reply r;
    assert_int_equal(qk_tsw_flow_reply_decode(c.st[1].out, &r), 0);
    assert_int_equal(r.status, QK_TSW_FLOW_OK);
    assert_int_equal(r.recv_off, 0);

    /* The target gets the flow's bytes. */
    int afd = -1;
    char got[8] = {0};
    ssize_t gn = 0;
    for (int i = 0; i < 2000 && gn < 4; i++) {
        ev_run(ev, EVRUN_NOWAIT);
        if (afd < 0) afd = accept(lfd, NULL, NULL);
        if (afd >= 0) {
            ssize_t k = recv(afd, got + gn, sizeof got - 1 - (size_t)gn, MSG_DONTWAIT);
            if (k > 0) gn += k;
        }
        usleep(1000);
    }
    assert_true(afd >= 0);
    assert_string_equal(got, "ping");
    qk_tunnel_stats st;
    qk_tunnel_get_stats(t, &st);
    assert_int_equal(st.flows_opened, 1);
    assert_int_equal(st.flows_aborted, 0);

    qk_tunnel_del(t);
    ev_loop_destroy(ev);
    close(afd);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flow_before_hello_waits_for_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
