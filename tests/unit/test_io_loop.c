/* SPDX-License-Identifier: MIT */
/* covers: src/io/loop.c */
/* A loop driving one driver over two sockets (qk_io_loop_add_udp, as a
 * server listening on its preferred address too): datagrams arriving on
 * either reach the same on_datagrams with the address they arrived at, and
 * each datagram the driver produces leaves from the socket bound to its
 * local address (the first socket when it names none). Loopback only. */
#include <sys/resource.h>
#include <quack/io.h>
#include "qk_test.h"

#include <string.h>
#include <time.h>

typedef struct two {
    qk_io_loop *loop;
    qk_addr a, b, peer; /* the loop's two sockets, the outside socket */
    qk_addr rx_local[4];
    char rx_byte[4];
    size_t n_rx;
    bool sent;
    qk_time stop_at;
} two;

static void two_in(void *ctx, qk_datagram *d, size_t n, qk_time now)
{
    (void)now;
    two *t = ctx;
    for (size_t i = 0; i < n && t->n_rx < 4; i++) {
        t->rx_local[t->n_rx] = d[i].local;
        t->rx_byte[t->n_rx++] = (char)d[i].data[0];
    }
    if (t->n_rx == 2 && t->sent) qk_io_loop_break(t->loop);
}

static size_t two_poll(void *ctx, qk_datagram *out, size_t max, qk_time now)
{
    (void)now;
    two *t = ctx;
    if (t->sent || max < 2) return 0;
    t->sent = true;
    out[0].data[0] = 'b'; /* from the second socket */
    out[0].len = 1;
    out[0].peer = t->peer;
    out[0].local = t->b;
    out[1].data[0] = 'a'; /* no local address: the first socket */
    out[1].len = 1;
    out[1].peer = t->peer;
    return 2;
}

static qk_time two_next(void *ctx)
{
    return ((two *)ctx)->stop_at;
}

static void two_timeout(void *ctx, qk_time now)
{
    (void)now;
    qk_io_loop_break(((two *)ctx)->loop);
}

static qk_udp *open_at(const char *s)
{
    qk_addr a;
    qk_udp *u = NULL;
    assert_int_equal(qk_addr_parse(s, &a), 0);
    assert_int_equal(qk_udp_open(&a, QK_UDP_NO_GRO, &u), 0);
    return u;
}

static void send_byte(qk_udp *u, const qk_addr *to, char c)
{
    uint8_t b = (uint8_t)c;
    qk_datagram d = {.data = &b, .len = 1, .peer = *to};
    assert_int_equal(qk_udp_send(u, &d, 1), 1);
}

static void test_two_sockets(void **st)
{
    (void)st;
    qk_udp *ua = open_at("127.0.0.1:0"), *ub = open_at("127.0.0.2:0"), *up = open_at("127.0.0.1:0");
    static const qk_io_driver_ops ops = {.on_datagrams = two_in,
                                         .poll_send = two_poll,
                                         .next_timeout = two_next,
                                         .on_timeout = two_timeout};
    two t = {0};
    qk_udp_local_addr(ua, &t.a);
    qk_udp_local_addr(ub, &t.b);
    qk_udp_local_addr(up, &t.peer);
    t.stop_at = qk_io_now() + 5 * QK_NS_PER_S; /* a bound, not the expected end */
    assert_int_equal(qk_io_loop_new(ua, &ops, &t, NULL, &t.loop), 0);
    assert_int_equal(qk_io_loop_add_udp(t.loop, ub), 0);
    assert_int_equal(qk_io_loop_add_udp(t.loop, ub), QK_ERR_INVALID_ARG); /* already in */
    assert_int_equal(qk_io_loop_add_udp(t.loop, NULL), QK_ERR_INVALID_ARG);
    send_byte(up, &t.a, 'A');
    send_byte(up, &t.b, 'B');
    assert_int_equal(qk_io_loop_run(t.loop), 0);
    /* both arrived at the one driver, each with the address it reached */
    assert_int_equal(t.n_rx, 2);
    for (size_t i = 0; i < 2; i++) {
        const qk_addr *want = t.rx_byte[i] == 'A' ? &t.a : &t.b;
        assert_true(t.rx_byte[i] == 'A' || t.rx_byte[i] == 'B');
        assert_true(qk_addr_equal(&t.rx_local[i], want));
    }
    /* each reply left from the socket its local address names */
    uint8_t buf[2][64];
    size_t got = 0;
    qk_datagram d[2];
    for (int tries = 0; tries < 500 && got < 2; tries++) {
        d[got].data = buf[got];
        d[got].len = sizeof buf[got];
        int r = qk_udp_recv(up, &d[got], 1);
        if (r == 1) {
            got++;
            continue;
        }
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    assert_int_equal(got, 2);
    for (size_t i = 0; i < 2; i++) {
        const qk_addr *from = d[i].data[0] == 'b' ? &t.b : &t.a;
        assert_true(qk_addr_equal(&d[i].peer, from));
    }
    qk_io_loop_del(t.loop);
    qk_udp_close(ua);
    qk_udp_close(ub);
    qk_udp_close(up);
}

/* Up to 1024 sockets besides the first (a server on a port range). */
static void test_add_limit(void **st)
{
    (void)st;
    static const qk_io_driver_ops ops = {.on_datagrams = two_in,
                                         .poll_send = two_poll,
                                         .next_timeout = two_next,
                                         .on_timeout = two_timeout};
    enum { N = 1026 };
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < N + 64) {
        rl.rlim_cur = rl.rlim_max < N + 64 ? rl.rlim_max : N + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < N + 64) skip(); /* the hard limit is too low for the test */
    two t = {.stop_at = QK_TIME_INFINITE};
    static qk_udp *u[N];
    for (int i = 0; i < N; i++) assert_non_null(u[i] = open_at("127.0.0.1:0"));
    assert_int_equal(qk_io_loop_new(u[0], &ops, &t, NULL, &t.loop), 0);
    for (int i = 1; i < N - 1; i++) assert_int_equal(qk_io_loop_add_udp(t.loop, u[i]), 0);
    assert_int_equal(qk_io_loop_add_udp(t.loop, u[N - 1]), QK_ERR_LIMIT);
    qk_io_loop_del(t.loop);
    for (int i = 0; i < N; i++) qk_udp_close(u[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_sockets),
        cmocka_unit_test(test_add_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
