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
 * scale stays as it was. Products are dequantised by 1 / scale. */
#ifndef GPT2_KERNELS_FP8_H
#define GPT2_KERNELS_FP8_H
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
#endif
