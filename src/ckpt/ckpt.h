/* Checkpoints of a training run across ranks (files: ckpt_dir.h, content:
 * ckpt_h5.h). Every function here is collective over the job's group
 * (dist/group.h: every rank); the shards are the data-parallel group's.
 *
 * Save (ckpt_save, or in the background: ckpt_async.h): rank 0 creates
 * step_N.tmp; every rank writes its shard (the slice [lo, hi) of the ZeRO
 * shard map, at both ZeRO stages: the optimizer's arrays by their names,
 * optim/optimizer.h) and fsyncs it; rank 0 gathers the fp32 master weights
 * and writes model.h5; barrier; rank 0 writes the COMPLETE marker, renames
 * the directory to step_N, points `latest` at it, and only then prunes
 * checkpoints beyond keep_last.
 *
 * Load: the marker's file list and sizes, then compatibility with the config
 * (exit 2 naming the key or the optimizer), then each rank reads every
 * array of its own range from whichever old shards overlap it (hyperslab
 * reads), so a checkpoint written by N ranks resumes on M, whatever either
 * shard map (even slices before 2026-12, along whole tensors since). Every dataset read is checked
 * against its checksums (h5_io.h). The data position is one global sample
 * counter, so a resume on another rank count re-partitions the same global
 * batches: no sample is skipped or repeated. */
#ifndef GPT2_CKPT_CKPT_H
#define GPT2_CKPT_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "dist/ddp.h"
#include "dist/group.h"
#include "io/ckpt_dir.h"
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
    const dist_group *job; /* every rank: the protocol's agreements */
    const gpt2_layout *lay;
    const kernel_ops *ops;
    data_parallel *ddp; /* its communicator's group holds the shards */
    optimizer *opt;
    float *host_scratch;      /* lay->n_elements fp32 of host memory, on every rank */
    int64_t train_samples;    /* samples in the training set: a resume must see the same data */
    struct fp8_layers_s *fp8; /* fp8 = true: the scaling state saved with each shard (ckpt_fp8.h) */
} ckpt_ctx;

/* Where the run is: everything besides the model and optimizer state. */
typedef struct {
    int step;                 /* optimizer steps completed */
    int64_t samples_consumed; /* global samples trained on: the data position */
    double lr;                /* of the last step */
} ckpt_progress;

/* What one save cost: for its log line, metrics.jsonl and the time-limit
 * estimate. */
typedef struct {
    int step;
    int64_t bytes;  /* the complete checkpoint's files */
    bool async;     /* written by the background writers */
    double stall_s; /* training waited: the whole save, or the snapshot of an async one */
    double write_s; /* the files written and synced, the slowest rank's */
} ckpt_save_report;

/* A save that training waits for (the protocol above); rank 0 prints its
 * line. *rep is filled on every rank. */
void ckpt_save(const ckpt_ctx *c, const ckpt_progress *p, ckpt_save_report *rep);

/* How a start goes on, decided before the run directory is created or
 * locked (ckpt_plan.c). */
typedef enum {
    CKPT_START_FRESH,   /* step 0 */
    CKPT_START_RESUME,  /* from the checkpoint in dir */
    CKPT_START_FINISHED /* the run in run_dir is done: nothing to do, exit 0 */
} ckpt_start_kind;

typedef struct {
    ckpt_start_kind kind;
    char dir[CKPT_PATH_MAX]; /* RESUME: the checkpoint */
    int step;                /* RESUME: its step; FINISHED: the run's last step */
    int64_t train_samples;   /* RESUME: the checkpoint's training samples (-1: unknown) */
    /* what run_dir held, for ckpt_confirm_plan once the lock is held */
    int newest_step; /* its newest checkpoint's step, -1 for none */
    int has_final;   /* run_dir/model.h5, a finished run's weights */
} ckpt_start_plan;

/* Collective; reads files, writes none. Which checkpoint this run
 * continues from, per cfg->resume (auto, none or a path), and whether the
 * config may continue it: the keys that define the run (model, data,
 * schedule, batch, seed) must be the checkpoint's unless allow_changed
 * names them, and the model shape, seq_len, total_batch and seed never
 * change; rank 0 prints each accepted change. A run directory whose newest
 * checkpoint (or final model.h5 without checkpoints) is of a finished run
 * with this config is FINISHED (rank 0 says so). Every refusal (a changed
 * key, a resume path without a checkpoint, a start that would mix two
 * histories or overwrite another run's final weights) ends every rank with
 * exit code 2 and one message naming each key, both values and the fix. An
 * older checkpoint of run_dir itself may be named: the run goes back to it
 * (ckpt_clear_ahead moves the newer ones aside). */
void ckpt_plan_start(const dist_group *job, const config *cfg, const char *run_dir,
                     ckpt_start_plan *plan);

/* Rank 0 (reads files, writes none): run_dir holds a run (its newest
 * checkpoint, or its final model.h5) from which cfg differs in keys that
 * define a run, set on the command line, that allow_changed does not name:
 * cfg describes another run, a variant of that one (the README's `tiny.ini
 * lr=1e-3 max_steps=500` after the demo). True with a name of its own in
 * name, the current run_name and those settings ("tiny_lr0.001_max_steps500":
 * the same command finds the same directory again), and the keys, comma
 * separated, in keys. False when run_dir holds no run, or cfg could
 * continue it, or the differences come from the file or the defaults. */
bool ckpt_variant_name(const config *cfg, const char *run_dir, char *name, size_t name_len,
                       char *keys, size_t keys_len);

/* Rank 0 decided (status < 0: failed, with the reason in err): every rank
 * learns the outcome, so all stop together with rank 0's message (exit
 * with exit_code); otherwise returns status. Collective. */
int ckpt_agree_with_root(const dist_group *job, int status, const char *err, int exit_code);

/* Collective: a resumed run's training set holds the checkpoint's number of
 * samples (the data order depends on it), or exit code 2. */
void ckpt_check_samples(const ckpt_start_plan *plan, int64_t train_samples);

/* Collective, once the run lock is held: run_dir still holds what the plan
 * saw (another run may have written between the two), or exit code 2. */
void ckpt_confirm_plan(const dist_group *job, const ckpt_start_plan *plan, const char *run_dir);

/* Rank 0: what to do if the checkpoint in dir turns out damaged: the exact
 * resume=<step> of the newest older checkpoint whose files are all there,
 * or the command that moves dir aside. */
void ckpt_fallback_hint(const char *dir, char *hint, size_t len);

/* After the checkpoint loaded (step 0 for a fresh start): moves aside every
 * step directory of run_dir in the way of this run's saves: one without the
 * COMPLETE marker at or past step (to step_N.incomplete), and a complete one
 * past step, newer than a checkpoint resumed on purpose (resume=<older
 * step>: to step_N.superseded_by_step_S, and `latest` then points at
 * resumed_dir).
 * Rank 0 moves and says so; nothing is deleted. */
void ckpt_clear_ahead(const dist_group *job, const char *run_dir, int step,
                      const char *resumed_dir);

/* Restores the optimizer state of this rank's range (every array the
 * optimizer names; a checkpoint of another optimizer is refused, exit 2),
 * the parameters (from the master weights) and the progress from the
 * checkpoint in dir. */
void ckpt_load(const ckpt_ctx *c, const char *dir, void *params, ckpt_progress *p);
#endif
