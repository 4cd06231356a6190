/* The CUDA backend's kernel table (kernels/ops.h): bf16 storage for
 * parameters, gradients and activations; fp32 for LayerNorm statistics,
 * attention lse, losses and the optimizer state.
 *
 * Design: one compute stream, created by ops_cuda_init, carries every kernel
 * and copy, so the ops are ordered among themselves without host syncs; the
 * only syncs are the ones a host result needs (download) and a large upload,
 * which returns once the host buffer may be reused (a small one is staged in
 * pinned memory instead). Scratch for the ops that need it (sort keys,
 * LayerNorm and bias partials, the norm's partials, attention's backward)
 * comes from one arena that grows on demand:
 * the ops run one after another on the stream, so they can share it, and a
 * growth first waits for the stream so that no queued kernel still uses the
 * old buffer. The fp32 <-> bf16 conversions of upload_f32/download_f32 go
 * through a device staging buffer in chunks of STAGING_FLOATS. The
 * conversion kernels live here because only the table's memory functions use
 * them. */
#include "kernels/ops.h"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/classifier.h"
#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/encoder.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/muon.h"
#include "kernels/norm.h"

enum { STAGING_FLOATS = 16 << 20 };                 /* 64 MiB of fp32 per conversion chunk */
static const size_t LT_WORKSPACE_BYTES = 32u << 20; /* cuBLASLt's recommendation for Hopper */

/* The backend's state, set by ops_cuda_init. */
static struct {
    int ready, device;
    cuda_backend_options opt; /* as given to ops_cuda_init; opt.matmul_autotune lives in lt */
    cudaStream_t stream;
    cublaslt_ctx lt;
    void *scratch;
    size_t scratch_bytes;
    float *staging;
    double *norm_partials;
    cudaEvent_t marks[OPS_MARKS]; /* mark_record's, created on first use */
} g;

/* ---------------------------------------------------------- conversions */

static __global__ void f32_to_bf16_kernel(bf16 *dst, const float *src, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = __float2bfloat16_rn(src[i]); /* round to nearest even */
}

static __global__ void bf16_to_f32_kernel(float *dst, const bf16 *src, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = __bfloat162float(src[i]);
}

/* ---------------------------------------------------------- context */

static void need_init(void) {
    if (!g.ready) FAIL("ops_cuda used before ops_cuda_init(device)");
}

extern "C" cuda_backend_options cuda_backend_defaults(void) {
    cuda_backend_options o;
    o.matmul_autotune = true;
    o.attention.hopper = true;
    o.attention.deterministic = false;
    return o;
}

static bool same_options(const cuda_backend_options *a, const cuda_backend_options *b) {
    return a->matmul_autotune == b->matmul_autotune && a->attention.hopper == b->attention.hopper &&
           a->attention.deterministic == b->attention.deterministic;
}

extern "C" void ops_cuda_init(int device, const cuda_backend_options *opt) {
    const cuda_backend_options o = opt ? *opt : cuda_backend_defaults();
    if (g.ready) {
        if (device != g.device)
            FAIL("ops_cuda_init(%d): already initialised on device %d", device, g.device);
        if (!same_options(&o, &g.opt))
            FAIL("ops_cuda_init(%d): already initialised with other options", device);
        return;
    }
    g.opt = o;
    CUDA_CHECK(cudaSetDevice(device));
    /* A blocking stream: it also orders with the legacy default stream, which
     * any library call without a stream uses. */
    CUDA_CHECK(cudaStreamCreate(&g.stream));
    CUBLAS_CHECK(cublasLtCreate(&g.lt.handle));
    CUDA_CHECK(cudaMalloc(&g.lt.workspace, LT_WORKSPACE_BYTES));
    g.lt.workspace_bytes = LT_WORKSPACE_BYTES;
    g.lt.autotune = o.matmul_autotune;
    CUDA_CHECK(
        cudaMalloc((void **)&g.norm_partials, (size_t)sum_squares_cuda_blocks() * sizeof(double)));
    g.device = device;
    g.ready = 1;
}

extern "C" cudaStream_t ops_cuda_stream(void) {
    need_init();
    return g.stream;
}

/* The shared scratch arena, at least `bytes` long. */
static void *scratch(size_t bytes) {
    if (bytes <= g.scratch_bytes) return g.scratch;
    size_t grown = g.scratch_bytes * 2 > bytes ? g.scratch_bytes * 2 : bytes;
    grown = (grown + 255) / 256 * 256;
    CUDA_CHECK(cudaStreamSynchronize(g.stream)); /* queued kernels may still use it */
    if (g.scratch) CUDA_CHECK(cudaFree(g.scratch));
    g.scratch = NULL;
    g.scratch_bytes = 0;
    if (cudaMalloc(&g.scratch, grown) != cudaSuccess)
        FAIL("cudaMalloc of %zu bytes of op scratch failed: %s", grown,
             cudaGetErrorString(cudaGetLastError()));
    g.scratch_bytes = grown;
    return g.scratch;
}

/* ---------------------------------------------------------- memory */

static void *cuda_alloc(size_t bytes) {
    need_init();
    void *p = NULL;
    const cudaError_t err = cudaMalloc(&p, bytes ? bytes : 1);
    if (err != cudaSuccess) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        FAIL("cudaMalloc of %zu bytes (%.2f GiB) failed on device %d: %s (%.2f of %.2f GiB free)",
             bytes, bytes / 1073741824.0, g.device, cudaGetErrorString(err), free_b / 1073741824.0,
             total_b / 1073741824.0);
    }
    return p;
}

static void cuda_release(void *p) {
    if (p) CUDA_CHECK(cudaFree(p));
}

static void cuda_zero(void *p, size_t bytes) {
    need_init();
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, g.stream));
}

/* A small upload (a micro-batch's tokens) is copied into the next of
 * UPLOAD_SLOTS pinned buffers and from there asynchronously: the host returns
 * at once instead of waiting for everything queued before it (the previous
 * step) and then for the copy, so the next forward is queued while the GPU
 * still works. A slot is reused once its event says its copy is done. */
enum { UPLOAD_SLOTS = 8 };
static const size_t UPLOAD_STAGED_MAX = 4u << 20;
static struct {
    void *host;
    size_t cap;
    cudaEvent_t copied;
    bool pending;
} upload_slots[UPLOAD_SLOTS];
static int upload_next;

static void upload_staged(void *dst, const void *src_host, size_t bytes) {
    auto *slot = &upload_slots[upload_next];
    upload_next = (upload_next + 1) % UPLOAD_SLOTS;
    if (slot->pending) CUDA_CHECK(cudaEventSynchronize(slot->copied));
    if (!slot->copied) CUDA_CHECK(cudaEventCreateWithFlags(&slot->copied, cudaEventDisableTiming));
    if (slot->cap < bytes) {
        if (slot->host) CUDA_CHECK(cudaFreeHost(slot->host));
        CUDA_CHECK(cudaMallocHost(&slot->host, bytes));
        slot->cap = bytes;
    }
    memcpy(slot->host, src_host, bytes);
    CUDA_CHECK(cudaMemcpyAsync(dst, slot->host, bytes, cudaMemcpyHostToDevice, g.stream));
    CUDA_CHECK(cudaEventRecord(slot->copied, g.stream));
    slot->pending = true;
}

/* Returns when the host buffer may be reused (pinned or pageable). */
static void cuda_upload(void *dst, const void *src_host, size_t bytes) {
    need_init();
    if (bytes <= UPLOAD_STAGED_MAX) {
        upload_staged(dst, src_host, bytes);
        return;
    }
    CUDA_CHECK(cudaMemcpyAsync(dst, src_host, bytes, cudaMemcpyHostToDevice, g.stream));
    CUDA_CHECK(cudaStreamSynchronize(g.stream));
}

static void cuda_download(void *dst_host, const void *src, size_t bytes) {
    need_init();
    CUDA_CHECK(cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost, g.stream));
    CUDA_CHECK(cudaStreamSynchronize(g.stream));
}

static void *cuda_host_alloc(size_t bytes) {
    need_init();
    void *p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        return nullptr;
    }
    return p;
}

static void cuda_host_release(void *p) {
    if (p) CUDA_CHECK(cudaFreeHost(p));
}

static float *staging(void) {
    if (!g.staging) CUDA_CHECK(cudaMalloc((void **)&g.staging, (size_t)STAGING_FLOATS * 4));
    return g.staging;
}

static void cuda_upload_f32(void *dst, const float *src_host, size_t n) {
    need_init();
    float *st = staging();
    for (size_t off = 0; off < n; off += STAGING_FLOATS) {
        const size_t m = n - off < (size_t)STAGING_FLOATS ? n - off : (size_t)STAGING_FLOATS;
        CUDA_CHECK(cudaMemcpyAsync(st, src_host + off, m * sizeof(float), cudaMemcpyHostToDevice,
                                   g.stream));
        f32_to_bf16_kernel<<<(unsigned)((m + 255) / 256), 256, 0, g.stream>>>((bf16 *)dst + off, st,
                                                                              m);
        CUDA_CHECK_LAUNCH("f32_to_bf16_kernel");
    }
    CUDA_CHECK(cudaStreamSynchronize(g.stream));
}

static void cuda_download_f32(float *dst_host, const void *src, size_t n) {
    need_init();
    float *st = staging();
    for (size_t off = 0; off < n; off += STAGING_FLOATS) {
        const size_t m = n - off < (size_t)STAGING_FLOATS ? n - off : (size_t)STAGING_FLOATS;
        bf16_to_f32_kernel<<<(unsigned)((m + 255) / 256), 256, 0, g.stream>>>(
            st, (const bf16 *)src + off, m);
        CUDA_CHECK_LAUNCH("bf16_to_f32_kernel");
        CUDA_CHECK(cudaMemcpyAsync(dst_host + off, st, m * sizeof(float), cudaMemcpyDeviceToHost,
                                   g.stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(g.stream));
}

static void cuda_synchronize(void) {
    need_init();
    CUDA_CHECK(cudaStreamSynchronize(g.stream));
}

static void cuda_mark_record(int i) {
    need_init();
    if (i < 0 || i >= OPS_MARKS) FAIL("mark_record(%d): marks are 0..%d", i, OPS_MARKS - 1);
    if (!g.marks[i]) CUDA_CHECK(cudaEventCreate(&g.marks[i]));
    CUDA_CHECK(cudaEventRecord(g.marks[i], g.stream));
}

static void cuda_marks_read(double *ms, int n) {
    need_init();
    if (n <= 0) return;
    if (n > OPS_MARKS) FAIL("marks_read(%d): there are %d marks", n, OPS_MARKS);
    CUDA_CHECK(cudaEventSynchronize(g.marks[n - 1]));
    ms[0] = 0.0;
    for (int i = 1; i < n; i++) {
        float t = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&t, g.marks[0], g.marks[i]));
        ms[i] = t;
    }
}

/* ---------------------------------------------------------- ops */

static void cuda_encoder_forward(void *out, const int32_t *inp, const void *wte, const void *wpe,
                                 int B, int T, int C) {
    encoder_forward_cuda(out, inp, wte, wpe, B, T, C, g.stream);
}

static void cuda_encoder_backward(void *dwte, void *dwpe, const void *dout, const int32_t *inp,
                                  int B, int T, int C, int V) {
    const size_t bytes = encoder_backward_cuda_workspace_bytes(B, T);
    encoder_backward_cuda(dwte, dwpe, dout, inp, B, T, C, V, scratch(bytes), bytes, g.stream);
}

static void cuda_layernorm_forward(void *out, float *mean, float *rstd, const void *inp,
                                   const void *weight, const void *bias, int N, int C) {
    layernorm_forward_cuda(out, mean, rstd, inp, weight, bias, N, C, g.stream);
}

static void cuda_residual_layernorm_forward(void *residual, void *out, float *mean, float *rstd,
                                            const void *a, const void *b, const void *weight,
                                            const void *bias, int N, int C) {
    residual_layernorm_forward_cuda(residual, out, mean, rstd, a, b, weight, bias, N, C, g.stream);
}

static void cuda_layernorm_backward(void *dinp, void *dweight, void *dbias, const void *dout,
                                    const void *inp, const void *weight, const float *mean,
                                    const float *rstd, int N, int C, void *dinp_colsum) {
    const size_t bytes = layernorm_backward_cuda_workspace_bytes(N, C);
    layernorm_backward_cuda(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, dinp_colsum,
                            scratch(bytes), bytes, g.stream);
}

static void cuda_matmul_forward(void *out, const void *inp, const void *weight, const void *bias,
                                int N, int C, int OC) {
    matmul_forward_cuda(out, inp, weight, bias, N, C, OC, NULL, &g.lt, g.stream);
}

static void cuda_matmul_residual_forward(void *out, const void *residual, const void *inp,
                                         const void *weight, const void *bias, int N, int C,
                                         int OC) {
    matmul_residual_forward_cuda(out, residual, inp, weight, bias, N, C, OC, NULL, &g.lt, g.stream);
}

static void cuda_matmul_gelu_forward(void *out, void *pre, const void *inp, const void *weight,
                                     const void *bias, int N, int C, int OC) {
    matmul_gelu_forward_cuda(out, pre, inp, weight, bias, N, C, OC, NULL, &g.lt, g.stream);
}

static void cuda_matmul_backward(void *dinp, void *dweight, void *dbias, const void *dout,
                                 const void *inp, const void *weight, int N, int C, int OC) {
    const size_t bytes = matmul_backward_cuda_workspace_bytes(N, C, OC, dbias, NULL);
    matmul_backward_cuda(dinp, dweight, dbias, dout, inp, weight, NULL, N, C, OC, NULL,
                         bytes ? scratch(bytes) : NULL, bytes, NULL, &g.lt, g.stream);
}

static void cuda_matmul_backward_gelu(void *dinp, void *dweight, void *dbias, const void *dout,
                                      const void *inp, const void *weight, const void *pre, int N,
                                      int C, int OC, void *dpre_colsum) {
    const size_t bytes = matmul_backward_cuda_workspace_bytes(N, C, OC, dbias, dpre_colsum);
    matmul_backward_cuda(dinp, dweight, dbias, dout, inp, weight, pre, N, C, OC, dpre_colsum,
                         bytes ? scratch(bytes) : NULL, bytes, NULL, &g.lt, g.stream);
}

static void cuda_fp8_cast(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *in,
                          int rows, int cols, const float *scale, fp8_format format) {
    fp8_cast_cuda(out, out_t, stats, in, rows, cols, scale, format, g.stream);
}

static void cuda_layernorm_forward_fp8(void *residual, uint8_t *out, uint8_t *out_t,
                                       fp8_cast_stats *stats, float *mean, float *rstd,
                                       const void *a, const void *b, const void *weight,
                                       const void *bias, int N, int C, const float *scale,
                                       fp8_format format) {
    layernorm_forward_fp8_cuda(residual, out, out_t, stats, mean, rstd, a, b, weight, bias, N, C,
                               scale, format, g.stream);
}

static void cuda_fp8_cast_batch(const fp8_cast_job *jobs, int n, fp8_format format) {
    fp8_cast_batch_cuda(jobs, n, format, g.stream);
}

static void cuda_fp8_gelu_cast(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *pre,
                               int rows, int cols, const float *scale, fp8_format format) {
    fp8_gelu_cast_cuda(out, out_t, stats, pre, rows, cols, scale, format, g.stream);
}

static void cuda_layernorm_backward_fp8(void *dinp, void *dweight, void *dbias, const void *dout,
                                        const void *inp, const void *weight, const float *mean,
                                        const float *rstd, int N, int C, void *dinp_colsum,
                                        uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                                        const float *scale, fp8_format format) {
    const size_t bytes = layernorm_backward_cuda_workspace_bytes(N, C);
    layernorm_backward_fp8_cuda(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C,
                                dinp_colsum, scratch(bytes), bytes, out, out_t, stats, scale,
                                format, g.stream);
}

static void cuda_fp8_gelu_backward_cast(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                                        void *colsum, const void *d, const void *pre, int rows,
                                        int cols, const float *scale, fp8_format format) {
    const size_t bytes = (size_t)((rows + 63) / 64) * cols * sizeof(float);
    fp8_gelu_backward_cast_cuda(out, out_t, stats, colsum, (float *)scratch(bytes), d, pre, rows,
                                cols, scale, format, g.stream);
}

static void cuda_fp8_scaling_update(const fp8_scaling *s, int64_t step) {
    fp8_scaling_update_cuda(s, step, g.stream);
}

static void cuda_matmul_forward_fp8(void *out, const void *bias, int N, int C, int OC,
                                    const fp8_linear_operands *q) {
    matmul_forward_cuda(out, NULL, NULL, bias, N, C, OC, q, &g.lt, g.stream);
}

static void cuda_matmul_residual_forward_fp8(void *out, const void *residual, const void *bias,
                                             int N, int C, int OC, const fp8_linear_operands *q) {
    matmul_residual_forward_cuda(out, residual, NULL, NULL, bias, N, C, OC, q, &g.lt, g.stream);
}

static void cuda_matmul_backward_fp8(void *dinp, void *dweight, void *dbias, const void *dout,
                                     const void *pre, int N, int C, int OC, void *dpre_colsum,
                                     const fp8_linear_operands *q) {
    const size_t bytes = matmul_backward_cuda_workspace_bytes(N, C, OC, dbias, dpre_colsum);
    matmul_backward_cuda(dinp, dweight, dbias, dout, NULL, NULL, pre, N, C, OC, dpre_colsum,
                         bytes ? scratch(bytes) : NULL, bytes, q, &g.lt, g.stream);
}

static void cuda_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C,
                                   int NH) {
    attention_forward_cuda(out, lse, qkv, B, T, C, NH, &g.opt.attention, g.stream);
}

static void cuda_attention_forward_fp8(void *out, float *lse, const void *qkv, int B, int T, int C,
                                       int NH, uint8_t *out8, uint8_t *out8_t,
                                       fp8_cast_stats *stats, const float *scale,
                                       fp8_format format) {
    attention_forward_fp8_cuda(out, lse, qkv, B, T, C, NH, &g.opt.attention, out8, out8_t, stats,
                               scale, format, g.stream);
}

static void cuda_attention_backward(void *dqkv, const void *dout, const void *qkv, const void *out,
                                    const float *lse, int B, int T, int C, int NH,
                                    void *dqkv_colsum) {
    const size_t bytes = attention_backward_workspace_bytes(B, T, C, NH);
    attention_backward_cuda(dqkv, dout, qkv, out, lse, B, T, C, NH, dqkv_colsum, scratch(bytes),
                            &g.opt.attention, g.stream);
}

static void cuda_attention_backward_fp8(void *dqkv, const void *dout, const void *qkv,
                                        const void *out, const float *lse, int B, int T, int C,
                                        int NH, void *dqkv_colsum, uint8_t *out8, uint8_t *out8_t,
                                        fp8_cast_stats *stats, const float *scale,
                                        fp8_format format) {
    const size_t bytes = attention_backward_workspace_bytes(B, T, C, NH);
    attention_backward_fp8_cuda(dqkv, dout, qkv, out, lse, B, T, C, NH, dqkv_colsum, scratch(bytes),
                                &g.opt.attention, out8, out8_t, stats, scale, format, g.stream);
}

static void cuda_classifier(void *logits, float *losses, const int32_t *targets, int N, int V,
                            int Vp, float dloss) {
    classifier_forward_backward_cuda(logits, losses, targets, N, V, Vp, dloss, g.stream);
}

static void cuda_classifier_fp8(void *logits, float *losses, const int32_t *targets, int N, int V,
                                int Vp, float dloss, uint8_t *out8, const float *scale) {
    classifier_forward_backward_fp8_cuda(logits, losses, targets, N, V, Vp, dloss, out8, scale,
                                         g.stream);
}

static void cuda_fp8_transpose(uint8_t *out_t, const uint8_t *in, int rows, int cols) {
    fp8_transpose_cuda(out_t, in, rows, cols, g.stream);
}

static void cuda_loss_accumulate(float *acc, const float *losses, int N) {
    loss_accumulate_cuda(acc, losses, N, g.stream);
}

static void cuda_sum_f32(double *sum, const float *x, size_t n) {
    need_init();
    sum_f32_cuda(sum, x, n, g.stream);
}

static void cuda_gelu_forward(void *out, const void *inp, size_t n) {
    gelu_forward_cuda(out, inp, n, g.stream);
}

static void cuda_grad_sum_squares(double *sum, const void *grad, size_t n) {
    need_init();
    sum_squares_cuda(sum, g.norm_partials, grad, n, g.stream);
}

static void cuda_clip_scale(float *scale, const double *sum_squares, double max_norm) {
    need_init();
    clip_scale_cuda(scale, sum_squares, max_norm, g.stream);
}

static void cuda_nonfinite_fold(double *sum_squares, const double *value) {
    need_init();
    nonfinite_fold_cuda(sum_squares, value, g.stream);
}

static void cuda_muon_momentum(void *x, float *buf, const void *grad, const muon_batch *b,
                               const float *grad_scale, float momentum) {
    muon_momentum_cuda(x, buf, grad, b, grad_scale, momentum, g.stream);
}

static void cuda_muon_orthogonalize(void *x, int count, int rows, int cols) {
    muon_orthogonalize_cuda(x, count, rows, cols,
                            scratch(muon_orthogonalize_cuda_bytes(count, rows, cols)), &g.lt,
                            g.stream);
}

static void cuda_muon_apply(void *params, float *master, const void *x, const muon_batch *b,
                            const float *grad_scale, const muon_hyper *h) {
    muon_apply_cuda(params, master, x, b, grad_scale, h, g.stream);
}

static void cuda_adamw_update(void *params, float *master, const void *grad, float *m, float *v,
                              size_t n, const uint8_t *decay_chunks, const float *grad_scale,
                              const adamw_hyper *h) {
    adamw_update_cuda(params, master, grad, m, v, n, decay_chunks, grad_scale, h, g.stream);
}

static void cuda_transient_shapes(bool on) { g.lt.transient = on; }

/* Designated initializers (C++20; nvcc accepts them in C++17 as a GNU
 * extension) keep each entry on its field whatever the order. */
extern "C" const kernel_ops ops_cuda = {
    .name = "cuda",
    .elem_bytes = 2,
    .logits_chunk_bytes = OPS_CUDA_LOGITS_CHUNK_BYTES,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .zero = cuda_zero,
    .upload = cuda_upload,
    .download = cuda_download,
    .host_alloc = cuda_host_alloc,
    .host_release = cuda_host_release,
    .upload_f32 = cuda_upload_f32,
    .download_f32 = cuda_download_f32,
    .synchronize = cuda_synchronize,
    .transient_shapes = cuda_transient_shapes,
    .mark_record = cuda_mark_record,
    .marks_read = cuda_marks_read,
    .encoder_forward = cuda_encoder_forward,
    .encoder_backward = cuda_encoder_backward,
    .layernorm_forward = cuda_layernorm_forward,
    .residual_layernorm_forward = cuda_residual_layernorm_forward,
    .layernorm_backward = cuda_layernorm_backward,
    .matmul_forward = cuda_matmul_forward,
    .matmul_residual_forward = cuda_matmul_residual_forward,
    .matmul_gelu_forward = cuda_matmul_gelu_forward,
    .matmul_backward = cuda_matmul_backward,
    .matmul_backward_gelu = cuda_matmul_backward_gelu,
    .attention_forward = cuda_attention_forward,
    .attention_backward = cuda_attention_backward,
    .classifier_forward_backward = cuda_classifier,
    .loss_accumulate = cuda_loss_accumulate,
    .sum_f32 = cuda_sum_f32,
    .nonfinite_fold = cuda_nonfinite_fold,
    .gelu_forward = cuda_gelu_forward,
    .grad_sum_squares = cuda_grad_sum_squares,
    .clip_scale = cuda_clip_scale,
    .adamw_update = cuda_adamw_update,
    .muon_momentum = cuda_muon_momentum,
    .muon_orthogonalize = cuda_muon_orthogonalize,
    .muon_apply = cuda_muon_apply,
    .fp8_cast = cuda_fp8_cast,
    .fp8_scaling_update = cuda_fp8_scaling_update,
    .fp8_cast_batch = cuda_fp8_cast_batch,
    .layernorm_forward_fp8 = cuda_layernorm_forward_fp8,
    .fp8_gelu_cast = cuda_fp8_gelu_cast,
    .fp8_gelu_backward_cast = cuda_fp8_gelu_backward_cast,
    .layernorm_backward_fp8 = cuda_layernorm_backward_fp8,
    .attention_forward_fp8 = cuda_attention_forward_fp8,
    .attention_backward_fp8 = cuda_attention_backward_fp8,
    .matmul_forward_fp8 = cuda_matmul_forward_fp8,
    .matmul_residual_forward_fp8 = cuda_matmul_residual_forward_fp8,
    .matmul_backward_fp8 = cuda_matmul_backward_fp8,
    .classifier_forward_backward_fp8 = cuda_classifier_fp8,
    .fp8_transpose = cuda_fp8_transpose,
};
