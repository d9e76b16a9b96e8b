/* SPDX-License-Identifier: MIT */
/* Fuzz a server endpoint with hostile datagrams. The input is a sequence of
 * records, each one datagram from the same client address:
 *
 *   mode (1 byte) | length (2 bytes, big endian) | bytes
 *
 * mode bit 0 clear: bytes are the raw datagram (headers, coalescing, version
 * negotiation, protected garbage); set: bytes are frames that are sealed into
 * a client Initial with a fixed DCID (RFC 9001 §5.2 keys) and padded to 1200
 * bytes, so mutations reach the frame decoder and TLS behind the AEAD. After
 * each datagram the endpoint sends what it wants to and its timers run, in
 * bounded loops. The endpoint never crashes, leaks or hangs. Seeds: a real
 * client Initial captured from a qk_pair handshake, raw and as frames.
 */
#include <stdlib.h>
#include <string.h>

#include "crypto/tls.h"
#include "qk_inject.h"
#include "qk_pair.h"
#include "qk_test.h"

#define MAX_RECORDS 8

static char *cert_pem, *key_pem;

static void certs_free(void)
{
    free(cert_pem);
    free(key_pem);
}

static void drain_server(qk_endpoint *ep, qk_time now)
{
    static uint8_t bufs[8][1500];
    qk_datagram out[8];
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 8; i++) {
            memset(&out[i], 0, sizeof out[i]);
            out[i].data = bufs[i];
            out[i].len = sizeof bufs[i];
        }
        if (qk_endpoint_send(ep, out, 8, now) < 8) break;
    }
    qk_event ev;
    for (int i = 0; i < 1024 && qk_endpoint_poll_event(ep, &ev); i++) {
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cert_pem) {
        if (qk_cert_generate("quack.test", 0, 36500, &cert_pem, &key_pem)) abort();
        atexit(certs_free);
    }
    uint64_t rng = 2;
    qk_config cfg;
    qk_config_default(&cfg);
    cfg.server = true;
    cfg.alpn[0] = "test";
    cfg.alpn_count = 1;
    cfg.cert_pem = cert_pem;
    cfg.key_pem = key_pem;
    cfg.rng = qk_test_rng;
    cfg.rng_ctx = &rng;
    cfg.max_datagram_frame_bytes = 1200;
    cfg.max_connections = 4;
    qk_endpoint *ep = qk_endpoint_new(&cfg);
    if (!ep) abort();
    struct {
        qk_addr caddr, saddr;
    } addrs;
    qk_pair_set_addr(&addrs.caddr, 1, 40000);
    qk_pair_set_addr(&addrs.saddr, 2, 443);
    static const uint8_t dcid[8] = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};
    static const uint8_t scid[8] = {0xc1, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07};
    static uint8_t dg[2048];
    qk_time now = QK_NS_PER_S;
    for (int rec = 0; rec < MAX_RECORDS && size >= 3; rec++) {
        uint8_t mode = data[0];
        size_t len = (size_t)data[1] << 8 | data[2];
        data += 3;
        size -= 3;
        if (len > size) len = size;
        size_t dlen;
        if (mode & 1) {
            int n = qk_inject_client_initial(dg, sizeof dg, dcid, sizeof dcid, scid, sizeof scid,
                                             (uint64_t)rec, data, len, 1200);
            if (n < 0) goto next;
            dlen = (size_t)n;
        } else {
            if (len > sizeof dg) goto next;
            memcpy(dg, data, len);
            dlen = len;
        }
        qk_datagram d = {.data = dg, .len = dlen, .peer = addrs.caddr, .local = addrs.saddr};
        d.ecn = (uint8_t)(mode >> 1 & 3);
        qk_endpoint_recv(ep, &d, now);
        drain_server(ep, now);
        now += (qk_time)(mode >> 3) * QK_NS_PER_MS;
    next:
        data += len;
        size -= len;
    }
    /* Let timers run out: PTOs, closing, idle. Bounded. */
    for (int i = 0; i < 64; i++) {
        qk_time t = qk_endpoint_next_timeout(ep);
        if (t == QK_TIME_INFINITE) break;
        if (t > now) now = t;
        qk_endpoint_on_timeout(ep, now);
        drain_server(ep, now);
    }
    qk_endpoint_del(ep);
    return 0;
}
