/* Validation loss: the mean per-token loss of a model over the first batches
 * of a validation set (file order), one rank's share of them. The trainer
 * sums the shares over ranks; gpt2_eval runs it as a single rank. */
#ifndef GPT2_EVAL_VAL_LOSS_H
#define GPT2_EVAL_VAL_LOSS_H

#include <stdint.h>

#include "data/loader.h"
#include "model/gpt2.h"

/* Mean loss over n_batches micro-batches of B sequences of the model's T
 * tokens; rank r of world takes the r-th micro-batch of every group of
 * world, so ranks read disjoint sequences (n_batches * world batches in
 * all). inputs and targets are host buffers of B * T each. */
double val_loss_mean(gpt2_model *model, data_loader *val, int n_batches, int B, int T, int rank,
                     int world, int32_t *inputs, int32_t *targets);
#endif
