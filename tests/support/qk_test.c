/* SPDX-License-Identifier: MIT */
#include "qk_test.h"

#include <ctype.h>

long qk_test_hex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int hi = -1;
    for (; *hex; hex++) {
        if (isspace((unsigned char)*hex)) continue;
        int v;
        if (*hex >= '0' && *hex <= '9')
            v = *hex - '0';
        else if (*hex >= 'a' && *hex <= 'f')
            v = *hex - 'a' + 10;
        else if (*hex >= 'A' && *hex <= 'F')
            v = *hex - 'A' + 10;
        else
            return -1;
        if (hi < 0) {
            hi = v;
        } else {
            if (n >= cap) return -1;
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    return hi < 0 ? (long)n : -1;
}

uint64_t qk_test_rand64(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

void qk_test_rng(void *ctx, uint8_t *buf, size_t len)
{
    uint64_t *state = ctx;
    for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)(qk_test_rand64(state) >> 56);
}

uint8_t qk_test_pattern(size_t i)
{
    return (uint8_t)((i * 2654435761u) >> 13);
}
