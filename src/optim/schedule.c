/* Learning-rate schedule (see schedule.h). */
#include "optim/schedule.h"

#include <math.h>
#include <string.h>

double schedule_lr(const config *cfg, int step) {
    const double lr = cfg->lr, lr_min = cfg->lr * cfg->min_lr_frac;
    if (step < cfg->warmup_steps) return lr * (step + 1) / cfg->warmup_steps;
    if (strcmp(cfg->lr_schedule, "constant") == 0) return lr;
    if (strcmp(cfg->lr_schedule, "wsd") == 0) {
        /* Stable until the last `decay` steps, then linear: the step after
         * the last stable one already decays, the last step of the run is
         * at lr_min (the same end as the linear schedule's). */
        const int decay = config_wsd_decay_steps(cfg), start = cfg->max_steps - decay;
        if (step < start || decay == 0) return lr;
        double ratio = (double)(step - start + 1) / decay;
        if (ratio > 1.0) ratio = 1.0;
        return lr_min + (1.0 - ratio) * (lr - lr_min);
    }
    int span = cfg->max_steps - cfg->warmup_steps;
    double ratio = span > 0 ? (double)(step - cfg->warmup_steps) / span : 1.0;
    if (ratio > 1.0) ratio = 1.0;
    double coeff =
        strcmp(cfg->lr_schedule, "linear") == 0 ? 1.0 - ratio : 0.5 * (1.0 + cos(M_PI * ratio));
    return lr_min + coeff * (lr - lr_min);
}
