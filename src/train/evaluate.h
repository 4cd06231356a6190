/* The validation loss of a run: the same windows, and the same number, for
 * any rank count. eval_batches counts micro-batches of the whole job: batch
 * k holds validation samples [k * micro_batch, (k + 1) * micro_batch) in
 * file order, and rank k % world computes it. Each batch's loss sum stays
 * apart until every rank has every sum; then all add them in batch order,
 * so 1, 2 or 3 ranks (or a run resumed on another count) report the same
 * bits for the same weights. */
#ifndef GPT2_TRAIN_EVALUATE_H
#define GPT2_TRAIN_EVALUATE_H

#include <stdint.h>

#include "data/loader.h"
#include "model/gpt2.h"

/* Collective. Mean loss per token over eval_batches batches of the
 * validation loader; inputs and targets are micro_batch * T scratch. Nothing
 * waits for the device between batches. */
double evaluate_loss(gpt2_model *model, data_loader *val, int eval_batches, int micro_batch,
                     int seq_len, int rank, int world, int32_t *inputs, int32_t *targets);
#endif
