/* SPDX-License-Identifier: MIT */
/* Simulator PRNG: xoshiro256** seeded through splitmix64 (deterministic). */
#ifndef QK_SIM_RNG_H
#define QK_SIM_RNG_H

#include <stdint.h>

typedef struct qk_rng {
    uint64_t s[4];
} qk_rng;

/** Seed from (seed, stream): different streams are independent. */
void qk_rng_seed(qk_rng *r, uint64_t seed, uint64_t stream);
/** Next 64-bit value. */
uint64_t qk_rng_next(qk_rng *r);
/** Uniform double in [0, 1). */
double qk_rng_double(qk_rng *r);
/** Uniform integer in [0, n) (n > 0). */
uint64_t qk_rng_below(qk_rng *r, uint64_t n);
/** True with probability p. Draws no number when p <= 0 or p >= 1. */
int qk_rng_chance(qk_rng *r, double p);

#endif
