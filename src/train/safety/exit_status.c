/* The exit code recorded for the launch scripts (see exit_status.h). */
#include "train/safety/exit_status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"

static bool env_set(const char *name) {
    const char *v = getenv(name);
    return v && *v;
}

bool exit_status_plain_mpirun(void) {
    return env_set("OMPI_COMM_WORLD_SIZE") && !env_set(EXIT_STATUS_ENV) && !env_set("SLURM_JOB_ID");
}

void exit_status_record(int rank, int code) {
    const char *path = getenv(EXIT_STATUS_ENV);
    if (rank != 0 || !path || !*path) return;
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        fprintf(stderr, "warning: %s is too long; exit code %d not recorded\n", EXIT_STATUS_ENV,
                code);
        return;
    }
    char why[4400] = "";
    FILE *f = fopen_regular(tmp, "w", OPEN_REPLACE, why, sizeof why);
    int ok = f && fprintf(f, "%d\n", code) > 0;
    if (f && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, path) == 0) return;
    fprintf(stderr, "warning: cannot record exit code %d in %s = %s: %s\n", code, EXIT_STATUS_ENV,
            path, why[0] ? why : strerror(errno));
    remove(tmp);
}
