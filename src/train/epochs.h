/* The start-up warning for a run that would read its training data many
 * times over (configs/124M.ini on the bundled corpus: thousands of epochs),
 * with where to find data of the right size. */
#ifndef GPT2_TRAIN_EPOCHS_H
#define GPT2_TRAIN_EPOCHS_H

#include "config/config.h"
#include "data/loader.h"

/* Runs of more epochs than this get the warning. */
#define EPOCHS_WARN_ABOVE 10.0

/* Epochs of train that cfg's run reads: max_steps * total_batch tokens over
 * the dataset's n_samples * seq_len. */
double epochs_planned(const config *cfg, const token_dataset *train);

/* Rank 0 prints the warning when epochs_planned exceeds EPOCHS_WARN_ABOVE. */
void epochs_warn(const config *cfg, const token_dataset *train, int rank);
#endif
