/* SPDX-License-Identifier: MIT */
/* DPLPMTUD, RFC 8899 (search, black-hole detection) as RFC 9000 §14.3 uses it. */
#include "transport/path/pmtud.h"

#include <string.h>

void qk_pmtud_init(qk_pmtud *p, bool enabled, uint32_t max_bytes)
{
    memset(p, 0, sizeof *p);
    p->max_bytes = max_bytes;
    p->enabled = enabled && max_bytes > QK_PMTUD_BASE_BYTES;
    p->cur_bytes = p->lo = QK_PMTUD_BASE_BYTES;
    p->hi = max_bytes + 1;
    p->raise_at = QK_TIME_INFINITE;
}

void qk_pmtud_set_max(qk_pmtud *p, uint32_t max_bytes)
{
    if (max_bytes >= p->max_bytes) return;
    p->max_bytes = max_bytes < QK_PMTUD_BASE_BYTES ? QK_PMTUD_BASE_BYTES : max_bytes;
    if (p->hi > p->max_bytes + 1) p->hi = p->max_bytes + 1;
    if (p->cur_bytes > p->max_bytes) p->cur_bytes = p->lo = p->max_bytes;
    if (p->max_bytes <= QK_PMTUD_BASE_BYTES) p->enabled = false;
}

void qk_pmtud_start(qk_pmtud *p, qk_time now)
{
    (void)now;
    if (!p->enabled || p->searching) return;
    p->searching = true;
    p->raise_at = QK_TIME_INFINITE;
    p->hi = p->max_bytes + 1;
    p->lo = p->cur_bytes;
    p->fails = 0;
}

/* Next size to try: the maximum first (RFC 8899 §5.3.2 lets the search
 * pick any algorithm), then halve the bracket. 0 when the search is over. */
static uint32_t candidate(const qk_pmtud *p)
{
    if (p->lo >= p->max_bytes) return 0;
    if (p->hi > p->max_bytes) return p->max_bytes;
    if (p->hi - p->lo <= QK_PMTUD_STEP_BYTES) return 0;
    return p->lo + (p->hi - p->lo) / 2;
}

uint32_t qk_pmtud_probe_size(qk_pmtud *p, qk_time now)
{
    if (!p->enabled) return 0;
    if (!p->searching) {
        if (now < p->raise_at) return 0;
        qk_pmtud_start(p, now); /* RFC 8899 §5.1.1: PMTU_RAISE_TIMER expired */
    }
    if (p->probe_bytes) return 0;
    uint32_t c = candidate(p);
    if (!c) {
        p->searching = false; /* RFC 8899 §5.2: SEARCH_COMPLETE */
        p->raise_at = now + QK_PMTUD_RAISE_NS;
    }
    return c;
}

void qk_pmtud_on_probe_sent(qk_pmtud *p, uint32_t size)
{
    p->probe_bytes = size;
    p->probes_sent++;
}

uint32_t qk_pmtud_on_probe_acked(qk_pmtud *p, uint32_t size, qk_time now)
{
    (void)now;
    if (size == p->probe_bytes) p->probe_bytes = 0;
    if (size > p->max_bytes || size <= p->cur_bytes) return p->cur_bytes;
    p->cur_bytes = size;
    if (size > p->lo) p->lo = size;
    if (p->hi <= p->lo) p->hi = p->max_bytes + 1;
    p->fails = 0;
    return p->cur_bytes;
}

void qk_pmtud_on_probe_lost(qk_pmtud *p, uint32_t size, qk_time now)
{
    (void)now;
    p->probes_lost++;
    if (size != p->probe_bytes) return;
    p->probe_bytes = 0;
    /* RFC 8899 §5.1.2: a size failed after MAX_PROBES probes. */
    if (++p->fails >= QK_PMTUD_MAX_PROBES) {
        p->fails = 0;
        if (size < p->hi) p->hi = size;
    }
}

static bool fall_back(qk_pmtud *p, qk_time now)
{
    /* RFC 8899 §4.3 / §5.2: black hole -> base size, search again later. */
    p->black_holes++;
    p->cur_bytes = p->lo = QK_PMTUD_BASE_BYTES;
    p->hi = p->max_bytes + 1;
    p->searching = false;
    p->probe_bytes = 0;
    p->fails = 0;
    p->bh_lost = 0;
    p->raise_at = now + QK_PMTUD_BH_RETRY_NS;
    return true;
}

void qk_pmtud_on_packet(qk_pmtud *p, uint32_t size, qk_time time_sent, bool acked)
{
    if (!p->enabled || size <= QK_PMTUD_BASE_BYTES) return;
    if (acked) {
        if (time_sent >= p->bh_mark) p->bh_mark = time_sent;
        /* a full-size packet sent no earlier than the losses got through */
        if (time_sent >= p->bh_last_lost) p->bh_lost = 0;
        return;
    }
    /* Only losses of packets sent after the newest full-size packet that got
     * through count: congestion drops are followed by acknowledged ones. */
    if (time_sent <= p->bh_mark || p->cur_bytes <= QK_PMTUD_BASE_BYTES) return;
    p->bh_lost++;
    if (time_sent > p->bh_last_lost) p->bh_last_lost = time_sent;
}

bool qk_pmtud_check(qk_pmtud *p, qk_time now)
{
    if (p->bh_lost < QK_PMTUD_BH_LOST_PKTS || p->cur_bytes <= QK_PMTUD_BASE_BYTES) return false;
    return fall_back(p, now);
}

bool qk_pmtud_on_pto(qk_pmtud *p, uint32_t pto_count, qk_time now)
{
    if (!p->enabled || p->cur_bytes <= QK_PMTUD_BASE_BYTES || pto_count < QK_PMTUD_BH_PTOS)
        return false;
    return fall_back(p, now);
}

void qk_pmtud_reset(qk_pmtud *p, qk_time now)
{
    bool en = p->enabled;
    uint32_t max = p->max_bytes;
    uint64_t s = p->probes_sent, l = p->probes_lost, b = p->black_holes;
    qk_pmtud_init(p, en, max);
    p->probes_sent = s;
    p->probes_lost = l;
    p->black_holes = b;
    qk_pmtud_start(p, now);
}
