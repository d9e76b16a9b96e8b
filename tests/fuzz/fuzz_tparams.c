/* SPDX-License-Identifier: MIT */
/* Fuzz transport parameter decoding: accepted input must re-encode and decode
 * to an identical struct, for both sender roles. */
#include "wire/tparams.h"
#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t buf[4096];
    for (int server = 0; server < 2; server++) {
        qk_tparams a, b;
        if (qk_tparams_decode(data, size, server, &a) != 0) continue;
        int n = qk_tparams_encode(&a, server, buf, sizeof(buf));
        if (n < 0) abort();
        if (qk_tparams_decode(buf, (size_t)n, server, &b) != 0) abort();
        if (memcmp(&a, &b, sizeof(a)) != 0) abort();
    }
    return 0;
}
