/* Validation loss: the mean per-token loss of a model over the first
 * eval_batches micro-batches of a validation set, the same windows and the
 * same number for any rank count. Batch k holds validation samples
 * [k * B, (k + 1) * B) in file order, and rank k % world computes it. Each
 * batch's loss sum stays apart until every rank has every sum; then all add
 * them in batch order, so 1, 2 or 3 ranks (or a run resumed on another
 * count, or gpt2_eval on one process) report the same bits for the same
 * weights. */
#ifndef GPT2_EVAL_VAL_LOSS_H
#define GPT2_EVAL_VAL_LOSS_H

#include <stdint.h>

#include "data/loader.h"
#include "dist/group.h"
#include "model/gpt2.h"

/* The batches of B windows an evaluation of eval_batches batches can use
 * with each of the set's n_windows samples read at most once:
 * min(eval_batches, n_windows / B), the same for any rank count; 0 when
 * the set holds fewer than B windows. Callers say when it is less than
 * eval_batches. */
int val_loss_batches(int64_t n_windows, int eval_batches, int B);

/* Collective over the data-parallel group dp, whose ranks share the batches
 * (group_single(): a single process, no MPI). Mean loss per token over
 * eval_batches batches of B sequences of T tokens (at most
 * val_loss_batches of them: no window twice); inputs and targets are host
 * buffers of B * T each. Nothing waits for the device between batches.
 * A read that fails (a shard changed under the run) counts token 0 in its
 * place and leaves its error in val (loader_error), for the caller to end
 * the run on every rank. */
double val_loss_mean(gpt2_model *model, data_loader *val, int eval_batches, int B, int T,
                     const dist_group *dp, int32_t *inputs, int32_t *targets);
#endif
