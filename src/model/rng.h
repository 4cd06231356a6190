/* A small deterministic random number generator (splitmix64) for weight
 * initialisation and sampling: the same stream on every machine and rank. */
#ifndef GPT2_MODEL_RNG_H
#define GPT2_MODEL_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct {
    uint64_t state;
} rng_state;

static inline void rng_seed(rng_state *r, uint64_t seed) { r->state = seed; }

#define RNG_INCREMENT 0x9E3779B97F4A7C15ull /* splitmix64's step of the state */

static inline uint64_t rng_next(rng_state *r) {
    uint64_t z = (r->state += RNG_INCREMENT);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The stream n draws on: the state only ever adds RNG_INCREMENT, so the
 * draws from any point on can be made without those before (in parallel). */
static inline void rng_skip(rng_state *r, uint64_t n) { r->state += n * RNG_INCREMENT; }

/* Uniform in [0, 1) with 53 random bits. */
static inline double rng_uniform(rng_state *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Standard normal by Box-Muller (one value per call keeps the stream simple). */
static inline double rng_normal(rng_state *r) {
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
#endif
