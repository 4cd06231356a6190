/* A variant's run directory of its own (see variant_name.h). */
#include "train/variant_name.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ckpt/ckpt.h"

void variant_name_choose(config *cfg, const dist_group *job) {
    if (!cfg->run_name_from_stem || strcmp(cfg->resume, "auto") != 0) return;
    char name[CONFIG_STR_MAX] = "", keys[1024] = "", dir[2 * CONFIG_STR_MAX + 2];
    int found = 0;
    snprintf(dir, sizeof dir, "%s/%s", cfg->out_dir, cfg->run_name);
    if (job->rank == 0) found = ckpt_variant_name(cfg, dir, name, sizeof name, keys, sizeof keys);
    group_bcast(job, &found, sizeof found, 0);
    if (!found) return;
    group_bcast(job, name, sizeof name, 0);
    if (job->rank == 0) {
        printf("note: %s holds another run; this command changes %s, so it trains a run of its "
               "own: %s/%s (the same command continues it; allow_changed=%s would change %s "
               "instead, run_name=... names the run yourself)\n",
               dir, keys, cfg->out_dir, name, keys, dir);
        fflush(stdout);
    }
    snprintf(cfg->run_name, sizeof cfg->run_name, "%s", name);
}
