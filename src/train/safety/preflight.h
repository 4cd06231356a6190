/* Memory pre-flight on GPUs: before anything of the model is allocated,
 * each rank compares the memory estimate (train/memory.h) plus a reserve
 * for what the estimate does not count (cuBLAS, the kernels' scratch, NCCL's
 * buffers: measured 1.4-1.7 GiB over the estimate on one GPU, 0.8 GiB more
 * with NCCL, the CUDA context included) with its GPU's free memory. When it
 * does not fit on some rank, every rank exits 2 with both numbers, the
 * largest micro_batch that fits (among those that divide the sequences per
 * rank per step, so the config stays valid), and whether recompute_gelu=1
 * would fit. memory_preflight=false skips the check. */
#ifndef GPT2_TRAIN_SAFETY_PREFLIGHT_H
#define GPT2_TRAIN_SAFETY_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "dist/dist.h"
#include "kernels/ops.h"
#include "model/layout.h"

typedef struct {
    size_t estimate, reserve, free; /* bytes; free: the least over the ranks */
    bool fits;                      /* estimate + reserve <= free */
    int micro_batch;                /* the largest valid one that fits; 0: none */
    size_t micro_batch_need;        /* its estimate + reserve */
    bool recompute_fits;            /* recompute_gelu=1 at cfg's micro_batch fits */
    size_t recompute_need;          /* its estimate + reserve (0: already on) */
    int recompute_micro_batch;      /* with recompute_gelu=1: the largest that fits */
} preflight_plan;

/* The reserve beyond the estimate for world ranks (NCCL's buffers when > 1). */
size_t preflight_reserve(int world);
/* The plan for ranks with free_bytes of device memory each (no device
 * needed: the tests call it with made-up sizes). */
preflight_plan preflight_plan_for(const config *cfg, const gpt2_layout *lay, int world,
                                  size_t free_bytes);
/* The refusal, as printed: "memory pre-flight: ..." into buf. */
void preflight_describe(const preflight_plan *p, const config *cfg, int world, int least_rank,
                        char *buf, size_t len);
/* Collective, after backend_select and before the model is created; does
 * nothing on the CPU backend or with memory_preflight=false. Rank 0 prints
 * one line when the run fits; every rank exits 2 when it does not. */
void preflight_check(const config *cfg, const gpt2_layout *lay, const dist_state *dist,
                     const kernel_ops *ops);
#endif
