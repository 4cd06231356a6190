/* One optimizer step of a run, queued on the device (step.c). */
#ifndef GPT2_TRAIN_STEP_H
#define GPT2_TRAIN_STEP_H

#include <stdbool.h>

#include "train/run.h"

/* Queues one optimizer step on the global batch of samples
 * [r->progress.samples_consumed, + total_batch / seq_len) at r->lr.
 * Nothing in it waits for the device: the gradient norm, its sum over ranks,
 * the clip factor and (want_loss) the loss summed over ranks stay on the
 * device, the loss for gpt2_loss_sum_read once the step is done. A NaN/Inf
 * loss or norm makes the clip factor CLIP_SKIP_STEP: the optimizer then
 * changes nothing (see nonfinite.h). poison: the GPT2_TEST_NAN_STEP hook (NaN
 * gradients on this rank). */
void train_step(run_state *r, bool want_loss, bool poison);
#endif
