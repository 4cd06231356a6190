/* What a checkpoint's HDF5 files hold (ckpt_dir.h has where they are).
 *
 * shard_RRRRR.h5, one per rank: one fp32 dataset of hi - lo elements per
 * array of the optimizer's state (optim/optimizer.h: master, then its own,
 * for AdamW m and v) over the flat-buffer slice [lo, hi) of the ZeRO shard
 * map of the saving world, written by both ZeRO stages, and attributes
 * format_version, rank, world_size, step, lo, hi, n_elements, optimizer_step;
 * with fp8 = true also the rank's FP8 scaling state (ckpt/ckpt_fp8.h).
 *
 * model.h5, rank 0: a weights file (weights_h5.h: every tensor by its GPT-2
 * name, the model sizes, the resolved config text) plus the run state as
 * attributes: step, samples_consumed, optimizer (its name: the shards'
 * arrays are its; files written before 2026-12 lack it and are AdamW's),
 * optimizer_step, lr, world_size, the shard map (shard_lo, shard_hi), every
 * rank's loader position, and what a run must keep to continue (seq_len,
 * total_batch, seed, train_samples).
 * Every dataset carries CRC32C checksums (h5_io.h; Fletcher32 per chunk in
 * files written before 2026-11-24, still read and checked). */
#ifndef GPT2_IO_CKPT_H5_H
#define GPT2_IO_CKPT_H5_H

#include <hdf5.h>
#include <stdint.h>

#include "model/layout.h"

#define CKPT_FORMAT_VERSION 1

typedef struct {
    int64_t format_version;
    int64_t step;             /* optimizer steps completed */
    int64_t samples_consumed; /* global data position: samples the run has trained on */
    int64_t optimizer_step;   /* the optimizer's update count */
    int64_t world;            /* ranks that wrote the checkpoint */
    int64_t n_elements;       /* flat buffer length */
    int64_t seq_len, micro_batch, total_batch, zero_stage, train_samples;
    uint64_t seed;                /* with samples_consumed, all random state there is */
    double lr;                    /* the learning rate of the last step */
    int64_t *shard_lo, *shard_hi; /* world entries: the shard map */
    int64_t *loader_position;     /* world entries: each rank's first sample of the next step */
    char *config_text;            /* the resolved config */
    char optimizer[32];           /* the optimizer whose state the shards hold ("adamw") */
    int n_layer, n_embd, n_head, vocab_size, padded_vocab_size, block_size;
} ckpt_state;

typedef struct {
    int64_t format_version, rank, world, step, lo, hi, n_elements, optimizer_step;
} ckpt_shard_header;

/* Creates a shard file with h's attributes; the caller writes the
 * optimizer's arrays (h5_write_f32) and closes it. */
hid_t ckpt_h5_shard_create(const char *path, const ckpt_shard_header *h);
/* What shard k's attributes must be, by the checkpoint's rank-0 state. */
ckpt_shard_header ckpt_shard_expected(const ckpt_state *st, int k);
/* Opens a shard file and checks its attributes against what the
 * checkpoint's rank-0 file says it must be; fails naming the file. */
hid_t ckpt_h5_shard_open(const char *path, const ckpt_shard_header *expected);

/* Writes the rank-0 file: weights (from the full fp32 master) and state. */
void ckpt_h5_model_write(const char *path, const gpt2_layout *lay, const float *host_master,
                         const ckpt_state *st);
/* Reads the state attributes of a rank-0 file (arrays and text malloc'd). */
void ckpt_h5_state_read(const char *path, ckpt_state *st);
void ckpt_state_free(ckpt_state *st);
#endif
