/* Stopping a run early: signals, the STOP file, the time budget (see
 * run_stop.h). */
#include "train/safety/run_stop.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fail.h"
#include "train/safety/exit_status.h"
#include "train/safety/signals.h"

/* Before the first save is measured: rank 0's share at this rate. */
#define SAVE_BYTES_PER_S 200e6
#define SAVE_FIXED_S 2.0
#define MARGIN_MAX_S 30.0
#define MARGIN_FRACTION 0.1

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double run_stop_parse_slurm_time(const char *text) {
    long days = 0, f[3] = {0, 0, 0};
    int n = 0;
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    if (!isdigit((unsigned char)*p)) return -1;
    const char *dash = strchr(p, '-');
    if (dash) {
        char *end;
        days = strtol(p, &end, 10);
        if (end != dash) return -1;
        p = dash + 1;
    }
    while (n < 3) {
        char *end;
        if (!isdigit((unsigned char)*p)) return -1;
        f[n++] = strtol(p, &end, 10);
        p = end;
        if (*p != ':') break;
        p++;
    }
    while (isspace((unsigned char)*p)) p++;
    if (*p != '\0') return -1;
    /* Fields from the right: seconds, minutes, hours ("MM:SS" has two). */
    long seconds = 0, unit = 1;
    for (int i = n - 1; i >= 0; i--, unit *= 60) seconds += f[i] * unit;
    if (n == 1 && !dash) seconds = f[0] * 60; /* a bare number is minutes, as in --time */
    return (double)(days * 86400 + seconds);
}

/* Seconds left in this Slurm job, -1 when not in a job or the job has no
 * end (the source of the number in source). */
static double slurm_time_left(char *source, size_t len) {
    const char *job = getenv("SLURM_JOB_ID");
    if (!job || !*job || strspn(job, "0123456789_") != strlen(job)) return -1;
    char cmd[128], line[128] = "";
    snprintf(cmd, sizeof cmd, "squeue -h -j %s -o %%L 2>/dev/null", job);
    fflush(stdout); /* the child must not write our buffered output again */
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    if (!fgets(line, sizeof line, p)) line[0] = '\0';
    pclose(p);
    line[strcspn(line, "\n")] = '\0';
    const double left = run_stop_parse_slurm_time(line);
    if (left < 0) {
        printf("time limit: none (Slurm job %s: time left '%s')\n", job, line);
        return -1;
    }
    snprintf(source, len, "the end of Slurm job %s", job);
    return left;
}

/* What a STOP the run cannot remove (errno err from unlink, or from the run
 * directory's access check) is, and the fix, as "WHAT: FIX". */
static void describe_unremovable(const char *path, int err, char *out, size_t len) {
    if (err == EISDIR)
        snprintf(out, len, "it is a directory: remove it (rm -r %s; a STOP must be a file)", path);
    else
        snprintf(out, len, "%s: remove it (rm -f %s) or make the run directory writable",
                 strerror(err), path);
}

/* Collective: rank 0's error text (empty: none) ends every rank with exit 2. */
static void fail_if_any(const run_stop *s, const char *msg) {
    int bad = msg[0] != '\0';
    group_bcast(s->job, &bad, sizeof bad, 0);
    if (bad) fail_collective(EXIT_USAGE, "%s", msg);
}

/* Collective. A STOP that is there before the run starts must be one the run
 * can remove when it stops: a directory named STOP, or one in a run directory
 * it cannot write, would stop this run after its first step, and every run
 * after it (a requeued job, forever). */
static void check_stop_at_start(const run_stop *s, const char *run_dir) {
    char msg[4800] = "";
    struct stat st;
    if (s->rank == 0 && lstat(s->stop_file, &st) == 0) {
        int err = 0;
        if (S_ISDIR(st.st_mode))
            err = EISDIR;
        else if (access(run_dir, W_OK) != 0)
            err = errno;
        if (err) {
            char what[2400];
            describe_unremovable(s->stop_file, err, what, sizeof what);
            snprintf(msg, sizeof msg,
                     "%s cannot be removed by the run, so it would stop this run after its first "
                     "step and every later run the same way; %s, then run the same command again",
                     s->stop_file, what);
        }
    }
    fail_if_any(s, msg);
}

void run_stop_init(run_stop *s, const config *cfg, const char *run_dir, const dist_group *job,
                   double checkpoint_bytes) {
    memset(s, 0, sizeof *s);
    s->job = job;
    s->rank = job->rank;
    const int rank = job->rank;
    snprintf(s->stop_file, sizeof s->stop_file, "%s/%s", run_dir, RUN_STOP_FILE);
    check_stop_at_start(s, run_dir);
    s->save_s = checkpoint_bytes / SAVE_BYTES_PER_S + SAVE_FIXED_S;
    if (rank != 0) return; /* rank 0 decides; the others follow through run_stop_agree */
    const double now = wall_now();
    double budget = -1;
    if (cfg->time_limit_min > 0) {
        budget = cfg->time_limit_min * 60.0;
        snprintf(s->deadline_source, sizeof s->deadline_source, "time_limit_min = %g",
                 cfg->time_limit_min);
    } else if (cfg->time_limit_min == 0) {
        budget = slurm_time_left(s->deadline_source, sizeof s->deadline_source);
    }
    if (budget < 0) return;
    s->budget_s = budget;
    s->deadline = now + budget;
    time_t end = (time_t)s->deadline;
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&end, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    printf("time limit: %s, %s (%.1f min from now): the run saves and exits %d while the next "
           "step and a save still fit\n",
           s->deadline_source, when, budget / 60.0, EXIT_PREEMPTED);
    fflush(stdout);
}

void run_stop_note_step(run_stop *s, double ms) {
    s->recent_step_s[s->n_steps++ % RUN_STOP_RECENT] = ms / 1e3;
}

void run_stop_note_save(run_stop *s, double seconds) {
    if (!s->save_measured || seconds > s->save_s) s->save_s = seconds;
    s->save_measured = true;
}

void run_stop_note_eval(run_stop *s, double ms) { s->eval_s = ms / 1e3; }

/* Rank 0: would going on past the step now running overrun the budget? */
static bool out_of_time(run_stop *s, bool eval_next) {
    if (s->deadline <= 0) return false;
    double step = 0.0;
    const int n = s->n_steps < RUN_STOP_RECENT ? s->n_steps : RUN_STOP_RECENT;
    for (int i = 0; i < n; i++)
        if (s->recent_step_s[i] > step) step = s->recent_step_s[i];
    double margin = MARGIN_FRACTION * s->budget_s;
    if (margin > MARGIN_MAX_S) margin = MARGIN_MAX_S;
    /* Going on: the rest of this step, an evaluation, the next step, then
     * still a save before the deadline. */
    s->need_s = 2.0 * step + (eval_next ? s->eval_s : 0.0) + s->save_s + margin;
    s->left_s = s->deadline - wall_now();
    return s->left_s < s->need_s;
}

int run_stop_agree(run_stop *s, bool eval_next, bool data_failed) {
    int local = (signals_received() ? STOP_SIGNAL : 0) | (data_failed ? STOP_DATA : 0);
    if (s->rank == 0) {
        if (access(s->stop_file, F_OK) == 0) local |= STOP_FILE;
        if (out_of_time(s, eval_next)) local |= STOP_TIME_LIMIT;
    }
    group_allreduce_int(s->job, &local, 1, GROUP_BOR);
    return local;
}

void run_stop_report(run_stop *s, int reasons, int step) {
    char unremovable[4800] = "";
    char why[1024] = "";
    size_t o = 0;
    if (s->rank == 0) {
        if (reasons & STOP_SIGNAL)
            o += snprintf(why + o, sizeof why - o,
                          "a pre-emption signal (SIGTERM, SIGUSR1, SIGINT or SIGHUP)");
        if ((reasons & STOP_FILE) && o < sizeof why) {
            const int err = unlink(s->stop_file) == 0 ? 0 : errno;
            if (err && err != ENOENT) {
                char what[2400];
                describe_unremovable(s->stop_file, err, what, sizeof what);
                snprintf(unremovable, sizeof unremovable,
                         "%s stopped the run after step %d (checkpoint saved) but cannot be "
                         "removed, so it would stop every later run after its first step; %s, "
                         "then run the same command again to continue",
                         s->stop_file, step, what);
            }
            o += snprintf(why + o, sizeof why - o, "%sthe STOP file (%s, now removed)",
                          o ? " and " : "", s->stop_file);
        }
        if ((reasons & STOP_TIME_LIMIT) && o < sizeof why)
            o += snprintf(why + o, sizeof why - o,
                          "%sthe time limit (%s: %.0f s left, the next step and a save need "
                          "about %.0f s)",
                          o ? " and " : "", s->deadline_source, s->left_s, s->need_s);
    }
    /* Not exit 3: a scheduler would requeue the run into the same stop. */
    if (reasons & STOP_FILE) fail_if_any(s, unremovable);
    if (s->rank != 0) return;
    printf("stopped by %s after step %d: checkpoint saved, exit code %d%s\n", why, step,
           EXIT_PREEMPTED,
           exit_status_plain_mpirun()
               ? " (mpirun reports it below as a process that \"returned a non-zero exit code\": "
                 "this clean stop, not a crash; the same command continues the run)"
               : "");
    fflush(stdout);
    /* The code for the launch scripts now, not only as the process ends: a
     * signalled mpirun kills its ranks a second after it asks them to stop,
     * and the teardown after the save may not fit in that second. */
    exit_status_record(0, EXIT_PREEMPTED);
}
