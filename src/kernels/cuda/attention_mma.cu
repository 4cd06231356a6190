/* Causal flash attention on mma.sync (FlashAttention-2 algorithm), the
 * kernel family of every GPU of compute capability 8.0 and newer (Ampere
 * on; on Hopper the wgmma family of attention_wgmma.cu runs by default):
 * BF16 in and out, FP32 accumulation and softmax, head sizes 64 and 128, any
 * T. The dispatcher (attention.cu) chooses the family and runs the
 * backward's passes around its main kernel; contract and CPU reference:
 * kernels/attention.h, kernels/cpu/attention.c.
 *
 * Tensor cores through mma.sync.m16n8k16 (bf16 -> fp32, sm_80+ PTX, runs on
 * sm_90), operands from shared memory through ldmatrix, global -> shared
 * through cp.async, double buffered (the next tile loads while this one is
 * computed). Shared tiles are rows of HS bf16 whose 16-byte chunks are XOR
 * swizzled by row, so the 8 rows an ldmatrix reads hit 8 different bank
 * groups without padding (attention_tiles.cuh).
 *
 * Forward: a block owns BM query rows of one (batch, head); each warp owns
 * MT*16 consecutive rows with their Q fragments, O accumulators and softmax
 * state (max m, sum l) in registers. The block walks the key/value tiles of
 * BN = 64 keys from the diagonal tile down to tile 0: S = Q K^T, online
 * softmax in fp32 (base 2, the 1/sqrt(HS) scale folded into one FMA), P goes
 * from the S accumulators straight into mma A fragments (the accumulator
 * layout of two n-tiles is the A layout), O += P V. Only tiles touching the
 * diagonal are masked; a warp skips tiles wholly above its rows (causal
 * block skipping). The end writes lse (natural log) and O / l through shared
 * memory as 16-byte stores. Block order: longest query tiles first over all
 * heads, so the short ones fill the tail. (Grouping the tiles of one head
 * instead raises the L2 hit rate but measured no faster, and slower at long
 * T: the forward is bound by issue and latency at 8 warps per SM, not by
 * DRAM.)
 *
 * Backward main kernel (the dispatcher runs D = rowsum(dO * O) before it,
 * dQ * scale -> bf16 after; its launcher zeroes the fp32 dQ accumulator): a
 * block owns BN = 16*WARPS keys (16 per warp) and keeps dK, dV for them in
 * registers while it walks the query tiles of BM rows from the diagonal to
 * T: per tile, recompute S^T = K Q^T and P^T = exp(S^T - lse),
 * dP^T = V dO^T, dS^T = P^T (dP^T - D), dV += P^T dO and dK += dS^T Q (A
 * fragments again straight from the accumulators), then dS goes to shared
 * memory and the warps split dQ_tile = dS K between them, added to the fp32
 * accumulator with vector atomics (red.global.add.v2.f32).
 * Why atomics for dQ rather than a separate dQ kernel: a dQ kernel over
 * query tiles has to recompute S and dP, i.e. 7 tile matmuls instead of 5;
 * the atomic traffic (B*T*C floats per key block) lands in L2 and overlaps
 * the math. Cost: dQ sums in an arbitrary order, so it is not bitwise
 * reproducible run to run (dK, dV are; the wgmma backward has a
 * deterministic mode, this family none).
 *
 * Tile shapes: MmaFwd64 ... MmaBwd128, the fastest measured on H100
 * (docs/ has the measurements). HS=64 forward 4 warps x 32 rows (BM=128, 255
 * registers, 2 blocks/SM), backward 4 warps x 16 keys (BN=64), 32 queries a
 * step, 3 blocks/SM; HS=128 forward 8 warps x 16 rows, backward 8 warps x 16
 * keys, 32 queries (register-bound: dK, dV alone take 128 registers a
 * thread; scripts/build_attention_standalone.sh prints ptxas' register and
 * spill report). The parts, by role: the forward's main loop
 * (attention_mma_fwd.cuh), the backward's (attention_mma_bwd.cuh), what
 * they share (attention_mma_tiles.cuh), the tile shapes
 * (attention_tile_shapes.cuh) and the launchers (attention_mma_launch.cuh);
 * this file instantiates them for the production shapes. Tuning builds
 * (the CMake switch of docs/building.md) add other head size 64 shapes, by
 * name, for the benchmark and the test (tuning/attention_mma_variants.cu).
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/attention_mma_launch.cuh"
#include "kernels/cuda/attention_tile_shapes.cuh"

void attention_mma_forward(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH, int HS,
                           cudaStream_t stream) {
    if (HS == 64)
        launch_fwd_mma<MmaFwd64>(out, lse, qkv, B, T, NH, stream);
    else
        launch_fwd_mma<MmaFwd128>(out, lse, qkv, B, T, NH, stream);
}

void attention_mma_backward(const AttnBwdArgs &a, cudaStream_t stream) {
    if (a.HS == 64)
        launch_bwd_mma<MmaBwd64>(a, stream);
    else
        launch_bwd_mma<MmaBwd128>(a, stream);
}
