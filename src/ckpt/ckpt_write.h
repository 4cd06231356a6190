/* The pieces of a save that the waiting save (ckpt_save.c) and the
 * background one (ckpt_async.c) share: the run state of model.h5, the shard
 * header, the test delay, and rank 0's publication of a finished save. */
#ifndef GPT2_CKPT_CKPT_WRITE_H
#define GPT2_CKPT_CKPT_WRITE_H

#include "ckpt/ckpt.h"
#include "io/ckpt_h5.h"

/* model.h5's run state for progress p at the optimizer's update count
 * opt_step (arrays malloc'd: ckpt_write_state_free). */
void ckpt_write_state(const ckpt_ctx *c, const ckpt_progress *p, int64_t opt_step, ckpt_state *st);
void ckpt_write_state_free(ckpt_state *st);

/* The attributes of this rank's shard file. */
ckpt_shard_header ckpt_write_shard_header(const ckpt_ctx *c, int step, int64_t opt_step);

/* Collective: the full fp32 master weights into rank 0's full
 * (n_elements): every rank's slice of n elements (ZeRO-1; rank 0's own
 * must already be in place at its lo), or rank 0's own optimizer state. */
void ckpt_write_gather_master(const ckpt_ctx *c, const float *slice, size_t n, float *full);

/* Rank 0: model.h5 in dir from the full fp32 master, synced to disk. */
void ckpt_write_model(const ckpt_ctx *c, const char *dir, const float *master,
                      const ckpt_state *st);

/* The CKPT_TEST_DELAY_ENV sleep, after a rank's files and before it says
 * they are done. */
void ckpt_write_test_delay(void);

/* Rank 0, once every rank's files of step are durable in tmp: the marker,
 * the rename to final, `latest`. Returns the checkpoint's bytes. The
 * caller then prunes beyond keep_last (ckpt_prune). */
int64_t ckpt_write_publish(const ckpt_ctx *c, const char *tmp, const char *final, int step);

/* Rank 0: the save's line on stdout. */
void ckpt_write_print(const ckpt_save_report *rep, const char *final);
#endif
