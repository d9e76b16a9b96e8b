/* SPDX-License-Identifier: MIT */
/* Fuzz the RFC 9218 decoders in src/h3: the Priority Field Value parser and
 * the control-stream scanner. The first byte picks the target and a chunk
 * size. Invariants: urgency stays 0..7; a rejected value leaves the result
 * untouched; parsing is independent of trailing whitespace; the scanner
 * reports the same frames whatever the chunking and never a value longer
 * than it keeps. */
#include "h3/priority.h"

#include <string.h>

#include "fuzz_check.h"

typedef struct seen {
    uint64_t n, id_sum, len_sum;
} seen;

static void got(void *ctx, uint64_t id, const char *v, size_t len)
{
    seen *s = ctx;
    CHECK(len <= QK_H3_PRIO_VALUE_MAX_BYTES + 8);
    qk_h3_priority p = {QK_H3_DEFAULT_URGENCY, false};
    qk_h3_priority_parse(v, len, &p);
    CHECK(p.urgency <= 7);
    s->n++;
    s->id_sum += id;
    s->len_sum += len;
}

static void scan(const uint8_t *d, size_t n, size_t chunk, seen *s)
{
    qk_h3_ctrl_scan sc;
    qk_h3_ctrl_scan_init(&sc);
    for (size_t off = 0; off < n; off += chunk)
        qk_h3_ctrl_scan_feed(&sc, d + off, n - off < chunk ? n - off : chunk, got, s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    if (mode & 1) {
        seen a = {0}, b = {0};
        scan(data, size, size ? size : 1, &a);
        scan(data, size, (size_t)(mode >> 1) + 1, &b);
        CHECK(a.n == b.n && a.id_sum == b.id_sum && a.len_sum == b.len_sum);
        return 0;
    }
    qk_h3_priority p = {5, true}, q = {5, true};
    int rc = qk_h3_priority_parse((const char *)data, size, &p);
    CHECK(p.urgency <= 7);
    if (rc) CHECK(p.urgency == 5 && p.incremental);
    /* Trailing spaces do not change the outcome. */
    static char buf[4096];
    if (size + 2 <= sizeof buf) {
        memcpy(buf, data, size);
        buf[size] = ' ';
        buf[size + 1] = ' ';
        int rc2 = qk_h3_priority_parse(buf, size + 2, &q);
        CHECK(rc2 == rc && q.urgency == p.urgency && q.incremental == p.incremental);
    }
    return 0;
}
