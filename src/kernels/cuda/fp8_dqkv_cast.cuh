/* The attention backward's last pass with FP8 output (fp8.cu has the
 * kernel, attention.cu runs it): dqkv cast for the qkv projection's FP8
 * backward, with dQ taken from the backward's fp32 accumulator instead of
 * a bf16 copy written first. */
#ifndef GPT2_KERNELS_CUDA_FP8_DQKV_CAST_CUH
#define GPT2_KERNELS_CUDA_FP8_DQKV_CAST_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/fp8.h"

/* The accumulator that holds dqkv's first C columns (dQ before its scale),
 * in the wgmma backward's layout (attention_tiles.cuh's dq_wgmma_index) or
 * [rows][C]. */
struct fp8_dq_source {
    const float *acc;
    float scale; /* 1 / sqrt(head size) */
    int C, T, NH;
    bool wgmma_layout;
    bool dq_only; /* the main kernel cast dK and dV (columns [C, 3C)) itself */
};

/* fp8_cast_cuda (with out_t) of dqkv (rows x 3C bf16), whose columns [0, C)
 * are bf16(dq.acc * dq.scale) instead of what dqkv holds there (it is not
 * written); with dq.dq_only only those columns (the others' bytes are left
 * as they are, and dqkv is not read); partials (may be NULL) [rows / 64][3C]
 * columns [0, C) = those columns' sums per 64 rows in attention.cu's
 * conversion order. rows and dq.T multiples of 64. Launched by
 * launch_dependent: it waits for the kernel before. */
void fp8_dqkv_cast_launch(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, float *partials,
                          const void *dqkv, const fp8_dq_source &dq, int rows, const float *scale,
                          fp8_format f, cudaStream_t stream);
#endif
