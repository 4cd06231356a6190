/* CPU FP32 reference of GELU, tanh approximation (GPT-2's "gelu_new"):
 * gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
 *
 * Design: element-wise, parallel over a flat range with a static schedule.
 * It uses the identity 0.5 (1 + tanh(u)) = sigmoid(2u) = 1 / (1 + exp(-2u)):
 * the same function, but libm's expf is much faster than its tanhf, and
 * the sigmoid form does not cancel where tanh(u) is close to -1 (1 + tanh
 * loses the tail of gelu for negative x). The backward follows from it:
 * d/dx [x s(2u)] = s + 2 x s (1 - s) u'(x). */
#include "kernels/gelu.h"

#include <math.h>

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBE 0.044715f

/* sigmoid(2u) = 0.5 (1 + tanh(u)); exp overflowing to inf gives exactly 0. */
static inline float gelu_sigmoid(float x) {
    const float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
    return 1.0f / (1.0f + expf(-2.0f * u));
}

void gelu_forward_cpu(float *out, const float *inp, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = inp[i] * gelu_sigmoid(inp[i]);
}

/* dinp may alias dout: dout[i] is read before dinp[i] is written. */
void gelu_backward_cpu(float *dinp, const float *inp, const float *dout, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float s = gelu_sigmoid(x);
        const float du = GELU_SCALE * (1.0f + 3.0f * GELU_CUBE * x * x);
        dinp[i] = (s + 2.0f * x * s * (1.0f - s) * du) * dout[i];
    }
}
