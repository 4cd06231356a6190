/* Checkpoints written in the background (checkpoint_async): at a save,
 * every rank copies what it saves (its shard of every optimizer array; rank 0 also
 * the full fp32 master gathered from the ranks, and the run state) into
 * host buffers allocated once, and training goes on while a writer thread
 * per rank writes and syncs the files into step_N.tmp. The save is
 * published (ckpt.h's marker, rename, `latest`, pruning) only when every
 * rank's writer is done, which the ranks agree on at a step boundary
 * (ckpt_saver_poll) or when the next save, a stop or the end of the run
 * waits for it. At most one save is in flight. A crash or kill during a
 * background write leaves step_N.tmp without the marker: `latest` still
 * names the previous checkpoint, and the next start removes the partial one.
 * Rank 0 removes the checkpoints beyond keep_last after a publication in a
 * thread of its own too (removing gigabytes takes seconds); the next
 * publication and the end of the run wait for it.
 *
 * HDF5 is used by one thread at a time: the writer while a save is in
 * flight, the main thread otherwise (the trainer reads or writes no HDF5
 * file during training; ckpt_saver_wait hands it back before the final
 * weights are written). A writer's error (a full disk) does not end its
 * process: it is caught (fail_catch_set) and every rank exits 1 with it at
 * the next agreement, the previous checkpoint intact. */
#ifndef GPT2_CKPT_CKPT_ASYNC_H
#define GPT2_CKPT_CKPT_ASYNC_H

#include <stdbool.h>
#include <stddef.h>

#include "ckpt/ckpt.h"
#include "dist/dist.h"

/* Tests: MiB of RAM to take as the node's MemAvailable when deciding
 * whether the snapshot buffers fit (a small node without filling this one). */
#define CKPT_ASYNC_TEST_MEM_ENV "GPT2_TEST_SNAPSHOT_MEM_MB"

typedef struct ckpt_saver ckpt_saver;

/* Called on every rank when a background save is published (bytes: rank
 * 0's count; 0 elsewhere). */
typedef void (*ckpt_saved_fn)(void *arg, const ckpt_save_report *rep);

/* The snapshot buffers of a rank whose shard holds `shard` elements of
 * n_elements: rank 0 holds the full master and its shard of the kind's
 * other arrays, every other rank its shard of every array. */
size_t ckpt_async_rank_bytes(const optimizer_kind *kind, size_t n_elements, size_t shard, int rank);

/* Collective, before the run directory is claimed: whether saves go to the
 * background: cfg->checkpoint_async auto on the CUDA backend, true on any,
 * and only with checkpoint_every > 0 (a stop's lone save waits anyway).
 * The buffers must fit every node's available RAM with 10% to spare: where
 * they do not, auto says so (rank 0) and saves wait, and true ends every
 * rank with exit 2 naming both sizes and the fix. */
bool ckpt_async_wanted(const config *cfg, const kernel_ops *ops, const dist_state *dist,
                       const gpt2_layout *lay);

/* Collective, once the run's state is loaded (ckpt_async_wanted said yes):
 * the saver with its buffers, allocated once; NULL when a rank could not
 * allocate them (rank 0 says so; with checkpoint_async = true: exit 2). */
ckpt_saver *ckpt_saver_create(const ckpt_ctx *c, ckpt_saved_fn on_saved, void *arg);

/* Collective: waits for the save in flight (publishing it), then copies
 * the state of progress p into the buffers and starts the writers. The
 * save's stall is both: the wait and the copy. */
void ckpt_saver_start(ckpt_saver *s, const ckpt_progress *p);

/* Collective, once per step: when every rank's writer is done, the save is
 * published (rank 0 prints its line) and reported to on_saved. Nothing
 * when no save is in flight. */
void ckpt_saver_poll(ckpt_saver *s);

/* Collective: the save in flight, if any, finished and published. */
void ckpt_saver_wait(ckpt_saver *s);

/* Waits for the writer (no publishing) and frees the buffers. */
void ckpt_saver_free(ckpt_saver *s);
#endif
