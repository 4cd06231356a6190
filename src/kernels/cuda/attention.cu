/* Causal flash attention for the CUDA backend, the dispatcher: which kernel
 * family runs a call, by the device's compute capability, the head size and
 * the caller's options (kernels/attention.h has the contract), and the two
 * passes of the backward that both families share.
 *
 * Families (attention_families.h): wgmma and TMA (attention_wgmma.cu) where
 * they run, i.e. a build with sm_90a code on a GPU of compute capability 9.0
 * (H100, H200, GH200), unless the options say hopper = false; mma.sync
 * (attention_mma.cu) everywhere else, compute capability 8.0 and newer.
 * Both take head sizes 64 and 128. Only the wgmma backward can add dQ in a
 * fixed order (options.deterministic).
 *
 * The backward is three steps: (1) D = rowsum(dO * O) per row
 * (attn_bwd_prep_kernel, here); (2) the family's main kernel: dK, dV, and
 * dQ summed into the fp32 accumulator (zeroed first, or, by the
 * warp-specialized kernel, each slice's first contribution stored: no pass
 * over it before); (3) dQ * scale -> bf16
 * into dqkv (attn_dq_convert_kernel, here), reading the accumulator in the
 * layout of the family that filled it. Asked for dqkv's column sums (the
 * bias gradient of the qkv projection, which would otherwise cost its
 * matmul backward another pass over dqkv), (1) and (3) also write partial
 * sums per 64 positions, and a last pass adds the partials up in a fixed
 * order. The sums need no pass over dK and dV, which the main kernels
 * leave alone:
 *   - dK's are zero. Adding one vector b to every key adds q . b to every
 *     score of query q, which its softmax ignores, so no loss depends on
 *     the keys' bias. Zero is that gradient exactly; the sum of the stored
 *     dK would be its rounding errors.
 *   - dV's are dO's. dV_j = sum_i P_ij dO_i, and each query's
 *     probabilities add up to 1 (every query sees itself), so the sum of
 *     dV over the keys of a sequence is the sum of dO over its queries:
 *     (1), which reads dO for D, sums it on the way.
 *   - dQ's are the sums of the values (3) stores.
 * The workspace holds the accumulator, D, the partial sums and the counters
 * (the deterministic mode's turns, the warp-specialized kernel's claims).
 *
 * The forward with FP8 output (attention_forward_fp8_cuda, for an FP8
 * attn.c_proj) casts O in the wgmma forward's epilogue as it stores it
 * (head size 64, T a multiple of 64); elsewhere a cast pass follows.
 *
 * The backward with FP8 output (attention_backward_fp8_cuda): step (3) is
 * the cast of dqkv for the qkv projection's FP8 backward instead
 * (fp8_dqkv_cast.cuh): it reads dQ from the accumulator and dK, dV from
 * dqkv, and writes the FP8 copies and dQ's partial sums, not dqkv's bf16 dQ.
 * The warp-specialized wgmma kernel at head size 64 casts dK and dV itself
 * as it stages them (AttnBwdArgs::fp8) and writes no bf16 copy of them;
 * step (3) then casts dQ alone.
 *
 * Tuning builds (src/kernels/cuda/tuning/) add the families' other tile shapes, run
 * by name in place of the production kernel (tuning/attention_variants.cu,
 * through the helpers below that attention_families.h declares). */
#include "kernels/attention.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/fp8_dqkv_cast.cuh"
#include "kernels/matmul.h" // bias_partials_add_cuda: the fixed-order sum of the partials

namespace {

using namespace attention_tiles;

// ---------------------------------------------------------------------------
// The backward's passes before and after the main kernel

// D[b,h,t] = dout . out over each head, and with partials the chunk's
// column sums of dout into columns [2C, 3C) (the v part of dqkv's, the top
// of the file says why) and zeros into [C, 2C) (the k part's). A block walks
// one chunk for 32 8-column groups (SumChunk), 16-byte accesses: the HS/8
// lanes of a head's columns add their products within the group. Also
// zeroes the main kernel's n_counters counters, which a memset before would
// have cost a launch of its own. The main kernel after it may be launched
// once every block here has started (launch_dependents): it waits for this
// kernel's end before it reads D or the counters.
template <int HS>
static __global__ void __launch_bounds__(256)
    attn_bwd_prep_kernel(float *__restrict__ dsum, float *__restrict__ partials,
                         unsigned *__restrict__ counters, int n_counters,
                         const bf16 *__restrict__ dout, const bf16 *__restrict__ out, int T,
                         int NH) {
    launch_dependents();
    constexpr int CPH = HS / 8; // lanes per head; divides 32
    const size_t threads = (size_t)gridDim.x * gridDim.y * 256;
    for (size_t j = ((size_t)blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.x;
         j < (size_t)n_counters; j += threads)
        counters[j] = 0u;
    const SumChunk k(T);
    const int C = NH * HS, lane = threadIdx.x & 31;
    const bool cols = k.c < C; // whole heads: a lane group is all in or all out
    float sum[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int t = k.t0 + k.rl; t < k.t1; t += 8) { // warp-uniform
        const size_t at = ((size_t)k.b * T + t) * C + k.c;
        float acc = 0.f;
        if (cols) {
            float o[8], d[8];
            unpack8(o, *reinterpret_cast<const uint4 *>(out + at));
            unpack8(d, *reinterpret_cast<const uint4 *>(dout + at));
#pragma unroll
            for (int e = 0; e < 8; e++) {
                acc = fmaf(o[e], d[e], acc);
                sum[e] += d[e];
            }
        }
#pragma unroll
        for (int s = 1; s < CPH; s <<= 1) acc += __shfl_xor_sync(0xffffffffu, acc, s);
        if (cols && lane % CPH == 0) dsum[((size_t)k.b * NH + k.c / HS) * T + t] = acc;
    }
    if (!partials) return;
    float *row = partials + (size_t)k.chunk * 3 * C;
    sum_row_lanes(row + 2 * C, sum, C, blockIdx.y * 256);
    const int j = blockIdx.y * 256 + threadIdx.x;
    if (j < C) row[C + j] = 0.f;
}

// dqkv's q part = bf16(dq_acc * scale). A block converts one chunk of
// SUM_ROWS positions for 32 8-column groups (SumChunk). With partials, the
// column sums of the stored (rounded) values over the chunk go to columns
// [0, C) of the chunk's row of partials (attention_backward_cuda's layout),
// the 8 row lanes' sums added in lane order.
// WGMMA_LAYOUT: dq_acc is the wgmma backward's (dq_wgmma_index), else [B * T][C].
template <bool WGMMA_LAYOUT>
static __global__ void __launch_bounds__(256)
    attn_dq_convert_kernel(bf16 *__restrict__ dqkv, float *__restrict__ partials,
                           const float *__restrict__ dq_acc, int C, float scale, int T, int NH) {
    grid_dependency_wait(); // launched by launch_dependent: the main kernel's dQ in place
    const SumChunk k(T);
    const int chunk = k.chunk, b = k.b, c = k.c; // c: this thread's 8 columns
    float sum[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (c < C)
        for (int t = k.t0 + k.rl; t < k.t1; t += 8) {
            const size_t row = (size_t)b * T + t;
            size_t src = row * C + c; // 8 consecutive dims stay one 8-float chunk in either layout
            if constexpr (WGMMA_LAYOUT) {
                const int HS = C / NH;
                src = dq_wgmma_index(b, c / HS, t, c % HS, NH, T, HS);
            }
            const float4 a = reinterpret_cast<const float4 *>(dq_acc + src)[0];
            const float4 d = reinterpret_cast<const float4 *>(dq_acc + src)[1];
            uint4 v;
            v.x = pack_bf16(a.x * scale, a.y * scale);
            v.y = pack_bf16(a.z * scale, a.w * scale);
            v.z = pack_bf16(d.x * scale, d.y * scale);
            v.w = pack_bf16(d.z * scale, d.w * scale);
            *reinterpret_cast<uint4 *>(dqkv + row * 3 * C + c) = v;
            if (partials) add_bf16x8(sum, v);
        }
    if (!partials) return;
    sum_row_lanes(partials + (size_t)chunk * 3 * C, sum, C, blockIdx.y * 256);
}

// ---------------------------------------------------------------------------
// Dispatch

const attention_cuda_options DEFAULTS = {true, false};

// The wgmma family runs this call (else mma.sync).
bool use_wgmma(const attention_cuda_options *opt) {
    return (opt ? opt : &DEFAULTS)->hopper && attention_wgmma_supported();
}

// The main kernel's counters (AttnBwdArgs::dq_counters): 4 per 64
// positions of each head.
size_t dq_counters_bytes(int B, int T, int NH) {
    return sizeof(unsigned) * 4 * (size_t)B * NH * ((T + 63) / 64);
}

// The warp-specialized backward's schedule table (AttnBwdArgs::ws_table),
// over its key blocks of 128 keys (WsBwd::BN).
size_t ws_table_bytes(int B, int T, int NH) {
    return 2 * sizeof(int) * (size_t)ws_table_entries(B * NH, (T + 127) / 128);
}

// n rounded up to a multiple of 4 (floats: 16 bytes).
size_t round_up4(size_t n) { return (n + 3) / 4 * 4; }

// Chunks of SUM_ROWS positions: the rows of the column sums' partials.
int sum_chunks(int B, int T) { return B * ((T + SUM_ROWS - 1) / SUM_ROWS); }

} // namespace

int attention_head_size(int C, int NH) {
    if (NH <= 0 || C % NH != 0 || !attention_cuda_head_size_ok(C / NH))
        fail_at(__FILE__, __LINE__, EXIT_FATAL,
                "attention (cuda): head size C/NH = %d/%d must be 64 or 128", C, NH);
    return C / NH;
}

// The arguments of a backward main kernel, its scratch carved out of
// workspace (the partials only when colsum is asked for).
AttnBwdArgs attention_backward_args(void *dqkv, const void *dout, const void *qkv, const float *lse,
                                    int B, int T, int C, int NH, void *workspace,
                                    bool deterministic, bool colsum) {
    AttnBwdArgs a;
    a.dqkv = static_cast<bf16 *>(dqkv);
    a.dout = static_cast<const bf16 *>(dout);
    a.qkv = static_cast<const bf16 *>(qkv);
    a.lse = lse;
    a.B = B, a.T = T, a.NH = NH, a.HS = attention_head_size(C, NH);
    a.dq_acc = static_cast<float *>(workspace);
    a.dsum = a.dq_acc + (size_t)B * T * C;
    float *part = a.dsum + round_up4((size_t)B * T * NH);
    a.colsum_part = colsum ? part : nullptr;
    a.dq_counters = reinterpret_cast<unsigned *>(part + (size_t)sum_chunks(B, T) * 3 * C);
    a.dq_order = deterministic ? a.dq_counters : nullptr;
    a.ws_table =
        reinterpret_cast<int *>(a.dq_counters + dq_counters_bytes(B, T, NH) / sizeof(unsigned));
    a.fp8 = nullptr, a.fp8_kv_cast = nullptr;
    return a;
}

void attention_zero_dq_acc(const AttnBwdArgs &a, cudaStream_t stream) {
    CUDA_CHECK(cudaMemsetAsync(a.dq_acc, 0, sizeof(float) * a.B * a.T * a.NH * a.HS, stream));
}

// (1), the main kernel, (3) (or with fp8 the cast in its place), and with
// colsum (not NULL) the column sums. wgmma_layout: main is a wgmma kernel,
// whose accumulator layout (dq_wgmma_index) the conversion reads.
void attention_run_backward(const AttnBwdArgs &a, const void *out, attn_bwd_fn main,
                            bool wgmma_layout, void *colsum, cudaStream_t stream,
                            const AttnFp8Out *fp8) {
    const int C = a.NH * a.HS;
    const unsigned chunks = (unsigned)sum_chunks(a.B, a.T);
    const dim3 grid(chunks, (C + 255) / 256); // both passes: a chunk's 8-column groups
    auto prep = a.HS == 64 ? attn_bwd_prep_kernel<64> : attn_bwd_prep_kernel<128>;
    const int n_counters = (int)(dq_counters_bytes(a.B, a.T, a.NH) / sizeof(unsigned));
    prep<<<grid, 256, 0, stream>>>(a.dsum, a.colsum_part, a.dq_counters, n_counters, a.dout,
                                   static_cast<const bf16 *>(out), a.T, a.NH);
    CUDA_CHECK_LAUNCH("attn_bwd_prep_kernel");

    // with fp8, the main kernel may cast dK and dV itself (AttnBwdArgs::fp8)
    bool kv_cast = false;
    AttnBwdArgs m = a;
    m.fp8 = fp8, m.fp8_kv_cast = &kv_cast;
    main(m, stream);

    const float scale = 1.f / sqrtf((float)a.HS);
    if (fp8) {
        const fp8_dq_source dq = {a.dq_acc, scale, C, a.T, a.NH, wgmma_layout, kv_cast};
        fp8_dqkv_cast_launch(fp8->out, fp8->out_t, fp8->stats, a.colsum_part, a.dqkv, dq, a.B * a.T,
                             fp8->scale, fp8->format, stream);
    } else if (wgmma_layout) // a Hopper kernel before it: launched under its last blocks
        launch_dependent("attn_dq_convert_kernel", attn_dq_convert_kernel<true>, grid, 256, 0,
                         stream, a.dqkv, a.colsum_part, a.dq_acc, C, scale, a.T, a.NH);
    else {
        attn_dq_convert_kernel<false>
            <<<grid, 256, 0, stream>>>(a.dqkv, a.colsum_part, a.dq_acc, C, scale, a.T, a.NH);
        CUDA_CHECK_LAUNCH("attn_dq_convert_kernel");
    }
    if (colsum) bias_partials_add_cuda(colsum, a.colsum_part, (int)chunks, 3 * C, stream);
}

extern "C" const char *attention_cuda_kernels(int HS, const attention_cuda_options *opt) {
    return (HS == 64 || HS == 128) && use_wgmma(opt) ? ATTN_FAMILY_WGMMA : ATTN_FAMILY_MMA;
}

extern "C" bool attention_cuda_options_supported(const attention_cuda_options *opt) {
    return !opt || !opt->deterministic || use_wgmma(opt);
}

extern "C" void attention_forward_cuda(void *out, float *lse, const void *qkv, int B, int T, int C,
                                       int NH, const attention_cuda_options *opt,
                                       cudaStream_t stream) {
    if (B <= 0 || T <= 0) return;
    bf16 *o = static_cast<bf16 *>(out);
    const bf16 *x = static_cast<const bf16 *>(qkv);
    const int HS = attention_head_size(C, NH);
    if (use_wgmma(opt))
        attention_wgmma_forward(o, lse, x, B, T, NH, HS, stream);
    else
        attention_mma_forward(o, lse, x, B, T, NH, HS, stream);
}

extern "C" void attention_forward_fp8_cuda(void *out, float *lse, const void *qkv, int B, int T,
                                           int C, int NH, const attention_cuda_options *opt,
                                           uint8_t *out8, uint8_t *out8_t, fp8_cast_stats *stats,
                                           const float *scale, fp8_format f, cudaStream_t stream) {
    if (B <= 0 || T <= 0) return;
    // the epilogue's cast: a warpgroup's 64 rows all below T, one 64-column atom
    if (use_wgmma(opt) && attention_head_size(C, NH) == 64 && T % 64 == 0) {
        // fp8_cast_cuda's checks, which this path does not reach
        if (!out8 || !scale)
            fail_at(__FILE__, __LINE__, EXIT_FATAL,
                    "attention_forward_fp8_cuda: no FP8 output or no scale");
        if (((uintptr_t)out8 | (uintptr_t)out8_t) & 15u)
            fail_at(__FILE__, __LINE__, EXIT_FATAL,
                    "attention_forward_fp8_cuda: FP8 outputs must be 16-byte aligned");
        const AttnFp8Out fp8 = {out8, out8_t, stats, scale, f};
        attention_wgmma_forward_fp8(static_cast<bf16 *>(out), lse, static_cast<const bf16 *>(qkv),
                                    B, T, NH, fp8, stream);
        return;
    }
    attention_forward_cuda(out, lse, qkv, B, T, C, NH, opt, stream);
    fp8_cast_cuda(out8, out8_t, stats, out, B * T, C, scale, f, stream);
}

extern "C" size_t attention_backward_workspace_bytes(int B, int T, int C, int NH) {
    return sizeof(float) * ((size_t)B * T * C + round_up4((size_t)B * NH * T) +
                            (size_t)sum_chunks(B, T) * 3 * C) +
           dq_counters_bytes(B, T, NH) + ws_table_bytes(B, T, NH);
}

// attention_backward_cuda, with fp8 (not NULL) the cast in place of (3).
static void backward(void *dqkv, const void *dout, const void *qkv, const void *out,
                     const float *lse, int B, int T, int C, int NH, void *dqkv_colsum,
                     void *workspace, const attention_cuda_options *opt, const AttnFp8Out *fp8,
                     cudaStream_t stream) {
    if (B <= 0 || T <= 0) return;
    const bool wgmma = use_wgmma(opt), deterministic = opt && opt->deterministic;
    if (deterministic && !wgmma)
        fail_at(__FILE__, __LINE__, EXIT_FATAL,
                "attention (cuda): deterministic backward asked of the %s kernels, which have "
                "no such mode (attention_cuda_options_supported says so beforehand)",
                ATTN_FAMILY_MMA);
    const AttnBwdArgs a = attention_backward_args(dqkv, dout, qkv, lse, B, T, C, NH, workspace,
                                                  deterministic, dqkv_colsum != nullptr);
    attention_run_backward(a, out, wgmma ? attention_wgmma_backward : attention_mma_backward, wgmma,
                           dqkv_colsum, stream, fp8);
}

extern "C" void attention_backward_cuda(void *dqkv, const void *dout, const void *qkv,
                                        const void *out, const float *lse, int B, int T, int C,
                                        int NH, void *dqkv_colsum, void *workspace,
                                        const attention_cuda_options *opt, cudaStream_t stream) {
    backward(dqkv, dout, qkv, out, lse, B, T, C, NH, dqkv_colsum, workspace, opt, nullptr, stream);
}

extern "C" void attention_backward_fp8_cuda(void *dqkv, const void *dout, const void *qkv,
                                            const void *out, const float *lse, int B, int T, int C,
                                            int NH, void *dqkv_colsum, void *workspace,
                                            const attention_cuda_options *opt, uint8_t *out8,
                                            uint8_t *out8_t, fp8_cast_stats *stats,
                                            const float *scale, fp8_format f, cudaStream_t stream) {
    if (T % SUM_ROWS != 0) { // the cast's 64-row tiles would straddle two chunks of the sums
        attention_backward_cuda(dqkv, dout, qkv, out, lse, B, T, C, NH, dqkv_colsum, workspace, opt,
                                stream);
        fp8_cast_cuda(out8, out8_t, stats, dqkv, B * T, 3 * C, scale, f, stream);
        return;
    }
    const AttnFp8Out fp8 = {out8, out8_t, stats, scale, f};
    backward(dqkv, dout, qkv, out, lse, B, T, C, NH, dqkv_colsum, workspace, opt, &fp8, stream);
}
