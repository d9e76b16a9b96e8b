/* SPDX-License-Identifier: MIT */
/* Stream scheduler (RFC 9218 §4 semantics) and the CC-bypass token bucket. */
#include "transport/streams/sched.h"

static void list_init(qk_sched_list *l)
{
    l->head.next = l->head.prev = &l->head;
}

static bool list_empty(const qk_sched_list *l)
{
    return l->head.next == &l->head;
}

static void link_before(qk_sched_node *pos, qk_sched_node *n)
{
    n->prev = pos->prev;
    n->next = pos;
    pos->prev->next = n;
    pos->prev = n;
}

static void unlink_node(qk_sched_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = NULL;
}

void qk_sched_init(qk_sched *s)
{
    for (int u = 0; u < QK_SCHED_URGENCIES; u++) {
        list_init(&s->sequential[u]);
        list_init(&s->incremental[u]);
        s->bypass[u] = false;
    }
    s->count = 0;
    list_init(&s->blocked);
    s->blocked_count = 0;
}

void qk_sched_node_init(qk_sched_node *n, uint64_t stream_id)
{
    *n = (qk_sched_node){0};
    n->stream_id = stream_id;
    n->urgency = QK_SCHED_DEFAULT_URGENCY;
}

static void enqueue(qk_sched *s, qk_sched_node *n)
{
    if (n->incremental) {
        link_before(&s->incremental[n->urgency].head, n); /* tail of the round */
    } else {
        /* RFC 9218 §4.2: non-incremental streams go one at a time; serve
         * them in stream-id order (keep the list sorted). */
        qk_sched_list *l = &s->sequential[n->urgency];
        qk_sched_node *pos = l->head.next;
        while (pos != &l->head && pos->stream_id < n->stream_id) pos = pos->next;
        link_before(pos, n);
    }
    n->queued = true;
    s->count++;
}

int qk_sched_add(qk_sched *s, qk_sched_node *n, uint8_t urgency, bool incremental)
{
    if (urgency >= QK_SCHED_URGENCIES) return QK_ERR_INVALID_ARG;
    if (n->queued) return 0;
    qk_sched_remove(s, n); /* out of the credit-blocked set, if there */
    n->urgency = urgency;
    n->incremental = incremental;
    enqueue(s, n);
    return 0;
}

void qk_sched_remove(qk_sched *s, qk_sched_node *n)
{
    if (n->blocked) {
        unlink_node(n);
        n->blocked = false;
        s->blocked_count--;
        return;
    }
    if (!n->queued) return;
    unlink_node(n);
    n->queued = false;
    s->count--;
}

void qk_sched_block(qk_sched *s, qk_sched_node *n)
{
    if (n->blocked) return;
    qk_sched_remove(s, n);
    link_before(&s->blocked.head, n); /* in the order they ran out */
    n->blocked = true;
    s->blocked_count++;
}

qk_sched_node *qk_sched_unblock(qk_sched *s)
{
    if (list_empty(&s->blocked)) return NULL;
    qk_sched_node *n = s->blocked.head.next;
    qk_sched_remove(s, n);
    return n;
}

static qk_sched_node *first_at(const qk_sched *s, int u)
{
    if (!list_empty(&s->sequential[u])) return s->sequential[u].head.next;
    if (!list_empty(&s->incremental[u])) return s->incremental[u].head.next;
    return NULL;
}

qk_sched_node *qk_sched_next(const qk_sched *s)
{
    if (s->count == 0) return NULL;
    /* RFC 9218 §4.1: lower urgency values first. */
    for (int u = 0; u < QK_SCHED_URGENCIES; u++) {
        qk_sched_node *n = first_at(s, u);
        if (n) return n;
    }
    return NULL;
}

qk_sched_node *qk_sched_next_bypass(const qk_sched *s, uint8_t max_urgency)
{
    if (s->count == 0) return NULL;
    for (int u = 0; u < QK_SCHED_URGENCIES && u <= max_urgency; u++) {
        if (!s->bypass[u]) continue;
        qk_sched_node *n = first_at(s, u);
        if (n) return n;
    }
    return NULL;
}

int qk_sched_requeue(qk_sched *s, qk_sched_node *n)
{
    if (!n->queued) return QK_ERR_STATE;
    if (!n->incremental) return 0; /* keeps the head until drained */
    /* RFC 9218 §4.2: incremental streams share bandwidth round-robin. */
    unlink_node(n);
    link_before(&s->incremental[n->urgency].head, n);
    return 0;
}

int qk_sched_set_priority(qk_sched *s, qk_sched_node *n, uint8_t urgency, bool incremental)
{
    if (urgency >= QK_SCHED_URGENCIES) return QK_ERR_INVALID_ARG;
    if (n->queued && n->urgency == urgency && n->incremental == incremental) return 0;
    if (n->blocked) { /* stays blocked; qk_sched_add sets the priority when it returns */
        n->urgency = urgency;
        n->incremental = incremental;
        return 0;
    }
    bool was_queued = n->queued;
    qk_sched_remove(s, n);
    n->urgency = urgency;
    n->incremental = incremental;
    if (was_queued) enqueue(s, n);
    return 0;
}

void qk_sched_set_bypass(qk_sched *s, uint8_t urgency, bool bypass)
{
    if (urgency < QK_SCHED_URGENCIES) s->bypass[urgency] = bypass;
}

void qk_bypass_init(qk_bypass_bucket *b, uint64_t rate_bps, uint64_t burst_bytes, qk_time now)
{
    b->rate_bps = rate_bps;
    b->burst_bytes = burst_bytes;
    b->tokens = burst_bytes;
    b->frac = 0;
    b->last_ns = now;
}

static void bypass_refill(qk_bypass_bucket *b, qk_time now)
{
    if (now <= b->last_ns) return;
    qk_time dt = now - b->last_ns;
    b->last_ns = now;
    if (b->tokens >= b->burst_bytes) {
        b->frac = 0;
        return;
    }
    /* tokens += rate * dt / 1e9, remainder carried in frac (byte*ns). */
    unsigned __int128 num = (unsigned __int128)dt * b->rate_bps + b->frac;
    unsigned __int128 add = num / QK_NS_PER_S;
    if (add >= b->burst_bytes - b->tokens) {
        b->tokens = b->burst_bytes;
        b->frac = 0;
    } else {
        b->tokens += (uint64_t)add;
        b->frac = (uint64_t)(num % QK_NS_PER_S);
    }
}

bool qk_bypass_can(qk_bypass_bucket *b, uint64_t bytes, qk_time now)
{
    bypass_refill(b, now);
    return b->tokens >= bytes;
}

int qk_bypass_consume(qk_bypass_bucket *b, uint64_t bytes, qk_time now)
{
    bypass_refill(b, now);
    if (b->tokens < bytes) return QK_ERR_AGAIN;
    b->tokens -= bytes;
    return 0;
}

uint64_t qk_bypass_tokens(qk_bypass_bucket *b, qk_time now)
{
    bypass_refill(b, now);
    return b->tokens;
}

qk_time qk_bypass_ready_at(qk_bypass_bucket *b, uint64_t bytes, qk_time now)
{
    bypass_refill(b, now);
    if (b->tokens >= bytes) return now;
    if (bytes > b->burst_bytes || !b->rate_bps) return QK_TIME_INFINITE;
    /* (bytes - tokens) * 1e9 - frac byte*ns still to accrue, rounded up. */
    unsigned __int128 need = (unsigned __int128)(bytes - b->tokens) * QK_NS_PER_S - b->frac;
    qk_time from = b->last_ns > now ? b->last_ns : now; /* tokens accrue from last_ns */
    return from + (qk_time)((need + b->rate_bps - 1) / b->rate_bps);
}
