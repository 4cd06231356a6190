/* CPU FP32 reference of the token + position embedding (forward and backward).
 *
 * Design: the forward is a gather, parallel over (b,t) rows. The backward is a
 * scatter-add into dwte where token ids repeat, so instead of splitting rows
 * across threads (a race, or atomics whose order varies) each thread owns a
 * fixed slice of the channels and walks all rows in order: no races and the
 * summation order of every element is fixed, whatever the thread count. */
#include "kernels/encoder.h"

#include <stddef.h>

void encoder_forward_cpu(float *out, const int32_t *inp, const float *wte, const float *wpe, int B,
                         int T, int C) {
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        float *o = out + (size_t)bt * C;
        const float *e = wte + (size_t)inp[bt] * C;
        const float *p = wpe + (size_t)(bt % T) * C;
        for (int c = 0; c < C; c++) o[c] = e[c] + p[c];
    }
}

/* Channel slice per task: wide enough for whole vectors, small enough to
 * spread C = 128 over a few threads. */
enum { ENC_CHUNK = 32 };

void encoder_backward_cpu(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B,
                          int T, int C) {
    const int chunks = (C + ENC_CHUNK - 1) / ENC_CHUNK;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < chunks; ch++) {
        const int c0 = ch * ENC_CHUNK;
        const int c1 = c0 + ENC_CHUNK < C ? c0 + ENC_CHUNK : C;
        for (int bt = 0; bt < B * T; bt++) {
            const float *d = dout + (size_t)bt * C;
            float *we = dwte + (size_t)inp[bt] * C;
            float *wp = dwpe + (size_t)(bt % T) * C;
            for (int c = c0; c < c1; c++) {
                we[c] += d[c];
                wp[c] += d[c];
            }
        }
    }
}
