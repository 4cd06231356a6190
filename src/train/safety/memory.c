/* Memory estimate per rank (see memory.h). */
#include "train/safety/memory.h"

#include <stdio.h>
#include <string.h>

#include "dist/buckets.h"
#include "dist/copy_engines.h"
#include "dist/zero.h"
#include "model/fp8_layers.h"
#include "model/gpt2.h"
#include "optim/optimizer.h"

static size_t counted_bytes;
static char counting_arena[64]; /* every counted allocation points here; none is touched */

static void *count_alloc(size_t bytes) {
    counted_bytes += bytes;
    return counting_arena;
}
static void count_release(void *p) { (void)p; }
static void count_zero(void *p, size_t bytes) { (void)p, (void)bytes; }

/* The tensors the map splits over ranks, by name ("wte.weight (ranks
 * 5-7)"), or "none". */
static void describe_split(const gpt2_layout *lay, const shard_map *map, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < lay->n_tensors && o < len; i++) {
        const param_tensor *t = &lay->tensors[i];
        const int first = zero_shard_owner(map, t->offset);
        const int last = zero_shard_owner(map, t->offset + t->numel - 1);
        if (first != last)
            o += (size_t)snprintf(out + o, len - o, "%s%s (ranks %d-%d)", o ? ", " : "", t->name,
                                  first, last);
    }
    if (o == 0) snprintf(out, len, "none");
    if (o >= len && len > 4) snprintf(out + len - 4, 4, "..."); /* cut: more than fit */
}

memory_estimate memory_estimate_for(const config *cfg, const gpt2_layout *lay, int world) {
    memory_estimate m;
    memset(&m, 0, sizeof m);
    m.world = world;
    m.zero_stage = cfg->zero_stage;
    m.elem_bytes = strcmp(cfg->device, "cuda") == 0 ? 2 : 4;
    const size_t n = lay->n_elements;
    m.params = n * m.elem_bytes;
    m.grads = n * m.elem_bytes;
    const optimizer_kind *kind = optimizer_kind_for(cfg);
    shard_map map;
    optimizer_shard_map(kind, lay, world, &map);
    /* The largest shard decides: the ranks run the same model otherwise. */
    size_t largest = 0, lo = 0, hi = 0;
    for (int r = 0; r < world; r++)
        if (map.hi[r] - map.lo[r] > largest || r == 0) {
            largest = map.hi[r] - map.lo[r];
            lo = map.lo[r], hi = map.hi[r];
            m.shard_largest_rank = r;
        }
    m.shard_largest = largest;
    m.shard_mean = n / (size_t)world;
    describe_split(lay, &map, m.split_tensors, sizeof m.split_tensors);
    const size_t shard0 = map.hi[0] - map.lo[0];
    zero_shard_map_free(&map);
    m.optimizer_what = kind->state_description;
    m.optimizer_full = optimizer_state_bytes(kind, lay, 0, n, m.elem_bytes);
    if (cfg->zero_stage == 1 && world > 1) {
        m.shard_grads = largest * m.elem_bytes;
        m.optimizer = optimizer_state_bytes(kind, lay, lo, hi, m.elem_bytes);
    } else {
        m.optimizer = m.optimizer_full;
    }

    /* The model's own allocations, on a backend that only counts. */
    kernel_ops counting = ops_cpu;
    counting.elem_bytes = m.elem_bytes;
    /* the logits buffer (and the FP8 lm head's) in the CUDA backend's chunks */
    if (m.elem_bytes == 2) counting.logits_chunk_bytes = OPS_CUDA_LOGITS_CHUNK_BYTES;
    counting.alloc = count_alloc;
    counting.release = count_release;
    counting.zero = count_zero;
    counted_bytes = 0;
    gpt2_model model;
    const gpt2_options opt = {.recompute_gelu = cfg->recompute_gelu,
                              .fp8_lm_head = cfg->fp8 && cfg->fp8_lm_head};
    gpt2_create_with(&model, lay, &counting, cfg->micro_batch, cfg->seq_len, &opt);
    const int classifier_rows = model.classifier_chunk;
    gpt2_free(&model);
    m.activations = counted_bytes - m.params - m.grads;
    /* counted apart: the counting backend has no FP8 kernels to create them with */
    if (cfg->fp8) {
        m.fp8 = fp8_layers_bytes(lay, cfg->micro_batch * cfg->seq_len, cfg->fp8_amax_history,
                                 cfg->recompute_gelu, !cfg->fp8_attn_proj);
        if (cfg->fp8_lm_head) m.fp8 += fp8_lm_head_bytes(lay, classifier_rows);
        m.activations -= gpt2_fp8_saved_bytes(lay, m.elem_bytes, cfg->micro_batch, cfg->seq_len,
                                              cfg->recompute_gelu, !cfg->fp8_attn_proj);
    }
    /* The copy engines' inboxes: two bucket slots per other rank (dist/copy_engines.h). */
    const bool copy_engines =
        copy_engines_planned(comm_transport_named(cfg->comm_transport), world);
    if (m.elem_bytes == 2 && cfg->zero_stage == 1 && world > 1 && copy_engines)
        m.comm_inbox = copy_engines_mailbox_bytes(
            world, buckets_elements_per_bucket(cfg->bucket_mb, m.elem_bytes));
    if (m.elem_bytes == sizeof(float)) m.host_copy = n * sizeof(float); /* run.c's host_params */
    /* Rank 0's snapshot: the full master and its shard of the other arrays. */
    if (cfg->checkpoint_every > 0 && strcmp(cfg->checkpoint_async, "false") != 0)
        m.host_snapshot = (n + (size_t)kind->n_state * shard0) * sizeof(float);
    m.total = m.params + m.grads + m.shard_grads + m.optimizer + m.activations + m.fp8 +
              m.host_copy + m.comm_inbox;
    /* On the CPU backend the buffers share the RAM the pre-flight checks
     * (auto saves wait there: only true allocates them). */
    if (m.elem_bytes == sizeof(float) && strcmp(cfg->checkpoint_async, "true") == 0)
        m.total += m.host_snapshot;
    return m;
}

static double gib(size_t bytes) { return (double)bytes / 1073741824.0; }

void memory_print(FILE *out, const memory_estimate *m, const config *cfg, size_t n_params) {
    fprintf(out, "memory per rank (estimate): %d rank(s), zero_stage %d, %s storage, %zu params\n",
            m->world, m->zero_stage, m->elem_bytes == 2 ? "bf16" : "fp32", n_params);
    fprintf(out, "  parameters       %9.3f GiB\n", gib(m->params));
    fprintf(out, "  gradients        %9.3f GiB", gib(m->grads));
    if (m->shard_grads) fprintf(out, " + %.3f GiB reduced shard", gib(m->shard_grads));
    fprintf(out, "\n  optimizer state  %9.3f GiB (%zu bytes: %s)", gib(m->optimizer), m->optimizer,
            m->optimizer_what);
    if (m->optimizer < m->optimizer_full)
        fprintf(out, ": ZeRO-1 saves %.3f GiB against zero_stage 0",
                gib(m->optimizer_full - m->optimizer - m->shard_grads));
    if (m->zero_stage == 1 && m->world > 1)
        fprintf(out,
                "\n  optimizer shards: largest %zu elements (rank %d), mean %zu: %.3fx the mean; "
                "split over ranks: %s",
                m->shard_largest, m->shard_largest_rank, m->shard_mean,
                (double)m->shard_largest / (double)m->shard_mean, m->split_tensors);
    fprintf(out, "\n  activations      %9.3f GiB (micro-batch %d x %d)\n", gib(m->activations),
            cfg->micro_batch, cfg->seq_len);
    if (m->fp8)
        fprintf(out, "  fp8 copies       %9.3f GiB (the linear layers' FP8 operands, fp8 = true)\n",
                gib(m->fp8));
    if (m->comm_inbox)
        fprintf(out,
                "  reduce inboxes   %9.3f GiB (comm_transport %s: two buckets per other rank)\n",
                gib(m->comm_inbox), cfg->comm_transport);
    if (m->host_copy)
        fprintf(out, "  host weights     %9.3f GiB (fp32 copy: initial weights, save scratch)\n",
                gib(m->host_copy));
    if (m->host_snapshot)
        fprintf(out,
                "  host snapshot    %9.3f GiB (rank 0's buffers for background checkpoints%s)\n",
                gib(m->host_snapshot),
                m->elem_bytes == 2 ? ": pinned host RAM, not in the total"
                                   : (strcmp(cfg->checkpoint_async, "true") == 0
                                          ? ""
                                          : ": only with checkpoint_async = true on the CPU"));
    fprintf(out, "  total            %9.3f GiB\n", gib(m->total));
}

void memory_print_line(FILE *out, const memory_estimate *m) {
    fprintf(out,
            "memory: about %.2f GiB per rank (estimate: weights, gradients, optimizer state, "
            "activations; dry_run=true itemises it)\n",
            gib(m->total));
}
