/* Checkpoint directories on the file system (see ckpt_dir.h). */
#include "io/ckpt_dir.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fail.h"
#include "base/files.h"

#define MARKER_HEADER "gpt2_ddp checkpoint v1"

void ckpt_step_dir(char *out, size_t len, const char *run_dir, int step) {
    snprintf(out, len, "%s/step_%08d", run_dir, step);
}

void ckpt_tmp_dir(char *out, size_t len, const char *run_dir, int step) {
    snprintf(out, len, "%s/step_%08d.tmp", run_dir, step);
}

void ckpt_shard_path(char *out, size_t len, const char *dir, int rank) {
    snprintf(out, len, "%s/shard_%05d.h5", dir, rank);
}

void ckpt_model_path(char *out, size_t len, const char *dir) {
    snprintf(out, len, "%s/%s", dir, CKPT_MODEL_FILE);
}

/* The step of a directory name "step_NNNNNNNN" followed by exactly suffix,
 * or -1. */
static int parse_step_name(const char *name, const char *suffix) {
    if (strncmp(name, "step_", 5) != 0) return -1;
    int step = 0;
    for (int i = 5; i < 13; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        step = step * 10 + (name[i] - '0');
    }
    return strcmp(name + 13, suffix) == 0 ? step : -1;
}

int ckpt_split_step_dir(const char *dir, char *run_dir, size_t len) {
    char path[CKPT_PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (size_t n = strlen(path); n > 1 && path[n - 1] == '/'; n--) path[n - 1] = '\0';
    char *slash = strrchr(path, '/');
    const int step = parse_step_name(slash ? slash + 1 : path, "");
    if (slash == path)
        slash[1] = '\0'; /* "/step_N": the root */
    else if (slash)
        *slash = '\0';
    snprintf(run_dir, len, "%s", slash ? path : ".");
    return step;
}

bool ckpt_is_complete(const char *dir) {
    char marker[CKPT_PATH_MAX + 16];
    snprintf(marker, sizeof marker, "%s/%s", dir, CKPT_MARKER);
    struct stat st;
    return stat(marker, &st) == 0 && S_ISREG(st.st_mode);
}

/* Steps of run_dir's step directories from step `from` on, complete ones
 * only or all; returns the count (*steps malloc'd, NULL when none), newest
 * first or oldest first. */
static int list_steps(const char *run_dir, int from, bool complete_only, bool newest_first,
                      int **steps) {
    *steps = NULL;
    DIR *d = opendir(run_dir);
    if (!d) return 0;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        int step = parse_step_name(e->d_name, "");
        char path[CKPT_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", run_dir, e->d_name);
        if (step < from || (complete_only && !ckpt_is_complete(path))) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            int *grown = realloc(*steps, (size_t)cap * sizeof(int));
            if (!grown) FAIL("out of memory listing %s", run_dir);
            *steps = grown;
        }
        (*steps)[n++] = step;
    }
    closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort: a handful of entries */
        for (int j = i; j > 0 && ((*steps)[j] > (*steps)[j - 1]) == newest_first; j--) {
            int t = (*steps)[j];
            (*steps)[j] = (*steps)[j - 1];
            (*steps)[j - 1] = t;
        }
    return n;
}

/* Steps of the complete checkpoints of run_dir, newest first. */
static int list_complete(const char *run_dir, int **steps) {
    return list_steps(run_dir, 0, true, true, steps);
}

int ckpt_list_steps(const char *run_dir, int from, int **steps) {
    return list_steps(run_dir, from, false, false, steps);
}

int ckpt_find_older_good(const char *run_dir, int before, char *out, size_t len) {
    int *steps;
    int n = list_complete(run_dir, &steps), found = -1;
    for (int i = 0; i < n && found < 0; i++) {
        ckpt_step_dir(out, len, run_dir, steps[i]);
        if (steps[i] < before && ckpt_marker_check(out, NULL, NULL, 0) == 0) found = steps[i];
    }
    free(steps);
    return found;
}

int ckpt_find_newest(const char *run_dir, char *out, size_t len) {
    int *steps;
    int n = list_complete(run_dir, &steps);
    int newest = n > 0 ? steps[0] : -1;
    free(steps);
    if (newest >= 0) ckpt_step_dir(out, len, run_dir, newest);
    return newest;
}

/* ------------------------------------------------------------------ marker */

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void ckpt_marker_write(const char *dir, int step, int world) {
    DIR *d = opendir(dir);
    if (!d) FAIL("cannot list %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, CKPT_MARKER) == 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names) FAIL("out of memory listing %s", dir);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    char path[CKPT_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, CKPT_MARKER);
    char why[CKPT_PATH_MAX + 400];
    FILE *f = fopen_regular(path, "w", OPEN_REPLACE, why, sizeof why);
    if (!f) FAIL("%s", why);
    fprintf(f, "%s\nstep %d\nworld %d\n", MARKER_HEADER, step, world);
    for (size_t i = 0; i < n; i++) {
        char file[CKPT_PATH_MAX + 300];
        snprintf(file, sizeof file, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(file, &st) != 0) FAIL("cannot stat %s: %s", file, strerror(errno));
        fprintf(f, "file %s %lld\n", names[i], (long long)st.st_size);
        free(names[i]);
    }
    free(names);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0)
        FAIL("cannot write %s: %s", path, strerror(errno));
}

/* One "file NAME SIZE" line: the file must exist with that size. */
static int check_listed_file(const char *dir, const char *name, long long size, char *err,
                             size_t err_len) {
    char path[CKPT_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) != 0)
        return set_error(err, err_len, "%s: missing (%s lists it): %s", path, CKPT_MARKER,
                         strerror(errno));
    if ((long long)st.st_size != size)
        return set_error(err, err_len, "%s: %lld bytes, but %s recorded %lld: truncated or damaged",
                         path, (long long)st.st_size, CKPT_MARKER, size);
    return 0;
}

int ckpt_marker_check(const char *dir, int64_t *bytes, char *err, size_t err_len) {
    char path[CKPT_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", dir, CKPT_MARKER);
    FILE *f = fopen(path, "r");
    if (!f) return set_error(err, err_len, "%s: %s", path, strerror(errno));
    char line[1024], name[512];
    long long size = 0;
    int64_t total = 0;
    int rc = 0, lineno = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (lineno == 1 && strncmp(line, MARKER_HEADER, strlen(MARKER_HEADER)) != 0)
            rc = set_error(err, err_len, "%s: not a gpt2_ddp checkpoint marker", path);
        else if (sscanf(line, "file %511s %lld", name, &size) == 2) {
            rc = check_listed_file(dir, name, size, err, err_len);
            total += size;
        }
    }
    fclose(f);
    if (rc == 0 && lineno < 3)
        rc = set_error(err, err_len, "%s: truncated marker (%d lines)", path, lineno);
    if (bytes) *bytes = total;
    return rc;
}

/* ------------------------------------------------------------ publication */

int ckpt_move_aside(const char *dir, const char *why, char *moved, size_t moved_len, char *err,
                    size_t err_len) {
    struct stat st;
    char name[CKPT_PATH_MAX + 128];
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(name, sizeof name, "%s.%s", dir, why);
        else
            snprintf(name, sizeof name, "%s.%s.%d", dir, why, k);
        /* rename() would replace an empty directory of that name: skip every
         * name that exists. */
        if (lstat(name, &st) == 0) continue;
        if (errno != ENOENT)
            return set_error(err, err_len, "cannot move %s aside: %s: %s", dir, name,
                             strerror(errno));
        if (rename(dir, name) != 0)
            return set_error(err, err_len, "cannot move %s aside to %s: %s", dir, name,
                             strerror(errno));
        snprintf(moved, moved_len, "%s", name);
        return 0;
    }
    return set_error(err, err_len, "cannot move %s aside: %s.%s and 998 more names are taken", dir,
                     dir, why);
}

void ckpt_superseded_suffix(char *out, size_t len, int step) {
    snprintf(out, len, "superseded_by_step_%08d", step);
}

bool ckpt_went_back_to(const char *run_dir, int step) {
    char suffix[64];
    ckpt_superseded_suffix(suffix, sizeof suffix, step);
    DIR *d = opendir(run_dir);
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));)
        found = strlen(e->d_name) > 14 && parse_step_name(e->d_name, e->d_name + 13) >= 0 &&
                e->d_name[13] == '.' && strncmp(e->d_name + 14, suffix, strlen(suffix)) == 0;
    closedir(d);
    return found;
}

void ckpt_publish(const char *run_dir, const char *tmp_dir, const char *final_dir) {
    fsync_path(tmp_dir);
    if (rename(tmp_dir, final_dir) != 0)
        FAIL("cannot rename %s to %s: %s", tmp_dir, final_dir, strerror(errno));
    fsync_path(run_dir);
    ckpt_point_latest(run_dir, final_dir);
}

void ckpt_point_latest(const char *run_dir, const char *step_dir) {
    char link_tmp[CKPT_PATH_MAX + 16], link[CKPT_PATH_MAX + 16];
    snprintf(link_tmp, sizeof link_tmp, "%s/latest.tmp", run_dir);
    snprintf(link, sizeof link, "%s/latest", run_dir);
    const char *base = strrchr(step_dir, '/');
    base = base ? base + 1 : step_dir;
    unlink(link_tmp);
    if (symlink(base, link_tmp) != 0) FAIL("cannot create %s: %s", link_tmp, strerror(errno));
    if (rename(link_tmp, link) != 0)
        FAIL("cannot rename %s to %s: %s", link_tmp, link, strerror(errno));
    fsync_path(run_dir);
}

/* The directories a prune could not remove, reported once each. */
enum { PRUNE_REPORTED_MAX = 64 };
static char prune_reported[PRUNE_REPORTED_MAX][CKPT_PATH_MAX];
static int n_prune_reported;

static bool prune_first_report(const char *dir) {
    for (int i = 0; i < n_prune_reported; i++)
        if (strcmp(prune_reported[i], dir) == 0) return false;
    if (n_prune_reported < PRUNE_REPORTED_MAX)
        snprintf(prune_reported[n_prune_reported++], CKPT_PATH_MAX, "%s", dir);
    return true;
}

int ckpt_prune(const char *run_dir, int keep_last, char *report, size_t report_len) {
    if (report_len > 0) report[0] = '\0';
    if (keep_last <= 0) return 0;
    int *steps;
    int n = list_complete(run_dir, &steps), failed = 0;
    for (int i = keep_last; i < n; i++) {
        char dir[CKPT_PATH_MAX], why[4400];
        ckpt_step_dir(dir, sizeof dir, run_dir, steps[i]);
        if (try_remove_tree(dir, why, sizeof why) == 0) continue;
        failed++;
        if (!report[0] && prune_first_report(dir))
            snprintf(report, report_len,
                     "warning: cannot remove the old checkpoint %s (beyond keep_last = %d): %s. "
                     "The run goes on, its new checkpoints are saved as before; remove the old "
                     "one by hand (an immutable file: chattr -i; another owner: ask them). Said "
                     "once for this directory",
                     dir, keep_last, why);
    }
    free(steps);
    return failed;
}

int ckpt_remove_partial(const char *run_dir) {
    DIR *d = opendir(run_dir);
    if (!d) return 0;
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (parse_step_name(e->d_name, ".tmp") < 0) continue;
        char path[CKPT_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", run_dir, e->d_name);
        remove_tree(path);
        removed++;
    }
    closedir(d);
    return removed;
}
