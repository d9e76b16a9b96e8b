/* SPDX-License-Identifier: MIT */
/* RFC 9218 Extensible Priorities for HTTP/3: the Priority Field Value parser
 * (public: qk_h3_priority_parse in include/quack/h3.h) and a scanner of the
 * peer's control stream that picks out PRIORITY_UPDATE frames (nghttp3 reads
 * the same bytes and enforces the frame rules; this only extracts values). */
#ifndef QUACK_H3_PRIORITY_H
#define QUACK_H3_PRIORITY_H

#include <quack/h3.h>

#define QK_H3_FRAME_PRIORITY_UPDATE      0xF0700u /* RFC 9218 §7.1, request stream */
#define QK_H3_FRAME_PRIORITY_UPDATE_PUSH 0xF0701u /* RFC 9218 §7.1, push */
#define QK_H3_PRIO_VALUE_MAX_BYTES       256u     /* longer values: the frame is skipped */

/** Called for each complete PRIORITY_UPDATE (request stream) frame. */
typedef void (*qk_h3_prio_update_fn)(void *ctx, uint64_t elem_id, const char *value, size_t len);

typedef struct qk_h3_ctrl_scan {
    int state; /* H3S_* in priority.c */
    uint8_t vbuf[8];
    size_t vlen, vneed;
    uint64_t ftype, left;
    bool ignore; /* not a control stream */
    bool keep;   /* the frame being read is a PRIORITY_UPDATE that fits payload */
    uint8_t payload[8 + QK_H3_PRIO_VALUE_MAX_BYTES];
    size_t plen;
} qk_h3_ctrl_scan;

/** Start scanning a unidirectional stream from its first byte. */
void qk_h3_ctrl_scan_init(qk_h3_ctrl_scan *s);

/** True once the stream type is known to be something other than the
 * control stream (0x00, RFC 9114 §6.2.1): nothing more is scanned. */
bool qk_h3_ctrl_scan_ignored(const qk_h3_ctrl_scan *s);

/** Feed the next n stream bytes; calls fn for each complete PRIORITY_UPDATE
 * request-stream frame whose payload fits the scanner. */
void qk_h3_ctrl_scan_feed(qk_h3_ctrl_scan *s, const uint8_t *p, size_t n, qk_h3_prio_update_fn fn,
                          void *ctx);

#endif
