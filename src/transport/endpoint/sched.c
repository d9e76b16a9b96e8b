/* SPDX-License-Identifier: MIT */
/* Timer heap, ready list and reset-token index of the endpoint (sched.h). */
#include "transport/endpoint/sched.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/token.h"

void qk_ep_sched_init(qk_ep_sched *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->rt_seed = seed;
}

void qk_ep_sched_free(qk_ep_sched *s)
{
    free(s->heap);
    free(s->rt);
    memset(s, 0, sizeof *s);
}

/* ---- timer heap ---- */

static void heap_place(qk_ep_sched *s, size_t i, qk_conn *c)
{
    s->heap[i] = c;
    c->ep.heap_idx = i;
}

static void sift_up(qk_ep_sched *s, size_t i)
{
    qk_conn *c = s->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (s->heap[p]->ep.heap_t <= c->ep.heap_t) break;
        heap_place(s, i, s->heap[p]);
        i = p;
    }
    heap_place(s, i, c);
}

static void sift_down(qk_ep_sched *s, size_t i)
{
    qk_conn *c = s->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        qk_time mt = c->ep.heap_t;
        if (l < s->heap_len && s->heap[l]->ep.heap_t < mt) m = l, mt = s->heap[l]->ep.heap_t;
        if (l + 1 < s->heap_len && s->heap[l + 1]->ep.heap_t < mt) m = l + 1;
        if (m == i) break;
        heap_place(s, i, s->heap[m]);
        i = m;
    }
    heap_place(s, i, c);
}

void qk_ep_timer_remove(qk_ep_sched *s, qk_conn *c)
{
    size_t i = c->ep.heap_idx;
    if (i >= s->heap_len || s->heap[i] != c) return;
    c->ep.heap_idx = SIZE_MAX;
    qk_conn *last = s->heap[--s->heap_len];
    if (i == s->heap_len) return;
    heap_place(s, i, last);
    sift_up(s, i);
    sift_down(s, last->ep.heap_idx);
}

int qk_ep_timer_set(qk_ep_sched *s, qk_conn *c, qk_time t)
{
    if (t == QK_TIME_INFINITE) {
        qk_ep_timer_remove(s, c);
        return 0;
    }
    size_t i = c->ep.heap_idx;
    if (i < s->heap_len && s->heap[i] == c) {
        qk_time old = c->ep.heap_t;
        c->ep.heap_t = t;
        if (t < old)
            sift_up(s, i);
        else if (t > old)
            sift_down(s, i);
        return 0;
    }
    if (s->heap_len == s->heap_cap) {
        size_t cap = s->heap_cap ? s->heap_cap * 2 : 64;
        qk_conn **n = realloc(s->heap, cap * sizeof *n);
        if (!n) return QK_ERR_NOMEM;
        s->heap = n;
        s->heap_cap = cap;
    }
    c->ep.heap_t = t;
    heap_place(s, s->heap_len++, c);
    sift_up(s, s->heap_len - 1);
    return 0;
}

/* ---- ready list ---- */

void qk_ep_ready_push(qk_ep_sched *s, qk_conn *c)
{
    if (c->ep.ready) return;
    c->ep.ready = true;
    c->ep.rnext = NULL;
    c->ep.rprev = s->ready_tail;
    if (s->ready_tail)
        s->ready_tail->ep.rnext = c;
    else
        s->ready_head = c;
    s->ready_tail = c;
    s->ready_len++;
}

void qk_ep_ready_remove(qk_ep_sched *s, qk_conn *c)
{
    if (!c->ep.ready) return;
    if (c->ep.rprev)
        c->ep.rprev->ep.rnext = c->ep.rnext;
    else
        s->ready_head = c->ep.rnext;
    if (c->ep.rnext)
        c->ep.rnext->ep.rprev = c->ep.rprev;
    else
        s->ready_tail = c->ep.rprev;
    c->ep.rnext = c->ep.rprev = NULL;
    c->ep.ready = false;
    s->ready_len--;
}

void qk_ep_ready_rotate(qk_ep_sched *s, qk_conn *c)
{
    if (s->ready_tail == c) return;
    qk_ep_ready_remove(s, c);
    qk_ep_ready_push(s, c);
}

/* ---- reset tokens ---- */

static uint64_t rt_hash(const qk_ep_sched *s, const uint8_t *t)
{
    uint64_t h = 1469598103934665603ull ^ s->rt_seed;
    for (size_t i = 0; i < QK_RESET_TOKEN_LEN; i++) h = (h ^ t[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static int rt_rebuild(qk_ep_sched *s)
{
    size_t cap = !s->rt_cap ? 64 : (s->rt_used + 1) * 4 > s->rt_cap ? s->rt_cap * 2 : s->rt_cap;
    qk_rt_entry *n = calloc(cap, sizeof *n), *old = s->rt;
    if (!n) return QK_ERR_NOMEM;
    size_t oc = s->rt_cap;
    s->rt = n;
    s->rt_cap = cap;
    s->rt_used = s->rt_tombs = 0;
    for (size_t i = 0; i < oc; i++)
        if (old[i].used) qk_ep_rt_add(s, old[i].token, old[i].conn);
    free(old);
    return 0;
}

int qk_ep_rt_add(qk_ep_sched *s, const uint8_t token[QK_RESET_TOKEN_LEN], qk_conn *c)
{
    if ((s->rt_used + s->rt_tombs + 1) * 2 > s->rt_cap) {
        int rc = rt_rebuild(s);
        if (rc) return rc;
    }
    size_t mask = s->rt_cap - 1;
    for (size_t i = rt_hash(s, token) & mask;; i = (i + 1) & mask) {
        qk_rt_entry *e = &s->rt[i];
        if (e->used) continue;
        if (e->tomb) s->rt_tombs--;
        memcpy(e->token, token, QK_RESET_TOKEN_LEN);
        e->conn = c;
        e->used = true;
        e->tomb = false;
        s->rt_used++;
        return 0;
    }
}

void qk_ep_rt_remove(qk_ep_sched *s, const uint8_t token[QK_RESET_TOKEN_LEN], qk_conn *c)
{
    if (!s->rt_cap) return;
    size_t mask = s->rt_cap - 1;
    for (size_t i = rt_hash(s, token) & mask, n = 0; n < s->rt_cap; i = (i + 1) & mask, n++) {
        qk_rt_entry *e = &s->rt[i];
        if (!e->used && !e->tomb) return;
        if (e->used && e->conn == c && !memcmp(e->token, token, QK_RESET_TOKEN_LEN)) {
            e->used = false;
            e->tomb = true;
            s->rt_used--;
            s->rt_tombs++;
            return;
        }
    }
}

qk_conn *qk_ep_rt_match(const qk_ep_sched *s, const uint8_t *d, size_t len)
{
    /* RFC 9000 §10.3.1: at least 21 bytes, a short header, the last 16 bytes. */
    if (!s->rt_cap || len < 21 || (d[0] & QK_HDR_FORM_LONG)) return NULL;
    const uint8_t *tail = d + len - QK_RESET_TOKEN_LEN;
    size_t mask = s->rt_cap - 1;
    for (size_t i = rt_hash(s, tail) & mask, n = 0; n < s->rt_cap; i = (i + 1) & mask, n++) {
        const qk_rt_entry *e = &s->rt[i];
        if (!e->used && !e->tomb) return NULL;
        if (!e->used || !qk_crypto_memeq(e->token, tail, QK_RESET_TOKEN_LEN)) continue;
        /* The index may hold a retired token: the connection's own check decides. */
        qk_conn *c = e->conn;
        if (c->state < QK_CONN_DRAINING && qk_cid_is_stateless_reset(c, d, len)) return c;
    }
    return NULL;
}
