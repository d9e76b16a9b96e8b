/* SPDX-License-Identifier: MIT */
/* Fuzz the QUIC-LB configuration parser (qk_quiclb_config_parse). Accepted
 * text gives a configuration that qk_quiclb_config_check accepts and that
 * encodes and decodes its own server ID; refused text gives QK_ERR_CONFIG
 * and a message that starts with the file name and fits the buffer. */
#include "fuzz_check.h"

#include <quack/quiclb.h>
#include <string.h>

static void zero_rng(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    memset(buf, 0x5a, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qk_quiclb_config cfg;
    char err[96];
    memset(err, 'x', sizeof err);
    int rc = qk_quiclb_config_parse((const char *)data, size, "f.ini", &cfg, err, sizeof err);
    if (rc) {
        CHECK(rc == QK_ERR_CONFIG);
        CHECK(memchr(err, '\0', sizeof err) != NULL);
        CHECK(!strncmp(err, "f.ini", 5) && strlen(err) > 6);
        return 0;
    }
    CHECK(err[0] == '\0');
    CHECK(qk_quiclb_config_check(&cfg, NULL, 0) == 0);
    qk_quiclb *lb = NULL;
    CHECK(qk_quiclb_new(&cfg, &lb) == 0);
    uint8_t cid[QK_QUICLB_MAX_CID_BYTES], sid[QK_QUICLB_MAX_SERVER_ID_BYTES];
    int n = qk_quiclb_encode(lb, NULL, zero_rng, NULL, cid, sizeof cid);
    CHECK(n == 1 + cfg.server_id_len + cfg.nonce_len);
    CHECK(qk_quiclb_decode(lb, cid, (size_t)n, sid, NULL) == cfg.server_id_len);
    CHECK(!memcmp(sid, cfg.server_id, cfg.server_id_len));
    qk_quiclb_del(lb);
    return 0;
}
