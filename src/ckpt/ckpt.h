/* Checkpoints of a training run across ranks (files: ckpt_dir.h, content:
 * ckpt_h5.h). Every function here is collective over MPI_COMM_WORLD.
 *
 * Save: rank 0 creates step_N.tmp; every rank writes its shard (the slice
 * [lo, hi) of the ZeRO shard map, at both ZeRO stages) and fsyncs it; rank 0
 * gathers the fp32 master weights and writes model.h5; barrier; rank 0 writes
 * the COMPLETE marker, renames the directory to step_N, points `latest` at
 * it, and only then prunes checkpoints beyond keep_last.
 *
 * Load: the marker's file list and sizes, then compatibility with the config
 * (exit 2 naming the key), then each rank reads the master, m and v of its
 * own range from whichever old shards overlap it (hyperslab reads), so a
 * checkpoint written by N ranks resumes on M. Every dataset read is checked
 * against its Fletcher32 checksums. The data position is one global sample
 * counter, so a resume on another rank count re-partitions the same global
 * batches: no sample is skipped or repeated. */
#ifndef GPT2_CKPT_CKPT_H
#define GPT2_CKPT_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "dist/ddp.h"
#include "kernels/ops.h"
#include "model/layout.h"
#include "optim/optimizer.h"

/* Test hook: GPT2_TEST_SAVE_DELAY_MS=N makes every rank sleep N ms after
 * writing its files and before the barrier that completes a save, so that a
 * test can kill the job in the middle of a save. */
#define CKPT_TEST_DELAY_ENV "GPT2_TEST_SAVE_DELAY_MS"

/* What the save and load need of the run. */
typedef struct {
    const config *cfg;
    const char *config_text; /* the resolved config, stored in model.h5 */
    const char *run_dir;
    const gpt2_layout *lay;
    const kernel_ops *ops;
    data_parallel *ddp;
    adamw_state *opt;
    float *host_scratch;   /* lay->n_elements fp32 of host memory, on every rank */
    int64_t train_samples; /* samples in the training set: a resume must see the same data */
} ckpt_ctx;

/* Where the run is: everything besides the model and optimizer state. */
typedef struct {
    int step;                 /* optimizer steps completed */
    int64_t samples_consumed; /* global samples trained on: the data position */
    double lr;                /* of the last step */
} ckpt_progress;

void ckpt_save(const ckpt_ctx *c, const ckpt_progress *p);

/* Which checkpoint this run continues from, per cfg->resume (auto, none or
 * a path): true with its directory in dir, false to start fresh. A resume
 * path that holds no complete checkpoint, or a run directory whose own
 * checkpoints would be mixed with another history, ends every rank with
 * exit code 2. An older checkpoint of run_dir itself may be named: the run
 * goes back to it (ckpt_clear_ahead moves the newer ones aside). */
bool ckpt_resolve_resume(const config *cfg, const char *run_dir, char *dir, size_t len);

/* After the checkpoint loaded (step 0 for a fresh start): moves aside every
 * step directory of run_dir in the way of this run's saves: one without the
 * COMPLETE marker at or past step (to step_N.incomplete), and a complete one
 * past step, newer than a checkpoint resumed on purpose (resume=<older
 * step>: to step_N.superseded_by_step_S, and `latest` then points at
 * resumed_dir).
 * Rank 0 moves and says so; nothing is deleted. */
void ckpt_clear_ahead(const char *run_dir, int step, const char *resumed_dir);

/* Restores the optimizer state of this rank's range, the parameters (from
 * the master weights) and the progress from the checkpoint in dir. */
void ckpt_load(const ckpt_ctx *c, const char *dir, void *params, ckpt_progress *p);
#endif
