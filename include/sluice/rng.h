/*
 * rng.h - the seeded random state passed into the core (xoshiro256**,
 * seeded with splitmix64). The core never calls rand(): every random choice
 * takes an sl_rng_t owned by the caller, so runs are reproducible.
 */
#ifndef SLUICE_RNG_H
#define SLUICE_RNG_H

#include <stdint.h>

typedef struct sl_rng {
    uint64_t s[4];
} sl_rng_t;

void sl_rng_seed(sl_rng_t *r, uint64_t seed);      /* can't fail */
uint64_t sl_rng_next(sl_rng_t *r);                 /* uniform 64-bit */
uint64_t sl_rng_below(sl_rng_t *r, uint64_t n);    /* uniform in [0, n); n > 0; unbiased */
double sl_rng_unit(sl_rng_t *r);                   /* uniform in [0, 1) */

#endif
