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
 * production shapes. Tuning builds (GPT2_ATTN_TUNING) add the other shapes
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

void attention_wgmma_backward(const AttnBwdArgs &a, cudaStream_t stream) {
    if (a.HS == 64)
        launch_bwd_ws<WsBwd64>(a, stream);
    else
        launch_bwd_ws<WsBwd128>(a, stream);
}

#ifdef GPT2_ATTN_TUNING
// ---------------------------------------------------------------------------
// Tuning variants: the shapes measured against the production ones, each
// the production shape with the members it changes, named in
// attention_wgmma_variants; and the cp.async fallbacks, to test them.

namespace {
// forward, head size 64
struct WgmmaFwd64_CpAsync2x128 : CpAsyncFwd<WgmmaFwd64> {
    static constexpr int KEYS = 128, MIN_BLOCKS = 1;
};
struct WgmmaFwd64_CpAsync3wg : CpAsyncFwd<WgmmaFwd64> {
    static constexpr int WARPGROUPS = 3, MIN_BLOCKS = 1;
};
struct WgmmaFwd64_CpAsync1wg : CpAsyncFwd<WgmmaFwd64> {
    static constexpr int WARPGROUPS = 1, MIN_BLOCKS = 4;
};
struct WgmmaFwd64_Tma3 : WgmmaFwd64 { // the unpipelined walk, 3 stages
    static constexpr int TMA_STAGES = 3;
    static constexpr bool PIPELINED = false;
};
struct WgmmaFwd64_Tma3Ungrouped : WgmmaFwd64_Tma3 {
    static constexpr int GROUP = 0;
};
struct WgmmaFwd64_Tma3EagerRescale : WgmmaFwd64_Tma3 {
    static constexpr bool LAZY_RESCALE = false;
};
struct WgmmaFwd64_Tma2 : WgmmaFwd64_Tma3 {
    static constexpr int TMA_STAGES = 2;
};
struct WgmmaFwd64_PipelinedTma3 : WgmmaFwd64 {
    static constexpr int TMA_STAGES = 3;
};
struct WgmmaFwd64_WsPingpong : WgmmaFwd64 { // WgmmaFwd128's walk, 4 stages
    static constexpr int KEYS = 128, MIN_BLOCKS = 1;
    static constexpr bool PRODUCER = true, PINGPONG = true;
};
// forward, head size 128
struct WgmmaFwd128_2blocks : CpAsyncFwd128 { // the production shape before ping-pong
    static constexpr int TMA_STAGES = 2;
};
struct WgmmaFwd128_CpAsync3wg : CpAsyncFwd128 {
    static constexpr int WARPGROUPS = 3, MIN_BLOCKS = 1;
};
struct WgmmaFwd128_CpAsync1block : CpAsyncFwd128 {
    static constexpr int MIN_BLOCKS = 1;
};
// head size 128 pipelined at one block per SM (all 255 registers): key
// tiles of 64 in 4 stages, of 128 in 2, or three warpgroups
struct WgmmaFwd128_Pipelined1block : WgmmaFwd128_2blocks {
    static constexpr int MIN_BLOCKS = 1, TMA_STAGES = 4;
    static constexpr bool PIPELINED = true;
};
struct WgmmaFwd128_Pipelined128keys : WgmmaFwd128_Pipelined1block {
    static constexpr int KEYS = 128, TMA_STAGES = 2;
};
struct WgmmaFwd128_Pipelined3wg : WgmmaFwd128_Pipelined1block {
    static constexpr int WARPGROUPS = 3;
};
struct WgmmaFwd128_Pipelined2blocks : WgmmaFwd128_2blocks { // 128 registers: spills
    static constexpr bool PIPELINED = true;
};
// the production shape one tile a block, without its turns, with 2
// stages, with neither
struct WgmmaFwd128_OneTileABlock : WgmmaFwd128 {
    static constexpr bool PERSISTENT = false, PREFETCH_Q = false;
};
struct WgmmaFwd128_NoQPrefetch : WgmmaFwd128 {
    static constexpr bool PREFETCH_Q = false;
};
struct WgmmaFwd128_NoPingpong : WgmmaFwd128 {
    static constexpr bool PINGPONG = false;
};
struct WgmmaFwd128_2stages : WgmmaFwd128 {
    static constexpr int TMA_STAGES = 2;
};
struct WgmmaFwd128_2stagesNoPingpong : WgmmaFwd128_2stages {
    static constexpr bool PINGPONG = false;
};
struct WgmmaFwd128_Tma3wg : WgmmaFwd128_2blocks {
    static constexpr int WARPGROUPS = 3, MIN_BLOCKS = 1, TMA_STAGES = 3;
};
// backward, head size 64: the one-warpgroup kernel with TMA, 3 stages (the
// production shape before the warp-specialized kernel), and its variants
struct WgmmaBwd64 : CpAsyncBwd64 {
    static constexpr bool TMA = true;
    static constexpr int STAGES = 3;
};
struct WgmmaBwd64_2blocks : WgmmaBwd64 {
    static constexpr int MIN_BLOCKS = 2;
};
struct WgmmaBwd64_Tma2 : WgmmaBwd64 {
    static constexpr int STAGES = 2;
};
struct WgmmaBwd64_Ungrouped : WgmmaBwd64 {
    static constexpr int GROUP = 1;
};
// the warp-specialized kernel's other schedules
struct WsPerKeyBlock {
    static constexpr bool PAIRED = false, PERSISTENT = false, TAIL = false;
};
struct WsPaired {
    static constexpr bool PAIRED = true, PERSISTENT = false, TAIL = false;
};
struct WsPersistent {
    static constexpr bool PAIRED = false, PERSISTENT = true, TAIL = false;
};
struct WsPairedPersistentNoTail {
    static constexpr bool PAIRED = true, PERSISTENT = true, TAIL = false;
};
// backward, head size 128: the one-warpgroup kernel with TMA (the production
// shape before the warp-specialized kernel: 2 blocks per SM, 2 stages, SPLIT
// 2; the key blocks of 16 pairs longest first measured faster than each
// pair's key blocks in turn, groups of 8 and 32 no better), and its variants
struct WgmmaBwd128 : CpAsyncBwd128 {
    static constexpr bool TMA = true;
    static constexpr int SPLIT = 2;
};
struct WgmmaBwd128_Unsplit : WgmmaBwd128 {
    static constexpr int SPLIT = 0;
};
struct WgmmaBwd128_SplitP : WgmmaBwd128 {
    static constexpr int SPLIT = 1;
};
struct WgmmaBwd128_Ungrouped : WgmmaBwd128 {
    static constexpr int GROUP = 1;
};
constexpr const char *WGMMA = ATTN_FAMILY_WGMMA;
} // namespace

const AttnVariant attention_wgmma_variants[] = {
    {{"wgmma_fwd64_cp_async", WGMMA, 64, false, "the fallback: loads by cp.async, double buffered"},
     true,
     launch_fwd_wgmma<CpAsyncFwd<WgmmaFwd64>>,
     nullptr},
    {{"wgmma_fwd64_cp_async_2x128", WGMMA, 64, false,
      "cp.async, 2 warpgroups x 128 keys, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_CpAsync2x128>,
     nullptr},
    {{"wgmma_fwd64_cp_async_3wg", WGMMA, 64, false, "cp.async, 3 warpgroups, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_CpAsync3wg>,
     nullptr},
    {{"wgmma_fwd64_cp_async_1wg", WGMMA, 64, false, "cp.async, 1 warpgroup, 4 blocks/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_CpAsync1wg>,
     nullptr},
    {{"wgmma_fwd64_tma3", WGMMA, 64, false, "the walk unpipelined, 3 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_Tma3>,
     nullptr},
    {{"wgmma_fwd64_tma3_ungrouped", WGMMA, 64, false,
      "tma3 with the blocks longest first over all heads, not in groups of 16"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_Tma3Ungrouped>,
     nullptr},
    {{"wgmma_fwd64_tma3_eager_rescale", WGMMA, 64, false, "tma3 rescaling O after every tile"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_Tma3EagerRescale>,
     nullptr},
    {{"wgmma_fwd64_tma2", WGMMA, 64, false, "the walk unpipelined, 2 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_Tma2>,
     nullptr},
    {{"wgmma_fwd64_pipelined_tma3", WGMMA, 64, false, "the pipelined walk with 3 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_PipelinedTma3>,
     nullptr},
    {{"wgmma_fwd64_ws_pingpong", WGMMA, 64, false,
      "a producer warpgroup, key tiles of 128, products in turns, 4 stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_WsPingpong>,
     nullptr},
    {{"wgmma_fwd128_cp_async", WGMMA, 128, false,
      "the fallback: loads by cp.async, double buffered"},
     true,
     launch_fwd_wgmma<CpAsyncFwd128>,
     nullptr},
    {{"wgmma_fwd128_2blocks", WGMMA, 128, false,
      "before ping-pong: 2 blocks/SM, unpipelined, 2 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_2blocks>,
     nullptr},
    {{"wgmma_fwd128_cp_async_3wg", WGMMA, 128, false, "cp.async, 3 warpgroups, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_CpAsync3wg>,
     nullptr},
    {{"wgmma_fwd128_cp_async_1block", WGMMA, 128, false, "cp.async, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_CpAsync1block>,
     nullptr},
    {{"wgmma_fwd128_pipelined_1block", WGMMA, 128, false,
      "the pipelined walk, 1 block/SM, 4 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Pipelined1block>,
     nullptr},
    {{"wgmma_fwd128_pipelined_128keys", WGMMA, 128, false,
      "the pipelined walk, key tiles of 128, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Pipelined128keys>,
     nullptr},
    {{"wgmma_fwd128_pipelined_3wg", WGMMA, 128, false,
      "the pipelined walk, 3 warpgroups, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Pipelined3wg>,
     nullptr},
    {{"wgmma_fwd128_pipelined_2blocks", WGMMA, 128, false,
      "the pipelined walk, 2 blocks/SM, 2 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Pipelined2blocks>,
     nullptr},
    {{"wgmma_fwd128_one_tile_a_block", WGMMA, 128, false,
      "before persistence: the production shape, a query tile a block"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_OneTileABlock>,
     nullptr},
    {{"wgmma_fwd128_no_q_prefetch", WGMMA, 128, false,
      "persistent, the next query tile not prefetched into L2"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_NoQPrefetch>,
     nullptr},
    {{"wgmma_fwd128_no_pingpong", WGMMA, 128, false, "the production shape without turns"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_NoPingpong>,
     nullptr},
    {{"wgmma_fwd128_2stages", WGMMA, 128, false, "the production shape with 2 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_2stages>,
     nullptr},
    {{"wgmma_fwd128_2stages_no_pingpong", WGMMA, 128, false, "2 TMA stages, without turns"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_2stagesNoPingpong>,
     nullptr},
    {{"wgmma_fwd128_tma_3wg", WGMMA, 128, false, "3 warpgroups, 3 TMA stages, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Tma3wg>,
     nullptr},
    {{"wgmma_bwd64_1wg", WGMMA, 64, true,
      "one warpgroup a block, 64 keys, 3 blocks/SM (the production kernel before the "
      "warp-specialized one)"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd64>},
    {{"wgmma_bwd64_ws_per_key_block", WGMMA, 64, true,
      "warp-specialized, one key block a block (the production schedule before pairs)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd64, WsPerKeyBlock>},
    {{"wgmma_bwd64_ws_pairs", WGMMA, 64, true,
      "warp-specialized, a block per pair of key blocks (not persistent)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd64, WsPaired>},
    {{"wgmma_bwd64_ws_persistent", WGMMA, 64, true,
      "warp-specialized, one block per SM over single key blocks"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd64, WsPersistent>},
    {{"wgmma_bwd64_ws_no_tail", WGMMA, 64, true,
      "warp-specialized, persistent over pairs of key blocks to the end (no tail of singles)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd64, WsPairedPersistentNoTail>},
    {{"wgmma_bwd128_ws_per_key_block", WGMMA, 128, true, "warp-specialized, one key block a block"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd128, WsPerKeyBlock>},
    {{"wgmma_bwd128_ws_pairs", WGMMA, 128, true,
      "warp-specialized, a block per pair of key blocks (not persistent)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd128, WsPaired>},
    {{"wgmma_bwd128_ws_persistent", WGMMA, 128, true,
      "warp-specialized, one block per SM over single key blocks"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd128, WsPersistent>},
    {{"wgmma_bwd128_ws_no_tail", WGMMA, 128, true,
      "warp-specialized, persistent over pairs of key blocks to the end (no tail of singles)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd128, WsPairedPersistentNoTail>},
    {{"wgmma_bwd64_cp_async", WGMMA, 64, true, "the fallback: loads by cp.async, 2 stages"},
     true,
     nullptr,
     launch_bwd_wgmma<CpAsyncBwd64>},
    {{"wgmma_bwd64_2blocks", WGMMA, 64, true, "2 blocks/SM"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd64_2blocks>},
    {{"wgmma_bwd64_tma2", WGMMA, 64, true, "2 TMA stages"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd64_Tma2>},
    {{"wgmma_bwd64_ungrouped", WGMMA, 64, true, "each pair's key blocks in turn"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd64_Ungrouped>},
    {{"wgmma_bwd128_1wg", WGMMA, 128, true,
      "one warpgroup a block, 64 keys, 2 blocks/SM (the production kernel before the "
      "warp-specialized one)"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd128>},
    {{"wgmma_bwd128_cp_async", WGMMA, 128, true, "the fallback: loads by cp.async, 2 stages"},
     true,
     nullptr,
     launch_bwd_wgmma<CpAsyncBwd128>},
    {{"wgmma_bwd128_unsplit", WGMMA, 128, true, "the products in order (SPLIT 0)"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd128_Unsplit>},
    {{"wgmma_bwd128_split_p", WGMMA, 128, true, "only P^T under dP^T (SPLIT 1)"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd128_SplitP>},
    {{"wgmma_bwd128_ungrouped", WGMMA, 128, true, "each pair's key blocks in turn"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd128_Ungrouped>},
};
const int attention_wgmma_variant_count =
    (int)(sizeof attention_wgmma_variants / sizeof attention_wgmma_variants[0]);
#endif
