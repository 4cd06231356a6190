/* Elapsed time and the time left of a run, for the step line: the mean of
 * the recent steps' times, plus the periodic work between steps
 * (evaluations, samples, checkpoints), each amortised over its period from
 * the last time it ran. Wall-clock ms in, seconds out. */
#ifndef GPT2_TRAIN_OBSERVE_ETA_H
#define GPT2_TRAIN_OBSERVE_ETA_H

#define ETA_WINDOW 20 /* recent steps averaged */

typedef enum { ETA_EVAL, ETA_SAMPLE, ETA_CHECKPOINT, ETA_KINDS } eta_kind;

typedef struct {
    double start_ms;
    double step_ms[ETA_WINDOW]; /* ring of the last steps' times */
    int n_steps;                /* steps seen (the ring holds the last ETA_WINDOW) */
    double extra_ms[ETA_KINDS]; /* last duration of each kind of periodic work */
    int every[ETA_KINDS];       /* its period in steps (0: never) */
} eta_clock;

void eta_start(eta_clock *e, double now_ms);
/* One optimizer step took ms. */
void eta_step(eta_clock *e, double ms);
/* Periodic work of one kind, done every `every` steps, took ms. */
void eta_periodic(eta_clock *e, eta_kind kind, double ms, int every);
double eta_elapsed_s(const eta_clock *e, double now_ms);
/* Seconds left for steps_left more steps; < 0 before the first step. */
double eta_left_s(const eta_clock *e, int steps_left);
/* "1:02:03" (hours unbounded) into buf. */
void eta_format(double seconds, char *buf, int len);
#endif
