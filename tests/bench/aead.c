/* SPDX-License-Identifier: MIT */
/*
 * bench_aead: ns per packet for AEAD seal/open (and the header-protection
 * mask) at 1200 and 1452 bytes, per suite, for each backend of
 * src/crypto/aead.h (nettle, OpenSSL EVP, GnuTLS AEAD API).
 * Usage: bench_aead [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <quack/common.h>

#include "crypto/aead.h"
#include "crypto/packet.h"

#define HDR_BYTES 20 /* AAD: a long-ish header (short header + 8-byte DCID + pn is 13) */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct result {
    double seal_ns, open_ns;
} result;

static const size_t sizes[] = {1200, 1452};
static const qk_crypto_suite suites[] = {QK_SUITE_AES_128_GCM, QK_SUITE_AES_256_GCM,
                                         QK_SUITE_CHACHA20_POLY1305};
static long iters = 100000;

/* Best of three runs of `iters` seals/opens of one packet (payload = size - hdr - tag). */
static result bench_ours(qk_crypto_suite s, qk_aead_backend be, size_t size)
{
    uint8_t key[32], nonce[12] = {0}, hdr[HDR_BYTES], pkt[1500], sealed[1500];
    memset(key, 0x42, sizeof key);
    memset(hdr, 0x17, sizeof hdr);
    memset(pkt, 0xab, sizeof pkt);
    size_t plen = size - HDR_BYTES - QK_AEAD_TAG_BYTES;
    qk_aead a;
    result r = {1e18, 1e18};
    if (qk_aead_init(&a, s, be, key, qk_suite_key_len(s)) != 0) abort();
    memcpy(sealed, pkt, plen);
    qk_aead_seal(&a, nonce, hdr, HDR_BYTES, sealed, plen, sealed + plen);
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_ns();
        for (long i = 0; i < iters; i++) {
            nonce[11] = (uint8_t)i;
            qk_aead_seal(&a, nonce, hdr, HDR_BYTES, pkt, plen, pkt + plen);
        }
        double t1 = now_ns();
        nonce[11] = 0;
        for (long i = 0; i < iters; i++) {
            memcpy(pkt, sealed, plen + 16);
            if (qk_aead_open(&a, nonce, hdr, HDR_BYTES, pkt, plen, pkt + plen) != 0) abort();
        }
        double t2 = now_ns();
        if ((t1 - t0) / iters < r.seal_ns) r.seal_ns = (t1 - t0) / iters;
        if ((t2 - t1) / iters < r.open_ns) r.open_ns = (t2 - t1) / iters;
    }
    qk_aead_free(&a);
    return r;
}

static double bench_hp(qk_crypto_suite s, qk_aead_backend be)
{
    uint8_t key[32], sample[16], mask[5];
    memset(key, 0x33, sizeof key);
    memset(sample, 0x44, sizeof sample);
    qk_hp h;
    double best = 1e18;
    if (qk_hp_init(&h, s, be, key, qk_suite_key_len(s)) != 0) abort();
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_ns();
        for (long i = 0; i < iters; i++) {
            sample[0] = (uint8_t)i;
            qk_hp_mask(&h, sample, mask);
        }
        double t = (now_ns() - t0) / iters;
        if (t < best) best = t;
    }
    qk_hp_free(&h);
    return best;
}

int main(int argc, char **argv)
{
    if (argc > 1) iters = atol(argv[1]);
    if (iters <= 0) {
        fprintf(stderr, "usage: %s [iterations > 0]\n", argv[0]);
        return 2;
    }
    printf(
        "# ns per packet (best of 3 x %ld), AAD %d bytes; open includes a memcpy of the packet\n",
        iters, HDR_BYTES);
    printf("%-18s %-8s %6s %10s %10s\n", "suite", "backend", "bytes", "seal_ns", "open_ns");
    for (size_t si = 0; si < 3; si++) {
        for (size_t zi = 0; zi < 2; zi++) {
            for (int be = QK_AEAD_BACKEND_NETTLE; be < QK_AEAD_BACKEND_COUNT; be++) {
                result r = bench_ours(suites[si], (qk_aead_backend)be, sizes[zi]);
                printf("%-18s %-8s %6zu %10.1f %10.1f\n", qk_suite_name(suites[si]),
                       qk_aead_backend_name((qk_aead_backend)be), sizes[zi], r.seal_ns, r.open_ns);
            }
        }
    }
    printf("\n%-18s %-8s %10s\n", "suite", "backend", "hp_mask_ns");
    for (size_t si = 0; si < 3; si++)
        for (int be = QK_AEAD_BACKEND_NETTLE; be <= QK_AEAD_BACKEND_OPENSSL; be++)
            printf("%-18s %-8s %10.1f\n", qk_suite_name(suites[si]),
                   qk_aead_backend_name((qk_aead_backend)be),
                   bench_hp(suites[si], (qk_aead_backend)be));
    printf("\ndefault (AUTO) backends:");
    for (size_t si = 0; si < 3; si++)
        printf(" %s=%s/hp:%s", qk_suite_name(suites[si]),
               qk_aead_backend_name(qk_aead_default_backend(suites[si])),
               qk_aead_backend_name(qk_hp_default_backend(suites[si])));
    printf("\n");
    return 0;
}
