/* What both kinds of save share (see ckpt_write.h). */
#include "ckpt/ckpt_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/files.h"
#include "data/loader.h"
#include "io/ckpt_dir.h"

void ckpt_write_state(const ckpt_ctx *c, const ckpt_progress *p, int64_t opt_step, ckpt_state *st) {
    const data_parallel *d = c->ddp;
    const config *cfg = c->cfg;
    const int world = d->comm->world;
    *st = (ckpt_state){.format_version = CKPT_FORMAT_VERSION,
                       .step = p->step,
                       .samples_consumed = p->samples_consumed,
                       .optimizer_step = opt_step,
                       .world = world,
                       .n_elements = (int64_t)c->lay->n_elements,
                       .seq_len = cfg->seq_len,
                       .micro_batch = cfg->micro_batch,
                       .total_batch = cfg->total_batch,
                       .zero_stage = cfg->zero_stage,
                       .train_samples = c->train_samples,
                       .seed = cfg->seed,
                       .lr = p->lr,
                       .config_text = (char *)c->config_text};
    snprintf(st->optimizer, sizeof st->optimizer, "%s", c->opt->kind->name);
    st->shard_lo = xcalloc((size_t)world, sizeof(int64_t));
    st->shard_hi = xcalloc((size_t)world, sizeof(int64_t));
    st->loader_position = xcalloc((size_t)world, sizeof(int64_t));
    for (int r = 0; r < world; r++) {
        st->shard_lo[r] = (int64_t)d->map.lo[r];
        st->shard_hi[r] = (int64_t)d->map.hi[r];
        st->loader_position[r] =
            loader_batch_position(p->samples_consumed, 0, r, world, cfg->micro_batch);
    }
}

void ckpt_write_state_free(ckpt_state *st) {
    free(st->shard_lo);
    free(st->shard_hi);
    free(st->loader_position);
    st->shard_lo = st->shard_hi = st->loader_position = NULL;
}

ckpt_shard_header ckpt_write_shard_header(const ckpt_ctx *c, int step, int64_t opt_step) {
    const data_parallel *d = c->ddp;
    const int rank = d->comm->rank;
    return (ckpt_shard_header){.format_version = CKPT_FORMAT_VERSION,
                               .rank = rank,
                               .world = d->comm->world,
                               .step = step,
                               .lo = (int64_t)d->map.lo[rank],
                               .hi = (int64_t)d->map.hi[rank],
                               .n_elements = (int64_t)c->lay->n_elements,
                               .optimizer_step = opt_step};
}

static bool optimizer_sharded(const data_parallel *d) {
    return d->zero_stage == 1 && d->comm->world > 1;
}

void ckpt_write_gather_master(const ckpt_ctx *c, const float *slice, size_t n, float *full) {
    const data_parallel *d = c->ddp;
    if (!optimizer_sharded(d)) {
        if (d->comm->rank == 0)
            c->ops->download(full, c->opt->master, c->lay->n_elements * sizeof(float));
        return;
    }
    size_t *counts = xcalloc((size_t)d->map.world, sizeof(size_t));
    for (int r = 0; r < d->map.world; r++) counts[r] = d->map.hi[r] - d->map.lo[r];
    CHECK(counts[d->comm->rank] == n, "gathering %zu master elements of a shard of %zu", n,
          counts[d->comm->rank]);
    group_gatherv_float(d->comm->group, slice, counts, d->map.lo, full, 0);
    free(counts);
}

void ckpt_write_model(const ckpt_ctx *c, const char *dir, const float *master,
                      const ckpt_state *st) {
    char path[CKPT_PATH_MAX + 32];
    ckpt_model_path(path, sizeof path, dir);
    ckpt_h5_model_write(path, c->lay, master, st);
    fsync_path(path);
}

void ckpt_write_test_delay(void) {
    const char *ms = getenv(CKPT_TEST_DELAY_ENV);
    if (!ms || atol(ms) <= 0) return;
    struct timespec ts = {.tv_sec = atol(ms) / 1000, .tv_nsec = atol(ms) % 1000 * 1000000L};
    nanosleep(&ts, NULL);
}

/* A step directory already where this save goes (made after the run
 * started: ckpt_clear_ahead moved those it found). An incomplete one is
 * moved aside; a complete one is another run's or a copy: the save stops,
 * saying how to keep both. */
static void clear_target(const char *final, const char *tmp) {
    struct stat st;
    if (lstat(final, &st) != 0) return;
    if (ckpt_is_complete(final))
        FAIL("cannot save %s: a complete checkpoint of that step is already there (another run in "
             "this directory, or a copy?); this save, complete, is left in %s until the next run "
             "removes it. Keep both with: mv %s %s.other && mv %s %s",
             final, tmp, final, final, tmp, final);
    char moved[CKPT_PATH_MAX + 128], err[3 * CKPT_PATH_MAX];
    if (ckpt_move_aside(final, "incomplete", moved, sizeof moved, err, sizeof err) != 0)
        FAIL("%s", err);
    printf("checkpoint: %s has no %s marker (an unfinished save): moved aside to %s (not "
           "deleted)\n",
           final, CKPT_MARKER, moved);
}

int64_t ckpt_write_publish(const ckpt_ctx *c, const char *tmp, const char *final, int step) {
    ckpt_marker_write(tmp, step, c->ddp->comm->world);
    clear_target(final, tmp);
    ckpt_publish(c->run_dir, tmp, final);
    char err[CKPT_PATH_MAX + 256];
    int64_t bytes = 0;
    if (ckpt_marker_check(final, &bytes, err, sizeof err) != 0) FAIL("after saving: %s", err);
    return bytes;
}

void ckpt_write_print(const ckpt_save_report *rep, const char *final) {
    const double mib = rep->bytes / 1048576.0;
    if (rep->async)
        printf("checkpoint: step %d saved to %s (%.1f MiB; training stalled %.0f ms, written in "
               "the background in %.2f s, %.0f MB/s)\n",
               rep->step, final, mib, rep->stall_s * 1e3, rep->write_s,
               rep->write_s > 0 ? rep->bytes / 1e6 / rep->write_s : 0.0);
    else
        printf("checkpoint: step %d saved to %s (%.1f MiB, %.2f s; written in %.2f s, %.0f MB/s)\n",
               rep->step, final, mib, rep->stall_s, rep->write_s,
               rep->write_s > 0 ? rep->bytes / 1e6 / rep->write_s : 0.0);
    fflush(stdout);
}
