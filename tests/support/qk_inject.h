/* SPDX-License-Identifier: MIT */
/* Hostile-input helpers for tests and fuzz targets: seal arbitrary frame
 * bytes into a correctly protected packet with a connection's own keys (via
 * the internals in transport/conn.h) and deliver it to the peer, build a
 * client Initial from scratch, and restart a qk_pair without regenerating its
 * certificate. */
#ifndef QK_INJECT_H
#define QK_INJECT_H

#include "qk_pair.h"

#include <stddef.h>
#include <stdint.h>

#include "wire/packet.h"

/**
 * Seal frames[0..len) as one packet of type QK_PKT_INITIAL, QK_PKT_HANDSHAKE or
 * QK_PKT_1RTT with from's current send keys, DCID, SCID and next packet
 * number (which is consumed and recorded as sent, not in flight, so an ACK
 * of it is legal). set_bits are OR'ed into the unprotected first byte before
 * sealing (e.g. reserved bits). The packet number is always 4 bytes, so an
 * empty payload still leaves room for the header-protection sample.
 * Returns the packet length, QK_ERR_STATE (no keys for that space),
 * QK_ERR_INVALID_ARG or QK_ERR_BUFFER_TOO_SMALL.
 */
int qk_inject_seal(qk_conn *from, qk_pkt_type type, const uint8_t *frames, size_t len,
                   uint8_t set_bits, qk_time now, uint8_t *out, size_t cap);

/**
 * Seal frames into a packet from the client (from_client) or the server
 * connection of the pair and hand it straight to the other endpoint at
 * p->now, then flush both endpoints. Returns 0 or as qk_inject_seal (and
 * QK_ERR_STATE when the sending connection does not exist).
 */
int qk_pair_inject(qk_pair *p, bool from_client, qk_pkt_type type, const uint8_t *frames,
                   size_t len, uint8_t set_bits);

/**
 * Build a client Initial datagram from scratch (RFC 9001 §5.2 keys from
 * dcid): frames[0..len) followed by PADDING so the datagram is pad_to bytes
 * (RFC 9000 §14.1 wants 1200). Returns the datagram length,
 * QK_ERR_INVALID_ARG (CID too long, pn_len not 1..4) or QK_ERR_BUFFER_TOO_SMALL.
 */
int qk_inject_client_initial(uint8_t *out, size_t cap, const uint8_t *dcid, size_t dcid_len,
                             const uint8_t *scid, size_t scid_len, uint64_t pn,
                             const uint8_t *frames, size_t len, size_t pad_to);

/**
 * Like qk_inject_client_initial, with a token in the header and any version
 * (v1/v2 keys), packet number 0. Returns the datagram length or an error.
 */
int qk_inject_client_initial_token(uint8_t *out, size_t cap, uint32_t version, const uint8_t *dcid,
                                   size_t dcid_len, const uint8_t *scid, size_t scid_len,
                                   const uint8_t *token, size_t token_len, const uint8_t *frames,
                                   size_t len, size_t pad_to);

/**
 * Tear down both endpoints and start again with the same configs and
 * certificate (virtual time, queues, events and RNG states reset): a fresh,
 * deterministic connection attempt. Returns as qk_pair_start.
 */
int qk_pair_restart(qk_pair *p);

#endif
