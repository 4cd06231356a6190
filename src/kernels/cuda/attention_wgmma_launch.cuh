/* The wgmma family's launchers, templates over a tile shape (as
 * FlashAttention-3's launch templates): the TMA tensor maps, the shared-memory
 * limit, the schedule and the launch of the forward (launch_fwd_wgmma; with
 * O's FP8 copy, run_fwd_wgmma), the one-warpgroup backward
 * (launch_bwd_wgmma) and the warp-specialized backward (launch_bwd_ws), each
 * falling back to its cp.async shape where no tensor map can be made.
 * attention_wgmma.cu instantiates them for the production shapes,
 * tuning/attention_wgmma_variants.cu for the others. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_WGMMA_LAUNCH_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_WGMMA_LAUNCH_CUH

#include <cuda.h> // CUtensorMap (the driver's function is reached through the runtime)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/attention_tile_scheduler.cuh"
#include "kernels/cuda/attention_tile_shapes.cuh"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/attention_wgmma_bwd.cuh"
#include "kernels/cuda/attention_wgmma_bwd_ws.cuh"
#include "kernels/cuda/attention_wgmma_fwd.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/hopper.cuh"
#include "kernels/cuda/sm_count.cuh"

namespace {

using namespace attention_tiles;

// The TMA descriptor of a [B][T][HEADS][HS] bf16 tensor (qkv: HEADS = 3 NH,
// q, k, v's heads in turn; dout: NH) as a 4-D tensor (HS, HEADS, T, B),
// innermost first, read in 64 x 1 x 64 x 1 boxes (64 head dims of one head
// for 64 positions) into the 128-byte swizzled layout; positions past T read
// as zeros. 0 when the driver has no cuTensorMapEncodeTiled or refuses the
// tensor (then the cp.async kernels run).
inline int make_head_map(CUtensorMap *map, const bf16 *x, int B, int T, int HEADS, int HS) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (!encode) return 0;
    const cuuint64_t row = (cuuint64_t)HEADS * HS * sizeof(bf16); // bytes a position
    const cuuint64_t dims[4] = {(cuuint64_t)HS, (cuuint64_t)HEADS, (cuuint64_t)T, (cuuint64_t)B};
    const cuuint64_t strides[3] = {HS * sizeof(bf16), row, (cuuint64_t)T * row}; // dims 1..3
    const cuuint32_t box[4] = {64, 1, 64, 1}, elem_strides[4] = {1, 1, 1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<bf16 *>(x), dims, strides,
                  box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The forward of shape Shape; FP8: out is also cast into fp8's buffers
// (attn_fwd_wgmma_kernel's FP8; fp8 not NULL).
template <class Shape, bool FP8>
void run_fwd_wgmma(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH,
                   cudaStream_t stream, const AttnFp8Out *fp8) {
    constexpr int HS = Shape::HS;
    static_assert(!Shape::PIPELINED || Shape::TMA_STAGES > 0,
                  "the pipelined walk waits on the TMA stages");
    CUtensorMap map = {};
    if constexpr (Shape::TMA_STAGES > 0) {
        if (!make_head_map(&map, qkv, B, T, 3 * NH, HS))
            return run_fwd_wgmma<typename Shape::Fallback, FP8>(out, lse, qkv, B, T, NH, stream,
                                                                fp8);
    }
    typedef FwdCfgOf<Shape> Cfg;
    auto kernel = attn_fwd_wgmma_kernel<Shape, FP8>;
    static unsigned long long smem_done = 0;
    raise_smem_limit(kernel, Cfg::SMEM, smem_done);
    const int n_qt = (T + Cfg::BM - 1) / Cfg::BM, group = Shape::GROUP ? Shape::GROUP : B * NH;
    // The schedule of the last shape (ws_schedule walks every item to
    // choose the tail, so a step's layers reuse it): persistent where its
    // rows fit the block's table, else one item a block.
    static struct {
        int n_bh, n_qt, sms, grid;
        WsWork wk;
    } last = {-1, -1, -1, 0, {}};
    const int sms = sm_count();
    if (last.n_bh != B * NH || last.n_qt != n_qt || last.sms != sms) {
        last.n_bh = B * NH, last.n_qt = n_qt, last.sms = sms;
        if (Shape::PERSISTENT) last.wk = ws_schedule(B * NH, n_qt, sms, 1, 1, 1, group, &last.grid);
        if (!Shape::PERSISTENT || last.wk.rows > FWD_TABLE_ROWS)
            last.wk = ws_schedule(B * NH, n_qt, sms, 0, 0, 0, group, &last.grid);
    }
    const float scale_log2 = LOG2E / sqrtf((float)HS);
    const AttnFp8Out f8 = FP8 ? *fp8 : AttnFp8Out{};
    kernel<<<last.grid, fwd_block_threads<Shape>(), Cfg::SMEM, stream>>>(
        out, lse, qkv, T, NH, scale_log2, last.wk, map, f8, B * T);
    CUDA_CHECK_LAUNCH("attn_fwd_wgmma_kernel");
}
// The forward alone (attn_fwd_fn)
template <class Shape>
void launch_fwd_wgmma(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH,
                      cudaStream_t stream) {
    run_fwd_wgmma<Shape, false>(out, lse, qkv, B, T, NH, stream, nullptr);
}

template <class Shape> void launch_bwd_wgmma(const AttnBwdArgs &a, cudaStream_t stream) {
    constexpr int HS = Shape::HS;
    CUtensorMap qkv_map = {}, dout_map = {};
    if constexpr (Shape::TMA) {
        if (!(make_head_map(&qkv_map, a.qkv, a.B, a.T, 3 * a.NH, HS) &&
              make_head_map(&dout_map, a.dout, a.B, a.T, a.NH, HS)))
            return launch_bwd_wgmma<CpAsyncBwd<Shape>>(a, stream);
    }
    auto kernel =
        a.dq_order ? attn_bwd_wgmma_kernel<Shape, true> : attn_bwd_wgmma_kernel<Shape, false>;
    constexpr size_t SMEM = BWD_SMEM<HS, Shape::STAGES>;
    static unsigned long long smem_done[2] = {0, 0};
    raise_smem_limit(kernel, SMEM, smem_done[a.dq_order != nullptr]);
    const unsigned grid = (unsigned)a.B * a.NH * ((a.T + BWD_BN - 1) / BWD_BN);
    const float scale = 1.f / sqrtf((float)HS);
    attention_zero_dq_acc(a, stream); // every warp adds into it
    kernel<<<grid, 128, SMEM, stream>>>(a.dqkv, a.dq_acc, a.dout, a.qkv, a.lse, a.dsum, a.T, a.NH,
                                        scale, scale * LOG2E, a.dq_order, Shape::GROUP, qkv_map,
                                        dout_map);
    CUDA_CHECK_LAUNCH("attn_bwd_wgmma_kernel");
}

// The warp-specialized backward of shape W (WsBwd64, WsBwd128); where no
// tensor map can be made, the one-warpgroup kernel's cp.async shape.
template <class W = WsBwd64, class Sched = WsPairedPersistent>
void launch_bwd_ws(const AttnBwdArgs &a, cudaStream_t stream) {
    CUtensorMap qkv_map = {}, dout_map = {}, dqkv_map = {};
    if (!(make_head_map(&qkv_map, a.qkv, a.B, a.T, 3 * a.NH, W::HS) &&
          make_head_map(&dout_map, a.dout, a.B, a.T, a.NH, W::HS) &&
          make_head_map(&dqkv_map, a.dqkv, a.B, a.T, 3 * a.NH, W::HS))) {
        if constexpr (W::HS == 64)
            return launch_bwd_wgmma<CpAsyncBwd64>(a, stream);
        else
            return launch_bwd_wgmma<CpAsyncBwd128>(a, stream);
    }
    const bool det = a.dq_order != nullptr;
    // FP8 output: the kernel casts dK and dV itself where it stages them in
    // boxes (head size 64) and a warpgroup's keys are all below T or none
    const bool fp8 = W::BOXES && a.fp8 && a.T % 64 == 0;
    auto kernel = det ? attn_bwd_ws_kernel<W, true> : attn_bwd_ws_kernel<W, false>;
    if constexpr (W::BOXES)
        if (fp8)
            kernel = det ? attn_bwd_ws_kernel<W, true, true> : attn_bwd_ws_kernel<W, false, true>;
    static unsigned long long smem_done[4] = {0, 0, 0, 0};
    raise_smem_limit(kernel, W::SMEM, smem_done[2 * fp8 + det]);
    const int n_kb = (a.T + W::BN - 1) / W::BN;
    // the schedule of the last shape (the model behind the tail's choice
    // walks every item, so a step's layers reuse it)
    static struct {
        int n_bh, n_kb, sms, det, grid;
        WsWork wk;
    } last = {-1, -1, -1, -1, 0, {}};
    const int sms = sm_count();
    if (last.n_bh != a.B * a.NH || last.n_kb != n_kb || last.sms != sms || last.det != det) {
        last.n_bh = a.B * a.NH, last.n_kb = n_kb, last.sms = sms, last.det = det;
        last.wk = ws_schedule(a.B * a.NH, n_kb, sms, Sched::PAIRED && !det,
                              Sched::PERSISTENT && !det, Sched::TAIL, W::GROUP, &last.grid);
        if ((long)last.grid * last.wk.rows > ws_table_entries(a.B * a.NH, n_kb))
            fail_at(__FILE__, __LINE__, EXIT_FATAL,
                    "the attention backward's schedule (%d blocks) outgrows its table "
                    "(ws_table_entries, attention_block_order.h)",
                    last.grid);
        if (det && last.wk.rows > W::TABLE_ROWS) // the kernel takes them as fitting
            fail_at(__FILE__, __LINE__, EXIT_FATAL,
                    "the deterministic attention backward's schedule (%d items a block) "
                    "outgrows its shared memory (TABLE_ROWS %d)",
                    last.wk.rows, W::TABLE_ROWS);
    }
    const WsWork wk = last.wk;
    const int grid = last.grid;
    const float scale = 1.f / sqrtf((float)W::HS);
    const AttnFp8Out no_fp8 = {};
    launch_dependent("attn_bwd_ws_kernel", kernel, grid, W::NTH, W::SMEM, stream, a.dqkv, a.dq_acc,
                     a.dout, a.qkv, a.lse, a.dsum, a.T, a.NH, scale, scale * LOG2E, a.dq_counters,
                     wk, a.ws_table, qkv_map, dout_map, dqkv_map, fp8 ? *a.fp8 : no_fp8, a.B * a.T);
    if (fp8 && a.fp8_kv_cast) *a.fp8_kv_cast = true;
}

} // namespace
#endif
