/* The tuning variants' tables, one per kernel family
 * (attention_mma_variants.cu, attention_wgmma_variants.cu), which
 * attention_variants.cu joins into the one list of attention_tuning.h.
 * CUDA C++ only. */
#ifndef GPT2_KERNELS_CUDA_TUNING_ATTENTION_VARIANTS_H
#define GPT2_KERNELS_CUDA_TUNING_ATTENTION_VARIANTS_H

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/tuning/attention_tuning.h"

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
