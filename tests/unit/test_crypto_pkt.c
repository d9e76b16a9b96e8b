/* SPDX-License-Identifier: MIT */
/* Packet protection round trips, tamper detection, key update and tokens. */
#include "qk_test.h"

#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <quack/common.h>

#include "crypto/packet.h"
#include "crypto/token.h"

static const qk_crypto_suite real_suites[] = {QK_SUITE_AES_128_GCM, QK_SUITE_AES_256_GCM,
                                              QK_SUITE_CHACHA20_POLY1305};

/* Build a short-header packet of total length L: header, payload, tag room. */
static size_t layout(size_t L, size_t *pn_off, size_t *pn_len, uint64_t pn)
{
    size_t dcid = L >= 40 ? 8 : 0;
    *pn_off = 1 + dcid;
    *pn_len = (size_t)(pn % 4) + 1;
    return *pn_off + *pn_len; /* header length */
}

static void fill_packet(uint8_t *pkt, size_t L, size_t hl, size_t pn_off, size_t pn_len,
                        uint64_t pn, uint64_t *rng)
{
    qk_test_rng(rng, pkt, L);
    pkt[0] = (uint8_t)(0x40 | (pkt[0] & 0x18) | (pn_len - 1)); /* short header, fixed bit */
    for (size_t i = 0; i < pn_len; i++) pkt[pn_off + i] = (uint8_t)(pn >> (8 * (pn_len - 1 - i)));
    (void)hl;
}

/* Seal + protect with `tx`, unprotect + open with `rx`; expect the original. */
static void round_trip(qk_pkt_keys *tx, qk_pkt_keys *rx, size_t L, uint64_t pn, uint64_t *rng)
{
    uint8_t pkt[1500], orig[1500];
    size_t pn_off, pn_len, got_len;
    size_t hl = layout(L, &pn_off, &pn_len, pn);
    size_t plen = L - hl - 16;
    fill_packet(pkt, L, hl, pn_off, pn_len, pn, rng);
    memcpy(orig, pkt, L - 16);
    assert_int_equal(qk_pkt_seal(tx, pn, pkt, hl, pkt + hl, plen), (int)(plen + 16));
    assert_int_equal(qk_hp_protect(tx, pkt, L, pn_off), 0);
    if (tx->suite != QK_SUITE_NULL && plen >= 16)
        assert_memory_not_equal(pkt + hl, orig + hl, 16); /* actually encrypted */
    assert_int_equal(qk_hp_unprotect(rx, pkt, L, pn_off, &got_len), 0);
    assert_int_equal(got_len, pn_len);
    assert_memory_equal(pkt, orig, hl);
    assert_int_equal(qk_pkt_open(rx, pn, pkt, hl, pkt + hl, L - hl), (int)plen);
    assert_memory_equal(pkt + hl, orig + hl, plen);
}

/* Flip one bit of a protected packet; unprotect + open must fail. */
static void flip_fails(qk_pkt_keys *k, size_t L, uint64_t pn, size_t bit, uint64_t *rng)
{
    uint8_t pkt[1500];
    size_t pn_off, pn_len, got_len;
    size_t hl = layout(L, &pn_off, &pn_len, pn);
    fill_packet(pkt, L, hl, pn_off, pn_len, pn, rng);
    assert_true(qk_pkt_seal(k, pn, pkt, hl, pkt + hl, L - hl - 16) > 0);
    assert_int_equal(qk_hp_protect(k, pkt, L, pn_off), 0);
    pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    assert_int_equal(qk_hp_unprotect(k, pkt, L, pn_off, &got_len), 0);
    /* The receiver decodes pn from what it unmasked, with the length it read. */
    uint64_t rpn = 0;
    for (size_t i = 0; i < got_len; i++) rpn = (rpn << 8) | pkt[pn_off + i];
    uint64_t full = (pn & ~((1ull << (8 * got_len)) - 1)) | rpn;
    size_t rhl = pn_off + got_len;
    assert_int_equal(qk_pkt_open(k, full, pkt, rhl, pkt + rhl, L - rhl), QK_ERR_DECRYPT);
}

static void init_keys(qk_pkt_keys *k, qk_crypto_suite s, qk_aead_backend be, uint8_t seed)
{
    uint8_t secret[48];
    memset(secret, seed, sizeof secret);
    assert_int_equal(qk_pkt_keys_init_ex(k, QK_QUIC_V1, s, be, secret, qk_suite_secret_len(s)), 0);
}

/* Every suite, every length 21..1500, sealed by one backend and opened by another. */
static void test_round_trip_all_lengths(void **state)
{
    uint64_t rng = 1;
    for (size_t si = 0; si < 3; si++) {
        qk_pkt_keys n, o, g;
        init_keys(&n, real_suites[si], QK_AEAD_BACKEND_NETTLE, 0x11);
        init_keys(&o, real_suites[si], QK_AEAD_BACKEND_OPENSSL, 0x11);
        init_keys(&g, real_suites[si], QK_AEAD_BACKEND_GNUTLS, 0x11);
        for (size_t L = 21; L <= 1500; L++) {
            uint64_t pn = qk_test_rand64(&rng) & ((1ull << 62) - 1);
            round_trip(&n, &o, L, pn, &rng); /* nettle seals, OpenSSL opens */
            round_trip(&o, &g, L, pn + 1, &rng);
            round_trip(&g, &n, L, pn + 2, &rng);
        }
        qk_pkt_keys_free(&n);
        qk_pkt_keys_free(&o);
        qk_pkt_keys_free(&g);
    }
}

/* One random bit flipped per length, plus every byte position at a few lengths. */
static void test_bit_flips_fail(void **state)
{
    uint64_t rng = 2;
    for (size_t si = 0; si < 3; si++) {
        for (int be = QK_AEAD_BACKEND_NETTLE; be < QK_AEAD_BACKEND_COUNT; be++) {
            qk_pkt_keys k;
            init_keys(&k, real_suites[si], (qk_aead_backend)be, 0x22);
            for (size_t L = 21; L <= 1500; L++) {
                uint64_t pn = qk_test_rand64(&rng) & 0xffffffffff;
                flip_fails(&k, L, pn, qk_test_rand64(&rng) % (L * 8), &rng);
            }
            static const size_t lens[] = {21, 64, 1200};
            for (size_t li = 0; li < 3; li++)
                for (size_t byte = 0; byte < lens[li]; byte++)
                    flip_fails(&k, lens[li], 1000 + byte, byte * 8 + byte % 8, &rng);
            qk_pkt_keys_free(&k);
        }
    }
}

static void test_wrong_pn_or_key_fails(void **state)
{
    uint8_t pkt[100], hdr[3] = {0x41, 0, 5};
    qk_pkt_keys a, b;
    init_keys(&a, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_AUTO, 1);
    init_keys(&b, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_AUTO, 2);
    memset(pkt, 7, sizeof pkt);
    assert_int_equal(qk_pkt_seal(&a, 5, hdr, 3, pkt, 50), 66);
    uint8_t copy[100];
    memcpy(copy, pkt, sizeof pkt);
    assert_int_equal(qk_pkt_open(&a, 6, hdr, 3, pkt, 66), QK_ERR_DECRYPT);
    memcpy(pkt, copy, sizeof pkt);
    assert_int_equal(qk_pkt_open(&b, 5, hdr, 3, pkt, 66), QK_ERR_DECRYPT);
    assert_int_equal(qk_pkt_open(&a, 5, hdr, 3, pkt, 15), QK_ERR_DECRYPT); /* shorter than tag */
    qk_pkt_keys_free(&a);
    qk_pkt_keys_free(&b);
    qk_pkt_keys z;
    memset(&z, 0, sizeof z);
    assert_int_equal(qk_pkt_seal(&z, 0, hdr, 3, pkt, 1), QK_ERR_STATE);
    assert_int_equal(qk_pkt_keys_init(&z, QK_SUITE_AES_128_GCM, copy, 31), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_pkt_keys_init(&z, QK_SUITE_UNKNOWN, copy, 32), QK_ERR_INVALID_ARG);
}

/* The NULL suite keeps sizes (16-byte zero tag), leaves bytes alone, HP no-op. */
static void test_null_suite(void **state)
{
    qk_pkt_keys k;
    uint8_t pkt[64], orig[64];
    uint64_t rng = 3;
    assert_int_equal(qk_pkt_keys_init(&k, QK_SUITE_NULL, NULL, 0), 0);
    qk_test_rng(&rng, pkt, sizeof pkt);
    pkt[0] = 0x43;
    memcpy(orig, pkt, sizeof pkt);
    assert_int_equal(qk_pkt_seal(&k, 9, pkt, 5, pkt + 5, 43), 59);
    assert_memory_equal(pkt, orig, 48);
    for (int i = 48; i < 59; i++) assert_int_equal(pkt[i], 0);
    assert_int_equal(qk_hp_protect(&k, pkt, 64, 1), 0);
    assert_memory_equal(pkt, orig, 5);
    assert_int_equal(qk_pkt_open(&k, 9, pkt, 5, pkt + 5, 59), 43);
    for (size_t L = 21; L <= 1500; L += 97) round_trip(&k, &k, L, L, &rng);
    qk_pkt_keys_free(&k);
}

/* RFC 9001 §6: next keys use the "quic ku" secret, the HP key is unchanged. */
static void test_key_update(void **state)
{
    uint8_t s1[32], s2[32], want[32], pkt[100];
    memset(s1, 0x5a, sizeof s1);
    memcpy(s2, s1, 32);
    qk_pkt_keys k0, k1, k1b;
    assert_int_equal(qk_pkt_keys_init(&k0, QK_SUITE_CHACHA20_POLY1305, s1, 32), 0);
    assert_int_equal(qk_pkt_keys_next(&k1, &k0, s2, 32), 0);
    assert_int_equal(qk_crypto_next_secret(QK_QUIC_V1, QK_SUITE_CHACHA20_POLY1305, s1, 32, want),
                     0);
    assert_memory_equal(s2, want, 32); /* secret advanced in place */
    qk_key_material m0, m1;
    assert_int_equal(qk_crypto_derive_material(QK_QUIC_V1, QK_SUITE_CHACHA20_POLY1305, s1, 32, &m0),
                     0);
    assert_int_equal(
        qk_crypto_derive_material(QK_QUIC_V1, QK_SUITE_CHACHA20_POLY1305, want, 32, &m1), 0);
    assert_memory_equal(k1.iv, m1.iv, 12);
    assert_memory_equal(k1.hp_key, m0.hp, 32); /* not m1.hp */
    /* Key phase 1 packet: HP removable with k0, AEAD only with k1. */
    uint64_t rng = 4;
    round_trip(&k1, &k1, 100, 77, &rng);
    memset(pkt, 1, sizeof pkt);
    pkt[0] = 0x44 | 1;
    assert_int_equal(qk_pkt_seal(&k1, 77, pkt, 3, pkt + 3, 60), 76);
    assert_int_equal(qk_hp_protect(&k1, pkt, 79, 1), 0);
    size_t pl;
    assert_int_equal(qk_hp_unprotect(&k0, pkt, 79, 1, &pl), 0);
    assert_int_equal(pl, 2);
    uint8_t copy[100];
    memcpy(copy, pkt, sizeof pkt);
    assert_int_equal(qk_pkt_open(&k0, 77, pkt, 3, pkt + 3, 76), QK_ERR_DECRYPT);
    assert_int_equal(qk_pkt_open(&k1, 77, copy, 3, copy + 3, 76), 60);
    /* A second update from k1 gives yet another generation. */
    assert_int_equal(qk_pkt_keys_next(&k1b, &k1, s2, 32), 0);
    assert_memory_not_equal(k1b.iv, k1.iv, 12);
    assert_int_equal(qk_pkt_keys_next(&k1, &k1, s2, 32), QK_ERR_INVALID_ARG);
    qk_pkt_keys_free(&k0);
    qk_pkt_keys_free(&k1);
    qk_pkt_keys_free(&k1b);
}

static void test_hp_truncated(void **state)
{
    qk_pkt_keys k;
    uint8_t pkt[64] = {0x40};
    size_t pl;
    init_keys(&k, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_AUTO, 9);
    assert_int_equal(qk_hp_protect(&k, pkt, 28, 9), QK_ERR_TRUNCATED);
    assert_int_equal(qk_hp_unprotect(&k, pkt, 28, 9, &pl), QK_ERR_TRUNCATED);
    assert_int_equal(qk_hp_unprotect(&k, pkt, 29, 9, &pl), 0);
    qk_pkt_keys_free(&k);
}

/* Stateless reset token = HMAC-SHA256(key, cid)[0..16], checked against OpenSSL. */
static void test_reset_token(void **state)
{
    uint8_t key[32], cid[20], tok[16], ref[32];
    unsigned rl = sizeof ref;
    uint64_t rng = 5;
    qk_test_rng(&rng, key, sizeof key);
    qk_test_rng(&rng, cid, sizeof cid);
    assert_int_equal(qk_reset_token(key, 32, cid, 8, tok), 0);
    assert_non_null(HMAC(EVP_sha256(), key, 32, cid, 8, ref, &rl));
    assert_memory_equal(tok, ref, 16);
    assert_int_equal(qk_reset_token(NULL, 0, cid, 8, tok), QK_ERR_INVALID_ARG);
}

static void test_addr_token(void **state)
{
    uint8_t key[32], key2[32], nonce[12], tok[QK_ADDR_TOKEN_MAX_BYTES];
    uint64_t rng = 6;
    qk_test_rng(&rng, key, 32);
    qk_test_rng(&rng, key2, 32);
    qk_test_rng(&rng, nonce, 12);
    qk_addr_token_key k, k2;
    assert_int_equal(qk_addr_token_key_init(&k, key), 0);
    assert_int_equal(qk_addr_token_key_init(&k2, key2), 0);
    qk_addr_token t, got;
    memset(&t, 0, sizeof t);
    t.kind = QK_ADDR_TOKEN_RETRY;
    t.issued_ns = 123456789012345ull;
    t.addr_len = 18;
    for (int i = 0; i < 18; i++) t.addr[i] = (uint8_t)(i + 1);
    t.extra_len = 8;
    memset(t.extra, 0xee, 8);
    int n = qk_addr_token_seal(&k, &t, nonce, tok, sizeof tok);
    assert_int_equal(n, 12 + 1 + 8 + 1 + 18 + 1 + 8 + 16);
    assert_int_equal((size_t)n, qk_addr_token_size(&t));
    /* Address bytes are not visible in the token. */
    assert_null(memmem(tok, (size_t)n, t.addr, 18));
    assert_int_equal(qk_addr_token_open(&k, tok, (size_t)n, &got), 0);
    assert_int_equal(got.kind, QK_ADDR_TOKEN_RETRY);
    assert_int_equal(got.issued_ns, t.issued_ns);
    assert_int_equal(got.addr_len, 18);
    assert_memory_equal(got.addr, t.addr, 18);
    assert_int_equal(got.extra_len, 8);
    assert_memory_equal(got.extra, t.extra, 8);
    /* Wrong key, any flipped bit, truncation: rejected. */
    assert_int_equal(qk_addr_token_open(&k2, tok, (size_t)n, &got), QK_ERR_INVALID_TOKEN);
    for (int i = 0; i < n; i++) {
        tok[i] ^= 0x10;
        assert_int_equal(qk_addr_token_open(&k, tok, (size_t)n, &got), QK_ERR_INVALID_TOKEN);
        tok[i] ^= 0x10;
    }
    assert_int_equal(qk_addr_token_open(&k, tok, (size_t)n - 1, &got), QK_ERR_INVALID_TOKEN);
    assert_int_equal(qk_addr_token_open(&k, tok, 5, &got), QK_ERR_INVALID_TOKEN);
    assert_int_equal(qk_addr_token_seal(&k, &t, nonce, tok, (size_t)n - 1),
                     QK_ERR_BUFFER_TOO_SMALL);
    t.addr_len = QK_ADDR_TOKEN_ADDR_MAX + 1;
    assert_int_equal(qk_addr_token_seal(&k, &t, nonce, tok, sizeof tok), QK_ERR_INVALID_ARG);
    qk_addr_token_key_free(&k);
    qk_addr_token_key_free(&k2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_all_lengths),
        cmocka_unit_test(test_bit_flips_fail),
        cmocka_unit_test(test_wrong_pn_or_key_fails),
        cmocka_unit_test(test_null_suite),
        cmocka_unit_test(test_key_update),
        cmocka_unit_test(test_hp_truncated),
        cmocka_unit_test(test_reset_token),
        cmocka_unit_test(test_addr_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
