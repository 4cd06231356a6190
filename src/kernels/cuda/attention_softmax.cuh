/* The backward's element-wise steps between its products, on a warp's
 * fragments in the mma.sync accumulator layout (which wgmma's is per warp):
 * the probabilities P^T = exp(S^T - lse) with the causal mask, and dS^T =
 * P^T (dP^T - D). Used by both wgmma backward kernels; the mma.sync
 * backward (attention_mma_bwd.cuh) and the forwards (online softmax) do
 * theirs inline in the main loop, fused with their own loops. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_SOFTMAX_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_SOFTMAX_CUH

#include <cuda_runtime.h>

#include "kernels/cuda/ptx.cuh" // fast_exp2, LOG2E

namespace {

// The backward's element-wise steps on a warp's fragments of a tile of 16
// keys x 8 QN queries (S^T, dP^T: key kw0 + g + 8 (e >> 1), query q0 + 8n
// + 2 t4 + (e & 1) in [4n + e]). P^T = exp(S^T - lse) in place of S^T,
// zero above the diagonal where MASKED (the compares, 64 instructions, in
// the diagonal tile only); ls: the tile's lse rows.
template <bool MASKED, int QN>
__device__ __forceinline__ void exp_p_frags(float (&s)[QN * 4], const float *ls, float scale_log2,
                                            int kw0, int q0, int g, int t4) {
#pragma unroll
    for (int n = 0; n < QN; n++) {
        const float2 L = *reinterpret_cast<const float2 *>(ls + n * 8 + 2 * t4);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float p =
                fast_exp2(fmaf(s[4 * n + e], scale_log2, -((e & 1) ? L.y : L.x) * LOG2E));
            s[4 * n + e] =
                MASKED && kw0 + g + ((e >> 1) << 3) > q0 + n * 8 + 2 * t4 + (e & 1) ? 0.f : p;
        }
    }
}
// dS^T = P^T (dP^T - D) in place of dP^T; ds: the tile's D rows.
template <int QN>
__device__ __forceinline__ void ds_of_p_frags(float (&dp)[QN * 4], const float (&p)[QN * 4],
                                              const float *ds, int t4) {
#pragma unroll
    for (int n = 0; n < QN; n++) {
        const float2 Dq = *reinterpret_cast<const float2 *>(ds + n * 8 + 2 * t4);
#pragma unroll
        for (int e = 0; e < 4; e++)
            dp[4 * n + e] = p[4 * n + e] * (dp[4 * n + e] - ((e & 1) ? Dq.y : Dq.x));
    }
}

} // namespace
#endif
