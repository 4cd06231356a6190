/* Memory per rank, estimated before anything is allocated: parameters,
 * gradients, optimizer state (what the optimizer says it keeps for the
 * largest shard of its shard map, optim/optimizer.h) and activations (and
 * on the CPU backend the host copy of the weights), and what ZeRO-1 saves.
 * The
 * activation figure comes from running the model's own allocation code
 * against a backend that only counts bytes, so it cannot drift from it. */
#ifndef GPT2_TRAIN_SAFETY_MEMORY_H
#define GPT2_TRAIN_SAFETY_MEMORY_H

#include <stddef.h>
#include <stdio.h>

#include "config/config.h"
#include "model/layout.h"

typedef struct {
    int world, zero_stage;
    size_t elem_bytes;          /* storage of params/grads/activations on the device */
    size_t params, grads;       /* bytes */
    size_t shard_grads;         /* ZeRO-1 reduced-gradient shard */
    size_t optimizer;           /* the optimizer's state for the largest shard */
    size_t optimizer_full;      /* the same at zero_stage 0, for comparison */
    const char *optimizer_what; /* what that state is ("fp32 master, m, v") */
    /* The shard map's balance (ZeRO-1, several ranks): the largest shard
     * (elements) and its rank, the mean, and the tensors split over ranks
     * (element-wise optimizers split those larger than a fair share). */
    size_t shard_largest, shard_mean;
    int shard_largest_rank;
    char split_tensors[256];
    size_t activations;   /* model buffers for one micro-batch */
    size_t comm_inbox;    /* comm_transport copy_engines or auto: the inboxes peers copy
                              their gradients into (dist/copy_engines.h) */
    size_t fp8;           /* fp8 = true: the FP8 copies and scaling state (model/fp8_layers.h) */
    size_t host_copy;     /* CPU backend: the fp32 weights the run keeps on the host
                              (initial weights, then checkpoint scratch); 0 on GPUs,
                              where it is not device memory */
    size_t host_snapshot; /* background checkpoints (checkpoint_async not false, with
                              checkpoint_every): rank 0's snapshot buffers in host RAM
                              (ckpt/ckpt_async.h), in total only on the CPU backend */
    size_t total;
} memory_estimate;

/* For the rank with the largest shard of a world of `world` ranks (every
 * rank is checked against it). */
memory_estimate memory_estimate_for(const config *cfg, const gpt2_layout *lay, int world);
/* Itemised, for dry_run: what each part of the total is. */
void memory_print(FILE *out, const memory_estimate *m, const config *cfg, size_t n_params);
/* The total in one line, for the start-up summary. */
void memory_print_line(FILE *out, const memory_estimate *m);
#endif
