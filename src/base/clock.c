/* Monotonic time (see clock.h). */
#include "base/clock.h"

#include <time.h>

double clock_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double clock_s(void) { return clock_ms() * 1e-3; }
