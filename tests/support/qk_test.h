/* SPDX-License-Identifier: MIT */
/* Helpers shared by quack's tests. */
#ifndef QK_TEST_H
#define QK_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/** Decode a hex string (whitespace ignored) into out; returns byte count or -1. */
long qk_test_hex(const char *hex, uint8_t *out, size_t cap);

/** Deterministic xorshift64* generator for tests; matches qk_rng_fn (ctx is uint64_t *). */
void qk_test_rng(void *ctx, uint8_t *buf, size_t len);

/** Next 64-bit value from a test RNG state. */
uint64_t qk_test_rand64(uint64_t *state);

/** Deterministic test payload: byte i of a stream. */
uint8_t qk_test_pattern(size_t i);

#endif
