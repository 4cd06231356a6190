/* Resuming from a checkpoint (see ckpt.h): whether this config can continue
 * it, and the re-sliced read of the optimizer state (which checkpoint, and
 * whether to start at all, is ckpt_plan.c's). */
#include "ckpt/ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/fail.h"
#include "ckpt/ckpt_fp8.h"
#include "io/ckpt_dir.h"
#include "io/ckpt_h5.h"
#include "io/h5_io.h"
#include "io/weights_h5.h"

#define ERR_MAX (3 * CKPT_PATH_MAX)

int ckpt_agree_with_root(const dist_group *job, int status, const char *err, int exit_code) {
    group_bcast(job, &status, sizeof status, 0);
    if (status < 0) fail_collective(exit_code, "%s", err);
    return status;
}

/* ---------------------------------------------------------- compatibility */

/* What a run must keep to continue: the model (its flat layout), the
 * samples (seq_len, data set, shuffle seed) and the global batch. */
static void check_continuable(const ckpt_ctx *c, const ckpt_state *st, const char *path) {
    const config *cfg = c->cfg;
    const struct {
        const char *key;
        long long ours, theirs;
    } same[] = {
        {"n_layer", cfg->n_layer, st->n_layer},
        {"n_embd", cfg->n_embd, st->n_embd},
        {"n_head", cfg->n_head, st->n_head},
        {"vocab_size", cfg->vocab_size, st->vocab_size},
        {"block_size", cfg->block_size, st->block_size},
        {"seq_len", cfg->seq_len, st->seq_len},
        {"total_batch", cfg->total_batch, st->total_batch},
        {"train_data (samples)", c->train_samples, st->train_samples},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        if (same[i].ours != same[i].theirs)
            fail_collective(EXIT_USAGE,
                            "%s: cannot continue this run: the config has %s = %lld, the "
                            "checkpoint %lld (a resume keeps the model, seq_len, total_batch, "
                            "seed and data; init_from=<checkpoint> starts a new run from its "
                            "weights)",
                            path, same[i].key, same[i].ours, same[i].theirs);
    if (cfg->seed != st->seed)
        fail_collective(EXIT_USAGE,
                        "%s: cannot continue this run: the config has seed = %llu, the "
                        "checkpoint %llu (the data order follows the seed)",
                        path, (unsigned long long)cfg->seed, (unsigned long long)st->seed);
    if ((size_t)st->n_elements != c->lay->n_elements)
        fail_collective(EXIT_USAGE, "%s: flat buffer of %lld elements, this build lays out %zu",
                        path, (long long)st->n_elements, c->lay->n_elements);
    if (strcmp(st->optimizer, c->opt->kind->name) != 0)
        fail_collective(EXIT_USAGE,
                        "%s: cannot continue this run: its optimizer state is %s's, and this run "
                        "uses %s (init_from=<checkpoint> starts a new run from its weights)",
                        path, st->optimizer, c->opt->kind->name);
}

/* The old shard map must tile [0, n_elements). */
static void check_shard_map(const ckpt_state *st, const char *path) {
    int64_t next = 0;
    for (int64_t r = 0; r < st->world; r++) {
        if (st->shard_lo[r] != next || st->shard_hi[r] < st->shard_lo[r])
            FAIL("%s: shard map entry %lld [%lld, %lld) does not continue at %lld", path,
                 (long long)r, (long long)st->shard_lo[r], (long long)st->shard_hi[r],
                 (long long)next);
        next = st->shard_hi[r];
    }
    if (next != st->n_elements)
        FAIL("%s: shard map ends at %lld of %lld elements", path, (long long)next,
             (long long)st->n_elements);
}

/* ---------------------------------------------------------------- reading */

/* Elements [lo, hi) of dataset name, from every old shard that overlaps. */
static void read_range(const char *dir, const ckpt_state *st, const char *name, size_t lo,
                       size_t hi, float *out) {
    for (int64_t k = 0; k < st->world; k++) {
        int64_t a = (int64_t)lo > st->shard_lo[k] ? (int64_t)lo : st->shard_lo[k];
        int64_t b = (int64_t)hi < st->shard_hi[k] ? (int64_t)hi : st->shard_hi[k];
        if (a >= b) continue;
        const ckpt_shard_header expect = ckpt_shard_expected(st, (int)k);
        char path[CKPT_PATH_MAX + 32];
        ckpt_shard_path(path, sizeof path, dir, (int)k);
        hid_t file = ckpt_h5_shard_open(path, &expect);
        h5_read_f32_range(file, path, name, expect.hi - expect.lo, a - expect.lo, b - a,
                          out + (a - (int64_t)lo));
        H5Fclose(file);
    }
}

/* Every array of this rank's optimizer range; params from master. */
static void load_optimizer(const ckpt_ctx *c, const char *dir, const ckpt_state *st, void *params) {
    optimizer *opt = c->opt;
    const size_t n = opt->hi - opt->lo;
    float *stage = c->host_scratch + opt->lo; /* no fresh buffer to page in */
    for (int i = 0; i < optimizer_n_arrays(opt->kind); i++) {
        read_range(dir, st, optimizer_array_name(opt->kind, i), opt->lo, opt->hi, stage);
        c->ops->upload(optimizer_array(opt, i), stage, n * sizeof(float));
        if (i == 0) c->ops->upload_f32(ops_at(c->ops, params, opt->lo), stage, n);
    }
    opt->step = (int)st->optimizer_step;
}

void ckpt_fallback_hint(const char *dir, char *hint, size_t len) {
    char run_dir[CKPT_PATH_MAX], older[CKPT_PATH_MAX];
    const int step = ckpt_split_step_dir(dir, run_dir, sizeof run_dir);
    if (step >= 0 && ckpt_find_older_good(run_dir, step, older, sizeof older) >= 0)
        snprintf(hint, len,
                 "checkpoint %s cannot be loaded. To go back to the one before it, run again with "
                 "resume=%s (the newer ones are then moved aside, not deleted); or move the "
                 "damaged one aside (mv %s %s.damaged) and run again with resume=auto",
                 dir, older, dir, dir);
    else
        snprintf(hint, len,
                 "checkpoint %s cannot be loaded and there is no older complete one: move it aside "
                 "(mv %s %s.damaged) and run again to start from step 0",
                 dir, dir, dir);
}

void ckpt_load(const ckpt_ctx *c, const char *dir, void *params, ckpt_progress *p) {
    const double t0 = clock_s();
    const int rank = c->ddp->comm->rank;
    static char err[ERR_MAX + CKPT_PATH_MAX + 64], why[ERR_MAX], hint[4 * CKPT_PATH_MAX];
    if (rank == 0) ckpt_fallback_hint(dir, hint, sizeof hint);
    group_bcast(c->job, hint, sizeof hint, 0);
    /* Any rank that finds the checkpoint damaged prints the way back. */
    fail_set_hint(hint);
    int64_t bytes = 0;
    int status = 0;
    if (rank == 0 && (status = ckpt_marker_check(dir, &bytes, why, sizeof why)) != 0)
        snprintf(err, sizeof err, "cannot resume from %s: %s", dir, why);
    ckpt_agree_with_root(c->job, status, err, EXIT_FATAL);
    char model_path[CKPT_PATH_MAX + 32];
    ckpt_model_path(model_path, sizeof model_path, dir);
    ckpt_state st;
    ckpt_h5_state_read(model_path, &st);
    fail_set_hint(NULL); /* a config that cannot continue is not damage */
    check_continuable(c, &st, model_path);
    fail_set_hint(hint);
    check_shard_map(&st, model_path);
    load_optimizer(c, dir, &st, params);
    if (c->fp8) ckpt_fp8_load(c, dir, &st);
    ddp_gather_params(c->ddp, params);
    /* The weights are not needed to resume (the master is), but reading
     * them checks their checksums: a damaged rank-0 file is found now. */
    if (rank == 0) weights_load(model_path, c->lay, c->host_scratch);
    group_barrier(c->job);
    fail_set_hint(NULL);
    *p =
        (ckpt_progress){.step = (int)st.step, .samples_consumed = st.samples_consumed, .lr = st.lr};
    if (rank == 0) {
        printf("resumed from %s: step %lld, %lld samples consumed, written by %lld rank(s), "
               "now %d (%.1f MiB, %.2f s)\n",
               dir, (long long)st.step, (long long)st.samples_consumed, (long long)st.world,
               c->ddp->comm->world, bytes / 1048576.0, clock_s() - t0);
        fflush(stdout);
    }
    ckpt_state_free(&st);
}
