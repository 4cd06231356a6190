/* AdamW with decoupled weight decay (Loshchilov & Hutter, as torch.optim.AdamW). */
#ifndef GPT2_KERNELS_ADAMW_H
#define GPT2_KERNELS_ADAMW_H
#include <stddef.h>
#include <stdint.h>

/* Weight decay is chosen per run of ADAMW_DECAY_CHUNK elements: one flag
 * byte per chunk (1: decay, 0: none), so that one launch covers a whole
 * shard of many tensors. Tensors start on LAYOUT_ALIGN (a multiple of it)
 * and shards on ZERO_ALIGN, so no chunk holds two tensors. */
#define ADAMW_DECAY_CHUNK 128
/* A chunk flag that leaves the chunk alone: tensors another optimizer
 * updates (Muon's matrices, kernels/muon.h) within a shard AdamW covers. */
#define ADAMW_CHUNK_SKIP 2

/* One step's constants. */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    int t; /* the 1-based step */
} adamw_hyper;

/* For n elements: g = grad * grad_scale (the clip factor);
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * param -= lr * (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + weight_decay * param).
 * A negative grad_scale (CLIP_SKIP_STEP, a step whose gradient norm or loss
 * is not finite) returns at once: nothing changes. */
void adamw_update_cpu(float *param, const float *grad, float *m, float *v, size_t n,
                      float grad_scale, const adamw_hyper *h);

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
/* CUDA (src/kernels/cuda/adamw.cu): the same update with fp32 master, m and
 * v, a bf16 gradient, the clip factor read from device memory (*grad_scale),
 * and the new master value also written to params (bf16, rounded to nearest
 * even; skipped when NULL), in one launch over the whole range: element i
 * decays when decay_chunks[i / ADAMW_DECAY_CHUNK] is nonzero (device
 * memory; NULL: every element decays), and is left as it is (params
 * too) where that flag is ADAMW_CHUNK_SKIP. Every operation rounds as the CPU
 * reference's does (no fused multiply-adds), so master, m and v match
 * adamw_update_cpu bit for bit given the same inputs. */
void adamw_update_cuda(void *params, float *master, const void *grad, float *m, float *v, size_t n,
                       const uint8_t *decay_chunks, const float *grad_scale, const adamw_hyper *h,
                       cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
