/* FP8 on the CPU: the two 8-bit float formats of Hopper's tensor cores and
 * the delayed-scaling recipe that keeps tensors inside their range. This is
 * the reference that FP8 casts and scale updates on the GPU are checked
 * against, bit for bit.
 *
 * Formats (OCP FP8, as NVIDIA implements them; sign in bit 7):
 *   E4M3  4 exponent bits (bias 7), 3 mantissa bits, no infinities; the
 *         all-ones pattern S.1111.111 is NaN; largest 448, smallest
 *         subnormal 2^-9. For activations and weights.
 *   E5M2  5 exponent bits (bias 15), 2 mantissa bits, IEEE-like with
 *         infinities and NaNs; largest finite 57344, smallest subnormal
 *         2^-16. For gradients (more range, less precision).
 * Encoding rounds to nearest, ties to even, and saturates: a magnitude
 * beyond the largest finite value (infinity included) becomes that value
 * with its sign, as cvt.rn.satfinite does on the GPU. NaN becomes 0x7F in
 * both formats.
 *
 * Delayed scaling (Transformer Engine's recipe): a tensor is cast as
 * fp8(x * scale); each step its amax (largest |x|) goes into a history of
 * the last `len` steps, and the next step's scale is
 * max_finite / max(history) / 2^margin, so that the largest value seen
 * lately lands at the top of the range less `margin` binades. Where that
 * max is 0 or not finite (a NaN or infinity anywhere in the history) the
 * scale stays as it was; where the quotient overflows (an amax below
 * max_finite / FLT_MAX) it is FLT_MAX, as in Transformer Engine. Products
 * are dequantised by 1 / scale. */
#ifndef GPT2_KERNELS_FP8_H
#define GPT2_KERNELS_FP8_H
#include <stdbool.h>
#include <stdint.h>

typedef enum { FP8_E4M3 = 0, FP8_E5M2 = 1 } fp8_format;

/* The largest finite value of the format: 448 or 57344. */
float fp8_max_finite(fp8_format f);
/* x rounded to the format (nearest, ties to even, saturating). */
uint8_t fp8_encode(float x, fp8_format f);
/* The value of an 8-bit pattern (NaN for NaN patterns, +-inf for E5M2's). */
float fp8_decode(uint8_t bits, fp8_format f);

/* One step of delayed scaling for one tensor: `amax` (this step's largest
 * |x|) goes into history[step % len] (history: len >= 1 entries, zeros at
 * the start), and the returned scale is computed from the whole history as
 * above, or is `scale` (the current one) where that is not possible. */
float fp8_scale_update(float *history, int len, int64_t step, float amax, float scale, fp8_format f,
                       int margin);

/* Whether casts at `scale` of a tensor whose largest |x| was amax clipped:
 * amax * scale rounds (to nearest, ties to even) beyond the format's
 * largest finite value, so that saturation changed at least one value (at
 * or above 464 for E4M3, ties to 448 included, 61440 for E5M2). Sets
 * *overshoot = amax * scale / max_finite. A non-finite amax does not
 * count: the run's non-finite guard sees it. */
bool fp8_clipped(float amax, float scale, fp8_format f, float *overshoot);

/* Whether casting x at `scale` flushes it: x is not zero (NaN and the
 * infinities count as not zero; they do not flush) and fp8_encode(x *
 * scale) is +-0, because |x| * scale lies below half the format's
 * smallest subnormal (2^-10 for E4M3, 2^-17 for E5M2). The underflow that
 * a scale too small for a tensor's values causes. */
bool fp8_flushed(float x, float scale, fp8_format f);

/* What the casts of one tensor have seen since its last scale update, in
 * a backend's memory: the casts add to it, fp8_scaling_update reads it
 * and starts it again. amax: the largest |x| (NaN once any x was NaN);
 * nonzero: the values cast that were not zero; flushed: those of them
 * that came out +-0 (fp8_flushed). */
typedef struct {
    float amax;
    uint32_t unused; /* the counts 8-byte aligned */
    unsigned long long nonzero, flushed;
} fp8_cast_stats;

/* Which FP8 products use cuBLASLt's fast accumulation
 * (CUBLASLT_MATMUL_DESC_FAST_ACCUM): Hopper's FP8 tensor cores add into an
 * accumulator of reduced precision; without it cuBLASLt promotes the
 * partial sums into FP32 registers at intervals along K, which costs
 * throughput. Transformer Engine and torchao keep it on for the forward
 * and off for both gradients, whose sums run over more terms (the weight
 * gradient's over every token). */
typedef enum {
    FP8_FAST_ACCUM_NONE,
    FP8_FAST_ACCUM_FORWARD, /* the forward product only */
    FP8_FAST_ACCUM_ALL      /* all three products */
} fp8_fast_accum;

/* The FP8 copies of one linear layer's operands (nn.Linear: inp (N,C),
 * weight (OC,C), dout (N,OC)) that its products read in place of the bf16
 * ones, each with its transpose for the product over the other dimension
 * (cuBLASLt multiplies FP8 only with K contiguous in both operands), and
 * the device floats that dequantise them. The forward reads inp and
 * weight; the input gradient dout and weight_t; the weight gradient
 * dout_t and inp_t. */
typedef struct {
    const uint8_t *inp, *inp_t;       /* E4M3 (N,C), (C,N) */
    const uint8_t *weight, *weight_t; /* E4M3 (OC,C), (C,OC) */
    const uint8_t *dout, *dout_t;     /* E5M2 (N,OC), (OC,N) */
    const float *inp_dequant, *weight_dequant, *dout_dequant;
    fp8_fast_accum fast_accum; /* where the products accumulate fast */
} fp8_linear_operands;

/* The delayed-scaling state of n tensors in a backend's memory (arrays, owned
 * by the caller): scale[i * stride] multiplies tensor i before its cast,
 * dequant[i * stride] = 1 / scale multiplies the products made from it,
 * stats[i] is what its casts have seen since the last update (its amax
 * among it), history[i * len ..] its last len amaxes, format[i] its
 * fp8_format. stride 4 keeps each tensor's dequant 16-byte aligned, as
 * cuBLASLt wants its scale pointers. clipped (may be NULL; stride >= 2):
 * clipped[i * stride] counts the updates whose amax had clipped
 * (fp8_clipped at the scale the casts used), clipped[i * stride + 1] is
 * the largest overshoot among them. underflow (may be NULL):
 * underflow[2 i] and [2 i + 1] add up stats[i].nonzero and .flushed over
 * the updates, the run's totals. */
typedef struct {
    int n, len, margin, stride;
    float *scale, *dequant, *history;
    fp8_cast_stats *stats;
    const uint8_t *format;
    float *clipped;
    unsigned long long *underflow;
} fp8_scaling;

/* One tensor of a batched cast (fp8_cast_cuda's arguments): rows x cols
 * bf16 `in` into out and out_t (may be NULL), stats and scale on the
 * device; dequant (may be NULL), on the device too, gets 1 / *scale, the
 * factor the products of this copy must use, so that a copy kept longer
 * than its scale (FP8 weights held through the micro-steps of a step)
 * carries its own (an empty tensor is skipped, its dequant too). */
typedef struct {
    uint8_t *out, *out_t;
    fp8_cast_stats *stats;
    const void *in;
    int rows, cols;
    const float *scale;
    float *dequant;
} fp8_cast_job;
enum { FP8_CAST_BATCH_MAX = 4 }; /* tensors per batched cast: a block's four weights */

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
/* CUDA (kernels/cuda/fp8.cu): out (rows, cols) = fp8(in * *scale), in a
 * bf16 (rows, cols) row-major tensor, encoded as fp8_encode does (bit for
 * bit); out_t (cols, rows), the same bytes transposed, for the GEMMs that
 * need the other dimension contiguous (skipped when NULL); stats (skipped
 * when NULL): amax = max(amax, max |in|) (a NaN in `in` makes it NaN, so
 * that the scale update keeps its scale and the run's non-finite guard
 * sees it), nonzero and flushed += the counts of this cast, exactly.
 * scale and stats are device pointers, so that no host sync is needed.
 * cols a multiple of 8, rows of 16 where out_t is written; in and out
 * 16-byte aligned. */
void fp8_cast_cuda(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *in, int rows,
                   int cols, const float *scale, fp8_format f, cudaStream_t stream);

/* fp8_cast_cuda of each of n (<= FP8_CAST_BATCH_MAX) tensors, all in
 * format f, in one launch: for small tensors (a block's weights), each of
 * whose own launches would leave most of the GPU idle. */
void fp8_cast_batch_cuda(const fp8_cast_job *jobs, int n, fp8_format f, cudaStream_t stream);

/* fp8_cast_cuda of gelu(pre) rounded to bf16 (the values matmul.cu's GELU
 * stores): the GELU forward fused into the cast of its output, whose bf16
 * copy is then never written. */
void fp8_gelu_cast_cuda(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *pre,
                        int rows, int cols, const float *scale, fp8_format f, cudaStream_t stream);

/* fp8_cast_cuda (with the transposed copy) of g = d * gelu'(pre) rounded to
 * bf16, the GELU backward fused into the cast of its result: d (rows,
 * cols) a product's input gradient before the GELU, pre the GELU's input.
 * colsum (cols, bf16; may be NULL) += the column sums of g, as
 * matmul_backward_cuda's dpre_colsum: bit for bit, through partials
 * (ceil(rows / 64) x cols floats of device scratch). rows a multiple of 16. */
void fp8_gelu_backward_cast_cuda(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, void *colsum,
                                 float *partials, const void *d, const void *pre, int rows,
                                 int cols, const float *scale, fp8_format f, cudaStream_t stream);
/* out_t (cols, rows) = in (rows, cols) transposed, bytes: the transposed
 * copy of an FP8 tensor written without one (the FP8 lm head's dlogits),
 * the bytes fp8_cast_cuda's out_t would hold. rows and cols multiples of
 * 16, both 16-byte aligned. */
void fp8_transpose_cuda(uint8_t *out_t, const uint8_t *in, int rows, int cols, cudaStream_t stream);
/* One step of fp8_scale_update for every tensor (bit for bit the CPU's):
 * amax into the history at `step`, the clipping count (fp8_clipped at the
 * old scale), the counts into the underflow totals, the new scale and
 * dequant, the stats back to 0 for the next step's casts. No host
 * synchronisation. */
void fp8_scaling_update_cuda(const fp8_scaling *s, int64_t step, cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
