/* Elapsed time and time left (see eta.h). */
#include "train/observe/eta.h"

#include <stdio.h>
#include <string.h>

void eta_start(eta_clock *e, double now_ms) {
    memset(e, 0, sizeof *e);
    e->start_ms = now_ms;
}

void eta_step(eta_clock *e, double ms) { e->step_ms[e->n_steps++ % ETA_WINDOW] = ms; }

void eta_periodic(eta_clock *e, eta_kind kind, double ms, int every) {
    e->extra_ms[kind] = ms;
    e->every[kind] = every;
}

double eta_elapsed_s(const eta_clock *e, double now_ms) { return (now_ms - e->start_ms) / 1e3; }

double eta_left_s(const eta_clock *e, int steps_left) {
    if (e->n_steps == 0) return -1.0;
    const int n = e->n_steps < ETA_WINDOW ? e->n_steps : ETA_WINDOW;
    double per_step = 0.0;
    for (int i = 0; i < n; i++) per_step += e->step_ms[i];
    per_step /= n;
    for (int k = 0; k < ETA_KINDS; k++)
        if (e->every[k] > 0) per_step += e->extra_ms[k] / e->every[k];
    return steps_left * per_step / 1e3;
}

void eta_format(double seconds, char *buf, int len) {
    if (seconds < 0) {
        snprintf(buf, (size_t)len, "-:--:--");
        return;
    }
    const long long s = (long long)(seconds + 0.5);
    snprintf(buf, (size_t)len, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
}
