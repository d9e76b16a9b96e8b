/* SPDX-License-Identifier: MIT */
/* HTTP/3 over quack streams with libnghttp3 (see include/quack/h3.h).
 *
 * nghttp3 owns framing and QPACK; this file moves bytes between it and the
 * connection's streams. quack copies whatever qk_stream_write() accepts and
 * retransmits it itself, so every byte nghttp3 hands us is reported written
 * and acknowledged at once (nghttp3 frees its frame buffers immediately and
 * tells us through acked_stream_data when a body's memory is no longer
 * referenced). */
#include <quack/h3.h>

#include "priority.h"

#include "base/abi.h"

#include <nghttp3/nghttp3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RFC 9114 §8.1 */
#define H3_GENERAL_PROTOCOL_ERROR 0x101
#define H3_EXCESSIVE_LOAD         0x107
#define H3_REQUEST_REJECTED       0x10b

#define H3_MAX_FIELD_SECTION_BYTES 16384u /* what we advertise and accept */
#define H3_MAX_FIELDS              64u
#define H3_BODY_CHUNK_BYTES        (256u * 1024u) /* bytes per DATA frame we emit */
#define H3_READ_BYTES              16384u         /* on the stack of read_stream */
#define H3_VECS                    16
#define H3_CRITICAL_URGENCY        0 /* control + QPACK streams (RFC 9218 §4.1) */
#define H3_UNI_SCANS               8 /* peer uni streams watched for the control stream */
/* RFC 9218 §7.1: PRIORITY_UPDATEs for request streams not open yet are kept,
 * at most this many (the latest per stream); beyond it they are dropped. */
#define H3_PRIO_PENDING_MAX 16
#define H3_PULL_CHUNK_BYTES (64u * 1024u) /* most bytes one pull read produces */
#define H3_PULL_SLACK_BYTES 16u /* room kept for the DATA frame header (RFC 9114 §7.2.1) */

typedef struct h3_stream {
    struct h3_stream *next;
    uint64_t sid;
    /* Outgoing body (request or response). */
    const uint8_t *body;
    uint64_t body_len, body_given, body_acked;
    qk_h3_release_fn release;
    void *release_ctx;
    /* Pull model: body bytes read on demand into chunk (nghttp3 references
     * it until the bytes are written into the stream and acked to it). */
    qk_h3_read_fn reader;
    uint8_t *chunk;
    bool reader_blocked; /* read_body answered WOULDBLOCK: resume at the next flush */
    bool read_failed;    /* the reader failed: reset the stream */
    /* Incoming header section: name and value bytes, offsets per field. */
    char hbuf[H3_MAX_FIELD_SECTION_BYTES];
    size_t hlen;
    uint32_t off[H3_MAX_FIELDS][4]; /* name off, name len, value off, value len */
    size_t nfields;
    bool overflow;
    bool responded;   /* server: response submitted */
    bool reported;    /* server: on_response_done called */
    bool got_headers; /* a final header section was delivered */
    bool send_done, recv_done;
    qk_h3_priority prio; /* server: applied to the transport stream */
    bool prio_update;    /* a PRIORITY_UPDATE set prio: the header no longer counts */
    bool prio_server; /* qk_h3_set_priority on the server: the client's signals no longer count */
    /* Server with on_connect: frame boundaries until the header section came. */
    uint8_t fh_type_bytes, fh_len_bytes, fh_seen; /* varint sizes known, bytes read */
    uint64_t frame_left;                          /* payload bytes of the current frame */
    bool in_frame;
    bool taken; /* on_connect took the stream: the application reads it */
} h3_stream;

typedef struct h3_uni_scan {
    uint64_t sid;
    qk_h3_ctrl_scan sc;
} h3_uni_scan;

typedef struct h3_prio_pending {
    uint64_t sid;
    qk_h3_priority prio;
} h3_prio_pending;

struct qk_h3 {
    qk_conn *c;
    bool server, dead, goaway_sent;
    nghttp3_conn *ng;
    qk_h3_callbacks cb;
    void *user;
    h3_stream *streams; /* request streams in progress */
    size_t nstreams;
    uint64_t max_seen_bidi; /* server: highest client bidi stream + 4 seen (0: none) */
    int64_t *blocked;       /* streams whose send buffer was full */
    size_t nblocked, cap_blocked;
    h3_uni_scan uni[H3_UNI_SCANS]; /* server: the client's uni streams, by arrival */
    size_t nuni;
    h3_prio_pending pending[H3_PRIO_PENDING_MAX];
    size_t npending;
    int64_t ctrl_sid;      /* our control stream */
    bool settings_pending; /* server with on_connect: SETTINGS_H3_DATAGRAM still to add */
};

static h3_stream *find(qk_h3 *h, uint64_t sid)
{
    for (h3_stream *s = h->streams; s; s = s->next)
        if (s->sid == sid) return s;
    return NULL;
}

static h3_stream *stream_add(qk_h3 *h, uint64_t sid)
{
    h3_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->sid = sid;
    s->prio = (qk_h3_priority){QK_H3_DEFAULT_URGENCY, false};
    s->next = h->streams;
    h->streams = s;
    h->nstreams++;
    return s;
}

static void body_release(h3_stream *s)
{
    if (s->release) s->release(s->release_ctx);
    s->release = NULL;
    s->body = NULL;
    s->reader = NULL;
    free(s->chunk);
    s->chunk = NULL;
}

/* Server: tell the application how a response it submitted ended. */
static void report_done(qk_h3 *h, h3_stream *s, bool complete)
{
    if (!s->responded || s->reported) return;
    s->reported = true;
    if (h->cb.on_response_done) h->cb.on_response_done(h->user, h, s->sid, complete);
}

static void stream_free(qk_h3 *h, h3_stream *s)
{
    report_done(h, s, false); /* reset, stopped, or the connection went first */
    for (h3_stream **pp = &h->streams; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            h->nstreams--;
            break;
        }
    body_release(s);
    free(s);
}

/* A fatal HTTP/3 error: close the connection with the code nghttp3 infers. */
static int fatal(qk_h3 *h, int liberr)
{
    if (getenv("QK_H3_DEBUG"))
        fprintf(stderr, "h3 %s: fatal %d (%s)\n", h->server ? "server" : "client", liberr,
                nghttp3_strerror(liberr));
    if (!h->dead) {
        uint64_t code = nghttp3_err_infer_quic_app_error_code(liberr);
        qk_conn_close(h->c, code, nghttp3_strerror(liberr));
    }
    h->dead = true;
    return QK_ERR_APPLICATION;
}

/* Both directions of a request stream are finished: forget it. */
static void maybe_close(qk_h3 *h, h3_stream *s)
{
    if (!s->send_done || !s->recv_done) return;
    report_done(h, s, true);
    uint64_t sid = s->sid;
    stream_free(h, s);
    nghttp3_conn_close_stream(h->ng, (int64_t)sid, QK_H3_NO_ERROR);
}

/* ---- priorities (RFC 9218) ----------------------------------------------- */

static void prio_apply(qk_h3 *h, h3_stream *s, qk_h3_priority p)
{
    s->prio = p;
    qk_stream_set_priority(h->c, s->sid, p.urgency, p.incremental);
}

static bool pending_take(qk_h3 *h, uint64_t sid, qk_h3_priority *p)
{
    for (size_t i = 0; i < h->npending; i++)
        if (h->pending[i].sid == sid) {
            *p = h->pending[i].prio;
            h->pending[i] = h->pending[--h->npending];
            return true;
        }
    return false;
}

/* A PRIORITY_UPDATE nghttp3 accepted (RFC 9218 §7.1: it validated the ID
 * and the frame's place). Missing parameters take their defaults (§7). */
static void on_prio_update(void *ctx, uint64_t sid, const char *v, size_t len)
{
    qk_h3 *h = ctx;
    qk_h3_priority p = {QK_H3_DEFAULT_URGENCY, false};
    if (getenv("QK_H3_DEBUG"))
        fprintf(stderr, "h3 server: PRIORITY_UPDATE %llu %.*s\n", (unsigned long long)sid, (int)len,
                v);
    if ((sid & 3) != 0 || qk_h3_priority_parse(v, len, &p)) return;
    h3_stream *s = find(h, sid);
    if (s) {
        s->prio_update = true;
        if (!s->prio_server) prio_apply(h, s, p);
        return;
    }
    if (sid < h->max_seen_bidi) return; /* that request is over */
    qk_h3_priority old;
    pending_take(h, sid, &old); /* the latest one counts */
    if (h->npending == H3_PRIO_PENDING_MAX) return;
    h->pending[h->npending++] = (h3_prio_pending){sid, p};
}

/* Bytes of the client's unidirectional stream sid: the control stream's
 * PRIORITY_UPDATE frames are applied; other streams are ignored. */
static void scan_uni(qk_h3 *h, uint64_t sid, const uint8_t *p, size_t n)
{
    h3_uni_scan *u = NULL;
    for (size_t i = 0; i < h->nuni; i++)
        if (h->uni[i].sid == sid) u = &h->uni[i];
    if (!u) {
        if (h->nuni == H3_UNI_SCANS) return;
        u = &h->uni[h->nuni++];
        u->sid = sid;
        qk_h3_ctrl_scan_init(&u->sc);
    }
    qk_h3_ctrl_scan_feed(&u->sc, p, n, on_prio_update, h);
}

/* A request's header section arrived: its priority, unless a PRIORITY_UPDATE
 * came first (RFC 9218 §7.1: the frame overrides the header). */
static void prio_on_request(qk_h3 *h, h3_stream *s, const qk_h3_header *hd, size_t n)
{
    qk_h3_priority p = {QK_H3_DEFAULT_URGENCY, false};
    if (s->prio_update) return;
    if (pending_take(h, s->sid, &p)) {
        s->prio_update = true;
    } else {
        /* RFC 9218 §4: the `priority` request header (RFC 9110 §5.3: several
         * lines form one list; a later member overwrites an earlier one). */
        for (size_t i = 0; i < n; i++)
            if (hd[i].name_len == 8 && !memcmp(hd[i].name, "priority", 8))
                qk_h3_priority_parse(hd[i].value, hd[i].value_len, &p);
    }
    prio_apply(h, s, p);
}

int qk_h3_stream_priority(const qk_h3 *h, uint64_t stream_id, qk_h3_priority *p)
{
    if (!h->server) return QK_ERR_STATE;
    for (h3_stream *s = h->streams; s; s = s->next)
        if (s->sid == stream_id) {
            *p = s->prio;
            return 0;
        }
    return QK_ERR_NOT_FOUND;
}

int qk_h3_set_priority(qk_h3 *h, uint64_t stream_id, qk_h3_priority p)
{
    if (p.urgency > 7) return QK_ERR_INVALID_ARG;
    h3_stream *s = find(h, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    if (h->server) {
        s->prio_update = s->prio_server = true; /* RFC 9218 §8: the server decides */
        prio_apply(h, s, p);
        return 0;
    }
    nghttp3_pri np = {p.urgency, p.incremental};
    int rv = nghttp3_conn_set_stream_priority(h->ng, (int64_t)stream_id, &np);
    if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND) return QK_ERR_NOT_FOUND;
    return rv ? QK_ERR_NOMEM : 0;
}

/* ---- nghttp3 callbacks ---------------------------------------------------- */

static int cb_acked(nghttp3_conn *ng, int64_t sid, uint64_t n, void *cu, void *su)
{
    (void)ng;
    (void)su;
    qk_h3 *h = cu;
    h3_stream *s = find(h, (uint64_t)sid);
    if (!s) return 0;
    s->body_acked += n;
    /* nghttp3 references no body byte any more: the caller may free it. */
    if (s->body_acked >= s->body_len) body_release(s);
    return 0;
}

static int cb_stream_close(nghttp3_conn *ng, int64_t sid, uint64_t code, void *cu, void *su)
{
    (void)ng;
    (void)code;
    (void)su;
    qk_h3 *h = cu;
    h3_stream *s = find(h, (uint64_t)sid);
    if (s) stream_free(h, s);
    return 0;
}

static int cb_recv_data(nghttp3_conn *ng, int64_t sid, const uint8_t *data, size_t len, void *cu,
                        void *su)
{
    (void)ng;
    (void)su;
    qk_h3 *h = cu;
    if (h->cb.on_data && find(h, (uint64_t)sid))
        h->cb.on_data(h->user, h, (uint64_t)sid, data, len);
    return 0;
}

static int cb_deferred_consume(nghttp3_conn *ng, int64_t sid, size_t n, void *cu, void *su)
{
    /* quack credits flow control when the stream is read, not here. */
    (void)ng;
    (void)sid;
    (void)n;
    (void)cu;
    (void)su;
    return 0;
}

static int cb_begin_headers(nghttp3_conn *ng, int64_t sid, void *cu, void *su)
{
    (void)ng;
    (void)su;
    qk_h3 *h = cu;
    h3_stream *s = find(h, (uint64_t)sid);
    if (!s) s = stream_add(h, (uint64_t)sid);
    if (!s) return NGHTTP3_ERR_CALLBACK_FAILURE;
    s->hlen = 0;
    s->nfields = 0;
    s->overflow = false;
    return 0;
}

static int cb_recv_header(nghttp3_conn *ng, int64_t sid, int32_t token, nghttp3_rcbuf *name,
                          nghttp3_rcbuf *value, uint8_t flags, void *cu, void *su)
{
    (void)ng;
    (void)token;
    (void)flags;
    (void)su;
    qk_h3 *h = cu;
    h3_stream *s = find(h, (uint64_t)sid);
    if (!s) return 0;
    nghttp3_vec n = nghttp3_rcbuf_get_buf(name), v = nghttp3_rcbuf_get_buf(value);
    /* RFC 9114 §4.2.2: we advertised SETTINGS_MAX_FIELD_SECTION_SIZE; a larger
     * section is refused (the stream is reset at the end of the section). */
    if (s->nfields == H3_MAX_FIELDS || n.len + v.len > sizeof s->hbuf - s->hlen) {
        s->overflow = true;
        return 0;
    }
    uint32_t *o = s->off[s->nfields++];
    o[0] = (uint32_t)s->hlen;
    o[1] = (uint32_t)n.len;
    memcpy(s->hbuf + s->hlen, n.base, n.len);
    s->hlen += n.len;
    o[2] = (uint32_t)s->hlen;
    o[3] = (uint32_t)v.len;
    memcpy(s->hbuf + s->hlen, v.base, v.len);
    s->hlen += v.len;
    return 0;
}

static void stream_abort(qk_h3 *h, h3_stream *s, uint64_t code)
{
    uint64_t sid = s->sid;
    qk_stream_stop(h->c, sid, code);
    qk_stream_reset(h->c, sid, code);
    nghttp3_conn_shutdown_stream_read(h->ng, (int64_t)sid);
    stream_free(h, s);
    nghttp3_conn_close_stream(h->ng, (int64_t)sid, code);
}

/* RFC 9114 §4.4, RFC 9220 §3: a CONNECT request (extended or not). */
static bool is_connect(const qk_h3_header *hd, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (hd[i].name_len == 7 && !memcmp(hd[i].name, ":method", 7))
            return hd[i].value_len == 7 && !memcmp(hd[i].value, "CONNECT", 7);
    return false;
}

static int cb_end_headers(nghttp3_conn *ng, int64_t sid, int fin, void *cu, void *su)
{
    (void)ng;
    (void)su;
    qk_h3 *h = cu;
    h3_stream *s = find(h, (uint64_t)sid);
    if (!s) return 0;
    if (s->overflow) {
        if (h->cb.on_reset) h->cb.on_reset(h->user, h, s->sid, H3_EXCESSIVE_LOAD);
        stream_abort(h, s, H3_EXCESSIVE_LOAD);
        return 0;
    }
    qk_h3_header hdrs[H3_MAX_FIELDS];
    for (size_t i = 0; i < s->nfields; i++) {
        hdrs[i].name = s->hbuf + s->off[i][0];
        hdrs[i].name_len = s->off[i][1];
        hdrs[i].value = s->hbuf + s->off[i][2];
        hdrs[i].value_len = s->off[i][3];
    }
    /* RFC 9114 §4.1: interim (1xx) responses precede the final one. */
    if (!h->server && s->nfields && hdrs[0].name_len == 7 && !memcmp(hdrs[0].name, ":status", 7) &&
        hdrs[0].value_len && hdrs[0].value[0] == '1')
        return 0;
    s->got_headers = true;
    if (h->server) prio_on_request(h, s, hdrs, s->nfields);
    if (h->server && h->cb.on_connect && !fin && is_connect(hdrs, s->nfields) &&
        h->cb.on_connect(h->user, h, s->sid, hdrs, s->nfields)) {
        s->taken = true; /* read_stream hands it over once nghttp3 returns */
        return 0;
    }
    if (h->cb.on_headers) h->cb.on_headers(h->user, h, s->sid, hdrs, s->nfields, fin != 0);
    return 0;
}

static int cb_end_stream(nghttp3_conn *ng, int64_t sid, void *cu, void *su)
{
    (void)ng;
    (void)su;
    qk_h3 *h = cu;
    h3_stream *s = find(h, (uint64_t)sid);
    if (s && h->cb.on_end) h->cb.on_end(h->user, h, (uint64_t)sid);
    return 0;
}

static int cb_stop_sending(nghttp3_conn *ng, int64_t sid, uint64_t code, void *cu, void *su)
{
    (void)ng;
    (void)su;
    qk_h3 *h = cu;
    qk_stream_stop(h->c, (uint64_t)sid, code);
    return 0;
}

static int cb_reset_stream(nghttp3_conn *ng, int64_t sid, uint64_t code, void *cu, void *su)
{
    (void)ng;
    (void)su;
    qk_h3 *h = cu;
    qk_stream_reset(h->c, (uint64_t)sid, code);
    return 0;
}

static int cb_shutdown(nghttp3_conn *ng, int64_t id, void *cu)
{
    (void)ng;
    qk_h3 *h = cu;
    if (h->cb.on_goaway) h->cb.on_goaway(h->user, h, (uint64_t)id);
    return 0;
}

static const nghttp3_callbacks h3_callbacks = {
    .acked_stream_data = cb_acked,
    .stream_close = cb_stream_close,
    .recv_data = cb_recv_data,
    .deferred_consume = cb_deferred_consume,
    .begin_headers = cb_begin_headers,
    .recv_header = cb_recv_header,
    .end_headers = cb_end_headers,
    .end_stream = cb_end_stream,
    .stop_sending = cb_stop_sending,
    .reset_stream = cb_reset_stream,
    .shutdown = cb_shutdown,
};

/* ---- lifecycle ------------------------------------------------------------ */

/* qk_h3_callbacks crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with on_response_done; a missing callback is NULL. */
#define H3_CALLBACKS_V1_BYTES QK_ABI_END(qk_h3_callbacks, on_response_done)
QK_ABI_LAST_FIELD(qk_h3_callbacks, on_connect);

qk_h3 *qk_h3_new_sized(qk_conn *c, bool server, const qk_h3_callbacks *cb, size_t cb_bytes,
                       void *user, int *err)
{
    int e = 0;
    qk_h3_callbacks callbacks = {0};
    if (cb && (e = qk_abi_copy_in(&callbacks, sizeof callbacks, cb, cb_bytes,
                                  H3_CALLBACKS_V1_BYTES)) != 0) {
        if (err) *err = e;
        return NULL;
    }
    qk_h3 *h = calloc(1, sizeof *h);
    if (!h || !c) {
        free(h);
        if (err) *err = QK_ERR_NOMEM;
        return NULL;
    }
    h->c = c;
    h->server = server;
    h->cb = callbacks;
    h->user = user;
    nghttp3_settings st;
    nghttp3_settings_default(&st);
    st.max_field_section_size = H3_MAX_FIELD_SECTION_BYTES;
    st.qpack_max_dtable_capacity = 0; /* the peer may not block our streams */
    st.qpack_blocked_streams = 0;
    /* As encoder, nghttp3 uses at most this much of the peer's dynamic
     * table and blocks at most the peer's SETTINGS_QPACK_BLOCKED_STREAMS
     * request streams on it (RFC 9204 §2.1.2); the instructions those
     * streams wait for go out first (urgency 0 below). */
    st.qpack_encoder_max_dtable_capacity = 4096;
    st.enable_connect_protocol = server; /* RFC 9220 §3: SETTINGS_ENABLE_CONNECT_PROTOCOL */
    int rv = server ? nghttp3_conn_server_new(&h->ng, &h3_callbacks, &st, NULL, h)
                    : nghttp3_conn_client_new(&h->ng, &h3_callbacks, &st, NULL, h);
    if (rv) {
        e = QK_ERR_NOMEM;
        goto fail;
    }
    if (server) nghttp3_conn_set_max_client_streams_bidi(h->ng, 1u << 20);
    /* RFC 9114 §6.2.1 control stream, RFC 9204 §4.2 encoder/decoder streams. */
    uint64_t ctrl, qenc, qdec;
    if ((e = qk_stream_open(c, false, &ctrl)) || (e = qk_stream_open(c, false, &qenc)) ||
        (e = qk_stream_open(c, false, &qdec))) {
        /* RFC 9114 §6.2: a peer must allow at least 3 unidirectional streams. */
        if (e != QK_ERR_CLOSED) qk_conn_close(c, H3_GENERAL_PROTOCOL_ERROR, "uni stream limit");
        goto fail;
    }
    /* RFC 9204 §2.1.3, RFC 9114 §6.2: the control and QPACK streams go ahead
     * of every request stream (urgency 0; requests default to 3, RFC 9218
     * §4.1). Otherwise a response body larger than the peer's connection
     * window takes all the credit before the encoder instructions its HEADERS
     * reference, the peer cannot decode them, never consumes, never sends
     * MAX_DATA: deadlock. */
    qk_stream_set_priority(c, ctrl, H3_CRITICAL_URGENCY, false);
    qk_stream_set_priority(c, qenc, H3_CRITICAL_URGENCY, false);
    qk_stream_set_priority(c, qdec, H3_CRITICAL_URGENCY, false);
    h->ctrl_sid = (int64_t)ctrl;
    h->settings_pending = server && h->cb.on_connect;
    if (nghttp3_conn_bind_control_stream(h->ng, (int64_t)ctrl) ||
        nghttp3_conn_bind_qpack_streams(h->ng, (int64_t)qenc, (int64_t)qdec)) {
        e = QK_ERR_NOMEM;
        goto fail;
    }
    if (err) *err = 0;
    return h;
fail:
    if (err) *err = e;
    qk_h3_del(h);
    return NULL;
}

void qk_h3_del(qk_h3 *h)
{
    if (!h) return;
    while (h->streams) stream_free(h, h->streams);
    if (h->ng) nghttp3_conn_del(h->ng);
    free(h->blocked);
    free(h);
}

qk_conn *qk_h3_conn(const qk_h3 *h)
{
    return h->c;
}

size_t qk_h3_active(const qk_h3 *h)
{
    return h->nstreams;
}

qk_h3_header qk_h3_hdr(const char *name, const char *value)
{
    return (qk_h3_header){name, value, strlen(name), strlen(value)};
}

/* ---- input ---------------------------------------------------------------- */

/* Bidirectional streams nghttp3 knows: ours in progress, or a new client
 * stream (server). Data on a request stream we already closed is dropped. */
static bool stream_wanted(qk_h3 *h, uint64_t sid)
{
    if (sid & 2) return true; /* unidirectional: control/QPACK/push, nghttp3 decides */
    h3_stream *s = find(h, sid);
    if (s) return !s->recv_done; /* the FIN was passed on once */
    if (!h->server) return false;
    if (sid + 4 > h->max_seen_bidi) {
        h->max_seen_bidi = sid + 4;
        return stream_add(h, sid) != NULL;
    }
    return false;
}

/* RFC 9000 §16: the length of a varint from its first byte. */
static uint8_t varint_bytes(uint8_t first)
{
    return (uint8_t)(1u << (first >> 6));
}

/* Server with on_connect: how many bytes of sid to read next so that the
 * first header section ends a read (RFC 9114 §7.1: type and length varints,
 * then the payload): one byte at a time through the frame header, then the
 * payload. 0: no limit (the section came; the stream is not gated). */
static size_t gate_cap(qk_h3 *h, uint64_t sid)
{
    if (!h->server || !h->cb.on_connect || (sid & 3) != 0) return 0;
    h3_stream *s = find(h, sid);
    if (!s || s->got_headers) return 0;
    if (s->in_frame) return s->frame_left < H3_READ_BYTES ? (size_t)s->frame_left : H3_READ_BYTES;
    return 1;
}

/* The gated bytes just fed: advance the frame-boundary parser. */
static void gate_advance(qk_h3 *h, uint64_t sid, const uint8_t *p, size_t n)
{
    h3_stream *s = find(h, sid);
    if (!s || !n) return;
    if (s->in_frame) {
        s->frame_left -= n;
        if (!s->frame_left) s->in_frame = false;
        return;
    }
    if (s->fh_seen == 0) {
        s->fh_type_bytes = varint_bytes(p[0]);
        s->frame_left = 0;
    } else if (s->fh_seen == s->fh_type_bytes) {
        s->fh_len_bytes = varint_bytes(p[0]);
        s->frame_left = p[0] & 0x3fu;
    } else if (s->fh_seen > s->fh_type_bytes) {
        s->frame_left = (s->frame_left << 8) | p[0];
    }
    s->fh_seen++;
    if (s->fh_len_bytes && s->fh_seen == s->fh_type_bytes + s->fh_len_bytes) {
        s->fh_seen = s->fh_type_bytes = s->fh_len_bytes = 0;
        s->in_frame = s->frame_left > 0;
    }
}

/* on_connect took sid: nghttp3 and this layer forget it; the rest of the
 * stream, both ways, is the application's. */
static void hand_over(qk_h3 *h, uint64_t sid)
{
    h3_stream *s = find(h, sid);
    if (!s || !s->taken) return;
    s->send_done = s->recv_done = true;
    stream_free(h, s);
    nghttp3_conn_close_stream(h->ng, (int64_t)sid, QK_H3_NO_ERROR);
}

static int read_stream(qk_h3 *h, uint64_t sid)
{
    if (!stream_wanted(h, sid)) return 0;
    /* Not in qk_h3: a per-connection buffer would cost every idle
     * connection its size. */
    uint8_t buf[H3_READ_BYTES];
    for (;;) {
        bool fin = false;
        size_t cap = gate_cap(h, sid);
        long n = qk_stream_read(h->c, sid, buf, cap ? cap : sizeof buf, &fin);
        if (n < 0) return 0; /* QK_ERR_AGAIN, or the stream is gone */
        if (cap) gate_advance(h, sid, buf, (size_t)n);
        nghttp3_ssize rv = nghttp3_conn_read_stream(h->ng, (int64_t)sid, buf, (size_t)n, fin);
        if (rv < 0) return fatal(h, (int)rv);
        h3_stream *s = find(h, sid);
        if (s && s->taken) {
            hand_over(h, sid);
            return 0;
        }
        /* nghttp3 accepted the bytes (frame rules hold): pick out priorities. */
        if (h->server && (sid & 3) == 2) scan_uni(h, sid, buf, (size_t)n);
        if (fin) {
            if (s) {
                s->recv_done = true;
                maybe_close(h, s);
            }
            return 0;
        }
        if (n == 0) return 0;
    }
}

int qk_h3_on_event(qk_h3 *h, const qk_event *ev)
{
    if (h->dead) return QK_ERR_APPLICATION;
    h3_stream *s;
    switch (ev->type) {
    case QK_EV_STREAM_OPENED:
    case QK_EV_STREAM_READABLE: return read_stream(h, ev->stream_id);
    case QK_EV_STREAM_RESET:
    case QK_EV_STREAM_STOP:
        if (!(ev->stream_id & 2)) {
            s = find(h, ev->stream_id);
            if (!s) return 0;
            if (h->cb.on_reset) h->cb.on_reset(h->user, h, ev->stream_id, ev->error_code);
            s = find(h, ev->stream_id); /* the callback may have acted */
            if (s) stream_abort(h, s, QK_H3_REQUEST_CANCELLED);
            return 0;
        }
        /* RFC 9114 §6.2.1: closing a critical stream is a connection error. */
        if (ev->type == QK_EV_STREAM_RESET) {
            int rv = nghttp3_conn_close_stream(h->ng, (int64_t)ev->stream_id, ev->error_code);
            if (rv && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return fatal(h, rv);
        } else {
            return fatal(h, NGHTTP3_ERR_H3_CLOSED_CRITICAL_STREAM);
        }
        return 0;
    default: return 0;
    }
}

/* ---- output --------------------------------------------------------------- */

/* The pull model: read as many body bytes as the stream accepts now (no
 * more than a chunk), only once nghttp3 released the previous chunk. */
static nghttp3_ssize pull_body(qk_h3 *h, h3_stream *s, nghttp3_vec *vec, uint32_t *pflags)
{
    uint64_t left = s->body_len - s->body_given;
    if (left == 0) {
        *pflags |= NGHTTP3_DATA_FLAG_EOF;
        return 0;
    }
    long room = s->body_acked < s->body_given ? 0 : qk_stream_send_room(h->c, s->sid);
    if (room <= (long)H3_PULL_SLACK_BYTES) {
        s->reader_blocked = true;
        return NGHTTP3_ERR_WOULDBLOCK;
    }
    free(s->chunk);
    size_t n = (size_t)room - H3_PULL_SLACK_BYTES;
    if (n > H3_PULL_CHUNK_BYTES) n = H3_PULL_CHUNK_BYTES;
    if (n > left) n = (size_t)left;
    s->chunk = malloc(n);
    long got = s->chunk ? s->reader(s->release_ctx, s->body_given, s->chunk, n) : -1;
    if (got <= 0 || (size_t)got > n) {
        s->read_failed = s->reader_blocked = true;
        return NGHTTP3_ERR_WOULDBLOCK;
    }
    vec[0].base = s->chunk;
    vec[0].len = (size_t)got;
    s->body_given += (uint64_t)got;
    if (s->body_given == s->body_len) *pflags |= NGHTTP3_DATA_FLAG_EOF;
    return 1;
}

static nghttp3_ssize read_body(nghttp3_conn *ng, int64_t sid, nghttp3_vec *vec, size_t veccnt,
                               uint32_t *pflags, void *cu, void *su)
{
    (void)ng;
    (void)su;
    qk_h3 *h = cu;
    h3_stream *s = find(h, (uint64_t)sid);
    if (!s || veccnt == 0 || (!s->body && !s->reader)) {
        *pflags |= NGHTTP3_DATA_FLAG_EOF;
        return 0;
    }
    if (s->reader) return pull_body(h, s, vec, pflags);
    uint64_t left = s->body_len - s->body_given;
    size_t n = left < H3_BODY_CHUNK_BYTES ? (size_t)left : H3_BODY_CHUNK_BYTES;
    if (n == left) *pflags |= NGHTTP3_DATA_FLAG_EOF;
    if (n == 0) return 0;
    vec[0].base = (uint8_t *)(uintptr_t)(s->body + s->body_given);
    vec[0].len = n;
    s->body_given += n;
    return 1;
}

static void block(qk_h3 *h, int64_t sid)
{
    nghttp3_conn_block_stream(h->ng, sid);
    if (h->nblocked == h->cap_blocked) {
        size_t cap = h->cap_blocked ? h->cap_blocked * 2 : 16;
        int64_t *b = realloc(h->blocked, cap * sizeof *b);
        if (!b) return; /* it stays blocked until the stream is written again */
        h->blocked = b;
        h->cap_blocked = cap;
    }
    h->blocked[h->nblocked++] = sid;
}

/* Write one writev result. Returns 1 when bytes or FIN went out, 0 when not,
 * -1 when the stream refused (it is shut for writing). */
static int write_vecs(qk_h3 *h, int64_t sid, const nghttp3_vec *v, size_t n, int fin,
                      size_t *accepted, bool *blocked)
{
    *accepted = 0;
    *blocked = false;
    for (size_t i = 0; i < n || (n == 0 && i == 0); i++) {
        bool last = n == 0 || i == n - 1;
        const uint8_t *p = n ? v[i].base : NULL;
        size_t len = n ? v[i].len : 0;
        long w = qk_stream_write(h->c, (uint64_t)sid, p, len, fin && last);
        if (w < 0) return -1;
        *accepted += (size_t)w;
        if ((size_t)w < len) {
            *blocked = true;
            break;
        }
    }
    return *accepted || (fin && !*blocked);
}

/* Pulled bodies that waited for room (or for their chunk to be written)
 * are offered again; a body whose reader failed ends in a reset. */
static void pull_resume(qk_h3 *h, h3_stream *only)
{
    for (h3_stream *s = only ? only : h->streams; s; s = only ? NULL : s->next)
        if (s->reader && s->reader_blocked && !s->read_failed && s->body_acked == s->body_given) {
            s->reader_blocked = false;
            nghttp3_conn_resume_stream(h->ng, (int64_t)s->sid);
        }
}

static void pull_reap_failed(qk_h3 *h)
{
    for (h3_stream *s = h->streams, *nx; s; s = nx) {
        nx = s->next;
        if (!s->read_failed) continue;
        if (h->cb.on_reset) h->cb.on_reset(h->user, h, s->sid, QK_H3_INTERNAL_ERROR);
        stream_abort(h, s, QK_H3_INTERNAL_ERROR);
    }
}

/* A QUIC varint (RFC 9000 §16) at *p of n bytes: its value, or false when cut. */
static bool vint_get(const uint8_t *b, size_t n, size_t *p, uint64_t *v)
{
    if (*p >= n) return false;
    size_t len = (size_t)1 << (b[*p] >> 6);
    if (len > n - *p) return false;
    *v = b[*p] & 0x3f;
    for (size_t i = 1; i < len; i++) *v = (*v << 8) | b[*p + i];
    *p += len;
    return true;
}

/* v (< 2^14) as a QUIC varint of 1 or 2 bytes; the bytes written. */
static size_t vint_put14(uint8_t *out, uint64_t v)
{
    if (v < 64) {
        out[0] = (uint8_t)v;
        return 1;
    }
    out[0] = (uint8_t)(0x40 | (v >> 8));
    out[1] = (uint8_t)v;
    return 2;
}

/* RFC 9297 §2.1.1: a server that takes CONNECT streams (on_connect: e.g.
 * CONNECT-UDP, RFC 9298) advertises SETTINGS_H3_DATAGRAM = 1, which nghttp3
 * 0.8 does not know. Its control stream starts with the stream type and our
 * SETTINGS frame (RFC 9114 §6.2.1, §7.2.4); the first write of it goes out
 * with the setting appended to that frame. Anything unexpected (a frame not
 * whole in the first write, no room): the bytes go out unchanged. Returns
 * true when it wrote them (*accepted: nghttp3's bytes consumed). */
static bool settings_patch(qk_h3 *h, const nghttp3_vec *v, size_t n, size_t *accepted)
{
    uint8_t in[256], out[sizeof in + 8];
    size_t len = 0, p = 0;
    h->settings_pending = false;
    for (size_t i = 0; i < n; i++) {
        if (v[i].len > sizeof in - len) return false;
        memcpy(in + len, v[i].base, v[i].len);
        len += v[i].len;
    }
    uint64_t stype, ftype, flen;
    if (!vint_get(in, len, &p, &stype) || stype != 0x00 || !vint_get(in, len, &p, &ftype) ||
        ftype != 0x04 || !vint_get(in, len, &p, &flen) || flen > len - p || flen > 1000)
        return false;
    size_t o = vint_put14(out, 0x00);      /* control stream type */
    o += vint_put14(out + o, 0x04);        /* SETTINGS */
    o += vint_put14(out + o, flen + 2);    /* + 0x33 and 1: one byte each */
    memcpy(out + o, in + p, (size_t)flen); /* nghttp3's settings */
    o += (size_t)flen;
    o += vint_put14(out + o, 0x33); /* SETTINGS_H3_DATAGRAM */
    out[o++] = 0x01;
    size_t rest = len - p - (size_t)flen; /* what followed the frame */
    if (rest > sizeof out - o) return false;
    memcpy(out + o, in + p + flen, rest);
    o += rest;
    if (qk_stream_send_room(h->c, (uint64_t)h->ctrl_sid) < (long)o) return false;
    if (qk_stream_write(h->c, (uint64_t)h->ctrl_sid, out, o, false) != (long)o) return false;
    *accepted = len;
    return true;
}

int qk_h3_flush(qk_h3 *h)
{
    if (h->dead) return QK_ERR_APPLICATION;
    size_t nb = h->nblocked;
    h->nblocked = 0;
    for (size_t i = 0; i < nb; i++) nghttp3_conn_unblock_stream(h->ng, h->blocked[i]);
    pull_resume(h, NULL);
    int wrote = 0;
    for (int iter = 0; iter < 100000; iter++) {
        int64_t sid = -1;
        int fin = 0;
        nghttp3_vec vec[H3_VECS];
        nghttp3_ssize n = nghttp3_conn_writev_stream(h->ng, &sid, &fin, vec, H3_VECS);
        if (n < 0) return fatal(h, (int)n);
        if (sid < 0) break;
        size_t acc;
        bool blocked = false;
        int r = sid == h->ctrl_sid && h->settings_pending && n > 0 &&
                        settings_patch(h, vec, (size_t)n, &acc)
                    ? 1
                    : write_vecs(h, sid, vec, (size_t)n, fin, &acc, &blocked);
        if (r < 0) {
            /* Reset or stopped underneath: nghttp3 must stop offering it. */
            nghttp3_conn_shutdown_stream_write(h->ng, sid);
            continue;
        }
        if (r) wrote = 1;
        int rv = nghttp3_conn_add_write_offset(h->ng, sid, acc);
        if (!rv) rv = nghttp3_conn_add_ack_offset(h->ng, sid, acc);
        if (rv) return fatal(h, rv);
        h3_stream *ps = acc ? find(h, (uint64_t)sid) : NULL;
        if (ps && ps->reader) pull_resume(h, ps); /* its chunk is written */
        if (blocked || (n == 0 && !fin) || (!acc && !fin)) {
            block(h, sid);
            continue;
        }
        if (fin) {
            h3_stream *s = find(h, (uint64_t)sid);
            if (s) {
                s->send_done = true;
                maybe_close(h, s);
            }
        }
    }
    pull_reap_failed(h);
    return wrote;
}

/* ---- requests and responses --------------------------------------------- */

static nghttp3_nv nv_of(const qk_h3_header *x)
{
    return (nghttp3_nv){(uint8_t *)(uintptr_t)x->name, (uint8_t *)(uintptr_t)x->value, x->name_len,
                        x->value_len, NGHTTP3_NV_FLAG_NONE};
}

static void set_body(h3_stream *s, const uint8_t *body, uint64_t len, qk_h3_release_fn rel,
                     void *ctx)
{
    s->body = body;
    s->body_len = len;
    s->release = rel;
    s->release_ctx = ctx;
}

int qk_h3_request(qk_h3 *h, const qk_h3_header *hdrs, size_t n, const uint8_t *body,
                  uint64_t body_len, qk_h3_release_fn release, void *release_ctx,
                  uint64_t *stream_id)
{
    if (h->server || h->goaway_sent || n > H3_MAX_FIELDS) return QK_ERR_STATE;
    if (h->dead) return QK_ERR_CLOSED;
    uint64_t sid;
    int rc = qk_stream_open(h->c, true, &sid);
    if (rc) return rc;
    h3_stream *s = stream_add(h, sid);
    if (!s) {
        qk_stream_reset(h->c, sid, QK_H3_INTERNAL_ERROR);
        return QK_ERR_NOMEM;
    }
    nghttp3_nv nva[H3_MAX_FIELDS];
    for (size_t i = 0; i < n; i++) nva[i] = nv_of(&hdrs[i]);
    nghttp3_data_reader dr = {read_body};
    if (body) set_body(s, body, body_len, release, release_ctx);
    int rv = nghttp3_conn_submit_request(h->ng, (int64_t)sid, nva, n, body ? &dr : NULL, NULL);
    if (rv) {
        s->release = NULL; /* the caller keeps ownership on failure */
        stream_free(h, s);
        qk_stream_reset(h->c, sid, QK_H3_INTERNAL_ERROR);
        return rv == NGHTTP3_ERR_NOMEM ? QK_ERR_NOMEM : QK_ERR_STATE;
    }
    *stream_id = sid;
    return 0;
}

/* Submit a response on s: status, headers, and a body through read_body
 * (has_body) or none. */
static int respond(qk_h3 *h, h3_stream *s, unsigned status, const qk_h3_header *hdrs, size_t n,
                   bool has_body)
{
    char st[4] = {(char)('0' + status / 100), (char)('0' + status / 10 % 10),
                  (char)('0' + status % 10), 0};
    qk_h3_header stat = qk_h3_hdr(":status", st);
    nghttp3_nv nva[H3_MAX_FIELDS];
    nva[0] = nv_of(&stat);
    for (size_t i = 0; i < n; i++) nva[i + 1] = nv_of(&hdrs[i]);
    nghttp3_data_reader dr = {read_body};
    int rv =
        nghttp3_conn_submit_response(h->ng, (int64_t)s->sid, nva, n + 1, has_body ? &dr : NULL);
    if (rv) {
        s->release = NULL; /* the caller keeps ownership on failure */
        s->body = NULL;
        s->reader = NULL;
        return rv == NGHTTP3_ERR_NOMEM ? QK_ERR_NOMEM : QK_ERR_STATE;
    }
    s->responded = true;
    return 0;
}

static h3_stream *respondable(qk_h3 *h, uint64_t stream_id, unsigned status, size_t n, int *rc)
{
    *rc = QK_ERR_STATE;
    if (!h->server || n + 1 > H3_MAX_FIELDS || status < 100 || status > 999) return NULL;
    h3_stream *s = find(h, stream_id);
    if (!s) *rc = QK_ERR_NOT_FOUND;
    if (!s || s->responded) return NULL;
    return s;
}

int qk_h3_respond(qk_h3 *h, uint64_t stream_id, unsigned status, const qk_h3_header *hdrs, size_t n,
                  const uint8_t *body, uint64_t body_len, qk_h3_release_fn release,
                  void *release_ctx)
{
    int rc;
    h3_stream *s = respondable(h, stream_id, status, n, &rc);
    if (!s) return rc;
    if (body) set_body(s, body, body_len, release, release_ctx);
    return respond(h, s, status, hdrs, n, body != NULL);
}

int qk_h3_respond_pull(qk_h3 *h, uint64_t stream_id, unsigned status, const qk_h3_header *hdrs,
                       size_t n, uint64_t body_len, qk_h3_read_fn read, qk_h3_release_fn release,
                       void *ctx)
{
    int rc;
    if (!read) return QK_ERR_INVALID_ARG;
    h3_stream *s = respondable(h, stream_id, status, n, &rc);
    if (!s) return rc;
    set_body(s, NULL, body_len, release, ctx);
    s->reader = read;
    return respond(h, s, status, hdrs, n, true);
}

int qk_h3_shutdown(qk_h3 *h)
{
    if (h->dead || h->goaway_sent) return QK_ERR_STATE;
    /* RFC 9114 §5.2: GOAWAY; nghttp3 sends the notice, then the final id. */
    if (nghttp3_conn_submit_shutdown_notice(h->ng) || nghttp3_conn_shutdown(h->ng))
        return QK_ERR_STATE;
    h->goaway_sent = true;
    return 0;
}
