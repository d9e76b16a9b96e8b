/* SPDX-License-Identifier: MIT */
/* sansio_pair: a QUIC client and server in one process with no socket and
 * no clock, on <quack/quack.h> and <quack/cert.h> alone (what a build with
 * -DQK_TRANSPORT_ONLY=ON installs).
 *
 *   sansio_pair < input > output
 *
 * The client sends standard input on one stream; the server writes what it
 * receives to standard output. Datagrams go from one endpoint's
 * qk_endpoint_send straight to the other's qk_endpoint_recv, and time is a
 * variable: it stands still while datagrams flow and jumps to the earlier
 * of the two qk_endpoint_next_timeout deadlines when neither has anything
 * to send. The same shape plugs a quack endpoint into any event loop,
 * simulator or transport the application owns. */
#include <quack/cert.h>
#include <quack/quack.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

typedef struct side {
    qk_endpoint *ep;
    qk_addr addr;
    qk_conn *conn;
} side;

static uint8_t *input;
static size_t input_len, input_sent;
static uint64_t sid;
static bool stream_open, fin_sent, server_done, client_closed;

static void rng(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    while (len) {
        ssize_t r = getrandom(buf, len, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) abort();
        buf += r;
        len -= (size_t)r;
    }
}

static qk_addr ipv4(const char *ip, uint16_t port)
{
    qk_addr a = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&a.ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    inet_pton(AF_INET, ip, &sin->sin_addr);
    a.len = sizeof *sin;
    return a;
}

/* Everything one endpoint has to send goes to the other. Returns how many. */
static size_t deliver(side *from, side *to, qk_time now)
{
    static uint8_t bufs[16][1500];
    qk_datagram d[16];
    for (size_t i = 0; i < 16; i++) d[i] = (qk_datagram){.data = bufs[i], .len = sizeof bufs[i]};
    size_t n = qk_endpoint_send(from->ep, d, 16, now);
    for (size_t i = 0; i < n; i++) {
        d[i].local = to->addr; /* as the receiving socket would report them */
        d[i].peer = from->addr;
        qk_endpoint_recv(to->ep, &d[i], now);
    }
    return n;
}

static void client_events(side *c)
{
    qk_event ev;
    while (qk_endpoint_poll_event(c->ep, &ev)) {
        if (ev.type == QK_EV_CONNECTED) stream_open = qk_stream_open(c->conn, true, &sid) == 0;
        if (ev.type == QK_EV_CLOSED) client_closed = true;
    }
    if (stream_open && !fin_sent) { /* as much as the stream takes now; WRITABLE: more */
        long w = qk_stream_write(c->conn, sid, input + input_sent, input_len - input_sent, true);
        if (w > 0) input_sent += (size_t)w;
        if (w >= 0 && input_sent == input_len) fin_sent = true; /* FIN went with the last byte */
    }
}

static void server_events(side *s)
{
    qk_event ev;
    uint8_t buf[16384];
    while (qk_endpoint_poll_event(s->ep, &ev)) {
        if (ev.type != QK_EV_STREAM_READABLE) continue;
        for (bool fin = false; !fin;) {
            long r = qk_stream_read(ev.conn, ev.stream_id, buf, sizeof buf, &fin);
            if (r < 0) break;
            fwrite(buf, 1, (size_t)r, stdout);
            if (fin) {
                server_done = true;
                qk_conn_close(ev.conn, 0, "done"); /* the client sees QK_EV_CLOSED */
            }
        }
    }
}

static int run(side *cli, side *srv)
{
    qk_time now = QK_NS_PER_S; /* any start will do: only differences matter */
    for (int turns = 0;; turns++) {
        if (turns > 10000000) return QK_ERR_TIMEOUT;
        client_events(cli);
        server_events(srv);
        if (server_done && client_closed) break;
        if (deliver(cli, srv, now) + deliver(srv, cli, now)) continue;
        qk_time tc = qk_endpoint_next_timeout(cli->ep), ts = qk_endpoint_next_timeout(srv->ep);
        qk_time next = tc < ts ? tc : ts;
        if (next == QK_TIME_INFINITE) return QK_ERR_STATE; /* nothing can happen any more */
        if (next > now) now = next;
        if (tc <= now) qk_endpoint_on_timeout(cli->ep, now);
        if (ts <= now) qk_endpoint_on_timeout(srv->ep, now);
    }
    fprintf(stderr, "sansio_pair: %zu bytes, %.3f s of virtual time\n", input_len,
            (double)(now - QK_NS_PER_S) / QK_NS_PER_S);
    return 0;
}

static void read_input(void)
{
    size_t cap = 1 << 16;
    input = malloc(cap);
    for (size_t n; input && (n = fread(input + input_len, 1, cap - input_len, stdin)) > 0;) {
        input_len += n;
        if (input_len == cap) input = realloc(input, cap *= 2);
    }
    if (!input) abort();
}

int main(void)
{
    char *cert = NULL, *key = NULL;
    uint8_t pin[QK_PIN_BYTES];
    int rc = qk_cert_generate("localhost", (int64_t)time(NULL) - 3600, 2, &cert, &key);
    if (!rc) rc = qk_cert_pin_pem(cert, strlen(cert), pin);
    if (rc) {
        fprintf(stderr, "sansio_pair: certificate: %s\n", qk_strerror(rc));
        return 1;
    }
    read_input();
    qk_config sc, cc;
    qk_config_default(&sc);
    sc.server = true;
    sc.alpn[0] = "pair";
    sc.alpn_count = 1;
    sc.rng = rng;
    sc.cert_pem = cert;
    sc.key_pem = key;
    cc = sc;
    cc.server = false;
    cc.cert_pem = cc.key_pem = NULL;
    cc.has_pin = true;
    memcpy(cc.pin_sha256, pin, sizeof pin);
    side srv = {qk_endpoint_new(&sc), ipv4("192.0.2.1", 4433), NULL};
    side cli = {qk_endpoint_new(&cc), ipv4("192.0.2.2", 50000), NULL};
    rc = srv.ep && cli.ep ? 0 : QK_ERR_CONFIG;
    if (!rc) rc = qk_connect(cli.ep, &cli.addr, &srv.addr, "localhost", QK_NS_PER_S, &cli.conn);
    if (!rc) rc = run(&cli, &srv);
    if (rc) fprintf(stderr, "sansio_pair: %s\n", qk_strerror(rc));
    qk_endpoint_del(cli.ep);
    qk_endpoint_del(srv.ep);
    free(cert);
    free(key);
    free(input);
    return rc ? 1 : 0;
}
