/* SPDX-License-Identifier: MIT */
/*
 * bench_flood: spoofed-Initial flood for tests/cli/flood.sh.
 * Sends RATE valid client Initials per second for SECONDS to a server from
 * SOURCES loopback addresses (127.77.x.y), each bound to a socket that is
 * never read (so the server's answers draw no ICMP error and help no one).
 * Each Initial is a real ClientHello from a fresh client connection, with a
 * fresh DCID, so it is valid and decryptable.
 * Usage: bench_flood HOST:PORT [RATE=1000] [SECONDS=20] [SOURCES=1000]
 * Prints "flood: sent N" at the end.
 */
#include <quack/io.h>
#include <quack/quack.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void rng(void *ctx, uint8_t *buf, size_t len)
{
    uint64_t *s = ctx;
    for (size_t i = 0; i < len; i++) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        buf[i] = (uint8_t)(*s >> 11);
    }
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One client Initial (the first datagram of a fresh client endpoint's new
 * connection, a real ClientHello under a fresh DCID) into buf. */
static size_t make_initial(const qk_config *cfg, const qk_addr *local, const qk_addr *srv,
                           uint8_t *buf, size_t cap)
{
    qk_endpoint *ep = qk_endpoint_new(cfg);
    qk_conn *c;
    size_t n = 0;
    if (ep && !qk_connect(ep, local, srv, "localhost", 1, &c)) {
        qk_datagram d = {.data = buf, .len = cap};
        if (qk_endpoint_send(ep, &d, 1, 1)) n = d.len;
    }
    qk_endpoint_del(ep);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_flood HOST:PORT [RATE] [SECONDS] [SOURCES]\n");
        return 2;
    }
    qk_addr srv;
    if (qk_addr_parse(argv[1], &srv)) return 2;
    double rate = argc > 2 ? atof(argv[2]) : 1000, secs = argc > 3 ? atof(argv[3]) : 20;
    int nsrc = argc > 4 ? atoi(argv[4]) : 1000;
    if (rate <= 0 || secs <= 0 || nsrc < 1 || nsrc > 10000) return 2;
    int *fds = calloc((size_t)nsrc, sizeof *fds);
    qk_addr *src = calloc((size_t)nsrc, sizeof *src);
    for (int i = 0; i < nsrc; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr =
            htonl(0x7f4d0000u + 256u * (uint32_t)(i / 250) + 1u + (uint32_t)(i % 250));
        fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
        int small = 4096;
        setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof a)) {
            perror("flood: socket/bind");
            return 1;
        }
        socklen_t l = sizeof a;
        getsockname(fds[i], (struct sockaddr *)&a, &l);
        memset(&src[i], 0, sizeof src[i]);
        memcpy(&src[i].ss, &a, sizeof a);
        src[i].len = sizeof a;
    }
    uint64_t seed = (uint64_t)mono() * 1000003u ^ (uint64_t)getpid();
    qk_config cfg;
    qk_config_default(&cfg);
    cfg.alpn[0] = "h3";
    cfg.alpn_count = 1;
    cfg.insecure = true;
    cfg.rng = rng;
    cfg.rng_ctx = &seed;
    cfg.pmtud = false;
    static uint8_t buf[4096];
    struct sockaddr_storage to;
    memcpy(&to, &srv.ss, sizeof to);
    double t0 = mono();
    unsigned long long sent = 0;
    for (;;) {
        double el = mono() - t0;
        if (el >= secs) break;
        if ((double)sent >= el * rate) {
            usleep(500);
            continue;
        }
        int i = (int)(sent % (unsigned long long)nsrc);
        size_t n = make_initial(&cfg, &src[i], &srv, buf, sizeof buf);
        if (n && sendto(fds[i], buf, n, 0, (struct sockaddr *)&to, srv.len) == (ssize_t)n) sent++;
    }
    printf("flood: sent %llu\n", sent);
    for (int i = 0; i < nsrc; i++) close(fds[i]);
    free(fds);
    free(src);
    return 0;
}
