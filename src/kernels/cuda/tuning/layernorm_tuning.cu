/* LayerNorm backward's tuning variant, compiled only in tuning builds
 * (CMake -DGPT2_LN_TUNING=ON): the production backward (layernorm.cu) with
 * its rows brought into shared memory by the copy engine (Hopper: sm_90a
 * code), for more bytes in flight than two rows in registers: a producer
 * warp after the groups, whose first thread copies each group's rows of x,
 * dout and the old dinp (cp.async.bulk, 3 C 2 bytes a row) into that
 * group's ring of `stages` stages, each with a full and an empty mbarrier.
 * The groups, their rows, their sums and the second kernel are the
 * production kernel's (layernorm_backward.cuh), so the two give the same
 * bits. The row statistics go a row ahead in registers. Its measurements
 * and how to take them: docs/gpu-training.md. */
#include "kernels/cuda/tuning/layernorm_tuning.h"

#include <stdint.h>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/hopper.cuh" /* mbarriers and bulk loads */
#include "kernels/cuda/layernorm_backward.cuh"
#include "kernels/cuda/smem_limit.cuh"

/* Its dynamic shared memory: the block's sums and the groups' row sums
 * (the register kernel's), then the mbarriers, then the rings. */
struct ln_bwd_bulk_layout {
    size_t bars, data, bytes; /* offsets of the mbarriers and the rings; the size */
};

static __host__ __device__ ln_bwd_bulk_layout ln_bwd_bulk_layout_of(int C, int group_warps,
                                                                    int groups, int stages,
                                                                    bool colsum) {
    ln_bwd_bulk_layout l;
    /* ln_bwd_sums_bytes, written out: a call from device code here changes
     * the kernel's code (nvcc 13.0) */
    l.bars = ((size_t)(colsum ? 3 : 2) * C * 4 + (size_t)groups * 2 * group_warps * 8 + 7) / 8 * 8;
    l.data = (l.bars + (size_t)2 * groups * stages * 8 + 127) / 128 * 128;
    l.bytes = l.data + (size_t)groups * stages * 3 * C * 2;
    return l;
}

/* The production kernel's groups plus the producer warp (the file's
 * opening comment); `stages` rows a group's ring. */
template <bool COLSUM>
static __global__ void __launch_bounds__(LN_BWD_THREADS<COLSUM> + 32, 1)
    layernorm_backward_bulk_kernel(bf16 *dinp, float *partials, const bf16 *dout, const bf16 *inp,
                                   const bf16 *weight, const float *mean, const float *rstd, int N,
                                   int C, int rows_per_block, int group_warps, int groups,
                                   int stages) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int NSUM = COLSUM ? 3 : 2;
    extern __shared__ float4 sh4[];
    float *block_sums = reinterpret_cast<float *>(sh4);
    const ln_bwd_bulk_layout L = ln_bwd_bulk_layout_of(C, group_warps, groups, stages, COLSUM);
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(sh4);
    const uint32_t row_bytes = (uint32_t)C * 2;
    /* group g's stage s: its full barrier, its empty one, x at its data */
    auto full = [&](int g, int s) { return base + (uint32_t)L.bars + 8u * (g * stages + s); };
    auto empty = [&](int g, int s) { return full(g, s) + 8u * groups * stages; };
    auto stage = [&](int g, int s) { return (uint32_t)L.data + 3u * row_bytes * (g * stages + s); };
    const int group_threads = group_warps * 32, consumers = groups * group_threads;
    const int group = threadIdx.x / group_threads, v = threadIdx.x % group_threads;
    const int row0 = blockIdx.x * rows_per_block, row1 = min(N, row0 + rows_per_block);
    if (threadIdx.x == consumers) {
        for (int g = 0; g < groups; g++)
            for (int s = 0; s < stages; s++) {
                mbar_init(full(g, s), 1);
                mbar_init(empty(g, s), group_threads);
            }
        mbar_init_fence();
    }
    __syncthreads();
    const bool active = group < groups && v < C / 8;
    float db[8], dw[8], cs[8];
#pragma unroll
    for (int i = 0; i < 8; i++) db[i] = dw[i] = cs[i] = 0.f;
    int row = row0 + group;
    if (group >= groups) { /* the producer warp */
        if (threadIdx.x == consumers) {
            const bf16 *src[3] = {inp, dout, dinp};
            for (int k = 0; row0 + k * groups < row1; k++)
                for (int g = 0; g < groups && row0 + g + k * groups < row1; g++) {
                    const int s = k % stages, r = row0 + g + k * groups;
                    mbar_wait(empty(g, s), (k / stages & 1) ^ 1);
                    mbar_arrive_expect_tx(full(g, s), 3 * row_bytes);
                    for (int t = 0; t < 3; t++)
                        bulk_load(base + stage(g, s) + t * row_bytes, src[t] + (size_t)r * C,
                                  row_bytes, full(g, s));
                }
        }
    } else {
        float2 *row_parts =
            reinterpret_cast<float2 *>(block_sums + NSUM * C) + group * 2 * group_warps;
        const uint4 w8 =
            active ? *reinterpret_cast<const uint4 *>(weight + v * 8) : make_uint4(0, 0, 0, 0);
        const char *smem = reinterpret_cast<const char *>(sh4);
        ln_bwd_row cur;
        if (row < row1) cur.mean = mean[row], cur.rstd = rstd[row];
        for (int k = 0, parity = 0; row < row1; row += groups, parity ^= 1, k++) {
            float next_mean = 0.f, next_rstd = 0.f;
            if (row + groups < row1) next_mean = mean[row + groups], next_rstd = rstd[row + groups];
            const int s = k % stages;
            mbar_wait(full(group, s), k / stages & 1);
            const uint4 *in = reinterpret_cast<const uint4 *>(smem + stage(group, s)) + v;
            const uint4 zero = make_uint4(0, 0, 0, 0);
            cur.x = active ? in[0] : zero;
            cur.d = active ? in[row_bytes / 16] : zero;
            cur.i = active ? in[2 * row_bytes / 16] : zero;
            mbar_arrive(empty(group, s));
            ln_bwd_row_step<COLSUM>(cur, w8, dinp, row, v, active, C,
                                    row_parts + parity * group_warps, group, group_warps, db, dw,
                                    cs);
            cur.mean = next_mean, cur.rstd = next_rstd;
        }
    }
    ln_bwd_block_end<COLSUM>(block_sums, partials, row, row1, C, group, groups, group_warps, active,
                             v, db, dw, cs);
#else
    (void)dinp, (void)partials, (void)dout, (void)inp, (void)weight, (void)mean, (void)rstd;
    (void)N, (void)C, (void)rows_per_block, (void)group_warps, (void)groups, (void)stages;
#endif
}

/* Whether the bulk backward's sm_90a code runs on the current device
 * (compute capability 9.0), and (*optin) the device's per-block
 * shared-memory limit. */
static bool bulk_runs(int *optin) {
    *optin = 0;
#ifdef GPT2_HAVE_SM90A
    int dev = 0, major = 0, minor = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return major == 9 && minor == 0;
#else
    return false;
#endif
}

/* Launches the bulk kernel with `stages` stages, which the caller has
 * checked can run and whose shared-memory limit it has raised; returns the
 * number of blocks (partials). */
template <bool COLSUM>
static int launch_backward_bulk(bf16 *dinp, float *partials, const bf16 *dout, const bf16 *inp,
                                const bf16 *weight, const float *mean, const float *rstd, int N,
                                int C, int stages, cudaStream_t stream) {
    int group_warps = 0;
    const int groups = ln_bwd_groups(C, COLSUM, &group_warps);
    int rows = 0;
    const int nblocks = ln_bwd_grid(N, &rows);
    const size_t smem = ln_bwd_bulk_layout_of(C, group_warps, groups, stages, COLSUM).bytes;
    layernorm_backward_bulk_kernel<COLSUM>
        <<<nblocks, groups * group_warps * 32 + 32, smem, stream>>>(
            dinp, partials, dout, inp, weight, mean, rstd, N, C, rows, group_warps, groups, stages);
    CUDA_CHECK_LAUNCH("layernorm_backward_bulk_kernel");
    return nblocks;
}

extern "C" int layernorm_backward_cuda_bulk(int stages, void *dinp, void *dweight, void *dbias,
                                            const void *dout, const void *inp, const void *weight,
                                            const float *mean, const float *rstd, int N, int C,
                                            void *dinp_colsum, void *workspace,
                                            size_t workspace_bytes, cudaStream_t stream) {
    const bool has_rows = ln_bwd_check("layernorm_backward_cuda_bulk", dinp, dout, inp, weight, N,
                                       C, dinp_colsum, workspace_bytes);
    int optin = 0, group_warps = 0;
    if (stages < 2 || !bulk_runs(&optin)) return 0;
    const bool colsum = dinp_colsum != NULL;
    const int groups = ln_bwd_groups(C, colsum, &group_warps);
    if (ln_bwd_bulk_layout_of(C, group_warps, groups, stages, colsum).bytes > (size_t)optin)
        return 0;
    if (!has_rows) return 1;
    static unsigned long long raised[2]; /* each variant to the device's whole limit, once */
    if (colsum)
        raise_smem_limit(layernorm_backward_bulk_kernel<true>, (size_t)optin, raised[1]);
    else
        raise_smem_limit(layernorm_backward_bulk_kernel<false>, (size_t)optin, raised[0]);
    float *partials = (float *)workspace;
    const int nblocks =
        colsum ? launch_backward_bulk<true>((bf16 *)dinp, partials, (const bf16 *)dout,
                                            (const bf16 *)inp, (const bf16 *)weight, mean, rstd, N,
                                            C, stages, stream)
               : launch_backward_bulk<false>((bf16 *)dinp, partials, (const bf16 *)dout,
                                             (const bf16 *)inp, (const bf16 *)weight, mean, rstd, N,
                                             C, stages, stream);
    ln_bwd_reduce(dweight, dbias, dinp_colsum, partials, nblocks, C, stream);
    return 1;
}
