/* The attention dispatcher's view of its kernel families (attention.cu
 * chooses one per call): mma.sync (attention_mma.cu, compute capability 8.0
 * and newer) and wgmma with TMA (attention_wgmma.cu, sm_90a code on compute
 * capability 9.0). Each has a forward and the backward's main kernel for
 * head sizes HS = 64 and 128 (the dispatcher checks HS and runs the
 * backward's passes around the main kernel); in tuning builds each has a
 * table of its other tile shapes (tuning/attention_variants.h). Tensors as
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

// Where a kernel that casts its output also writes it in FP8 (fp8_cast_cuda's
// out, out_t, stats, scale and format): the forward's O, the backward's dqkv.
struct AttnFp8Out {
    uint8_t *out, *out_t;
    fp8_cast_stats *stats;
    const float *scale;
    fp8_format format;
};

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
    // The backward with FP8 output (B * T and T multiples of 64): dqkv's
    // FP8 copies, or NULL. A main kernel that casts dK and dV itself (the
    // warp-specialized one at head size 64) writes their bytes of fp8's
    // outputs and stats instead of dqkv's k and v parts, and sets
    // *fp8_kv_cast, so that the pass after it casts dQ only; the others
    // leave both alone.
    const AttnFp8Out *fp8;
    bool *fp8_kv_cast;
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
// current device runs it (compute capability 9.0); only then may the ones
// below be called.
bool attention_wgmma_supported();
void attention_wgmma_forward(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv, int B, int T,
                             int NH, int HS, cudaStream_t stream);
// The same at head size 64 with T a multiple of 64, out also cast into fp8
// (fp8_cast_cuda of out's B * T rows of NH * 64) by the forward's epilogue.
void attention_wgmma_forward_fp8(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv, int B,
                                 int T, int NH, const AttnFp8Out &fp8, cudaStream_t stream);
void attention_wgmma_backward(const AttnBwdArgs &a, cudaStream_t stream);

// The dispatcher's steps (attention.cu), for what runs a kernel of the
// families' in place of its choice (tuning/attention_variants.cu): the head
// size C / NH, ending the program where the kernels take none such; a
// backward main kernel's arguments, its scratch carved out of workspace
// (attention_backward_workspace_bytes; the column sums' partials only with
// colsum); and the backward around the main kernel `main`: the pass before
// it, it, the dQ conversion after it (wgmma_layout: main is a wgmma kernel,
// whose dQ layout the conversion reads) and, with colsum (not NULL), the
// column sums. With fp8 (not NULL) the conversion is the cast of dqkv that
// fp8_dqkv_cast.cuh describes instead (B * T and T multiples of 64).
int attention_head_size(int C, int NH);
AttnBwdArgs attention_backward_args(void *dqkv, const void *dout, const void *qkv, const float *lse,
                                    int B, int T, int C, int NH, void *workspace,
                                    bool deterministic, bool colsum);
void attention_run_backward(const AttnBwdArgs &a, const void *out, attn_bwd_fn main,
                            bool wgmma_layout, void *colsum, cudaStream_t stream,
                            const AttnFp8Out *fp8 = nullptr);

#endif
