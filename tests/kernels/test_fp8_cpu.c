/* The CPU model of FP8 (kernels/fp8.h): the formats checked against their
 * definition (every pattern's value, round trips, ties to even at every
 * midpoint, saturation, NaN) and, where the CUDA toolkit's headers are there
 * (GPT2_TEST_NVIDIA_FP8), bit for bit against NVIDIA's own host conversion
 * (cuda_fp8.h) for every float in and around each format's range, which no
 * one here wrote; then the delayed-scaling recipe over a sequence of steps
 * against the rule written out directly, and fp8_flushed at the edges of
 * the subnormals. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/fp8.h"
#include "model/fp8_layers.h" /* fp8_fast_accum_named */

#ifdef GPT2_TEST_NVIDIA_FP8
#include <cuda_fp8.h>
#endif

static int n_checks, n_failed;

static void check(int ok, const char *what, const char *detail) {
    n_checks++;
    if (ok) return;
    n_failed++;
    if (n_failed <= 20) printf("FAIL %s: %s\n", what, detail);
}

static const char *name_of(fp8_format f) { return f == FP8_E4M3 ? "e4m3" : "e5m2"; }

static float bits_to_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The value of a pattern from the format's definition, written out. */
static double defined_value(uint8_t b, fp8_format f) {
    const int eb = f == FP8_E4M3 ? 4 : 5, mb = 7 - eb, bias = f == FP8_E4M3 ? 7 : 15;
    const int e = (b >> mb) & ((1 << eb) - 1), m = b & ((1 << mb) - 1);
    const double sign = (b & 0x80) ? -1.0 : 1.0;
    if (f == FP8_E4M3 && e == 15 && m == 7) return NAN;
    if (f == FP8_E5M2 && e == 31) return m ? NAN : sign * INFINITY;
    const double frac = (e ? 1.0 : 0.0) + m / (double)(1 << mb);
    return sign * frac * pow(2.0, (e ? e : 1) - bias);
}

static void check_format(fp8_format f) {
    char what[64], detail[160];
    snprintf(what, sizeof what, "%s", name_of(f));
    const float maxf = fp8_max_finite(f);
    check(maxf == (f == FP8_E4M3 ? 448.0f : 57344.0f), what, "largest finite value");

    /* every pattern: its value, and encoding that value gives it back */
    int bad_value = 0, bad_trip = 0;
    for (int b = 0; b < 256; b++) {
        const double want = defined_value((uint8_t)b, f);
        const float got = fp8_decode((uint8_t)b, f);
        if (isnan(want) ? !isnan(got) : (double)got != want) bad_value++;
        if (!isnan(want) && !isinf(want) && fp8_encode(got, f) != b) bad_trip++;
    }
    snprintf(detail, sizeof detail, "%d patterns decode wrong, %d do not round-trip", bad_value,
             bad_trip);
    check(bad_value == 0 && bad_trip == 0, what, detail);

    /* between each pair of neighbouring finite positive values lo < hi:
     * below the midpoint -> lo, above -> hi, at it -> the even pattern */
    int bad_round = 0;
    for (int b = 0; b < 0x7F; b++) {
        const float lo = fp8_decode((uint8_t)b, f), hi = fp8_decode((uint8_t)(b + 1), f);
        if (!isfinite(hi)) break;
        const float mid = (float)(((double)lo + (double)hi) / 2.0); /* exact in fp32 */
        const uint8_t even = (b & 1) ? (uint8_t)(b + 1) : (uint8_t)b;
        if (fp8_encode(mid, f) != even) bad_round++;
        if (fp8_encode(nextafterf(mid, 0.0f), f) != b) bad_round++;
        if (fp8_encode(nextafterf(mid, INFINITY), f) != b + 1) bad_round++;
        /* and the same with the sign */
        if (fp8_encode(-nextafterf(mid, INFINITY), f) != (0x80 | (b + 1))) bad_round++;
    }
    snprintf(detail, sizeof detail, "%d midpoint roundings wrong", bad_round);
    check(bad_round == 0, what, detail);

    /* saturation, zero, NaN */
    const uint8_t top = fp8_encode(maxf, f);
    check(fp8_encode(INFINITY, f) == top && fp8_encode(-INFINITY, f) == (0x80 | top) &&
              fp8_encode(1e30f, f) == top && fp8_encode(maxf * 1.0625f, f) == top,
          what, "beyond the largest finite value saturates to it, infinity too");
    check(fp8_encode(NAN, f) == 0x7F && fp8_encode(-NAN, f) == 0x7F, what, "NaN encodes as 0x7F");
    check(fp8_encode(0.0f, f) == 0x00 && fp8_encode(-0.0f, f) == 0x80 &&
              fp8_encode(1e-30f, f) == 0x00 && fp8_encode(-1e-30f, f) == 0x80,
          what, "zeros and underflow keep the sign");
}

#ifdef GPT2_TEST_NVIDIA_FP8
/* Bit for bit against cuda_fp8.h's __nv_cvt_float_to_fp8 (satfinite) and
 * __nv_cvt_fp8_to_halfraw. Rounding depends on the mantissa bits down to
 * the one below the last kept (bit 16 at the deepest, an E4M3 subnormal)
 * and on whether any bit under that is set, so for every exponent in
 * [lo_exp, hi_exp) and both signs the test takes all 1024 values of the
 * top 10 mantissa bits with six patterns of the 13 below (zero, lowest
 * set, half, all but the top, all, half plus lowest); then a stride
 * through the whole float line, the specials, and a million pseudo-random
 * floats. */
static uint32_t next_u32(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 32);
}

typedef struct {
    long long n, bad, clip_bad, flush_bad, flushed;
    uint32_t first_bad, first_clip_bad, first_flush_bad;
} tally;

/* fp8_encode against the saturating conversion; fp8_flushed (at scale 1)
 * against it giving +-0 for a float that is not; fp8_clipped (at scale 1)
 * against the non-saturating one, whose result is NaN (E4M3) or infinity
 * (E5M2) exactly where saturation changes a finite value. */
static void compare_bits(tally *t, uint32_t bits, fp8_format f) {
    const __nv_fp8_interpretation_t nf = f == FP8_E4M3 ? __NV_E4M3 : __NV_E5M2;
    const float x = bits_to_float(bits);
    t->n++;
    const unsigned sat = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, nf);
    if (fp8_encode(x, f) != sat && t->bad++ == 0) t->first_bad = bits;
    const bool flushed = x != 0.0f && (sat & 0x7Fu) == 0;
    t->flushed += flushed;
    if (fp8_flushed(x, 1.0f, f) != flushed && t->flush_bad++ == 0) t->first_flush_bad = bits;
    if (!isfinite(x)) return;
    const unsigned nosat = __nv_cvt_float_to_fp8(x, __NV_NOSAT, nf) & 0x7Fu;
    float overshoot;
    const bool clipped = fp8_clipped(fabsf(x), 1.0f, f, &overshoot);
    if (clipped != (nosat == (f == FP8_E4M3 ? 0x7Fu : 0x7Cu)) && t->clip_bad++ == 0)
        t->first_clip_bad = bits;
}

static void check_nvidia(fp8_format f, int lo_exp, int hi_exp) {
    const __nv_fp8_interpretation_t nf = f == FP8_E4M3 ? __NV_E4M3 : __NV_E5M2;
    char what[64], detail[200];
    snprintf(what, sizeof what, "%s vs cuda_fp8.h", name_of(f));
    tally t = {0};
    const uint32_t lows[6] = {0, 1, 0x1000, 0x0FFF, 0x1FFF, 0x1001};
    for (uint32_t sign = 0; sign <= 1; sign++)
        for (int e = lo_exp; e < hi_exp; e++)
            for (uint32_t top = 0; top < 1024; top++)
                for (int k = 0; k < 6; k++)
                    compare_bits(&t, sign << 31 | (uint32_t)(e + 127) << 23 | top << 13 | lows[k],
                                 f);
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 65521) compare_bits(&t, (uint32_t)u, f);
    const uint32_t specials[] = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
                                 0xFFC00000, 0x7F800001, 0x00000001, 0x80000001, 0x7F7FFFFF};
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
        compare_bits(&t, specials[i], f);
    uint64_t state = 1;
    for (int i = 0; i < 1000000; i++) compare_bits(&t, next_u32(&state), f);
    const long long n = t.n, bad = t.bad;
    const uint32_t first_bad = t.first_bad;
    snprintf(detail, sizeof detail, "%lld of %lld floats encode differently (first: 0x%08x)", bad,
             n, first_bad);
    check(bad == 0, what, detail);
    snprintf(detail, sizeof detail, "fp8_clipped disagrees on %lld floats (first: 0x%08x)",
             t.clip_bad, t.first_clip_bad);
    check(t.clip_bad == 0, what, detail);
    snprintf(detail, sizeof detail,
             "fp8_flushed disagrees on %lld floats (first: 0x%08x); %lld flush", t.flush_bad,
             t.first_flush_bad, t.flushed);
    check(t.flush_bad == 0 && t.flushed > 0, what, detail);

    int bad_dec = 0;
    for (int b = 0; b < 256; b++) {
        const __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, nf);
        /* half -> float: sign, 5-bit exponent, 10-bit mantissa */
        const int hs = h.x >> 15, he = (h.x >> 10) & 31, hm = h.x & 1023;
        double want = he == 31
                          ? (hm ? NAN : INFINITY)
                          : (he ? 1.0 + hm / 1024.0 : hm / 1024.0) * pow(2.0, (he ? he : 1) - 15);
        if (hs) want = -want;
        const float got = fp8_decode((uint8_t)b, f);
        if (isnan(want) ? !isnan(got) : (double)got != want) bad_dec++;
    }
    snprintf(detail, sizeof detail, "%d of 256 patterns decode differently", bad_dec);
    check(bad_dec == 0, what, detail);
    printf("%s: %lld floats encoded as cuda_fp8.h does, 256 patterns decoded\n", what, n - bad);
}
#endif

/* The recipe over 12 steps with a history of 4 and margin 1, against the
 * rule written out: scale = max / max(last 4 amaxes) / 2, unless that max is
 * 0 or the last 4 hold a non-finite value. */
static void check_scaling(void) {
    const float amax[12] = {0.0f, 2.0f,  0.5f,  8.0f,  1.0f,  1.0f,
                            NAN,  0.25f, 0.25f, 0.25f, 0.25f, 3.0f};
    float history[4] = {0};
    float scale = 1.0f;
    int bad = 0;
    char detail[200] = "";
    for (int step = 0; step < 12; step++) {
        const float before = scale;
        scale = fp8_scale_update(history, 4, step, amax[step], scale, FP8_E4M3, 1);
        /* the rule, from the amax sequence alone */
        float m = 0.0f;
        int finite = 1;
        for (int k = step; k > step - 4 && k >= 0; k--) {
            if (!isfinite(amax[k]))
                finite = 0;
            else if (amax[k] > m)
                m = amax[k];
        }
        const float want = finite && m > 0.0f ? 448.0f / m / 2.0f : before;
        if (scale != want && bad++ == 0)
            snprintf(detail, sizeof detail, "step %d: scale %g, the rule gives %g", step, scale,
                     want);
    }
    check(bad == 0, "delayed scaling", detail);
    /* a history of one is current scaling: the scale follows each amax */
    float h1[1] = {0};
    const float s1 = fp8_scale_update(h1, 1, 7, 0.5f, 1.0f, FP8_E5M2, 0);
    check(s1 == 57344.0f / 0.5f, "delayed scaling", "history of 1 follows the current amax");
    /* an amax so small that the quotient overflows: the largest float, not inf */
    const float s2 = fp8_scale_update(h1, 1, 8, 1e-40f, 1.0f, FP8_E4M3, 0);
    check(s2 == FLT_MAX, "delayed scaling", "an overflowing scale is FLT_MAX");
    /* clipping: the product at the scale, against the formats' rounding limits */
    float over = 0.0f;
    check(!fp8_clipped(232.0f, 2.0f, FP8_E4M3, &over) && over == 464.0f / 448.0f, "clipping",
          "E4M3: 464 rounds to 448, not clipped");
    check(fp8_clipped(232.01f, 2.0f, FP8_E4M3, &over), "clipping", "E4M3: above 464 clips");
    check(fp8_clipped(61440.0f, 1.0f, FP8_E5M2, &over), "clipping", "E5M2: 61440 rounds past");
    check(!fp8_clipped(61439.0f, 1.0f, FP8_E5M2, &over), "clipping", "E5M2: below 61440 fits");
    check(!fp8_clipped(NAN, 1.0f, FP8_E4M3, &over) && over == 0.0f, "clipping",
          "a NaN amax is the non-finite guard's, not clipping");
}

/* fp8_flushed at the edge of each format's subnormals: half the smallest
 * subnormal (2^-10 in E4M3, 2^-17 in E5M2) is a tie that rounds to even,
 * zero; the float above it rounds up to the subnormal. */
static void check_flushed(void) {
    const float e4 = ldexpf(1.0f, -10), e5 = ldexpf(1.0f, -17);
    check(fp8_flushed(e4, 1.0f, FP8_E4M3) && !fp8_flushed(nextafterf(e4, 1.0f), 1.0f, FP8_E4M3) &&
              fp8_flushed(-e4, 1.0f, FP8_E4M3),
          "flushed", "E4M3: 2^-10 flushes, the next float up does not");
    check(fp8_flushed(e5, 1.0f, FP8_E5M2) && !fp8_flushed(nextafterf(e5, 1.0f), 1.0f, FP8_E5M2),
          "flushed", "E5M2: 2^-17 flushes, the next float up does not");
    check(fp8_flushed(1.0f, ldexpf(1.0f, -11), FP8_E4M3) &&
              !fp8_flushed(1.0f, ldexpf(1.0f, -9), FP8_E4M3),
          "flushed", "the scale applies before the cast");
    check(!fp8_flushed(0.0f, 1.0f, FP8_E4M3) && !fp8_flushed(-0.0f, 1.0f, FP8_E5M2) &&
              !fp8_flushed(NAN, 1.0f, FP8_E4M3) && !fp8_flushed(INFINITY, 1e-30f, FP8_E5M2) &&
              !fp8_flushed(1e-30f, FLT_MAX, FP8_E4M3),
          "flushed", "zero is not flushed, nor NaN, infinity or a value scaled into range");
}

/* fp8_fast_accum_named: the config key's names, in the enum's order. */
static void check_fast_accum_names(void) {
    const char *const names[] = {"none", "forward", "all"};
    const fp8_fast_accum modes[] = {FP8_FAST_ACCUM_NONE, FP8_FAST_ACCUM_FORWARD,
                                    FP8_FAST_ACCUM_ALL};
    for (int i = 0; i < 3; i++) {
        fp8_fast_accum m = modes[(i + 1) % 3];
        check(fp8_fast_accum_named(names[i], &m) && m == modes[i] &&
                  strcmp(fp8_fast_accum_names[i], names[i]) == 0,
              "fast accumulation names", names[i]);
    }
    fp8_fast_accum m = FP8_FAST_ACCUM_ALL;
    check(!fp8_fast_accum_named("Forward", &m) && !fp8_fast_accum_named("", &m) &&
              m == FP8_FAST_ACCUM_ALL && fp8_fast_accum_names[3] == NULL,
          "fast accumulation names", "another name is refused, the mode left as it was");
}

int main(void) {
    check_format(FP8_E4M3);
    check_format(FP8_E5M2);
#ifdef GPT2_TEST_NVIDIA_FP8
    check_nvidia(FP8_E4M3, -12, 10);
    check_nvidia(FP8_E5M2, -19, 17);
#else
    printf("cuda_fp8.h not available: checked against the format definition only\n");
#endif
    check_scaling();
    check_flushed();
    check_fast_accum_names();
    printf("SUMMARY test_fp8_cpu: %d checks, %d failed: %s\n", n_checks, n_failed,
           n_failed ? "FAIL" : "PASS");
    return n_failed ? 1 : 0;
}
