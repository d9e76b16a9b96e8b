/* SPDX-License-Identifier: MIT */
/* Fuzz session data (qk_connect_ex, RFC 9001 §4.5-4.6): our container, the
 * remembered transport parameters and GnuTLS's session parser. Accepted or
 * refused with QK_ERR_CONFIG; never a crash or a leak. */
#include <quack/io.h>
#include <quack/quack.h>
#include <stdlib.h>
#include <string.h>

#include "qk_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint64_t seed = 1;
    qk_config cfg;
    qk_config_default(&cfg);
    cfg.alpn[0] = "fuzz";
    cfg.alpn_count = 1;
    cfg.insecure = true;
    cfg.rng = qk_test_rng;
    cfg.rng_ctx = &seed;
    qk_endpoint *ep = qk_endpoint_new(&cfg);
    if (!ep) abort();
    qk_addr peer;
    if (qk_addr_parse("127.0.0.1:4433", &peer)) abort();
    qk_connect_opts o = {.session = data, .session_len = size};
    qk_conn *c = NULL;
    int rc = qk_connect_ex(ep, NULL, &peer, "fuzz.test", &o, 1, &c);
    if (rc != 0 && rc != QK_ERR_CONFIG) abort();
    if (rc == 0) {
        /* A session that parsed: the first flight is built without trouble. */
        static uint8_t buf[1500];
        qk_datagram d = {.data = buf, .len = sizeof buf};
        qk_endpoint_send(ep, &d, 1, 1);
    }
    qk_endpoint_del(ep);
    return 0;
}
