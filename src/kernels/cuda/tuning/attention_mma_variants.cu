/* The mma.sync family's tuning variants: other head size 64 shapes, each
 * the production shape (attention_tile_shapes.cuh) with the members it
 * changes, named in attention_mma_variants. The kernels and launchers are
 * the production templates (attention_mma_launch.cuh). Compiled only in
 * tuning builds. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/attention_mma_launch.cuh"
#include "kernels/cuda/attention_tile_shapes.cuh"
#include "kernels/cuda/tuning/attention_variants.h"

namespace {
struct MmaFwd64_4x16_3blocks : MmaFwd64 {
    static constexpr int ROW_TILES = 1, MIN_BLOCKS = 3;
};
struct MmaFwd64_8x16_2blocks : MmaFwd64 {
    static constexpr int WARPS = 8, ROW_TILES = 1, MIN_BLOCKS = 2;
};
struct MmaFwd64_4x16_1block : MmaFwd64 {
    static constexpr int ROW_TILES = 1, MIN_BLOCKS = 1;
};
struct MmaBwd64_4x64q_2blocks : MmaBwd64 {
    static constexpr int QUERIES = 64, MIN_BLOCKS = 2;
};
struct MmaBwd64_8x32q_1block : MmaBwd64 {
    static constexpr int WARPS = 8, MIN_BLOCKS = 1;
};
struct MmaBwd64_4x32q_2blocks : MmaBwd64 {
    static constexpr int MIN_BLOCKS = 2;
};
struct MmaBwd64_8x64q_1block : MmaBwd64 {
    static constexpr int WARPS = 8, QUERIES = 64, MIN_BLOCKS = 1;
};
constexpr const char *MMA = ATTN_FAMILY_MMA;
} // namespace

const AttnVariant attention_mma_variants[] = {
    {{"mma_fwd64_4x16_3blocks", MMA, 64, false, "forward: 4 warps x 16 rows, 3 blocks/SM"},
     false,
     launch_fwd_mma<MmaFwd64_4x16_3blocks>,
     nullptr},
    {{"mma_fwd64_8x16_2blocks", MMA, 64, false, "forward: 8 warps x 16 rows, 2 blocks/SM"},
     false,
     launch_fwd_mma<MmaFwd64_8x16_2blocks>,
     nullptr},
    {{"mma_fwd64_4x16_1block", MMA, 64, false, "forward: 4 warps x 16 rows, 1 block/SM"},
     false,
     launch_fwd_mma<MmaFwd64_4x16_1block>,
     nullptr},
    {{"mma_bwd64_4x64q_2blocks", MMA, 64, true,
      "backward: 4 warps x 16 keys, 64 queries a step, 2 blocks/SM"},
     false,
     nullptr,
     launch_bwd_mma<MmaBwd64_4x64q_2blocks>},
    {{"mma_bwd64_8x32q_1block", MMA, 64, true,
      "backward: 8 warps x 16 keys, 32 queries a step, 1 block/SM"},
     false,
     nullptr,
     launch_bwd_mma<MmaBwd64_8x32q_1block>},
    {{"mma_bwd64_4x32q_2blocks", MMA, 64, true,
      "backward: 4 warps x 16 keys, 32 queries a step, 2 blocks/SM"},
     false,
     nullptr,
     launch_bwd_mma<MmaBwd64_4x32q_2blocks>},
    {{"mma_bwd64_8x64q_1block", MMA, 64, true,
      "backward: 8 warps x 16 keys, 64 queries a step, 1 block/SM"},
     false,
     nullptr,
     launch_bwd_mma<MmaBwd64_8x64q_1block>},
};
const int attention_mma_variant_count =
    (int)(sizeof attention_mma_variants / sizeof attention_mma_variants[0]);
