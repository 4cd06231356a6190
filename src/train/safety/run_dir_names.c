/* The run directory's own names, checked at the start (see run_dir_names.h). */
#include "train/safety/run_dir_names.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/fail.h"
#include "base/files.h"

/* What may stand under a name the run writes. */
typedef enum {
    ALLOW_FILE,         /* a regular file (appended to or locked in place) */
    ALLOW_FILE_OR_LINK, /* replaced by a rename: a link is replaced, not followed */
    ALLOW_LINK,         /* the run's own symbolic link */
    ALLOW_ANY_BUT_DIR,  /* a temporary name: whatever is there is removed first */
} allowed;

static const struct {
    const char *name, *role;
    allowed allow;
} NAMES[] = {
    {"latest", "its link to the newest checkpoint", ALLOW_LINK},
    {"latest.tmp", "the temporary name of that link", ALLOW_ANY_BUT_DIR},
    {"model.h5", "the final weights", ALLOW_FILE_OR_LINK},
    {"model.h5.tmp", "the temporary name of the final weights", ALLOW_ANY_BUT_DIR},
    {"metrics.jsonl", "its log of records", ALLOW_FILE},
    {"samples.jsonl", "its log of text samples", ALLOW_FILE},
    {"gpt2_ddp.lock", "its lock file", ALLOW_FILE},
};

static bool is_allowed(mode_t mode, allowed allow) {
    switch (allow) {
    case ALLOW_FILE: return S_ISREG(mode);
    case ALLOW_FILE_OR_LINK: return S_ISREG(mode) || S_ISLNK(mode);
    case ALLOW_LINK: return S_ISLNK(mode);
    case ALLOW_ANY_BUT_DIR: return !S_ISDIR(mode);
    }
    return false;
}

int run_dir_names_check(const char *run_dir, char *msg, size_t len) {
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", run_dir, NAMES[i].name);
        struct stat st;
        if (lstat(path, &st) != 0 || is_allowed(st.st_mode, NAMES[i].allow)) continue;
        const char *effect = S_ISLNK(st.st_mode)
                                 ? "the run would write through it, outside the run directory"
                                 : "the run would block or fail on it";
        return set_error(msg, len,
                         "%s is %s, where the run keeps %s: %s. Move it aside (mv %s %s.moved), "
                         "then run the same command again",
                         path, file_kind_name(st.st_mode), NAMES[i].role, effect, path, path);
    }
    return 0;
}

void run_dir_names_check_or_fail(const dist_group *job, const char *run_dir) {
    static char msg[9000];
    const int bad = job->rank == 0 && run_dir_names_check(run_dir, msg, sizeof msg) != 0;
    fail_collective_any(EXIT_USAGE, bad ? msg : NULL);
}
