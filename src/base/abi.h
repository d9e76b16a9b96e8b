/* SPDX-License-Identifier: MIT */
/* Structs that cross the library boundary at the caller's size: a caller
 * compiled against older (or newer) headers passes the sizeof it knows (the
 * public headers' macros insert it), and the library copies only what both
 * sides have. Input structs: the library's tail keeps its defaults and a
 * newer caller's tail must be zero (the fields this library does not know
 * are unset). Output structs: the library fills what the caller has. */
#ifndef QK_BASE_ABI_H
#define QK_BASE_ABI_H

#include <stddef.h>

/** Bytes from the start of type up to the end of field: the size a caller
 * that knows fields up to field passes. */
#define QK_ABI_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/** An input struct must end without tail padding, so that a field added
 * after field grows its sizeof and the library can tell old callers from
 * new ones by size alone. Name the last field; update it when adding one. */
#define QK_ABI_LAST_FIELD(type, field)                                                             \
    _Static_assert(QK_ABI_END(type, field) == sizeof(type),                                        \
                   #type " must end with " #field " and without tail padding")

/**
 * Copy an input struct of caller_bytes (the caller's sizeof) into lib
 * (lib_bytes, the library's sizeof, already holding the defaults for the
 * fields an older caller lacks). Returns 0; QK_ERR_INVALID_ARG when
 * caller_bytes is below min_bytes (the first release's size: no caller
 * passes less) or src is NULL; QK_ERR_UNSUPPORTED when a newer caller set a
 * field this library does not know (a nonzero byte past lib_bytes).
 */
int qk_abi_copy_in(void *lib, size_t lib_bytes, const void *caller, size_t caller_bytes,
                   size_t min_bytes);

/** Copy an output struct to a caller whose struct has caller_bytes: the
 * fields both know; a newer caller's tail is zeroed. */
void qk_abi_copy_out(void *caller, size_t caller_bytes, const void *lib, size_t lib_bytes);

#endif
