/* Learning-rate schedule (see schedule.h). */
#include "optim/schedule.h"

#include <math.h>
#include <string.h>

double schedule_lr(const config *cfg, int step) {
    const double lr = cfg->lr, lr_min = cfg->lr * cfg->min_lr_frac;
    if (step < cfg->warmup_steps) return lr * (step + 1) / cfg->warmup_steps;
    if (strcmp(cfg->lr_schedule, "constant") == 0) return lr;
    int span = cfg->max_steps - cfg->warmup_steps;
    double ratio = span > 0 ? (double)(step - cfg->warmup_steps) / span : 1.0;
    if (ratio > 1.0) ratio = 1.0;
    double coeff =
        strcmp(cfg->lr_schedule, "linear") == 0 ? 1.0 - ratio : 0.5 * (1.0 + cos(M_PI * ratio));
    return lr_min + coeff * (lr - lr_min);
}
