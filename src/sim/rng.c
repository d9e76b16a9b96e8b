/* SPDX-License-Identifier: MIT */
/* xoshiro256** (Blackman & Vigna) with splitmix64 seeding; written from the paper. */
#include "sim/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void qk_rng_seed(qk_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ull);
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t qk_rng_next(qk_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double qk_rng_double(qk_rng *r)
{
    return (double)(qk_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t qk_rng_below(qk_rng *r, uint64_t n)
{
    /* Lemire's multiply-shift with rejection: unbiased. */
    unsigned __int128 m = (unsigned __int128)qk_rng_next(r) * n;
    uint64_t lo = (uint64_t)m;
    if (lo < n) {
        uint64_t t = -n % n;
        while (lo < t) {
            m = (unsigned __int128)qk_rng_next(r) * n;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

int qk_rng_chance(qk_rng *r, double p)
{
    if (p <= 0) return 0;
    if (p >= 1) return 1;
    return qk_rng_double(r) < p;
}
