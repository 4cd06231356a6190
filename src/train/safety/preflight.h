/* Memory pre-flight: before anything of the model is allocated, each rank
 * compares the memory estimate (train/safety/memory.h) plus a reserve with
 * its share of memory. On GPUs the share is its GPU's free memory and the
 * reserve covers what the estimate does not count (cuBLAS, the kernels'
 * scratch, NCCL's buffers: measured 1.4-1.7 GiB over the estimate on one
 * GPU, 0.8 GiB more with NCCL, the CUDA context included). On the CPU
 * backend the share is the node's available RAM (MemAvailable) divided
 * over the ranks on the node, and the reserve covers the libraries (MPI,
 * HDF5, OpenMP), the kernels' per-thread scratch and short-lived host
 * copies. When it does not fit on some rank, every rank exits 2 with both
 * numbers, the largest micro_batch that fits (among those that divide the
 * sequences per rank per step, so the config stays valid), and whether
 * recompute_gelu=1 would fit. When it fits on a GPU and gradient
 * accumulation leaves room for larger micro-batches, rank 0 also names the
 * largest valid micro_batch that fits: the same total_batch in fewer
 * micro-steps, which the larger models run faster (a config sized for
 * 80 GB GPUs leaves room on larger ones). memory_preflight=false skips
 * the check. */
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
    int larger_micro_batch;         /* when it fits: the largest valid one above cfg's that
                                     * fits too; 0: none */
    size_t larger_need;             /* its estimate + reserve */
    size_t node_available;          /* CPU: the node's MemAvailable behind free */
    int node_ranks;                 /* CPU: the ranks on that node sharing it */
} preflight_plan;

/* Tests: MiB of RAM to take as the node's MemAvailable instead of reading
 * /proc/meminfo (the CPU pre-flight without filling the machine). */
#define PREFLIGHT_TEST_ENV "GPT2_TEST_MEM_AVAILABLE_MB"

/* The reserve beyond the estimate on cfg's device for world ranks (on
 * GPUs, NCCL's buffers when > 1). */
size_t preflight_reserve(const config *cfg, int world);
/* The plan for ranks with free_bytes of memory each (no device needed: the
 * tests call it with made-up sizes); node_available and node_ranks are the
 * caller's to fill. */
preflight_plan preflight_plan_for(const config *cfg, const gpt2_layout *lay, int world,
                                  size_t free_bytes);
/* The refusal, as printed: "memory pre-flight: ..." into buf. */
void preflight_describe(const preflight_plan *p, const config *cfg, int world, int least_rank,
                        char *buf, size_t len);
/* The hint for a larger micro_batch, as printed: "memory pre-flight: ..."
 * into buf; empty when the plan has none. */
void preflight_describe_larger(const preflight_plan *p, const config *cfg, char *buf, size_t len);
/* Collective, after backend_select and before the model is created; does
 * nothing with memory_preflight=false or where the memory is unknown. Rank
 * 0 prints one line when the run fits (two with a larger micro_batch's
 * hint, on GPUs); every rank exits 2 when it does not. */
void preflight_check(const config *cfg, const gpt2_layout *lay, const dist_state *dist,
                     const kernel_ops *ops);
#endif
