/* SPDX-License-Identifier: MIT */
/* QUIC-LB connection IDs (draft-ietf-quic-load-balancers-21): every test
 * vector of its Appendix B and the worked example of §5.4.2.4, byte for byte
 * in both directions; round trips at every length the draft allows, keyed and
 * not; unroutable CIDs (§3.2, §4.1); the configuration limits (§3.1, §5.3). */
#include "qk_test.h"

#include <quack/quiclb.h>
#include <string.h>

typedef struct vector {
    uint8_t config_id;
    const char *sid, *nonce, *cid;
} vector;

static const char *const appendix_key = "8f95f09245765f80256934e50c66207f"; /* App. B.2 */

static size_t hex(const char *h, uint8_t *out, size_t cap)
{
    long n = qk_test_hex(h, out, cap);
    assert_true(n > 0);
    return (size_t)n;
}

static void make(qk_quiclb **lb, uint8_t config_id, size_t sid_len, size_t nonce_len,
                 const char *key_hex)
{
    qk_quiclb_config cfg;
    qk_quiclb_config_default(&cfg);
    cfg.config_id = config_id;
    cfg.server_id_len = (uint8_t)sid_len;
    cfg.nonce_len = (uint8_t)nonce_len;
    if (key_hex) {
        assert_int_equal(hex(key_hex, cfg.key, sizeof cfg.key), QK_QUICLB_KEY_BYTES);
        cfg.has_key = true;
    }
    assert_int_equal(qk_quiclb_new(&cfg, lb), 0);
}

/* Encode sid + nonce and compare with cid; decode cid back to both, with and
 * without asking for the nonce (three passes when the server ID allows). */
static void check_vector(const vector *v, const char *key_hex)
{
    uint8_t sid[QK_QUICLB_MAX_SERVER_ID_BYTES], nonce[QK_QUICLB_MAX_NONCE_BYTES];
    uint8_t want[QK_QUICLB_MAX_CID_BYTES], got[QK_QUICLB_MAX_CID_BYTES];
    size_t sid_len = hex(v->sid, sid, sizeof sid), nonce_len = hex(v->nonce, nonce, sizeof nonce);
    size_t cid_len = hex(v->cid, want, sizeof want);
    qk_quiclb *lb = NULL;
    make(&lb, v->config_id, sid_len, nonce_len, key_hex);
    assert_int_equal(qk_quiclb_cid_bytes(lb), cid_len);
    assert_int_equal(qk_quiclb_encode_nonce(lb, sid, nonce, 0, got, sizeof got), (int)cid_len);
    assert_memory_equal(got, want, cid_len);

    uint8_t sid2[QK_QUICLB_MAX_SERVER_ID_BYTES] = {0}, nonce2[QK_QUICLB_MAX_NONCE_BYTES] = {0};
    assert_int_equal(qk_quiclb_decode(lb, want, cid_len, sid2, nonce2), (int)sid_len);
    assert_memory_equal(sid2, sid, sid_len);
    assert_memory_equal(nonce2, nonce, nonce_len);
    memset(sid2, 0, sizeof sid2);
    assert_int_equal(qk_quiclb_decode(lb, want, cid_len, sid2, NULL), (int)sid_len);
    assert_memory_equal(sid2, sid, sid_len);
    qk_quiclb_del(lb);
}

/* App. B.1. The second row is printed as "1 350d28b420 3487d970b
 * 20a350d28b4203487d970b": each field is a hex number without leading
 * zeros, and the CID is the concatenation of hex(0x20) (config rotation 1),
 * hex(10) (the length self-description), the server ID and the nonce
 * (0x03487d970b, five bytes: 10 - 5). The first row reads the same way
 * ("0" "7" c4605e 4504cc4f). The bytes are therefore 2a 350d28b420
 * 03487d970b. */
static void test_plaintext_vectors(void **state)
{
    (void)state;
    static const vector v[] = {
        {0, "c4605e", "4504cc4f", "07c4605e4504cc4f"},
        {1, "350d28b420", "03487d970b", "2a350d28b42003487d970b"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) check_vector(&v[i], NULL);
}

/* App. B.2: 7 bytes (four passes, odd length), 15 bytes with a server ID
 * longer than the nonce (a fourth decryption pass), 16 bytes (single pass),
 * 18 bytes (four passes, even length). The last row's config rotation column
 * says 3, but its CID's first octet 0x12 is config rotation 0 with the length
 * 18 (0x72 would be rotation 3); the first octet is outside the encrypted
 * block, so the ciphertext is checked under rotation 0. */
static void test_encrypted_vectors(void **state)
{
    (void)state;
    static const vector v[] = {
        {0, "ed793a", "ee080dbf", "0720b1d07b359d3c"},
        {1, "ed793a51d49b8f5fab65", "ee080dbf48", "2fcc381bc74cb4fbad2823a3d1f8fed2"},
        {2, "ed793a51d49b8f5f", "ee080dbf48c0d1e5", "504dd2d05a7b0de9b2b9907afb5ecf8cc3"},
        {0, "ed793a51d49b8f5fab", "ee080dbf48c0d1e55d", "125779c9cc86beb3a3a4a3ca96fce4bfe0cdbc"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) check_vector(&v[i], appendix_key);
    /* The ciphertext of the last row is the same under rotation 3; only the
     * first octet changes. */
    uint8_t sid[9], nonce[9], cid[19], want[19];
    hex(v[3].sid, sid, sizeof sid);
    hex(v[3].nonce, nonce, sizeof nonce);
    hex(v[3].cid, want, sizeof want);
    qk_quiclb *lb = NULL;
    make(&lb, 3, 9, 9, appendix_key);
    assert_int_equal(qk_quiclb_encode_nonce(lb, sid, nonce, 0, cid, sizeof cid), 19);
    assert_int_equal(cid[0], 0x72);
    assert_memory_equal(cid + 1, want + 1, 18);
    qk_quiclb_del(lb);
}

/* §5.4.2.4: the encryption example (server ID 0x31441a, nonce 0x9c69c275). */
static void test_worked_example(void **state)
{
    (void)state;
    const vector v = {0, "31441a", "9c69c275", "0767947d29be054a"};
    check_vector(&v, "fdf726a9893ec05c0632d3956680baf0");
}

/* Every (server ID, nonce) length pair the draft allows, with and without a
 * key: decode(encode(x)) == x; a keyed CID differs from the plaintext; and
 * every single-bit change of a keyed ciphertext decodes to another plaintext
 * (the construction is a permutation of the block). */
static void roundtrip(size_t sid_len, size_t nonce_len, bool keyed, uint64_t *rs)
{
    qk_quiclb *lb = NULL;
    make(&lb, (uint8_t)(sid_len % 7), sid_len, nonce_len, keyed ? appendix_key : NULL);
    uint8_t sid[16], nonce[19], cid[20], sid2[16], nonce2[19];
    qk_test_rng(rs, sid, sid_len);
    qk_test_rng(rs, nonce, nonce_len);
    int n = qk_quiclb_encode_nonce(lb, sid, nonce, 0, cid, sizeof cid);
    assert_int_equal(n, (int)(1 + sid_len + nonce_len));
    assert_int_equal(cid[0], (sid_len % 7) << 5 | (sid_len + nonce_len));
    assert_int_equal(qk_quiclb_decode(lb, cid, (size_t)n, sid2, nonce2), (int)sid_len);
    assert_memory_equal(sid2, sid, sid_len);
    assert_memory_equal(nonce2, nonce, nonce_len);
    bool clear = !memcmp(cid + 1, sid, sid_len) && !memcmp(cid + 1 + sid_len, nonce, nonce_len);
    assert_true(clear == !keyed);
    for (size_t bit = 8; keyed && bit < (size_t)n * 8; bit++) {
        cid[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_int_equal(qk_quiclb_decode(lb, cid, (size_t)n, sid2, nonce2), (int)sid_len);
        assert_true(memcmp(sid2, sid, sid_len) || memcmp(nonce2, nonce, nonce_len));
        cid[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    qk_quiclb_del(lb);
}

static void test_roundtrip_every_length(void **state)
{
    (void)state;
    uint64_t rs = 38;
    unsigned pairs = 0;
    for (size_t s = QK_QUICLB_MIN_SERVER_ID_BYTES; s <= QK_QUICLB_MAX_SERVER_ID_BYTES; s++)
        for (size_t n = QK_QUICLB_MIN_NONCE_BYTES; s + n <= QK_QUICLB_MAX_PLAINTEXT_BYTES; n++) {
            roundtrip(s, n, false, &rs);
            roundtrip(s, n, true, &rs);
            pairs++;
        }
    assert_int_equal(pairs, 120); /* sums 5..19: 1 + 2 + ... + 15 */
}

/* qk_quiclb_encode: fresh nonces from the caller's RNG, the configured
 * server ID when given none, random low bits without length encoding. */
static void test_encode_random(void **state)
{
    (void)state;
    qk_quiclb_config cfg;
    qk_quiclb_config_default(&cfg);
    cfg.config_id = 5;
    cfg.server_id_len = 2;
    cfg.nonce_len = 6;
    cfg.server_id[0] = 0xab;
    cfg.server_id[1] = 0xcd;
    cfg.has_key = true;
    hex(appendix_key, cfg.key, sizeof cfg.key);
    qk_quiclb *lb = NULL;
    assert_int_equal(qk_quiclb_new(&cfg, &lb), 0);
    uint64_t rs = 1;
    uint8_t a[9], b[9], sid[2];
    assert_int_equal(qk_quiclb_encode(lb, NULL, qk_test_rng, &rs, a, sizeof a), 9);
    assert_int_equal(qk_quiclb_encode(lb, NULL, qk_test_rng, &rs, b, sizeof b), 9);
    assert_memory_not_equal(a + 1, b + 1, 8);
    assert_int_equal(a[0], 5 << 5 | 8);
    assert_int_equal(qk_quiclb_decode(lb, a, sizeof a, sid, NULL), 2);
    assert_memory_equal(sid, cfg.server_id, 2);
    assert_int_equal(qk_quiclb_decode(lb, b, sizeof b, sid, NULL), 2);
    assert_memory_equal(sid, cfg.server_id, 2);
    const uint8_t other[2] = {0x01, 0x02};
    assert_int_equal(qk_quiclb_encode(lb, other, qk_test_rng, &rs, a, sizeof a), 9);
    assert_int_equal(qk_quiclb_decode(lb, a, sizeof a, sid, NULL), 2);
    assert_memory_equal(sid, other, 2);
    assert_int_equal(qk_quiclb_encode(lb, NULL, qk_test_rng, &rs, a, 8), QK_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(qk_quiclb_encode(lb, NULL, NULL, &rs, a, 9), QK_ERR_INVALID_ARG);
    qk_quiclb_del(lb);

    /* §3.3: without length encoding the low five bits are random. */
    cfg.encode_len = false;
    assert_int_equal(qk_quiclb_new(&cfg, &lb), 0);
    unsigned low_seen = 0;
    for (int i = 0; i < 64; i++) {
        assert_int_equal(qk_quiclb_encode(lb, NULL, qk_test_rng, &rs, a, sizeof a), 9);
        assert_int_equal(a[0] >> 5, 5);
        low_seen |= 1u << (a[0] & 0x1f);
        assert_int_equal(qk_quiclb_decode(lb, a, sizeof a, sid, NULL), 2);
        assert_memory_equal(sid, cfg.server_id, 2);
    }
    assert_true(__builtin_popcount(low_seen) > 16);
    qk_quiclb_del(lb);
}

/* §4.1: what a load balancer cannot route. */
static void test_unroutable(void **state)
{
    (void)state;
    qk_quiclb *lb = NULL;
    make(&lb, 2, 3, 4, NULL);
    uint8_t cid[8] = {2 << 5 | 7, 1, 2, 3, 4, 5, 6, 7}, sid[3];
    assert_int_equal(qk_quiclb_decode(lb, cid, 8, sid, NULL), 3);
    assert_int_equal(qk_quiclb_decode(lb, cid, 20, sid, NULL), 3); /* longer input: a datagram */
    assert_int_equal(qk_quiclb_decode(lb, cid, 7, sid, NULL), QK_ERR_TRUNCATED);
    cid[0] = 1 << 5 | 7; /* another configuration */
    assert_int_equal(qk_quiclb_decode(lb, cid, 8, sid, NULL), QK_ERR_NOT_FOUND);
    cid[0] = 7 << 5 | 7; /* §3.2: 0b111 */
    assert_int_equal(qk_quiclb_decode(lb, cid, 8, sid, NULL), QK_ERR_NOT_FOUND);
    cid[0] = 2 << 5 | 6; /* a self-encoded length too short for this configuration */
    assert_int_equal(qk_quiclb_decode(lb, cid, 8, sid, NULL), QK_ERR_NOT_FOUND);
    cid[0] = 2 << 5 | 9; /* longer: the server appended bytes (§5.4) */
    assert_int_equal(qk_quiclb_decode(lb, cid, 8, sid, NULL), 3);
    assert_int_equal(qk_quiclb_config_id_of(cid, 8), 2);
    assert_int_equal(qk_quiclb_config_id_of(cid, 0), QK_ERR_TRUNCATED);
    assert_int_equal(qk_quiclb_decode(lb, NULL, 8, sid, NULL), QK_ERR_INVALID_ARG);

    uint64_t rs = 7;
    uint8_t u[QK_QUICLB_MAX_CID_BYTES];
    for (size_t len = 8; len <= 20; len++) {
        assert_int_equal(qk_quiclb_encode_unroutable(qk_test_rng, &rs, u, len), (int)len);
        assert_int_equal(u[0], 0xe0 | (len - 1));
        assert_int_equal(qk_quiclb_config_id_of(u, len), QK_QUICLB_UNROUTABLE_ID);
        assert_int_equal(qk_quiclb_decode(lb, u, len, sid, NULL), QK_ERR_NOT_FOUND);
    }
    assert_int_equal(qk_quiclb_encode_unroutable(qk_test_rng, &rs, u, 7), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_quiclb_encode_unroutable(qk_test_rng, &rs, u, 21), QK_ERR_INVALID_ARG);
    qk_quiclb_del(lb);
}

/* §3.1, §5.3 and App. A: the limits qk_quiclb_new enforces. */
static void test_config_limits(void **state)
{
    (void)state;
    static const struct {
        uint8_t id, sid, nonce;
        int rc;
        const char *msg;
    } c[] = {
        {0, 1, 4, 0, ""},
        {6, 15, 4, 0, ""},
        {0, 1, 18, 0, ""},
        {7, 3, 4, QK_ERR_CONFIG, "config_id 7 is out of range: use 0..6"},
        {0, 0, 4, QK_ERR_CONFIG, "server ID length 0 is out of range: use 1..15"},
        {0, 16, 4, QK_ERR_CONFIG, "server ID length 16 is out of range"},
        {0, 3, 3, QK_ERR_CONFIG, "nonce length 3 is out of range: use 4..18"},
        {0, 1, 19, QK_ERR_CONFIG, "nonce length 19 is out of range"},
        {0, 10, 10, QK_ERR_CONFIG, "server ID length 10 + nonce length 10 is over 19 bytes"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        qk_quiclb_config cfg;
        qk_quiclb_config_default(&cfg);
        cfg.config_id = c[i].id;
        cfg.server_id_len = c[i].sid;
        cfg.nonce_len = c[i].nonce;
        char err[200];
        assert_int_equal(qk_quiclb_config_check(&cfg, err, sizeof err), c[i].rc);
        assert_non_null(strstr(err, c[i].msg));
        qk_quiclb *lb = NULL;
        assert_int_equal(qk_quiclb_new(&cfg, &lb), c[i].rc);
        assert_true(c[i].rc ? lb == NULL : lb != NULL);
        qk_quiclb_del(lb);
    }
    assert_int_equal(qk_quiclb_config_check(NULL, NULL, 0), QK_ERR_INVALID_ARG);
    qk_quiclb_del(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plaintext_vectors), cmocka_unit_test(test_encrypted_vectors),
        cmocka_unit_test(test_worked_example),    cmocka_unit_test(test_roundtrip_every_length),
        cmocka_unit_test(test_encode_random),     cmocka_unit_test(test_unroutable),
        cmocka_unit_test(test_config_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
