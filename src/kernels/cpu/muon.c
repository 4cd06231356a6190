/* Muon's CPU reference (kernels/muon.h): fp32 throughout, each matrix on
 * its own, in the order of the published PyTorch code (torch.lerp's two
 * forms, the normalisation by the Frobenius norm, A = X X^T, B = b A +
 * c A A, X = a X + B X), so that an fp32 PyTorch oracle agrees to rounding. */
#include "kernels/muon.h"

#include <math.h>
#include <string.h>

#include "kernels/matmul.h"

float muon_shape_scale(int rows, int cols) {
    const double ratio = (double)rows / cols;
    return (float)sqrt(ratio > 1.0 ? ratio : 1.0);
}

double muon_newton_schulz_flops(int rows, int cols) {
    /* On the wide orientation (s <= l): X X^T (2 s s l), A A (2 s^3), B X
     * (2 s s l), per iteration. */
    const double s = rows < cols ? rows : cols, l = rows < cols ? cols : rows;
    return MUON_NS_STEPS * (4.0 * s * s * l + 2.0 * s * s * s);
}

/* torch.lerp(a, b, w) in fp32, both of its forms. */
static float lerp(float a, float b, float w) {
    return fabsf(w) < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}

void muon_momentum_cpu(float *x, float *buf, const float *grad, const muon_batch *b,
                       float grad_scale, float momentum) {
    if (grad_scale < 0.0f) return; /* CLIP_SKIP_STEP (kernels/norm.h) */
    const size_t n = (size_t)b->rows * b->cols;
    const float w_buf = (float)(1.0 - (double)momentum);
    for (int k = 0; k < b->count; k++) {
        float *bk = buf + b->offsets[k];
        const float *gk = grad + b->offsets[k];
        float *xk = x + (size_t)k * n;
        for (size_t j = 0; j < n; j++) {
            const float g = gk[j] * grad_scale;
            bk[j] = lerp(bk[j], g, w_buf);
            xk[j] = lerp(g, bk[j], momentum);
        }
    }
}

size_t muon_orthogonalize_cpu_floats(int rows, int cols) {
    const size_t s = rows < cols ? rows : cols, l = rows < cols ? cols : rows;
    return 3 * s * l + 2 * s * s;
}

static void transpose(float *out, const float *in, int rows, int cols) {
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) out[(size_t)j * rows + i] = in[(size_t)i * cols + j];
}

/* X (s x l, s <= l) normalised and orthogonalised in place; work: 2 s l +
 * 2 s s floats (muon_orthogonalize_cpu_floats keeps s l more for the tall
 * orientation's transpose). */
static void newton_schulz_wide(float *X, int s, int l, float *work) {
    const size_t n = (size_t)s * l;
    float *XT = work, *BX = XT + n, *A = BX + n, *AA = A + (size_t)s * s;
    double sum = 0.0;
    for (size_t j = 0; j < n; j++) sum += (double)X[j] * X[j];
    const float denom = (float)sqrt(sum) + MUON_NORM_EPS;
    for (size_t j = 0; j < n; j++) X[j] /= denom;
    for (int it = 0; it < MUON_NS_STEPS; it++) {
        matmul_forward_cpu(A, X, X, NULL, s, l, s);  /* A = X X^T */
        matmul_forward_cpu(AA, A, A, NULL, s, s, s); /* A A^T = A A: A is symmetric */
        for (size_t j = 0; j < (size_t)s * s; j++) A[j] = MUON_NS_B * A[j] + MUON_NS_C * AA[j];
        transpose(XT, X, s, l);
        matmul_forward_cpu(BX, A, XT, NULL, s, s, l); /* B X */
        for (size_t j = 0; j < n; j++) X[j] = MUON_NS_A * X[j] + BX[j];
    }
}

void muon_orthogonalize_cpu(float *x, int count, int rows, int cols, float *work) {
    const size_t n = (size_t)rows * cols;
    for (int k = 0; k < count; k++) {
        float *xk = x + (size_t)k * n;
        if (rows <= cols) {
            newton_schulz_wide(xk, rows, cols, work);
        } else { /* tall: X^T, the wide orientation, in work's first s l floats */
            transpose(work, xk, rows, cols);
            newton_schulz_wide(work, cols, rows, work + n);
            transpose(xk, work, cols, rows);
        }
    }
}

void muon_apply_cpu(float *master, const float *x, const muon_batch *b, float grad_scale,
                    const muon_hyper *h) {
    if (grad_scale < 0.0f) return; /* CLIP_SKIP_STEP */
    const size_t n = (size_t)b->rows * b->cols;
    const float decay = (float)(1.0 - (double)h->lr * h->weight_decay);
    const float step = (float)(-(double)h->lr * h->scale);
    for (int k = 0; k < b->count; k++) {
        float *mk = master + b->offsets[k];
        const float *xk = x + (size_t)k * n;
        for (size_t j = 0; j < n; j++) {
            mk[j] *= decay;
            mk[j] += step * xk[j];
        }
    }
}
