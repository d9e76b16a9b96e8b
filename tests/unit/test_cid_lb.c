/* SPDX-License-Identifier: MIT */
/* QUIC-LB plaintext connection IDs (draft-ietf-quic-load-balancers §5.2;
 * qk_config.cid_encode_server_id, conn/cid.c): every CID a server issues
 * carries its server ID after a first octet holding the length
 * self-description, so qk_cid_server_id finds the worker from a datagram
 * alone; a client's random DCID is not taken for one. */
#include "qk_pair.h"
#include "qk_test.h"

#include <quack/quiclb.h>
#include <string.h>

typedef struct seen {
    unsigned short_dgrams, with_id, wrong_id, long_ours;
} seen;

static bool watch(void *ctx, bool to_server, uint64_t idx, uint8_t *data, size_t *len)
{
    (void)idx;
    seen *s = ctx;
    if (!to_server) return true;
    bool sh = false;
    int id = qk_cid_server_id(data, *len, 8, &sh);
    if (sh) {
        s->short_dgrams++;
        if (id == 5)
            s->with_id++;
        else
            s->wrong_id++;
    } else if (id == 5) {
        s->long_ours++; /* Handshake packets to our SCID */
    }
    return true;
}

static void test_server_cids_carry_id(void **state)
{
    (void)state;
    qk_pair p;
    seen s = {0};
    assert_int_equal(qk_pair_init(&p, 5 * QK_NS_PER_MS), 0);
    p.scfg.cid_encode_server_id = true;
    p.scfg.cid_server_id = 5;
    p.filter = watch;
    p.filter_ctx = &s;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    uint64_t sid;
    assert_int_equal(qk_pair_request_download(&p, &sid), 0);
    qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + QK_NS_PER_S);
    assert_true(s.short_dgrams > 0);
    assert_int_equal(s.wrong_id, 0);
    assert_int_equal(s.with_id, s.short_dgrams);
    assert_true(s.long_ours > 0);
    qk_pair_free(&p);
}

/* qk_config.quiclb: the DCIDs the client sends decode, under the shared
 * configuration, to the server ID, with the worker index in the first nonce
 * byte; the CIDs are encrypted (the server ID is not in clear) and distinct. */
typedef struct lb_seen {
    const qk_quiclb *lb;
    unsigned short_dgrams, ours, clear_id, distinct;
    uint8_t last[11];
} lb_seen;

static bool watch_lb(void *ctx, bool to_server, uint64_t idx, uint8_t *data, size_t *len)
{
    (void)idx;
    lb_seen *s = ctx;
    if (!to_server || (data[0] & 0x80) || *len < 12) return true;
    s->short_dgrams++;
    uint8_t sid[QK_QUICLB_MAX_SERVER_ID_BYTES], nonce[QK_QUICLB_MAX_NONCE_BYTES];
    int n = qk_quiclb_decode(s->lb, data + 1, 11, sid, nonce);
    if (n == 2 && sid[0] == 0xa1 && sid[1] == 0x5e && nonce[0] == 3) s->ours++;
    if (data[2] == 0xa1 && data[3] == 0x5e) s->clear_id++;
    if (memcmp(s->last, data + 1, 11)) s->distinct++;
    memcpy(s->last, data + 1, 11);
    return true;
}

static void test_quiclb_cids(void **state)
{
    (void)state;
    qk_quiclb_config lc;
    qk_quiclb_config_default(&lc);
    lc.config_id = 2;
    lc.server_id_len = 2;
    lc.nonce_len = 8;
    lc.has_key = true;
    memset(lc.key, 0x42, sizeof lc.key);
    lc.server_id[0] = 0xa1;
    lc.server_id[1] = 0x5e;
    qk_quiclb *lb = NULL;
    assert_int_equal(qk_quiclb_new(&lc, &lb), 0);
    assert_int_equal(qk_quiclb_nonce_bytes(lb), 8);
    qk_pair p;
    lb_seen s = {.lb = lb};
    assert_int_equal(qk_pair_init(&p, 5 * QK_NS_PER_MS), 0);
    p.scfg.quiclb = lb;
    p.scfg.cid_encode_server_id = true;
    p.scfg.cid_server_id = 3;
    p.scfg.cid_bytes = 10; /* not the QUIC-LB length: refused */
    assert_int_equal(qk_config_check(&p.scfg, NULL, 0), QK_ERR_CONFIG);
    p.scfg.cid_bytes = 11;
    assert_int_equal(qk_config_check(&p.scfg, NULL, 0), 0);
    p.filter = watch_lb;
    p.filter_ctx = &s;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    uint64_t sid;
    assert_int_equal(qk_pair_request_download(&p, &sid), 0);
    qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + QK_NS_PER_S);
    assert_true(s.short_dgrams > 0);
    assert_int_equal(s.ours, s.short_dgrams);
    assert_true(s.clear_id < s.short_dgrams); /* encrypted: not always 0xa15e */
    qk_pair_free(&p);
    qk_quiclb_del(lb);
}

static void test_parse(void **state)
{
    (void)state;
    bool sh = false;
    uint8_t shp[12] = {0x40, 0x07, 0x03, 1, 2, 3, 4, 5, 6, 9, 9, 9};
    assert_int_equal(qk_cid_server_id(shp, sizeof shp, 8, &sh), 3);
    assert_true(sh);
    assert_int_equal(qk_cid_server_id(shp, 8, 8, NULL), -1); /* too short for the DCID */
    shp[1] = 0x27;                                           /* config rotation 1: not ours */
    assert_int_equal(qk_cid_server_id(shp, sizeof shp, 8, NULL), -1);
    uint8_t lp[20] = {0xc0, 0, 0, 0, 1, 8, 0x07, 0x02, 1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0};
    assert_int_equal(qk_cid_server_id(lp, sizeof lp, 8, &sh), 2);
    assert_false(sh);
    lp[5] = 9; /* a DCID of another length: a client's random one */
    assert_int_equal(qk_cid_server_id(lp, sizeof lp, 8, NULL), -1);
    assert_int_equal(qk_cid_server_id(lp, 0, 8, NULL), -1);
}

static void fill(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    memset(buf, 7, len);
}

static void test_config(void **state)
{
    (void)state;
    qk_config c;
    qk_config_default(&c);
    c.alpn[0] = "x";
    c.alpn_count = 1;
    c.rng = fill;
    c.cid_encode_server_id = true;
    c.cid_bytes = 3;
    assert_int_equal(qk_config_check(&c, NULL, 0), QK_ERR_CONFIG);
    c.cid_bytes = 4;
    assert_int_equal(qk_config_check(&c, NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_cids_carry_id),
        cmocka_unit_test(test_quiclb_cids),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
