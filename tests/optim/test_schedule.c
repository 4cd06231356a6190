/* The learning-rate schedules (optim/schedule.h) against their formulas,
 * at the steps where they change: the warm-up's first and last steps, the
 * first step after it, the middle and the last step of cosine and linear,
 * constant throughout; wsd stable until the last decay_frac of the run,
 * its first decay step one decay step below lr, its last step at
 * lr * min_lr_frac, and its lr before the decay the same for a run
 * planned longer (so a finished run continues from a stable checkpoint
 * with a larger max_steps). Values with a short exact binary form make
 * most comparisons exact. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "optim/schedule.h"

static int failures;

static void expect(const char *what, double got, double want) {
    const int ok = fabs(got - want) <= 1e-15 * fabs(want);
    if (!ok) failures++;
    printf("%-52s %.17g %s %.17g%s\n", what, got, ok ? "=" : "!=", want, ok ? "" : "  FAIL");
}

static config make(const char *schedule, int warmup, int max_steps, double decay_frac) {
    config c;
    memset(&c, 0, sizeof c);
    c.lr = 1.0, c.min_lr_frac = 0.125, c.warmup_steps = warmup, c.max_steps = max_steps;
    c.decay_frac = decay_frac;
    snprintf(c.lr_schedule, sizeof c.lr_schedule, "%s", schedule);
    return c;
}

int main(void) {
    const double lo = 0.125;
    config c = make("cosine", 4, 104, 0.2);
    expect("cosine: warm-up step 0 = lr / 4", schedule_lr(&c, 0), 0.25);
    expect("cosine: warm-up step 3 = lr", schedule_lr(&c, 3), 1.0);
    expect("cosine: step 4 (ratio 0) = lr", schedule_lr(&c, 4), 1.0);
    expect("cosine: step 54 (ratio 1/2) = midway", schedule_lr(&c, 54), lo + 0.5 * (1 - lo));
    expect("cosine: step 104 (ratio 1) = lr * min_lr_frac", schedule_lr(&c, 104), lo);
    c = make("linear", 4, 104, 0.2);
    expect("linear: step 29 (ratio 1/4)", schedule_lr(&c, 29), lo + 0.75 * (1 - lo));
    c = make("constant", 4, 104, 0.2);
    expect("constant: step 103 = lr", schedule_lr(&c, 103), 1.0);

    /* wsd over 100 steps, 20 decaying (80..99), 4 of warm-up. */
    c = make("wsd", 4, 100, 0.2);
    expect("wsd: warm-up step 1 = lr / 2", schedule_lr(&c, 1), 0.5);
    expect("wsd: step 4 = lr", schedule_lr(&c, 4), 1.0);
    expect("wsd: step 79, the last stable one = lr", schedule_lr(&c, 79), 1.0);
    expect("wsd: step 80 = lr - (lr - min) / 20", schedule_lr(&c, 80), 1.0 - (1 - lo) / 20);
    expect("wsd: step 89 = midway", schedule_lr(&c, 89), lo + 0.5 * (1 - lo));
    expect("wsd: step 99, the last = lr * min_lr_frac", schedule_lr(&c, 99), lo);
    c.decay_frac = 0.0;
    expect("wsd, decay_frac 0: step 99 = lr", schedule_lr(&c, 99), 1.0);
    /* Planned longer: the same lr wherever the short run is stable. */
    config short_run = make("wsd", 4, 100, 0.2), long_run = make("wsd", 4, 250, 0.2);
    int same = 1;
    for (int s = 0; s < 80; s++) same &= schedule_lr(&short_run, s) == schedule_lr(&long_run, s);
    expect("wsd: steps 0-79 the same for max_steps 100 and 250", same, 1);
    expect("wsd: max_steps 250 decays over the last 50 steps", schedule_lr(&long_run, 199), 1.0);
    expect("wsd: max_steps 250, step 200", schedule_lr(&long_run, 200), 1.0 - (1 - lo) / 50);
    expect("config_wsd_decay_steps rounds 0.2 x 103 = 20.6 to 21",
           config_wsd_decay_steps(&(config){.decay_frac = 0.2, .max_steps = 103}), 21);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
