/* Learning-rate schedule: linear warm-up, then cosine or linear decay to
 * lr * min_lr_frac at max_steps, or constant (llm.c's formulas), or
 * warm-up, stable, decay (wsd): lr until the last decay_frac of the run,
 * then linear to lr * min_lr_frac at the last step. A wsd run's lr before
 * its decay does not depend on max_steps: a finished run continues from a
 * checkpoint of its stable part with a larger max_steps
 * (allow_changed=max_steps) as if it had been planned longer. */
#ifndef GPT2_OPTIM_SCHEDULE_H
#define GPT2_OPTIM_SCHEDULE_H

#include "config/config.h"

/* Learning rate of the 0-based step. */
double schedule_lr(const config *cfg, int step);
#endif
