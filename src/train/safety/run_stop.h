/* When a run stops before max_steps, saving a checkpoint and exiting 3
 * (EXIT_PREEMPTED), and how the ranks agree on it. Three reasons:
 *  - a stop signal (SIGTERM/SIGUSR1, train/signals.h) on any rank;
 *  - a file named STOP in the run directory (rank 0 looks for it every
 *    step; removed once the run has stopped and saved): a stop that needs
 *    no signal, for launchers that do not forward one. A STOP the run
 *    cannot remove (a directory, a run directory it cannot write) is an
 *    error, exit 2: at the start before any step, else once the stop's
 *    checkpoint is saved; exit 3 would have a scheduler requeue the run into
 *    the same stop, forever;
 *  - the wall-clock budget: time_limit_min, or under Slurm the job's end
 *    time (squeue's time left) when time_limit_min is 0 and the job has
 *    one. Rank 0 stops the run while the next step, an evaluation due
 *    before it, a checkpoint save and a margin (10% of the budget, at most
 *    30 s) still fit: step times are the longest of the last few, the save
 *    time the longest measured (before the first save, its size at 200 MB/s
 *    plus 2 s).
 * Every step all ranks combine their reasons in one all-reduce, queued on
 * the host while the device runs the step, so every rank stops after the
 * same step. */
#ifndef GPT2_TRAIN_SAFETY_RUN_STOP_H
#define GPT2_TRAIN_SAFETY_RUN_STOP_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "dist/group.h"

#define RUN_STOP_FILE "STOP"

/* STOP_DATA: a rank's batch read failed (train.c ends the run, exit 1). */
enum { STOP_SIGNAL = 1, STOP_FILE = 2, STOP_TIME_LIMIT = 4, STOP_DATA = 8 };
enum { RUN_STOP_RECENT = 8 };

typedef struct {
    const dist_group *job; /* the ranks that agree on a stop */
    int rank;
    char stop_file[2100];
    double deadline; /* CLOCK_REALTIME seconds; 0: no time limit */
    double budget_s; /* deadline - start */
    char deadline_source[160];
    double recent_step_s[RUN_STOP_RECENT];
    int n_steps;
    double save_s; /* the longest save measured, or the estimate */
    bool save_measured;
    double eval_s;         /* the last evaluation's time */
    double left_s, need_s; /* at the decision that stopped the run */
} run_stop;

/* Every rank of job (collective; job outlives s). Ends every rank with exit 2 when the run
 * directory holds a STOP the run could not remove. Rank 0 reads the budget (time_limit_min, or the Slurm job's
 * end time through squeue) and prints it; the others follow it through
 * run_stop_agree. checkpoint_bytes:
 * rank 0's share of a checkpoint, for the save time before one is measured. */
void run_stop_init(run_stop *s, const config *cfg, const char *run_dir, const dist_group *job,
                   double checkpoint_bytes);
void run_stop_note_step(run_stop *s, double ms);
void run_stop_note_save(run_stop *s, double seconds);
void run_stop_note_eval(run_stop *s, double ms);
/* Collective: the reasons (STOP_* bits) to stop after the step now running,
 * the same on every rank; 0 to go on. eval_next: an evaluation runs before
 * the next step; data_failed: this rank's batch read failed (STOP_DATA on
 * every rank). */
int run_stop_agree(run_stop *s, bool eval_next, bool data_failed);
/* Every rank (collective), once the stop's checkpoint is saved: rank 0 says
 * why the run stopped after step and removes the STOP file that stopped
 * it; one it cannot remove ends every rank with exit 2, naming it. */
void run_stop_report(run_stop *s, int reasons, int step);

/* "1-02:03:04", "02:03:04", "03:04" (squeue's time left) in seconds; -1
 * when it is no duration ("UNLIMITED", "NOT_SET", "INVALID", ""). */
double run_stop_parse_slurm_time(const char *text);
#endif
