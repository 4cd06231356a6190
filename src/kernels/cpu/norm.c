/* CPU reference of the squared L2 norm used by global-norm gradient clipping.
 *
 * Design: OpenMP's reduction clause combines thread partials in an
 * unspecified order, which breaks bitwise resume. Instead the range is cut
 * into a fixed number of equal chunks whatever the thread count; each chunk
 * is summed in double in a fixed order, then the chunk sums are added in
 * index order. The result is therefore identical for any thread count. */
#include "kernels/norm.h"

enum { NORM_CHUNKS = 64, LANES = 4 };

static double chunk_sum_squares(const float *x, size_t n) {
    double s[LANES] = {0};
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) s[l] += (double)x[i + l] * (double)x[i + l];
    for (; i < n; i++) s[i % LANES] += (double)x[i] * (double)x[i];
    return (s[0] + s[2]) + (s[1] + s[3]);
}

double sum_squares_cpu(const float *x, size_t n) {
    double partial[NORM_CHUNKS];
    const size_t per = (n + NORM_CHUNKS - 1) / NORM_CHUNKS;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < NORM_CHUNKS; ch++) {
        const size_t lo = (size_t)ch * per < n ? (size_t)ch * per : n;
        const size_t hi = lo + per < n ? lo + per : n;
        partial[ch] = chunk_sum_squares(x + lo, hi - lo);
    }
    double total = 0.0;
    for (int ch = 0; ch < NORM_CHUNKS; ch++) total += partial[ch];
    return total;
}
