/* Squared L2 norm of a gradient range, the building block of global-norm clipping. */
#ifndef GPT2_KERNELS_NORM_H
#define GPT2_KERNELS_NORM_H
#include <math.h>
#include <stddef.h>

/* Sum of squares accumulated in double, deterministic for a fixed thread count. */
double sum_squares_cpu(const float *x, size_t n);

#if defined(__CUDACC__)
#define NORM_HOST_DEVICE __host__ __device__
#else
#define NORM_HOST_DEVICE
#endif
/* The clip factor of a step that must update nothing: its global gradient
 * norm (or its loss, folded in by nonfinite_fold) is NaN or Inf. Every
 * AdamW kernel returns at once, touching nothing, when the factor it reads
 * is negative; the host learns of the skip once the step is done. */
#define CLIP_SKIP_STEP (-1.0f)

/* The factor torch.nn.utils.clip_grad_norm_ multiplies gradients by:
 * min(1, max_norm / (norm + 1e-6)), norm = sqrt(sum_squares), in double;
 * 1 when max_norm <= 0 (no clipping); CLIP_SKIP_STEP when sum_squares is
 * not finite. One definition for both backends, so their factors are the
 * same bits. */
static inline NORM_HOST_DEVICE float clip_factor(double sum_squares, double max_norm) {
    if (!isfinite(sum_squares)) return CLIP_SKIP_STEP;
    if (max_norm <= 0.0) return 1.0f;
    const double coef = max_norm / (sqrt(sum_squares) + 1e-6);
    return coef < 1.0 ? (float)coef : 1.0f;
}

/* A non-finite value (a step's loss) makes the sum of squares NaN, so that
 * the step's clip factor says skip. */
static inline NORM_HOST_DEVICE double nonfinite_fold_value(double sum_squares, double value) {
    return isfinite(value) ? sum_squares : (double)NAN;
}

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
/* CUDA (src/kernels/cuda/norm.cu): *sum = the sum of the squares of n bf16
 * values, as a double on the device, through sum_squares_cuda_blocks()
 * partial sums (the caller's buffer) added in index order. The split of the
 * range depends only on n and the pointer's 16-byte alignment:
 * deterministic. */
int sum_squares_cuda_blocks(void);
void sum_squares_cuda(double *sum, double *partials, const void *x, size_t n, cudaStream_t stream);
/* *sum = the sum of n fp32 values as a double, by one block in a fixed
 * order (per-thread strided sums, then a fixed tree): for the few thousand
 * per-token losses of a step. */
void sum_f32_cuda(double *sum, const float *x, size_t n, cudaStream_t stream);
/* *scale = clip_factor(*sum_squares, max_norm) on the device. */
void clip_scale_cuda(float *scale, const double *sum_squares, double max_norm, cudaStream_t stream);
/* *sum_squares = NaN when *value is not finite (see nonfinite_fold_cpu). */
void nonfinite_fold_cuda(double *sum_squares, const double *value, cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
