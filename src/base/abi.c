/* SPDX-License-Identifier: MIT */
/* Size-tagged struct copies across the library boundary (abi.h). */
#include "base/abi.h"

#include <string.h>

#include <quack/common.h>

int qk_abi_copy_in(void *lib, size_t lib_bytes, const void *caller, size_t caller_bytes,
                   size_t min_bytes)
{
    if (!caller || caller_bytes < min_bytes) return QK_ERR_INVALID_ARG;
    const unsigned char *src = caller;
    for (size_t i = lib_bytes; i < caller_bytes; i++)
        if (src[i]) return QK_ERR_UNSUPPORTED;
    memcpy(lib, caller, caller_bytes < lib_bytes ? caller_bytes : lib_bytes);
    return 0;
}

void qk_abi_copy_out(void *caller, size_t caller_bytes, const void *lib, size_t lib_bytes)
{
    if (caller_bytes <= lib_bytes) {
        memcpy(caller, lib, caller_bytes);
        return;
    }
    memcpy(caller, lib, lib_bytes);
    memset((unsigned char *)caller + lib_bytes, 0, caller_bytes - lib_bytes);
}
