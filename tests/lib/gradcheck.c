/* Test helpers for kernel checks: see gradcheck.h. */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

float rng_uniform(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ULL << 23) - 1.0); /* 24 bits: exact */
}

void rng_fill(float *x, size_t n, float scale, uint64_t *state) {
    for (size_t i = 0; i < n; i++) x[i] = scale * rng_uniform(state);
}

void check_le(const char *what, double err, double tol) {
    const int ok = err <= tol; /* false for NaN */
    printf("  %-4s %-52s max err %.3e  (tol %.1e)\n", ok ? "ok" : "FAIL", what, err, tol);
    failures += !ok;
}

void check_same(const char *what, const float *a, const float *b, size_t n) {
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    printf("  %-4s %-52s %zu of %zu elements differ (bitwise)\n", diff ? "FAIL" : "ok", what, diff,
           n);
    failures += diff != 0;
}

int check_failures(void) { return failures; }

double dot_double(const float *out, const float *r, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)out[i] * (double)r[i];
    return s;
}

void gradcheck(const char *what, loss_fn f, void *ctx, float *x, const float *grad, size_t n,
               float eps, double atol, double rtol) {
    double max_err = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const float x0 = x[i];
        const float xp = x0 + eps, xm = x0 - eps;
        x[i] = xp;
        const double lp = f(ctx);
        x[i] = xm;
        const double lm = f(ctx);
        x[i] = x0;
        /* divide by the step actually taken, not the rounded-away eps */
        const double num = (lp - lm) / ((double)xp - (double)xm);
        const double err = fabs(num - (double)grad[i]);
        if (!(err <= atol + rtol * fabs(num))) bad++;
        if (!(err <= max_err)) max_err = err;
    }
    char label[128];
    snprintf(label, sizeof(label), "%s (%zu elems, %zu bad)", what, n, bad);
    printf("  %-4s %-52s max err %.3e  (tol %.0e + %.0e|g|)\n", bad ? "FAIL" : "ok", label, max_err,
           atol, rtol);
    failures += bad != 0;
}
