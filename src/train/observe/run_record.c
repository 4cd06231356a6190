/* The run record of metrics.jsonl (see run_record.h). */
#include "train/observe/run_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "config/json.h"
#if GPT2_HAVE_CUDA
#include "kernels/cuda_info.h"
#endif

#define NAME_MAX_LEN 128

/* This rank's device name: the GPU's, without cuda_device_describe's
 * "(sm_90, 79 GiB)". */
static void device_name(const config *cfg, const dist_state *dist, char *name, size_t len) {
    snprintf(name, len, "cpu");
#if GPT2_HAVE_CUDA
    if (strcmp(cfg->device, "cuda") == 0) {
        cuda_device_describe(dist->gpu >= 0 ? dist->gpu : dist->local_rank, name, len);
        char *cut = strstr(name, " (");
        if (cut) *cut = '\0';
    }
#else
    (void)cfg;
    (void)dist;
#endif
}

/* ["name0","name1",...] of every rank's device, or ["cpu"]. */
static void devices_json(const config *cfg, const dist_state *dist, char *out, size_t len) {
    char mine[NAME_MAX_LEN] = "";
    device_name(cfg, dist, mine, sizeof mine);
    char *all = dist->rank == 0 ? xcalloc((size_t)dist->world, NAME_MAX_LEN) : NULL;
    group_gather(&dist->job, mine, NAME_MAX_LEN, all, 0);
    if (dist->rank != 0) return;
    const int n = strcmp(cfg->device, "cuda") == 0 ? dist->world : 1;
    size_t o = (size_t)snprintf(out, len, "[");
    for (int r = 0; r < n && o < len; r++) {
        char quoted[4 * NAME_MAX_LEN];
        json_quote(all + (size_t)r * NAME_MAX_LEN, quoted, sizeof quoted);
        o += (size_t)snprintf(out + o, len - o, "%s%s", r ? "," : "", quoted);
    }
    if (o < len) snprintf(out + o, len - o, "]");
    free(all);
}

void run_record_write(metrics_log *log, const config *cfg, const dist_state *dist,
                      int resumed_from_step) {
    static char devices[1 << 16], config_json[1 << 16];
    devices_json(cfg, dist, devices, sizeof devices);
    if (!log->jsonl) return;
    config_format_json(cfg, config_json, sizeof config_json);
    char when[32], git[64];
    const time_t now = time(NULL);
    struct tm utc;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
    json_quote(gpt2_git_rev, git, sizeof git);
    metrics_record(log,
                   "{\"type\":\"run\",\"start_time\":\"%s\",\"version\":\"%s\",\"git\":%s,"
                   "\"world\":%d,\"backend\":\"%s\",\"devices\":%s,\"resumed_from_step\":%d,"
                   "\"tokens_per_step\":%lld,\"config\":%s}",
                   when, GPT2_VERSION, git, dist->world, cfg->device, devices, resumed_from_step,
                   (long long)cfg->total_batch, config_json);
}
