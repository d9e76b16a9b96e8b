/* SPDX-License-Identifier: MIT */
/* What the endpoint keeps in each of its connections (endpoint.c, sched.c):
 * its list, the ready list, the timer heap slot and handshake admission.
 * The connection embeds it and never reads it. Not a public header. */
#ifndef QK_TRANSPORT_ENDPOINT_SLOT_H
#define QK_TRANSPORT_ENDPOINT_SLOT_H

#include <quack/common.h>
#include <stdbool.h>
#include <stddef.h>

struct qk_conn;

typedef struct qk_ep_slot {
    struct qk_conn *next, *prev;   /* the endpoint's list of connections */
    struct qk_conn *rnext, *rprev; /* the ready list (sched.c) */
    size_t heap_idx;               /* SIZE_MAX: not in the timer heap */
    qk_time heap_t;                /* the deadline the heap holds */
    bool linked, ready, hs, hs_unval;
} qk_ep_slot;

#endif
