/* SPDX-License-Identifier: MIT */
/* Fuzz an established connection: each input is a 1-RTT frame payload that
 * is sealed with the client's real 1-RTT keys (tests/support/qk_inject) and
 * delivered to the server, which must never crash, leak or hang; the pair
 * then runs a few bounded steps so the server's answers (ACKs, flow-control
 * updates, CONNECTION_CLOSE) reach the client too. One pair is kept across
 * inputs (a handshake per input would be too slow) and is restarted with the
 * same deterministic handshake whenever either side is no longer
 * established.
 *
 * The support files come from qk_testsupport. */
#include <stdlib.h>
#include <string.h>

#include "qk_inject.h"
#include "transport/conn/conn.h"
#include "qk_pair.h"
#include "qk_test.h"

#define MAX_INPUT_BYTES 1100 /* one 1-RTT packet in a 1200-byte datagram */
#define STEPS_PER_INPUT 6

static qk_pair pair;
static bool pair_ready;

static bool established(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->cconn && p->sconn && qk_conn_established(p->cconn) && qk_conn_established(p->sconn) &&
           p->cconn->handshake_confirmed;
}

static void pair_cleanup(void)
{
    if (pair_ready) qk_pair_free(&pair);
    pair_ready = false;
}

static bool pair_usable(void)
{
    return pair.cconn && pair.sconn && pair.sconn->state == QK_CONN_ESTABLISHED &&
           pair.cconn->state == QK_CONN_ESTABLISHED;
}

static void pair_ensure(void)
{
    if (!pair_ready) {
        if (qk_pair_init(&pair, 10 * QK_NS_PER_MS)) abort();
        /* Advertise DATAGRAM so that path is reachable too. */
        pair.scfg.max_datagram_frame_bytes = 1200;
        pair.scfg.min_ack_delay_ns = 1000000; /* reach ACK_FREQUENCY / IMMEDIATE_ACK */
        pair.ccfg.max_datagram_frame_bytes = 1200;
        if (qk_pair_start(&pair)) abort();
        pair_ready = true;
        atexit(pair_cleanup);
    } else if (!pair_usable() || pair.nsev > 200 || pair.ncev > 200) {
        if (qk_pair_restart(&pair)) abort();
    } else {
        return;
    }
    if (!qk_pair_run_until(&pair, established, NULL, pair.now + 2 * QK_NS_PER_S)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT_BYTES) return 0;
    pair_ensure();
    if (qk_pair_inject(&pair, true, QK_PKT_1RTT, data, size, 0)) abort();
    /* Drain what the server opened so its state stays bounded by real limits. */
    uint8_t buf[2048];
    for (size_t i = 0; i < pair.nsev; i++) {
        const qk_event *ev = &pair.sev[i];
        if (ev->type == QK_EV_STREAM_READABLE && pair.sconn && ev->conn == pair.sconn) {
            bool fin;
            while (qk_stream_read(pair.sconn, ev->stream_id, buf, sizeof buf, &fin) > 0) {
            }
        }
    }
    pair.nsev = pair.ncev = 0;
    for (int i = 0; i < STEPS_PER_INPUT; i++)
        if (!qk_pair_step(&pair)) break;
    return 0;
}
