/* Fused classifier on the GPU: softmax over the real vocabulary columns,
 * cross-entropy loss, and dlogits written over the bf16 logits in place.
 *
 * Design: one block per row (rows are independent; 1024 threads, so at most
 * two rows per SM: 264 rows of 100 KB in flight fit the 50 MB L2, and pass
 * 2's re-read mostly hits it; one block's loads overlap the other's math).
 * Pass 1 reads
 * the row once with 16-byte loads and keeps an online (max, sum of exp)
 * pair per thread, rescaling the sum when the max grows; the pairs are
 * combined over the block in a fixed tree, so every row's statistics are
 * bitwise reproducible. All math is fp32 (the sum of ~50K exps in fp32
 * through a tree is within a few 1e-7 relative). loss = log(sum) + max -
 * logit[target]. Pass 2 (only when dloss != 0) reads the row again (it is
 * 100 KB, usually still in L2) and writes (softmax - onehot) * dloss rounded
 * to bf16, and zeros for the padding columns [V, Vp). With dloss == 0 the
 * logits are not written. */
#include "kernels/classifier.h"

#include <math.h>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"

enum { CLS_THREADS = 1024, CLS_WARPS = CLS_THREADS / 32 };

/* (m, s) <- the pair for the union of both sets. */
static __device__ __forceinline__ void combine(float &m, float &s, float om, float os) {
    const float nm = fmaxf(m, om);
    if (nm == -INFINITY) return; /* both empty */
    s = s * __expf(m - nm) + os * __expf(om - nm);
    m = nm;
}

static __global__ void __launch_bounds__(CLS_THREADS)
    classifier_kernel(bf16 *logits, float *losses, const int32_t *targets, int V, int Vp,
                      float dloss) {
    __shared__ float sh_m[CLS_WARPS], sh_s[CLS_WARPS];
    const int row = blockIdx.x;
    bf16 *x = logits + (size_t)row * Vp;
    const int target = targets[row];
    const bool target_ok = target >= 0 && target < V;
    /* read before any thread can overwrite it in pass 2 (after the barriers below) */
    const float x_target = threadIdx.x == 0 && target_ok ? __bfloat162float(x[target]) : 0.f;
    const int V8 = Vp / 8;

    float m = -INFINITY, s = 0.f;
    for (int v = threadIdx.x; v < V8; v += CLS_THREADS) {
        float f[8];
        load8(f, x + (size_t)v * 8);
        const int c0 = v * 8;
        float lm = -INFINITY;
#pragma unroll
        for (int i = 0; i < 8; i++)
            if (c0 + i < V) lm = fmaxf(lm, f[i]);
        if (lm == -INFINITY) continue; /* only padding */
        const float nm = fmaxf(m, lm);
        float ls = 0.f;
#pragma unroll
        for (int i = 0; i < 8; i++)
            if (c0 + i < V) ls += __expf(f[i] - nm);
        s = s * __expf(m - nm) + ls; /* m = -inf: exp gives 0 and s is 0 */
        m = nm;
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

    const float inv_s = 1.0f / S;
    for (int v = threadIdx.x; v < V8; v += CLS_THREADS) {
        float f[8];
        load8(f, x + (size_t)v * 8);
        const int c0 = v * 8;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int c = c0 + i;
            float p = c < V ? __expf(f[i] - M) * inv_s : 0.f;
            if (c == target) p -= 1.0f;
            f[i] = p * dloss;
        }
        store8(x + (size_t)v * 8, f);
    }
}

extern "C" void classifier_forward_backward_cuda(void *logits, float *losses,
                                                 const int32_t *targets, int N, int V, int Vp,
                                                 float dloss, cudaStream_t stream) {
    if (Vp % 8 != 0 || V > Vp || V <= 0 || !is_aligned16(logits))
        FAIL("classifier_forward_backward_cuda: Vp=%d must be a multiple of 8, 0 < V=%d <= Vp, "
             "logits 16-byte aligned",
             Vp, V);
    if (N <= 0) return;
    classifier_kernel<<<N, CLS_THREADS, 0, stream>>>((bf16 *)logits, losses, targets, V, Vp, dloss);
    CUDA_CHECK_LAUNCH("classifier_kernel");
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
