/* Memory pre-flight on GPUs and on the CPU backend (see preflight.h). */
#include "train/safety/preflight.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fail.h"
#include "base/meminfo.h"
#include "train/safety/memory.h"
#if GPT2_HAVE_CUDA
#include "kernels/cuda_info.h"
#endif

#define GIB 1073741824.0

static bool on_gpu(const config *cfg) { return strcmp(cfg->device, "cuda") == 0; }

size_t preflight_reserve(const config *cfg, int world) {
    if (!on_gpu(cfg)) return (size_t)(0.25 * GIB);
    return (size_t)(1.5 * GIB) + (world > 1 ? (size_t)(1.0 * GIB) : 0);
}

/* The estimate for cfg with another micro_batch and recompute_gelu. */
static size_t estimate_with(const config *cfg, const gpt2_layout *lay, int world, int micro_batch,
                            bool recompute) {
    config c = *cfg;
    c.micro_batch = micro_batch;
    c.recompute_gelu = recompute;
    return memory_estimate_for(&c, lay, world).total;
}

/* The sequences each rank trains on per step: valid micro-batches divide it. */
static int64_t sequences_per_rank(const config *cfg, int world) {
    return cfg->total_batch / ((int64_t)cfg->seq_len * world);
}

/* The largest micro_batch <= below that divides the sequences per rank per
 * step and fits in room; 0 when none. */
static int largest_fitting(const config *cfg, const gpt2_layout *lay, int world, int below,
                           bool recompute, size_t room, size_t *need) {
    const int64_t per_rank = sequences_per_rank(cfg, world);
    for (int mb = below; mb >= 1; mb--) {
        if (per_rank % mb != 0) continue;
        const size_t n =
            estimate_with(cfg, lay, world, mb, recompute) + preflight_reserve(cfg, world);
        if (n <= room) {
            *need = n;
            return mb;
        }
    }
    return 0;
}

preflight_plan preflight_plan_for(const config *cfg, const gpt2_layout *lay, int world,
                                  size_t free_bytes) {
    preflight_plan p;
    memset(&p, 0, sizeof p);
    p.free = free_bytes;
    p.reserve = preflight_reserve(cfg, world);
    p.estimate = estimate_with(cfg, lay, world, cfg->micro_batch, cfg->recompute_gelu);
    p.fits = p.estimate + p.reserve <= free_bytes;
    if (p.fits) {
        size_t need = 0;
        const int larger = largest_fitting(cfg, lay, world, (int)sequences_per_rank(cfg, world),
                                           cfg->recompute_gelu, free_bytes, &need);
        if (larger > cfg->micro_batch) {
            p.larger_micro_batch = larger;
            p.larger_need = need;
        }
        return p;
    }
    p.micro_batch = largest_fitting(cfg, lay, world, cfg->micro_batch - 1, cfg->recompute_gelu,
                                    free_bytes, &p.micro_batch_need);
    if (!cfg->recompute_gelu) {
        p.recompute_need = estimate_with(cfg, lay, world, cfg->micro_batch, true) + p.reserve;
        p.recompute_fits = p.recompute_need <= free_bytes;
        if (!p.recompute_fits)
            p.recompute_micro_batch = largest_fitting(cfg, lay, world, cfg->micro_batch - 1, true,
                                                      free_bytes, &p.recompute_need);
    }
    return p;
}

void preflight_describe(const preflight_plan *p, const config *cfg, int world, int least_rank,
                        char *buf, size_t len) {
    size_t o = 0;
    if (on_gpu(cfg))
        o += snprintf(buf + o, len - o,
                      "memory pre-flight: micro_batch = %d needs about %.2f GiB per GPU (estimate "
                      "%.2f GiB + %.2f GiB reserve for cuBLAS, kernel scratch%s), but the GPU of "
                      "rank %d has %.2f GiB free. ",
                      cfg->micro_batch, (p->estimate + p->reserve) / GIB, p->estimate / GIB,
                      p->reserve / GIB, world > 1 ? " and NCCL" : "", least_rank, p->free / GIB);
    else
        o += snprintf(buf + o, len - o,
                      "memory pre-flight: micro_batch = %d needs about %.2f GiB of RAM per rank "
                      "(estimate %.2f GiB + %.2f GiB reserve for the libraries and kernel "
                      "scratch), but the node of rank %d has %.2f GiB available (MemAvailable) "
                      "for its %d rank(s): %.2f GiB each. ",
                      cfg->micro_batch, (p->estimate + p->reserve) / GIB, p->estimate / GIB,
                      p->reserve / GIB, least_rank, p->node_available / GIB, p->node_ranks,
                      p->free / GIB);
    if (o < len && p->micro_batch > 0)
        o += snprintf(buf + o, len - o,
                      "The largest micro_batch that fits is %d (%.2f GiB; gradient accumulation "
                      "keeps total_batch = %lld). ",
                      p->micro_batch, p->micro_batch_need / GIB, (long long)cfg->total_batch);
    else if (o < len)
        o += snprintf(buf + o, len - o, "No micro_batch fits%s. ",
                      cfg->recompute_gelu ? "" : " as is");
    if (o < len && !cfg->recompute_gelu) {
        if (p->recompute_fits)
            o += snprintf(buf + o, len - o,
                          "recompute_gelu=1 would fit at micro_batch = %d (%.2f GiB). ",
                          cfg->micro_batch, p->recompute_need / GIB);
        else if (p->recompute_micro_batch > 0)
            o += snprintf(buf + o, len - o,
                          "recompute_gelu=1 would not fit at micro_batch = %d; with it the largest "
                          "is %d (%.2f GiB). ",
                          cfg->micro_batch, p->recompute_micro_batch, p->recompute_need / GIB);
        else
            o += snprintf(buf + o, len - o, "recompute_gelu=1 would not fit either. ");
    }
    if (o < len)
        snprintf(buf + o, len - o,
                 "(More %s shrink the optimizer state with zero_stage=1; memory_preflight=false "
                 "skips this check.)",
                 on_gpu(cfg) ? "GPUs" : "nodes");
}

void preflight_describe_larger(const preflight_plan *p, const config *cfg, char *buf, size_t len) {
    if (len == 0) return;
    buf[0] = '\0';
    if (p->larger_micro_batch <= 0) return;
    snprintf(buf, len,
             "memory pre-flight: a larger micro_batch fits too, up to %d (%.2f GiB with the "
             "reserve): the same total_batch = %lld in fewer micro-steps, which the larger models "
             "run faster (docs/gpu-training.md#every-gpt-2-size-on-one-gpu)",
             p->larger_micro_batch, p->larger_need / GIB, (long long)cfg->total_batch);
}

/* This rank's share of memory in bytes: the GPU's free memory, or the
 * node's available RAM over the ranks on the node; -1 when unknown. */
static double my_share(const kernel_ops *ops, const dist_state *dist, double *node_available) {
    *node_available = -1.0;
    if (strcmp(ops->name, "cuda") == 0) {
#if GPT2_HAVE_CUDA
        size_t free_b = 0, total_b = 0;
        if (cuda_memory_info(&free_b, &total_b) == 0) return (double)free_b;
#endif
        return -1.0;
    }
    *node_available = meminfo_available_bytes(PREFLIGHT_TEST_ENV);
    if (*node_available < 0) return -1.0;
    return *node_available / (dist->local_world > 0 ? dist->local_world : 1);
}

void preflight_check(const config *cfg, const gpt2_layout *lay, const dist_state *dist,
                     const kernel_ops *ops) {
    if (!cfg->memory_preflight) return;
    double node_available = -1.0;
    const double mine = my_share(ops, dist, &node_available);
    /* The least share over the ranks, and which rank has it. */
    struct {
        double free;
        int rank;
    } least;
    group_minloc(&dist->job, mine < 0 ? 1e300 : mine, &least.free, &least.rank);
    if (least.free >= 1e300) return;
    /* The node's numbers behind that share, for the message. */
    double node[2] = {node_available, (double)dist->local_world};
    group_bcast(&dist->job, node, sizeof node, least.rank);
    preflight_plan p = preflight_plan_for(cfg, lay, dist->world, (size_t)least.free);
    p.node_available = node[0] > 0 ? (size_t)node[0] : 0;
    p.node_ranks = (int)node[1];
    if (!p.fits) {
        static char msg[2048];
        preflight_describe(&p, cfg, dist->world, least.rank, msg, sizeof msg);
        fail_collective(EXIT_USAGE, "%s", msg);
    }
    if (dist->rank == 0) {
        if (on_gpu(cfg)) {
            printf("memory pre-flight: %.2f GiB estimate + %.2f GiB reserve fits the %.2f GiB "
                   "free (the least over ranks: rank %d)\n",
                   p.estimate / GIB, p.reserve / GIB, p.free / GIB, least.rank);
            char hint[512];
            preflight_describe_larger(&p, cfg, hint, sizeof hint);
            if (hint[0]) printf("%s\n", hint);
        } else
            printf("memory pre-flight: %.2f GiB estimate + %.2f GiB reserve per rank fits the "
                   "%.2f GiB of RAM available to each of the %d rank(s) on the node of rank %d\n",
                   p.estimate / GIB, p.reserve / GIB, p.free / GIB, p.node_ranks, least.rank);
        fflush(stdout);
    }
}
