/* AdamW on the GPU over a flat fp32 master shard, bf16 gradients in and
 * bf16 parameters out.
 *
 * Design: element-wise, one pass: reads master, m, v (fp32) and the gradient
 * (bf16), writes master, m, v and the bf16 parameter: 28 bytes per element,
 * memory bound. One launch covers the whole shard, whatever tensors it cuts
 * through: weight decay is picked per ADAMW_DECAY_CHUNK elements from a flag
 * byte (the 32 threads of a chunk read the same byte, one broadcast), where
 * one launch per tensor cost 148 launches and their tails for 124M.
 * Four elements per thread with 16-byte fp32 and 8-byte bf16
 * accesses when every pointer allows it, scalar otherwise. The arithmetic is
 * the CPU reference's (kernels/cpu/adamw.c, torch.optim.AdamW's order) with
 * the scalars formed on the host in double exactly as there, and every
 * operation written as an explicitly rounded intrinsic so that nvcc cannot
 * contract a multiply-add: the result is the CPU's, bit for bit. */
#include "kernels/adamw.h"

#include <math.h>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"

typedef struct {
    float decay, w1, one_minus_w1, beta2, w2, bc2_sqrt, step, eps;
    int w1_small;
} adamw_consts;

/* decay: k.decay where the element's chunk decays, else exactly 1 (what
 * (float)(1 - lr * 0) is, so a chunk without decay rounds as before). */
static __device__ __forceinline__ void adamw_one(float &p, float &m, float &v, float grad,
                                                 float grad_scale, float decay,
                                                 const adamw_consts &k) {
    const float g = __fmul_rn(grad, grad_scale);
    const float pd = __fmul_rn(p, decay);
    const float mi = k.w1_small ? __fadd_rn(m, __fmul_rn(k.w1, __fsub_rn(g, m)))
                                : __fsub_rn(g, __fmul_rn(__fsub_rn(g, m), k.one_minus_w1));
    const float vi = __fadd_rn(__fmul_rn(v, k.beta2), __fmul_rn(__fmul_rn(k.w2, g), g));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), k.bc2_sqrt), k.eps);
    m = mi;
    v = vi;
    p = __fadd_rn(pd, __fdiv_rn(__fmul_rn(k.step, mi), denom));
}

/* The element's chunk flag: 1 (decays) without flags. */
static __device__ __forceinline__ uint8_t chunk_flag(const uint8_t *decay_chunks, size_t i) {
    return decay_chunks == nullptr ? 1 : decay_chunks[i / ADAMW_DECAY_CHUNK];
}

static __global__ void adamw_vec4_kernel(bf16 *params, float *master, const bf16 *grad, float *m,
                                         float *v, size_t n4, const uint8_t *decay_chunks,
                                         const float *grad_scale, adamw_consts k) {
    const float s = *grad_scale;
    if (s < 0.0f) return; /* CLIP_SKIP_STEP (kernels/norm.h): a skipped step */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint8_t flag = chunk_flag(decay_chunks, i * 4); /* 4 | ADAMW_DECAY_CHUNK */
        if (flag == ADAMW_CHUNK_SKIP) continue;
        const float d = flag ? k.decay : 1.0f;
        float4 p = reinterpret_cast<float4 *>(master)[i];
        float4 mm = reinterpret_cast<float4 *>(m)[i];
        float4 vv = reinterpret_cast<float4 *>(v)[i];
        const uint2 graw = reinterpret_cast<const uint2 *>(grad)[i];
        const __nv_bfloat162 *gh = reinterpret_cast<const __nv_bfloat162 *>(&graw);
        const float2 g01 = __bfloat1622float2(gh[0]), g23 = __bfloat1622float2(gh[1]);
        adamw_one(p.x, mm.x, vv.x, g01.x, s, d, k);
        adamw_one(p.y, mm.y, vv.y, g01.y, s, d, k);
        adamw_one(p.z, mm.z, vv.z, g23.x, s, d, k);
        adamw_one(p.w, mm.w, vv.w, g23.y, s, d, k);
        reinterpret_cast<float4 *>(master)[i] = p;
        reinterpret_cast<float4 *>(m)[i] = mm;
        reinterpret_cast<float4 *>(v)[i] = vv;
        if (params) {
            uint2 out;
            __nv_bfloat162 *oh = reinterpret_cast<__nv_bfloat162 *>(&out);
            oh[0] = __floats2bfloat162_rn(p.x, p.y);
            oh[1] = __floats2bfloat162_rn(p.z, p.w);
            reinterpret_cast<uint2 *>(params)[i] = out;
        }
    }
}

static __global__ void adamw_scalar_kernel(bf16 *params, float *master, const bf16 *grad, float *m,
                                           float *v, size_t begin, size_t n,
                                           const uint8_t *decay_chunks, const float *grad_scale,
                                           adamw_consts k) {
    const float s = *grad_scale;
    if (s < 0.0f) return; /* CLIP_SKIP_STEP (kernels/norm.h): a skipped step */
    for (size_t i = begin + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint8_t flag = chunk_flag(decay_chunks, i);
        if (flag == ADAMW_CHUNK_SKIP) continue;
        float p = master[i], mi = m[i], vi = v[i];
        adamw_one(p, mi, vi, __bfloat162float(grad[i]), s, flag ? k.decay : 1.0f, k);
        master[i] = p;
        m[i] = mi;
        v[i] = vi;
        if (params) params[i] = __float2bfloat16_rn(p);
    }
}

static unsigned grid_for(size_t work, int block) {
    size_t g = (work + block - 1) / block;
    if (g > 65536) g = 65536; /* grid-stride beyond */
    return (unsigned)(g ? g : 1);
}

extern "C" void adamw_update_cuda(void *params, float *master, const void *grad, float *m, float *v,
                                  size_t n, const uint8_t *decay_chunks, const float *grad_scale,
                                  const adamw_hyper *h, cudaStream_t stream) {
    if (n == 0) return;
    const float lr = h->lr, beta1 = h->beta1, beta2 = h->beta2, eps = h->eps;
    const float weight_decay = h->weight_decay;
    const int t = h->t;
    adamw_consts k;
    /* The scalars as adamw_update_cpu forms them. */
    k.decay = (float)(1.0 - (double)lr * (double)weight_decay);
    k.w1 = (float)(1.0 - (double)beta1);
    k.w1_small = fabsf(k.w1) < 0.5f;
    k.one_minus_w1 = 1.0f - k.w1;
    k.beta2 = beta2;
    k.w2 = (float)(1.0 - (double)beta2);
    k.bc2_sqrt = (float)sqrt(1.0 - pow((double)beta2, t));
    k.step = (float)(-(double)lr / (1.0 - pow((double)beta1, t)));
    k.eps = eps;

    const int block = 256;
    const bool vec = is_aligned16(master) && is_aligned16(m) && is_aligned16(v) &&
                     ((uintptr_t)grad & 7u) == 0 && ((uintptr_t)params & 7u) == 0;
    size_t done = 0;
    if (vec && n >= 4) {
        const size_t n4 = n / 4;
        adamw_vec4_kernel<<<grid_for(n4, block), block, 0, stream>>>(
            (bf16 *)params, master, (const bf16 *)grad, m, v, n4, decay_chunks, grad_scale, k);
        CUDA_CHECK_LAUNCH("adamw_vec4_kernel");
        done = n4 * 4;
    }
    if (done < n) {
        adamw_scalar_kernel<<<grid_for(n - done, block), block, 0, stream>>>(
            (bf16 *)params, master, (const bf16 *)grad, m, v, done, n, decay_chunks, grad_scale, k);
        CUDA_CHECK_LAUNCH("adamw_scalar_kernel");
    }
}
