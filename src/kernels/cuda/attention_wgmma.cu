/* Causal flash attention on wgmma and TMA, the kernel family of Hopper
 * (sm_90a code, compute capability 9.0: H100, H200, GH200), head size 64 or
 * 128, forward and the backward's main kernel: the FlashAttention-2
 * algorithm of the mma.sync family (attention_mma.cu; same lse layout and
 * results within bf16 rounding) with the matrix products on wgmma, the
 * Hopper tensor-core instruction that a warpgroup (4 warps) issues
 * asynchronously with its operands read from shared memory through matrix
 * descriptors, and the copies on the Hopper copy engine (TMA). The
 * dispatcher (attention.cu) runs these where they run, unless its options
 * say otherwise, and the backward's passes around the main kernel.
 *
 * Forward: a block of NWG warpgroups owns 64 * NWG query rows of one
 * (batch, head); warpgroup w the rows 64w..64w+63. Thread 0 loads the Q
 * tile and K, V tiles of BN keys with TMA (a 4-D tensor map of qkv) into
 * 4 (head size 64) or 3 (128) buffers, each with a "full" mbarrier the
 * copy completes and an "empty" one every warp arrives at when done with
 * it, and refills a buffer once every warp is done with it; no block-wide
 * barrier in the loop. The walk is software pipelined: a warpgroup issues
 * S of key tile j together with P V of the tile before, and computes the
 * softmax of tile j while the tensor cores do that P V. At head size 128,
 * whose walk over key tiles of 128 needs 160 registers for O, S and P, the
 * block is FlashAttention-3's: one block per SM, a producer warpgroup whose
 * thread 0 does the loading and whose registers go to the two computing
 * warpgroups (setmaxnreg), which issue their products in turns (ping-pong),
 * on a persistent grid whose blocks walk pairs of query tiles.
 * The tiles are in the 128-byte swizzled layout of attention_tiles.cuh, which
 * is both TMA's 128-byte swizzle and the layout wgmma reads (K-major for Q
 * and K in S = Q K^T; MN-major, transposed by the instruction, for V in
 * O += P V); 128 head dims are two 64-column atoms.
 * The walk over key tiles, causal skipping per warpgroup, masking and the
 * online softmax (base 2, fp32) are the mma.sync family's; the wgmma
 * accumulator layout per warp is the mma.sync one, so P goes from the S
 * accumulators straight into wgmma's register A operand. Blocks go in
 * groups of 16 heads, longest query tiles first (fwd_block_coords;
 * persistent, the backward's schedule over query tiles, ws_schedule).
 * Where no TMA tensor map can be made (a driver without
 * cuTensorMapEncodeTiled), the same shapes run with cp.async loads
 * (CpAsyncFwd, CpAsyncBwd64, CpAsyncBwd).
 *
 * Backward: warp-specialized, as FlashAttention-3 builds it
 * (attn_bwd_ws_kernel: a producer warpgroup and two consumer warpgroups
 * over 128 keys), at both head sizes; one warpgroup over 64 keys
 * (attn_bwd_wgmma_kernel) where no tensor map can be made.
 *
 * The parts, by role (as FlashAttention-3's hopper/ folder): the forward's
 * main loop (attention_wgmma_fwd.cuh), the backward's (one warpgroup:
 * attention_wgmma_bwd.cuh; warp-specialized: attention_wgmma_bwd_ws.cuh),
 * the backward's softmax and mask steps (attention_softmax.cuh), its stores
 * (attention_wgmma_epilogue.cuh), the tile scheduler
 * (attention_tile_scheduler.cuh over attention_block_order.h), the tile
 * shapes (attention_tile_shapes.cuh: WgmmaFwd64 ... WsBwd128), what the
 * kernels share (attention_wgmma_tiles.cuh; the wgmma and TMA instructions,
 * wgmma.cuh, with the GEMM) and the launchers
 * (attention_wgmma_launch.cuh); this file instantiates them for the
 * production shapes. Tuning builds (docs/building.md) add the other shapes
 * measured, by name (tuning/attention_wgmma_variants.cu). The kernels have
 * bodies only when compiled for sm_90a (GPT2_CUDA_ARCHS with "90a"; the
 * build then defines GPT2_HAVE_SM90A). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/attention_tile_shapes.cuh"
#include "kernels/cuda/attention_wgmma_launch.cuh"
#include "kernels/cuda/cuda_check.h"

bool attention_wgmma_supported() {
#ifdef GPT2_HAVE_SM90A
    static signed char known[64]; // per device: 0 unknown, 1 yes, -1 no
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev < 64 && known[dev]) return known[dev] > 0;
    int major = 0, minor = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    const bool yes = major == 9 && minor == 0; // sm_90a code runs on compute capability 9.0 only
    if (dev < 64) known[dev] = yes ? 1 : -1;
    return yes;
#else
    return false;
#endif
}

void attention_wgmma_forward(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH, int HS,
                             cudaStream_t stream) {
    if (HS == 64)
        launch_fwd_wgmma<WgmmaFwd64>(out, lse, qkv, B, T, NH, stream);
    else
        launch_fwd_wgmma<WgmmaFwd128>(out, lse, qkv, B, T, NH, stream);
}

void attention_wgmma_forward_fp8(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH,
                                 const AttnFp8Out &fp8, cudaStream_t stream) {
    if (T % 64 != 0) // the epilogue casts every row of an active warpgroup
        fail_at(__FILE__, __LINE__, EXIT_FATAL,
                "attention_wgmma_forward_fp8: T = %d is no multiple of 64", T);
    run_fwd_wgmma<WgmmaFwd64, true>(out, lse, qkv, B, T, NH, stream, &fp8);
}

void attention_wgmma_backward(const AttnBwdArgs &a, cudaStream_t stream) {
    if (a.HS == 64)
        launch_bwd_ws<WsBwd64>(a, stream);
    else
        launch_bwd_ws<WsBwd128>(a, stream);
}
