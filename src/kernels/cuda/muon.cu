/* Muon on the GPU (kernels/muon.h): the momentum and the update element by
 * element in fp32 (one launch per batch of equally shaped matrices, a row
 * of blocks per matrix), the Newton-Schulz iteration in bf16 on the tensor
 * cores, three strided-batch cuBLASLt products per iteration for the whole
 * batch.
 *
 * Row-major X (rows x cols) is the column-major Xc = X^T (cols x rows, ld
 * cols), so with s = min(rows, cols) (every product below is column-major):
 *   wide (rows <= cols): A (s x s) = Xc^T Xc; B = c A A + b A;
 *                        Xc' (cols x rows) = Xc B + a Xc
 *   tall (rows > cols):  A (s x s) = Xc Xc^T; B as above;
 *                        Xc' = B Xc + a Xc
 * which are X X^T, X B (wide) and X^T X, B X^T (tall) of the row-major
 * matrices: the tall case iterates on X^T without moving it. The iteration
 * alternates between x and a second buffer; the normalisation writes the
 * second, so that the fifth product lands in x. */
#include "kernels/muon.h"

#include <cuda_bf16.h>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"

enum { MUON_BLOCK = 256, NORM_BLOCK = 256, NORM_PARTS = 64 };

/* torch.lerp(a, b, w) in fp32, both of its forms, rounded as the CPU's. */
static __device__ __forceinline__ float lerp_rn(float a, float b, float w) {
    return fabsf(w) < 0.5f ? __fadd_rn(a, __fmul_rn(w, __fsub_rn(b, a)))
                           : __fsub_rn(b, __fmul_rn(__fsub_rn(b, a), __fsub_rn(1.0f, w)));
}

static unsigned blocks_per_matrix(size_t n) {
    size_t g = (n + MUON_BLOCK - 1) / MUON_BLOCK;
    return (unsigned)(g > 1024 ? 1024 : g); /* grid-stride beyond */
}

static __global__ void momentum_kernel(bf16 *x, float *buf, const bf16 *grad,
                                       const int64_t *offsets, size_t n, const float *grad_scale,
                                       float momentum, float w_buf) {
    const float s = *grad_scale;
    if (s < 0.0f) return; /* CLIP_SKIP_STEP (kernels/norm.h) */
    const int64_t off = offsets[blockIdx.y];
    bf16 *xk = x + (size_t)blockIdx.y * n;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x) {
        const float g = __fmul_rn(__bfloat162float(grad[off + j]), s);
        const float b = lerp_rn(buf[off + j], g, w_buf);
        buf[off + j] = b;
        xk[j] = __float2bfloat16_rn(lerp_rn(g, b, momentum));
    }
}

extern "C" void muon_momentum_cuda(void *x, float *buf, const void *grad, const muon_batch *b,
                                   const float *grad_scale, float momentum, cudaStream_t stream) {
    if (b->count == 0) return;
    const size_t n = (size_t)b->rows * b->cols;
    const dim3 grid(blocks_per_matrix(n), (unsigned)b->count);
    momentum_kernel<<<grid, MUON_BLOCK, 0, stream>>>((bf16 *)x, buf, (const bf16 *)grad, b->offsets,
                                                     n, grad_scale, momentum,
                                                     (float)(1.0 - (double)momentum));
    CUDA_CHECK_LAUNCH("muon momentum_kernel");
}

/* The normalisation out[k] = x[k] / (|x[k]|_F + eps) in two passes over
 * NORM_PARTS blocks a matrix (one block a matrix would leave most SMs idle
 * and read at one SM's latency-bound rate): each block's sum of squares of
 * its slice (8 bf16 a load), then each block sums its matrix's partials in
 * index order and scales its slice. A fixed order throughout: a run
 * repeats bit for bit. n is a multiple of 8 (rows and cols of 8). */
static __device__ float block_sum(float v) {
    __shared__ float warp_sums[NORM_BLOCK / 32];
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < NORM_BLOCK / 32; w++) total += warp_sums[w];
    return total;
}

static __global__ void norm_partial_kernel(float *partials, const bf16 *x, size_t n8) {
    const uint4 *xk = reinterpret_cast<const uint4 *>(x) + (size_t)blockIdx.y * n8;
    float sum = 0.0f;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n8;
         j += (size_t)gridDim.x * blockDim.x) {
        const uint4 raw = xk[j];
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&raw);
        for (int q = 0; q < 4; q++) {
            const float2 f = __bfloat1622float2(h[q]);
            sum = fmaf(f.x, f.x, sum);
            sum = fmaf(f.y, f.y, sum);
        }
    }
    sum = block_sum(sum);
    if (threadIdx.x == 0) partials[blockIdx.y * gridDim.x + blockIdx.x] = sum;
}

static __global__ void norm_scale_kernel(bf16 *out, const bf16 *x, const float *partials,
                                         size_t n8) {
    float sum = 0.0f;
    for (unsigned p = 0; p < gridDim.x; p++) sum += partials[blockIdx.y * gridDim.x + p];
    const float denom = sqrtf(sum) + MUON_NORM_EPS;
    const uint4 *xk = reinterpret_cast<const uint4 *>(x) + (size_t)blockIdx.y * n8;
    uint4 *ok = reinterpret_cast<uint4 *>(out) + (size_t)blockIdx.y * n8;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n8;
         j += (size_t)gridDim.x * blockDim.x) {
        uint4 raw = xk[j];
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&raw);
        for (int q = 0; q < 4; q++) {
            const float2 f = __bfloat1622float2(h[q]);
            h[q] = __floats2bfloat162_rn(f.x / denom, f.y / denom);
        }
        ok[j] = raw;
    }
}

extern "C" size_t muon_orthogonalize_cuda_bytes(int count, int rows, int cols) {
    const size_t s = rows < cols ? rows : cols;
    /* the second X, A and B, then the norms' partial sums */
    return (size_t)count * ((size_t)rows * cols + 2 * s * s) * sizeof(bf16) +
           (size_t)count * NORM_PARTS * sizeof(float);
}

extern "C" void muon_orthogonalize_cuda(void *x, int count, int rows, int cols, void *scratch,
                                        const cublaslt_ctx *lt, cudaStream_t stream) {
    if (count == 0) return;
    if (rows % 8 || cols % 8)
        FAIL("muon_orthogonalize_cuda: %d x %d: rows and cols must be multiples of 8", rows, cols);
    const size_t n = (size_t)rows * cols;
    const int s = rows < cols ? rows : cols;
    const int64_t ss = (int64_t)s * s, xn = (int64_t)n;
    bf16 *other = (bf16 *)scratch;
    bf16 *A = other + (size_t)count * n, *B = A + (size_t)count * ss;
    float *partials = reinterpret_cast<float *>(B + (size_t)count * ss);
    const dim3 parts(NORM_PARTS, (unsigned)count);
    norm_partial_kernel<<<parts, NORM_BLOCK, 0, stream>>>(partials, (const bf16 *)x, n / 8);
    CUDA_CHECK_LAUNCH("muon norm_partial_kernel");
    norm_scale_kernel<<<parts, NORM_BLOCK, 0, stream>>>(other, (const bf16 *)x, partials, n / 8);
    CUDA_CHECK_LAUNCH("muon norm_scale_kernel");
    bf16 *cur = other, *next = (bf16 *)x;
    const bool wide = rows <= cols;
    for (int it = 0; it < MUON_NS_STEPS; it++) {
        if (wide) /* A = Xc^T Xc: k = cols */
            matmul_batched_cuda(1, 0, s, s, cols, 1.0f, cur, cols, xn, cur, cols, xn, 0.0f, NULL, A,
                                s, ss, count, lt, stream);
        else /* A = Xc Xc^T: k = rows */
            matmul_batched_cuda(0, 1, s, s, rows, 1.0f, cur, cols, xn, cur, cols, xn, 0.0f, NULL, A,
                                s, ss, count, lt, stream);
        /* B = c A A + b A */
        matmul_batched_cuda(0, 0, s, s, s, MUON_NS_C, A, s, ss, A, s, ss, MUON_NS_B, A, B, s, ss,
                            count, lt, stream);
        if (wide) /* Xc' (cols x rows) = Xc B + a Xc */
            matmul_batched_cuda(0, 0, cols, rows, rows, 1.0f, cur, cols, xn, B, s, ss, MUON_NS_A,
                                cur, next, cols, xn, count, lt, stream);
        else /* Xc' = B Xc + a Xc */
            matmul_batched_cuda(0, 0, cols, rows, cols, 1.0f, B, s, ss, cur, cols, xn, MUON_NS_A,
                                cur, next, cols, xn, count, lt, stream);
        bf16 *t = cur;
        cur = next;
        next = t;
    }
    static_assert(MUON_NS_STEPS % 2 == 1, "the last iteration must write x");
}

static __global__ void apply_kernel(bf16 *params, float *master, const bf16 *x,
                                    const int64_t *offsets, size_t n, const float *grad_scale,
                                    float decay, float step) {
    if (*grad_scale < 0.0f) return; /* CLIP_SKIP_STEP */
    const int64_t off = offsets[blockIdx.y];
    const bf16 *xk = x + (size_t)blockIdx.y * n;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x) {
        float p = __fmul_rn(master[off + j], decay);
        p = __fadd_rn(p, __fmul_rn(step, __bfloat162float(xk[j])));
        master[off + j] = p;
        if (params) params[off + j] = __float2bfloat16_rn(p);
    }
}

extern "C" void muon_apply_cuda(void *params, float *master, const void *x, const muon_batch *b,
                                const float *grad_scale, const muon_hyper *h, cudaStream_t stream) {
    if (b->count == 0) return;
    const size_t n = (size_t)b->rows * b->cols;
    const dim3 grid(blocks_per_matrix(n), (unsigned)b->count);
    apply_kernel<<<grid, MUON_BLOCK, 0, stream>>>(
        (bf16 *)params, master, (const bf16 *)x, b->offsets, n, grad_scale,
        (float)(1.0 - (double)h->lr * h->weight_decay), (float)(-(double)h->lr * h->scale));
    CUDA_CHECK_LAUNCH("muon apply_kernel");
}
