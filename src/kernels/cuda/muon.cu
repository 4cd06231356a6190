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

enum { MUON_BLOCK = 256, NORM_BLOCK = 1024 };

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
    momentum_kernel<<<grid, MUON_BLOCK, 0, stream>>>((bf16 *)x, buf, (const bf16 *)grad,
                                                     b->offsets, n, grad_scale, momentum,
                                                     (float)(1.0 - (double)momentum));
    CUDA_CHECK_LAUNCH("muon momentum_kernel");
}

/* out[k] = x[k] / (|x[k]|_F + eps), one block per matrix: the sum of
 * squares in a fixed order (each thread's strided elements, then the
 * block's tree), so that a run repeats bit for bit. */
static __global__ void normalize_kernel(bf16 *out, const bf16 *x, size_t n) {
    const bf16 *xk = x + (size_t)blockIdx.x * n;
    bf16 *ok = out + (size_t)blockIdx.x * n;
    float sum = 0.0f;
    for (size_t j = threadIdx.x; j < n; j += blockDim.x) {
        const float v = __bfloat162float(xk[j]);
        sum = fmaf(v, v, sum);
    }
    __shared__ float partial[NORM_BLOCK];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = NORM_BLOCK / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    const float denom = sqrtf(partial[0]) + MUON_NORM_EPS;
    for (size_t j = threadIdx.x; j < n; j += blockDim.x)
        ok[j] = __float2bfloat16_rn(__bfloat162float(xk[j]) / denom);
}

extern "C" size_t muon_orthogonalize_cuda_bytes(int count, int rows, int cols) {
    const size_t s = rows < cols ? rows : cols;
    /* the second X, A and B */
    return (size_t)count * ((size_t)rows * cols + 2 * s * s) * sizeof(bf16);
}

extern "C" void muon_orthogonalize_cuda(void *x, int count, int rows, int cols, void *scratch,
                                        const cublaslt_ctx *lt, cudaStream_t stream) {
    if (count == 0) return;
    const size_t n = (size_t)rows * cols;
    const int s = rows < cols ? rows : cols;
    const int64_t ss = (int64_t)s * s, xn = (int64_t)n;
    bf16 *other = (bf16 *)scratch;
    bf16 *A = other + (size_t)count * n, *B = A + (size_t)count * ss;
    normalize_kernel<<<(unsigned)count, NORM_BLOCK, 0, stream>>>(other, (const bf16 *)x, n);
    CUDA_CHECK_LAUNCH("muon normalize_kernel");
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
