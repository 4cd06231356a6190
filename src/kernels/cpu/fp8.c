/* FP8 formats and delayed scaling on the CPU (kernels/fp8.h has the
 * contract).
 *
 * Design: encoding works on values, not bit fields. The magnitude is
 * divided by the spacing of representable values in its binade (a power of
 * two, so the division is exact in double), rounded to an integer with
 * rint (the FPU's nearest-even), and multiplied back: that is the nearest
 * representable value, also where rounding carries into the next binade.
 * Values past the largest finite one then saturate, and the exact result is
 * packed into exponent and mantissa fields. This is deliberately not the
 * shift-and-mask path of NVIDIA's own conversion, against which the test
 * checks it. */
#include "kernels/fp8.h"

#include <float.h>
#include <math.h>

typedef struct {
    int exp_bits, man_bits, bias;
    float max_finite;
} fp8_spec;

static fp8_spec spec_of(fp8_format f) {
    if (f == FP8_E4M3) return (fp8_spec){4, 3, 7, 448.0f};
    return (fp8_spec){5, 2, 15, 57344.0f};
}

float fp8_max_finite(fp8_format f) { return spec_of(f).max_finite; }

uint8_t fp8_encode(float x, fp8_format f) {
    const fp8_spec s = spec_of(f);
    if (isnan(x)) return 0x7F;
    const uint8_t sign = signbit(x) ? 0x80 : 0x00;
    double a = fabs((double)x);
    const int min_exp = 1 - s.bias; /* exponent of the smallest normal */
    /* the spacing of representable values around a: 2^(e - man_bits) in
     * binade [2^e, 2^(e+1)), and the subnormal spacing below 2^min_exp */
    int e = min_exp;
    if (a >= ldexp(1.0, min_exp) && isfinite(a)) {
        (void)frexp(a, &e);
        e -= 1; /* a = m * 2^e with m in [1, 2) */
    }
    const double quantum = ldexp(1.0, e - s.man_bits);
    if (isfinite(a)) a = rint(a / quantum) * quantum;
    if (a > s.max_finite) a = s.max_finite; /* saturate (infinity too) */
    if (a == 0.0) return sign;

    uint8_t bits;
    if (a < ldexp(1.0, min_exp)) { /* subnormal: exponent field 0 */
        bits = (uint8_t)(a / ldexp(1.0, min_exp - s.man_bits));
    } else {
        int ea;
        const double m = frexp(a, &ea); /* a = m * 2^ea, m in [0.5, 1) */
        const int exp_field = ea - 1 + s.bias;
        const int man_field = (int)((m * 2.0 - 1.0) * (double)(1 << s.man_bits));
        bits = (uint8_t)(exp_field << s.man_bits | man_field);
    }
    return (uint8_t)(sign | bits);
}

float fp8_decode(uint8_t bits, fp8_format f) {
    const fp8_spec s = spec_of(f);
    const int sign = bits >> 7;
    const int exp_field = (bits >> s.man_bits) & ((1 << s.exp_bits) - 1);
    const int man_field = bits & ((1 << s.man_bits) - 1);
    const int exp_all_ones = (1 << s.exp_bits) - 1;
    double v;
    if (f == FP8_E4M3 && exp_field == exp_all_ones && man_field == (1 << s.man_bits) - 1)
        return NAN;
    if (f == FP8_E5M2 && exp_field == exp_all_ones)
        v = man_field ? NAN : INFINITY;
    else if (exp_field == 0) /* subnormal */
        v = ldexp((double)man_field, 1 - s.bias - s.man_bits);
    else
        v = ldexp(1.0 + (double)man_field / (double)(1 << s.man_bits), exp_field - s.bias);
    return (float)(sign ? -v : v);
}

float fp8_scale_update(float *history, int len, int64_t step, float amax, float scale, fp8_format f,
                       int margin) {
    history[step % len] = amax;
    float max = 0.0f;
    for (int i = 0; i < len; i++) {
        if (!isfinite(history[i])) return scale;
        if (history[i] > max) max = history[i];
    }
    if (max == 0.0f) return scale;
    const float next = fp8_max_finite(f) / max / ldexpf(1.0f, margin);
    return isinf(next) ? FLT_MAX : next; /* an amax too small for a finite scale */
}

bool fp8_clipped(float amax, float scale, fp8_format f, float *overshoot) {
    const float scaled = amax * scale, max_finite = fp8_max_finite(f);
    *overshoot = isfinite(amax) ? scaled / max_finite : 0.0f;
    if (!isfinite(amax)) return false;
    /* halfway to the next step above max_finite: the tie rounds to 448 (even)
     * in E4M3, and to 65536 (even, past the range) in E5M2 */
    return f == FP8_E4M3 ? scaled > 464.0f : scaled >= 61440.0f;
}

bool fp8_flushed(float x, float scale, fp8_format f) {
    return x != 0.0f && (fp8_encode(x * scale, f) & 0x7F) == 0;
}
