/* The mma.sync family's launchers, templates over a tile shape: the
 * shared-memory limit and the launch of the forward (launch_fwd_mma) and of
 * the backward's main kernel (launch_bwd_mma). attention_mma.cu
 * instantiates them for the production shapes,
 * tuning/attention_mma_variants.cu for the others. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_MMA_LAUNCH_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_MMA_LAUNCH_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/attention_mma_bwd.cuh"
#include "kernels/cuda/attention_mma_fwd.cuh"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/cuda_check.h"

namespace {

using namespace attention_tiles;

template <class Shape>
void launch_fwd_mma(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH,
                    cudaStream_t stream) {
    constexpr int HS = Shape::HS;
    typedef FwdCfg<HS, Shape::WARPS, Shape::ROW_TILES> Cfg;
    auto kernel = attn_fwd_mma_kernel<Shape>;
    static unsigned long long smem_done = 0;
    raise_smem_limit(kernel, Cfg::SMEM, smem_done);
    const unsigned grid = (unsigned)B * NH * ((T + Cfg::BM - 1) / Cfg::BM);
    const float scale_log2 = LOG2E / sqrtf((float)HS);
    kernel<<<grid, Cfg::NTH, Cfg::SMEM, stream>>>(out, lse, qkv, T, NH, scale_log2);
    CUDA_CHECK_LAUNCH("attn_fwd_mma_kernel");
}

template <class Shape> void launch_bwd_mma(const AttnBwdArgs &a, cudaStream_t stream) {
    constexpr int HS = Shape::HS;
    typedef BwdCfg<HS, Shape::WARPS, Shape::QUERIES> Cfg;
    auto kernel = attn_bwd_mma_kernel<Shape>;
    static unsigned long long smem_done = 0;
    raise_smem_limit(kernel, Cfg::SMEM, smem_done);
    const unsigned grid = (unsigned)a.B * a.NH * ((a.T + Cfg::BN - 1) / Cfg::BN);
    const float scale = 1.f / sqrtf((float)HS);
    attention_zero_dq_acc(a, stream); // every block adds into it
    kernel<<<grid, Cfg::NTH, Cfg::SMEM, stream>>>(a.dqkv, a.dq_acc, a.dout, a.qkv, a.lse, a.dsum,
                                                  a.T, a.NH, scale, scale * LOG2E);
    CUDA_CHECK_LAUNCH("attn_bwd_mma_kernel");
}

} // namespace
#endif
