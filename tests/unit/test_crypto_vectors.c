/* SPDX-License-Identifier: MIT */
/* RFC 9001 Appendix A sample packet protection, byte for byte; HKDF vectors. */
#include "qk_test.h"

#include <string.h>

#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <quack/common.h>

#include "crypto/keys.h"
#include "crypto/packet.h"
#include "crypto/token.h"

/* Hex blocks copied from RFC 9001 Appendix A (quicwg/base-drafts rfc9001.md). */
static const char A2_CRYPTO_FRAME[] =
    "060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868"
    "04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578"
    "616d706c652e636f6dff01000100000a00080006001d00170018001000070005"
    "04616c706e000500050100000000003300260024001d00209370b2c9caa47fba"
    "baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400"
    "0d0010000e0403050306030203080408050806002d00020101001c0002400100"
    "3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000"
    "75300901100f088394c8f03e51570806048000ffff";
static const char A2_PACKET[] = "c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11"
                                "d242b123dc9bd8bab936b47d92ec356c0bab7df5976d27cd449f63300099f399"
                                "1c260ec4c60d17b31f8429157bb35a1282a643a8d2262cad67500cadb8e7378c"
                                "8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6005f80fcb7df6212"
                                "30c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5"
                                "457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c208"
                                "4dce25ff9b06cde535d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec"
                                "4e15daf8500a6ef69ec4e3feb6b1d98e610ac8b7ec3faf6ad760b7bad1db4ba3"
                                "485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e30c5c4287e53805db"
                                "059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c"
                                "7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f8"
                                "9937f5a67258bf63ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556"
                                "be52afe3f565636ad1b17d508b73d8743eeb524be22b3dcbc2c7468d54119c74"
                                "68449a13d8e3b95811a198f3491de3e7fe942b330407abf82a4ed7c1b311663a"
                                "c69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00"
                                "f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632"
                                "291d6a418211cc2962e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe58964"
                                "25c5bac4aee82e57a85aaf4e2513e4f05796b07ba2ee47d80506f8d2c25e50fd"
                                "14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c1f28ff18f58891ff"
                                "ef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198"
                                "e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009dd"
                                "c324044e847a4f4a0ab34f719595de37252d6235365e9b84392b061085349d73"
                                "203a4a13e96f5432ec0fd4a1ee65accdd5e3904df54c1da510b0ff20dcc0c77f"
                                "cb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de354270123cb11450e"
                                "fc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03ade"
                                "a2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e724047"
                                "90a2181014f3b94a4e97d117b438130368cc39dbb2d198065ae3986547926cd2"
                                "162f40a29f0c3c8745c0f50fba3852e566d44575c29d39a03f0cda721984b6f4"
                                "40591f355e12d439ff150aab7613499dbd49adabc8676eef023b15b65bfc5ca0"
                                "6948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e"
                                "8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0"
                                "be79e2fb8f5d5fbbe2e30ecadd220723c8c0aea8078cdfcb3868263ff8f09400"
                                "54da48781893a7e49ad5aff4af300cd804a6b6279ab3ff3afb64491c85194aab"
                                "760d58a606654f9f4400e8b38591356fbf6425aca26dc85244259ff2b19c41b9"
                                "f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4"
                                "056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd4684064"
                                "7e78bfe706ca4cf5e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241"
                                "e221af44860018ab0856972e194cd934";
static const char A3_PAYLOAD[] = "02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739"
                                 "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94"
                                 "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00"
                                 "020304";
static const char A3_PACKET[] = "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a"
                                "5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3"
                                "dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84"
                                "022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4"
                                "2158407dd074ee";
static const char A4_RETRY[] = "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f"
                               "0f2496ba";

static const char DCID[] = "8394c8f03e515708";

static size_t hex(const char *h, uint8_t *out, size_t cap)
{
    long n = qk_test_hex(h, out, cap);
    assert_true(n >= 0);
    return (size_t)n;
}

static void assert_hex_eq(const uint8_t *got, size_t len, const char *want_hex)
{
    uint8_t want[2048];
    size_t n = hex(want_hex, want, sizeof want);
    assert_int_equal(n, len);
    assert_memory_equal(got, want, len);
}

/* RFC 5869 Appendix A.1 (SHA-256, basic). */
static void test_hkdf_rfc5869(void **state)
{
    uint8_t ikm[22], salt[13], info[10], prk[32], okm[42];
    memset(ikm, 0x0b, sizeof ikm);
    for (int i = 0; i < 13; i++) salt[i] = (uint8_t)i;
    for (int i = 0; i < 10; i++) info[i] = (uint8_t)(0xf0 + i);
    assert_int_equal(qk_hkdf_extract(QK_HASH_SHA256, salt, sizeof salt, ikm, sizeof ikm, prk), 0);
    assert_hex_eq(prk, 32, "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5");
    assert_int_equal(qk_hkdf_expand(QK_HASH_SHA256, prk, 32, info, sizeof info, okm, 42), 0);
    assert_hex_eq(okm, 42,
                  "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                  "34007208d5b887185865");
    assert_int_equal(qk_hkdf_expand(QK_HASH_SHA256, prk, 32, NULL, 0, okm, 255 * 32 + 1),
                     QK_ERR_INVALID_ARG);
}

/* HKDF-SHA384 against OpenSSL's independent HKDF implementation. */
static void test_hkdf_sha384_vs_openssl(void **state)
{
    uint8_t salt[48], ikm[40], info[30], ours[100], ref[100], prk[48];
    uint64_t rng = 42;
    qk_test_rng(&rng, salt, sizeof salt);
    qk_test_rng(&rng, ikm, sizeof ikm);
    qk_test_rng(&rng, info, sizeof info);
    assert_int_equal(qk_hkdf_extract(QK_HASH_SHA384, salt, sizeof salt, ikm, sizeof ikm, prk), 0);
    assert_int_equal(qk_hkdf_expand(QK_HASH_SHA384, prk, 48, info, sizeof info, ours, 100), 0);
    EVP_PKEY_CTX *pctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    size_t outlen = sizeof ref;
    assert_non_null(pctx);
    assert_int_equal(EVP_PKEY_derive_init(pctx), 1);
    assert_int_equal(EVP_PKEY_CTX_set_hkdf_md(pctx, EVP_sha384()), 1);
    assert_int_equal(EVP_PKEY_CTX_set1_hkdf_salt(pctx, salt, sizeof salt), 1);
    assert_int_equal(EVP_PKEY_CTX_set1_hkdf_key(pctx, ikm, sizeof ikm), 1);
    assert_int_equal(EVP_PKEY_CTX_add1_hkdf_info(pctx, info, sizeof info), 1);
    assert_int_equal(EVP_PKEY_derive(pctx, ref, &outlen), 1);
    EVP_PKEY_CTX_free(pctx);
    assert_memory_equal(ours, ref, sizeof ref);
}

/* A.1: the HkdfLabel info strings, the initial secrets and the derived keys. */
static void test_a1_keys(void **state)
{
    uint8_t dcid[8], cs[32], ss[32], initial[32], out[32];
    static const uint8_t salt[] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
                                   0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};
    size_t dl = hex(DCID, dcid, sizeof dcid);
    assert_int_equal(qk_hkdf_extract(QK_HASH_SHA256, salt, sizeof salt, dcid, dl, initial), 0);
    assert_hex_eq(initial, 32, "7db5df06e7a69e432496adedb00851923595221596ae2ae9fb8115c1e9ed0a44");

    /* The label strings of A.1 fed to plain HKDF-Expand give the same outputs. */
    uint8_t info[32], a[32], b[32];
    size_t il = hex("00200f746c73313320636c69656e7420696e00", info, sizeof info);
    assert_int_equal(qk_hkdf_expand(QK_HASH_SHA256, initial, 32, info, il, a, 32), 0);
    assert_int_equal(qk_hkdf_expand_label(QK_HASH_SHA256, initial, 32, "client in", NULL, 0, b, 32),
                     0);
    assert_memory_equal(a, b, 32);

    assert_int_equal(qk_crypto_initial_secrets(QK_QUIC_V1, dcid, dl, cs, ss), 0);
    assert_hex_eq(cs, 32, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea");
    assert_hex_eq(ss, 32, "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b");

    qk_key_material m;
    assert_int_equal(qk_crypto_derive_material(QK_QUIC_V1, QK_SUITE_AES_128_GCM, cs, 32, &m), 0);
    assert_int_equal(m.key_len, 16);
    assert_hex_eq(m.key, 16, "1f369613dd76d5467730efcbe3b1a22d");
    assert_hex_eq(m.iv, 12, "fa044b2f42a3fd3b46fb255c");
    assert_hex_eq(m.hp, 16, "9f50449e04a0e810283a1e9933adedd2");
    assert_int_equal(qk_crypto_derive_material(QK_QUIC_V1, QK_SUITE_AES_128_GCM, ss, 32, &m), 0);
    assert_hex_eq(m.key, 16, "cf3a5331653c364c88f0f379b6067e37");
    assert_hex_eq(m.iv, 12, "0ac1493ca1905853b0bba03e");
    assert_hex_eq(m.hp, 16, "c206b8d9b9f0f37644430b490eeaa314");

    assert_int_equal(qk_crypto_initial_secrets(0xbabababa, dcid, dl, cs, ss), QK_ERR_VERSION);
    (void)out;
}

/* Protect hdr||payload as RFC 9001 does and compare with the expected packet,
 * then undo it and get the original back. */
static void protect_and_check(qk_aead_backend be, int server, const char *hdr_hex,
                              const uint8_t *payload, size_t plen, uint64_t pn,
                              const char *packet_hex)
{
    uint8_t dcid[8], cs[32], ss[32], pkt[1500], orig[1500];
    size_t dl = hex(DCID, dcid, sizeof dcid);
    assert_int_equal(qk_crypto_initial_secrets(QK_QUIC_V1, dcid, dl, cs, ss), 0);
    qk_pkt_keys k;
    assert_int_equal(
        qk_pkt_keys_init_ex(&k, QK_QUIC_V1, QK_SUITE_AES_128_GCM, be, server ? ss : cs, 32), 0);
    size_t hl = hex(hdr_hex, pkt, sizeof pkt);
    memcpy(pkt + hl, payload, plen);
    size_t total = hl + plen + 16;
    memcpy(orig, pkt, hl + plen);
    size_t pn_len = (pkt[0] & 3) + 1, pn_off = hl - pn_len;
    assert_int_equal(qk_pkt_seal(&k, pn, pkt, hl, pkt + hl, plen), (int)(plen + 16));
    assert_int_equal(qk_hp_protect(&k, pkt, total, pn_off), 0);
    assert_hex_eq(pkt, total, packet_hex);

    size_t got_pn_len = 0;
    assert_int_equal(qk_hp_unprotect(&k, pkt, total, pn_off, &got_pn_len), 0);
    assert_int_equal(got_pn_len, pn_len);
    assert_memory_equal(pkt, orig, hl);
    assert_int_equal(qk_pkt_open(&k, pn, pkt, hl, pkt + hl, plen + 16), (int)plen);
    assert_memory_equal(pkt + hl, orig + hl, plen);
    qk_pkt_keys_free(&k);
}

/* A.2: the full 1200-byte client Initial. */
static void test_a2_client_initial(void **state)
{
    uint8_t payload[1162];
    memset(payload, 0, sizeof payload); /* PADDING frames */
    size_t n = hex(A2_CRYPTO_FRAME, payload, sizeof payload);
    assert_int_equal(n, 245);
    for (int be = QK_AEAD_BACKEND_AUTO; be < QK_AEAD_BACKEND_COUNT; be++)
        protect_and_check((qk_aead_backend)be, 0, "c300000001088394c8f03e5157080000449e00000002",
                          payload, sizeof payload, 2, A2_PACKET);
}

/* A.3: the server Initial (2-byte packet number). */
static void test_a3_server_initial(void **state)
{
    uint8_t payload[256];
    size_t n = hex(A3_PAYLOAD, payload, sizeof payload);
    for (int be = QK_AEAD_BACKEND_AUTO; be < QK_AEAD_BACKEND_COUNT; be++)
        protect_and_check((qk_aead_backend)be, 1, "c1000000010008f067a5502a4262b50040750001",
                          payload, n, 1, A3_PACKET);
}

/* A.4: Retry integrity tag over the pseudo-packet with ODCID 8394c8f03e515708. */
static void test_a4_retry(void **state)
{
    uint8_t retry[64], pseudo[128], tag[16];
    size_t rl = hex(A4_RETRY, retry, sizeof retry);
    assert_int_equal(rl, 36);
    pseudo[0] = 8;
    hex(DCID, pseudo + 1, 8);
    memcpy(pseudo + 9, retry, rl - 16);
    size_t pl = 9 + rl - 16;
    assert_int_equal(qk_retry_tag_compute(QK_QUIC_V1, pseudo, pl, tag), 0);
    assert_memory_equal(tag, retry + rl - 16, 16);
    assert_int_equal(qk_retry_tag_verify(QK_QUIC_V1, pseudo, pl, retry + rl - 16), 0);
    pseudo[3] ^= 0x40;
    assert_int_equal(qk_retry_tag_verify(QK_QUIC_V1, pseudo, pl, retry + rl - 16), QK_ERR_DECRYPT);
    assert_int_equal(qk_retry_tag_compute(7, pseudo, pl, tag), QK_ERR_VERSION);
}

/* A.5: ChaCha20-Poly1305 short header packet, pn 654360564, payload 01. */
static void test_a5_chacha(void **state)
{
    uint8_t secret[32], ku[32], pkt[64];
    hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b", secret, 32);
    qk_key_material m;
    assert_int_equal(
        qk_crypto_derive_material(QK_QUIC_V1, QK_SUITE_CHACHA20_POLY1305, secret, 32, &m), 0);
    assert_hex_eq(m.key, 32, "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8");
    assert_hex_eq(m.iv, 12, "e0459b3474bdd0e44a41c144");
    assert_hex_eq(m.hp, 32, "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4");
    assert_int_equal(qk_crypto_next_secret(QK_QUIC_V1, QK_SUITE_CHACHA20_POLY1305, secret, 32, ku),
                     0);
    assert_hex_eq(ku, 32, "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9");

    for (int be = QK_AEAD_BACKEND_AUTO; be < QK_AEAD_BACKEND_COUNT; be++) {
        qk_pkt_keys k;
        uint8_t nonce[12];
        assert_int_equal(qk_pkt_keys_init_ex(&k, QK_QUIC_V1, QK_SUITE_CHACHA20_POLY1305,
                                             (qk_aead_backend)be, secret, 32),
                         0);
        qk_pkt_nonce(&k, 654360564, nonce);
        assert_hex_eq(nonce, 12, "e0459b3474bdd0e46d417eb0");
        size_t hl = hex("4200bff4", pkt, sizeof pkt);
        pkt[hl] = 0x01;
        assert_int_equal(qk_pkt_seal(&k, 654360564, pkt, hl, pkt + hl, 1), 17);
        assert_hex_eq(pkt + hl, 17, "655e5cd55c41f69080575d7999c25a5bfb");
        assert_int_equal(qk_hp_protect(&k, pkt, 21, 1), 0);
        assert_hex_eq(pkt, 21, "4cfe4189655e5cd55c41f69080575d7999c25a5bfb");
        size_t pn_len;
        assert_int_equal(qk_hp_unprotect(&k, pkt, 21, 1, &pn_len), 0);
        assert_int_equal(pn_len, 3);
        assert_hex_eq(pkt, 4, "4200bff4");
        assert_int_equal(qk_pkt_open(&k, 654360564, pkt, 4, pkt + 4, 17), 1);
        assert_int_equal(pkt[4], 0x01);
        /* One byte short: the sample no longer fits. */
        assert_int_equal(qk_hp_unprotect(&k, pkt, 20, 1, &pn_len), QK_ERR_TRUNCATED);
        qk_pkt_keys_free(&k);
    }
}

/* RFC 9369 Appendix A.1: QUIC v2 initial secrets and keys. */
static void test_v2_initial_keys(void **state)
{
    uint8_t dcid[8], cs[32], ss[32];
    size_t dl = hex(DCID, dcid, sizeof dcid);
    qk_key_material m;
    assert_int_equal(qk_crypto_initial_secrets(QK_QUIC_V2, dcid, dl, cs, ss), 0);
    assert_hex_eq(cs, 32, "14ec9d6eb9fd7af83bf5a668bc17a7e283766aade7ecd0891f70f9ff7f4bf47b");
    assert_int_equal(qk_crypto_derive_material(QK_QUIC_V2, QK_SUITE_AES_128_GCM, cs, 32, &m), 0);
    assert_hex_eq(m.key, 16, "8b1a0bc121284290a29e0971b5cd045d");
    assert_hex_eq(m.iv, 12, "91f73e2351d8fa91660e909f");
    assert_hex_eq(m.hp, 16, "45b95e15235d6f45a6b19cbcb0294ba9");
    assert_hex_eq(ss, 32, "0263db1782731bf4588e7e4d93b7463907cb8cd8200b5da55a8bd488eafc37c1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hkdf_rfc5869),      cmocka_unit_test(test_hkdf_sha384_vs_openssl),
        cmocka_unit_test(test_a1_keys),           cmocka_unit_test(test_a2_client_initial),
        cmocka_unit_test(test_a3_server_initial), cmocka_unit_test(test_a4_retry),
        cmocka_unit_test(test_a5_chacha),         cmocka_unit_test(test_v2_initial_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
