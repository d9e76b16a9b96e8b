/* SPDX-License-Identifier: MIT */
/* The "media" flow type: see flow_media.h. */
#include "sim/flow_media.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/sim_int.h"
#include "transport/conn/timers.h"

#define HDR_BYTES QK_MEDIA_HDR_BYTES

typedef qk_media_def media_def;

/* The three flows (picoquic's mediatest shapes). */
static const media_def DEFS[QK_MEDIA_FLOWS] = {
    {"audio", 2, 20 * QK_NS_PER_MS, 32, 32, 0},
    {"ld-video", 4, 33333333, 2048, 32768, 100},
    {"hd-video", 6, 16666667, 6144, 65536, 100},
};

const qk_media_def *qk_media_defs(void)
{
    return DEFS;
}

uint32_t qk_media_frame_bytes(const qk_media_def *d, uint32_t frame_no)
{
    return d->iframe_every && frame_no % d->iframe_every == 0 ? d->iframe_bytes : d->bytes;
}

void qk_media_hdr_write(uint8_t *out, const qk_media_hdr *h)
{
    memset(out, 0, QK_MEDIA_HDR_BYTES);
    out[0] = h->flow;
    uint64_t v = h->frame_no;
    for (int i = 7; i >= 4; i--, v >>= 8) out[i] = (uint8_t)v;
    v = h->sent_ns;
    for (int i = 15; i >= 8; i--, v >>= 8) out[i] = (uint8_t)v;
}

qk_media_hdr qk_media_hdr_read(const uint8_t *in)
{
    qk_media_hdr h = {.flow = in[0]};
    for (int i = 4; i < 8; i++) h.frame_no = h.frame_no << 8 | in[i];
    for (int i = 8; i < 16; i++) h.sent_ns = h.sent_ns << 8 | in[i];
    return h;
}

typedef struct media_flow {
    const media_def *d;
    bool on;
    uint64_t sid;
    qk_time next_ns;
    uint32_t next_frame;
    /* receiver */
    uint8_t hdr[HDR_BYTES];
    size_t hdr_len;
    uint64_t body_left;
    double *delay_ms;
    size_t n_delay, cap_delay;
} media_flow;

struct qk_simm {
    qk_sim *sim;
    qk_simm_cfg cfg;
    qk_simq *q;
    media_flow f[QK_SIMM_FLOWS];
    bool opened, stopped; /* stopped: the sender's connection is gone */
    uint64_t bulk_sid;    /* the bulk neighbour's stream (cfg.bulk) */
    qk_time t0;           /* media start (connected) */
    qk_simm_result r;
    uint8_t buf[65536 + HDR_BYTES];
};

static qk_time stop_ns(const qk_simm *m)
{
    return m->t0 + (m->cfg.duration_ns ? m->cfg.duration_ns : 10 * QK_NS_PER_S);
}

/* ---- receiver (server) ---- */

static media_flow *flow_of_sid(qk_simm *m, uint64_t sid)
{
    for (int i = 0; i < QK_SIMM_FLOWS; i++)
        if (m->f[i].on && m->opened && m->f[i].sid == sid) return &m->f[i];
    return NULL;
}

static void frame_done(qk_simm *m, media_flow *f, qk_time now)
{
    qk_media_hdr h = qk_media_hdr_read(f->hdr);
    uint32_t no = h.frame_no;
    qk_time sent = h.sent_ns;
    if (h.flow != (uint8_t)(f - m->f) || sent > now) m->r.mismatch = true;
    if (f->n_delay == f->cap_delay) {
        size_t cap = f->cap_delay ? 2 * f->cap_delay : 1024;
        double *n = realloc(f->delay_ms, cap * sizeof *n);
        if (!n) return;
        f->delay_ms = n;
        f->cap_delay = cap;
    }
    f->delay_ms[f->n_delay++] = (double)(now - sent) / 1e6;
    if (m->cfg.frames_csv)
        fprintf(m->cfg.frames_csv, "%s,%u,%u,%.6f,%.6f\n", f->d->name, no,
                (unsigned)(HDR_BYTES + f->body_left), (double)sent / 1e9, (double)now / 1e9);
}

/* Parse the bytes [p, p + n) of flow f's stream. */
static void consume(qk_simm *m, media_flow *f, const uint8_t *p, size_t n, qk_time now)
{
    qk_simm_flow_result *fr = &m->r.f[f - m->f];
    fr->bytes_received += n;
    while (n) {
        if (f->hdr_len < HDR_BYTES) {
            size_t k = HDR_BYTES - f->hdr_len < n ? HDR_BYTES - f->hdr_len : n;
            memcpy(f->hdr + f->hdr_len, p, k);
            f->hdr_len += k;
            p += k;
            n -= k;
            if (f->hdr_len < HDR_BYTES) return;
            f->body_left =
                qk_media_frame_bytes(f->d, qk_media_hdr_read(f->hdr).frame_no) - HDR_BYTES;
        }
        size_t k = f->body_left < n ? (size_t)f->body_left : n;
        f->body_left -= k;
        p += k;
        n -= k;
        if (f->body_left == 0) {
            f->body_left = qk_media_frame_bytes(f->d, qk_media_hdr_read(f->hdr).frame_no) -
                           HDR_BYTES; /* for the csv */
            frame_done(m, f, now);
            f->body_left = 0;
            f->hdr_len = 0;
            fr->frames_received++;
        }
    }
}

/* The bulk neighbour's bytes are counted and dropped. */
static void read_bulk(qk_simm *m, qk_conn *c, uint64_t sid)
{
    bool fin = false;
    long n;
    while ((n = qk_stream_read(c, sid, m->buf, sizeof m->buf, &fin)) > 0)
        m->r.bulk_bytes_received += (uint64_t)n;
}

static void read_stream(qk_simm *m, qk_conn *c, uint64_t sid, qk_time now)
{
    if (m->cfg.bulk && m->opened && sid == m->bulk_sid) {
        read_bulk(m, c, sid);
        return;
    }
    media_flow *f = flow_of_sid(m, sid);
    if (!f) return;
    for (;;) {
        bool fin = false;
        long n = qk_stream_read(c, sid, m->buf, sizeof m->buf, &fin);
        if (n <= 0) return;
        consume(m, f, m->buf, (size_t)n, now);
        if (fin) return;
    }
}

static void on_event(void *ctx, qk_simq *q, bool server, const qk_event *ev, qk_time now)
{
    (void)q;
    qk_simm *m = ctx;
    if (server) {
        if (ev->type == QK_EV_STREAM_READABLE || ev->type == QK_EV_STREAM_OPENED)
            read_stream(m, ev->conn, ev->stream_id, now);
        return;
    }
    if (ev->type == QK_EV_PATH_DEGRADED) m->r.path_degraded++;
    if (ev->type == QK_EV_PATH_FAILED) {
        m->r.path_failed++;
        m->r.path_failed_ns = now;
    }
    if (ev->type == QK_EV_CLOSED) {
        m->r.client_closed = true;
        snprintf(m->r.close_reason, sizeof m->r.close_reason, "%s", ev->reason);
    }
}

/* ---- sender (client) ---- */

static void tune(void *ctx, qk_config *cfg, bool server)
{
    qk_simm *m = ctx;
    cfg->max_stream_send_buffer_bytes = 16u << 20; /* the application never blocks */
    if (server) return;
    cfg->bypass_urgency_limit = m->cfg.bypass_limit;
    if (m->cfg.no_bucket) {
        cfg->bypass_rate_bps = 1ull << 40;
        cfg->bypass_bucket_bytes = 1ull << 30;
    }
    if (m->cfg.path_failed_ns) cfg->path_failed_ns = m->cfg.path_failed_ns;
}

bool qk_simm_oracle_held(const qk_sim_link_cfg *l, qk_time now, qk_time *until)
{
    qk_time lag = l->delay_ns + QK_SIMM_ORACLE_MARGIN_NS;
    *until = QK_TIME_INFINITE;
    if (now < lag) return false;
    qk_time end = qk_sim_link_unsuspend(l, now - lag);
    if (end == now - lag) return false;
    *until = end + lag;
    return true;
}

static bool oracle_late(void *ctx, qk_time now)
{
    const qk_simm *m = ctx;
    qk_time until;
    return qk_simm_oracle_held(m->cfg.oracle_link, now, &until);
}

static void open_streams(qk_simm *m, qk_conn *c, qk_time now)
{
    if (m->cfg.oracle_link) qk_conn_set_feedback_oracle(c, oracle_late, m);
    for (int i = 0; i < QK_SIMM_FLOWS; i++) {
        media_flow *f = &m->f[i];
        if (!f->on) continue;
        if (qk_stream_open(c, false, &f->sid) ||
            qk_stream_set_priority(c, f->sid, f->d->urgency, false))
            m->r.mismatch = true;
        f->next_ns = now;
    }
    if (m->cfg.bulk && (qk_stream_open(c, false, &m->bulk_sid) ||
                        qk_stream_set_priority(c, m->bulk_sid, QK_SIMM_BULK_URGENCY, false)))
        m->r.mismatch = true;
    m->opened = true;
    m->t0 = now;
}

/* Keep QK_SIMM_BULK_AHEAD_BYTES of the bulk neighbour written and unsent:
 * it always has data, so it takes whatever the media leaves. */
static void top_up_bulk(qk_simm *m, qk_conn *c)
{
    long room = qk_stream_send_room(c, m->bulk_sid);
    long cap = (long)(16u << 20); /* tune()'s send buffer */
    if (room < 0) return;
    memset(m->buf, 0xb5, sizeof m->buf);
    for (long queued = cap - room; queued < QK_SIMM_BULK_AHEAD_BYTES;) {
        long w = qk_stream_write(c, m->bulk_sid, m->buf, 65536, false);
        if (w <= 0) return;
        queued += w;
        m->r.bulk_bytes_sent += (uint64_t)w;
    }
}

static void send_frame(qk_simm *m, qk_conn *c, media_flow *f)
{
    const media_def *d = f->d;
    uint32_t no = f->next_frame++;
    uint32_t bytes = qk_media_frame_bytes(d, no);
    memset(m->buf, 0x5a, bytes);
    qk_media_hdr_write(m->buf, &(qk_media_hdr){(uint8_t)(f - m->f), no, f->next_ns});
    long w = qk_stream_write(c, f->sid, m->buf, bytes, false);
    if (w != (long)bytes) m->r.mismatch = true; /* the buffer is sized never to refuse */
    qk_simm_flow_result *fr = &m->r.f[f - m->f];
    fr->frames_sent++;
    fr->bytes_sent += bytes;
}

static qk_time clock_next(void *ctx)
{
    qk_simm *m = ctx;
    if (m->stopped) return QK_TIME_INFINITE;
    if (!m->opened) {
        const qk_simq_result *r = qk_simq_result_get(m->q);
        if (r->client_closed) return QK_TIME_INFINITE;
        qk_time now = qk_sim_now(m->sim);
        return (now > m->cfg.start_ns ? now : m->cfg.start_ns) + QK_NS_PER_MS; /* poll */
    }
    qk_time t = QK_TIME_INFINITE, until;
    for (int i = 0; i < QK_SIMM_FLOWS; i++)
        if (m->f[i].on && m->f[i].next_ns < t) t = m->f[i].next_ns;
    if (t >= stop_ns(m)) t = QK_TIME_INFINITE;
    /* The oracle's hold ends: wake the sender then (clock_fire kicks it). */
    if (m->cfg.oracle_link && qk_simm_oracle_held(m->cfg.oracle_link, qk_sim_now(m->sim), &until) &&
        until < t)
        t = until;
    return t;
}

static void clock_fire(void *ctx, qk_sim *sim, qk_time now)
{
    (void)sim;
    qk_simm *m = ctx;
    qk_conn *c = qk_simq_client_conn(m->q);
    if (!c) {
        m->stopped = m->opened || qk_simq_result_get(m->q)->client_closed;
        return;
    }
    if (!m->opened) {
        if (!qk_simq_result_get(m->q)->connected) return;
        open_streams(m, c, now);
    }
    for (int i = 0; i < QK_SIMM_FLOWS; i++) {
        media_flow *f = &m->f[i];
        while (f->on && f->next_ns <= now && f->next_ns < stop_ns(m)) {
            send_frame(m, c, f);
            f->next_ns = m->t0 + (qk_time)f->next_frame * f->d->period_ns;
        }
    }
    if (m->cfg.bulk && now < stop_ns(m)) top_up_bulk(m, c);
    qk_simq_kick(m->q);
}

static const qk_sim_node_ops clock_ops = {NULL, clock_next, clock_fire};

/* Pass the observer's datagrams on (qk_simq calls back with the flow). */
static void on_send(void *ctx, qk_simq *q, bool server, const qk_datagram *d, qk_time now)
{
    qk_simm *m = ctx;
    m->cfg.on_send(m->cfg.send_ctx, q, server, d, now);
}

qk_simm *qk_simm_new(qk_sim *sim, int client_host, int server_host, uint16_t port,
                     const qk_simm_cfg *cfg, int *err)
{
    qk_simm *m = calloc(1, sizeof *m);
    if (!m) {
        *err = QK_ERR_NOMEM;
        return NULL;
    }
    m->sim = sim;
    m->cfg = *cfg;
    m->r.path_failed_ns = QK_TIME_INFINITE;
    for (int i = 0; i < QK_SIMM_FLOWS; i++) {
        m->f[i].d = &DEFS[i];
        m->f[i].on = !cfg->skip[i];
        m->r.f[i].name = DEFS[i].name;
    }
    qk_simq_cfg qc = {.upload = true,
                      .on_send = cfg->on_send ? on_send : NULL,
                      .cc = cfg->cc,
                      .start_ns = cfg->start_ns,
                      .keep_open = true,
                      .no_transfer = true,
                      .qlog_dir = cfg->qlog_dir,
                      .on_event = on_event,
                      .tune = tune,
                      .ctx = m};
    m->q = qk_simq_new(sim, client_host, server_host, port, &qc, err);
    if (!m->q) {
        free(m);
        return NULL;
    }
    int rc = qk_sim_timer_add(sim, &clock_ops, m);
    if (rc < 0) {
        *err = rc;
        qk_simm_del(m);
        return NULL;
    }
    return m;
}

void qk_simm_del(qk_simm *m)
{
    if (!m) return;
    qk_simq_del(m->q);
    for (int i = 0; i < QK_SIMM_FLOWS; i++) free(m->f[i].delay_ms);
    free(m);
}

qk_simq *qk_simm_quic(qk_simm *m)
{
    return m->q;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

const qk_simm_result *qk_simm_result_get(qk_simm *m)
{
    for (int i = 0; i < QK_SIMM_FLOWS; i++) {
        media_flow *f = &m->f[i];
        qk_simm_flow_result *fr = &m->r.f[i];
        if (!f->n_delay) continue;
        double sum = 0;
        for (size_t k = 0; k < f->n_delay; k++) sum += f->delay_ms[k];
        fr->avg_ms = sum / (double)f->n_delay;
        double *s = malloc(f->n_delay * sizeof *s);
        if (!s) continue;
        memcpy(s, f->delay_ms, f->n_delay * sizeof *s);
        qsort(s, f->n_delay, sizeof *s, cmp_double);
        fr->p99_ms = s[(size_t)((double)(f->n_delay - 1) * 0.99)];
        fr->max_ms = s[f->n_delay - 1];
        free(s);
    }
    const qk_simq_result *qr = qk_simq_result_get(m->q);
    m->r.client_stats = qr->client_stats;
    return &m->r;
}

/* ---- scenario flow type "media" ---- */

typedef struct media_scn {
    qk_simm *m;
    FILE *csv;
} media_scn;

static void media_summary(void *obj, qk_sim *sim, qk_sim_flow_summary *o)
{
    (void)sim;
    media_scn *s = obj;
    const qk_simm_result *r = qk_simm_result_get(s->m);
    int n = 0;
    for (int i = 0; i < QK_SIMM_FLOWS; i++) {
        const qk_simm_flow_result *f = &r->f[i];
        o->sent_bytes += f->bytes_sent;
        o->recv_bytes += f->bytes_received;
        o->sent_pkts += f->frames_sent;
        o->recv_pkts += f->frames_received;
        if (!f->frames_sent) continue;
        n += snprintf(o->extra + n, sizeof o->extra - (size_t)n, "%.2s %llu/%llu %.1f/%.1f/%.1f ",
                      f->name, (unsigned long long)f->frames_received,
                      (unsigned long long)f->frames_sent, f->avg_ms, f->p99_ms, f->max_ms);
        if ((size_t)n >= sizeof o->extra) return;
    }
    if (s->m->cfg.bulk)
        n += snprintf(o->extra + n, sizeof o->extra - (size_t)n, "bulk %llu/%llu B ",
                      (unsigned long long)r->bulk_bytes_received,
                      (unsigned long long)r->bulk_bytes_sent);
    if ((size_t)n >= sizeof o->extra) return;
    snprintf(o->extra + n, sizeof o->extra - (size_t)n, "bypass=%llu failed=%llu%s",
             (unsigned long long)r->client_stats.bypass_pkts, (unsigned long long)r->path_failed,
             r->mismatch ? " MISMATCH" : "");
    o->completion_ns = QK_TIME_INFINITE;
}

static uint64_t media_recv_bytes(void *obj)
{
    const qk_simm_result *r = qk_simm_result_get(((media_scn *)obj)->m);
    return r->f[0].bytes_received + r->f[1].bytes_received + r->f[2].bytes_received;
}

static void media_free(void *obj)
{
    media_scn *s = obj;
    qk_simm_del(s->m);
    if (s->csv) fclose(s->csv);
    free(s);
}

static const qk_sim_flow_ops media_ops = {media_summary, media_recv_bytes, media_free};

static int media_bad(const qk_sim_flow_args *a, const char *k, const char *v, const char *fix)
{
    snprintf(a->err, a->err_cap, "%s: bad value '%s'; expected %s", k, v, fix);
    return QK_ERR_CONFIG;
}

static int media_key(qk_sim *sim, const qk_sim_flow_args *a, const char *k, const char *v,
                     qk_simm_cfg *c, const char **csv)
{
    if (!strcmp(k, "cc")) {
        if (qk_cc_kind_parse(v, &c->cc)) return media_bad(a, k, v, qk_cc_kind_names());
    } else if (!strcmp(k, "start")) {
        if (qk_sim_parse_time(v, &c->start_ns)) return media_bad(a, k, v, "a time, e.g. 0s");
    } else if (!strcmp(k, "duration")) {
        if (qk_sim_parse_time(v, &c->duration_ns) || !c->duration_ns)
            return media_bad(a, k, v, "a positive time, e.g. 10s");
    } else if (!strcmp(k, "path_failed")) {
        if (qk_sim_parse_time(v, &c->path_failed_ns)) return media_bad(a, k, v, "a time, e.g. 1s");
    } else if (!strcmp(k, "flows")) {
        for (int i = 0; i < QK_SIMM_FLOWS; i++)
            c->skip[i] = !strstr(v, i ? (i == 1 ? "ld" : "hd") : "audio");
    } else if (!strcmp(k, "bypass")) {
        if (!strcasecmp(v, "off")) {
            c->bypass_limit = 0;
        } else if (!strcasecmp(v, "on")) {
            c->bypass_limit = 5;
            c->no_bucket = true;
        } else if (!strcasecmp(v, "bucket")) {
            c->bypass_limit = 5;
            c->no_bucket = false;
        } else {
            return media_bad(a, k, v, "off, on (no cap) or bucket (1 Mbit/s, 2,560 B)");
        }
    } else if (!strcmp(k, "bulk")) {
        if (!strcasecmp(v, "on"))
            c->bulk = true;
        else if (strcasecmp(v, "off"))
            return media_bad(a, k, v,
                             "on (a bulk upload at urgency 7 on the same connection) or off");
    } else if (!strcmp(k, "oracle")) {
        int l = qk_sim_link_find(sim, v);
        if (l < 0) return media_bad(a, k, v, "the name of a link (its suspensions)");
        c->oracle_link = qk_sim_link_cfg_get(sim, l);
    } else if (!strcmp(k, "frames")) {
        *csv = v;
    } else if (!strcmp(k, "qlog")) {
        c->qlog_dir = v;
    } else {
        snprintf(a->err, a->err_cap,
                 "%s: unknown key for type media; use cc, start, duration, flows, bypass, "
                 "bulk, path_failed, oracle, frames, qlog",
                 k);
        return QK_ERR_CONFIG;
    }
    return 0;
}

int qk_sim_media_factory(qk_sim *sim, const qk_sim_flow_args *a, void **out,
                         const qk_sim_flow_ops **ops)
{
    qk_simm_cfg c = {.cc = QK_CONFIG_CC_CUBIC};
    const char *csv = NULL;
    for (size_t i = 0; i < a->n_kv; i++) {
        const char *k = a->kv[i].key, *v = a->kv[i].value;
        if (!strcmp(k, "type") || !strcmp(k, "from") || !strcmp(k, "to")) continue;
        int rc = media_key(sim, a, k, v, &c, &csv);
        if (rc) return rc;
    }
    media_scn *s = calloc(1, sizeof *s);
    if (!s) return QK_ERR_NOMEM;
    if (csv && !(s->csv = fopen(csv, "w"))) {
        free(s);
        return media_bad(a, "frames", csv, "a writable file path");
    }
    if (s->csv) fprintf(s->csv, "flow,frame,bytes,sent_s,recv_s\n");
    c.frames_csv = s->csv;
    int err = 0;
    s->m = qk_simm_new(sim, a->from_host, a->to_host, (uint16_t)(20000 + a->flow_id), &c, &err);
    if (!s->m) {
        if (s->csv) fclose(s->csv);
        free(s);
        snprintf(a->err, a->err_cap, "from: cannot create the flow's endpoints (%s)",
                 qk_strerror(err));
        return err;
    }
    *out = s;
    *ops = &media_ops;
    return 0;
}
