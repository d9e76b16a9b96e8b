/* SPDX-License-Identifier: MIT */
/* Packets out: choose frames per space, coalesce, pad, protect.
 *
 * A datagram is built in two phases: every packet's header and plaintext
 * frames are written first, then (once padding is known) each packet's
 * Length is patched and it is sealed and header-protected in place. */
#include "transport/conn/conn_tx.h"

#include <stdlib.h>
#include <string.h>

#include "base/cursor.h"
#include "crypto/token.h"
#include "transport/conn/trace.h"
#include "wire/pn.h"

#define MIN_INITIAL_DGRAM         1200 /* RFC 9000 §14.1 */
#define QK_0RTT_CWND_RESERVE_PKTS 2

static uint8_t choose_ecn(const qk_conn *c)
{
    if (!c->cfg->ecn || c->rec.ecn_state == QK_ECN_STATE_FAILED) return QK_ECN_NOT_ECT;
    /* RFC 9000 §13.4.2: while testing, mark only the first packets, so a path
     * that drops ECT packets costs little; after validation mark them all. */
    if (c->rec.ecn_state == QK_ECN_STATE_TESTING && c->rec.ecn_testing_sent >= QK_ECN_TESTING_PKTS)
        return QK_ECN_NOT_ECT;
    /* RFC 9331 §4.1: an L4S (scalable) controller marks ECT(1); classic ones ECT(0). */
    return c->cfg->cc == QK_CONFIG_CC_PRAGUE ? QK_ECN_ECT1 : QK_ECN_ECT0;
}

static void tx_ctx_init(qk_tx_ctx *t, qk_conn *c, uint8_t *buf, size_t cap, qk_time now)
{
    t->c = c;
    t->buf = buf;
    t->cap = cap;
    t->len = 0;
    t->n = 0;
    t->now = now;
    t->cc_ok = false;
    t->bypass = false;
    t->urgent_only = false;
    t->pad = false;
    /* qlog and the trace hook read each packet's plaintext before sealing. */
    t->defer = !c->qlog.file && !c->cfg->trace;
    t->ecn = choose_ecn(c);
    c->tx_ecn = t->ecn;
}

static size_t room(const qk_tx_ctx *t, const qk_tx_pkt *p)
{
    size_t used = p->end + QK_AEAD_TAG_BYTES;
    return used < t->cap ? t->cap - used : 0;
}

void qk_tx_record(qk_tx_pkt *p, const qk_sent_frame *f)
{
    if (p->n_frames < QK_RECOVERY_MAX_FRAMES_PER_PKT) p->frames[p->n_frames++] = *f;
}

/* Encode a frame into the packet; false when it did not fit. */
bool qk_tx_put_frame(qk_tx_ctx *t, qk_tx_pkt *p, const qk_frame *f)
{
    int n = qk_frame_encode(f, t->buf + p->end, room(t, p));
    if (n < 0) return false;
    p->end += (size_t)n;
    if (qk_frame_is_ack_eliciting(f->type)) p->ack_eliciting = true;
    if (f->type != QK_FT_ACK && f->type != QK_FT_ACK_ECN) p->in_flight = true;
    if (f->type == QK_FT_PADDING) p->in_flight = true; /* RFC 9002 §2: padding counts */
    return true;
}

static size_t pn_len_for(qk_conn *c, qk_pn_space s, uint64_t pn)
{
    const qk_recovery_space *rs = &c->rec.sp[s];
    return qk_pn_encode_len(pn, rs->has_largest_acked ? rs->largest_acked : QK_PN_NONE);
}

static bool open_packet(qk_tx_ctx *t, qk_pn_space space)
{
    qk_conn *c = t->c;
    if (t->n == QK_TX_MAX_PKTS_PER_DGRAM) return false;
    qk_tx_pkt *p = &t->pkts[t->n];
    memset(p, 0, offsetof(qk_tx_pkt, frames));
    p->n_frames = 0;
    p->space = space;
    p->start = t->len;
    p->pn = c->sp[space].next_pn;
    p->pn_len = pn_len_for(c, space, p->pn);
    qk_remote_cid *d = qk_conn_dcid(c);
    int n;
    size_t lo = 0, po = 0;
    /* RFC 9001 §4.6.1: before 1-RTT keys, a resuming client's application
     * data goes in 0-RTT packets (long header, application pn space). */
    bool zrtt = space == QK_PN_SPACE_APP && qk_session_can_send_0rtt(c);
    if (space == QK_PN_SPACE_APP && !zrtt) {
        p->type = QK_PKT_1RTT;
        n = qk_pkt_encode_short(t->buf + t->len, t->cap - t->len, d->cid.b, d->cid.len, false,
                                c->key_phase, p->pn, p->pn_len, &po);
    } else {
        p->type = zrtt                           ? QK_PKT_0RTT
                  : space == QK_PN_SPACE_INITIAL ? QK_PKT_INITIAL
                                                 : QK_PKT_HANDSHAKE;
        qk_long_hdr_params hp = {.type = p->type,
                                 .version = c->version,
                                 .dcid = d->cid.b,
                                 .dcid_len = d->cid.len,
                                 .scid = c->cids.lcid[0].cid.b,
                                 .scid_len = c->cids.lcid[0].cid.len,
                                 /* RFC 9000 §17.2.2: the client echoes its token */
                                 .token = p->type == QK_PKT_INITIAL ? c->restart.token : NULL,
                                 .token_len = p->type == QK_PKT_INITIAL ? c->restart.token_len : 0,
                                 .pn = p->pn,
                                 .pn_len = p->pn_len};
        n = qk_pkt_encode_long(t->buf + t->len, t->cap - t->len, &hp, &lo, &po);
        /* RFC 9000 §6.2: offering another version first (qk_config.offer_version);
         * an unknown one is only this field, the rest is laid out as ours. */
        if (n > 0 && c->restart.offer_version) {
            uint8_t *v = t->buf + t->len + 1;
            v[0] = (uint8_t)(c->restart.offer_version >> 24);
            v[1] = (uint8_t)(c->restart.offer_version >> 16);
            v[2] = (uint8_t)(c->restart.offer_version >> 8);
            v[3] = (uint8_t)c->restart.offer_version;
        }
    }
    /* Need room for the header, some payload and the tag. */
    if (n < 0 || t->len + (size_t)n + 4 + QK_AEAD_TAG_BYTES > t->cap) return false;
    p->length_off = t->len + lo;
    p->pn_off = t->len + po;
    p->payload = p->end = t->len + (size_t)n;
    return true;
}

static void write_ack(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    qk_ack_tracker *a = &c->sp[p->space].ack;
    qk_ack_frame_info ai;
    if (qk_ack_build(a, t->now, c->cfg->ack_delay_exponent, &ai)) return;
    uint64_t ecn[3] = {ai.ect0, ai.ect1, ai.ce};
    int n = qk_frame_encode_ack(t->buf + p->end, room(t, p), ai.ranges, ai.n_ranges,
                                p->space == QK_PN_SPACE_APP ? ai.ack_delay : 0, ai.ecn ? ecn : NULL,
                                NULL);
    if (n < 0) return;
    p->end += (size_t)n;
    p->has_ack = true;
    qk_ack_on_ack_sent(a, t->now);
    if (p->space == QK_PN_SPACE_APP) qk_ku_on_ack_sent(&c->ku, ai.largest);
    c->stats.ack_frames_sent++;
    qk_tx_record(p, &(qk_sent_frame){.kind = QK_SF_ACK, .extra = ai.largest});
}

static void write_crypto(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_sendbuf *b = &t->c->sp[p->space].crypto_send;
    while (qk_sendbuf_has_pending(b)) {
        uint64_t off;
        size_t len;
        bool fin;
        size_t r = room(t, p);
        if (r < 8) return;
        if (qk_sendbuf_next_range(b, r, UINT64_MAX, &off, &len, &fin) != 1) return;
        size_t max = qk_frame_crypto_max_data(off, r);
        if (!max) return;
        if (len > max) len = max;
        qk_frame f = {.type = QK_FT_CRYPTO};
        f.u.crypto.offset = off;
        f.u.crypto.len = len;
        uint8_t *dst = t->buf + p->end + qk_frame_crypto_header_len(off, len);
        if (qk_sendbuf_copy(b, off, len, dst)) return;
        f.u.crypto.data = dst;
        /* Encoding copies data onto itself: memmove semantics are not needed since
         * header bytes precede dst exactly. */
        if (!qk_tx_put_frame(t, p, &f)) return;
        qk_sendbuf_on_sent(b, off, len, false);
        qk_tx_record(
            p, &(qk_sent_frame){
                   .kind = QK_SF_CRYPTO, .id = p->space, .offset = off, .length = (uint32_t)len});
    }
}

/* The next stream to serve: in bypass mode, or while the pipe limit holds
 * non-urgent data, only urgencies below the limit. */
static qk_sched_node *next_stream(const qk_tx_ctx *t)
{
    const qk_conn *c = t->c;
    return t->bypass || t->urgent_only
               ? qk_sched_next_bypass(&c->sched, (uint8_t)(c->bypass_limit - 1))
               : qk_sched_next(&c->sched);
}

/* The head of the DATAGRAM queue (urgency order) if it may go now. */
static qk_dgram_out *next_datagram(const qk_tx_ctx *t)
{
    const qk_conn *c = t->c;
    if (!c->dgq_count) return NULL;
    qk_dgram_out *d = &c->dgq[c->dgq_head];
    return (t->bypass || t->urgent_only) && d->urgency >= c->bypass_limit ? NULL : d;
}

/* One DATAGRAM frame from the head of the queue; false when it did not fit. */
static bool write_one_datagram(qk_tx_ctx *t, qk_tx_pkt *p, qk_dgram_out *d)
{
    qk_conn *c = t->c;
    qk_frame f = {.type = QK_FT_DATAGRAM_LEN};
    f.u.datagram.data = d->data;
    f.u.datagram.len = d->len;
    f.u.datagram.has_length = true;
    if (!qk_tx_put_frame(t, p, &f)) return false;
    qk_tx_record(p,
                 &(qk_sent_frame){.kind = QK_SF_DATAGRAM, .id = d->id, .length = (uint32_t)d->len});
    free(d->data);
    c->dgq_head = (c->dgq_head + 1) % c->dgq_cap;
    c->dgq_count--;
    c->stats.datagrams_sent++;
    return true;
}

/* Leave s's bytes [off, off + len) in its send buffer, to be read by the
 * AEAD at datagram offset `at` (finish_packet). false (nothing recorded)
 * when a piece is not stored or the packet has no room for more pieces. */
static bool defer_stream(qk_tx_pkt *p, const qk_sendbuf *sb, uint64_t off, size_t len, size_t at)
{
    size_t n = p->n_ext;
    while (len) {
        const uint8_t *src;
        size_t k = qk_sendbuf_peek(sb, off, len, &src);
        if (!k || n == QK_TX_MAX_EXT) return false;
        p->ext[n++] = (qk_tx_ext){.at = at, .len = k, .src = src};
        at += k;
        off += k;
        len -= k;
    }
    p->n_ext = n;
    return true;
}

/* STREAM frame header with a Length field (RFC 9000 §19.8); n is
 * qk_frame_stream_header_len(). */
static void put_stream_header(uint8_t *dst, size_t n, uint64_t id, uint64_t off, size_t len,
                              bool fin)
{
    qk_wr w = qk_wr_make(dst, n);
    uint8_t type = QK_FT_STREAM | QK_STREAM_BIT_LEN | (off ? QK_STREAM_BIT_OFF : 0) |
                   (fin ? QK_STREAM_BIT_FIN : 0);
    qk_wr_varint(&w, type);
    qk_wr_varint(&w, id);
    if (off) qk_wr_varint(&w, off);
    qk_wr_varint(&w, len);
}

/* One STREAM frame from the scheduler's next stream. false when nothing fit. */
static bool write_one_stream(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    qk_sched_node *n = next_stream(t);
    if (!n) return false;
    qk_stream *s = QK_CONTAINER_OF(n, qk_stream, sched);
    size_t r = room(t, p);
    if (r < 24) return false;
    uint64_t conn_credit = qk_flow_tx_available(&c->flow_tx);
    uint64_t off;
    size_t len;
    bool fin;
    /* Retransmissions need no connection credit (RFC 9000 §4.1 counts the
     * highest offset): ask for a full packet and trim new bytes below. */
    int rc = qk_stream_next_range(s, r, &off, &len, &fin);
    if (rc != 1 || (len == 0 && !fin)) {
        /* Blocked by stream credit or nothing to send now. */
        qk_sched_remove(&c->sched, n);
        return true;
    }
    size_t max = qk_frame_stream_max_data(s->id, off, r, true);
    if (max == 0) return false;
    if (len > max) {
        len = max;
        fin = false;
    }
    /* New bytes (beyond the highest sent offset) consume connection credit. */
    uint64_t new_bytes = off + len > s->send.max_sent_off ? off + len - s->send.max_sent_off : 0;
    if (new_bytes > conn_credit) {
        len -= (size_t)(new_bytes - conn_credit);
        fin = false;
        new_bytes = conn_credit;
        if (len == 0) { /* blocked by connection credit: MAX_DATA requeues it */
            qk_sched_block(&c->sched, n);
            return true;
        }
    }
    size_t hl = qk_frame_stream_header_len(s->id, off, len, true);
    if (p->end + hl + len + QK_AEAD_TAG_BYTES > t->cap) return false;
    size_t at = p->end + hl;
    if (len && !(t->defer && defer_stream(p, &s->send, off, len, at)) &&
        qk_sendbuf_copy(&s->send, off, len, t->buf + at))
        return false;
    put_stream_header(t->buf + p->end, hl, s->id, off, len, fin);
    p->end = at + len;
    p->ack_eliciting = p->in_flight = true; /* RFC 9002 §2 */
    qk_stream_on_sent(s, off, len, fin);
    qk_conn_send_account(c, s);
    if (new_bytes) qk_flow_tx_on_sent(&c->flow_tx, new_bytes);
    c->stats.stream_bytes_sent += len;
    qk_tx_record(
        p,
        &(qk_sent_frame){
            .kind = QK_SF_STREAM, .id = s->id, .offset = off, .length = (uint32_t)len, .fin = fin});
    if (qk_sendbuf_has_pending(&s->send) && s->send_state != QK_SEND_RESET_SENT) {
        qk_sched_requeue(&c->sched, n);
    } else {
        qk_sched_remove(&c->sched, n);
        bool capped = false;
        if (qk_conn_send_room(c, s, &capped) > 0) {
            s->write_blocked = false;
            qk_event ev = {.type = QK_EV_STREAM_WRITABLE, .conn = c, .stream_id = s->id};
            qk_conn_push_event(c, &ev);
        } else if (capped && !s->send.fin) {
            /* Drained but out of credit or budget: WRITABLE when room returns. */
            s->write_blocked = true;
            c->send_capped = true;
        }
    }
    return true;
}

/* Some stream has lost data to resend (needs no connection credit). Only
 * asked when the connection credit is exhausted. */
static bool lost_stream_data(const qk_conn *c)
{
    for (qk_stream *s = qk_streams_next(&c->streams, NULL); s; s = qk_streams_next(&c->streams, s))
        if (s->send.lost.n && s->send_state != QK_SEND_RESET_SENT) return true;
    return false;
}

static bool space_wants_send(qk_tx_ctx *t, qk_pn_space s)
{
    qk_conn *c = t->c;
    qk_space *sp = &c->sp[s];
    if (s == QK_PN_SPACE_APP && qk_session_can_send_0rtt(c)) {
        /* The server acknowledges 0-RTT in 1-RTT packets, which we cannot
         * read before our handshake completes: 0-RTT leaves the last
         * QK_0RTT_CWND_RESERVE_PKTS datagrams of the window to the Handshake
         * flight (our Finished), or the two would wait on each other. */
        uint64_t reserve = QK_0RTT_CWND_RESERVE_PKTS * c->max_udp_bytes;
        if (qk_recovery_bytes_in_flight(&c->rec) + reserve + c->max_udp_bytes > c->cc.cwnd_bytes)
            return false;
        return t->cc_ok && !qk_sched_empty(&c->sched) &&
               (qk_flow_tx_available(&c->flow_tx) || lost_stream_data(c));
    }
    if (sp->discarded || !sp->has_tx) return false;
    if (qk_ack_has_new(&sp->ack) && qk_ack_should_ack_now(&sp->ack, t->now)) return true;
    if (sp->probes) return true;
    if (t->bypass) return s == QK_PN_SPACE_APP; /* bypass_wanted() saw urgent data */
    if (!t->cc_ok) return false;
    if (qk_sendbuf_has_pending(&sp->crypto_send)) return true;
    if (s != QK_PN_SPACE_APP || !qk_session_app_data_ok(c)) return false;
    if (t->urgent_only) /* only urgent application data may go (pipe_limit_bytes) */
        return next_datagram(t) ||
               (next_stream(t) && (qk_flow_tx_available(&c->flow_tx) || lost_stream_data(c))) ||
               qk_ctrl_conn_pending(c);
    if (c->dgq_count || qk_streams_pending_head(&c->streams)) return true;
    if (!qk_sched_empty(&c->sched) && (qk_flow_tx_available(&c->flow_tx) || lost_stream_data(c)))
        return true;
    return qk_ctrl_conn_pending(c); /* conn_ctrl.c: any control frame owed */
}

/* Urgent data flows: some went out within QK_URGENT_ACTIVE_NS. Media
 * frames come every 10-100 ms (10-100 fps, 20 ms audio); a second also
 * spans pauses between frames or talk spurts, and a connection that has
 * stopped sending urgent data gets its full window back after it. */
#define QK_URGENT_ACTIVE_NS QK_NS_PER_S
#define QK_PIPE_SLACK_PKTS  2 /* pipe_limit_bytes: the path's BDP plus this */
static bool urgent_active(const qk_conn *c, qk_time now)
{
    return c->urgent_sent && now - c->urgent_tx_ns < QK_URGENT_ACTIVE_NS;
}

/* With a bypass configured and a controller with a pipe estimate
 * (qk_cc_ops.pipe_bytes; BBR): non-urgent data may bring
 * bytes in flight up to BBR's estimate of the pipe (qk_cc_bbr_pipe_bytes:
 * draft-ietf-ccwg-bbr §5.6.4.2 Inflight(bw, 1), one BDP plus the
 * quantization budget), not up to its cwnd (2 x BDP + the ACK-aggregation
 * allowance, §5.6.4.2 UpdateMaxInflight), a cap above the working point.
 * What goes beyond the pipe waits in the bottleneck's FIFO queue, where an
 * urgent frame written later queues behind it; held in the sender, the
 * scheduler lets urgent data pass (RFC 9218 §4.1 urgency order). On
 * media-wifi BBR released the HD video held during a suspension at 1.25 x
 * its bandwidth estimate with up to 2 BDP in flight when the link reopened
 * for 10-20 ms, and the LD frames of the next suspension queued behind what
 * the opening could not carry (docs/experiments/media.md). Urgent data is
 * not held (cwnd and the pacer still apply to it); a packet that fills the
 * limit asks for an IMMEDIATE_ACK like one that fills cwnd
 * (cwnd_room_after). A window-based controller's cwnd is its own estimate
 * of the pipe: UINT64_MAX; so is it while no urgent data flows
 * (urgent_active): then nothing waits behind the queue, and BBR keeps its
 * headroom (a bulk download at urgency 6 on a bypass connection took 11 %
 * longer under the limit, tests/sim/test_media.c). For any controller the
 * limit is also the path's BDP as the delivery-rate samples give it (their
 * max over the last 4-8 s that were not held back by this limit,
 * qk_recovery_max_delivery_rate, times min_rtt)
 * plus QK_PIPE_SLACK_PKTS: CUBIC's window, and BBR's recent RTT, include
 * the standing queue that a bulk stream of the same connection builds, and
 * every urgent frame waited behind it (bench/media.sh's family with a bulk
 * neighbour: audio +130 ms over its floor at 20 Mbit/s, 15 ms one way,
 * CUBIC; docs/experiments/media.md). */
static uint64_t pipe_limit_bytes(const qk_conn *c, qk_time now)
{
    if (!c->bypass_limit || !urgent_active(c, now)) return UINT64_MAX;
    uint64_t limit = c->cc.ops->pipe_bytes ? c->cc.ops->pipe_bytes(&c->cc) : UINT64_MAX;
    uint64_t bw = qk_recovery_max_delivery_rate(&c->rec);
    if (!bw || !c->rtt.min_rtt_ns) return limit;
    uint64_t bdp = (uint64_t)((unsigned __int128)bw * c->rtt.min_rtt_ns / QK_NS_PER_S);
    bdp += QK_PIPE_SLACK_PKTS * c->max_udp_bytes;
    return bdp < limit ? bdp : limit;
}

/* Full-size packets the congestion window (and the pipe limit, which is
 * the window for non-urgent data) has room for after the one being built
 * (counted at most a datagram). */
static uint64_t cwnd_room_after(const qk_conn *c, qk_time now)
{
    uint64_t mds = c->max_udp_bytes;
    uint64_t after = qk_recovery_bytes_in_flight(&c->rec) + mds;
    uint64_t limit = c->cc.cwnd_bytes, pipe = pipe_limit_bytes(c, now);
    if (pipe < limit) limit = pipe;
    return limit > after ? (limit - after) / mds : 0;
}

/* ack-frequency-12 §5, §8: IMMEDIATE_ACK in this 1-RTT packet? One byte was
 * kept free for it while the packet was filled. */
static void write_immediate_ack(qk_tx_ctx *t, qk_tx_pkt *p, bool probe)
{
    qk_conn *c = t->c;
    if (!t->cc_ok && !probe) return; /* would put an ACK-only packet in flight */
    bool data = false;
    for (size_t i = 0; i < p->n_frames; i++)
        if (p->frames[i].kind == QK_SF_STREAM || p->frames[i].kind == QK_SF_DATAGRAM) data = true;
    /* After this packet: room in cwnd (none = another would exceed it) and
     * what the pacer lets go at once. */
    uint64_t room = cwnd_room_after(c, t->now);
    uint64_t paced = qk_pacer_pkts_after(&c->pacer, c->max_udp_bytes, c->max_udp_bytes);
    qk_ackfreq_pkt pk = {.probe = probe,
                         .data = data,
                         .more_data = !qk_sched_empty(&c->sched) || c->dgq_count,
                         .ae_in_flight = c->rec.sp[QK_PN_SPACE_APP].ack_eliciting_in_flight > 0,
                         .cwnd_full = room == 0,
                         .burst_left = room < paced ? room : paced,
                         .srtt_ns = c->rtt.smoothed_rtt_ns,
                         .now = t->now};
    uint32_t why = qk_ackfreq_want_immediate(&c->af, &pk);
    qk_frame f = {.type = QK_FT_IMMEDIATE_ACK};
    if (why && !qk_tx_put_frame(t, p, &f)) why = 0; /* no room after all: not sent */
    if (data) qk_ackfreq_on_data_sent(&c->af, why);
    if (!why) return;
    qk_tx_record(p, &(qk_sent_frame){.kind = QK_SF_IMMEDIATE_ACK}); /* §5: never retransmitted */
    qk_ackfreq_on_immediate_sent(&c->af, why, t->now);
    c->stats.immediate_acks_sent++;
}

/* Urgent data (below the bypass limit) went out: see urgent_active. */
static void note_urgent(qk_tx_ctx *t, uint8_t urgency)
{
    qk_conn *c = t->c;
    if (urgency >= c->bypass_limit) return;
    c->urgent_sent = true;
    c->urgent_tx_ns = t->now;
}

/* RFC 9218 §4.1: DATAGRAM and STREAM data by urgency, a datagram before a
 * stream of the same urgency. */
static void write_app_data(qk_tx_ctx *t, qk_tx_pkt *p)
{
    for (;;) {
        qk_sched_node *n = next_stream(t);
        qk_dgram_out *d = next_datagram(t);
        if (d && (!n || d->urgency <= n->urgency)) {
            uint8_t u = d->urgency;
            if (!write_one_datagram(t, p, d)) return;
            note_urgent(t, u);
            continue;
        }
        if (!n) return;
        uint8_t u = n->urgency;
        if (!write_one_stream(t, p)) return;
        note_urgent(t, u);
    }
}

static void fill_packet(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    qk_space *sp = &c->sp[p->space];
    if (p->type == QK_PKT_0RTT) {
        /* RFC 9000 §12.4, §17.2.3: 0-RTT carries the application's streams
         * (no ACK, CRYPTO or connection-level control frames from us here). */
        if (t->cc_ok)
            while (write_one_stream(t, p)) {
            }
        return;
    }
    bool probe = sp->probes > 0;
    /* ack-frequency-12 §3: only 1-RTT packets to a peer that advertised
     * min_ack_delay ever carry IMMEDIATE_ACK (never 0-RTT). */
    bool imm = p->space == QK_PN_SPACE_APP && c->handshake_complete &&
               qk_ackfreq_immediate_allowed(&c->af);
    if (imm) t->cap--; /* keep a byte for IMMEDIATE_ACK */
    if (qk_ack_has_new(&sp->ack)) write_ack(t, p);
    if (t->cc_ok || sp->probes) write_crypto(t, p);
    if (p->space == QK_PN_SPACE_APP && qk_session_app_data_ok(c) &&
        (t->cc_ok || sp->probes || t->bypass)) {
        if (!t->bypass) { /* the bypass carries urgent data only */
            qk_ctrl_write_conn(t, p);
            qk_ctrl_write_streams(t, p);
        }
        write_app_data(t, p);
    }
    if (imm) {
        t->cap++;
        write_immediate_ack(t, p, probe);
    }
    if (sp->probes && !p->ack_eliciting) {
        qk_frame f = {.type = QK_FT_PING};
        if (qk_tx_put_frame(t, p, &f)) qk_tx_record(p, &(qk_sent_frame){.kind = QK_SF_PING});
    }
    if (sp->probes && p->ack_eliciting) sp->probes--;
}

static void finish_packet(qk_tx_ctx *t, qk_tx_pkt *p, size_t pad_to)
{
    qk_conn *c = t->c;
    /* Header protection samples 16 bytes starting 4 after the pn (RFC 9001 §5.4.2). */
    size_t min_end = p->pn_off + 4;
    if (p->end < min_end) {
        memset(t->buf + p->end, 0, min_end - p->end);
        p->end = min_end;
    }
    if (pad_to && p->end + QK_AEAD_TAG_BYTES < pad_to) {
        size_t add = pad_to - (p->end + QK_AEAD_TAG_BYTES);
        memset(t->buf + p->end, 0, add);
        p->end += add;
        p->in_flight = true;
    }
    size_t payload_len = p->end - p->payload;
    if (p->type != QK_PKT_1RTT)
        qk_pkt_patch_length(t->buf, p->length_off, p->pn_len + payload_len + QK_AEAD_TAG_BYTES);
    qk_qlog_packet(c, true, p->type, p->pn, p->end + QK_AEAD_TAG_BYTES - p->start,
                   t->buf + p->payload, payload_len, t->now);
    qk_trace_emit(c, true, p->type, p->pn, p->end + QK_AEAD_TAG_BYTES - p->start,
                  t->buf + p->payload, payload_len, t->now);
    qk_pkt_keys *k = p->type == QK_PKT_0RTT ? &c->zrtt.early : &c->sp[p->space].tx;
    size_t hdr_len = p->payload - p->start;
    if (p->n_ext) {
        /* Gather: in-place runs of the packet interleaved with the stream
         * bytes still in their send buffers; ciphertext lands in place. */
        qk_aead_seg seg[QK_AEAD_MAX_SEGS];
        size_t n = 0, at = p->payload;
        for (size_t i = 0; i < p->n_ext; i++) {
            const qk_tx_ext *e = &p->ext[i];
            if (e->at > at) seg[n++] = (qk_aead_seg){t->buf + at, e->at - at};
            seg[n++] = (qk_aead_seg){e->src, e->len};
            at = e->at + e->len;
        }
        if (p->end > at) seg[n++] = (qk_aead_seg){t->buf + at, p->end - at};
        qk_pkt_seal_gather(k, p->pn, t->buf + p->start, hdr_len, seg, n, payload_len,
                           t->buf + p->payload);
    } else {
        qk_pkt_seal(k, p->pn, t->buf + p->start, hdr_len, t->buf + p->payload, payload_len);
    }
    p->end += QK_AEAD_TAG_BYTES;
    qk_hp_protect(k, t->buf + p->start, p->end - p->start, p->pn_off - p->start);
}

/* RFC 9002 §7.8: the window may only grow when it was the limit. The
 * sender counts as cwnd-limited when the most bytes in flight over the last
 * round trip (this packet included) came within three datagrams of cwnd, or,
 * in slow start where the window may double per round trip, reached half of
 * it. Taking the maximum over a round trip keeps a paced sender (gain >= 1.25,
 * pacer.h) cwnd-limited: pacing delays packets within a round, it does not
 * leave the window unused over one. Application-, flow-control- and
 * CPU-limited senders are not cwnd-limited. */
static bool cwnd_limited(qk_conn *c, uint64_t inflight_after, qk_time now)
{
    uint64_t cwnd = c->cc.cwnd_bytes, mds = c->max_udp_bytes;
    uint64_t flight = qk_recovery_recent_max_in_flight(&c->rec, inflight_after, now);
    if (flight + 3 * mds >= cwnd) return true;
    return qk_cc_in_slow_start(&c->cc) && 2 * flight >= cwnd;
}

static void commit_packet(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    qk_sent_packet sp = {.pn = p->pn,
                         .time_sent = t->now,
                         .size_bytes = (uint32_t)(p->end - p->start),
                         .ack_eliciting = p->ack_eliciting,
                         .in_flight = p->in_flight || p->ack_eliciting,
                         .is_pmtu_probe = p->is_probe};
    c->sp[p->space].next_pn++;
    if (p->space == QK_PN_SPACE_APP) {
        c->ku.tx_pkts++; /* RFC 9001 §6.6 */
        c->ku.tx_since_own++;
    }
    /* Every packet of the datagram carries its codepoint (set by the endpoint
     * from qk_conn_tx_ecn, evaluated before any of them is committed). */
    sp.ecn = t->ecn;
    if (sp.ecn == QK_ECN_ECT0) c->stats.pkts_sent_ect0++;
    if (sp.ecn == QK_ECN_ECT1) c->stats.pkts_sent_ect1++;
    if (sp.ecn != QK_ECN_NOT_ECT && c->rec.ecn_state == QK_ECN_STATE_TESTING)
        c->rec.ecn_testing_sent++;
    if (sp.in_flight) qk_pacer_on_sent(&c->pacer, sp.size_bytes, t->now);
    uint64_t after = qk_recovery_bytes_in_flight(&c->rec) + (sp.in_flight ? sp.size_bytes : 0);
    /* Lost feedback (path/feedback.h): while degraded, ACKs grow nothing. */
    sp.app_limited = c->fb.degraded || !cwnd_limited(c, after, t->now);
    if (sp.in_flight) {
        c->cwnd_limited = !sp.app_limited; /* the pacer's gain (pacer.h) */
        if (sp.app_limited) c->stats.pkts_sent_not_cwnd_limited++;
    }
    qk_recovery_on_packet_sent(&c->rec, p->space, &sp, p->frames, p->n_frames, t->now);
    qk_qlog_metrics(c, t->now); /* bytes_in_flight with this packet counted */
    if (p->ack_eliciting) {
        c->timers.last_ack_eliciting_sent = t->now;
        qk_feedback_on_sent(&c->fb, t->now);
    }
    c->stats.pkts_sent++;
    if (p->type == QK_PKT_0RTT) c->stats.zerortt_pkts_sent++;
    if (p->type == QK_PKT_1RTT && c->first_1rtt_pn == UINT64_MAX) c->first_1rtt_pn = p->pn;
    /* RFC 9001 §4.9.1: the client discards Initial keys when it first sends Handshake. */
    if (!c->is_server && p->space == QK_PN_SPACE_HANDSHAKE) c->sent_handshake = true;
}

/* Window and pacer had room but nothing was ready: application-limited
 * (draft-ietf-ccwg-bbr §4.1.2.4, for the delivery-rate sampler), and for the
 * pacer idle, not late (pacer.h QK_PACER_MAX_LATE_NS). */
static void nothing_ready(qk_conn *c)
{
    if (c->cc.pacing_rate_bytes_per_s) qk_recovery_mark_app_limited(&c->rec);
    qk_pacer_on_idle(&c->pacer);
}

/* One CONNECTION_CLOSE packet in space s; false when it does not fit. */
static bool close_packet(qk_tx_ctx *t, qk_pn_space s)
{
    qk_conn *c = t->c;
    if (!open_packet(t, s)) return false;
    qk_tx_pkt *p = &t->pkts[t->n];
    /* RFC 9000 §10.2.3: a 0x1d close in an Initial or Handshake packet
     * becomes 0x1c with APPLICATION_ERROR (0xc). */
    qk_frame f = {.type = c->close.app && s == QK_PN_SPACE_APP ? QK_FT_CONNECTION_CLOSE_APP
                                                               : QK_FT_CONNECTION_CLOSE};
    f.u.close.error_code = c->close.app && s != QK_PN_SPACE_APP ? 0x0c : c->close.code;
    f.u.close.frame_type = c->close.frame_type;
    f.u.close.reason = (const uint8_t *)c->close.reason;
    f.u.close.reason_len = strlen(c->close.reason);
    if (!qk_tx_put_frame(t, p, &f)) return false;
    t->len = p->end + QK_AEAD_TAG_BYTES;
    t->n++;
    return true;
}

static size_t build_close(qk_conn *c, uint8_t *buf, size_t cap, qk_time now)
{
    qk_tx_ctx t;
    tx_ctx_init(&t, c, buf, cap, now);
    t.cc_ok = true;
    /* RFC 9000 §10.2.3: before the handshake is confirmed the peer may lack
     * the keys of our highest space (a server's 1-RTT keys come before the
     * client's, a client's Handshake keys stay after the server dropped
     * its own): the close goes in every space we have keys for, coalesced;
     * after confirmation only 1-RTT is left. */
    int top = -1;
    for (int i = 0; i < QK_PN_SPACE_COUNT; i++)
        if (c->sp[i].has_tx && !c->sp[i].discarded) top = i;
    bool initial = false;
    /* Ascending spaces: a 1-RTT packet has no length and ends the datagram
     * (RFC 9000 §12.2). */
    for (int i = c->handshake_confirmed ? top : 0; top >= 0 && i <= top; i++) {
        if (!c->sp[i].has_tx || c->sp[i].discarded) continue;
        if (!close_packet(&t, (qk_pn_space)i)) break;
        initial |= i == QK_PN_SPACE_INITIAL;
    }
    if (!t.n) return 0;
    /* A client's Initial datagram is padded (RFC 9000 §14.1) through its
     * last packet. */
    size_t end = 0;
    for (size_t i = 0; i < t.n; i++) {
        qk_tx_pkt *p = &t.pkts[i];
        size_t pad = !c->is_server && initial && i + 1 == t.n ? MIN_INITIAL_DGRAM : 0;
        finish_packet(&t, p, pad);
        c->sp[p->space].next_pn++;
        end = p->end;
    }
    c->close.send = false;
    if (c->timers.close_deadline == QK_TIME_INFINITE)
        c->timers.close_deadline = now + 3 * qk_conn_pto_ns(c);
    return end;
}

/* RFC 9000 §14.4: a DPLPMTUD probe is one 1-RTT packet of PING and PADDING
 * (plus an ACK if one is owed) filling a datagram of exactly `size` bytes. */
static size_t build_pmtu_probe(qk_tx_ctx *t, size_t size)
{
    qk_conn *c = t->c;
    t->cap = size;
    if (!open_packet(t, QK_PN_SPACE_APP)) return 0;
    qk_tx_pkt *p = &t->pkts[0];
    p->is_probe = true;
    if (qk_ack_has_new(&c->sp[QK_PN_SPACE_APP].ack)) write_ack(t, p);
    qk_frame f = {.type = QK_FT_PING};
    if (!qk_tx_put_frame(t, p, &f)) return 0;
    qk_tx_record(p, &(qk_sent_frame){.kind = QK_SF_PING});
    t->n = 1;
    finish_packet(t, p, size);
    commit_packet(t, p);
    qk_pmtud_on_probe_sent(&c->pmtud, (uint32_t)p->end);
    return p->end;
}

/* A probe when DPLPMTUD wants one and the path allows it; 0 otherwise. */
static size_t maybe_pmtu_probe(qk_tx_ctx *t, size_t buf_cap)
{
    qk_conn *c = t->c;
    if (!c->pmtud.enabled || !c->handshake_confirmed || !c->address_validated ||
        !c->paths.cur.validated || !t->cc_ok || c->state != QK_CONN_ESTABLISHED ||
        !c->sp[QK_PN_SPACE_APP].has_tx)
        return 0;
    if (!c->pmtud_started) {
        c->pmtud_started = true;
        qk_pmtud_start(&c->pmtud, t->now);
    }
    uint32_t size = qk_pmtud_probe_size(&c->pmtud, t->now);
    uint64_t inflight = qk_recovery_bytes_in_flight(&c->rec);
    if (!size || size > buf_cap || inflight + size > c->cc.cwnd_bytes) return 0;
    return build_pmtu_probe(t, size);
}

/* RFC 9000 §8.2.1, §9.1: a datagram on the other path `a` carrying its
 * PATH_CHALLENGE and/or PATH_RESPONSE, expanded to 1200 bytes unless the
 * amplification budget of an unvalidated address forbids it. */
static size_t build_path_probe(qk_conn *c, qk_path *a, uint8_t *buf, size_t cap, qk_time now)
{
    uint64_t allow = c->is_server ? qk_path_allowance(a) : UINT64_MAX;
    if (allow < cap) cap = (size_t)allow;
    if (cap < 64) return 0;
    qk_tx_ctx t;
    tx_ctx_init(&t, c, buf, cap, now);
    t.cc_ok = true;
    size_t cur = c->cids.rcid_cur;
    c->cids.rcid_cur = a->dcid_idx; /* RFC 9000 §9.5: the path's own connection ID */
    bool ok = open_packet(&t, QK_PN_SPACE_APP);
    c->cids.rcid_cur = cur;
    if (!ok) return 0;
    qk_tx_pkt *p = &t.pkts[0];
    qk_frame f;
    bool challenge = false;
    if (a->challenge_due) {
        f = (qk_frame){.type = QK_FT_PATH_CHALLENGE};
        memcpy(f.u.path.data, a->challenge, 8);
        if ((challenge = qk_tx_put_frame(&t, p, &f)))
            qk_tx_record(p, &(qk_sent_frame){.kind = QK_SF_PATH_CHALLENGE});
    }
    if (a->response_due) {
        f = (qk_frame){.type = QK_FT_PATH_RESPONSE};
        memcpy(f.u.path.data, a->response, 8);
        if (qk_tx_put_frame(&t, p, &f)) a->response_due = false;
    }
    if (p->end == p->payload) return 0;
    t.n = 1;
    finish_packet(&t, p, cap < QK_PATH_MIN_DGRAM_BYTES ? cap : QK_PATH_MIN_DGRAM_BYTES);
    commit_packet(&t, p);
    if (challenge) {
        qk_path_on_challenge_sent(a, qk_conn_pto_ns(c), now);
        c->stats.path_challenges_sent++;
    }
    a->tx_bytes += p->end;
    c->paths.dg_local = a->local;
    c->paths.dg_peer = a->peer;
    return p->end;
}

/* The datagram size the congestion window leaves room for: a full one, or
 * the remainder when that is at least half a datagram; 0 for none.
 * RFC 9002 §7 limits bytes, not packets ("MUST NOT send a packet if it
 * would cause bytes_in_flight ... to be larger than the congestion
 * window"), so a shorter last packet may fill the window. Not below half a
 * datagram: a lost datagram costs a window reduction whatever its size, and
 * on a 5 %-loss path with 4-8 packet windows filling from half a datagram
 * up raised goodput 4 % in the simulator (tests/sim/test_quic_loss.c) while
 * any remainder (down to 100 B) lowered it. */
static uint64_t cwnd_room_bytes(const qk_conn *c)
{
    uint64_t inflight = qk_recovery_bytes_in_flight(&c->rec);
    /* The allowance for the packets the peer holds under our ACK_FREQUENCY
     * threshold (ackfreq.c) is an opt-in experiment that relaxes §7. */
    uint64_t allow = c->cfg->ack_frequency_cwnd_allowance
                         ? qk_ackfreq_cwnd_allowance(&c->af, c->cc.cwnd_bytes, c->max_udp_bytes)
                         : 0;
    uint64_t limit = c->cc.cwnd_bytes + allow;
    uint64_t room = limit > inflight ? limit - inflight : 0;
    if (room >= c->max_udp_bytes) return c->max_udp_bytes;
    return 2 * room >= c->max_udp_bytes ? room : 0;
}

/* Whether a shorter datagram may fill the window's remainder
 * (cwnd_room_bytes): once only 1-RTT packets go (Initials are padded to
 * 1200 bytes, RFC 9000 §14.1), and for a window-based controller: a
 * rate-based one (BBR) paces, and its cwnd is a cap above the BDP
 * (draft-ietf-ccwg-bbr §5.6.4), not the working limit. */
static bool fill_ok(const qk_conn *c)
{
    return c->handshake_confirmed && !c->cc.pacing_rate_bytes_per_s &&
           /* marks come per packet: shorter fill-ins only draw more marks
            * per byte (the L4S test: Prague 38 -> 17 Mbit/s beside CUBIC) */
           !qk_conn_cc_scalable(c->cfg);
}

/* The least pacer bucket depth, in datagrams. RFC 9002 §7.7 caps a burst at
 * the initial window (QK_PACER_DEFAULT_BURST_PKTS) for a window-based
 * controller. A rate-based one (BBR) sizes its own aggregates:
 * draft-ietf-ccwg-bbr §5.6.3 C.send_quantum, 1 ms at the pacing rate and at
 * least 2 SMSS, so no floor above it. With the initial-window floor BBR at
 * ~60 Mbit/s (quantum 5 datagrams) sent 10 back to back after every pause,
 * e.g. when a Wi-Fi suspension ends (docs/experiments/media.md). RFC 9331
 * §4.3: an L4S sender keeps its bursts within the L queue's ~1 ms marking
 * threshold (QK_PACER_L4S_BURST_PKTS). DCTCP too (RFC 8257 §3.5 cuts on
 * the share of its packets marked): with an initial-window bucket its
 * 3-8 packet windows at 100 us RTT left as ACK-clocked bursts, each
 * connection's packets kept their place in a step-marked queue's sawtooth
 * from round to round, and the connection ahead drew fewer marks and held
 * twice the rate of the one behind (incast 1 Gbit/s: 1 MB RPC medians 44.7
 * vs 85.0 ms). Spread out, every connection samples the queue alike
 * (docs/experiments/incast.md). */
static uint64_t pacer_floor_pkts(const qk_conn *c)
{
    if (c->cfg->pacing_burst_pkts) return c->cfg->pacing_burst_pkts;
    if (qk_conn_cc_scalable(c->cfg)) return QK_PACER_L4S_BURST_PKTS;
    if (c->cc.pacing_rate_bytes_per_s) return 1; /* the controller's quantum rules */
    return QK_PACER_DEFAULT_BURST_PKTS;
}

/* RFC 9002 §7, §7.7: the congestion window has room (cwnd_room_bytes) and
 * the pacer lets a datagram go now (else c->pacing_wait says when). */
static bool cc_allows(qk_conn *c, qk_time now)
{
    uint64_t room = cwnd_room_bytes(c);
    bool ok = room >= c->max_udp_bytes || (room && fill_ok(c));
    if (ok) {
        qk_pacer_set_slow_start(&c->pacer, c->cc.state == QK_CC_SLOW_START);
        qk_pacer_set_window_limited(&c->pacer, c->cwnd_limited);
        uint64_t burst = qk_ackfreq_pacer_burst_pkts(&c->af);
        uint64_t floor = pacer_floor_pkts(c);
        qk_pacer_set_burst_pkts(&c->pacer, burst > floor ? burst : floor);
        /* A rate-based controller (BBR) sets the pacing rate itself. */
        qk_time when =
            c->cc.pacing_rate_bytes_per_s
                ? qk_pacer_next_send_time_cc(&c->pacer, now, &c->cc, c->rtt.smoothed_rtt_ns)
                : qk_pacer_next_send_time(&c->pacer, now, c->cc.cwnd_bytes, c->rtt.smoothed_rtt_ns,
                                          c->max_udp_bytes);
        if (when > now) {
            ok = false;
            c->pacing_wait = when;
        }
    }
    return ok;
}

#define BYPASS_MIN_BYTES 128 /* below this the bucket waits to refill */

/* With a bypass configured: packets are outstanding and no ACK
 * has come for half the path's min RTT plus the timer granularity (since
 * the last ACK, or since the first packet after an idle spell). We ask for
 * an ACK at the end of every burst (IMMEDIATE_ACK, ack-frequency §8.1), so
 * on a working path they keep coming; silence means the link (a Wi-Fi
 * suspension) has stopped. Until an ACK arrives only urgent data leaves,
 * through the bypass: anything else sent now would wait in the suspended
 * link's queue ahead of the urgent frames written after it (media-wifi:
 * audio +5.4 ms over its floor without this rule, docs/experiments/media.md).
 * Sending less than the window allows is always permitted (RFC 9002 §7:
 * the window is a limit); ACKs and PTO probes (§6.2.4) still go. A false
 * alarm costs non-urgent data the wait for the next ACK. */
static bool feedback_late(const qk_conn *c, qk_time now)
{
    if (c->bypass_limit && c->fb_oracle) return c->fb_oracle(c->fb_oracle_ctx, now);
    if (!c->bypass_limit || c->fb.wait_since == QK_TIME_INFINITE || !c->rtt.min_rtt_ns)
        return false;
    return now >= c->fb.wait_since + c->rtt.min_rtt_ns / 2 + QK_RTT_GRANULARITY_NS;
}

/* When cwnd or the pacer blocks, data of an urgency below
 * qk_config.bypass_urgency_limit may still go, within the bypass bucket (at
 * most its rate beyond the window). The datagram size the bucket allows now,
 * 0 for no bypass (then c->pacing_wait says when the bucket refills). */
static size_t bypass_cap(qk_conn *c, size_t cap, qk_time now)
{
    if (!c->bypass_limit || !c->handshake_complete || c->state != QK_CONN_ESTABLISHED ||
        c->fb.failed)
        return 0;
    qk_tx_ctx q = {.c = c, .bypass = true};
    bool urgent = next_datagram(&q) != NULL;
    /* Flow control is never bypassed: new stream bytes need credit. */
    if (!urgent && next_stream(&q))
        urgent = qk_flow_tx_available(&c->flow_tx) || lost_stream_data(c);
    if (!urgent) return 0;
    uint64_t tokens = qk_bypass_tokens(&c->bypass, now);
    if (tokens < BYPASS_MIN_BYTES) {
        qk_time at = qk_bypass_ready_at(&c->bypass, BYPASS_MIN_BYTES, now);
        if (!c->pacing_wait || at < c->pacing_wait) c->pacing_wait = at;
        return 0;
    }
    return tokens < cap ? (size_t)tokens : cap;
}

/* After a datagram went through the bypass: charge the bucket. */
static void bypass_charge(qk_conn *c, const qk_tx_ctx *t, size_t len)
{
    bool data = false;
    for (size_t i = 0; i < t->n; i++) data |= t->pkts[i].ack_eliciting;
    if (!data) return; /* an ACK alone is not congestion controlled anyway */
    qk_bypass_consume(&c->bypass, len, t->now);
    c->stats.bypass_pkts++;
    c->stats.bypass_bytes += len;
}

/* The datagram size allowed now: the path MTU, the 3x anti-amplification
 * limit before the address is validated (RFC 9000 §8.1) and toward an
 * unvalidated new peer address (§9.3); 0 when such a limit leaves less than
 * 64 bytes (not worth a packet). */
static size_t send_limit(const qk_conn *c, size_t cap)
{
    if (cap > c->max_udp_bytes) cap = c->max_udp_bytes;
    /* RFC 9000 §8.1: at most 3x the bytes received before address validation. */
    if (!c->address_validated) {
        uint64_t allow = 3 * c->unvalidated_rx_bytes;
        uint64_t left = allow > c->unvalidated_tx_bytes ? allow - c->unvalidated_tx_bytes : 0;
        if (left < cap) cap = (size_t)left;
        if (cap < 64) return 0;
    }
    /* RFC 9000 §9.3: toward an unvalidated new peer address, at most 3x
     * what it sent us until the address is validated. */
    uint64_t path_allow = c->is_server ? qk_path_allowance(&c->paths.cur) : UINT64_MAX;
    if (path_allow < cap) {
        cap = (size_t)path_allow;
        if (cap < 64) return 0;
    }
    return cap;
}

/* What may go now -- t->cc_ok (window and pacer), t->urgent_only (the
 * pipe limit holds non-urgent data), t->bypass (urgent data through the
 * bucket) -- and the datagram size that leaves. */
static size_t tx_gate(qk_tx_ctx *t, size_t cap)
{
    qk_conn *c = t->c;
    t->cc_ok = cc_allows(c, t->now) && !feedback_late(c, t->now);
    /* Non-urgent data beyond the pipe limit waits (pipe_limit_bytes). */
    if (t->cc_ok && qk_recovery_bytes_in_flight(&c->rec) >= pipe_limit_bytes(c, t->now))
        t->urgent_only = true;
    if (t->cc_ok && fill_ok(c) && cwnd_room_bytes(c) < cap) cap = (size_t)cwnd_room_bytes(c);
    size_t bcap = t->cc_ok ? 0 : bypass_cap(c, cap, t->now);
    if (bcap) {
        t->bypass = true;
        cap = bcap;
    }
    return cap;
}

size_t qk_conn_send(qk_conn *c, uint8_t *buf, size_t cap, qk_time now)
{
    size_t buf_cap = cap;
    c->paths.dg_local = c->local;
    c->paths.dg_peer = c->peer;
    if (c->state == QK_CONN_ESTABLISHED && c->paths.alt_active &&
        (c->paths.alt.challenge_due || c->paths.alt.response_due) &&
        c->sp[QK_PN_SPACE_APP].has_tx) {
        size_t n = build_path_probe(c, &c->paths.alt, buf, cap, now);
        if (n) {
            c->stats.bytes_sent += n;
            return n;
        }
    }
    if (c->state == QK_CONN_DRAINING || c->state == QK_CONN_CLOSED) return 0;
    cap = send_limit(c, cap);
    if (!cap) return 0;
    if (c->state == QK_CONN_CLOSING) {
        size_t n = c->close.send ? build_close(c, buf, cap, now) : 0;
        if (!c->address_validated) c->unvalidated_tx_bytes += n;
        return n;
    }
    if (!c->is_server && c->sent_handshake && !c->sp[QK_PN_SPACE_INITIAL].discarded)
        qk_conn_discard_space(c, QK_PN_SPACE_INITIAL, now);
    qk_conn_key_update_check(c, now);
    /* RFC 8899 §4.3: acks and losses so far say the larger size is a black hole. */
    if (qk_pmtud_check(&c->pmtud, now)) qk_conn_set_mtu(c, c->pmtud.cur_bytes);
    qk_conn_flow_tick(c, now);

    /* No aggregate initialiser (~12 KiB of frame records); see open_packet. */
    qk_tx_ctx t;
    tx_ctx_init(&t, c, buf, cap, now);
    cap = tx_gate(&t, cap);
    size_t probe = maybe_pmtu_probe(&t, buf_cap);
    if (probe) {
        c->stats.bytes_sent += probe;
        return probe;
    }
    t.cap = cap;
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) {
        if (!space_wants_send(&t, (qk_pn_space)s)) continue;
        if (!open_packet(&t, (qk_pn_space)s)) break;
        qk_tx_pkt *p = &t.pkts[t.n];
        fill_packet(&t, p);
        if (p->end == p->payload) continue; /* nothing fit: drop the header */
        if (p->type == QK_PKT_INITIAL && (!c->is_server || p->ack_eliciting)) t.pad = true;
        t.len = p->end + QK_AEAD_TAG_BYTES;
        t.n++;
    }
    /* Holding data back under the pipe limit, the sender is
     * application-limited as far as BBR's rate samples go
     * (draft-ietf-ccwg-bbr §4.1.2.4): they measure the limit, not the path,
     * and must not lower the bandwidth estimate the limit is made of. */
    if (t.urgent_only) qk_recovery_mark_app_limited(&c->rec);
    if (t.n == 0 && t.cc_ok && !t.urgent_only) nothing_ready(c);
    if (t.n == 0) return 0;
    for (size_t i = 0; i < t.n; i++) {
        bool last = i + 1 == t.n;
        size_t pad_to = 0;
        if (last && t.pad) {
            pad_to =
                t.pkts[i].start +
                (MIN_INITIAL_DGRAM > t.pkts[i].start ? MIN_INITIAL_DGRAM - t.pkts[i].start : 0);
            if (pad_to > cap) pad_to = cap;
        }
        finish_packet(&t, &t.pkts[i], pad_to);
        commit_packet(&t, &t.pkts[i]);
    }
    size_t len = t.pkts[t.n - 1].end;
    if (t.bypass) bypass_charge(c, &t, len);
    c->stats.bytes_sent += len;
    if (!c->paths.cur.validated) c->paths.cur.tx_bytes += len;
    if (!c->address_validated) c->unvalidated_tx_bytes += len;
    qk_recovery_set_amplification_blocked(
        &c->rec, !c->address_validated && c->unvalidated_tx_bytes >= 3 * c->unvalidated_rx_bytes,
        now);
    return len;
}
