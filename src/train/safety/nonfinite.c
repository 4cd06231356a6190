/* The non-finite guard's host side (see nonfinite.h). */
#include "train/safety/nonfinite.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/fail.h"

void nonfinite_init(nonfinite_guard *g, int max_bad_steps) {
    *g = (nonfinite_guard){.max_in_a_row = max_bad_steps};
    const char *hook = getenv(NONFINITE_TEST_ENV);
    if (!hook || !*hook) return;
    char *end;
    long first = strtol(hook, &end, 10), last = first;
    if (*end == '-' && end > hook) last = strtol(end + 1, &end, 10);
    if (*end != '\0' || first < 1 || last < first || last > INT_MAX)
        fail_collective(EXIT_USAGE, "%s=%s: expected a step N or steps N-M (1-based, N <= M)",
                        NONFINITE_TEST_ENV, hook);
    g->poison_first = (int)first;
    g->poison_last = (int)last;
}

bool nonfinite_test_poison(const nonfinite_guard *g, int step, int rank) {
    return rank == 0 && g->poison_first > 0 && step >= g->poison_first && step <= g->poison_last;
}

bool nonfinite_step_skipped(nonfinite_guard *g, optimizer *opt) {
    float factor = 0.0f;
    opt->ops->download(&factor, opt->grad_scale, sizeof factor);
    if (factor >= 0.0f) {
        g->in_a_row = 0;
        return false;
    }
    opt->step--; /* the update count (AdamW's t) counts applied updates, as torch's does */
    g->in_a_row++;
    g->total++;
    return true;
}

bool nonfinite_give_up(const nonfinite_guard *g) { return g->in_a_row >= g->max_in_a_row; }
