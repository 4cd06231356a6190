/* The one clock for durations: monotonic, so that a step's time, a
 * watchdog's deadline or an ETA never jumps with the wall clock. */
#ifndef GPT2_BASE_CLOCK_H
#define GPT2_BASE_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Milliseconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double clock_ms(void);
/* The same in seconds. */
double clock_s(void);

#ifdef __cplusplus
}
#endif
#endif
