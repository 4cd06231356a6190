/* Learning-rate schedule: linear warm-up, then cosine or linear decay to
 * lr * min_lr_frac at max_steps, or constant (llm.c's formulas). */
#ifndef GPT2_OPTIM_SCHEDULE_H
#define GPT2_OPTIM_SCHEDULE_H

#include "config/config.h"

/* Learning rate of the 0-based step. */
double schedule_lr(const config *cfg, int step);
#endif
