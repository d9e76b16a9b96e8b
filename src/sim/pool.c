/* SPDX-License-Identifier: MIT */
/* The packet pool: see pool.h. */
#include "sim/pool.h"

#include <stdlib.h>

void qk_pkt_pool_init(qk_pkt_pool *p, size_t max_pkts)
{
    p->free = NULL;
    p->live = 0;
    p->max_pkts = max_pkts ? max_pkts : 1u << 18;
}

void qk_pkt_pool_free(qk_pkt_pool *p)
{
    while (p->free) {
        qk_pkt *n = p->free->next;
        if (p->free->data != p->free->inline_buf) free(p->free->data);
        free(p->free);
        p->free = n;
    }
}

qk_pkt *qk_pkt_get(qk_pkt_pool *p, size_t len)
{
    if (p->live >= p->max_pkts || len > 65535) return NULL;
    qk_pkt *pkt = p->free;
    if (pkt) {
        p->free = pkt->next;
    } else {
        pkt = malloc(sizeof *pkt);
        if (!pkt) return NULL;
        pkt->data = pkt->inline_buf;
        pkt->cap = sizeof pkt->inline_buf;
    }
    if (len > pkt->cap) { /* rare: jumbo / GSO batch; the buffer stays with the packet */
        uint8_t *d = malloc(65535);
        if (!d) {
            pkt->next = p->free;
            p->free = pkt;
            return NULL;
        }
        if (pkt->data != pkt->inline_buf) free(pkt->data);
        pkt->data = d;
        pkt->cap = 65535;
    }
    pkt->next = NULL;
    pkt->len = (uint32_t)len;
    p->live++;
    return pkt;
}

void qk_pkt_put(qk_pkt_pool *p, qk_pkt *pkt)
{
    pkt->next = p->free;
    p->free = pkt;
    p->live--;
}
