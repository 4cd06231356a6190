/* CPU FP32 reference of the AdamW update over a flat parameter range.
 *
 * Design: element-wise and parallel with a static schedule. The arithmetic
 * follows torch.optim.AdamW's single-tensor path operation by operation, so a
 * PyTorch reference agrees to rounding:
 *   param.mul_(1 - lr*wd)                      decay first, on the old param
 *   m.lerp_(g, 1 - b1)                         m + (1-b1)*(g - m), or
 *                                              g - (g - m)*(1 - (1-b1)) when 1-b1 >= 0.5
 *   v.mul_(b2).addcmul_(g, g, value=1 - b2)    v*b2 + ((1-b2)*g)*g
 *   denom = sqrt(v) / sqrt(1 - b2^t) + eps
 *   param.addcdiv_(m, denom, value=-lr/(1 - b1^t))
 * Scalars are formed in double (torch computes them in Python) and rounded
 * to float once, as torch does when it applies them to a float tensor.
 * (torch's vectorised lerp fuses its multiply-add; we do not, so m can differ
 * from torch in the last bit.) */
#include "kernels/adamw.h"

#include <math.h>

void adamw_update_cpu(float *param, const float *grad, float *m, float *v, size_t n,
                      float grad_scale, const adamw_hyper *h) {
    if (grad_scale < 0.0f) return; /* CLIP_SKIP_STEP (kernels/norm.h): a skipped step */
    const float lr = h->lr, beta1 = h->beta1, beta2 = h->beta2, eps = h->eps;
    const float weight_decay = h->weight_decay;
    const int t = h->t;
    const float decay = (float)(1.0 - (double)lr * (double)weight_decay);
    const float w1 = (float)(1.0 - (double)beta1);
    const int w1_small = fabsf(w1) < 0.5f; /* torch's lerp picks its formula by weight */
    const float w2 = (float)(1.0 - (double)beta2);
    const float bc2_sqrt = (float)sqrt(1.0 - pow((double)beta2, t));
    const float step = (float)(-(double)lr / (1.0 - pow((double)beta1, t)));
    /* sqrtf may set errno, so GCC keeps this loop scalar unless the build has
     * -fno-math-errno (then it vectorises). */
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float g = grad[i] * grad_scale;
        const float p = param[i] * decay;
        const float mi = w1_small ? m[i] + w1 * (g - m[i]) : g - (g - m[i]) * (1.0f - w1);
        const float vi = v[i] * beta2 + w2 * g * g;
        const float denom = sqrtf(vi) / bc2_sqrt + eps;
        m[i] = mi;
        v[i] = vi;
        param[i] = p + step * mi / denom;
    }
}
