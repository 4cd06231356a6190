/* The attention kernels' tuning variants, run by name, for bench_attention
 * and test_attention_cuda: the tile shapes measured against the production
 * ones, and the wgmma kernels' cp.async fallbacks (production runs those
 * only where no TMA tensor map can be made), each in place of the kernel
 * the dispatcher would choose. Defined only in tuning builds (CMake
 * -DGPT2_ATTN_TUNING=ON, which compiles this folder's attention_*.cu and
 * defines GPT2_ATTN_TUNING for what links room_kernels); tensors and
 * workspace as in kernels/attention.h. */
#ifndef GPT2_KERNELS_CUDA_TUNING_ATTENTION_TUNING_H
#define GPT2_KERNELS_CUDA_TUNING_ATTENTION_TUNING_H

#include <stdbool.h>

#include "kernels/attention.h"

#ifdef __cplusplus
extern "C" {
#endif
typedef struct {
    const char *name;   /* e.g. "wgmma_fwd64_tma3" */
    const char *family; /* as attention_cuda_kernels names it */
    int head_size;      /* the one head size it takes */
    bool backward;      /* the backward's main kernel (else a forward) */
    const char *what;   /* how it differs from the production kernel */
} attention_cuda_variant;
int attention_cuda_variant_count(void);
/* Variant i (0 <= i < attention_cuda_variant_count()), else NULL. */
const attention_cuda_variant *attention_cuda_variant_info(int i);
/* attention_forward_cuda with the named forward variant; ends the program
 * on an unknown name, another head size, or a wgmma variant where those
 * kernels do not run. */
void attention_forward_cuda_variant(const char *name, void *out, float *lse, const void *qkv, int B,
                                    int T, int C, int NH, cudaStream_t stream);
/* attention_backward_cuda (not deterministic) with the named variant as the
 * main kernel; the passes around it stay. Ends the program as above. */
void attention_backward_cuda_variant(const char *name, void *dqkv, const void *dout,
                                     const void *qkv, const void *out, const float *lse, int B,
                                     int T, int C, int NH, void *dqkv_colsum, void *workspace,
                                     cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
