/* bf16 <-> fp32 on the host: bf16 is the upper half of an fp32. Rounding is
 * to nearest even, as in PyTorch and CUDA's __float2bfloat16; NaN stays NaN.
 * For files (llm.c's bf16 model) and for tests of the bf16 kernels. */
#ifndef GPT2_MODEL_BF16_H
#define GPT2_MODEL_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint16_t bf16_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
#endif
