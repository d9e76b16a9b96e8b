/* SPDX-License-Identifier: MIT */
/* The DNS carrier's server side (see dns/carrier.h, docs/dns.md).
 *
 * Authoritative for one zone. A TXT query under the zone whose name decodes
 * to a carrier payload is held until downstream data for its client is
 * queued or its patience runs out (then it gets an empty answer), oldest
 * first. A name seen before (a resolver retransmitting on a new port with a
 * new ID) is not delivered again: if its first copy is still held, the held
 * entry takes the new ID and address; if it was answered, the same payload
 * is sent again, so the data of a lost answer is not lost. Everything else
 * gets the answer an authoritative server gives (SOA/NS at the apex, NODATA
 * under it, REFUSED outside, FORMERR / NOTIMP). */
#include "dns/carrier.h"

#include <stdlib.h>
#include <string.h>

#include "base/abi.h"

/* qk_dns_server_config crosses the boundary at the caller's sizeof
 * (base/abi.h): the first release's ends with max_held. */
#define SERVER_CONFIG_V1_BYTES QK_ABI_END(qk_dns_server_config, max_held)
QK_ABI_LAST_FIELD(qk_dns_server_config, max_held);

/* Answers remembered per client for resolver retransmissions: unbound
 * retransmits after 50..400 ms, and a client makes thousands of queries a
 * second (docs/experiments/dns.md), so 64 covered ~10 ms and most
 * duplicates of answered queries found nothing: the datagrams of the lost
 * answer were lost. 2048 cover ~300 ms at full speed; a two-choice hash
 * index over the ring finds them. */
#define REPLAY_SLOTS   2048
#define REPLAY_INDEX   8192 /* power of two */
#define IMM_SLOTS      64
#define IMM_BYTES      1280
#define MAX_ANSWER     QK_DNS_EDNS_BYTES /* we never answer larger */
#define CLIENT_IDLE_NS (60 * QK_NS_PER_S)

typedef struct held {
    qk_addr from;
    uint16_t id, flags;
    uint16_t edns; /* 0: the query had no OPT */
    qk_dns_name qname;
    uint64_t hash;
    qk_time at;
} held;

typedef struct dslot {
    uint16_t len;
    uint8_t data[QK_DNS_SERVER_DGRAM_MAX];
} dslot;

typedef struct replay {
    uint64_t hash;
    bool answered;
    uint16_t len;
    uint8_t data[MAX_ANSWER];
} replay;

typedef struct dcli {
    bool used;
    uint32_t id;
    qk_addr addr;
    qk_time last_seen, tok_at;
    double tokens;
    held *h;
    size_t h_head, h_n;
    dslot *q;
    size_t q_head, q_n;
    replay *r;
    uint32_t r_next; /* sequence number of the next replay slot */
    uint32_t *r_idx; /* REPLAY_INDEX buckets: sequence number + 1, 0 = empty */
} dcli;

typedef struct imm {
    qk_addr to;
    uint16_t len;
    uint8_t buf[IMM_BYTES];
} imm;

struct qk_dns_server {
    qk_dns_server_config cfg;
    qk_dns_name domain, ns_name, mbox;
    dcli *cl;
    size_t rr; /* round-robin cursor over clients */
    imm *out;
    size_t out_head, out_n;
    uint8_t up[QK_DNS_MAX_NAME_BYTES];
    qk_dns_server_stats st;
};

static void cli_free(dcli *c)
{
    free(c->h);
    free(c->q);
    free(c->r);
    free(c->r_idx);
    memset(c, 0, sizeof *c);
}

void qk_dns_server_del(qk_dns_server *s)
{
    if (!s) return;
    for (size_t i = 0; s->cl && i < s->cfg.max_clients; i++) cli_free(&s->cl[i]);
    free(s->cl);
    free(s->out);
    free(s);
}

static int prefixed_name(const char *label, const qk_dns_name *domain, qk_dns_name *out)
{
    size_t l = strlen(label);
    if (1 + l + domain->len > QK_DNS_MAX_NAME_BYTES) return QK_ERR_INVALID_ARG;
    out->wire[0] = (uint8_t)l;
    memcpy(out->wire + 1, label, l);
    memcpy(out->wire + 1 + l, domain->wire, domain->len);
    out->len = 1 + l + domain->len;
    return 0;
}

int qk_dns_server_new_sized(const qk_dns_server_config *caller, size_t caller_bytes,
                            qk_dns_server **out)
{
    if (!caller || !out) return QK_ERR_INVALID_ARG;
    qk_dns_server_config c = {0};
    const qk_dns_server_config *cfg = &c;
    int rc = qk_abi_copy_in(&c, sizeof c, caller, caller_bytes, SERVER_CONFIG_V1_BYTES);
    if (rc) return rc;
    if (!cfg->domain) return QK_ERR_INVALID_ARG;
    qk_dns_server *s = calloc(1, sizeof *s);
    if (!s) return QK_ERR_NOMEM;
    s->cfg = *cfg;
    if (!s->cfg.patience_ns) s->cfg.patience_ns = QK_DNS_PATIENCE_NS;
    if (!s->cfg.rate_qps) s->cfg.rate_qps = 20000;
    if (!s->cfg.rate_burst) s->cfg.rate_burst = 2000;
    if (!s->cfg.max_clients) s->cfg.max_clients = 64;
    if (!s->cfg.queue_pkts) s->cfg.queue_pkts = 256;
    if (!s->cfg.max_held) s->cfg.max_held = 256;
    if (qk_dns_name_from_text(cfg->domain, &s->domain) || s->domain.len < 2 ||
        prefixed_name("ns", &s->domain, &s->ns_name) ||
        prefixed_name("hostmaster", &s->domain, &s->mbox)) {
        free(s);
        return QK_ERR_INVALID_ARG;
    }
    s->cl = calloc(s->cfg.max_clients, sizeof *s->cl);
    s->out = calloc(IMM_SLOTS, sizeof *s->out);
    if (!s->cl || !s->out) {
        qk_dns_server_del(s);
        return QK_ERR_NOMEM;
    }
    *out = s;
    return 0;
}

static uint64_t name_hash(const qk_dns_name *n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, case-folded (RFC 4343) */
    for (size_t i = 0; i < n->len; i++) {
        uint8_t c = n->wire[i];
        if (c >= 'A' && c <= 'Z') c = (uint8_t)(c + 32);
        h = (h ^ c) * 1099511628211ull;
    }
    return h;
}

static dcli *find_client(qk_dns_server *s, uint32_t id, qk_time now, bool create)
{
    dcli *free_slot = NULL;
    for (size_t i = 0; i < s->cfg.max_clients; i++) {
        dcli *c = &s->cl[i];
        if (c->used && c->id == id) return c;
        if (!c->used && !free_slot) free_slot = c;
        if (c->used && !c->h_n && !free_slot && now - c->last_seen > CLIENT_IDLE_NS) {
            cli_free(c);
            free_slot = c;
        }
    }
    if (!create || !free_slot) return NULL;
    dcli *c = free_slot;
    c->h = calloc(s->cfg.max_held, sizeof *c->h);
    c->q = calloc(s->cfg.queue_pkts, sizeof *c->q);
    c->r = calloc(REPLAY_SLOTS, sizeof *c->r);
    c->r_idx = calloc(REPLAY_INDEX, sizeof *c->r_idx);
    if (!c->h || !c->q || !c->r || !c->r_idx) {
        cli_free(c);
        return NULL;
    }
    c->used = true;
    c->id = id;
    qk_dns_client_addr(id, &c->addr);
    c->tokens = s->cfg.rate_burst;
    c->tok_at = now;
    return c;
}

/* Per-client token bucket. */
static bool rate_ok(qk_dns_server *s, dcli *c, qk_time now)
{
    c->tokens += (double)(now - c->tok_at) * s->cfg.rate_qps / 1e9;
    c->tok_at = now;
    if (c->tokens > s->cfg.rate_burst) c->tokens = s->cfg.rate_burst;
    if (c->tokens < 1) return false;
    c->tokens -= 1;
    return true;
}

/* ---- answers ---- */

static uint16_t resp_flags(uint16_t qflags, int rcode)
{
    /* RFC 1035 §4.1.1: QR, AA (we are authoritative), RD copied, no RA. */
    return (uint16_t)(QK_DNS_FLAG_QR | QK_DNS_FLAG_AA | (qflags & QK_DNS_FLAG_RD) |
                      (qflags & 0x7800) | (rcode & 0xf));
}

static bool put_soa(qk_wr *w, const qk_dns_server *s)
{
    /* RFC 1035 §3.3.13; minimum 0 (RFC 2308: negative answers not cached). */
    size_t rdlen = s->ns_name.len + s->mbox.len + 20;
    return qk_wr_bytes(w, s->domain.wire, s->domain.len) && qk_wr_u16(w, QK_DNS_TYPE_SOA) &&
           qk_wr_u16(w, QK_DNS_CLASS_IN) && qk_wr_u32(w, 0) && qk_wr_u16(w, (uint16_t)rdlen) &&
           qk_wr_bytes(w, s->ns_name.wire, s->ns_name.len) &&
           qk_wr_bytes(w, s->mbox.wire, s->mbox.len) && qk_wr_u32(w, 1) && qk_wr_u32(w, 3600) &&
           qk_wr_u32(w, 600) && qk_wr_u32(w, 86400) && qk_wr_u32(w, 0);
}

static imm *imm_slot(qk_dns_server *s, const qk_addr *to)
{
    if (s->out_n == IMM_SLOTS) return NULL; /* drop: the resolver retries */
    imm *o = &s->out[(s->out_head + s->out_n) % IMM_SLOTS];
    o->to = *to;
    return o;
}

/* A non-carrier answer: rcode, and for NOERROR the apex SOA/NS or NODATA. */
static void answer_other(qk_dns_server *s, const qk_dns_msg *m, const qk_addr *from, int rcode,
                         bool apex)
{
    imm *o = imm_slot(s, from);
    if (!o) return;
    bool soa_an = rcode == 0 && apex && m->qtype == QK_DNS_TYPE_SOA;
    bool ns_an = rcode == 0 && apex && m->qtype == QK_DNS_TYPE_NS;
    /* RFC 2308 §2.1, §2.2: negative answers carry the SOA in authority. */
    bool soa_auth = (rcode == 0 || rcode == QK_DNS_RCODE_NXDOMAIN) && !soa_an && !ns_an;
    qk_wr w = qk_wr_make(o->buf, sizeof o->buf);
    bool ok = qk_dns_put_header(&w, m->id, resp_flags(m->flags, rcode), m->has_question,
                                soa_an || ns_an, soa_auth && m->has_question, m->has_edns);
    if (m->has_question) ok = ok && qk_dns_put_question(&w, &m->qname, m->qtype, m->qclass);
    if (soa_an || (soa_auth && m->has_question)) ok = ok && put_soa(&w, s);
    if (ns_an)
        ok = ok &&
             qk_dns_put_rr_ptr(&w, QK_DNS_TYPE_NS, 0, s->ns_name.wire, (uint16_t)s->ns_name.len);
    if (m->has_edns) ok = ok && qk_dns_put_opt(&w, QK_DNS_EDNS_BYTES);
    if (!ok) return;
    o->len = (uint16_t)(w.p - o->buf);
    s->out_n++;
    s->st.other++;
}

/* Payload bytes a TXT answer to h can hold. */
static size_t answer_room(const held *h)
{
    size_t size = h->edns ? h->edns : 512; /* RFC 1035 §4.2.1 without EDNS */
    if (size > MAX_ANSWER) size = MAX_ANSWER;
    size_t fixed =
        QK_DNS_HEADER_BYTES + h->qname.len + 4 + 12 + (h->edns ? QK_DNS_OPT_RR_BYTES : 0);
    if (size <= fixed + 1) return 0;
    size_t rd = size - fixed, p = rd - (rd + QK_DNS_TXT_STRING_MAX) / (QK_DNS_TXT_STRING_MAX + 1);
    while (p && qk_dns_txt_rdata_bytes(p) > rd) p--;
    return p;
}

static size_t build_txt(const held *h, const uint8_t *payload, size_t len, uint8_t *buf, size_t cap)
{
    qk_wr w = qk_wr_make(buf, cap);
    if (!qk_dns_put_header(&w, h->id, resp_flags(h->flags, 0), 1, 1, 0, h->edns ? 1 : 0) ||
        !qk_dns_put_question(&w, &h->qname, QK_DNS_TYPE_TXT, QK_DNS_CLASS_IN) ||
        !qk_dns_put_txt(&w, 0, payload, len) || /* TTL 0: never cached */
        (h->edns && !qk_dns_put_opt(&w, QK_DNS_EDNS_BYTES)))
        return 0;
    return (size_t)(w.p - buf);
}

/* The index bucket choice k (0, 1) of hash. */
static size_t replay_bucket(uint64_t hash, int k)
{
    return (size_t)(k ? hash >> 32 : hash) & (REPLAY_INDEX - 1);
}

/* The live replay slot bucket b points to, or NULL (empty, or overwritten). */
static replay *replay_at(dcli *c, size_t b)
{
    uint32_t seq = c->r_idx[b];
    if (!seq || c->r_next - (seq - 1) > REPLAY_SLOTS) return NULL;
    return &c->r[(seq - 1) % REPLAY_SLOTS];
}

static replay *find_replay(dcli *c, uint64_t hash)
{
    for (int k = 0; k < 2; k++) {
        replay *r = replay_at(c, replay_bucket(hash, k));
        if (r && r->hash == hash) return r;
    }
    return NULL;
}

/* A new replay slot for hash (the oldest in the ring), indexed in the
 * bucket of the two whose entry is gone or older. */
static replay *new_replay(dcli *c, uint64_t hash)
{
    uint32_t seq = c->r_next++;
    replay *r = &c->r[seq % REPLAY_SLOTS];
    r->hash = hash;
    r->answered = false;
    size_t b0 = replay_bucket(hash, 0), b1 = replay_bucket(hash, 1);
    size_t b = !replay_at(c, b0) || (replay_at(c, b1) && c->r_idx[b0] < c->r_idx[b1]) ? b0 : b1;
    c->r_idx[b] = seq + 1;
    return r;
}

/* A duplicate name (a resolver's retransmission). Returns true when handled. */
static bool on_duplicate(qk_dns_server *s, dcli *c, const held *nq)
{
    for (size_t i = 0; i < c->h_n; i++) {
        held *h = &c->h[(c->h_head + i) % s->cfg.max_held];
        if (h->hash != nq->hash) continue;
        /* Still held: answer the newest copy, the one the resolver waits for. */
        h->from = nq->from;
        h->id = nq->id;
        h->flags = nq->flags;
        h->edns = nq->edns;
        h->qname = nq->qname; /* its case may differ (0x20) */
        s->st.duplicates++;
        return true;
    }
    replay *r = find_replay(c, nq->hash);
    if (!r) return false;
    s->st.duplicates++;
    if (!r->answered) return true;
    imm *o = imm_slot(s, &nq->from);
    if (!o || r->len > answer_room(nq)) return true;
    o->len = (uint16_t)build_txt(nq, r->data, r->len, o->buf, sizeof o->buf);
    if (o->len) {
        s->out_n++;
        s->st.replayed++;
    }
    return true;
}

static void hold(qk_dns_server *s, dcli *c, const held *nq, qk_time now);

/* A TXT query whose name carries a payload for client c. */
static int on_carrier_query(qk_dns_server *s, const qk_dns_msg *m, const uint8_t *p, size_t n,
                            const qk_addr *from, qk_time now, qk_dns_upstream *up)
{
    uint32_t id = (uint32_t)p[0] << 8 | p[1];
    dcli *c = find_client(s, id, now, true);
    if (!c) return 0; /* table full: the resolver times out */
    c->last_seen = now;
    if (!rate_ok(s, c, now)) {
        s->st.rate_limited++;
        return 0;
    }
    s->st.queries++;
    held nq = {.from = *from,
               .id = m->id,
               .flags = m->flags,
               .edns = m->has_edns ? m->edns_size : 0,
               .qname = m->qname,
               .hash = name_hash(&m->qname),
               .at = now};
    if (on_duplicate(s, c, &nq)) return 0;
    new_replay(c, nq.hash);
    hold(s, c, &nq, now);
    if (p[2] != QK_DNS_KIND_DATA || n <= QK_DNS_HDR_BYTES) {
        s->st.polls++;
        return 0;
    }
    s->st.data_queries++;
    memmove(s->up, p + QK_DNS_HDR_BYTES, n - QK_DNS_HDR_BYTES);
    up->client = c->addr;
    up->data = s->up;
    up->len = n - QK_DNS_HDR_BYTES;
    return 1;
}

static int on_query(qk_dns_server *s, const uint8_t *msg, size_t len, const qk_addr *from,
                    qk_time now, qk_dns_upstream *up)
{
    qk_dns_msg m;
    int rc = qk_dns_decode(msg, len, &m);
    if (rc || (m.flags & QK_DNS_FLAG_QR)) {
        s->st.malformed++;
        /* RFC 1035 §4.1.1: FORMERR when the header could be read. */
        if (rc && len >= QK_DNS_HEADER_BYTES && !(msg[2] & 0x80)) {
            qk_dns_msg h = {.id = (uint16_t)(msg[0] << 8 | msg[1]),
                            .flags = (uint16_t)(msg[2] << 8 | msg[3])};
            answer_other(s, &h, from, QK_DNS_RCODE_FORMERR, false);
        }
        return 0;
    }
    if (QK_DNS_OPCODE(m.flags) != 0) {
        answer_other(s, &m, from, QK_DNS_RCODE_NOTIMP, false);
        return 0;
    }
    if (m.qdcount != 1) {
        answer_other(s, &m, from, QK_DNS_RCODE_FORMERR, false);
        return 0;
    }
    size_t prefix;
    if (!qk_dns_name_suffix(&m.qname, &s->domain, &prefix)) {
        answer_other(s, &m, from, QK_DNS_RCODE_REFUSED, false); /* not our zone */
        return 0;
    }
    uint8_t *p = s->up;
    int n = prefix ? qk_dns_name_payload(&m.qname, &s->domain, p, sizeof s->up) : -1;
    if (m.qtype != QK_DNS_TYPE_TXT || n < QK_DNS_HDR_BYTES + 1) {
        /* Not a carrier name: NODATA, never NXDOMAIN, so a resolver that
         * minimises names (RFC 9156) does not cut the zone off (RFC 8020). */
        answer_other(s, &m, from, QK_DNS_RCODE_NOERROR, prefix == 0);
        return 0;
    }
    return on_carrier_query(s, &m, p, (size_t)n, from, now, up);
}

int qk_dns_server_on_query_sized(qk_dns_server *s, const uint8_t *msg, size_t len,
                                 const qk_addr *from, qk_time now, qk_dns_upstream *up,
                                 size_t up_bytes)
{
    qk_dns_upstream u = {0};
    int rc = on_query(s, msg, len, from, now, &u);
    if (rc == 1) qk_abi_copy_out(up, up_bytes, &u, sizeof u);
    return rc;
}

static void answer_held_empty(qk_dns_server *s, dcli *c);

static void hold(qk_dns_server *s, dcli *c, const held *nq, qk_time now)
{
    (void)now;
    if (c->h_n == s->cfg.max_held) answer_held_empty(s, c); /* make room: oldest first */
    if (c->h_n == s->cfg.max_held) {                        /* output full: drop the oldest */
        c->h_head = (c->h_head + 1) % s->cfg.max_held;
        c->h_n--;
    }
    c->h[(c->h_head + c->h_n) % s->cfg.max_held] = *nq;
    c->h_n++;
}

static void remember(dcli *c, uint64_t hash, const uint8_t *payload, size_t len)
{
    replay *r = find_replay(c, hash);
    if (!r || len > sizeof r->data) return;
    r->answered = true;
    r->len = (uint16_t)len;
    if (len) memcpy(r->data, payload, len);
}

static void answer_held_empty(qk_dns_server *s, dcli *c)
{
    held *h = &c->h[c->h_head];
    imm *o = imm_slot(s, &h->from);
    if (!o) return;
    o->len = (uint16_t)build_txt(h, NULL, 0, o->buf, sizeof o->buf);
    remember(c, h->hash, NULL, 0);
    c->h_head = (c->h_head + 1) % s->cfg.max_held;
    c->h_n--;
    if (!o->len) return;
    s->out_n++;
    s->st.answers_empty++;
}

int qk_dns_server_push(qk_dns_server *s, const qk_addr *to, const uint8_t *dg, size_t len)
{
    if (len > QK_DNS_SERVER_DGRAM_MAX || !len) {
        s->st.dropped_down++;
        return QK_ERR_TOO_LARGE;
    }
    uint32_t id;
    if (qk_dns_addr_client(to, &id)) {
        s->st.dropped_down++;
        return QK_ERR_NOT_FOUND;
    }
    for (size_t i = 0; i < s->cfg.max_clients; i++) {
        dcli *c = &s->cl[i];
        if (!c->used || c->id != id) continue;
        if (c->q_n == s->cfg.queue_pkts) {
            s->st.dropped_down++;
            return QK_ERR_LIMIT;
        }
        dslot *d = &c->q[(c->q_head + c->q_n) % s->cfg.queue_pkts];
        d->len = (uint16_t)len;
        memcpy(d->data, dg, len);
        c->q_n++;
        return 0;
    }
    s->st.dropped_down++;
    return QK_ERR_NOT_FOUND;
}

bool qk_dns_server_wants_data(const qk_dns_server *s)
{
    for (size_t i = 0; i < s->cfg.max_clients; i++) {
        const dcli *c = &s->cl[i];
        /* Enough datagrams for every held query, plus two to pack small ones.
         * Only a client with queries held: one without (gone, or idle) would
         * keep this true forever, and what the endpoint sends next may be for
         * another client, whose queue would then overflow and drop (losses
         * the congestion controller takes for congestion). */
        if (c->used && c->h_n && c->q_n < s->cfg.queue_pkts && c->q_n < c->h_n + 2) return true;
    }
    return false;
}

/* Answer c's oldest held query with as many queued datagrams as fit. */
static size_t answer_with_data(qk_dns_server *s, dcli *c, uint8_t *buf, size_t cap, qk_addr *to)
{
    held *h = &c->h[c->h_head];
    size_t room = answer_room(h), n = 0, k = 0;
    uint8_t payload[MAX_ANSWER];
    while (c->q_n) {
        dslot *d = &c->q[c->q_head];
        if (2 + (size_t)d->len > room - n) {
            if (n) break;
            /* Fits no answer to this query: drop it (QUIC recovers). */
            c->q_head = (c->q_head + 1) % s->cfg.queue_pkts;
            c->q_n--;
            s->st.dropped_down++;
            continue;
        }
        payload[n] = (uint8_t)(d->len >> 8);
        payload[n + 1] = (uint8_t)d->len;
        memcpy(payload + n + 2, d->data, d->len);
        n += 2 + (size_t)d->len;
        k++;
        c->q_head = (c->q_head + 1) % s->cfg.queue_pkts;
        c->q_n--;
    }
    size_t len = build_txt(h, payload, n, buf, cap);
    *to = h->from;
    remember(c, h->hash, payload, n);
    c->h_head = (c->h_head + 1) % s->cfg.max_held;
    c->h_n--;
    if (len) {
        s->st.answers_data += k > 0;
        s->st.answers_empty += k == 0;
        s->st.dgrams_down += k;
    }
    return len;
}

size_t qk_dns_server_next_response(qk_dns_server *s, qk_time now, uint8_t *buf, size_t cap,
                                   qk_addr *to)
{
    for (;;) {
        if (s->out_n) {
            imm *o = &s->out[s->out_head];
            s->out_head = (s->out_head + 1) % IMM_SLOTS;
            s->out_n--;
            if (o->len > cap) continue;
            memcpy(buf, o->buf, o->len);
            *to = o->to;
            return o->len;
        }
        bool again = false;
        for (size_t k = 0; k < s->cfg.max_clients; k++) {
            dcli *c = &s->cl[(s->rr + k) % s->cfg.max_clients];
            if (!c->used || !c->h_n) continue;
            if (c->q_n) {
                s->rr = (s->rr + k + 1) % s->cfg.max_clients;
                size_t len = answer_with_data(s, c, buf, cap, to);
                if (len) return len;
                again = true;
                break;
            }
            if (now >= c->h[c->h_head].at + s->cfg.patience_ns) {
                answer_held_empty(s, c); /* into the output ring */
                again = true;
                break;
            }
        }
        if (!again && !s->out_n) return 0;
    }
}

qk_time qk_dns_server_next_timeout(const qk_dns_server *s)
{
    qk_time t = QK_TIME_INFINITE;
    for (size_t i = 0; i < s->cfg.max_clients; i++) {
        const dcli *c = &s->cl[i];
        if (!c->used || !c->h_n) continue;
        qk_time due = c->q_n ? 0 : c->h[c->h_head].at + s->cfg.patience_ns;
        if (due < t) t = due;
    }
    return s->out_n ? 0 : t;
}

void qk_dns_server_get_stats_sized(const qk_dns_server *s, qk_dns_server_stats *out,
                                   size_t out_bytes)
{
    qk_abi_copy_out(out, out_bytes, &s->st, sizeof s->st);
}
