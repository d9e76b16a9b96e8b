/* SPDX-License-Identifier: MIT */
/* Fuzz the QUIC-LB decoder (qk_quiclb_decode). The first three input bytes
 * pick the configuration (server ID length, nonce length, then config ID,
 * key and length self-description), 16 more are the key when there is one,
 * the rest is the CID. A decode either refuses the CID for the reason its
 * code gives or returns the server ID and nonce that encode back to exactly
 * the same CID; asking for the nonce never changes the server ID. */
#include "fuzz_check.h"

#include <quack/quiclb.h>
#include <string.h>

static void check_refusal(const qk_quiclb_config *cfg, const uint8_t *cid, size_t len, int rc)
{
    size_t pt = (size_t)cfg->server_id_len + cfg->nonce_len;
    if (rc == QK_ERR_TRUNCATED) {
        CHECK(len < 1 + pt);
        return;
    }
    CHECK(rc == QK_ERR_NOT_FOUND);
    CHECK(len >= 1 + pt);
    CHECK((cid[0] >> 5) != cfg->config_id || (cfg->encode_len && (cid[0] & 0x1f) < pt));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    qk_quiclb_config cfg;
    qk_quiclb_config_default(&cfg);
    cfg.server_id_len = (uint8_t)(1 + data[0] % 15);
    cfg.nonce_len = (uint8_t)(4 + data[1] % (16 - cfg.server_id_len));
    cfg.config_id = (uint8_t)(data[2] % 7);
    cfg.has_key = data[2] & 0x80;
    cfg.encode_len = data[2] & 0x40;
    data += 3;
    size -= 3;
    if (cfg.has_key) {
        if (size < QK_QUICLB_KEY_BYTES) return 0;
        memcpy(cfg.key, data, QK_QUICLB_KEY_BYTES);
        data += QK_QUICLB_KEY_BYTES;
        size -= QK_QUICLB_KEY_BYTES;
    }
    qk_quiclb *lb = NULL;
    CHECK(qk_quiclb_new(&cfg, &lb) == 0);
    uint8_t sid[QK_QUICLB_MAX_SERVER_ID_BYTES], sid3[QK_QUICLB_MAX_SERVER_ID_BYTES];
    uint8_t nonce[QK_QUICLB_MAX_NONCE_BYTES], cid[QK_QUICLB_MAX_CID_BYTES];
    int rc = qk_quiclb_decode(lb, data, size, sid, nonce);
    int rc3 = qk_quiclb_decode(lb, data, size, sid3, NULL);
    CHECK(rc == rc3);
    if (rc < 0) {
        check_refusal(&cfg, data, size, rc);
        qk_quiclb_del(lb);
        return 0;
    }
    CHECK(rc == cfg.server_id_len);
    CHECK(!memcmp(sid, sid3, cfg.server_id_len));
    int n = qk_quiclb_encode_nonce(lb, sid, nonce, data[0], cid, sizeof cid);
    CHECK(n == (int)qk_quiclb_cid_bytes(lb));
    CHECK(!memcmp(cid + 1, data + 1, (size_t)n - 1));
    uint8_t first = cfg.encode_len ? (uint8_t)(cfg.config_id << 5 | (n - 1)) : data[0];
    CHECK(cid[0] == first);
    qk_quiclb_del(lb);
    return 0;
}
