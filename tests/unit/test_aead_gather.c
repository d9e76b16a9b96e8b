/* SPDX-License-Identifier: MIT */
/* Out-of-place gathered seal (qk_aead_seal_gather, qk_pkt_seal_gather):
 * every backend and suite, random segment splits with some segments in
 * place in the output buffer, checked against a one-shot OpenSSL EVP
 * encryption of the contiguous plaintext, and against RFC 9001 §A.5. */
#include "qk_test.h"

#include <string.h>

#include <openssl/evp.h>

#include <quack/common.h>

#include "crypto/packet.h"

#define MAXLEN 9000

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Independent oracle: OpenSSL one-shot AEAD over contiguous plaintext. */
static void evp_oracle(qk_crypto_suite s, const uint8_t *key, const uint8_t *nonce,
                       const uint8_t *aad, size_t aad_len, const uint8_t *pt, size_t len,
                       uint8_t *out)
{
    const EVP_CIPHER *c = s == QK_SUITE_AES_128_GCM   ? EVP_aes_128_gcm()
                          : s == QK_SUITE_AES_256_GCM ? EVP_aes_256_gcm()
                                                      : EVP_chacha20_poly1305();
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int n;
    assert_int_equal(EVP_EncryptInit_ex(x, c, NULL, NULL, NULL), 1);
    assert_int_equal(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL), 1);
    assert_int_equal(EVP_EncryptInit_ex(x, NULL, NULL, key, nonce), 1);
    assert_int_equal(EVP_EncryptUpdate(x, NULL, &n, aad, (int)aad_len), 1);
    if (len) assert_int_equal(EVP_EncryptUpdate(x, out, &n, pt, (int)len), 1);
    assert_int_equal(EVP_EncryptFinal_ex(x, out + len, &n), 1);
    assert_int_equal(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, 16, out + len), 1);
    EVP_CIPHER_CTX_free(x);
}

/* Split pt[0..len) into random segments; odd ones are copied into their
 * place in dst (in place), even ones stay in `ext` (out of place). */
static size_t make_segs(uint64_t *r, const uint8_t *pt, size_t len, uint8_t *ext, uint8_t *dst,
                        qk_aead_seg *seg)
{
    size_t n = 0, pos = 0;
    memset(dst, 0xee, len + 16);
    while (pos < len && n < QK_AEAD_MAX_SEGS - 1) {
        size_t k = 1 + rnd(r) % (rnd(r) % 3 == 0 ? 40 : 2000);
        if (k > len - pos) k = len - pos;
        if (n % 2) {
            memcpy(dst + pos, pt + pos, k);
            seg[n] = (qk_aead_seg){dst + pos, k};
        } else {
            memcpy(ext + pos, pt + pos, k);
            seg[n] = (qk_aead_seg){ext + pos, k};
        }
        n++;
        pos += k;
    }
    if (pos < len) {
        memcpy(ext + pos, pt + pos, len - pos);
        seg[n++] = (qk_aead_seg){ext + pos, len - pos};
    }
    return n;
}

static void test_gather_matches_oracle(void **state)
{
    (void)state;
    static uint8_t pt[MAXLEN], ext[MAXLEN], dst[MAXLEN + 16], want[MAXLEN + 16];
    static const size_t lens[] = {0, 1, 15, 16, 17, 63, 64, 65, 1200, 1452, 4096, 8999};
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int su = QK_SUITE_AES_128_GCM; su <= QK_SUITE_CHACHA20_POLY1305; su++) {
        for (int be = QK_AEAD_BACKEND_NETTLE; be < QK_AEAD_BACKEND_COUNT; be++) {
            uint8_t key[32], nonce[12], aad[21];
            for (size_t i = 0; i < sizeof key; i++) key[i] = (uint8_t)rnd(&r);
            qk_aead a;
            assert_int_equal(qk_aead_init(&a, (qk_crypto_suite)su, (qk_aead_backend)be, key,
                                          qk_suite_key_len((qk_crypto_suite)su)),
                             0);
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                for (int rep = 0; rep < 8; rep++) {
                    size_t len = lens[li];
                    for (size_t i = 0; i < len; i++) pt[i] = (uint8_t)rnd(&r);
                    for (size_t i = 0; i < 12; i++) nonce[i] = (uint8_t)rnd(&r);
                    for (size_t i = 0; i < sizeof aad; i++) aad[i] = (uint8_t)rnd(&r);
                    qk_aead_seg seg[QK_AEAD_MAX_SEGS];
                    size_t n = make_segs(&r, pt, len, ext, dst, seg);
                    assert_int_equal(
                        qk_aead_seal_gather(&a, nonce, aad, sizeof aad, seg, n, len, dst), 0);
                    evp_oracle((qk_crypto_suite)su, key, nonce, aad, sizeof aad, pt, len, want);
                    assert_memory_equal(dst, want, len + 16);
                    /* and it opens */
                    assert_int_equal(qk_aead_open(&a, nonce, aad, sizeof aad, dst, len, dst + len),
                                     0);
                    assert_memory_equal(dst, pt, len);
                }
            }
            qk_aead_free(&a);
        }
    }
}

static void test_gather_bad_args(void **state)
{
    (void)state;
    uint8_t key[16] = {0}, nonce[12] = {0}, buf[64];
    qk_aead a;
    assert_int_equal(qk_aead_init(&a, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_AUTO, key, 16), 0);
    qk_aead_seg seg[QK_AEAD_MAX_SEGS + 1];
    for (size_t i = 0; i <= QK_AEAD_MAX_SEGS; i++) seg[i] = (qk_aead_seg){key, 1};
    /* too many segments */
    assert_int_equal(qk_aead_seal_gather(&a, nonce, NULL, 0, seg, QK_AEAD_MAX_SEGS + 1,
                                         QK_AEAD_MAX_SEGS + 1, buf),
                     QK_ERR_INVALID_ARG);
    /* lengths do not add up */
    assert_int_equal(qk_aead_seal_gather(&a, nonce, NULL, 0, seg, 2, 3, buf), QK_ERR_INVALID_ARG);
    qk_aead_free(&a);
}

/* RFC 9001 §A.5: ChaCha20-Poly1305 short header packet, payload 0x01 given
 * out of place. */
static void test_rfc9001_a5(void **state)
{
    (void)state;
    uint8_t secret[32], want[21];
    qk_test_hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b", secret,
                sizeof secret);
    qk_test_hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb", want, sizeof want);
    for (int be = QK_AEAD_BACKEND_NETTLE; be < QK_AEAD_BACKEND_COUNT; be++) {
        qk_pkt_keys k;
        assert_int_equal(qk_pkt_keys_init_ex(&k, QK_QUIC_V1, QK_SUITE_CHACHA20_POLY1305,
                                             (qk_aead_backend)be, secret, sizeof secret),
                         0);
        uint8_t pkt[21] = {0x42, 0x00, 0xbf, 0xf4};
        static const uint8_t one = 0x01;
        qk_aead_seg seg = {&one, 1};
        assert_int_equal(qk_pkt_seal_gather(&k, 654360564, pkt, 4, &seg, 1, 1, pkt + 4), 17);
        assert_int_equal(qk_hp_protect(&k, pkt, sizeof pkt, 1), 0);
        assert_memory_equal(pkt, want, sizeof want);
        qk_pkt_keys_free(&k);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gather_matches_oracle),
        cmocka_unit_test(test_gather_bad_args),
        cmocka_unit_test(test_rfc9001_a5),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
