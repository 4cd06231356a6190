/* The step line's elapsed time and ETA (train/eta.h): step times that make
 * the answer exact (binary fractions of a second), the window of recent
 * steps, periodic work amortised over its period, and the H:MM:SS text. */
#include <stdio.h>
#include <string.h>

#include "train/observe/eta.h"

static int failures;

static void expect_near(const char *what, double got, double want) {
    const double d = got - want;
    if (d > 1e-9 || d < -1e-9) {
        printf("FAIL %s: %.9g, expected %.9g\n", what, got, want);
        failures++;
    }
}

static void expect_text(double seconds, const char *want) {
    char buf[32];
    eta_format(seconds, buf, sizeof buf);
    if (strcmp(buf, want) != 0) {
        printf("FAIL eta_format(%g): '%s', expected '%s'\n", seconds, buf, want);
        failures++;
    }
}

int main(void) {
    eta_clock e;
    eta_start(&e, 1000.0);
    expect_near("time left before any step", eta_left_s(&e, 10), -1.0);
    expect_near("elapsed", eta_elapsed_s(&e, 2500.0), 1.5);
    for (int i = 0; i < 3; i++) eta_step(&e, 125.0);
    expect_near("3 steps of 125 ms, 8 left", eta_left_s(&e, 8), 1.0);
    /* Only the last ETA_WINDOW steps count: slow early steps drop out. */
    eta_start(&e, 0.0);
    for (int i = 0; i < 5; i++) eta_step(&e, 1000.0);
    for (int i = 0; i < ETA_WINDOW; i++) eta_step(&e, 250.0);
    expect_near("window of recent steps", eta_left_s(&e, 4), 1.0);
    /* Evaluations of 500 ms every 10 steps and checkpoints of 2 s every 100
     * add 50 + 20 ms per step: (250 + 70) ms x 25 steps = 8 s. */
    eta_periodic(&e, ETA_EVAL, 500.0, 10);
    eta_periodic(&e, ETA_CHECKPOINT, 2000.0, 100);
    expect_near("periodic work amortised", eta_left_s(&e, 25), 8.0);
    /* The last duration counts, and a period of 0 never runs. */
    eta_periodic(&e, ETA_EVAL, 1000.0, 10);
    eta_periodic(&e, ETA_SAMPLE, 5000.0, 0);
    expect_near("latest duration, period 0", eta_left_s(&e, 25), (250 + 100 + 20) * 25 / 1e3);
    expect_near("no steps left", eta_left_s(&e, 0), 0.0);
    expect_text(0.0, "0:00:00");
    expect_text(59.6, "0:01:00");
    expect_text(3725.4, "1:02:05");
    expect_text(100000.0, "27:46:40");
    expect_text(-1.0, "-:--:--");
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
