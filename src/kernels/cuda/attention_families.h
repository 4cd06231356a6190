/* The attention dispatcher's view of its kernel families (attention.cu
 * chooses one per call): mma.sync (attention_mma.cu, compute capability 8.0
 * and newer) and wgmma with TMA (attention_wgmma.cu, sm_90a code on compute
 * capability 9.0). Each has a forward and the backward's main kernel for
 * head sizes HS = 64 and 128 (the dispatcher checks HS and runs the
 * backward's passes around the main kernel); in tuning builds
 * (GPT2_ATTN_TUNING) each has a table of its other tile shapes. Tensors as
 * in kernels/attention.h; all launches asynchronous on `stream`. CUDA C++
 * only. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_FAMILIES_H
#define GPT2_KERNELS_CUDA_ATTENTION_FAMILIES_H

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/attention.h"

// The names attention_cuda_kernels gives the families.
#define ATTN_FAMILY_MMA "mma.sync (sm_80)"
#define ATTN_FAMILY_WGMMA "wgmma (sm_90a)"

// A backward main kernel's arguments. Before it runs, the dispatcher has
// written dsum and zeroed dq_counters; after, it converts dq_acc into
// dqkv's q part. The main kernel writes dqkv's k and v parts and sums dQ
// (unscaled) into dq_acc, in its family's layout (attention_tiles.cuh):
// zeroing it first where it adds every contribution, or (the warp-
// specialized wgmma kernel) storing the first contribution to each slice.
struct AttnBwdArgs {
    __nv_bfloat16 *dqkv;             // (B, T, 3C)
    float *dq_acc;                   // fp32 dQ accumulator, B * T * C
    float *dsum;                     // D = rowsum(dout * out), (B, NH, T)
    const __nv_bfloat16 *dout, *qkv; // (B, T, C), (B, T, 3C)
    const float *lse;                // the forward's, (B, NH, T)
    int B, T, NH, HS;
    // B * NH * ceil(T / 64) * 4 zeroed counters (dq_counters_bytes), and
    // dq_order: NULL, or the same counters for the deterministic mode (wgmma
    // only: dQ added in key-block order)
    unsigned *dq_counters, *dq_order;
    // NULL, or dqkv's column sums per chunk of positions (attention_tiles.cuh,
    // SUM_ROWS), which the dispatcher's passes write (the main kernels
    // leave them alone)
    float *colsum_part;
    // the warp-specialized backward's table of its schedule (int pairs,
    // ws_table_entries of attention_block_order.h), which it writes itself
    // where its blocks' rows outgrow their shared memory
    int *ws_table;
};

// dq_acc zeroed (the dispatcher's, for the main kernels that add every
// contribution into it).
void attention_zero_dq_acc(const AttnBwdArgs &a, cudaStream_t stream);
// A forward of one tile shape (its head size fixed), and a backward main kernel.
typedef void (*attn_fwd_fn)(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv, int B, int T,
                            int NH, cudaStream_t stream);
typedef void (*attn_bwd_fn)(const AttnBwdArgs &a, cudaStream_t stream);

// mma.sync (attention_mma.cu): runs on every GPU the build targets.
void attention_mma_forward(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv, int B, int T,
                           int NH, int HS, cudaStream_t stream);
void attention_mma_backward(const AttnBwdArgs &a, cudaStream_t stream);

// wgmma (attention_wgmma.cu): true when this build has sm_90a code and the
// current device runs it (compute capability 9.0); only then may the two
// below be called.
bool attention_wgmma_supported();
void attention_wgmma_forward(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv, int B, int T,
                             int NH, int HS, cudaStream_t stream);
void attention_wgmma_backward(const AttnBwdArgs &a, cudaStream_t stream);

#ifdef GPT2_ATTN_TUNING
// A tile shape production does not run (or its TMA-less fallback), for the
// benchmark and the test: forward set for a forward, backward for a main
// kernel of the backward.
struct AttnVariant {
    attention_cuda_variant info;
    bool wgmma; // a wgmma kernel (its dQ layout; runs only where the family does)
    attn_fwd_fn forward;
    attn_bwd_fn backward;
};
extern const AttnVariant attention_mma_variants[];
extern const int attention_mma_variant_count;
extern const AttnVariant attention_wgmma_variants[];
extern const int attention_wgmma_variant_count;
#endif

#endif
