/* SPDX-License-Identifier: MIT */
/* The stream map of one connection (see streams.h). */
#include "transport/streams/streams.h"

#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_BUCKETS 16u

static uint64_t clamp_streams(uint64_t v)
{
    return v > QK_MAX_STREAMS_LIMIT ? QK_MAX_STREAMS_LIMIT : v;
}

static size_t bucket_of(size_t nbuckets, uint64_t id)
{
    uint64_t h = id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (nbuckets - 1);
}

int qk_streams_init(qk_streams *m, const qk_streams_config *cfg)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->cfg.max_streams_bidi = clamp_streams(cfg->max_streams_bidi);
    m->cfg.max_streams_uni = clamp_streams(cfg->max_streams_uni);
    m->table = calloc(INITIAL_BUCKETS, sizeof *m->table);
    if (!m->table) return QK_ERR_NOMEM;
    m->nbuckets = INITIAL_BUCKETS;
    m->remote_limit[QK_STREAMS_BIDI] = m->cfg.max_streams_bidi;
    m->remote_limit[QK_STREAMS_UNI] = m->cfg.max_streams_uni;
    return 0;
}

void qk_streams_free(qk_streams *m)
{
    for (size_t b = 0; b < m->nbuckets; b++) {
        qk_stream *s = m->table[b];
        while (s) {
            qk_stream *next = s->hnext;
            qk_stream_free(s);
            free(s);
            s = next;
        }
    }
    free(m->table);
    m->table = NULL;
    m->nbuckets = m->count = 0;
}

static int table_grow(qk_streams *m)
{
    size_t n = m->nbuckets * 2;
    qk_stream **t = calloc(n, sizeof *t);
    if (!t) return QK_ERR_NOMEM;
    for (size_t b = 0; b < m->nbuckets; b++) {
        qk_stream *s = m->table[b];
        while (s) {
            qk_stream *next = s->hnext;
            size_t nb = bucket_of(n, s->id);
            s->hnext = t[nb];
            t[nb] = s;
            s = next;
        }
    }
    free(m->table);
    m->table = t;
    m->nbuckets = n;
    return 0;
}

qk_stream *qk_streams_get(const qk_streams *m, uint64_t id)
{
    for (qk_stream *s = m->table[bucket_of(m->nbuckets, id)]; s; s = s->hnext)
        if (s->id == id) return s;
    return NULL;
}

/* Initial limits by stream type (RFC 9000 §18.2 initial_max_stream_data_*). */
static void stream_params(qk_streams *m, uint64_t id, qk_stream_params *p)
{
    bool local = qk_stream_id_is_local(id, m->cfg.is_server);
    bool uni = qk_stream_id_is_uni(id);
    memset(p, 0, sizeof *p);
    p->has_send = !uni || local;
    p->has_recv = !uni || !local;
    if (!uni && local) {
        p->recv_max_data = m->cfg.max_stream_data_bidi_local;
        p->send_max_data = m->peer.max_stream_data_bidi_remote;
    } else if (!uni) {
        p->recv_max_data = m->cfg.max_stream_data_bidi_remote;
        p->send_max_data = m->peer.max_stream_data_bidi_local;
    } else if (local) {
        p->send_max_data = m->peer.max_stream_data_uni;
    } else {
        p->recv_max_data = m->cfg.max_stream_data_uni;
    }
    p->send_buffer_bytes = m->cfg.send_buffer_bytes;
    p->autotune = m->cfg.autotune;
    p->recv_max_window_bytes = m->cfg.max_stream_window_bytes;
    p->budget = m->cfg.budget;
    p->autotune_rule = m->cfg.autotune_rule;
    p->recv_max_ranges = m->cfg.recv_max_ranges;
    p->pend_list = &m->pending;
}

static qk_stream *create(qk_streams *m, uint64_t id)
{
    if (m->count + 1 > m->nbuckets / 4 * 3 && table_grow(m)) return NULL;
    qk_stream *s = malloc(sizeof *s);
    if (!s) return NULL;
    qk_stream_params p;
    stream_params(m, id, &p);
    qk_stream_init(s, id, &p);
    size_t b = bucket_of(m->nbuckets, id);
    s->hnext = m->table[b];
    m->table[b] = s;
    m->count++;
    return s;
}

int qk_streams_set_peer_params(qk_streams *m, const qk_streams_peer_params *p)
{
    /* RFC 9000 §4.6: more than 2^60 streams is a TRANSPORT_PARAMETER_ERROR. */
    if (p->max_streams_bidi > QK_MAX_STREAMS_LIMIT || p->max_streams_uni > QK_MAX_STREAMS_LIMIT)
        return QK_ERR_TRANSPORT_PARAMETER;
    m->peer = *p;
    const uint64_t lim[2] = {p->max_streams_bidi, p->max_streams_uni};
    for (int t = 0; t < 2; t++) {
        if (lim[t] > m->local_limit[t]) {
            m->local_limit[t] = lim[t];
            m->blocked_pending[t] = m->blocked_reported[t] = false;
        }
    }
    for (qk_stream *s = qk_streams_next(m, NULL); s; s = qk_streams_next(m, s)) {
        qk_stream_params sp;
        stream_params(m, s->id, &sp);
        if (sp.has_send) qk_stream_on_max_stream_data(s, sp.send_max_data);
    }
    return 0;
}

int qk_streams_open(qk_streams *m, bool uni, qk_stream **out)
{
    int t = uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI;
    *out = NULL;
    if (m->local_opened[t] >= m->local_limit[t]) { /* RFC 9000 §4.6 */
        if (!m->blocked_reported[t]) m->blocked_pending[t] = true;
        return QK_ERR_STREAM_LIMIT;
    }
    qk_stream *s = create(m, qk_stream_id_make(m->local_opened[t], m->cfg.is_server, uni));
    if (!s) return QK_ERR_NOMEM;
    m->local_opened[t]++;
    *out = s;
    return 0;
}

int qk_streams_get_for_frame(qk_streams *m, uint64_t id, qk_stream_frame_dir dir, qk_stream **out)
{
    bool uni = qk_stream_id_is_uni(id);
    int t = uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI;
    uint64_t index = qk_stream_id_index(id);
    *out = NULL;
    if (qk_stream_id_is_local(id, m->cfg.is_server)) {
        /* RFC 9000 §19.8, §19.4, §19.13: our uni streams have no receive side. */
        if (uni && dir == QK_FRAME_TO_RECV) return QK_ERR_STREAM_STATE;
        /* §19.8, §19.5, §19.10: a local stream we have not opened. */
        if (index >= m->local_opened[t]) return QK_ERR_STREAM_STATE;
        *out = qk_streams_get(m, id);
        return 0;
    }
    /* §19.5, §19.10: the peer's uni streams have no send side for us. */
    if (uni && dir == QK_FRAME_TO_SEND) return QK_ERR_STREAM_STATE;
    if (index >= m->remote_limit[t]) return QK_ERR_STREAM_LIMIT; /* §4.6 */
    if (index < m->remote_opened[t]) {
        *out = qk_streams_get(m, id);
        return 0;
    }
    /* §3.2: opening a stream implicitly opens every lower one of its type. */
    while (m->remote_opened[t] <= index) {
        uint64_t nid = qk_stream_id_make(m->remote_opened[t], !m->cfg.is_server, uni);
        qk_stream *s = create(m, nid);
        if (!s) return QK_ERR_NOMEM;
        m->remote_opened[t]++;
        *out = s;
    }
    return 0;
}

int qk_streams_on_max_streams(qk_streams *m, bool uni, uint64_t max_streams)
{
    if (max_streams > QK_MAX_STREAMS_LIMIT) return QK_ERR_FRAME_ENCODING; /* RFC 9000 §19.11 */
    int t = uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI;
    if (max_streams > m->local_limit[t]) { /* smaller values are ignored */
        m->local_limit[t] = max_streams;
        m->blocked_pending[t] = m->blocked_reported[t] = false;
    }
    return 0;
}

int qk_streams_on_streams_blocked(qk_streams *m, bool uni, uint64_t limit)
{
    if (limit > QK_MAX_STREAMS_LIMIT) return QK_ERR_FRAME_ENCODING; /* RFC 9000 §19.14 */
    int t = uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI;
    if (m->remote_limit[t] > limit) m->max_streams_pending[t] = true;
    return 0;
}

static void unlink_stream(qk_streams *m, qk_stream *s)
{
    qk_stream **pp = &m->table[bucket_of(m->nbuckets, s->id)];
    while (*pp && *pp != s) pp = &(*pp)->hnext;
    if (*pp) {
        *pp = s->hnext;
        m->count--;
    }
}

/* RFC 9000 §4.6: return credit for closed peer streams; advertise it once
 * half of our configured window has come back. */
static void return_credit(qk_streams *m, int t)
{
    uint64_t window = t == QK_STREAMS_UNI ? m->cfg.max_streams_uni : m->cfg.max_streams_bidi;
    m->remote_closed[t]++;
    uint64_t target = clamp_streams(m->remote_closed[t] + window);
    uint64_t step = window / 2 ? window / 2 : 1;
    if (target > m->remote_limit[t] && target - m->remote_limit[t] >= step) {
        m->remote_limit[t] = target;
        m->max_streams_pending[t] = true;
    }
}

int qk_streams_gc(qk_streams *m, qk_stream *s)
{
    if (!qk_stream_is_closed(s)) return 0;
    unlink_stream(m, s);
    if (!qk_stream_id_is_local(s->id, m->cfg.is_server))
        return_credit(m, qk_stream_id_is_uni(s->id) ? QK_STREAMS_UNI : QK_STREAMS_BIDI);
    qk_stream_free(s);
    free(s);
    return 1;
}

qk_stream *qk_streams_poll_new_remote(qk_streams *m)
{
    for (int t = 0; t < 2; t++) {
        while (m->remote_reported[t] < m->remote_opened[t]) {
            uint64_t id =
                qk_stream_id_make(m->remote_reported[t]++, !m->cfg.is_server, t == QK_STREAMS_UNI);
            qk_stream *s = qk_streams_get(m, id);
            if (s) return s;
        }
    }
    return NULL;
}

qk_stream *qk_streams_next(const qk_streams *m, const qk_stream *prev)
{
    size_t b = 0;
    if (prev) {
        if (prev->hnext) return prev->hnext;
        b = bucket_of(m->nbuckets, prev->id) + 1;
    }
    for (; b < m->nbuckets; b++)
        if (m->table[b]) return m->table[b];
    return NULL;
}

bool qk_streams_want_max_streams(const qk_streams *m, bool uni, uint64_t *max)
{
    int t = uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI;
    *max = m->remote_limit[t];
    return m->max_streams_pending[t];
}

bool qk_streams_want_streams_blocked(const qk_streams *m, bool uni, uint64_t *limit)
{
    int t = uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI;
    *limit = m->local_limit[t];
    return m->blocked_pending[t];
}

void qk_streams_on_max_streams_sent(qk_streams *m, bool uni)
{
    m->max_streams_pending[uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI] = false;
}

void qk_streams_on_max_streams_lost(qk_streams *m, bool uni, uint64_t value)
{
    int t = uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI;
    if (value == m->remote_limit[t]) m->max_streams_pending[t] = true;
}

void qk_streams_on_streams_blocked_sent(qk_streams *m, bool uni)
{
    int t = uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI;
    m->blocked_pending[t] = false;
    m->blocked_reported[t] = true;
}

void qk_streams_on_streams_blocked_lost(qk_streams *m, bool uni, uint64_t value)
{
    int t = uni ? QK_STREAMS_UNI : QK_STREAMS_BIDI;
    if (value == m->local_limit[t] && m->local_opened[t] >= m->local_limit[t])
        m->blocked_pending[t] = true;
}
