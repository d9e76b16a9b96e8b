/* SPDX-License-Identifier: MIT */
/* QUIC-LB connection IDs (draft-ietf-quic-load-balancers-21): encode a
 * server ID and a nonce into a CID, in clear or encrypted with AES-128 (one
 * ECB block when they fill 16 bytes, a four-pass Feistel network otherwise),
 * and decode the server ID from a CID. Section numbers below are the
 * draft's. */
#include <quack/quiclb.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/aes.h>
#include <nettle/memxor.h>

#include "base/abi.h"

/* The configuration and both AES-128 key schedules (encrypt, decrypt),
 * copied out with memcpy before use. */
struct qk_quiclb {
    qk_quiclb_config cfg;
    uint8_t aes_state[2 * sizeof(struct aes128_ctx)];
};

/* qk_quiclb_config crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with server_id. */
#define QUICLB_CONFIG_V1_BYTES QK_ABI_END(qk_quiclb_config, server_id)
QK_ABI_LAST_FIELD(qk_quiclb_config, server_id);

#define FIRST_OCTET_ID_SHIFT 5    /* §3.4: Config Rotation (3), CID Len or Random Bits (5) */
#define FIRST_OCTET_LOW_MASK 0x1f /* the five low bits */
#define AES_BLOCK            16

static void config_default(qk_quiclb_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->encode_len = true; /* every test vector of App. B self-describes its length */
}

void qk_quiclb_config_default_sized(qk_quiclb_config *cfg, size_t cfg_bytes)
{
    qk_quiclb_config d;
    config_default(&d);
    qk_abi_copy_out(cfg, cfg_bytes, &d, sizeof d);
}

/* The caller's cfg_bytes of caller over the defaults. */
static int config_import(qk_quiclb_config *dst, const qk_quiclb_config *caller, size_t caller_bytes)
{
    config_default(dst);
    return qk_abi_copy_in(dst, sizeof *dst, caller, caller_bytes, QUICLB_CONFIG_V1_BYTES);
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t err_cap, const char *fmt,
                                                      ...)
{
    if (err && err_cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_cap, fmt, ap);
        va_end(ap);
    }
    return QK_ERR_CONFIG;
}

static int check(const qk_quiclb_config *cfg, char *err, size_t err_cap)
{
    /* §3.1: three bits, and a configuration MUST NOT use 0b111. */
    if (cfg->config_id > QK_QUICLB_MAX_CONFIG_ID)
        return fail(err, err_cap,
                    "config_id %u is out of range: use 0..6 (7, 0b111, marks unroutable CIDs)",
                    cfg->config_id);
    /* §5.3: the server ID is at least one octet; App. A bounds it at 15. */
    if (cfg->server_id_len < QK_QUICLB_MIN_SERVER_ID_BYTES ||
        cfg->server_id_len > QK_QUICLB_MAX_SERVER_ID_BYTES)
        return fail(err, err_cap, "server ID length %u is out of range: use 1..15 bytes",
                    cfg->server_id_len);
    /* §5.3: the nonce is at least 4 octets; App. A bounds it at 18. */
    if (cfg->nonce_len < QK_QUICLB_MIN_NONCE_BYTES || cfg->nonce_len > QK_QUICLB_MAX_NONCE_BYTES)
        return fail(err, err_cap, "nonce length %u is out of range: use 4..18 bytes",
                    cfg->nonce_len);
    /* §5.3: QUIC v1 CIDs are at most 20 octets, so the two sum to 19 or less. */
    if (cfg->server_id_len + cfg->nonce_len > QK_QUICLB_MAX_PLAINTEXT_BYTES)
        return fail(err, err_cap,
                    "server ID length %u + nonce length %u is over 19 bytes (a QUIC v1 CID "
                    "holds 20 with the first octet): shorten one of them",
                    cfg->server_id_len, cfg->nonce_len);
    return 0;
}

int qk_quiclb_config_check_sized(const qk_quiclb_config *caller, size_t caller_bytes, char *err,
                                 size_t err_cap)
{
    if (err && err_cap) err[0] = '\0';
    if (!caller) return QK_ERR_INVALID_ARG;
    qk_quiclb_config cfg;
    int rc = config_import(&cfg, caller, caller_bytes);
    if (rc == QK_ERR_UNSUPPORTED)
        return fail(err, err_cap,
                    "the program sets a qk_quiclb_config field this libquack does not know: "
                    "install the libquack it was built for, or leave the field zero");
    if (rc) return rc;
    return check(&cfg, err, err_cap);
}

int qk_quiclb_new_sized(const qk_quiclb_config *caller, size_t caller_bytes, qk_quiclb **out)
{
    if (!out || !caller) return QK_ERR_INVALID_ARG;
    *out = NULL;
    qk_quiclb_config cfg;
    int rc = config_import(&cfg, caller, caller_bytes);
    if (!rc) rc = check(&cfg, NULL, 0);
    if (rc) return rc == QK_ERR_UNSUPPORTED ? QK_ERR_CONFIG : rc;
    qk_quiclb *lb = calloc(1, sizeof *lb);
    if (!lb) return QK_ERR_NOMEM;
    lb->cfg = cfg;
    if (cfg.has_key) {
        struct aes128_ctx ks[2];
        aes128_set_encrypt_key(&ks[0], cfg.key);
        aes128_set_decrypt_key(&ks[1], cfg.key);
        memcpy(lb->aes_state, ks, sizeof ks);
        memset(ks, 0, sizeof ks);
    }
    *out = lb;
    return 0;
}

void qk_quiclb_del(qk_quiclb *lb)
{
    if (!lb) return;
    volatile uint8_t *p = (volatile uint8_t *)lb;
    for (size_t i = 0; i < sizeof *lb; i++) p[i] = 0;
    free(lb);
}

size_t qk_quiclb_nonce_bytes(const qk_quiclb *lb)
{
    return lb->cfg.nonce_len;
}

size_t qk_quiclb_cid_bytes(const qk_quiclb *lb)
{
    return 1u + lb->cfg.server_id_len + lb->cfg.nonce_len;
}

static size_t plaintext_len(const qk_quiclb *lb)
{
    return (size_t)lb->cfg.server_id_len + lb->cfg.nonce_len;
}

/* ---- Four-pass encryption (§5.4.2) ---- */

typedef struct feistel {
    struct aes128_ctx enc;
    uint8_t len;  /* plaintext_len */
    uint8_t half; /* half_len: plaintext_len / 2, rounded up (§5.4.2.2) */
    bool odd;
} feistel;

/* §5.4.2.3 steps 5, 7, 9, 11: with an odd length the middle octet is split,
 * right halves clear their first four bits and left halves their last four. */
static void mask_left(const feistel *f, uint8_t *left)
{
    if (f->odd) left[f->half - 1] &= 0xf0;
}

static void mask_right(const feistel *f, uint8_t *right)
{
    if (f->odd) right[0] &= 0x0f;
}

/* One pass: dst ^= truncate(AES_ECB(key, expand(len, pass, src)), half_len)
 * (§5.4.2.3 steps 3-4). expand (§5.4.2.2) is src, zero padding, the
 * plaintext length in the fifteenth octet and the pass in the sixteenth. */
static void pass(const feistel *f, uint8_t pass_no, const uint8_t *src, uint8_t *dst)
{
    uint8_t block[AES_BLOCK] = {0};
    memcpy(block, src, f->half);
    block[14] = f->len;
    block[15] = pass_no;
    aes128_encrypt(&f->enc, AES_BLOCK, block, block);
    memxor(dst, block, f->half);
}

/* §5.4.2.3 step 2: left_0 and right_0 of half_len each; with an odd length
 * both hold the middle octet, masked. */
static void split(const feistel *f, const uint8_t *in, uint8_t *left, uint8_t *right)
{
    memcpy(left, in, f->half);
    memcpy(right, in + f->len - f->half, f->half);
    mask_left(f, left);
    mask_right(f, right);
}

/* §5.4.2.3 step 12: left || right, the two zero nibbles of an odd length
 * stripped so the result is as long as the plaintext. */
static void join(const feistel *f, const uint8_t *left, const uint8_t *right, uint8_t *out)
{
    memcpy(out, left, f->half);
    if (f->odd) {
        out[f->half - 1] |= right[0];
        memcpy(out + f->half, right + 1, f->half - 1u);
    } else {
        memcpy(out + f->half, right, f->half);
    }
}

static void feistel_init(feistel *f, const qk_quiclb *lb)
{
    memcpy(&f->enc, lb->aes_state, sizeof f->enc);
    f->len = (uint8_t)plaintext_len(lb);
    f->half = (uint8_t)((f->len + 1u) / 2u);
    f->odd = f->len & 1u;
}

static void feistel_encrypt(const qk_quiclb *lb, const uint8_t *in, uint8_t *out)
{
    feistel f;
    feistel_init(&f, lb);
    uint8_t left[AES_BLOCK / 2 + 2], right[AES_BLOCK / 2 + 2];
    split(&f, in, left, right);
    pass(&f, 1, left, right); /* right_1 */
    mask_right(&f, right);
    pass(&f, 2, right, left); /* left_1 */
    mask_left(&f, left);
    pass(&f, 3, left, right); /* right_2 */
    mask_right(&f, right);
    pass(&f, 4, right, left); /* left_2 */
    mask_left(&f, left);
    join(&f, left, right, out);
    memset(&f, 0, sizeof f);
}

/* §5.5.2: passes 4, 3, 2 recover left_0, which holds the whole server ID
 * when the nonce is at least as long; pass 1 recovers right_0. */
static void feistel_decrypt(const qk_quiclb *lb, const uint8_t *in, uint8_t *out, bool full)
{
    feistel f;
    feistel_init(&f, lb);
    uint8_t left[AES_BLOCK / 2 + 2], right[AES_BLOCK / 2 + 2];
    split(&f, in, left, right); /* left_2, right_2 */
    pass(&f, 4, right, left);   /* left_1 */
    mask_left(&f, left);
    pass(&f, 3, left, right); /* right_1 */
    mask_right(&f, right);
    pass(&f, 2, right, left); /* left_0 */
    mask_left(&f, left);
    if (full) {
        pass(&f, 1, left, right); /* right_0 */
        mask_right(&f, right);
    }
    join(&f, left, right, out);
    memset(&f, 0, sizeof f);
}

/* ---- Encode and decode ---- */

int qk_quiclb_encode_nonce(const qk_quiclb *lb, const uint8_t *server_id, const uint8_t *nonce,
                           uint8_t first_bits, uint8_t *out, size_t out_cap)
{
    if (!lb || !nonce || !out) return QK_ERR_INVALID_ARG;
    size_t cid_len = qk_quiclb_cid_bytes(lb), sid_len = lb->cfg.server_id_len;
    if (out_cap < cid_len) return QK_ERR_BUFFER_TOO_SMALL;
    if (!server_id) server_id = lb->cfg.server_id;
    /* §3.1, §3.3: config rotation, then the CID length minus one or random bits. */
    uint8_t low = lb->cfg.encode_len ? (uint8_t)(cid_len - 1) : first_bits;
    out[0] = (uint8_t)(lb->cfg.config_id << FIRST_OCTET_ID_SHIFT) | (low & FIRST_OCTET_LOW_MASK);
    /* §5.2: the plaintext block is the server ID, then the nonce. */
    uint8_t pt[QK_QUICLB_MAX_PLAINTEXT_BYTES];
    memcpy(pt, server_id, sid_len);
    memcpy(pt + sid_len, nonce, lb->cfg.nonce_len);
    size_t len = plaintext_len(lb);
    if (!lb->cfg.has_key) {
        memcpy(out + 1, pt, len); /* §5.4: without a key the CID is complete */
    } else if (len == AES_BLOCK) {
        /* §5.4.1: exactly 16 octets are one AES-ECB block. */
        struct aes128_ctx enc;
        memcpy(&enc, lb->aes_state, sizeof enc);
        aes128_encrypt(&enc, AES_BLOCK, out + 1, pt);
        memset(&enc, 0, sizeof enc);
    } else {
        feistel_encrypt(lb, pt, out + 1); /* §5.4.2 */
    }
    return (int)cid_len;
}

int qk_quiclb_encode(const qk_quiclb *lb, const uint8_t *server_id, qk_rng_fn rng, void *rng_ctx,
                     uint8_t *out, size_t out_cap)
{
    if (!lb || !rng || !out) return QK_ERR_INVALID_ARG;
    if (out_cap < qk_quiclb_cid_bytes(lb)) return QK_ERR_BUFFER_TOO_SMALL;
    /* §5.4 and §9.6: a nonce with no observable relationship to earlier
     * ones; §3.3: random low bits when the length is not encoded. */
    uint8_t r[1 + QK_QUICLB_MAX_NONCE_BYTES];
    rng(rng_ctx, r, 1u + lb->cfg.nonce_len);
    return qk_quiclb_encode_nonce(lb, server_id, r + 1, r[0], out, out_cap);
}

int qk_quiclb_config_id_of(const uint8_t *cid, size_t cid_len)
{
    if (!cid) return QK_ERR_INVALID_ARG;
    if (cid_len < 1) return QK_ERR_TRUNCATED;
    return cid[0] >> FIRST_OCTET_ID_SHIFT; /* §3.1: the first three bits */
}

int qk_quiclb_decode(const qk_quiclb *lb, const uint8_t *cid, size_t cid_len, uint8_t *server_id,
                     uint8_t *nonce)
{
    if (!lb || !cid || !server_id) return QK_ERR_INVALID_ARG;
    size_t len = plaintext_len(lb), sid_len = lb->cfg.server_id_len;
    /* §4.1: a DCID too short for the decoder is unroutable. */
    if (cid_len < 1 + len) return QK_ERR_TRUNCATED;
    /* §4.1: config rotation bits of no active configuration (0b111 among
     * them) make the CID unroutable. */
    if (qk_quiclb_config_id_of(cid, cid_len) != lb->cfg.config_id) return QK_ERR_NOT_FOUND;
    /* §4.1: the load balancer MAY check that a self-encoded length is large
     * enough for this configuration (servers may append bytes, §5.4). */
    if (lb->cfg.encode_len && (cid[0] & FIRST_OCTET_LOW_MASK) < len) return QK_ERR_NOT_FOUND;
    uint8_t pt[QK_QUICLB_MAX_PLAINTEXT_BYTES];
    if (!lb->cfg.has_key) {
        memcpy(pt, cid + 1, len); /* §5.5: the server ID in clear */
    } else if (len == AES_BLOCK) {
        /* §5.5.1: decrypt the one block. */
        struct aes128_ctx dec;
        memcpy(&dec, lb->aes_state + sizeof dec, sizeof dec);
        aes128_decrypt(&dec, AES_BLOCK, pt, cid + 1);
        memset(&dec, 0, sizeof dec);
    } else {
        /* §5.5.2: three passes suffice when the server ID fits in left_0. */
        feistel_decrypt(lb, cid + 1, pt, nonce || sid_len > len / 2);
    }
    memcpy(server_id, pt, sid_len);
    if (nonce) memcpy(nonce, pt + sid_len, lb->cfg.nonce_len);
    memset(pt, 0, sizeof pt);
    return (int)sid_len;
}

int qk_quiclb_encode_unroutable(qk_rng_fn rng, void *rng_ctx, uint8_t *out, size_t len)
{
    if (!rng || !out || len < QK_QUICLB_MIN_UNROUTABLE_CID || len > QK_QUICLB_MAX_CID_BYTES)
        return QK_ERR_INVALID_ARG;
    rng(rng_ctx, out, len);
    /* §3.2: codepoint 0b111 and the length self-description, then random bytes. */
    out[0] = (uint8_t)(QK_QUICLB_UNROUTABLE_ID << FIRST_OCTET_ID_SHIFT) | (uint8_t)(len - 1);
    return (int)len;
}
