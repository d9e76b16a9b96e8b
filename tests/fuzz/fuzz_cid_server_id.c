/* SPDX-License-Identifier: MIT */
/* Fuzz qk_cid_server_id (the worker/QUIC-LB server ID in a datagram's DCID).
 * The first input byte picks our CID length; the rest is the datagram. The
 * answer must be -1 or a byte of the input, and must agree with a direct
 * reading of the DCID's first two bytes. */
#include <quack/quack.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x)) abort();                                                                         \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t cid_bytes = (uint8_t)(data[0] % 21);
    const uint8_t *pkt = data + 1;
    size_t len = size - 1;
    bool sh = false;
    int id = qk_cid_server_id(pkt, len, cid_bytes, &sh);
    CHECK(id >= -1 && id <= 255);
    if (id < 0) return 0;
    CHECK(cid_bytes >= 4);
    const uint8_t *d = sh ? pkt + 1 : pkt + 6;
    CHECK(sh ? len >= 1u + cid_bytes : (len >= 6u + cid_bytes && pkt[5] == cid_bytes));
    CHECK(d[0] == (uint8_t)((cid_bytes - 1) & 0x1f) && d[1] == (uint8_t)id);
    return 0;
}
