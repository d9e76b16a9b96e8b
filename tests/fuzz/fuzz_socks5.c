/* SPDX-License-Identifier: MIT */
/* Fuzz the SOCKS5 server-side negotiation (src/tunnel/socks5.c): the input
 * is fed in pieces whose sizes come from the input itself. Invariants: no
 * crash, every byte consumed is accounted for, replies fit their buffer, a
 * request has a terminated host, and nothing is consumed after the end. */
#include <quack/tunnel.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    qk_socks5 *s = NULL;
    CHECK(qk_socks5_new((data[0] & 1) ? "user" : NULL, "pass", &s) == 0);
    size_t off = 1;
    uint8_t step = (uint8_t)(data[0] >> 1 | 1);
    while (off < size) {
        size_t n = size - off < step ? size - off : step;
        uint8_t out[32];
        size_t used = 99, out_len = 99;
        qk_socks5_result r = qk_socks5_feed(s, data + off, n, &used, out, &out_len);
        CHECK(used <= n && out_len <= sizeof out);
        off += used;
        if (r == QK_SOCKS5_REQUEST) {
            CHECK(strlen(qk_socks5_host(s)) < 256);
            break;
        }
        if (r == QK_SOCKS5_FAIL) break;
        CHECK(used == n);
    }
    qk_socks5_del(s);
    /* IPv4 and IPv6 allow-list parsing on the same bytes. */
    char str[64];
    size_t m = size - 1 < sizeof str - 1 ? size - 1 : sizeof str - 1;
    memcpy(str, data + 1, m);
    str[m] = 0;
    qk_tunnel_allow rule;
    if (!qk_tunnel_allow_parse(str, &rule)) CHECK(rule.port_lo <= rule.port_hi);
    return 0;
}
