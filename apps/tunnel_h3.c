/* SPDX-License-Identifier: MIT */
/* `quack tunnel` over HTTP/3 (tunnel_h3.h). The tunnel core sees a carrier
 * of plain byte streams; here each is a CONNECT request stream: the client
 * writes a HEADERS frame (QPACK without the dynamic table, RFC 9204 §4.5)
 * when it opens one, the server answers 200 when the proof header is right,
 * and from then on every byte in either direction travels in DATA frames
 * (RFC 9114 §4.4: "the payload of DATA frames"). The server's other
 * requests go to libnghttp3 (src/h3) and the masquerade site; the
 * CONNECTs it takes are handed over by qk_h3's on_connect hook. */
#include "tunnel_h3.h"

#include <quack/io.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H3_FRAME_DATA         0x00u  /* RFC 9114 §7.2.1 */
#define H3_FRAME_HEADERS      0x01u  /* RFC 9114 §7.2.2 */
#define H3_STREAM_CONTROL     0x00u  /* RFC 9114 §6.2.1 */
#define H3_FRAME_SETTINGS     0x04u  /* RFC 9114 §7.2.4 */
#define H3_STREAM_CREATION    0x103u /* RFC 9114 §8.1 H3_STREAM_CREATION_ERROR */
#define H3_FRAME_UNEXPECTED   0x105u /* RFC 9114 §8.1 */
#define H3_FRAME_ERROR        0x106u /* RFC 9114 §8.1 */
#define H3_MISSING_SETTINGS   0x10au /* RFC 9114 §8.1 */
#define H3_REQUEST_CANCELLED  0x10cu /* RFC 9114 §8.1 */
#define H3_CONNECT_ERROR      0x10fu /* RFC 9114 §4.4: the TCP side reset or failed */
#define TUN_H3_STATUS_BYTES   64u    /* of a response field section kept: :status comes first */
#define TUN_H3_FRAME_HDR_MAX  16u    /* two varints (RFC 9000 §16) */
#define TUN_H3_DATA_MAX_BYTES (1u << 20)
#define TUN_H3_PENDING_BYTES  (1u << 20) /* per connection */
#define TUN_H3_PENDING_MAX    2048u
#define TUN_H3_SETTING_DGRAM  0x33u /* RFC 9297 §2.1.1 SETTINGS_H3_DATAGRAM */
#define TUN_H3_CTL_BYTES      1024u /* of the server's control stream read for SETTINGS */
#define TUN_H3_UNI_MAX        8u    /* server unidirectional streams told apart */
#define TUN_H3_CONNECT_BYTES  768u  /* the most a CONNECT request's HEADERS frame takes */
/* A new stream's CONNECT, the tunnel core's header behind it (a DATA frame
 * of at most 1 + 32 bytes) and the 5-byte 200 always fit in a fresh
 * stream, whatever other flows hold of the send budgets (quack.h). */
_Static_assert(TUN_H3_CONNECT_BYTES + 2 * TUN_H3_FRAME_HDR_MAX + 64 <= QK_STREAM_HEAD_BYTES,
               "a CONNECT and the first flow header must fit a stream's head bytes");
/* Server: the tunnel core's authentication stream, made up here once a
 * CONNECT carried the right proof (nothing of it is on the wire). A
 * server-initiated bidirectional stream ID: HTTP/3 never opens one (RFC
 * 9114 §6.1), so no request can have it. */
#define TUN_H3_AUTH_SID 1u

enum { KIND_DATA, KIND_STATUS, KIND_SKIP };

typedef struct tstream {
    uint64_t sid;
    uint8_t fh[TUN_H3_FRAME_HDR_MAX]; /* a frame header being read */
    uint8_t fh_len;
    uint8_t kind;  /* of the frame being read */
    uint64_t left; /* its payload bytes not read yet */
    uint8_t st[TUN_H3_STATUS_BYTES];
    size_t st_len;
    bool answered;                    /* client: the 2xx came (DATA follows) */
    uint8_t ph[TUN_H3_FRAME_HDR_MAX]; /* a DATA frame header not written yet */
    uint8_t ph_len;
    uint64_t owed; /* payload of our last DATA frame not written yet */
    bool rfin, wfin;
} tstream;

/* A UDP session of qk_tunnel_udp (its 4-byte id) and the CONNECT-UDP
 * request stream its HTTP Datagrams name (RFC 9297 §2.1). */
typedef struct udp_map {
    uint32_t usid;
    uint64_t sid;
    qk_time used_ns; /* last datagram either way */
    bool answered;   /* client: the response's status was read */
} udp_map;

struct tun_h3 {
    qk_conn *c;
    tun_h3_config cfg;
    qk_h3 *h; /* server: HTTP/3 for all but the tunnel's CONNECTs */
    tstream **st;
    size_t n_st, cap_st;
    uint64_t *taken; /* server: CONNECTs taken, not told to the tunnel yet */
    size_t n_taken, cap_taken;
    bool auth_told; /* server: the tunnel core has the proof */
    uint8_t auth[1 + QK_TUNNEL_AUTH_MAC_BYTES];
    size_t auth_off;
    bool refused; /* client: told once */
    udp_map *um;  /* UDP sessions: their CONNECT-UDP streams */
    size_t n_um, cap_um;
    /* Server: HTTP Datagrams that came before their request's HEADERS
     * (RFC 9297 §2.1: buffered a while), at most TUN_H3_PENDING_BYTES. */
    qk_event *pend;
    size_t n_pend, pend_bytes;
    qk_tunnel_udp *u; /* where datagrams go (the last tun_h3_datagram's) */
    /* Client: the server's SETTINGS (RFC 9114 §7.2.4). No HTTP Datagram
     * goes out before they say SETTINGS_H3_DATAGRAM = 1 (RFC 9297 §2.1.1):
     * until then they wait in held (TUN_H3_PENDING_* bound them). */
    enum { DG_UNKNOWN, DG_ON, DG_OFF } dgram;
    uint64_t uni_sid[TUN_H3_UNI_MAX]; /* server uni streams whose type was read */
    bool uni_ctl[TUN_H3_UNI_MAX];     /* ... and which is the control stream */
    size_t n_uni;
    uint8_t ctl[TUN_H3_CTL_BYTES]; /* the control stream's first bytes */
    size_t ctl_len;
    struct held_dg {
        uint8_t *d;
        size_t len;
        uint8_t urgency;
    } * held;
    size_t n_held, held_bytes;
};

/* ---- encoding ------------------------------------------------------------ */

/* RFC 9000 §16 variable-length integer; returns its bytes. */
static size_t varint_put(uint8_t *p, uint64_t v)
{
    if (v < 64) {
        p[0] = (uint8_t)v;
        return 1;
    }
    if (v < 16384) {
        p[0] = (uint8_t)(0x40 | (v >> 8));
        p[1] = (uint8_t)v;
        return 2;
    }
    if (v < (1u << 30)) {
        for (int i = 3; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
        p[0] |= 0x80;
        return 4;
    }
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
    p[0] |= 0xc0;
    return 8;
}

static size_t varint_len(uint8_t first)
{
    return (size_t)1 << (first >> 6);
}

static uint64_t varint_get(const uint8_t *p)
{
    size_t n = varint_len(p[0]);
    uint64_t v = p[0] & 0x3fu;
    for (size_t i = 1; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* RFC 9204 §4.1.1 (RFC 7541 §5.1): an integer with an N-bit prefix, the
 * byte's high bits given in flags. Returns the bytes written. */
static size_t pint_put(uint8_t *p, unsigned bits, uint8_t flags, uint64_t v)
{
    uint64_t max = (1u << bits) - 1;
    if (v < max) {
        p[0] = (uint8_t)(flags | v);
        return 1;
    }
    size_t n = 0;
    p[n++] = (uint8_t)(flags | max);
    for (v -= max; v >= 128; v >>= 7) p[n++] = (uint8_t)(0x80 | (v & 0x7f));
    p[n++] = (uint8_t)v;
    return n;
}

static bool pint_get(const uint8_t **p, const uint8_t *end, unsigned bits, uint64_t *out)
{
    if (*p >= end) return false;
    uint64_t max = (1u << bits) - 1, v = **p & max;
    (*p)++;
    for (unsigned m = 0; v >= max && m <= 56; m += 7) {
        if (*p >= end) return false;
        uint8_t b = *(*p)++;
        v += (uint64_t)(b & 0x7f) << m;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    *out = v;
    return v < max;
}

/* Field lines (RFC 9204 §4.5): a literal value after a static name
 * reference (§4.5.4, T=1), or a literal name and value (§4.5.6); no
 * Huffman coding. */
static size_t field_ref(uint8_t *p, unsigned idx, const char *v)
{
    size_t n = pint_put(p, 4, 0x50, idx), vl = strlen(v);
    n += pint_put(p + n, 7, 0, vl);
    memcpy(p + n, v, vl);
    return n + vl;
}

static size_t field_lit(uint8_t *p, const char *name, const char *v)
{
    size_t nl = strlen(name), vl = strlen(v);
    size_t n = pint_put(p, 3, 0x20, nl);
    memcpy(p + n, name, nl);
    n += nl;
    n += pint_put(p + n, 7, 0, vl);
    memcpy(p + n, v, vl);
    return n + vl;
}

/* The proof header's value: "Bearer " and the MAC in hex. */
static int proof_value(tun_h3 *w, char out[8 + 2 * QK_TUNNEL_AUTH_MAC_BYTES])
{
    uint8_t mac[QK_TUNNEL_AUTH_MAC_BYTES];
    int rc = qk_tunnel_auth_mac(&tun_h3_carrier, w, w->cfg.secret, w->cfg.secret_len, mac);
    if (rc) return rc;
    memcpy(out, "Bearer ", 7);
    for (size_t i = 0; i < sizeof mac; i++) snprintf(out + 7 + 2 * i, 3, "%02x", mac[i]);
    return 0;
}

/* Client: the HEADERS frame of a CONNECT (RFC 9114 §4.4: :method and
 * :authority only). Returns its bytes, 0 when it does not fit. */
static size_t connect_frame(tun_h3 *w, uint8_t *out, size_t cap)
{
    uint8_t fs[512];
    size_t n = 0;
    fs[n++] = 0; /* Required Insert Count 0 (RFC 9204 §4.5.1) */
    fs[n++] = 0; /* Delta Base 0 */
    if (strlen(w->cfg.authority) > 200) return 0;
    n += pint_put(fs + n, 6, 0xc0, 15); /* static 15 ":method: CONNECT" (§4.5.2, App. A) */
    n += field_ref(fs + n, 0, w->cfg.authority); /* static 0 ":authority" */
    if (w->cfg.secret_len) {
        char v[8 + 2 * QK_TUNNEL_AUTH_MAC_BYTES];
        if (proof_value(w, v)) return 0;
        n += field_lit(fs + n, TUN_H3_AUTH_HEADER, v);
    }
    if (n + 2 * TUN_H3_FRAME_HDR_MAX > cap) return 0;
    size_t o = varint_put(out, H3_FRAME_HEADERS);
    o += varint_put(out + o, n);
    if (o > cap || n > cap - o || n > sizeof fs) return 0; /* tells gcc -O3 the bound too */
    memcpy(out + o, fs, n);
    return o + n;
}

/* ---- stream state ---------------------------------------------------------- */

static tstream *ts_find(tun_h3 *w, uint64_t sid)
{
    for (size_t i = w->n_st; i-- > 0;)
        if (w->st[i]->sid == sid) return w->st[i];
    return NULL;
}

static tstream *ts_add(tun_h3 *w, uint64_t sid)
{
    if (w->n_st == w->cap_st) {
        size_t cap = w->cap_st ? 2 * w->cap_st : 16;
        tstream **a = realloc(w->st, cap * sizeof *a);
        if (!a) return NULL;
        w->st = a;
        w->cap_st = cap;
    }
    tstream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->sid = sid;
    w->st[w->n_st++] = s;
    return s;
}

static void ts_free(tun_h3 *w, tstream *s)
{
    for (size_t i = 0; i < w->n_st; i++)
        if (w->st[i] == s) {
            w->st[i] = w->st[--w->n_st];
            free(s);
            return;
        }
}

static void ts_maybe_free(tun_h3 *w, tstream *s)
{
    if (s->rfin && s->wfin) ts_free(w, s);
}

/* ---- reading: DATA payloads out of the frames ------------------------------ */

/* A Huffman-coded status (RFC 7541 App. B: '0'-'2' are 5 bits, '3'-'9' 6). */
static unsigned huff_status(const uint8_t *p, size_t len)
{
    unsigned v = 0, bit = 0, total = (unsigned)len * 8;
    for (int d = 0; d < 3; d++) {
        unsigned code = 0;
        for (unsigned i = 0; i < 6 && bit < total; i++, bit++) {
            code = (code << 1) | ((p[bit / 8] >> (7 - bit % 8)) & 1u);
            if (i == 4 && code < 3) {
                bit++;
                break;
            }
        }
        unsigned digit = code < 3 ? code : code >= 0x19 && code <= 0x1f ? 3 + code - 0x19 : 10;
        if (digit > 9) return 0;
        v = v * 10 + digit;
    }
    return v;
}

/* The :status of a response field section (RFC 9114 §4.3.2: the first
 * line), from static table references (RFC 9204 App. A) or a literal. */
static unsigned response_status(const uint8_t *p, size_t len)
{
    static const struct {
        uint8_t idx;
        uint16_t status;
    } tab[] = {{24, 103}, {25, 200}, {26, 304}, {27, 404}, {28, 503}, {63, 100}, {64, 204},
               {65, 206}, {66, 302}, {67, 400}, {68, 403}, {69, 421}, {70, 425}, {71, 500}};
    const uint8_t *end = p + len;
    uint64_t ric, base, idx, vl;
    if (!pint_get(&p, end, 8, &ric) || ric || !pint_get(&p, end, 7, &base) || p >= end) return 0;
    uint8_t b = *p;
    if ((b & 0xc0) == 0xc0) { /* §4.5.2 indexed, static */
        if (!pint_get(&p, end, 6, &idx)) return 0;
        for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
            if (tab[i].idx == idx) return tab[i].status;
        return 0;
    }
    if ((b & 0xd0) != 0x50 || !pint_get(&p, end, 4, &idx)) return 0; /* §4.5.4, static name */
    if (p >= end) return 0;
    bool huff = *p & 0x80;
    if (!pint_get(&p, end, 7, &vl) || vl > (uint64_t)(end - p) || vl == 0) return 0;
    if (huff) return huff_status(p, (size_t)vl);
    unsigned v = 0;
    for (uint64_t i = 0; i < vl && i < 3; i++) v = v * 10 + (unsigned)(p[i] - '0');
    return vl == 3 ? v : 0;
}

/* Client: the response's header section came. Returns 0, or
 * QK_ERR_CLOSED when it refused the CONNECT. */
static int on_response(tun_h3 *w, tstream *s)
{
    unsigned status = response_status(s->st, s->st_len);
    if (status >= 100 && status < 200) return 0; /* RFC 9114 §4.1: interim; more follows */
    if (status >= 200 && status < 300) {
        s->answered = true;
        return 0;
    }
    if (!w->refused && w->cfg.refused) {
        w->refused = true;
        w->cfg.refused(w->cfg.ctx, w, status);
    }
    return QK_ERR_CLOSED;
}

/* A complete frame header in s->fh: what its payload is for. Returns 0 or
 * QK_ERR_CLOSED (the connection is closed: a frame not allowed here). */
static int frame_start(tun_h3 *w, tstream *s)
{
    size_t tl = varint_len(s->fh[0]);
    uint64_t type = varint_get(s->fh), len = varint_get(s->fh + tl);
    s->fh_len = 0;
    s->left = len;
    s->kind = KIND_SKIP; /* RFC 9114 §9: unknown types are ignored */
    bool client = !w->cfg.server;
    if (type == H3_FRAME_DATA && (!client || s->answered)) {
        s->kind = KIND_DATA;
    } else if (type == H3_FRAME_HEADERS && client && !s->answered) {
        s->kind = KIND_STATUS;
        s->st_len = 0;
        if (!len) return on_response(w, s);
    } else if (type == H3_FRAME_DATA || (type >= 0x02 && type <= 0x09) || type == 0x0d) {
        /* RFC 9114 §7.2: control-stream, push and HTTP/2-reserved types, or
         * DATA before the response, are a connection error. */
        qk_conn_close(w->c, H3_FRAME_UNEXPECTED, "frame not allowed on a request stream");
        return QK_ERR_CLOSED;
    }
    return 0;
}

/* Frame headers, skipped and header payloads from the view p[0..n):
 * returns the bytes used, or an error. */
static long eat(tun_h3 *w, tstream *s, const uint8_t *p, size_t n)
{
    size_t used = 0;
    while (used < n) {
        if (s->left) {
            if (s->kind == KIND_DATA) return (long)used;
            size_t k = n - used < s->left ? n - used : (size_t)s->left;
            if (s->kind == KIND_STATUS) {
                size_t room = sizeof s->st - s->st_len, c = k < room ? k : room;
                memcpy(s->st + s->st_len, p + used, c);
                s->st_len += c;
            }
            used += k;
            s->left -= k;
            if (!s->left && s->kind == KIND_STATUS) {
                int rc = on_response(w, s);
                if (rc) return rc;
            }
            continue;
        }
        s->fh[s->fh_len++] = p[used++];
        size_t tl = varint_len(s->fh[0]);
        if (s->fh_len > tl && s->fh_len == tl + varint_len(s->fh[tl])) {
            int rc = frame_start(w, s);
            if (rc) return rc;
            if (s->kind == KIND_DATA) return (long)used;
        }
    }
    return (long)used;
}

/* The stream's FIN: the end of the last frame, or a truncated one. */
static long end_read(tun_h3 *w, tstream *s, long n, bool *fin)
{
    if (s->left || s->fh_len) { /* RFC 9114 §7.1: a frame cut short */
        qk_conn_close(w->c, H3_FRAME_ERROR, "truncated frame");
        return QK_ERR_CLOSED;
    }
    if (!w->cfg.server && !s->answered) {
        s->st_len = 0; /* no final response: refused, status unknown */
        on_response(w, s);
        return QK_ERR_CLOSED;
    }
    if (fin) *fin = true;
    s->rfin = true;
    ts_maybe_free(w, s);
    return n;
}

static long auth_read(tun_h3 *w, uint8_t *buf, size_t cap, bool *fin)
{
    size_t k = sizeof w->auth - w->auth_off;
    if (k > cap) k = cap;
    memcpy(buf, w->auth + w->auth_off, k);
    w->auth_off += k;
    if (fin) *fin = w->auth_off == sizeof w->auth;
    return (long)k;
}

static long h3c_read(void *sess, uint64_t sid, uint8_t *buf, size_t cap, bool *fin)
{
    tun_h3 *w = sess;
    if (fin) *fin = false;
    if (w->cfg.server && sid == TUN_H3_AUTH_SID) return auth_read(w, buf, cap, fin);
    tstream *s = ts_find(w, sid);
    if (!s) return QK_ERR_NOT_FOUND;
    for (;;) {
        bool f = false;
        if (s->left && s->kind == KIND_DATA) {
            size_t want = cap < s->left ? cap : (size_t)s->left;
            long n = qk_stream_read(w->c, sid, buf, want, &f);
            if (n > 0) s->left -= (uint64_t)n;
            return f ? end_read(w, s, n, fin) : n;
        }
        const uint8_t *p;
        long n = qk_stream_peek(w->c, sid, &p, &f);
        if (n < 0) return n;
        if (n == 0) return f ? end_read(w, s, 0, fin) : QK_ERR_AGAIN;
        long used = eat(w, s, p, (size_t)n);
        if (used < 0) return used;
        if (used && qk_stream_consume(w->c, sid, (size_t)used, &f) >= 0 && f)
            return end_read(w, s, 0, fin);
    }
}

/* ---- writing: DATA frames -------------------------------------------------- */

/* Write the pending frame header. Returns 0 when all of it went, 1 when
 * the stream is full, or an error. */
static int flush_ph(tun_h3 *w, tstream *s)
{
    if (!s->ph_len) return 0;
    long n = qk_stream_write(w->c, s->sid, s->ph, s->ph_len, false);
    if (n < 0) return (int)n;
    memmove(s->ph, s->ph + n, s->ph_len - (size_t)n);
    s->ph_len = (uint8_t)(s->ph_len - (size_t)n);
    return s->ph_len ? 1 : 0;
}

static long h3c_write(void *sess, uint64_t sid, const uint8_t *buf, size_t len, bool fin)
{
    tun_h3 *w = sess;
    if (w->cfg.server && sid == TUN_H3_AUTH_SID) return (long)len; /* the core's "ok" */
    tstream *s = ts_find(w, sid);
    if (!s) return QK_ERR_NOT_FOUND;
    int rc = flush_ph(w, s);
    if (rc) return rc < 0 ? rc : 0;
    if (!s->owed && len) { /* a new DATA frame: as much as fits now */
        long room = qk_stream_send_room(w->c, sid);
        if (room < 0) return room;
        size_t decl = room > (long)TUN_H3_FRAME_HDR_MAX ? (size_t)room - TUN_H3_FRAME_HDR_MAX : len;
        if (decl > len) decl = len;
        if (decl > TUN_H3_DATA_MAX_BYTES) decl = TUN_H3_DATA_MAX_BYTES;
        s->ph_len = (uint8_t)varint_put(s->ph, H3_FRAME_DATA);
        s->ph_len = (uint8_t)(s->ph_len + varint_put(s->ph + s->ph_len, decl));
        s->owed = decl;
        rc = flush_ph(w, s);
        if (rc) return rc < 0 ? rc : 0;
    }
    size_t k = len < s->owed ? len : (size_t)s->owed;
    long n = qk_stream_write(w->c, sid, buf, k, fin && k == len);
    if (n < 0) return n;
    s->owed -= (uint64_t)n;
    if (fin && (size_t)n == len) {
        s->wfin = true;
        ts_maybe_free(w, s);
    }
    return n;
}

/* ---- the rest of the carrier ------------------------------------------------ */

static int h3c_open(void *sess, uint64_t *sid)
{
    tun_h3 *w = sess;
    if (w->cfg.server) return QK_ERR_STATE; /* RFC 9114 §6.1: requests are the client's */
    uint8_t hb[TUN_H3_CONNECT_BYTES];
    size_t n = connect_frame(w, hb, sizeof hb);
    if (!n) return QK_ERR_INVALID_ARG;
    int rc = qk_stream_open(w->c, true, sid);
    if (rc) return rc;
    qk_stream_set_priority(w->c, *sid, QK_TUNNEL_STREAM_URGENCY, true); /* RFC 9218 §4 */
    tstream *s = ts_add(w, *sid);
    if (!s || qk_stream_write(w->c, *sid, hb, n, false) != (long)n) { /* head bytes: all fit */
        qk_stream_reset(w->c, *sid, H3_REQUEST_CANCELLED);
        if (s) ts_free(w, s);
        return QK_ERR_NOMEM;
    }
    return 0;
}

static void h3c_abort(void *sess, uint64_t sid, uint64_t app_error, bool reset_send, bool stop_recv)
{
    tun_h3 *w = sess;
    if (w->cfg.server && sid == TUN_H3_AUTH_SID) return;
    /* RFC 9114 §4.4: a broken TCP side is H3_CONNECT_ERROR; else cancelled. */
    uint64_t code = app_error == QK_TUNNEL_ERR_TCP ? H3_CONNECT_ERROR : H3_REQUEST_CANCELLED;
    if (reset_send) qk_stream_reset(w->c, sid, code);
    if (stop_recv) qk_stream_stop(w->c, sid, code);
    tstream *s = ts_find(w, sid);
    if (!s) return;
    s->wfin |= reset_send;
    s->rfin |= stop_recv;
    ts_maybe_free(w, s);
}

static int h3c_export_key(void *sess, const char *label, uint8_t *out, size_t len)
{
    tun_h3 *w = sess;
    return qk_conn_export_keying_material(w->c, label, NULL, 0, out, len);
}

static void h3c_close(void *sess, uint64_t app_error, const char *reason)
{
    tun_h3 *w = sess;
    qk_conn_close(w->c, app_error, reason); /* RFC 9000 §10.2 */
}

static void h3c_accepted(void *sess, uint64_t sid)
{
    tun_h3 *w = sess;
    if (sid != TUN_H3_AUTH_SID || !w->cfg.server)
        qk_stream_set_priority(w->c, sid, QK_TUNNEL_STREAM_URGENCY, true); /* RFC 9218 §4 */
}

const qk_tunnel_carrier tun_h3_carrier = {.name = "h3",
                                          .open = h3c_open,
                                          .write = h3c_write,
                                          .read = h3c_read,
                                          .abort = h3c_abort,
                                          .export_key = h3c_export_key,
                                          .close = h3c_close,
                                          .accepted = h3c_accepted};

/* ---- server: which CONNECTs are the tunnel's --------------------------------- */

static bool hdr_is(const qk_h3_header *h, const char *name)
{
    size_t l = strlen(name);
    return h->name_len == l && !memcmp(h->name, name, l);
}

/* The proof header holds the expected value (constant time in its bytes). */
static bool proof_ok(tun_h3 *w, const qk_h3_header *hd, size_t n)
{
    char want[8 + 2 * QK_TUNNEL_AUTH_MAC_BYTES];
    if (proof_value(w, want)) return false;
    size_t wl = strlen(want);
    bool ok = false;
    for (size_t i = 0; i < n; i++) {
        if (!hdr_is(&hd[i], TUN_H3_AUTH_HEADER) || hd[i].value_len != wl) continue;
        uint8_t diff = 0;
        for (size_t j = 0; j < wl; j++) diff |= (uint8_t)(hd[i].value[j] ^ want[j]);
        ok |= diff == 0;
    }
    return ok;
}

static udp_map *um_add(tun_h3 *w, uint32_t usid, uint64_t sid)
{
    if (w->n_um == w->cap_um) {
        size_t cap = w->cap_um ? 2 * w->cap_um : 8;
        udp_map *a = realloc(w->um, cap * sizeof *a);
        if (!a) return NULL;
        w->um = a;
        w->cap_um = cap;
    }
    w->um[w->n_um] = (udp_map){usid, sid, qk_io_now(), false};
    return &w->um[w->n_um++];
}

static udp_map *um_find(tun_h3 *w, bool by_sid, uint64_t key)
{
    for (size_t i = 0; i < w->n_um; i++)
        if (by_sid ? w->um[i].sid == key : w->um[i].usid == key) return &w->um[i];
    return NULL;
}

/* Server: a proven CONNECT-UDP: 200 with capsule-protocol (RFC 9298 §3.5);
 * its datagrams go to --udp-to (qk_tunnel_udp's session = the stream's
 * quarter ID). The stream itself carries no capsules we act on. */
static bool udp_take(tun_h3 *w, uint64_t sid)
{
    uint8_t fs[32];
    size_t n = 0;
    fs[n++] = 0;
    fs[n++] = 0;
    n += pint_put(fs + n, 6, 0xc0, 25); /* static 25 ":status: 200" */
    n += field_lit(fs + n, "capsule-protocol", "?1");
    uint8_t fr[40];
    size_t o = varint_put(fr, H3_FRAME_HEADERS);
    o += varint_put(fr + o, n);
    memcpy(fr + o, fs, n);
    o += n;
    if (!um_add(w, (uint32_t)(sid >> 2), sid)) return false;
    if (qk_stream_write(w->c, sid, fr, o, false) != (long)o) {
        w->n_um--;
        return false;
    }
    return true;
}

static bool w_connect(void *user, qk_h3 *h, uint64_t sid, const qk_h3_header *hd, size_t n)
{
    (void)h;
    tun_h3 *w = user;
    bool udp = false;
    for (size_t i = 0; i < n; i++)
        if (hdr_is(&hd[i], ":protocol")) { /* RFC 9220: only connect-udp (RFC 9298 §3) */
            if (hd[i].value_len != 11 || memcmp(hd[i].value, "connect-udp", 11)) return false;
            udp = true;
        }
    if (w->cfg.secret_len && !proof_ok(w, hd, n)) return false; /* the site answers */
    if (udp) return udp_take(w, sid);
    /* HEADERS: Required Insert Count 0, Delta Base 0, static 25 ":status: 200". */
    static const uint8_t ok200[] = {H3_FRAME_HEADERS, 3, 0, 0, 0xc0 | 25};
    if (w->n_taken == w->cap_taken) {
        size_t cap = w->cap_taken ? 2 * w->cap_taken : 8;
        uint64_t *a = realloc(w->taken, cap * sizeof *a);
        if (!a) return false;
        w->taken = a;
        w->cap_taken = cap;
    }
    tstream *s = ts_add(w, sid);
    if (!s) return false;
    if (qk_stream_write(w->c, sid, ok200, sizeof ok200, false) != (long)sizeof ok200) {
        ts_free(w, s);
        return false;
    }
    s->answered = true;
    w->taken[w->n_taken++] = sid;
    return true;
}

/* The site's callbacks, reached through w. */
static void w_headers(void *u, qk_h3 *h, uint64_t sid, const qk_h3_header *hd, size_t n, bool fin)
{
    tun_h3 *w = u;
    h3_site_callbacks.on_headers(w->cfg.site, h, sid, hd, n, fin);
}

static void w_end(void *u, qk_h3 *h, uint64_t sid)
{
    tun_h3 *w = u;
    h3_site_callbacks.on_end(w->cfg.site, h, sid);
}

static void w_reset(void *u, qk_h3 *h, uint64_t sid, uint64_t code)
{
    tun_h3 *w = u;
    h3_site_callbacks.on_reset(w->cfg.site, h, sid, code);
}

static void w_done(void *u, qk_h3 *h, uint64_t sid, bool complete)
{
    tun_h3 *w = u;
    h3_site_callbacks.on_response_done(w->cfg.site, h, sid, complete);
}

static const qk_h3_callbacks w_cb = {.on_headers = w_headers,
                                     .on_end = w_end,
                                     .on_reset = w_reset,
                                     .on_response_done = w_done,
                                     .on_connect = w_connect};

/* Tell the tunnel the CONNECTs taken (after the proof, made up once). */
static bool tell_taken(tun_h3 *w, qk_tunnel *t)
{
    bool wrote = false;
    const qk_tunnel_carrier *car = &tun_h3_carrier;
    for (size_t i = 0; i < w->n_taken; i++) {
        uint64_t sid = w->taken[i];
        if (!t) {
            h3c_abort(w, sid, QK_TUNNEL_ERR_TCP, true, true);
            continue;
        }
        if (w->cfg.secret_len && !w->auth_told) {
            w->auth_told = true;
            w->auth[0] = QK_TUNNEL_AUTH_PREAMBLE;
            qk_tunnel_auth_mac(car, w, w->cfg.secret, w->cfg.secret_len, w->auth + 1);
            wrote |= qk_tunnel_on_stream_event(t, car, w, QK_TUNNEL_EV_OPENED, TUN_H3_AUTH_SID);
            wrote |= qk_tunnel_on_stream_event(t, car, w, QK_TUNNEL_EV_READABLE, TUN_H3_AUTH_SID);
        }
        wrote |= qk_tunnel_on_stream_event(t, car, w, QK_TUNNEL_EV_OPENED, sid);
        wrote |= qk_tunnel_on_stream_event(t, car, w, QK_TUNNEL_EV_READABLE, sid);
    }
    w->n_taken = 0;
    return wrote;
}

/* ---- UDP: CONNECT-UDP (RFC 9298) and HTTP Datagrams (RFC 9297) ---------------- */

/* Client: the extended CONNECT of a new UDP session (RFC 9298 §3.4). The
 * target in the path names the proxy itself: the server sends to --udp-to. */
static int udp_open(tun_h3 *w, uint32_t usid, uint64_t *sid)
{
    char path[400];
    const char *a = w->cfg.authority, *colon = strrchr(a, ':');
    int hl = colon ? (int)(colon - a) : (int)strlen(a);
    snprintf(path, sizeof path, "/.well-known/masque/udp/%.*s/%s/", hl, a,
             colon ? colon + 1 : "443");
    uint8_t fs[700], fr[720];
    size_t n = 0;
    fs[n++] = 0;
    fs[n++] = 0;
    n += pint_put(fs + n, 6, 0xc0, 15); /* static 15 ":method: CONNECT" */
    n += pint_put(fs + n, 6, 0xc0, 23); /* static 23 ":scheme: https" */
    n += field_ref(fs + n, 0, a);       /* static 0 ":authority" */
    n += field_ref(fs + n, 1, path);    /* static 1 ":path" */
    n += field_lit(fs + n, ":protocol", "connect-udp");
    n += field_lit(fs + n, "capsule-protocol", "?1");
    if (w->cfg.secret_len) {
        char v[8 + 2 * QK_TUNNEL_AUTH_MAC_BYTES];
        if (proof_value(w, v)) return QK_ERR_INVALID_ARG;
        n += field_lit(fs + n, TUN_H3_AUTH_HEADER, v);
    }
    size_t o = varint_put(fr, H3_FRAME_HEADERS);
    o += varint_put(fr + o, n);
    memcpy(fr + o, fs, n);
    o += n;
    int rc = qk_stream_open(w->c, true, sid);
    if (rc) return rc;
    if (!um_add(w, usid, *sid) || qk_stream_write(w->c, *sid, fr, o, false) != (long)o) {
        qk_stream_reset(w->c, *sid, H3_REQUEST_CANCELLED);
        return QK_ERR_NOMEM;
    }
    return 0;
}

/* Client: an HTTP Datagram goes out once the server's SETTINGS said it takes
 * them (RFC 9297 §2.1.1); until then a copy waits (UDP: beyond the bound it
 * is dropped, as the network may). Returns qk_datagram_send's result, 0
 * when held, QK_ERR_LIMIT when dropped, QK_ERR_STATE when the server takes
 * no HTTP Datagrams. */
static int dg_send(tun_h3 *w, const uint8_t *d, size_t len, uint8_t urgency)
{
    if (w->cfg.server || w->dgram == DG_ON) return qk_datagram_send(w->c, d, len, urgency);
    if (w->dgram == DG_OFF) return QK_ERR_STATE;
    if (w->n_held == TUN_H3_PENDING_MAX || w->held_bytes + len > TUN_H3_PENDING_BYTES)
        return QK_ERR_LIMIT;
    if (!w->held && !(w->held = calloc(TUN_H3_PENDING_MAX, sizeof *w->held))) return QK_ERR_NOMEM;
    uint8_t *copy = malloc(len);
    if (!copy) return QK_ERR_NOMEM;
    memcpy(copy, d, len);
    w->held[w->n_held++] = (struct held_dg){copy, len, urgency};
    w->held_bytes += len;
    return 0;
}

/* Client: the server's SETTINGS were read: send what waited, or drop it. */
static void dg_release(tun_h3 *w)
{
    for (size_t i = 0; i < w->n_held; i++) {
        if (w->dgram == DG_ON)
            (void)qk_datagram_send(w->c, w->held[i].d, w->held[i].len, w->held[i].urgency);
        free(w->held[i].d);
    }
    w->n_held = w->held_bytes = 0;
}

int tun_h3_udp_send(tun_h3 *w, const uint8_t *frame, size_t len, uint8_t urgency)
{
    if (len < QK_TUNNEL_UDP_HEADER_BYTES) return QK_ERR_INVALID_ARG;
    uint32_t usid =
        (uint32_t)frame[0] << 24 | (uint32_t)frame[1] << 16 | (uint32_t)frame[2] << 8 | frame[3];
    udp_map *m = um_find(w, false, usid);
    uint64_t sid;
    if (m) {
        sid = m->sid;
        m->used_ns = qk_io_now();
    } else if (w->cfg.server) {
        return QK_ERR_NOT_FOUND;
    } else {
        int rc = udp_open(w, usid, &sid); /* um_add stamps the new session's used_ns */
        if (rc) return rc;
    }
    size_t pay = len - QK_TUNNEL_UDP_HEADER_BYTES;
    uint8_t d[16 + 65536];
    if (pay > sizeof d - 16) return QK_ERR_INVALID_ARG;
    size_t o = varint_put(d, sid >> 2); /* RFC 9297 §2.1: Quarter Stream ID */
    d[o++] = 0;                         /* RFC 9298 §5: Context ID 0, a UDP payload */
    memcpy(d + o, frame + QK_TUNNEL_UDP_HEADER_BYTES, pay);
    return dg_send(w, d, o + pay, urgency);
}

/* Hand one HTTP Datagram of a known request to u, as qk_tunnel_udp's frame. */
static void udp_deliver(qk_tunnel_udp *u, const udp_map *m, const qk_event *ev, size_t hdr)
{
    size_t pay = ev->len - hdr;
    uint8_t f[QK_TUNNEL_UDP_HEADER_BYTES + 65536];
    if (pay > sizeof f - QK_TUNNEL_UDP_HEADER_BYTES) return;
    f[0] = (uint8_t)(m->usid >> 24);
    f[1] = (uint8_t)(m->usid >> 16);
    f[2] = (uint8_t)(m->usid >> 8);
    f[3] = (uint8_t)m->usid;
    memcpy(f + QK_TUNNEL_UDP_HEADER_BYTES, ev->data + hdr, pay);
    qk_event e = *ev;
    e.data = f;
    e.len = QK_TUNNEL_UDP_HEADER_BYTES + pay;
    qk_tunnel_udp_on_event(u, &e);
}

/* Server: keep a datagram whose request has not come yet (a copy). */
static void udp_pend(tun_h3 *w, const qk_event *ev)
{
    if (w->n_pend == TUN_H3_PENDING_MAX || w->pend_bytes + ev->len > TUN_H3_PENDING_BYTES) return;
    if (!w->pend && !(w->pend = calloc(TUN_H3_PENDING_MAX, sizeof *w->pend))) return;
    uint8_t *copy = malloc(ev->len);
    if (!copy) return;
    memcpy(copy, ev->data, ev->len);
    w->pend[w->n_pend] = *ev;
    w->pend[w->n_pend++].data = copy;
    w->pend_bytes += ev->len;
}

/* Server: the datagrams kept for requests that have come now. */
static void udp_flush_pending(tun_h3 *w)
{
    size_t keep = 0;
    for (size_t i = 0; i < w->n_pend; i++) {
        qk_event *e = &w->pend[i];
        udp_map *m = um_find(w, true, varint_get(e->data) << 2);
        if (!m) {
            w->pend[keep++] = *e;
            continue;
        }
        if (w->u) udp_deliver(w->u, m, e, varint_len(e->data[0]) + 1);
        w->pend_bytes -= e->len;
        free((void *)e->data);
    }
    w->n_pend = keep;
}

void tun_h3_datagram(tun_h3 *w, qk_tunnel_udp *u, const qk_event *ev)
{
    const uint8_t *p = ev->data;
    w->u = u;
    if (!ev->len || ev->len < varint_len(p[0]) + 1) return;
    size_t ql = varint_len(p[0]);
    uint64_t sid = varint_get(p) << 2;
    if (p[ql] != 0) return; /* RFC 9298 §5: an unknown context ID is dropped */
    udp_map *m = um_find(w, true, sid);
    if (m) m->used_ns = qk_io_now();
    if (m)
        udp_deliver(u, m, ev, ql + 1);
    else if (w->cfg.server && (sid & 3) == 0)
        udp_pend(w, ev); /* RFC 9297 §2.1: its request may still be on the way */
}

void tun_h3_udp_sweep(tun_h3 *w, qk_time now_ns, qk_time idle_ns)
{
    for (size_t i = w->n_um; i-- > 0;) {
        if (w->cfg.server || now_ns - w->um[i].used_ns < idle_ns) continue;
        qk_stream_write(w->c, w->um[i].sid, NULL, 0, true); /* RFC 9298 §3: the session ends */
        w->um[i] = w->um[--w->n_um];
    }
}

/* A CONNECT-UDP stream (or one whose session ended): its bytes (capsules)
 * are read and dropped; at its FIN the server ends its side and forgets it. */
/* Client: the final response to a CONNECT-UDP (its first HEADERS frame);
 * anything but 2xx refused the session (RFC 9298 §3.3), said through
 * cfg.refused. False: the frame is not all here yet (nothing read). */
static bool udp_response(tun_h3 *w, uint64_t sid)
{
    udp_map *m = um_find(w, true, sid);
    if (!m || m->answered) return true;
    const uint8_t *p;
    bool fin = false;
    long n = qk_stream_peek(w->c, sid, &p, &fin);
    if (n <= 0 && !fin) return false;
    size_t tl = n > 0 ? varint_len(p[0]) : 1, ll = (size_t)n > tl ? varint_len(p[tl]) : 1;
    uint64_t len = (size_t)n >= tl + ll ? varint_get(p + tl) : UINT64_MAX;
    if (!fin && (len == UINT64_MAX || len > (uint64_t)n - tl - ll)) return false;
    unsigned status = 0; /* cut short or not HEADERS (RFC 9114 §4.1): unreadable */
    if (len <= (uint64_t)n - tl - ll && varint_get(p) == H3_FRAME_HEADERS)
        status = response_status(p + tl + ll, (size_t)len);
    if (status >= 100 && status < 200) return true; /* interim; the final one follows */
    m->answered = true;
    if ((status < 200 || status > 299) && !w->refused && w->cfg.refused) {
        w->refused = true;
        w->cfg.refused(w->cfg.ctx, w, status);
    }
    return true;
}

static void udp_stream_event(tun_h3 *w, uint64_t sid)
{
    uint8_t buf[512];
    bool fin = false;
    if (!w->cfg.server && !udp_response(w, sid)) return;
    while (qk_stream_read(w->c, sid, buf, sizeof buf, &fin) > 0 && !fin) {
    }
    if (!fin || !w->cfg.server) return;
    qk_stream_write(w->c, sid, NULL, 0, true);
    udp_map *m = um_find(w, true, sid);
    if (m) *m = w->um[--w->n_um];
}

/* ---- events ------------------------------------------------------------------ */

static bool to_tunnel(tun_h3 *w, qk_tunnel *t, const qk_event *ev)
{
    qk_tunnel_ev type;
    switch (ev->type) {
    case QK_EV_STREAM_OPENED:
    case QK_EV_STREAM_READABLE: type = QK_TUNNEL_EV_READABLE; break;
    case QK_EV_STREAM_WRITABLE: type = QK_TUNNEL_EV_WRITABLE; break;
    case QK_EV_STREAM_RESET:
    case QK_EV_STREAM_STOP: type = QK_TUNNEL_EV_RESET; break;
    default: return false;
    }
    if (!t) {
        h3c_abort(w, ev->stream_id, QK_TUNNEL_ERR_TCP, true, true);
        return true;
    }
    return qk_tunnel_on_stream_event(t, &tun_h3_carrier, w, type, ev->stream_id);
}

static bool is_stream_event(const qk_event *ev)
{
    return ev->type == QK_EV_STREAM_OPENED || ev->type == QK_EV_STREAM_READABLE ||
           ev->type == QK_EV_STREAM_WRITABLE || ev->type == QK_EV_STREAM_RESET ||
           ev->type == QK_EV_STREAM_STOP;
}

/* Client: the SETTINGS frame at the start of the server's control stream
 * (RFC 9114 §6.2.1), once all of it is in w->ctl: does it set
 * SETTINGS_H3_DATAGRAM to 1? False while the frame is incomplete. */
static bool ctl_settings(tun_h3 *w)
{
    const uint8_t *p = w->ctl, *end = w->ctl + w->ctl_len;
    uint64_t f[2];
    for (int i = 0; i < 2; i++) {
        if (p == end || (size_t)(end - p) < varint_len(*p)) return false;
        f[i] = varint_get(p);
        p += varint_len(*p);
    }
    if (f[0] != H3_FRAME_SETTINGS) { /* RFC 9114 §6.2.1: SETTINGS comes first */
        qk_conn_close(w->c, H3_MISSING_SETTINGS, "control stream without SETTINGS first");
        w->dgram = DG_OFF;
        return true;
    }
    if (f[1] > (uint64_t)(end - p)) {
        if (w->ctl_len == sizeof w->ctl) w->dgram = DG_OFF; /* too long to read */
        return w->ctl_len == sizeof w->ctl;
    }
    w->dgram = DG_OFF;
    for (const uint8_t *q = p, *fe = p + f[1]; q < fe;) {
        uint64_t kv[2];
        for (int i = 0; i < 2; i++) {
            if (q == fe || (size_t)(fe - q) < varint_len(*q)) return true; /* malformed: off */
            kv[i] = varint_get(q);
            q += varint_len(*q);
        }
        if (kv[0] == TUN_H3_SETTING_DGRAM) w->dgram = kv[1] == 1 ? DG_ON : DG_OFF;
    }
    return true;
}

/* Client: the server's unidirectional streams. The control stream's
 * SETTINGS are read (HTTP Datagrams wait for them); everything else on it
 * and on the others (QPACK's: we use no dynamic table) is read and dropped. */
static void server_uni(tun_h3 *w, uint64_t sid)
{
    size_t i = 0;
    while (i < w->n_uni && w->uni_sid[i] != sid) i++;
    bool fin = false;
    if (i == w->n_uni && i < TUN_H3_UNI_MAX) { /* its type: 0x00 is control (RFC 9114 §6.2) */
        uint8_t type;
        if (qk_stream_read(w->c, sid, &type, 1, &fin) != 1) return;
        w->uni_sid[i] = sid;
        w->uni_ctl[i] = type == H3_STREAM_CONTROL;
        w->n_uni++;
    }
    if (i < w->n_uni && w->uni_ctl[i] && w->dgram == DG_UNKNOWN) {
        long n;
        while (w->ctl_len < sizeof w->ctl &&
               (n = qk_stream_read(w->c, sid, w->ctl + w->ctl_len, sizeof w->ctl - w->ctl_len,
                                   &fin)) > 0)
            w->ctl_len += (size_t)n;
        if (!ctl_settings(w)) return;
        if (w->dgram == DG_OFF)
            fprintf(stderr, "quack: the tunnel server's SETTINGS do not enable HTTP Datagrams "
                            "(RFC 9297 §2.1.1): UDP is not carried on this connection\n");
        dg_release(w);
    }
    uint8_t buf[512];
    while (!fin && qk_stream_read(w->c, sid, buf, sizeof buf, &fin) > 0) {
    }
}

bool tun_h3_on_event(tun_h3 *w, qk_tunnel *t, const qk_event *ev)
{
    if (ev->type == QK_EV_CLOSED)
        return t && qk_tunnel_on_stream_event(t, &tun_h3_carrier, w, QK_TUNNEL_EV_CLOSED, 0);
    if (!is_stream_event(ev)) return false;
    uint64_t sid = ev->stream_id;
    if (ts_find(w, sid)) return to_tunnel(w, t, ev);
    if (w->cfg.server && um_find(w, true, sid)) {
        udp_stream_event(w, sid);
        return false;
    }
    if (w->cfg.server) {
        if (w->h) qk_h3_on_event(w->h, ev);
        if (w->n_pend) udp_flush_pending(w);
        return tell_taken(w, t);
    }
    if ((sid & 3) == 3) {
        server_uni(w, sid);
    } else if ((sid & 3) == 0) {
        udp_stream_event(w, sid); /* the client's CONNECT-UDP streams */
    } else if ((sid & 3) == 1 && ev->type == QK_EV_STREAM_OPENED) {
        qk_stream_stop(w->c, sid, H3_STREAM_CREATION); /* RFC 9114 §6.1 */
        qk_stream_reset(w->c, sid, H3_STREAM_CREATION);
    }
    return false;
}

bool tun_h3_flush(tun_h3 *w)
{
    return w->h && qk_h3_flush(w->h) > 0;
}

qk_conn *tun_h3_conn(const tun_h3 *w)
{
    return w->c;
}

/* Client: our control stream, SETTINGS first (RFC 9114 §6.2.1): HTTP
 * Datagrams on; every other setting at its default (no QPACK dynamic
 * table, RFC 9204 §3.2.3). */
static int client_control(tun_h3 *w)
{
    static const uint8_t ctl[] = {H3_STREAM_CONTROL, H3_FRAME_SETTINGS, 2, 0x33,
                                  1}; /* SETTINGS_H3_DATAGRAM = 1 (RFC 9297 §2.1.1) */
    uint64_t sid;
    int rc = qk_stream_open(w->c, false, &sid);
    if (rc) return rc;
    qk_stream_set_priority(w->c, sid, 0, false);
    return qk_stream_write(w->c, sid, ctl, sizeof ctl, false) == (long)sizeof ctl ? 0
                                                                                  : QK_ERR_NOMEM;
}

tun_h3 *tun_h3_new(qk_conn *c, const tun_h3_config *cfg)
{
    tun_h3 *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->c = c;
    w->cfg = *cfg;
    int err = 0;
    if (cfg->server)
        w->h = qk_h3_new(c, true, &w_cb, w, &err);
    else
        err = client_control(w);
    if (err || (cfg->server && !w->h)) {
        qk_conn_close(c, 0x102 /* H3_INTERNAL_ERROR */, "no HTTP/3");
        tun_h3_del(w);
        return NULL;
    }
    return w;
}

void tun_h3_del(tun_h3 *w)
{
    if (!w) return;
    if (w->h) {
        h3_site_drop_conn(w->cfg.site, w->h);
        qk_h3_del(w->h);
    }
    for (size_t i = 0; i < w->n_st; i++) free(w->st[i]);
    free(w->st);
    free(w->taken);
    free(w->um);
    for (size_t i = 0; i < w->n_pend; i++) free((void *)w->pend[i].data);
    free(w->pend);
    for (size_t i = 0; i < w->n_held; i++) free(w->held[i].d);
    free(w->held);
    free(w);
}
