/* Muon's kernels (optim/muon.c): momentum, Newton-Schulz orthogonalisation
 * and the update, on a batch of equally shaped matrices of an optimizer
 * shard.
 *
 * Muon (Keller Jordan, 2024; modded-nanogpt, nanochat) updates a weight
 * matrix W (rows x cols, nn.Linear's (out, in)) from its gradient G:
 *   buf = lerp(buf, G, 1 - momentum)           (momentum buffer, fp32)
 *   U   = lerp(G, buf, momentum)               (Nesterov's look-ahead)
 *   X   = U / (|U|_F + 1e-7); 5 times, on the wide orientation (rows <= cols,
 *         else on X^T): A = X X^T; B = b A + c A A; X = a X + B X
 *   W   = W (1 - lr weight_decay) - lr max(1, rows / cols)^0.5 X
 * with torch.lerp(a, b, w) = a + w (b - a) for |w| < 0.5, else
 * b - (b - a)(1 - w). The quintic's coefficients (a, b, c) are
 * modded-nanogpt's and nanochat's: they push every singular value of the
 * normalised X into about [0.7, 1.2] within five iterations (not to 1
 * exactly: a steeper slope at 0 matters more to training than the exact
 * limit). The scale max(1, rows / cols)^0.5 is Keller Jordan's: an
 * orthogonal (rows x cols) X has RMS element 1 / sqrt(max(rows, cols)), so
 * tall matrices (c_fc: 3072 x 768) get a larger step to keep the update's
 * effect per input dimension the same as a square one's.
 *
 * The CPU reference is fp32 throughout; CUDA (kernels/cuda/muon.cu)
 * computes the momentum and the update in fp32 and the iteration in bf16
 * on the tensor cores (cuBLASLt, strided batches of the equally shaped
 * matrices), as the published implementations do. */
#ifndef GPT2_KERNELS_MUON_H
#define GPT2_KERNELS_MUON_H

#include <stddef.h>
#include <stdint.h>

#define MUON_NS_A 3.4445f
#define MUON_NS_B (-4.7750f)
#define MUON_NS_C 2.0315f
#define MUON_NS_STEPS 5
#define MUON_NORM_EPS 1e-7f

/* count equally shaped matrices of a shard: matrix i's elements are
 * shard[offsets[i] .. offsets[i] + rows * cols), row-major. offsets lives in
 * the backend's memory (the CUDA kernels read it). */
typedef struct {
    int rows, cols, count;
    const int64_t *offsets;
} muon_batch;

/* One step's constants: the momentum, and the update's lr (the schedule
 * applied), decoupled weight decay and shape scale. */
typedef struct {
    float momentum, lr, weight_decay, scale;
} muon_hyper;

/* The per-shape update scale: max(1, rows / cols)^0.5. */
float muon_shape_scale(int rows, int cols);
/* FLOPs of the Newton-Schulz iteration of one rows x cols matrix (what the
 * shard map balances over ranks). */
double muon_newton_schulz_flops(int rows, int cols);

/* x (count x rows x cols, matrix i at i rows cols) = U of each matrix from
 * grad * grad_scale, buf updated (both grad and buf indexed by the shard's
 * offsets). grad_scale < 0 (CLIP_SKIP_STEP): nothing changes. */
void muon_momentum_cpu(float *x, float *buf, const float *grad, const muon_batch *b,
                       float grad_scale, float momentum);
/* x's count matrices normalised and orthogonalised in place, fp32;
 * work: muon_orthogonalize_cpu_floats(rows, cols) floats. */
size_t muon_orthogonalize_cpu_floats(int rows, int cols);
void muon_orthogonalize_cpu(float *x, int count, int rows, int cols, float *work);
/* master (indexed by the offsets) = master (1 - lr wd) - lr scale x;
 * grad_scale < 0: nothing changes. */
void muon_apply_cpu(float *master, const float *x, const muon_batch *b, float grad_scale,
                    const muon_hyper *h);

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime_api.h>

#include "kernels/matmul.h"
#ifdef __cplusplus
extern "C" {
#endif
/* CUDA (kernels/cuda/muon.cu): as the CPU functions, with a bf16 gradient
 * and x, *grad_scale in device memory, and muon_apply also writing the new
 * master values to params (bf16, indexed by the offsets). The
 * orthogonalisation's scratch is muon_orthogonalize_cuda_bytes long. */
void muon_momentum_cuda(void *x, float *buf, const void *grad, const muon_batch *b,
                        const float *grad_scale, float momentum, cudaStream_t stream);
size_t muon_orthogonalize_cuda_bytes(int count, int rows, int cols);
void muon_orthogonalize_cuda(void *x, int count, int rows, int cols, void *scratch,
                             const cublaslt_ctx *lt, cudaStream_t stream);
void muon_apply_cuda(void *params, float *master, const void *x, const muon_batch *b,
                     const float *grad_scale, const muon_hyper *h, cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
