/* The training run: model, data, optimizer and the step loop. */
#ifndef GPT2_TRAIN_TRAIN_H
#define GPT2_TRAIN_TRAIN_H

#include "config/config.h"
#include "dist/dist.h"

/* Runs cfg to completion on this rank; returns the process exit code. */
int train_run(const config *cfg, dist_state *dist);
#endif
