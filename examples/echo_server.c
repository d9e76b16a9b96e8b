/* SPDX-License-Identifier: MIT */
/* echo_server: a QUIC echo server on the public quack API.
 *
 *   echo_server ADDR:PORT CERT.pem KEY.pem
 *
 * Accepts connections with ALPN "echo" and sends every byte received on a
 * client's bidirectional streams back on the same stream, FIN included.
 * Prints "listening on ADDR:PORT" (port 0 picks a free port) and runs until
 * SIGINT or SIGTERM. Backpressure comes from QUIC flow control: a stream is
 * read only while what was read from it could be written back. DATAGRAM
 * frames (RFC 9221) are echoed too, each as it arrives; one that cannot be
 * queued (the connection's queue is full) is dropped, as a datagram may be. */
#include "echo_common.h"

#include <string.h>

#define ECHO_MAX_STREAMS 16

/* One echoed stream: bytes read but not yet accepted by qk_stream_write. */
typedef struct echo_stream {
    bool used;
    uint64_t id;
    uint8_t buf[16384];
    size_t off, len;
    bool fin_read, fin_sent;
} echo_stream;

/* Per connection, hung on it with qk_conn_set_user; listed so that what
 * is still open at exit (qk_endpoint_del frees connections without events)
 * can be freed too. */
typedef struct echo_conn {
    echo_stream streams[ECHO_MAX_STREAMS];
    struct echo_conn *prev, *next;
} echo_conn;

static echo_conn *conns;

static echo_stream *find_stream(qk_conn *c, uint64_t id, bool create)
{
    echo_conn *ec = qk_conn_user(c);
    if (!ec) {
        if (!create || !(ec = calloc(1, sizeof *ec))) return NULL;
        qk_conn_set_user(c, ec);
        if ((ec->next = conns)) conns->prev = ec;
        conns = ec;
    }
    echo_stream *free_slot = NULL;
    for (size_t i = 0; i < ECHO_MAX_STREAMS; i++) {
        if (ec->streams[i].used && ec->streams[i].id == id) return &ec->streams[i];
        if (!ec->streams[i].used && !free_slot) free_slot = &ec->streams[i];
    }
    if (!create || !free_slot) return NULL;
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->used = true;
    free_slot->id = id;
    return free_slot;
}

/* Move bytes from the stream's receive side to its send side until either
 * side would block (QK_EV_STREAM_READABLE / _WRITABLE resume it). */
static void echo_pump(qk_conn *c, echo_stream *s)
{
    while (!s->fin_sent) {
        if (s->off < s->len || s->fin_read) {
            long w = qk_stream_write(c, s->id, s->buf + s->off, s->len - s->off, s->fin_read);
            if (w < 0) {
                s->used = false; /* cannot send (a unidirectional stream, or reset) */
                return;
            }
            s->off += (size_t)w;
            if (s->off < s->len) return; /* send buffer full: wait for WRITABLE */
            if (s->fin_read) {
                s->fin_sent = true;
                s->used = false; /* both directions done: free the slot */
                return;
            }
        }
        bool fin = false;
        long r = qk_stream_read(c, s->id, s->buf, sizeof s->buf, &fin);
        if (r < 0) {
            if (r != QK_ERR_AGAIN) s->used = false; /* reset by the peer */
            return;
        }
        s->off = 0;
        s->len = (size_t)r;
        s->fin_read = fin;
    }
}

static void server_step(void *app, qk_endpoint *ep, qk_time now)
{
    (void)app;
    (void)now;
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) {
        echo_stream *s;
        echo_conn *ec;
        switch (ev.type) {
        case QK_EV_STREAM_OPENED:
        case QK_EV_STREAM_READABLE:
        case QK_EV_STREAM_WRITABLE:
            if ((s = find_stream(ev.conn, ev.stream_id, ev.type != QK_EV_STREAM_WRITABLE)))
                echo_pump(ev.conn, s);
            break;
        case QK_EV_DATAGRAM: /* ev.data is valid until the next poll: send copies it */
            qk_datagram_send(ev.conn, ev.data, ev.len, 0);
            break;
        case QK_EV_CLOSED: /* the connection is freed after this event */
            if ((ec = qk_conn_user(ev.conn))) {
                if (ec->next) ec->next->prev = ec->prev;
                *(ec->prev ? &ec->prev->next : &conns) = ec->next;
                free(ec);
            }
            break;
        default: break;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: echo_server ADDR:PORT CERT.pem KEY.pem\n");
        return 2;
    }
    qk_addr addr;
    if (qk_addr_parse(argv[1], &addr)) {
        fprintf(stderr, "echo_server: bad address %s\n", argv[1]);
        return 2;
    }
    qk_config cfg;
    qk_config_default(&cfg);
    cfg.server = true;
    cfg.alpn[0] = ECHO_ALPN;
    cfg.alpn_count = 1;
    cfg.cert_file = argv[2];
    cfg.key_file = argv[3];
    cfg.rng = echo_rng;
    cfg.max_datagram_frame_bytes = 1200; /* accept DATAGRAM frames (RFC 9221) */
    char why[128];
    if (qk_config_check(&cfg, why, sizeof why)) {
        fprintf(stderr, "echo_server: %s\n", why);
        return 1;
    }
    qk_endpoint *ep = qk_endpoint_new(&cfg);
    qk_udp *u = NULL;
    if (!ep || qk_udp_open(&addr, 0, &u)) {
        fprintf(stderr, "echo_server: cannot start (certificate or address?)\n");
        qk_endpoint_del(ep);
        return 1;
    }
    char name[QK_ADDR_STRLEN];
    qk_addr local;
    qk_udp_local_addr(u, &local);
    qk_addr_format(&local, name, sizeof name);
    printf("listening on %s\n", name);
    fflush(stdout);

    echo_driver drv = {ep, server_step, NULL};
    qk_io_loop *loop;
    int rc = echo_run(u, &drv, &loop);
    qk_endpoint_del(ep); /* frees the connections still open, without events */
    qk_udp_close(u);
    while (conns) {
        echo_conn *next = conns->next;
        free(conns);
        conns = next;
    }
    return rc ? 1 : 0;
}
