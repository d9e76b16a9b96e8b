/* SPDX-License-Identifier: MIT */
/* Trace hook plumbing (qk_config.trace). Not a public header. */
#ifndef QK_TRANSPORT_TRACE_H
#define QK_TRANSPORT_TRACE_H

#include "transport/conn/conn.h"

/**
 * Decode the plaintext payload of one packet and hand it to c->cfg->trace
 * (no-op without a sink). sent: we built it (before protection); else we
 * received it (after decryption). len is the packet's size on the wire.
 * Never fails: a malformed tail is simply not reported.
 */
void qk_trace_emit(qk_conn *c, bool sent, qk_pkt_type type, uint64_t pn, size_t len,
                   const uint8_t *payload, size_t payload_len, qk_time now);

#endif
