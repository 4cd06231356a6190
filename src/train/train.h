/* The training run: model, data, optimizer and the step loop. */
#ifndef GPT2_TRAIN_TRAIN_H
#define GPT2_TRAIN_TRAIN_H

#include "dist/dist.h"
#include "config/config.h"

/* Runs cfg to completion on this rank; returns the process exit code. */
int train_run(const config *cfg, dist_state *dist);
#endif
