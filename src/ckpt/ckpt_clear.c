/* Step directories in the way of a resumed (or fresh) run: moved aside,
 * never deleted, so that the run's own saves do not collide with them. */
#include "ckpt/ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fail.h"
#include "io/ckpt_dir.h"

/* Rank 0: moves one step directory aside and says why. */
static void move_one(const char *dir, const char *why, const char *reason) {
    char moved[CKPT_PATH_MAX + 128], err[3 * CKPT_PATH_MAX];
    if (ckpt_move_aside(dir, why, moved, sizeof moved, err, sizeof err) != 0) FAIL("%s", err);
    printf("checkpoint: %s %s: moved aside to %s (not deleted; remove it when you no longer need "
           "it)\n",
           dir, reason, moved);
}

/* Rank 0: the steps the run will save again are those after `step`. An
 * incomplete directory there (an interrupted save renamed by hand, a copy
 * that did not finish) would make that save fail on every retry; a complete
 * one is newer than a checkpoint resumed on purpose (resume=<older step>). */
static void clear_on_root(const char *run_dir, int step, const char *resumed_dir) {
    int *steps;
    const int n = ckpt_list_steps(run_dir, step, &steps);
    bool superseded = false;
    for (int i = 0; i < n; i++) {
        char dir[CKPT_PATH_MAX];
        ckpt_step_dir(dir, sizeof dir, run_dir, steps[i]);
        if (!ckpt_is_complete(dir)) {
            move_one(dir, "incomplete", "has no " CKPT_MARKER " marker (an unfinished save)");
        } else if (steps[i] > step) {
            char why[64];
            ckpt_superseded_suffix(why, sizeof why, step);
            move_one(dir, why, "is newer than the checkpoint this run went back to");
            superseded = true;
        }
    }
    free(steps);
    if (superseded && resumed_dir) ckpt_point_latest(run_dir, resumed_dir);
    fflush(stdout);
}

void ckpt_clear_ahead(const dist_group *job, const char *run_dir, int step,
                      const char *resumed_dir) {
    if (job->rank == 0) clear_on_root(run_dir, step, resumed_dir);
    /* Ranks on other nodes see the directory as rank 0 left it. */
    group_barrier(job);
}
