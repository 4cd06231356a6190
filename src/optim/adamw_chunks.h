/* AdamW's chunk flags (kernels/adamw.h) for a shard, shared by the
 * optimizer kinds that run AdamW on some of their tensors (adamw.c,
 * muon.c). */
#ifndef GPT2_OPTIM_ADAMW_CHUNKS_H
#define GPT2_OPTIM_ADAMW_CHUNKS_H

#include <stdint.h>

#include "kernels/ops.h"
#include "model/layout.h"

/* On the backend: one flag per ADAMW_DECAY_CHUNK elements of the shard
 * [lo, hi), flag_of(t) for each of tensor t's chunks (0 no decay, 1 decay,
 * ADAMW_CHUNK_SKIP another optimizer's); 0 in the gaps between tensors.
 * Released with ops->release. */
uint8_t *adamw_chunk_flags(const gpt2_layout *lay, const kernel_ops *ops, size_t lo, size_t hi,
                           uint8_t (*flag_of)(const param_tensor *t));
#endif
