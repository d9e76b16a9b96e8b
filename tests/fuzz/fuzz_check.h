/* SPDX-License-Identifier: MIT */
/* Shared by the fuzz targets: CHECK(x) aborts (a finding for libFuzzer) when
 * an invariant x does not hold. */
#ifndef QK_FUZZ_CHECK_H
#define QK_FUZZ_CHECK_H

#include <stdlib.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x)) abort();                                                                         \
    } while (0)

#endif
