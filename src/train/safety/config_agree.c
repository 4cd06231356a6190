/* The ranks' configs compared at the start (see config_agree.h). */
#include "train/safety/config_agree.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "config/keys.h"
#include "config/stored.h"
#include "config/values.h"

enum { TEXT_MAX = 1 << 16, HOST_MAX = 256, KEYS_NAMED = 3 };

/* FNV-1a, 64 bits: a digest to compare, not to defend against anyone. */
static uint64_t digest(const char *text) {
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* The lowest rank whose digest differs from rank 0's, or -1 (every rank). */
static int first_differing_rank(const dist_group *job, uint64_t mine) {
    uint64_t *all = job->rank == 0 ? xcalloc((size_t)job->size, sizeof *all) : NULL;
    group_gather(job, &mine, sizeof mine, all, 0);
    int odd = -1;
    for (int r = 1; job->rank == 0 && r < job->size && odd < 0; r++)
        if (all[r] != all[0]) odd = r;
    free(all);
    group_bcast(job, &odd, sizeof odd, 0);
    return odd;
}

/* Rank 0: which keys differ, "lr = 0.001 where rank 0 has lr = 0.003". */
static void describe_keys(const config *ours, const char *their_text, char *out, size_t len) {
    static config theirs;
    config_change changes[KEYS_NAMED];
    int n = config_read_stored(&theirs, their_text)
                ? config_diff(ours, &theirs, changes, KEYS_NAMED)
                : 0;
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < n && i < KEYS_NAMED && o < len; i++)
        o += (size_t)snprintf(out + o, len - o, "%s%s = %s where rank 0 has %s = %s", i ? "; " : "",
                              changes[i].key, changes[i].now, changes[i].key, changes[i].was);
    if (n > KEYS_NAMED && o < len) snprintf(out + o, len - o, " (and %d more)", n - KEYS_NAMED);
    if (n == 0) snprintf(out, len, "a config that differs from rank 0's");
}

/* What every rank must agree on: cfg with each path key as written, so
 * that ${OMPI_COMM_WORLD_LOCAL_RANK} or ${TMPDIR} in train_data may give
 * each rank or node its own copy of the data (configuration.md), except
 * out_dir, which every rank writes into: its expanded value. */
static void agreed_form(const config *cfg, config *out) {
    *out = *cfg;
    int slot = 0;
    char why[256];
    for (size_t i = 0; i < config_n_keys; i++) {
        const config_key *k = &config_keys[i];
        if (!k->path) continue;
        const char *written = cfg->path_written[slot++];
        if (written[0] && strcmp(k->name, "out_dir") != 0)
            config_key_set(out, k, written, why, sizeof why);
    }
    memset(out->path_written, 0, sizeof out->path_written);
}

void config_agree_or_fail(const config *cfg, const dist_group *job) {
    if (job->size == 1) return;
    static char text[TEXT_MAX], their_text[TEXT_MAX];
    static config agreed;
    agreed_form(cfg, &agreed);
    config_format(&agreed, text, sizeof text);
    const int odd = first_differing_rank(job, digest(text));
    if (odd < 0) return;
    char host[HOST_MAX] = "?", their_host[HOST_MAX] = "?";
    gethostname(host, sizeof host - 1);
    if (job->rank == odd) {
        memcpy(their_text, text, sizeof text);
        memcpy(their_host, host, sizeof host);
    }
    group_bcast(job, their_text, sizeof their_text, odd);
    group_bcast(job, their_host, sizeof their_host, odd);
    static char keys[4096];
    if (job->rank == 0) describe_keys(&agreed, their_text, keys, sizeof keys);
    fail_collective(EXIT_USAGE,
                    "the ranks disagree on the configuration: rank %d/%d (host %s) has %s (rank 0 "
                    "runs on host %s). Every rank must start from the same settings: the same "
                    ".ini (the same file on every node), the same key=value overrides (an MPMD "
                    "line, -np 1 ... : -np 1 ..., must repeat them) and the same values of the "
                    "${VAR}s it uses",
                    odd, job->size, their_host, keys, host);
}
