/*
 * rng.c - xoshiro256** (Blackman & Vigna), seeded through splitmix64 so that
 * nearby seeds give unrelated streams. Deterministic across platforms.
 */
#include "sluice/rng.h"

#include "sluice/hash.h"

/* splitmix64: a Weyl sequence of step 2^64 / phi, each value mixed. */
static uint64_t splitmix64(uint64_t *x) {
    return sl_mix64(*x += UINT64_C(0x9e3779b97f4a7c15));
}

static inline uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

void sl_rng_seed(sl_rng_t *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t sl_rng_next(sl_rng_t *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t sl_rng_below(sl_rng_t *r, uint64_t n) {
    /* Lemire's rejection on the low bits of a 128-bit product: unbiased. */
    unsigned __int128 m = (unsigned __int128)sl_rng_next(r) * n;
    uint64_t lo = (uint64_t)m;
    if (lo < n) {
        uint64_t thresh = -n % n;
        while (lo < thresh) {
            m = (unsigned __int128)sl_rng_next(r) * n;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double sl_rng_unit(sl_rng_t *r) {
    return (double)(sl_rng_next(r) >> 11) * 0x1.0p-53;
}
