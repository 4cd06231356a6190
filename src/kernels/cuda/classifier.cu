/* Fused classifier on the GPU: softmax over the real vocabulary columns,
 * cross-entropy loss, and dlogits written over the bf16 logits in place.
 *
 * Design: one block per row (rows are independent; 1024 threads, so at most
 * two rows per SM; one block's loads overlap the other's math). Where two
 * rows fit in an SM's shared memory (100 KB each for GPT-2's vocabulary on
 * H100), the block first copies its row there with every 16-byte copy in
 * flight at once (cp.async), and both passes read it there; else they read
 * global memory (264 rows of 100 KB in flight fit the 50 MB L2, so pass 2's
 * re-read mostly hits it). Pass 1 keeps an online (max, sum of exp) pair per
 * thread, rescaling the sum once per two vectors of 8 columns; the vectors
 * of real columns only go two per step (two loads in flight) with no
 * per-column checks, the last, part-padding ones checked. Exps are base 2
 * on the MUFU (fast_exp2, ptx.cuh), an FMA and an ex2 each: with __expf's
 * range fix-ups and a check per column the kernel was bound by instruction
 * issue, not by memory. (fast_exp2 flushes results under 2^-126 to zero: a
 * term that small adds nothing to a sum of at least 1, the row's largest
 * term, and such a probability is 0 in dlogits.) The pairs are combined over the block in a fixed tree, so
 * every row's statistics are bitwise reproducible. All math is fp32 (the
 * sum of ~50K exps in fp32 through a tree is within a few 1e-7 relative).
 * loss = log(sum) + max - logit[target]. Pass 2 (only when dloss != 0)
 * reads the row again and writes (softmax - onehot) * dloss rounded to
 * bf16, and zeros for the padding columns [V, Vp). With dloss == 0 the
 * logits are not written. The FP8 variant (an FP8 lm head) casts each
 * rounded vector of 8 into 8 bytes of E5M2 and writes those to a buffer of
 * its own instead, half the bytes. */
#include "kernels/classifier.h"

#include <math.h>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/fp8_convert.cuh"
#include "kernels/cuda/ptx.cuh"

enum { CLS_THREADS = 1024, CLS_WARPS = CLS_THREADS / 32 };

/* (m, s) <- the pair for the union of both sets. */
static __device__ __forceinline__ void combine(float &m, float &s, float om, float os) {
    const float nm = fmaxf(m, om);
    if (nm == -INFINITY) return; /* both empty */
    s = s * __expf(m - nm) + os * __expf(om - nm);
    m = nm;
}

/* (m, s) <- the pair with the columns f[0..N) added: one rescale of s for
 * all of them (N = 16: two vectors) */
template <int N>
static __device__ __forceinline__ void add_columns(float &m, float &s, const float *f) {
    float lm = -INFINITY;
#pragma unroll
    for (int i = 0; i < N; i++) lm = fmaxf(lm, f[i]);
    if (lm == -INFINITY) return; /* only padding */
    const float nm = fmaxf(m, lm), nm_l = nm * LOG2E;
    float ls = 0.f;
#pragma unroll
    for (int i = 0; i < N; i++) ls += fast_exp2(fmaf(f[i], LOG2E, -nm_l));
    s = s * fast_exp2((m - nm) * LOG2E) + ls; /* m = -inf: exp2 gives 0 and s is 0 */
    m = nm;
}

/* IN_SMEM: the row is copied into shared memory first (Vp * 2 bytes of
 * dynamic shared memory), every 16-byte copy of it in flight at once, and
 * both passes read it there; else they read global memory (L2, for pass 2),
 * for vocabularies whose row does not fit. FP8: dlogits go into out8 as
 * E5M2 at *fp8_scale, the logits are left alone. */
template <bool IN_SMEM, bool FP8 = false>
static __global__ void __launch_bounds__(CLS_THREADS)
    classifier_kernel(bf16 *logits, float *losses, const int32_t *targets, int V, int Vp,
                      float dloss, uint8_t *out8 = nullptr, const float *fp8_scale = nullptr) {
    __shared__ float sh_m[CLS_WARPS], sh_s[CLS_WARPS];
    extern __shared__ uint4 row_smem[];
    const int row = blockIdx.x;
    bf16 *x = logits + (size_t)row * Vp;
    const int target = targets[row];
    const bool target_ok = target >= 0 && target < V;
    const bf16 *src = x;
    if constexpr (IN_SMEM) {
        for (int v = threadIdx.x; v < Vp / 8; v += CLS_THREADS)
            cp_async16(smem_u32(row_smem + v), x + (size_t)v * 8, true);
        cp_async_commit();
        cp_async_wait_all();
        __syncthreads();
        src = reinterpret_cast<const bf16 *>(row_smem);
    }
    /* read before any thread can overwrite it in pass 2 (after the barriers below) */
    const float x_target = threadIdx.x == 0 && target_ok ? __bfloat162float(src[target]) : 0.f;
    /* vectors of 8 columns: [0, V8_full) all real columns, the rest part
     * real, part padding, or padding only. The full ones go two per thread
     * and step (two loads in flight) with no per-column checks; the others
     * one at a time, checked. */
    const int V8 = Vp / 8, V8_full = V / 8;

    float m = -INFINITY, s = 0.f;
    int v = threadIdx.x;
    for (; v + CLS_THREADS < V8_full; v += 2 * CLS_THREADS) {
        float f[16];
        load8(f, src + (size_t)v * 8);
        load8(f + 8, src + (size_t)(v + CLS_THREADS) * 8);
        add_columns<16>(m, s, f);
    }
    for (; v < V8; v += CLS_THREADS) {
        float f[8];
        load8(f, src + (size_t)v * 8);
        const int c0 = v * 8;
#pragma unroll
        for (int i = 0; i < 8; i++)
            if (c0 + i >= V) f[i] = -INFINITY; /* padding: no term */
        add_columns<8>(m, s, f);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float om = __shfl_xor_sync(0xffffffffu, m, o);
        const float os = __shfl_xor_sync(0xffffffffu, s, o);
        combine(m, s, om, os);
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        sh_m[warp] = m;
        sh_s[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        m = lane < CLS_WARPS ? sh_m[lane] : -INFINITY;
        s = lane < CLS_WARPS ? sh_s[lane] : 0.f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float om = __shfl_xor_sync(0xffffffffu, m, o);
            const float os = __shfl_xor_sync(0xffffffffu, s, o);
            combine(m, s, om, os);
        }
        if (lane == 0) {
            sh_m[0] = m;
            sh_s[0] = s;
        }
    }
    __syncthreads();
    const float M = sh_m[0], S = sh_s[0];
    if (threadIdx.x == 0) losses[row] = target_ok ? logf(S) + M - x_target : NAN;
    if (dloss == 0.0f) return;

    /* dlogits = (softmax - onehot) * dloss = e^(x - M) * (dloss / S) - dloss at the target */
    const float M_l = M * LOG2E, scale = dloss / S;
    const int target_v = target_ok ? target / 8 : -1;
    [[maybe_unused]] const float s8 = FP8 ? *fp8_scale : 0.f;
    [[maybe_unused]] fp8_thread_stats seen = {0, 0, 0}; // not kept: no stats
    auto write_vector = [&](int v, float *f, bool checked) {
        const int c0 = v * 8;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const float p = fast_exp2(fmaf(f[i], LOG2E, -M_l)) * scale;
            f[i] = checked && c0 + i >= V ? 0.f : p;
        }
        if (v == target_v) {
#pragma unroll
            for (int i = 0; i < 8; i++)
                if (c0 + i == target) f[i] -= dloss;
        }
        if constexpr (FP8) { // the bf16 values store8 would write, cast
            uint32_t w[4];
#pragma unroll
            for (int i = 0; i < 4; i++) w[i] = pack_bf16(f[2 * i], f[2 * i + 1]);
            *reinterpret_cast<uint2 *>(out8 + (size_t)row * Vp + c0) =
                fp8_cast8(w, s8, FP8_E5M2, seen);
        } else {
            store8(x + (size_t)c0, f);
        }
    };
    for (v = threadIdx.x; v + CLS_THREADS < V8_full; v += 2 * CLS_THREADS) {
        float f[8], g[8];
        load8(f, src + (size_t)v * 8);
        load8(g, src + (size_t)(v + CLS_THREADS) * 8);
        write_vector(v, f, false);
        write_vector(v + CLS_THREADS, g, false);
    }
    for (; v < V8; v += CLS_THREADS) {
        float f[8];
        load8(f, src + (size_t)v * 8);
        write_vector(v, f, true);
    }
}

/* Whether rows of row_bytes go through shared memory on the current
 * device: two blocks of 1024 threads with their rows must fit in one SM
 * (up to 113 KB a row on H100, a vocabulary of 57K). The first call per
 * device raises the kernel's dynamic shared memory limit. */
template <bool FP8> static bool row_fits_smem(size_t row_bytes) {
    enum { MAX_DEVICES = 64 };
    static int smem_per_sm[MAX_DEVICES]; /* 0: not asked yet */
    static size_t raised[MAX_DEVICES];
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= MAX_DEVICES) return false;
    if (!smem_per_sm[dev])
        CUDA_CHECK(cudaDeviceGetAttribute(&smem_per_sm[dev],
                                          cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    /* 1 KB the system reserves per block, and the block's static arrays */
    if (2 * (row_bytes + 1024 + CLS_WARPS * 8) > (size_t)smem_per_sm[dev]) return false;
    if (row_bytes > raised[dev]) {
        CUDA_CHECK(cudaFuncSetAttribute(classifier_kernel<true, FP8>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)row_bytes));
        raised[dev] = row_bytes;
    }
    return true;
}

/* The kernel over N rows, the row in shared memory where it fits (FP8:
 * dlogits into out8 at *scale). */
template <bool FP8>
static void launch_classifier(bf16 *logits, float *losses, const int32_t *targets, int N, int V,
                              int Vp, float dloss, uint8_t *out8, const float *scale,
                              cudaStream_t stream) {
    if (N <= 0) return;
    const size_t row_bytes = (size_t)Vp * sizeof(bf16);
    if (row_fits_smem<FP8>(row_bytes))
        classifier_kernel<true, FP8><<<N, CLS_THREADS, row_bytes, stream>>>(
            logits, losses, targets, V, Vp, dloss, out8, scale);
    else
        classifier_kernel<false, FP8>
            <<<N, CLS_THREADS, 0, stream>>>(logits, losses, targets, V, Vp, dloss, out8, scale);
    CUDA_CHECK_LAUNCH(FP8 ? "classifier_kernel (FP8 dlogits)" : "classifier_kernel");
}

extern "C" void classifier_forward_backward_cuda(void *logits, float *losses,
                                                 const int32_t *targets, int N, int V, int Vp,
                                                 float dloss, cudaStream_t stream) {
    if (Vp % 8 != 0 || V > Vp || V <= 0 || !is_aligned16(logits))
        FAIL("classifier_forward_backward_cuda: Vp=%d must be a multiple of 8, 0 < V=%d <= Vp, "
             "logits 16-byte aligned",
             Vp, V);
    launch_classifier<false>((bf16 *)logits, losses, targets, N, V, Vp, dloss, nullptr, nullptr,
                             stream);
}

extern "C" void classifier_forward_backward_fp8_cuda(void *logits, float *losses,
                                                     const int32_t *targets, int N, int V, int Vp,
                                                     float dloss, uint8_t *out8, const float *scale,
                                                     cudaStream_t stream) {
    if (Vp % 8 != 0 || V > Vp || V <= 0 || !is_aligned16(logits) || (uintptr_t)out8 % 8 || !scale ||
        dloss == 0.0f)
        FAIL("classifier_forward_backward_fp8_cuda: Vp=%d must be a multiple of 8, 0 < V=%d <= "
             "Vp, logits 16-byte and out8 8-byte aligned, a scale, dloss != 0",
             Vp, V);
    launch_classifier<true>((bf16 *)logits, losses, targets, N, V, Vp, dloss, out8, scale, stream);
}

static __global__ void loss_accumulate_kernel(float *acc, const float *losses, int N) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) acc[i] += losses[i];
}

extern "C" void loss_accumulate_cuda(float *acc, const float *losses, int N, cudaStream_t stream) {
    if (N <= 0) return;
    loss_accumulate_kernel<<<(N + 255) / 256, 256, 0, stream>>>(acc, losses, N);
    CUDA_CHECK_LAUNCH("loss_accumulate_kernel");
}
