/* SPDX-License-Identifier: MIT */
/* UDP sockets and the libev loop over real loopback sockets: batches, ECN,
 * GSO/GRO and the split fallback, pktinfo, addresses, and a loop echo. */
#include "qk_test.h"
#include <quack/io.h>
#include "io/udp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* helpers                                                                */
/* ---------------------------------------------------------------------- */

/* Payload byte j of datagram idx: deterministic, differs per datagram. */
static uint8_t pat(uint32_t idx, size_t j)
{
    return (uint8_t)(idx * 131u + j * 7u + (j >> 8) + 1u);
}

static void fill(uint8_t *p, size_t len, uint32_t idx)
{
    for (size_t j = 0; j < len; j++) p[j] = pat(idx, j);
}

static bool check(const uint8_t *p, size_t len, uint32_t idx, size_t offset)
{
    for (size_t j = 0; j < len; j++)
        if (p[j] != pat(idx, offset + j)) return false;
    return true;
}

static qk_addr addr(const char *s)
{
    qk_addr a;
    assert_int_equal(qk_addr_parse(s, &a), 0);
    return a;
}

static qk_udp *open_at(const char *s, unsigned flags)
{
    qk_addr a = addr(s);
    qk_udp *u = NULL;
    assert_int_equal(qk_udp_open(&a, flags, &u), 0);
    assert_non_null(u);
    return u;
}

/* Address of u with a different IP (same port): "127.0.0.2" etc. */
static qk_addr at_port(const char *ip_fmt, const qk_udp *u)
{
    qk_addr local;
    qk_udp_local_addr(u, &local);
    char buf[80];
    snprintf(buf, sizeof(buf), ip_fmt, (unsigned)qk_addr_port(&local));
    return addr(buf);
}

typedef struct rx_item {
    uint8_t *data;
    size_t len;
    qk_addr peer, local;
    uint8_t ecn;
} rx_item;

#define LOG_MAX 1024
typedef struct rx_log {
    rx_item items[LOG_MAX];
    size_t n;
    size_t entries; /* entries returned by qk_udp_recv (GRO batch counts once) */
    size_t batches; /* entries with segment_bytes != 0 */
    uint8_t *store;
    size_t used;
} rx_log;

static rx_log *log_new(void)
{
    rx_log *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    l->store = malloc(4u << 20);
    assert_non_null(l->store);
    return l;
}

static void log_del(rx_log *l)
{
    free(l->store);
    free(l);
}

/* Receive until `want` single datagrams (GRO batches split) or 2 s pass. */
static void recv_until(qk_udp *u, rx_log *log, size_t want)
{
    enum { N = 16 };
    uint8_t *bufs = malloc(N * QK_UDP_MAX_PAYLOAD_BYTES);
    assert_non_null(bufs);
    qk_datagram d[N];
    qk_time deadline = qk_io_now() + 2 * QK_NS_PER_S;
    while (log->n < want && qk_io_now() < deadline) {
        struct pollfd p = {.fd = qk_udp_fd(u), .events = POLLIN};
        poll(&p, 1, 20);
        for (;;) {
            for (size_t i = 0; i < N; i++) {
                d[i].data = bufs + i * QK_UDP_MAX_PAYLOAD_BYTES;
                d[i].len = QK_UDP_MAX_PAYLOAD_BYTES;
            }
            int r = qk_udp_recv(u, d, N);
            if (r == QK_ERR_AGAIN) break;
            assert_true(r > 0);
            log->entries += (size_t)r;
            for (int i = 0; i < r; i++) {
                if (d[i].segment_bytes) log->batches++;
                qk_datagram s;
                for (size_t k = 0; qk_datagram_segment(&d[i], k, &s) == 0; k++) {
                    assert_true(log->n < LOG_MAX);
                    assert_true(log->used + s.len <= (4u << 20));
                    rx_item *it = &log->items[log->n++];
                    it->data = log->store + log->used;
                    memcpy(it->data, s.data, s.len);
                    log->used += s.len;
                    it->len = s.len;
                    it->peer = s.peer;
                    it->local = s.local;
                    it->ecn = s.ecn;
                }
            }
        }
    }
    free(bufs);
}

static void expect_addr(const qk_addr *got, const char *want)
{
    char buf[QK_ADDR_STRLEN];
    assert_true(qk_addr_format(got, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, want);
}

/* ---------------------------------------------------------------------- */
/* addresses                                                              */
/* ---------------------------------------------------------------------- */

static void test_addr_parse_format(void **state)
{
    (void)state;
    char buf[QK_ADDR_STRLEN];
    qk_addr a = addr("127.0.0.1:4433");
    assert_int_equal(a.ss.ss_family, AF_INET);
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&a.ss;
    assert_int_equal(ntohl(sin->sin_addr.s_addr), 0x7f000001);
    assert_int_equal(qk_addr_port(&a), 4433);
    assert_int_equal(qk_addr_format(&a, buf, sizeof(buf)), 14);
    assert_string_equal(buf, "127.0.0.1:4433");

    qk_addr b = addr("[2001:db8::1]:443");
    assert_int_equal(b.ss.ss_family, AF_INET6);
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&b.ss;
    assert_int_equal(s6->sin6_addr.s6_addr[0], 0x20);
    assert_int_equal(s6->sin6_addr.s6_addr[1], 0x01);
    assert_int_equal(s6->sin6_addr.s6_addr[15], 0x01);
    expect_addr(&b, "[2001:db8::1]:443");

    qk_addr c = addr("[fe80::1%lo]:5");
    assert_int_equal(((const struct sockaddr_in6 *)&c.ss)->sin6_scope_id, if_nametoindex("lo"));
    expect_addr(&c, "[fe80::1%lo]:5");

    qk_addr d = addr("0.0.0.0:0");
    assert_int_equal(qk_addr_port(&d), 0);
    qk_addr lh = addr("localhost:80");
    assert_int_equal(qk_addr_port(&lh), 80);

    assert_true(qk_addr_equal(&a, &a));
    qk_addr a2 = addr("127.0.0.1:4434");
    assert_false(qk_addr_equal(&a, &a2));
    assert_false(qk_addr_equal(&a, &b));

    qk_addr x;
    const char *bad[] = {"127.0.0.1",     "127.0.0.1:",    "127.0.0.1:65536",
                         "127.0.0.1:12a", "::1:443",       "[::1]443",
                         "[::1",          "[127.0.0.1]:5", ":443",
                         "[]:1",          "1.2.3.4:-1",    ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(qk_addr_parse(bad[i], &x), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_addr_format(&a, buf, 14), QK_ERR_BUFFER_TOO_SMALL);
    x.len = 0;
    assert_int_equal(qk_addr_format(&x, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_addr_port(&x), 0);
}

/* ---------------------------------------------------------------------- */
/* batches                                                                */
/* ---------------------------------------------------------------------- */

static void run_batch(const char *bind)
{
    enum { N = 300 };
    qk_udp *rx = open_at(bind, 0), *tx = open_at(bind, 0);
    qk_addr rx_addr, tx_addr;
    qk_udp_local_addr(rx, &rx_addr);
    qk_udp_local_addr(tx, &tx_addr);
    uint8_t *bytes = malloc(N * 1400);
    qk_datagram *d = calloc(N, sizeof(*d));
    for (uint32_t i = 0; i < N; i++) {
        d[i].data = bytes + i * 1400;
        d[i].len = 1 + (i * 37u) % 1400;
        fill(d[i].data, d[i].len, i);
        d[i].peer = rx_addr;
    }
    /* Five rounds of 60 (one sendmmsg each), so even a receive buffer capped
     * by rmem_max (no CAP_NET_ADMIN) holds a round. */
    rx_log *log = log_new();
    for (size_t r = 0; r < N / 60; r++) {
        assert_int_equal(qk_udp_send(tx, d + r * 60, 60), 60);
        recv_until(rx, log, (r + 1) * 60);
    }
    qk_udp_stats st;
    qk_udp_get_stats(tx, &st);
    assert_int_equal(st.send_calls, N / 60);
    assert_int_equal(st.tx_datagrams, N);
    assert_int_equal(log->n, N);
    for (uint32_t i = 0; i < N; i++) {
        rx_item *it = &log->items[i];
        assert_int_equal(it->len, 1 + (i * 37u) % 1400);
        assert_true(check(it->data, it->len, i, 0));
        assert_true(qk_addr_equal(&it->peer, &tx_addr));
        assert_true(qk_addr_equal(&it->local, &rx_addr));
        assert_int_equal(it->ecn, QK_ECN_NOT_ECT);
    }
    qk_udp_get_stats(rx, &st);
    assert_true(st.recv_calls < N); /* batched */
    log_del(log);
    free(d);
    free(bytes);
    qk_udp_close(tx);
    qk_udp_close(rx);
}

static void test_batch_v4(void **state)
{
    (void)state;
    run_batch("127.0.0.1:0");
}

static void test_batch_v6(void **state)
{
    (void)state;
    run_batch("[::1]:0");
}

/* More entries than one sendmmsg takes (64): the send loops, order kept. */
static void test_many_entries(void **state)
{
    (void)state;
    enum { N = 130 };
    qk_udp *rx = open_at("127.0.0.1:0", 0), *tx = open_at("127.0.0.1:0", 0);
    uint8_t bytes[N][100];
    qk_datagram d[N];
    memset(d, 0, sizeof(d));
    for (uint32_t i = 0; i < N; i++) {
        fill(bytes[i], 100, i);
        d[i].data = bytes[i];
        d[i].len = 100;
        qk_udp_local_addr(rx, &d[i].peer);
    }
    assert_int_equal(qk_udp_send(tx, d, N), N);
    qk_udp_stats st;
    qk_udp_get_stats(tx, &st);
    assert_int_equal(st.send_calls, 3); /* 64 + 64 + 2 */
    rx_log *log = log_new();
    recv_until(rx, log, N);
    assert_int_equal(log->n, N);
    for (uint32_t i = 0; i < N; i++) assert_true(check(log->items[i].data, 100, i, 0));
    log_del(log);
    qk_udp_close(tx);
    qk_udp_close(rx);
}

static void test_recv_again_and_errors(void **state)
{
    (void)state;
    qk_udp *u = open_at("127.0.0.1:0", 0);
    uint8_t buf[2000];
    qk_datagram d = {.data = buf, .len = sizeof(buf)};
    assert_int_equal(qk_udp_recv(u, &d, 1), QK_ERR_AGAIN);

    /* A v6 (non-mapped) destination on a v4 socket cannot be used. */
    d.peer = addr("[2001:db8::1]:1");
    d.len = 10;
    errno = 0;
    assert_int_equal(qk_udp_send(u, &d, 1), QK_ERR_IO);
    assert_int_equal(errno, EAFNOSUPPORT);

    /* Too large for one UDP datagram: the kernel's EMSGSIZE comes back. */
    uint8_t *big = calloc(1, 70000);
    qk_datagram b = {.data = big, .len = 70000, .peer = addr("127.0.0.1:9")};
    errno = 0;
    assert_int_equal(qk_udp_send(u, &b, 1), QK_ERR_IO);
    assert_int_equal(errno, EMSGSIZE);
    free(big);

    /* A datagram larger than the receive buffer is reported empty. */
    qk_udp *rx = open_at("127.0.0.1:0", 0);
    uint8_t payload[500];
    fill(payload, sizeof(payload), 9);
    qk_datagram s = {.data = payload, .len = sizeof(payload)};
    qk_udp_local_addr(rx, &s.peer);
    assert_int_equal(qk_udp_send(u, &s, 1), 1);
    struct pollfd p = {.fd = qk_udp_fd(rx), .events = POLLIN};
    assert_int_equal(poll(&p, 1, 1000), 1);
    qk_datagram small = {.data = buf, .len = 100};
    assert_int_equal(qk_udp_recv(rx, &small, 1), 1);
    assert_int_equal(small.len, 0);
    qk_udp_stats st;
    qk_udp_get_stats(rx, &st);
    assert_int_equal(st.rx_truncated, 1);
    qk_udp_close(rx);
    qk_udp_close(u);

    qk_udp *bad = NULL;
    qk_addr none = {0};
    assert_int_equal(qk_udp_open(&none, 0, &bad), QK_ERR_INVALID_ARG);
    qk_addr foreign = addr("203.0.113.77:0"); /* not ours: bind fails */
    errno = 0;
    assert_int_equal(qk_udp_open(&foreign, 0, &bad), QK_ERR_IO);
    assert_int_equal(errno, EADDRNOTAVAIL);
}

/* QK_UDP_RECVERR: a datagram to a closed port comes back as an ICMP port
 * unreachable in the error queue, naming where it was going (v4 and v6). */
static void recverr_case(const char *bind_s, const char *ip_fmt)
{
    qk_udp *closed = open_at(bind_s, 0);
    qk_addr dst = at_port(ip_fmt, closed);
    qk_udp_close(closed); /* nothing listens there now */
    qk_udp *u = open_at(bind_s, QK_UDP_RECVERR), *plain = open_at(bind_s, 0);
    qk_udp_error e;
    assert_int_equal(qk_udp_recv_error(u, &e), QK_ERR_AGAIN);
    uint8_t payload[64] = {1};
    qk_datagram d = {.data = payload, .len = sizeof payload, .peer = dst};
    assert_int_equal(qk_udp_send(u, &d, 1), 1);
    assert_int_equal(qk_udp_send(plain, &d, 1), 1);
    struct pollfd p = {.fd = qk_udp_fd(u), .events = POLLIN};
    assert_int_equal(poll(&p, 1, 1000), 1);
    assert_int_equal(qk_udp_recv_error(u, &e), 0);
    assert_true(e.icmp);
    assert_true(e.unreachable);
    assert_int_equal(e.err, ECONNREFUSED);
    assert_true(qk_addr_equal(&e.peer, &dst));
    assert_int_equal(qk_udp_recv_error(u, &e), QK_ERR_AGAIN);
    /* Without the flag nothing is queued (and nothing to read). */
    assert_int_equal(qk_udp_recv_error(plain, &e), QK_ERR_AGAIN);
    assert_int_equal(qk_udp_recv_error(NULL, &e), QK_ERR_INVALID_ARG);
    qk_udp_close(plain);
    qk_udp_close(u);
}

static void test_recverr_port_unreachable(void **state)
{
    (void)state;
    recverr_case("127.0.0.1:0", "127.0.0.1:%u");
    recverr_case("[::1]:0", "[::1]:%u");
}

static void test_caps_buffers(void **state)
{
    (void)state;
    qk_udp *u = open_at("127.0.0.1:0", 0);
    qk_udp_caps c;
    qk_udp_get_caps(u, &c);
    assert_int_equal(c.family, AF_INET);
    assert_true(c.ecn);
    assert_false(c.pktinfo); /* bound to a specific address */
    assert_int_equal(c.rcvbuf_requested_bytes, QK_UDP_DEFAULT_BUF_BYTES);
    assert_true(c.rcvbuf_bytes > 0 && c.sndbuf_bytes > 0);
    assert_int_equal(c.rcvbuf_capped, c.rcvbuf_bytes < c.rcvbuf_requested_bytes);
    assert_int_equal(qk_udp_set_buffers(u, 64u << 10, 0), 0);
    qk_udp_get_caps(u, &c);
    assert_int_equal(c.rcvbuf_requested_bytes, 64u << 10);
    assert_true(c.rcvbuf_bytes >= (64u << 10)); /* Linux reports twice the request */
    assert_int_equal(c.sndbuf_requested_bytes, QK_UDP_DEFAULT_BUF_BYTES);
    qk_udp_close(u);
}

/* ---------------------------------------------------------------------- */
/* ECN                                                                    */
/* ---------------------------------------------------------------------- */

static const uint8_t ecn_seq[] = {QK_ECN_NOT_ECT, QK_ECN_ECT0, QK_ECN_ECT1,    QK_ECN_CE,
                                  QK_ECN_CE,      QK_ECN_ECT0, QK_ECN_NOT_ECT, QK_ECN_ECT1};
#define ECN_N (sizeof(ecn_seq) / sizeof(ecn_seq[0]))

static void run_ecn(qk_udp *tx, qk_udp *rx, const qk_addr *dst)
{
    uint8_t bytes[ECN_N][64];
    qk_datagram d[ECN_N];
    for (uint32_t i = 0; i < ECN_N; i++) {
        memset(&d[i], 0, sizeof(d[i]));
        fill(bytes[i], 64, i);
        d[i].data = bytes[i];
        d[i].len = 64;
        d[i].peer = *dst;
        d[i].ecn = ecn_seq[i];
    }
    assert_int_equal(qk_udp_send(tx, d, ECN_N), ECN_N);
    rx_log *log = log_new();
    recv_until(rx, log, ECN_N);
    assert_int_equal(log->n, ECN_N);
    for (uint32_t i = 0; i < ECN_N; i++) {
        assert_true(check(log->items[i].data, 64, i, 0));
        assert_int_equal(log->items[i].ecn, ecn_seq[i]);
    }
    log_del(log);
}

static void test_ecn(void **state)
{
    (void)state;
    const char *binds[] = {"127.0.0.1:0", "[::1]:0"};
    for (size_t k = 0; k < 2; k++) {
        qk_udp *rx = open_at(binds[k], 0), *tx = open_at(binds[k], 0);
        qk_udp_caps c;
        qk_udp_get_caps(rx, &c);
        assert_true(c.ecn);
        qk_addr dst;
        qk_udp_local_addr(rx, &dst);
        run_ecn(tx, rx, &dst);
        qk_udp_close(tx);
        qk_udp_close(rx);
    }
    /* Dual-stack both ways: IPv4 traffic through IPv6 sockets (v4-mapped). */
    qk_udp *rx = open_at("[::]:0", QK_UDP_DUALSTACK);
    qk_udp *tx4 = open_at("127.0.0.1:0", 0);
    qk_addr dst = at_port("127.0.0.1:%u", rx);
    run_ecn(tx4, rx, &dst);
    qk_udp *tx6 = open_at("[::]:0", QK_UDP_DUALSTACK);
    qk_addr mapped = at_port("[::ffff:127.0.0.1]:%u", rx);
    run_ecn(tx6, rx, &mapped);
    /* An AF_INET destination on a dual-stack socket is mapped for the caller. */
    run_ecn(tx6, rx, &dst);
    qk_udp_close(tx6);
    qk_udp_close(tx4);
    qk_udp_close(rx);
}

/* ---------------------------------------------------------------------- */
/* GSO / GRO                                                              */
/* ---------------------------------------------------------------------- */

/* One entry of `segs` segments of `seg` bytes, the last `last` bytes. */
static void send_run(qk_udp *tx, const qk_addr *dst, size_t seg, size_t segs, size_t last,
                     uint8_t ecn)
{
    size_t len = seg * (segs - 1) + last;
    uint8_t *bytes = malloc(len);
    fill(bytes, len, 77);
    qk_datagram d = {
        .data = bytes, .len = len, .peer = *dst, .ecn = ecn, .segment_bytes = (uint16_t)seg};
    assert_int_equal(qk_datagram_segment_count(&d), segs);
    assert_int_equal(qk_udp_send(tx, &d, 1), 1);
    free(bytes);
}

static void expect_run(rx_log *log, size_t seg, size_t segs, size_t last, uint8_t ecn)
{
    assert_int_equal(log->n, segs);
    for (size_t i = 0; i < segs; i++) {
        size_t want = i + 1 < segs ? seg : last;
        assert_int_equal(log->items[i].len, want);
        assert_true(check(log->items[i].data, want, 77, i * seg));
        assert_int_equal(log->items[i].ecn, ecn);
    }
}

static void test_gso_gro(void **state)
{
    (void)state;
    qk_udp *tx = open_at("127.0.0.1:0", 0);
    qk_udp *rx_gro = open_at("127.0.0.1:0", 0);
    qk_udp *rx_plain = open_at("127.0.0.1:0", QK_UDP_NO_GRO);
    qk_udp_caps c;
    qk_udp_get_caps(tx, &c);
    if (!c.gso) skip(); /* kernel without UDP_SEGMENT: the fallback test covers it */
    qk_udp_get_caps(rx_plain, &c);
    assert_false(c.gro);

    /* 20 x 1200 + 500 in one UDP_SEGMENT message, marked CE. */
    qk_addr dst;
    qk_udp_local_addr(rx_gro, &dst);
    send_run(tx, &dst, 1200, 21, 500, QK_ECN_CE);
    qk_udp_stats st;
    qk_udp_get_stats(tx, &st);
    assert_int_equal(st.send_calls, 1);
    assert_int_equal(st.tx_datagrams, 21);
    rx_log *log = log_new();
    recv_until(rx_gro, log, 21);
    expect_run(log, 1200, 21, 500, QK_ECN_CE);
    qk_udp_get_caps(rx_gro, &c);
    if (c.gro) assert_true(log->entries < 21); /* arrived as GRO batch(es) */
    log_del(log);

    /* Without GRO the receiver sees 21 datagrams. */
    qk_udp_local_addr(rx_plain, &dst);
    send_run(tx, &dst, 1200, 21, 500, QK_ECN_ECT0);
    log = log_new();
    recv_until(rx_plain, log, 21);
    expect_run(log, 1200, 21, 500, QK_ECN_ECT0);
    assert_int_equal(log->entries, 21);
    assert_int_equal(log->batches, 0);
    log_del(log);

    /* 100 segments exceed one GSO message (64): two messages, one syscall. */
    qk_udp *tx2 = open_at("127.0.0.1:0", 0);
    send_run(tx2, &dst, 600, 100, 600, QK_ECN_NOT_ECT);
    qk_udp_get_stats(tx2, &st);
    assert_int_equal(st.send_calls, 1);
    assert_int_equal(st.tx_datagrams, 100);
    log = log_new();
    recv_until(rx_plain, log, 100);
    expect_run(log, 600, 100, 600, QK_ECN_NOT_ECT);
    log_del(log);

    qk_udp_close(tx2);
    qk_udp_close(rx_plain);
    qk_udp_close(rx_gro);
    qk_udp_close(tx);
}

static void test_gso_forced_off(void **state)
{
    (void)state;
    const char *binds[] = {"127.0.0.1:0", "[::1]:0"};
    for (size_t k = 0; k < 2; k++) {
        qk_udp *tx = open_at(binds[k], QK_UDP_NO_GSO);
        qk_udp *rx = open_at(binds[k], 0);
        qk_udp_caps c;
        qk_udp_get_caps(tx, &c);
        assert_false(c.gso);
        qk_addr dst;
        qk_udp_local_addr(rx, &dst);
        send_run(tx, &dst, 1200, 21, 500, QK_ECN_ECT1);
        qk_udp_stats st;
        qk_udp_get_stats(tx, &st);
        assert_int_equal(st.send_calls, 1); /* 21 single datagrams, one sendmmsg */
        assert_int_equal(st.tx_datagrams, 21);
        rx_log *log = log_new();
        recv_until(rx, log, 21);
        expect_run(log, 1200, 21, 500, QK_ECN_ECT1);
        assert_int_equal(log->batches, 0); /* nothing to coalesce: no GSO on the wire */
        log_del(log);
        qk_udp_close(rx);
        qk_udp_close(tx);
    }
}

/* The kernel refuses UDP_SEGMENT with EINVAL when checksums are off
 * (SO_NO_CHECK): the socket must notice, turn GSO off, and resend split. */
static void test_gso_runtime_fallback(void **state)
{
    (void)state;
    qk_udp *tx = open_at("127.0.0.1:0", 0);
    qk_udp *rx = open_at("127.0.0.1:0", QK_UDP_NO_GRO);
    qk_udp_caps c;
    qk_udp_get_caps(tx, &c);
    if (!c.gso) skip();
    int one = 1;
    assert_int_equal(setsockopt(qk_udp_fd(tx), SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)), 0);
    qk_addr dst;
    qk_udp_local_addr(rx, &dst);
    send_run(tx, &dst, 1000, 30, 999, QK_ECN_NOT_ECT);
    qk_udp_get_caps(tx, &c);
    assert_false(c.gso);
    qk_udp_stats st;
    qk_udp_get_stats(tx, &st);
    assert_int_equal(st.gso_fallbacks, 1);
    assert_int_equal(st.send_calls, 2); /* the refused GSO call, then the split one */
    assert_int_equal(st.tx_datagrams, 30);
    rx_log *log = log_new();
    recv_until(rx, log, 30);
    expect_run(log, 1000, 30, 999, QK_ECN_NOT_ECT);
    log_del(log);
    qk_udp_close(rx);
    qk_udp_close(tx);
}

/* ---------------------------------------------------------------------- */
/* would-block paths (sendmmsg wrapped to block on demand)                */
/* ---------------------------------------------------------------------- */

static int fake_limit = -1; /* >= 0: the next call sends at most this many */
static int fake_eagain;     /* then this many calls fail with EAGAIN */

static int fake_sendmmsg(int fd, struct mmsghdr *m, unsigned n, int flags)
{
    if (fake_limit >= 0) {
        unsigned k = n < (unsigned)fake_limit ? n : (unsigned)fake_limit;
        fake_limit = -1;
        return sendmmsg(fd, m, k, flags);
    }
    if (fake_eagain > 0) {
        fake_eagain--;
        errno = EAGAIN;
        return -1;
    }
    return sendmmsg(fd, m, n, flags);
}

/* Blocking in the middle of a split batch: the entry advances, resumes exactly. */
static void test_send_partial_resume(void **state)
{
    (void)state;
    qk_udp *tx = open_at("127.0.0.1:0", QK_UDP_NO_GSO), *rx = open_at("127.0.0.1:0", 0);
    qk_udp_set_sendmmsg(tx, fake_sendmmsg);
    qk_addr dst;
    qk_udp_local_addr(rx, &dst);
    size_t len = 11 * 1000 + 300;
    uint8_t *run = malloc(len), tail[200];
    fill(run, len, 77);
    fill(tail, sizeof(tail), 3);
    qk_datagram d[2] = {{.data = run, .len = len, .peer = dst, .segment_bytes = 1000},
                        {.data = tail, .len = sizeof(tail), .peer = dst}};
    fake_limit = 5;
    fake_eagain = 1;
    assert_int_equal(qk_udp_send(tx, d, 2), QK_ERR_AGAIN);
    assert_ptr_equal(d[0].data, run + 5000);
    assert_int_equal(d[0].len, len - 5000);
    assert_int_equal(qk_udp_send(tx, d, 2), 2);
    rx_log *log = log_new();
    recv_until(rx, log, 13);
    assert_int_equal(log->n, 13);
    log->n = 12;
    expect_run(log, 1000, 12, 300, QK_ECN_NOT_ECT);
    assert_int_equal(log->items[12].len, sizeof(tail));
    assert_true(check(log->items[12].data, sizeof(tail), 3, 0));
    qk_udp_stats st;
    qk_udp_get_stats(tx, &st);
    assert_int_equal(st.tx_datagrams, 13);
    log_del(log);
    free(run);
    qk_udp_close(rx);
    qk_udp_close(tx);
}

/* A driver that emits 10 datagrams once, then stops the loop on its timer. */
typedef struct burst {
    qk_io_loop *loop;
    qk_addr dst;
    bool sent;
    size_t polls;
    qk_time stop_at;
} burst;

static size_t burst_poll(void *ctx, qk_datagram *out, size_t max, qk_time now)
{
    burst *b = ctx;
    b->polls++;
    if (b->sent) return 0;
    b->sent = true;
    assert_true(max >= 10);
    for (uint32_t i = 0; i < 10; i++) {
        fill(out[i].data, 300, i);
        out[i].len = 300;
        out[i].peer = b->dst;
    }
    return 10;
}

static qk_time burst_next(void *ctx)
{
    return ((burst *)ctx)->stop_at;
}

static void burst_timeout(void *ctx, qk_time now)
{
    qk_io_loop_break(((burst *)ctx)->loop);
}

static void burst_in(void *ctx, qk_datagram *d, size_t n, qk_time now) {}

/* The socket "would block": the loop parks the batch, waits for EV_WRITE,
 * and does not poll the driver for more until the batch is out. */
static void test_loop_would_block(void **state)
{
    (void)state;
    qk_udp *tx = open_at("127.0.0.1:0", 0), *rx = open_at("127.0.0.1:0", 0);
    qk_udp_set_sendmmsg(tx, fake_sendmmsg);
    static const qk_io_driver_ops ops = {burst_in, burst_poll, burst_next, burst_timeout, NULL};
    burst b = {0};
    qk_udp_local_addr(rx, &b.dst);
    b.stop_at = qk_io_now() + 30 * QK_NS_PER_MS;
    assert_int_equal(qk_io_loop_new(tx, &ops, &b, NULL, &b.loop), 0);
    fake_limit = -1;
    fake_eagain = 2;
    assert_int_equal(qk_io_loop_run(b.loop), 0);
    qk_io_loop_stats st;
    qk_io_loop_get_stats(b.loop, &st);
    assert_int_equal(st.send_blocked, 2);
    assert_int_equal(st.tx_entries, 10);
    assert_int_equal(st.tx_dropped, 0);
    /* polled once for the burst, once after it went out, once per wakeup
     * after that (timer) -- never while the batch was parked */
    assert_true(b.polls >= 2 && b.polls <= 3);
    rx_log *log = log_new();
    recv_until(rx, log, 10);
    assert_int_equal(log->n, 10);
    for (uint32_t i = 0; i < 10; i++) assert_true(check(log->items[i].data, 300, i, 0));
    log_del(log);
    qk_io_loop_del(b.loop);
    qk_udp_close(rx);
    qk_udp_close(tx);
}

/* ---------------------------------------------------------------------- */
/* pktinfo                                                                */
/* ---------------------------------------------------------------------- */

static void test_pktinfo_v4(void **state)
{
    (void)state;
    qk_udp *srv = open_at("0.0.0.0:0", 0);
    qk_udp *cli = open_at("127.0.0.1:0", 0);
    qk_udp_caps c;
    qk_udp_get_caps(srv, &c);
    assert_true(c.pktinfo);
    qk_addr to1 = at_port("127.0.0.1:%u", srv), to2 = at_port("127.0.0.2:%u", srv);
    uint8_t b[2][32];
    fill(b[0], 32, 0);
    fill(b[1], 32, 1);
    qk_datagram d[2] = {{.data = b[0], .len = 32, .peer = to1},
                        {.data = b[1], .len = 32, .peer = to2}};
    assert_int_equal(qk_udp_send(cli, d, 2), 2);
    rx_log *log = log_new();
    recv_until(srv, log, 2);
    assert_int_equal(log->n, 2);
    assert_true(qk_addr_equal(&log->items[0].local, &to1));
    assert_true(qk_addr_equal(&log->items[1].local, &to2));

    /* Reply from the address the client used: the source is set by pktinfo. */
    qk_datagram r = {
        .data = b[0], .len = 32, .peer = log->items[1].peer, .local = log->items[1].local};
    assert_int_equal(qk_udp_send(srv, &r, 1), 1);
    rx_log *back = log_new();
    recv_until(cli, back, 1);
    assert_int_equal(back->n, 1);
    assert_true(qk_addr_equal(&back->items[0].peer, &to2));
    log_del(back);
    log_del(log);
    qk_udp_close(cli);
    qk_udp_close(srv);
}

static void test_pktinfo_dualstack(void **state)
{
    (void)state;
    qk_udp *srv = open_at("[::]:0", QK_UDP_DUALSTACK);
    qk_udp *cli6 = open_at("[::1]:0", 0), *cli4 = open_at("127.0.0.1:0", 0);
    qk_udp_caps c;
    qk_udp_get_caps(srv, &c);
    assert_true(c.pktinfo);
    assert_true(c.dualstack);
    uint8_t b[32];
    fill(b, 32, 5);

    qk_datagram d6 = {.data = b, .len = 32, .peer = at_port("[::1]:%u", srv)};
    assert_int_equal(qk_udp_send(cli6, &d6, 1), 1);
    rx_log *log = log_new();
    recv_until(srv, log, 1);
    assert_int_equal(log->n, 1);
    assert_true(qk_addr_equal(&log->items[0].local, &d6.peer));
    log_del(log);

    qk_datagram d4 = {.data = b, .len = 32, .peer = at_port("127.0.0.5:%u", srv)};
    assert_int_equal(qk_udp_send(cli4, &d4, 1), 1);
    log = log_new();
    recv_until(srv, log, 1);
    assert_int_equal(log->n, 1);
    qk_addr want_local = at_port("[::ffff:127.0.0.5]:%u", srv);
    assert_true(qk_addr_equal(&log->items[0].local, &want_local));
    qk_addr cli4_addr;
    qk_udp_local_addr(cli4, &cli4_addr);
    char buf[QK_ADDR_STRLEN], want[QK_ADDR_STRLEN];
    snprintf(want, sizeof(want), "[::ffff:127.0.0.1]:%u", (unsigned)qk_addr_port(&cli4_addr));
    assert_true(qk_addr_format(&log->items[0].peer, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, want);

    /* Reply over IPv4 from the mapped local address, with ECT(0). */
    qk_datagram r = {.data = b,
                     .len = 32,
                     .peer = log->items[0].peer,
                     .local = log->items[0].local,
                     .ecn = QK_ECN_ECT0};
    assert_int_equal(qk_udp_send(srv, &r, 1), 1);
    rx_log *back = log_new();
    recv_until(cli4, back, 1);
    assert_int_equal(back->n, 1);
    assert_true(qk_addr_equal(&back->items[0].peer, &d4.peer));
    assert_int_equal(back->items[0].ecn, QK_ECN_ECT0);
    assert_true(check(back->items[0].data, 32, 5, 0));
    log_del(back);
    log_del(log);
    qk_udp_close(cli4);
    qk_udp_close(cli6);
    qk_udp_close(srv);
}

/* ---------------------------------------------------------------------- */
/* loop                                                                   */
/* ---------------------------------------------------------------------- */

/* Echo server: queue what arrives (bounded), send it back. */
#define ECHO_Q 64
typedef struct echo_srv {
    uint8_t buf[ECHO_Q][2048];
    qk_datagram q[ECHO_Q];
    size_t n;
    size_t received;
    size_t bad_split; /* datagrams handed over with segment_bytes != 0 */
} echo_srv;

static void srv_on_datagrams(void *ctx, qk_datagram *d, size_t n, qk_time now)
{
    echo_srv *s = ctx;
    for (size_t i = 0; i < n; i++) {
        s->received++;
        if (d[i].segment_bytes) s->bad_split++;
        if (s->n == ECHO_Q || d[i].len > sizeof(s->buf[0])) continue;
        memcpy(s->buf[s->n], d[i].data, d[i].len);
        s->q[s->n] = d[i];
        s->q[s->n].data = s->buf[s->n];
        s->n++;
    }
}

static size_t srv_poll_send(void *ctx, qk_datagram *out, size_t max, qk_time now)
{
    echo_srv *s = ctx;
    size_t k = 0;
    for (; k < s->n && k < max; k++) {
        assert_true(out[k].len >= s->q[k].len); /* capacity on input */
        memcpy(out[k].data, s->q[k].data, s->q[k].len);
        out[k].len = s->q[k].len;
        out[k].peer = s->q[k].peer;
        out[k].local = s->q[k].local;
        out[k].ecn = s->q[k].ecn;
    }
    memmove(s->q, s->q + k, (s->n - k) * sizeof(s->q[0]));
    for (size_t i = 0; i + k < s->n; i++) {
        memcpy(s->buf[i], s->buf[i + k], s->q[i].len);
        s->q[i].data = s->buf[i];
    }
    s->n -= k;
    return k;
}

static qk_time never(void *ctx)
{
    return QK_TIME_INFINITE;
}

static void no_timeout(void *ctx, qk_time now) {}

/* Client: every 2 ms (timer) a GSO run of 3 segments (100, 100, 50 bytes) with
 * ECT(0); stops the loop after ROUNDS echoes of all segments. */
#define ROUNDS 5
typedef struct echo_cli {
    qk_io_loop *loop;
    qk_addr server;
    qk_time next_ping;
    uint32_t sent_rounds;
    bool ping_due;
    size_t echoed, bad;
} echo_cli;

static void cli_on_datagrams(void *ctx, qk_datagram *d, size_t n, qk_time now)
{
    echo_cli *c = ctx;
    for (size_t i = 0; i < n; i++) {
        /* byte 0 carries the round; the segment index follows from the length
         * and byte 1 (the offset / 100). */
        if (d[i].len < 2 || d[i].ecn != QK_ECN_ECT0) {
            c->bad++;
            continue;
        }
        uint32_t round = d[i].data[0];
        size_t off = (size_t)d[i].data[1] * 100;
        size_t want_len = off == 200 ? 50 : 100;
        if (d[i].len != want_len || !check(d[i].data + 2, d[i].len - 2, round, off + 2))
            c->bad++;
        else
            c->echoed++;
    }
    if (c->echoed == ROUNDS * 3) qk_io_loop_break(c->loop);
}

static size_t cli_poll_send(void *ctx, qk_datagram *out, size_t max, qk_time now)
{
    echo_cli *c = ctx;
    if (!c->ping_due || max == 0) return 0;
    c->ping_due = false;
    uint32_t round = c->sent_rounds++;
    fill(out[0].data, 250, round);
    for (int s = 0; s < 3; s++) {
        out[0].data[s * 100] = (uint8_t)round;
        out[0].data[s * 100 + 1] = (uint8_t)s;
    }
    out[0].len = 250;
    out[0].segment_bytes = 100;
    out[0].ecn = QK_ECN_ECT0;
    out[0].peer = c->server;
    return 1;
}

static qk_time cli_next_timeout(void *ctx)
{
    echo_cli *c = ctx;
    return c->sent_rounds < ROUNDS ? c->next_ping : QK_TIME_INFINITE;
}

static void cli_on_timeout(void *ctx, qk_time now)
{
    echo_cli *c = ctx;
    c->ping_due = true;
    c->next_ping = now + 2 * QK_NS_PER_MS;
}

static void on_watchdog(struct ev_loop *ev, ev_timer *w, int revents)
{
    *(bool *)w->data = true;
    ev_break(ev, EVBREAK_ALL);
}

static void test_loop_echo(void **state)
{
    (void)state;
    qk_udp *su = open_at("127.0.0.1:0", 0), *cu = open_at("[::]:0", QK_UDP_DUALSTACK);
    echo_srv *srv = calloc(1, sizeof(*srv));
    echo_cli cli = {0};
    cli.server = at_port("127.0.0.1:%u", su);
    static const qk_io_driver_ops srv_ops = {srv_on_datagrams, srv_poll_send, never, no_timeout,
                                             NULL};
    static const qk_io_driver_ops cli_ops = {cli_on_datagrams, cli_poll_send, cli_next_timeout,
                                             cli_on_timeout, NULL};
    qk_io_loop *sl = NULL;
    assert_int_equal(qk_io_loop_new(su, &srv_ops, srv, NULL, &sl), 0);
    /* Both drivers share one libev loop. */
    qk_io_loop_config cfg = {.ev = qk_io_loop_ev(sl), .recv_batch = 8};
    assert_int_equal(qk_io_loop_new(cu, &cli_ops, &cli, &cfg, &cli.loop), 0);

    bool fired = false;
    ev_timer watchdog;
    ev_timer_init(&watchdog, on_watchdog, 2.0, 0.0);
    watchdog.data = &fired;
    ev_timer_start(qk_io_loop_ev(sl), &watchdog);

    qk_time t0 = qk_io_now();
    cli.next_ping = t0 + QK_NS_PER_MS;
    assert_int_equal(qk_io_loop_run(cli.loop), 0);
    qk_time took = qk_io_now() - t0;
    ev_timer_stop(qk_io_loop_ev(sl), &watchdog);

    assert_false(fired);
    assert_true(took < 2 * QK_NS_PER_S);
    assert_true(took >= 8 * QK_NS_PER_MS); /* 5 pings 2 ms apart, from t0 + 1 ms */
    assert_int_equal(cli.echoed, ROUNDS * 3);
    assert_int_equal(cli.bad, 0);
    assert_int_equal(srv->received, ROUNDS * 3);
    assert_int_equal(srv->bad_split, 0);
    qk_io_loop_stats st;
    qk_io_loop_get_stats(cli.loop, &st);
    assert_int_equal(st.timeouts, ROUNDS);
    assert_int_equal(st.tx_entries, ROUNDS);
    assert_int_equal(st.rx_datagrams, ROUNDS * 3);
    assert_int_equal(st.tx_dropped, 0);

    qk_io_loop_del(cli.loop);
    qk_io_loop_del(sl);
    free(srv);
    qk_udp_close(cu);
    qk_udp_close(su);
}

/* A driver that raises SIGUSR1 on its first timeout. */
static qk_time soon(void *ctx)
{
    return *(qk_time *)ctx;
}

static void raise_usr1(void *ctx, qk_time now)
{
    *(qk_time *)ctx = QK_TIME_INFINITE;
    raise(SIGUSR1);
}

static void nothing_in(void *ctx, qk_datagram *d, size_t n, qk_time now) {}

static size_t nothing_out(void *ctx, qk_datagram *out, size_t max, qk_time now)
{
    return 0;
}

static void test_loop_signal(void **state)
{
    (void)state;
    qk_udp *u = open_at("127.0.0.1:0", 0);
    qk_time deadline = qk_io_now() + QK_NS_PER_MS;
    static const qk_io_driver_ops ops = {nothing_in, nothing_out, soon, raise_usr1, NULL};
    qk_io_loop *l = NULL;
    assert_int_equal(qk_io_loop_new(u, &ops, &deadline, NULL, &l), 0);
    assert_int_equal(qk_io_loop_stop_on_signal(l, SIGUSR1), 0);
    qk_time t0 = qk_io_now();
    assert_int_equal(qk_io_loop_run(l), 0);
    assert_true(qk_io_now() - t0 < 2 * QK_NS_PER_S);
    assert_int_equal(qk_io_loop_stop_signal(l), SIGUSR1);
    qk_io_loop_del(l);
    qk_udp_close(u);
}

static void *break_later(void *arg)
{
    usleep(30 * 1000);
    qk_io_loop_break(arg);
    return NULL;
}

static void test_loop_break_from_thread(void **state)
{
    (void)state;
    qk_udp *u = open_at("127.0.0.1:0", 0);
    static const qk_io_driver_ops ops = {nothing_in, nothing_out, never, no_timeout, NULL};
    qk_io_loop *l = NULL;
    assert_int_equal(qk_io_loop_new(u, &ops, NULL, NULL, &l), 0);
    pthread_t th;
    qk_time t0 = qk_io_now();
    assert_int_equal(pthread_create(&th, NULL, break_later, l), 0);
    assert_int_equal(qk_io_loop_run(l), 0);
    pthread_join(th, NULL);
    qk_time took = qk_io_now() - t0;
    assert_true(took >= 25 * QK_NS_PER_MS && took < 2 * QK_NS_PER_S);
    assert_int_equal(qk_io_loop_stop_signal(l), 0);

    qk_io_loop_config bad = {.send_batch = 65};
    qk_io_loop *l2 = NULL;
    assert_int_equal(qk_io_loop_new(u, &ops, NULL, &bad, &l2), QK_ERR_INVALID_ARG);
    qk_io_loop_config small = {.buf_bytes = 2048}; /* GRO batches would not fit */
    assert_int_equal(qk_io_loop_new(u, &ops, NULL, &small, &l2), QK_ERR_INVALID_ARG);
    qk_udp *nogro = open_at("127.0.0.1:0", QK_UDP_NO_GRO);
    assert_int_equal(qk_io_loop_new(nogro, &ops, NULL, &small, &l2), 0);
    qk_io_loop_del(l2);
    qk_udp_close(nogro);
    qk_io_driver_ops half = ops;
    half.poll_send = NULL;
    assert_int_equal(qk_io_loop_new(u, &half, NULL, NULL, &l2), QK_ERR_INVALID_ARG);
    qk_io_loop_del(l);
    qk_udp_close(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addr_parse_format),
        cmocka_unit_test(test_batch_v4),
        cmocka_unit_test(test_batch_v6),
        cmocka_unit_test(test_many_entries),
        cmocka_unit_test(test_recv_again_and_errors),
        cmocka_unit_test(test_recverr_port_unreachable),
        cmocka_unit_test(test_caps_buffers),
        cmocka_unit_test(test_ecn),
        cmocka_unit_test(test_gso_gro),
        cmocka_unit_test(test_gso_forced_off),
        cmocka_unit_test(test_gso_runtime_fallback),
        cmocka_unit_test(test_send_partial_resume),
        cmocka_unit_test(test_loop_would_block),
        cmocka_unit_test(test_pktinfo_v4),
        cmocka_unit_test(test_pktinfo_dualstack),
        cmocka_unit_test(test_loop_echo),
        cmocka_unit_test(test_loop_signal),
        cmocka_unit_test(test_loop_break_from_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
