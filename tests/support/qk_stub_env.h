/* SPDX-License-Identifier: MIT */
/* A qk_conn_env for tests that drive qk_conn without an endpoint: the
 * services are recorded (events, registered CIDs and reset tokens), random
 * bytes come from a seeded LCG, and reset tokens are derived from the CID so
 * a test can recompute them (qk_stub_reset_token). */
#ifndef QK_STUB_ENV_H
#define QK_STUB_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/conn/conn.h"

#define QK_STUB_MAX_EVENTS 64
#define QK_STUB_MAX_CIDS   16

typedef struct qk_stub_env {
    qk_event ev[QK_STUB_MAX_EVENTS];
    size_t n_ev;
    qk_cid cids[QK_STUB_MAX_CIDS]; /* registered and not removed */
    size_t n_cids;
    uint8_t tokens[QK_STUB_MAX_CIDS][QK_RESET_TOKEN_LEN]; /* the peer's, registered */
    size_t n_tokens;
    size_t n_random; /* calls to random */
    uint64_t seed;
} qk_stub_env;

/* Clears s and returns an env whose every service records into s. */
qk_conn_env qk_stub_env_init(qk_stub_env *s, uint64_t seed);

/* The token the stub derives for cid (what the connection will advertise). */
void qk_stub_reset_token(void *ctx, const qk_cid *cid, uint8_t token[QK_RESET_TOKEN_LEN]);

/* Whether an event of type t was pushed. */
bool qk_stub_has_event(const qk_stub_env *s, qk_event_type t);

#endif
