/* The wgmma family's tuning variants: the shapes measured against the
 * production ones (attention_tile_shapes.cuh), each the production shape
 * with the members it changes, named in attention_wgmma_variants; and the
 * cp.async fallbacks, to test them. The kernels and launchers are the
 * production templates (attention_wgmma_launch.cuh). Compiled only in
 * tuning builds. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/attention_tile_scheduler.cuh"
#include "kernels/cuda/attention_tile_shapes.cuh"
#include "kernels/cuda/attention_wgmma_launch.cuh"
#include "kernels/cuda/tuning/attention_variants.h"

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
