/* The FP8 scaling state in checkpoints (fp8 = true; model/fp8_layers.h):
 * each rank's in its own shard file, next to its optimizer slice, as the
 * datasets fp8_scale, fp8_amax, fp8_bootstrapped (n tensors each) and
 * fp8_history (n x history) and the attribute fp8_forwards. Ranks scale by
 * their own amaxes, so each keeps its own; a resume on more ranks than
 * wrote the checkpoint gives the new ranks rank 0's. */
#ifndef GPT2_CKPT_CKPT_FP8_H
#define GPT2_CKPT_CKPT_FP8_H

#include <hdf5.h>

#include "ckpt/ckpt.h"
#include "io/ckpt_h5.h"
#include "model/fp8_layers.h"

/* Into an open shard file. */
void ckpt_fp8_write(hid_t file, const char *path, const fp8_layers_state *s);

/* This rank's state from checkpoint dir into c->fp8. A checkpoint without
 * one (saved with fp8 = false), or with another history length, leaves
 * the scales to start afresh, and rank 0 says so; a damaged one fails. */
void ckpt_fp8_load(const ckpt_ctx *c, const char *dir, const ckpt_state *st);
#endif
