/* SPDX-License-Identifier: MIT */
/* echo_client: a QUIC echo client on the public quack API.
 *
 *   echo_client ADDR:PORT [PIN] < input > output
 *
 * Connects with ALPN "echo", sends standard input on one bidirectional
 * stream (FIN at end of input), writes what the server echoes to standard
 * output and closes the connection once the echoed stream ends. PIN is the
 * SHA-256 of the server's SubjectPublicKeyInfo (64 hex digits); without it
 * the server is not verified. Exits 0 when as many bytes came back as were
 * sent. Standard input is read with blocking reads, which suits files and
 * pipes; an interactive client would watch it with qk_io_loop_ev(). */
#include "echo_common.h"

#include <string.h>
#include <unistd.h>

typedef struct client {
    qk_conn *conn;
    qk_io_loop *loop;
    uint64_t sid;
    bool stream_open;
    uint8_t buf[16384]; /* read from stdin, not yet accepted by the stream */
    size_t off, len;
    bool in_eof, fin_sent, fin_received;
    uint64_t sent_bytes, recv_bytes;
} client;

/* Feed stdin into the stream until the send buffer is full (a WRITABLE
 * event resumes) or the input ended and FIN was queued. */
static void send_more(client *cl)
{
    while (!cl->fin_sent) {
        if (cl->off == cl->len && !cl->in_eof) {
            ssize_t n = read(STDIN_FILENO, cl->buf, sizeof cl->buf);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                perror("echo_client: stdin");
                qk_conn_close(cl->conn, 1, "input error");
                return;
            }
            cl->off = 0;
            cl->len = (size_t)n;
            cl->in_eof = n == 0;
        }
        long w =
            qk_stream_write(cl->conn, cl->sid, cl->buf + cl->off, cl->len - cl->off, cl->in_eof);
        if (w < 0) return;
        cl->off += (size_t)w;
        cl->sent_bytes += (uint64_t)w;
        if (cl->off < cl->len) return;
        if (cl->in_eof) cl->fin_sent = true;
    }
}

/* Drain the echoed bytes to stdout; at their FIN, close the connection. */
static void recv_all(client *cl)
{
    uint8_t buf[16384];
    for (;;) {
        bool fin = false;
        long r = qk_stream_read(cl->conn, cl->sid, buf, sizeof buf, &fin);
        if (r < 0) {
            if (r != QK_ERR_AGAIN) qk_conn_close(cl->conn, 1, "stream reset");
            return;
        }
        if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r) {
            qk_conn_close(cl->conn, 1, "output error");
            return;
        }
        cl->recv_bytes += (uint64_t)r;
        if (fin) {
            cl->fin_received = true;
            qk_conn_close(cl->conn, 0, "done");
            return;
        }
    }
}

static void client_step(void *app, qk_endpoint *ep, qk_time now)
{
    (void)now;
    client *cl = app;
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) {
        switch (ev.type) {
        case QK_EV_CONNECTED:
            if (qk_stream_open(cl->conn, true, &cl->sid) == 0) {
                cl->stream_open = true;
                send_more(cl);
            } else {
                qk_conn_close(cl->conn, 1, "no stream");
            }
            break;
        case QK_EV_STREAM_WRITABLE:
            if (cl->stream_open) send_more(cl);
            break;
        case QK_EV_STREAM_READABLE:
            if (cl->stream_open) recv_all(cl);
            break;
        case QK_EV_CLOSED: /* cl->conn is freed after this event */
            if (ev.reason_err || ev.error_code)
                fprintf(stderr, "echo_client: connection closed: %s (%s)\n", ev.reason,
                        qk_strerror(ev.reason_err));
            cl->conn = NULL;
            qk_io_loop_break(cl->loop);
            break;
        default: break;
        }
    }
}

static int parse_pin(const char *hex, uint8_t pin[32])
{
    if (strlen(hex) != 64) return -1;
    for (size_t i = 0; i < 32; i++)
        if (sscanf(hex + 2 * i, "%2hhx", &pin[i]) != 1) return -1;
    return 0;
}

int main(int argc, char **argv)
{
    qk_addr peer;
    if (argc < 2 || argc > 3 || qk_addr_parse(argv[1], &peer)) {
        fprintf(stderr, "usage: echo_client ADDR:PORT [PIN] < input > output\n");
        return 2;
    }
    qk_config cfg;
    qk_config_default(&cfg);
    cfg.alpn[0] = ECHO_ALPN;
    cfg.alpn_count = 1;
    cfg.rng = echo_rng;
    if (argc == 3) {
        if (parse_pin(argv[2], cfg.pin_sha256)) {
            fprintf(stderr, "echo_client: PIN wants 64 hex digits\n");
            return 2;
        }
        cfg.has_pin = true;
    } else {
        fprintf(stderr, "echo_client: no PIN: the server is not verified\n");
        cfg.insecure = true;
    }
    qk_addr any = {0}; /* the peer's family, any address, port 0 */
    any.ss.ss_family = peer.ss.ss_family;
    any.len = peer.len;
    qk_udp *u = NULL;
    qk_endpoint *ep = qk_endpoint_new(&cfg);
    static client cl;
    int rc = ep ? qk_udp_open(&any, 0, &u) : QK_ERR_CONFIG;
    qk_addr none = {0};
    if (!rc) rc = qk_connect(ep, &none, &peer, "localhost", qk_io_now(), &cl.conn);
    if (!rc) {
        echo_driver drv = {ep, client_step, &cl};
        rc = echo_run(u, &drv, &cl.loop);
    }
    if (rc) fprintf(stderr, "echo_client: %s\n", qk_strerror(rc));
    qk_endpoint_del(ep);
    qk_udp_close(u);
    fflush(stdout);
    fprintf(stderr, "echo_client: sent %llu bytes, received %llu bytes back\n",
            (unsigned long long)cl.sent_bytes, (unsigned long long)cl.recv_bytes);
    return !rc && cl.fin_received && cl.fin_sent && cl.recv_bytes == cl.sent_bytes ? 0 : 1;
}
