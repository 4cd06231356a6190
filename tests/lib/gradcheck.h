/* Test helpers for kernel checks: a seeded RNG, tolerance reports that count
 * failures, and a central-difference gradient checker. */
#ifndef GPT2_TEST_GRADCHECK_H
#define GPT2_TEST_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>

/* Uniform in [-1, 1); splitmix64, so every run sees the same inputs. */
float rng_uniform(uint64_t *state);
/* x[i] = scale * uniform(-1, 1). */
void rng_fill(float *x, size_t n, float scale, uint64_t *state);

/* Prints "ok"/"FAIL", the error and the tolerance; counts a failure when
 * err > tol or err is NaN. */
void check_le(const char *what, double err, double tol);
/* Bitwise equality of two float arrays (determinism, exact cases). */
void check_same(const char *what, const float *a, const float *b, size_t n);
/* Number of failed checks so far. */
int check_failures(void);

/* Runs the op's forward on its current inputs and returns L = sum(out * R)
 * accumulated in double. */
typedef double (*loss_fn)(void *ctx);

/* Compares grad (the analytic dL/dx) with central differences of f over
 * every element of x, each perturbed by +-eps (x is restored). Element i
 * passes when |num - grad| <= atol + rtol * |num|; prints the max absolute
 * error and counts one failure if any element fails. */
void gradcheck(const char *what, loss_fn f, void *ctx, float *x, const float *grad, size_t n,
               float eps, double atol, double rtol);

/* L = sum(out * r) in double. */
double dot_double(const float *out, const float *r, size_t n);

#endif
