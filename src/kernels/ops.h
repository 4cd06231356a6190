/* The kernel table: the one interface behind which the CPU (fp32) and CUDA
 * (bf16) backends differ. Model orchestration, the loop and the optimizer call
 * only these. Tensors of parameters, gradients and activations are `void *` in
 * the backend's storage type (elem_bytes each); LayerNorm statistics,
 * attention log-sum-exp, losses and optimizer state are always fp32. */
#ifndef GPT2_KERNELS_OPS_H
#define GPT2_KERNELS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/adamw.h"
#include "kernels/fp8.h"
#include "kernels/muon.h"

enum { OPS_MARKS = 4096 }; /* kernel_ops.mark_record's marks */
/* The CUDA backend's logits_chunk_bytes (below): up to 10,672 rows of a
 * vocabulary of 50,304 (124M at B = 32: 4 chunks of 8,192), where the
 * classifier's GEMMs run at full speed; the memory estimate, which counts a
 * model's allocations on a CPU-side table, takes it for CUDA runs. */
#define OPS_CUDA_LOGITS_CHUNK_BYTES ((size_t)1024 << 20)

typedef struct kernel_ops {
    const char *name;  /* "cpu" | "cuda" */
    size_t elem_bytes; /* storage of params/grads/activations: 4 (fp32) or 2 (bf16) */
    /* Bound on the classifier's logits buffer: large enough that its GEMMs
     * run at full speed (the GPU wants thousands of rows), small enough that
     * the full (B*T, Vp) matrix never exists. */
    size_t logits_chunk_bytes;

    /* memory in the backend's address space */
    void *(*alloc)(size_t bytes);
    void (*release)(void *ptr);
    void (*zero)(void *ptr, size_t bytes);
    void (*upload)(void *dst, const void *src_host, size_t bytes);
    void (*download)(void *dst_host, const void *src, size_t bytes);
    /* Host memory that download fills at the link's full speed (pinned on
     * the GPU; plain on the CPU): the snapshot buffers of asynchronous
     * checkpoints. NULL when the system cannot give it (no FAIL). */
    void *(*host_alloc)(size_t bytes);
    void (*host_release)(void *ptr);
    /* n storage elements <-> fp32 on the host */
    void (*upload_f32)(void *dst, const float *src_host, size_t n);
    void (*download_f32)(float *dst_host, const void *src, size_t n);
    void (*synchronize)(void);
    /* Calls between transient_shapes(true) and (false) run shapes that come
     * once or a few times (generation: a new length every token): the
     * backend neither tunes them nor lets them push out the training
     * step's tuned plans (kernels/matmul.h). NULL where nothing is cached
     * (the CPU). */
    void (*transient_shapes)(bool on);
    /* Points in the compute stream's work, for timing ops as they run,
     * without synchronizing (profile_ops_timing = stream); NULL in a
     * backend without a stream (the CPU). mark_record(i), i < OPS_MARKS:
     * mark i is reached once the work queued before it is done;
     * marks_read(ms, n) waits for marks 0..n-1 and writes each one's time
     * after mark 0. */
    void (*mark_record)(int i);
    void (*marks_read)(double *ms, int n);

    void (*encoder_forward)(void *out, const int32_t *inp, const void *wte, const void *wpe, int B,
                            int T, int C);
    /* V: dwte's rows; every token is below it */
    void (*encoder_backward)(void *dwte, void *dwpe, const void *dout, const int32_t *inp, int B,
                             int T, int C, int V);
    void (*layernorm_forward)(void *out, float *mean, float *rstd, const void *inp,
                              const void *weight, const void *bias, int N, int C);
    void (*residual_layernorm_forward)(void *residual, void *out, float *mean, float *rstd,
                                       const void *a, const void *b, const void *weight,
                                       const void *bias, int N, int C);
    /* dinp += d(LN)/d(inp) dout; dweight, dbias +=. dinp_colsum (may be
     * NULL) += the column sums of dinp after the update: where dinp is the
     * residual stream's gradient, that is the bias gradient of the linear
     * layer whose output was added to the stream (attn.c_proj, mlp.c_proj),
     * summed here while the values are in registers instead of in another
     * pass over them. */
    void (*layernorm_backward)(void *dinp, void *dweight, void *dbias, const void *dout,
                               const void *inp, const void *weight, const float *mean,
                               const float *rstd, int N, int C, void *dinp_colsum);
    void (*matmul_forward)(void *out, const void *inp, const void *weight, const void *bias, int N,
                           int C, int OC);
    /* out = residual + inp @ weight^T + bias (out and residual distinct):
     * a linear layer whose output joins the residual stream (attn.c_proj,
     * mlp.c_proj), the add in the product's epilogue, so that the
     * LayerNorm after it reads one tensor instead of two. */
    void (*matmul_residual_forward)(void *out, const void *residual, const void *inp,
                                    const void *weight, const void *bias, int N, int C, int OC);
    /* out = gelu(pre), pre = inp @ weight^T + bias (pre kept for backward) */
    void (*matmul_gelu_forward)(void *out, void *pre, const void *inp, const void *weight,
                                const void *bias, int N, int C, int OC);
    void (*matmul_backward)(void *dinp, void *dweight, void *dbias, const void *dout,
                            const void *inp, const void *weight, int N, int C, int OC);
    /* as matmul_backward, then dinp *= gelu'(pre): the backward of a linear
     * layer whose input was gelu(pre). dpre_colsum (may be NULL) += the
     * column sums of that dinp, i.e. the bias gradient of the layer that
     * produced pre (mlp.c_fc), while the GEMM's epilogue has the values. */
    void (*matmul_backward_gelu)(void *dinp, void *dweight, void *dbias, const void *dout,
                                 const void *inp, const void *weight, const void *pre, int N, int C,
                                 int OC, void *dpre_colsum);
    void (*attention_forward)(void *out, float *lse, const void *qkv, int B, int T, int C, int NH);
    /* dqkv is overwritten; dqkv_colsum (3C, may be NULL) += its column sums:
     * the bias gradient of the qkv projection (attn.c_attn), summed while
     * the kernels have the values instead of in another pass over dqkv. */
    void (*attention_backward)(void *dqkv, const void *dout, const void *qkv, const void *out,
                               const float *lse, int B, int T, int C, int NH, void *dqkv_colsum);
    void (*classifier_forward_backward)(void *logits, float *losses, const int32_t *targets, int N,
                                        int V, int Vp, float dloss);
    /* acc[i] += losses[i] for i < N, fp32 on the backend: the losses of
     * several forwards summed without a round trip to the host, which then
     * downloads them once, when a step's loss is logged. */
    void (*loss_accumulate)(float *acc, const float *losses, int N);
    /* *sum = x[0] + ... + x[n-1] in double, in a fixed order, into backend
     * memory: a step's loss summed where it lies, so that only one double
     * crosses to the host, and only once the step is done. */
    void (*sum_f32)(double *sum, const float *x, size_t n);
    /* *sum_squares = NaN when *value (a step's loss sum, backend memory)
     * is NaN or Inf: a non-finite loss then skips the step like a
     * non-finite gradient norm does (clip_scale), with no round trip. */
    void (*nonfinite_fold)(double *sum_squares, const double *value);
    /* out = gelu(inp), tanh form, over n elements (a multiple of 8): the
     * backward's recomputation of an MLP activation that was not kept
     * (recompute_gelu). */
    void (*gelu_forward)(void *out, const void *inp, size_t n);

    /* Global-norm clipping without a round trip to the host: every value
     * below lives in the backend's memory, so the step's norm, the ranks'
     * sum of it and the clip factor all stay queued behind backward.
     * *sum = the sum of squares of n gradient elements (double). */
    void (*grad_sum_squares)(double *sum, const void *grad, size_t n);
    /* *scale = min(1, max_norm / (sqrt(*sum_squares) + 1e-6)), the factor of
     * torch.nn.utils.clip_grad_norm_, computed in double; 1 when max_norm <= 0;
     * CLIP_SKIP_STEP (negative, kernels/norm.h) when *sum_squares is not
     * finite: then adamw_update changes nothing. */
    void (*clip_scale)(float *scale, const double *sum_squares, double max_norm);
    /* AdamW over n elements of an fp32 master shard, the gradient multiplied
     * by *grad_scale (backend memory: clip_scale's output); writes the
     * updated values into params (storage type) too. weight_decay applies
     * where decay_chunks (backend memory, one byte per ADAMW_DECAY_CHUNK
     * elements from the range's start, kernels/adamw.h) is nonzero; NULL:
     * everywhere. One call covers a whole shard of many tensors. */
    void (*adamw_update)(void *params, float *master, const void *grad, float *m, float *v,
                         size_t n, const uint8_t *decay_chunks, const float *grad_scale,
                         const adamw_hyper *h);

    /* Muon (kernels/muon.h) on a batch b of equally shaped matrices of an
     * optimizer shard (grad, buf, master and params indexed from the
     * shard's start by b's offsets): x (b->count x rows x cols, storage
     * type) = each matrix's Nesterov look-ahead from grad * *grad_scale,
     * buf updated; x normalised and orthogonalised in place (Newton-Schulz);
     * master and params updated from x. A negative *grad_scale
     * (CLIP_SKIP_STEP) changes neither buf nor master. */
    void (*muon_momentum)(void *x, float *buf, const void *grad, const muon_batch *b,
                          const float *grad_scale, float momentum);
    void (*muon_orthogonalize)(void *x, int count, int rows, int cols);
    void (*muon_apply)(void *params, float *master, const void *x, const muon_batch *b,
                       const float *grad_scale, const muon_hyper *h);

    /* FP8 linear layers (kernels/fp8.h); NULL where the backend has none
     * (the CPU). fp8_cast: bf16 (rows, cols) -> FP8 `format` with its
     * transpose (out_t, may be NULL) and stats, as fp8_cast_cuda;
     * fp8_scaling_update: one step of delayed scaling for s's tensors, as
     * fp8_scaling_update_cuda. The matmuls are the bf16 ones above with
     * every product reading q's FP8 operands instead (dout, bf16, only for
     * dbias). */
    void (*fp8_cast)(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *in, int rows,
                     int cols, const float *scale, fp8_format format);
    void (*fp8_scaling_update)(const fp8_scaling *s, int64_t step);
    /* fp8_cast of n (<= FP8_CAST_BATCH_MAX) tensors in one pass, as
     * fp8_cast_batch_cuda. */
    void (*fp8_cast_batch)(const fp8_cast_job *jobs, int n, fp8_format format);
    /* residual_layernorm_forward (residual NULL: layernorm_forward of a)
     * whose output is cast (fp8_cast, out_t may be NULL) instead of stored
     * in bf16, as layernorm_forward_fp8_cuda: the LayerNorm fused into the
     * cast of the next layer's input. */
    void (*layernorm_forward_fp8)(void *residual, uint8_t *out, uint8_t *out_t,
                                  fp8_cast_stats *stats, float *mean, float *rstd, const void *a,
                                  const void *b, const void *weight, const void *bias, int N, int C,
                                  const float *scale, fp8_format format);
    /* fp8_cast of gelu(pre), as fp8_gelu_cast_cuda: the GELU forward fused
     * into the cast of the next layer's input. */
    void (*fp8_gelu_cast)(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *pre,
                          int rows, int cols, const float *scale, fp8_format format);
    /* fp8_cast (with out_t) of d * gelu'(pre) (rows x cols) and colsum (may
     * be NULL) += its column sums, as fp8_gelu_backward_cast_cuda: the GELU
     * backward fused into the cast of the next layer's output gradient. */
    void (*fp8_gelu_backward_cast)(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                                   void *colsum, const void *d, const void *pre, int rows, int cols,
                                   const float *scale, fp8_format format);
    /* layernorm_backward whose updated dinp is also cast (fp8_cast with
     * out_t; N a multiple of 16), as layernorm_backward_fp8_cuda: the
     * LayerNorm backward fused into the cast of the output gradient of the
     * projection that wrote the residual stream before it. */
    void (*layernorm_backward_fp8)(void *dinp, void *dweight, void *dbias, const void *dout,
                                   const void *inp, const void *weight, const float *mean,
                                   const float *rstd, int N, int C, void *dinp_colsum, uint8_t *out,
                                   uint8_t *out_t, fp8_cast_stats *stats, const float *scale,
                                   fp8_format format);
    /* attention_forward whose out is also cast (fp8_cast of B * T rows,
     * out_t may be NULL), as attention_forward_fp8_cuda. NULL where the
     * backend has no such fusion. */
    void (*attention_forward_fp8)(void *out, float *lse, const void *qkv, int B, int T, int C,
                                  int NH, uint8_t *out8, uint8_t *out8_t, fp8_cast_stats *stats,
                                  const float *scale, fp8_format format);
    /* attention_backward whose dqkv is also cast (fp8_cast with out_t, of
     * B * T rows), as attention_backward_fp8_cuda: dqkv may be left
     * unwritten (its q part, or all of it), its FP8 copy holding it. NULL
     * where the backend has no such fusion. */
    void (*attention_backward_fp8)(void *dqkv, const void *dout, const void *qkv, const void *out,
                                   const float *lse, int B, int T, int C, int NH, void *dqkv_colsum,
                                   uint8_t *out8, uint8_t *out8_t, fp8_cast_stats *stats,
                                   const float *scale, fp8_format format);
    void (*matmul_forward_fp8)(void *out, const void *bias, int N, int C, int OC,
                               const fp8_linear_operands *q);
    void (*matmul_residual_forward_fp8)(void *out, const void *residual, const void *bias, int N,
                                        int C, int OC, const fp8_linear_operands *q);
    void (*matmul_backward_fp8)(void *dinp, void *dweight, void *dbias, const void *dout,
                                const void *pre, int N, int C, int OC, void *dpre_colsum,
                                const fp8_linear_operands *q);
    /* For an FP8 lm head: classifier_forward_backward (dloss != 0) whose
     * dlogits go into out8 as E5M2 at *scale instead of over the logits,
     * as classifier_forward_backward_fp8_cuda; and the transposed copy of
     * such a byte tensor (rows, cols multiples of 16), as
     * fp8_transpose_cuda. NULL where the backend has none. */
    void (*classifier_forward_backward_fp8)(void *logits, float *losses, const int32_t *targets,
                                            int N, int V, int Vp, float dloss, uint8_t *out8,
                                            const float *scale);
    void (*fp8_transpose)(uint8_t *out_t, const uint8_t *in, int rows, int cols);
} kernel_ops;

extern const kernel_ops ops_cpu;

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <stdbool.h>

#include "kernels/attention.h"
#ifdef __cplusplus
extern "C" {
#endif
/* The CUDA backend (kernels/cuda/ops_cuda.cu): bf16 storage, one compute
 * stream. ops_cuda_init must run first. */
extern const kernel_ops ops_cuda;
/* The CUDA backend's options, fixed at ops_cuda_init and kept in its state
 * (the trainer fills them from the config keys matmul_autotune,
 * attention_hopper and attention_deterministic). */
typedef struct {
    /* true: each new GEMM shape times cuBLASLt's candidate algorithms once
     * and keeps the fastest; false: the heuristic's first (kernels/matmul.h). */
    bool matmul_autotune;
    /* which attention kernels run, and the deterministic backward
     * (kernels/attention.h; attention_cuda_options_supported says whether
     * this device can honour them) */
    attention_cuda_options attention;
} cuda_backend_options;
/* The defaults: autotuned GEMMs, the wgmma attention where it runs, not
 * deterministic. */
cuda_backend_options cuda_backend_defaults(void);
/* Selects the GPU, creates the compute stream, the cuBLASLt handle and its
 * 32 MiB workspace, and keeps a copy of *opt (NULL: the defaults). Once per
 * process: again with the same device and options is a no-op, with others
 * an error. */
void ops_cuda_init(int device, const cuda_backend_options *opt);
/* The stream every ops_cuda call runs on (a cudaStream_t), for the
 * communicator's events and stream waits. */
struct CUstream_st *ops_cuda_stream(void);
#ifdef __cplusplus
}
#endif
#endif

/* Pointer to element `index` of a storage-typed buffer. */
static inline void *ops_at(const kernel_ops *ops, const void *base, size_t index) {
    return (char *)base + index * ops->elem_bytes;
}
#endif
