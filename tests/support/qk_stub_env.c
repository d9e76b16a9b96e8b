/* SPDX-License-Identifier: MIT */
/* See qk_stub_env.h. */
#include "qk_stub_env.h"

#include <string.h>

static void stub_push(void *ctx, const qk_event *ev)
{
    qk_stub_env *s = ctx;
    if (s->n_ev < QK_STUB_MAX_EVENTS) s->ev[s->n_ev++] = *ev;
}

static int stub_add_cid(void *ctx, const qk_cid *cid, qk_conn *c)
{
    (void)c;
    qk_stub_env *s = ctx;
    if (s->n_cids == QK_STUB_MAX_CIDS) return QK_ERR_NOMEM;
    s->cids[s->n_cids++] = *cid;
    return 0;
}

static void stub_remove_cid(void *ctx, const qk_cid *cid)
{
    qk_stub_env *s = ctx;
    for (size_t i = 0; i < s->n_cids; i++)
        if (s->cids[i].len == cid->len && !memcmp(s->cids[i].b, cid->b, cid->len)) {
            s->cids[i] = s->cids[--s->n_cids];
            return;
        }
}

static void stub_random(void *ctx, uint8_t *buf, size_t len)
{
    qk_stub_env *s = ctx;
    s->n_random++;
    for (size_t i = 0; i < len; i++) {
        s->seed = s->seed * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(s->seed >> 56);
    }
}

void qk_stub_reset_token(void *ctx, const qk_cid *cid, uint8_t token[QK_RESET_TOKEN_LEN])
{
    (void)ctx;
    for (size_t i = 0; i < QK_RESET_TOKEN_LEN; i++)
        token[i] = (uint8_t)(0xa0 ^ i ^ (cid->len ? cid->b[i % cid->len] : 0));
}

static void stub_add_token(void *ctx, const uint8_t token[QK_RESET_TOKEN_LEN], qk_conn *c)
{
    (void)c;
    qk_stub_env *s = ctx;
    if (s->n_tokens < QK_STUB_MAX_CIDS) memcpy(s->tokens[s->n_tokens++], token, QK_RESET_TOKEN_LEN);
}

static void stub_remove_token(void *ctx, const uint8_t token[QK_RESET_TOKEN_LEN], qk_conn *c)
{
    (void)c;
    qk_stub_env *s = ctx;
    for (size_t i = 0; i < s->n_tokens; i++)
        if (!memcmp(s->tokens[i], token, QK_RESET_TOKEN_LEN)) {
            memcpy(s->tokens[i], s->tokens[--s->n_tokens], QK_RESET_TOKEN_LEN);
            return;
        }
}

qk_conn_env qk_stub_env_init(qk_stub_env *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->seed = seed;
    return (qk_conn_env){.ctx = s,
                         .push_event = stub_push,
                         .add_cid = stub_add_cid,
                         .remove_cid = stub_remove_cid,
                         .random = stub_random,
                         .reset_token = qk_stub_reset_token,
                         .add_reset_token = stub_add_token,
                         .remove_reset_token = stub_remove_token};
}

bool qk_stub_has_event(const qk_stub_env *s, qk_event_type t)
{
    for (size_t i = 0; i < s->n_ev; i++)
        if (s->ev[i].type == t) return true;
    return false;
}
