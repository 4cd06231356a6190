/* The checkpoint save protocol (see ckpt.h): shards, rank-0 file, barrier,
 * marker, rename, `latest`, pruning. */
#include "ckpt/ckpt.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "base/files.h"
#include "data/loader.h"
#include "io/ckpt_dir.h"
#include "io/ckpt_h5.h"
#include "io/h5_io.h"

static bool optimizer_sharded(const data_parallel *d) {
    return d->zero_stage == 1 && d->comm->world > 1;
}

/* Collects the full fp32 master weights into rank 0's scratch: from every
 * rank's slice (ZeRO-1; rank 0's own is already in place), or from rank 0's
 * own full optimizer state. */
static void gather_master(const ckpt_ctx *c, const float *slice, size_t n) {
    const data_parallel *d = c->ddp;
    if (!optimizer_sharded(d)) {
        if (d->comm->rank == 0)
            c->ops->download(c->host_scratch, c->opt->master, c->lay->n_elements * sizeof(float));
        return;
    }
    CHECK(c->lay->n_elements <= INT_MAX, "gathering %zu elements exceeds MPI's int counts",
          c->lay->n_elements);
    int *counts = xcalloc((size_t)d->map.world, sizeof(int));
    int *displs = xcalloc((size_t)d->map.world, sizeof(int));
    for (int r = 0; r < d->map.world; r++) {
        counts[r] = (int)(d->map.hi[r] - d->map.lo[r]);
        displs[r] = (int)d->map.lo[r];
    }
    const void *send = d->comm->rank == 0 ? MPI_IN_PLACE : (const void *)slice;
    MPI_CHECK(MPI_Gatherv(send, (int)n, MPI_FLOAT, c->host_scratch, counts, displs, MPI_FLOAT, 0,
                          MPI_COMM_WORLD));
    free(counts);
    free(displs);
}

/* Rank 0: weights by name and the run state. */
static void save_model(const ckpt_ctx *c, const char *dir, const ckpt_progress *p) {
    const data_parallel *d = c->ddp;
    const config *cfg = c->cfg;
    const int world = d->comm->world;
    ckpt_state st = {.format_version = CKPT_FORMAT_VERSION,
                     .step = p->step,
                     .samples_consumed = p->samples_consumed,
                     .optimizer_step = c->opt->step,
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
    st.shard_lo = xcalloc((size_t)world, sizeof(int64_t));
    st.shard_hi = xcalloc((size_t)world, sizeof(int64_t));
    st.loader_position = xcalloc((size_t)world, sizeof(int64_t));
    for (int r = 0; r < world; r++) {
        st.shard_lo[r] = (int64_t)d->map.lo[r];
        st.shard_hi[r] = (int64_t)d->map.hi[r];
        st.loader_position[r] =
            loader_batch_position(p->samples_consumed, 0, r, world, cfg->micro_batch);
    }
    char path[CKPT_PATH_MAX + 32];
    ckpt_model_path(path, sizeof path, dir);
    ckpt_h5_model_write(path, c->lay, c->host_scratch, &st);
    fsync_path(path);
    free(st.shard_lo);
    free(st.shard_hi);
    free(st.loader_position);
}

/* This rank's slice [lo, hi) of the shard map: master, m and v (the
 * optimizer holds that slice, ZeRO-1, or everything, ZeRO-0 and one rank);
 * rank 0 also writes model.h5. The slice is staged at [lo, hi) of the host
 * scratch, where the gathered master has it too, so no buffer is allocated
 * (first-touch page faults of a fresh 0.5 GB buffer cost 2 s at 124M);
 * rank 0 writes model.h5 from the gathered master before m and v reuse it. */
static void save_files(const ckpt_ctx *c, const char *dir, const ckpt_progress *p) {
    const data_parallel *d = c->ddp;
    const adamw_state *opt = c->opt;
    const int rank = d->comm->rank;
    const size_t lo = d->map.lo[rank], hi = d->map.hi[rank], n = hi - lo;
    CHECK(opt->lo <= lo && hi <= opt->hi, "optimizer range [%zu, %zu) lacks shard [%zu, %zu)",
          opt->lo, opt->hi, lo, hi);
    const ckpt_shard_header h = {.format_version = CKPT_FORMAT_VERSION,
                                 .rank = rank,
                                 .world = d->comm->world,
                                 .step = p->step,
                                 .lo = (int64_t)lo,
                                 .hi = (int64_t)hi,
                                 .n_elements = (int64_t)c->lay->n_elements,
                                 .optimizer_step = opt->step};
    char path[CKPT_PATH_MAX + 32];
    ckpt_shard_path(path, sizeof path, dir, rank);
    hid_t file = ckpt_h5_shard_create(path, &h);
    const char *names[3] = {"master", "m", "v"};
    const float *state[3] = {opt->master, opt->m, opt->v};
    float *stage = c->host_scratch + lo;
    const int64_t len = (int64_t)n;
    for (int i = 0; i < 3; i++) {
        c->ops->download(stage, state[i] + (lo - opt->lo), n * sizeof(float));
        h5_write_f32(file, path, names[i], 1, &len, stage);
        if (i > 0) continue;
        gather_master(c, stage, n);
        if (rank == 0) save_model(c, dir, p);
    }
    h5_close(file, path);
    fsync_path(path);
}

static void test_delay(void) {
    const char *ms = getenv(CKPT_TEST_DELAY_ENV);
    if (!ms || atol(ms) <= 0) return;
    struct timespec ts = {.tv_sec = atol(ms) / 1000, .tv_nsec = atol(ms) % 1000 * 1000000L};
    nanosleep(&ts, NULL);
}

/* Rank 0: a step directory already where this save goes (made after the
 * run started: ckpt_clear_ahead moved those it found). An incomplete one is
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

/* Rank 0, after every rank's files are durable: marker, rename, latest, prune. */
static int64_t publish(const ckpt_ctx *c, const char *tmp, const char *final, int step) {
    ckpt_marker_write(tmp, step, c->ddp->comm->world);
    clear_target(final, tmp);
    ckpt_publish(c->run_dir, tmp, final);
    ckpt_prune(c->run_dir, c->cfg->keep_last);
    char err[CKPT_PATH_MAX + 256];
    int64_t bytes = 0;
    if (ckpt_marker_check(final, &bytes, err, sizeof err) != 0) FAIL("after saving: %s", err);
    return bytes;
}

void ckpt_save(const ckpt_ctx *c, const ckpt_progress *p) {
    const double t0 = clock_s();
    const int rank = c->ddp->comm->rank;
    char tmp[CKPT_PATH_MAX], final[CKPT_PATH_MAX];
    ckpt_tmp_dir(tmp, sizeof tmp, c->run_dir, p->step);
    ckpt_step_dir(final, sizeof final, c->run_dir, p->step);
    if (rank == 0) {
        remove_tree(tmp);
        make_dirs_or_fail(tmp);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    save_files(c, tmp, p);
    test_delay();
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        int64_t bytes = publish(c, tmp, final, p->step);
        printf("checkpoint: step %d saved to %s (%.1f MiB, %.2f s)\n", p->step, final,
               bytes / 1048576.0, clock_s() - t0);
        fflush(stdout);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}
