/* SPDX-License-Identifier: MIT */
/* TLS_AES_128_CCM_SHA256 (RFC 9001 §5.3): packet protection checked
 * against OpenSSL's AES-128-CCM (12-byte nonce, 16-byte tag) as an
 * independent implementation, header protection = AES-128-ECB (§5.4.3),
 * the cipher list of qk_config, and a whole connection negotiating CCM. */
#include <openssl/evp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "crypto/aead.h"
#include "crypto/keys.h"
#include "crypto/tls.h"
#include "qk_pair.h"
#include "qk_test.h"
#include "transport/conn/conn.h"

/* AES-128-CCM with OpenSSL: ciphertext + tag of pt under key/nonce/aad. */
static void openssl_ccm(const uint8_t *key, const uint8_t *nonce, const uint8_t *aad, int aad_len,
                        const uint8_t *pt, int len, uint8_t *ct, uint8_t *tag)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n;
    assert_int_equal(EVP_EncryptInit_ex(c, EVP_aes_128_ccm(), NULL, NULL, NULL), 1);
    assert_int_equal(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_CCM_SET_IVLEN, 12, NULL), 1);
    assert_int_equal(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_CCM_SET_TAG, 16, NULL), 1);
    assert_int_equal(EVP_EncryptInit_ex(c, NULL, NULL, key, nonce), 1);
    assert_int_equal(EVP_EncryptUpdate(c, NULL, &n, NULL, len), 1); /* CCM: length first */
    assert_int_equal(EVP_EncryptUpdate(c, NULL, &n, aad, aad_len), 1);
    assert_int_equal(EVP_EncryptUpdate(c, ct, &n, pt, len), 1);
    assert_int_equal(EVP_EncryptFinal_ex(c, ct + n, &n), 1);
    assert_int_equal(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_CCM_GET_TAG, 16, tag), 1);
    EVP_CIPHER_CTX_free(c);
}

static void test_ccm_matches_openssl(void **state)
{
    (void)state;
    uint8_t key[16], nonce[12], aad[21], pt[1100], buf[1100], ct[1100], tag[16], tag2[16];
    for (size_t i = 0; i < sizeof key; i++) key[i] = (uint8_t)(0x40 + i);
    for (size_t i = 0; i < sizeof nonce; i++) nonce[i] = (uint8_t)(0x90 ^ i);
    for (size_t i = 0; i < sizeof aad; i++) aad[i] = (uint8_t)(i * 3);
    for (size_t i = 0; i < sizeof pt; i++) pt[i] = (uint8_t)(i * 7 + 1);
    qk_aead a;
    assert_int_equal(qk_aead_init(&a, QK_SUITE_AES_128_CCM, QK_AEAD_BACKEND_AUTO, key, 16), 0);
    memcpy(buf, pt, sizeof pt);
    assert_int_equal(qk_aead_seal(&a, nonce, aad, sizeof aad, buf, sizeof buf, tag), 0);
    openssl_ccm(key, nonce, aad, sizeof aad, pt, sizeof pt, ct, tag2);
    assert_memory_equal(buf, ct, sizeof ct);
    assert_memory_equal(tag, tag2, 16);
    assert_int_equal(qk_aead_open(&a, nonce, aad, sizeof aad, buf, sizeof buf, tag), 0);
    assert_memory_equal(buf, pt, sizeof pt);
    buf[5] ^= 1; /* a flipped bit fails authentication */
    assert_int_equal(qk_aead_open(&a, nonce, aad, sizeof aad, buf, sizeof buf, tag),
                     QK_ERR_DECRYPT);
    qk_aead_free(&a);
    /* Only GnuTLS does CCM here: the other backends refuse it, not fake it. */
    assert_int_equal(qk_aead_init(&a, QK_SUITE_AES_128_CCM, QK_AEAD_BACKEND_NETTLE, key, 16),
                     QK_ERR_INVALID_ARG);
    /* §5.4.3: header protection is AES-128-ECB of the sample, as for GCM. */
    qk_hp h1, h2;
    uint8_t sample[16] = {1, 2, 3}, m1[5], m2[5];
    assert_int_equal(qk_hp_init(&h1, QK_SUITE_AES_128_CCM, QK_AEAD_BACKEND_AUTO, key, 16), 0);
    assert_int_equal(qk_hp_init(&h2, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_OPENSSL, key, 16), 0);
    assert_int_equal(qk_hp_mask(&h1, sample, m1), 0);
    assert_int_equal(qk_hp_mask(&h2, sample, m2), 0);
    assert_memory_equal(m1, m2, 5);
    qk_hp_free(&h1);
    qk_hp_free(&h2);
}

static void test_cipher_list(void **state)
{
    (void)state;
    char prio[256];
    const char *bad;
    assert_int_equal(qk_tls_priority_for_ciphers("TLS_AES_128_CCM_SHA256:TLS_AES_128_GCM_SHA256",
                                                 prio, sizeof prio, &bad),
                     0);
    assert_non_null(strstr(prio, ":+AES-128-CCM:+AES-128-GCM:"));
    assert_int_equal(qk_tls_priority_for_ciphers("TLS_AES_128_GCM_SHA256:TLS_AES_128_CCM_8_SHA256",
                                                 prio, sizeof prio, &bad),
                     QK_ERR_CONFIG);
    assert_string_equal(bad, "TLS_AES_128_CCM_8_SHA256");
    assert_int_equal(qk_tls_priority_for_ciphers("", prio, sizeof prio, &bad), QK_ERR_CONFIG);
    qk_config cfg;
    qk_config_default(&cfg);
    cfg.rng = qk_test_rng;
    cfg.alpn[0] = "x";
    cfg.alpn_count = 1;
    cfg.ciphers = "TLS_AES_128_CCM_8_SHA256";
    char why[256];
    assert_int_equal(qk_config_check(&cfg, why, sizeof why), QK_ERR_CONFIG);
    assert_non_null(strstr(why, "CCM_8 is not allowed"));
}

/* Both sides offer only CCM: the connection runs on it, bytes intact. */
static void test_connection_on_ccm(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 5 * QK_NS_PER_MS), 0);
    p.ccfg.ciphers = p.scfg.ciphers = "TLS_AES_128_CCM_SHA256";
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    assert_int_equal(qk_tls_cipher_suite(p.cconn->tls), QK_SUITE_AES_128_CCM);
    assert_int_equal(qk_tls_cipher_suite(p.sconn->tls), QK_SUITE_AES_128_CCM);
    uint64_t sid;
    assert_int_equal(qk_stream_open(p.cconn, true, &sid), 0);
    size_t w = 0, r = 0;
    bool bad = false;
    qk_time end = p.now + 5 * QK_NS_PER_S;
    qk_pair_write_pattern(p.cconn, sid, 300000, &w);
    qk_pair_flush(&p);
    while (p.now < end && r < 300000 && qk_pair_step(&p)) {
        if (p.sconn) qk_pair_read_pattern(p.sconn, sid, &r, &bad);
        qk_pair_write_pattern(p.cconn, sid, 300000, &w);
    }
    assert_int_equal(r, 300000);
    assert_false(bad);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ccm_matches_openssl),
        cmocka_unit_test(test_cipher_list),
        cmocka_unit_test(test_connection_on_ccm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
