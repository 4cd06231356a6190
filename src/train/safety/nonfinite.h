/* The non-finite guard, host side. On the device a step whose loss or
 * global gradient norm is NaN or Inf gets the clip factor CLIP_SKIP_STEP
 * (kernels/norm.h) and AdamW changes nothing, on every rank alike (the
 * factor comes from the norm summed over ranks). Once the step is done the
 * host reads that factor (one float, after the step's synchronize: nothing
 * waits inside the step), takes the step back from AdamW's count, counts
 * the skip, and gives up after max_bad_steps skipped steps in a row. The
 * data loader still advances: the batch that broke is not retried.
 *
 * Test hook: GPT2_TEST_NAN_STEP=N (or N-M) poisons rank 0's gradients at
 * step N (steps N..M, 1-based, as logged) by scaling its loss gradient by
 * NaN. */
#ifndef GPT2_TRAIN_SAFETY_NONFINITE_H
#define GPT2_TRAIN_SAFETY_NONFINITE_H

#include <stdbool.h>

#include "kernels/ops.h"
#include "optim/optimizer.h"

#define NONFINITE_TEST_ENV "GPT2_TEST_NAN_STEP"

typedef struct {
    int max_in_a_row;              /* max_bad_steps */
    int in_a_row, total;           /* skipped steps: the current streak, the run's */
    int poison_first, poison_last; /* the test hook's steps; 0: none */
} nonfinite_guard;

/* Reads the test hook (a malformed value ends every rank with exit 2). */
void nonfinite_init(nonfinite_guard *g, int max_bad_steps);
/* Should this rank poison its gradients at step (1-based)? */
bool nonfinite_test_poison(const nonfinite_guard *g, int step, int rank);
/* After the step is done: true when it was skipped (then opt->step is taken
 * back and the skip counted); a good step ends a streak. */
bool nonfinite_step_skipped(nonfinite_guard *g, optimizer *opt);
/* max_bad_steps skipped steps in a row. */
bool nonfinite_give_up(const nonfinite_guard *g);
#endif
