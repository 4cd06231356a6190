/* Background checkpoint saves (see ckpt_async.h): snapshot buffers, the
 * writer thread, and the agreement that publishes a finished save. */
#include "ckpt/ckpt_async.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "base/files.h"
#include "base/meminfo.h"
#include "ckpt/ckpt_fp8.h"
#include "ckpt/ckpt_write.h"
#include "io/ckpt_dir.h"
#include "io/h5_io.h"

struct ckpt_saver {
    ckpt_ctx c;
    ckpt_saved_fn on_saved;
    void *on_saved_arg;
    void *buffer; /* ops->host_alloc'd, ckpt_saver_rank_bytes */
    float *full;  /* rank 0: the full master (n_elements); NULL elsewhere */
    /* this rank's shard of each optimizer array, n each (0: the master;
     * rank 0's lies in full) */
    float *arrays[1 + OPTIMIZER_MAX_STATE];
    int n_arrays;
    size_t n;
    /* the save in flight */
    bool in_flight;
    pthread_t writer;
    bool joined;      /* the writer of the save in flight was joined */
    atomic_int done;  /* the writer finished (successfully or not) */
    bool failed;      /* written by the writer before done */
    char error[2048]; /* its message */
    double write_s;   /* its time, written before done */
    double stall_s;   /* the snapshot's time on this rank */
    ckpt_progress progress;
    ckpt_shard_header header;
    /* rank 0: the checkpoints beyond keep_last, removed by a thread of
     * their own once a save is published (removing gigabytes takes
     * seconds that training need not wait) */
    pthread_t pruner;
    bool pruning;
    char prune_report[6000];
    ckpt_state state; /* rank 0: model.h5's run state */
    bool has_fp8;     /* fp8 = true: this save's copy of the scaling state */
    fp8_layers_state fp8;
    char tmp[CKPT_PATH_MAX], final[CKPT_PATH_MAX];
};

static size_t shard_elements(const ckpt_ctx *c, int rank) {
    return c->ddp->map.hi[rank] - c->ddp->map.lo[rank];
}

size_t ckpt_async_rank_bytes(const optimizer_kind *kind, size_t n_elements, size_t shard,
                             int rank) {
    const size_t others = (size_t)kind->n_state * shard;
    return (rank == 0 ? n_elements + others : shard + others) * sizeof(float);
}

static size_t ckpt_saver_rank_bytes(const ckpt_ctx *c, int rank) {
    return ckpt_async_rank_bytes(c->opt->kind, c->lay->n_elements, shard_elements(c, rank), rank);
}

/* ---------------------------------------------------------- the writer */

static void write_files(ckpt_saver *s) {
    char path[CKPT_PATH_MAX + 32];
    ckpt_shard_path(path, sizeof path, s->tmp, s->c.ddp->comm->rank);
    hid_t file = ckpt_h5_shard_create(path, &s->header);
    const int64_t len = (int64_t)s->n;
    for (int i = 0; i < s->n_arrays; i++)
        h5_write_f32(file, path, optimizer_array_name(s->c.opt->kind, i), 1, &len, s->arrays[i]);
    if (s->has_fp8) {
        ckpt_fp8_write(file, path, &s->fp8);
        fp8_layers_state_free(&s->fp8);
        s->has_fp8 = false;
    }
    h5_close(file, path);
    fsync_path(path);
    if (s->full) ckpt_write_model(&s->c, s->tmp, s->full, &s->state);
}

/* The thread: the files, then done. An error is caught into s->error (the
 * main thread reports it collectively) instead of ending the process. */
static void *writer_main(void *arg) {
    ckpt_saver *s = arg;
    const double t0 = clock_s();
    fail_catcher catcher;
    if (setjmp(catcher.env) == 0) {
        fail_catch_set(&catcher);
        write_files(s);
        fail_catch_set(NULL);
    } else {
        snprintf(s->error, sizeof s->error, "%s", catcher.msg);
        s->failed = true;
    }
    s->write_s = clock_s() - t0;
    ckpt_write_test_delay();
    atomic_store_explicit(&s->done, 1, memory_order_release);
    return NULL;
}

/* ---------------------------------------------------------- publishing */

static void *pruner_main(void *arg) {
    ckpt_saver *s = arg;
    ckpt_prune(s->c.run_dir, s->c.cfg->keep_last, s->prune_report, sizeof s->prune_report);
    return NULL;
}

/* Rank 0: the previous pruning finished (one at a time). A directory it
 * could not remove costs no checkpoint: the warning is printed here, on the
 * thread that prints, and the run goes on. */
static void join_pruner(ckpt_saver *s) {
    if (!s->pruning) return;
    CHECK(pthread_join(s->pruner, NULL) == 0, "joining the checkpoint pruning thread failed");
    s->pruning = false;
    if (s->prune_report[0]) printf("%s\n", s->prune_report);
    s->prune_report[0] = '\0';
}

static void start_pruner(ckpt_saver *s) {
    s->prune_report[0] = '\0';
    if (pthread_create(&s->pruner, NULL, pruner_main, s) == 0)
        s->pruning = true;
    else if (pruner_main(s), s->prune_report[0]) /* no thread: here, then */
        printf("%s\n", s->prune_report);
}

static void join_writer(ckpt_saver *s) {
    if (s->joined) return;
    CHECK(pthread_join(s->writer, NULL) == 0, "joining the checkpoint writer thread failed");
    s->joined = true;
}

/* Collective, once every writer is done (write_s: the slowest rank's). */
static void publish(ckpt_saver *s, double write_s) {
    join_writer(s);
    s->in_flight = false;
    char msg[2600];
    if (s->failed)
        snprintf(msg, sizeof msg,
                 "the checkpoint of step %d, written in the background, failed: %s (the previous "
                 "checkpoint is intact: the same command resumes from it once the cause is fixed)",
                 s->progress.step, s->error);
    fail_collective_any(EXIT_FATAL, s->failed ? msg : NULL);
    ckpt_save_report rep = {
        .step = s->progress.step, .async = true, .stall_s = s->stall_s, .write_s = write_s};
    if (s->c.ddp->comm->rank == 0) {
        join_pruner(s);
        rep.bytes = ckpt_write_publish(&s->c, s->tmp, s->final, s->progress.step);
        ckpt_write_print(&rep, s->final);
        ckpt_write_state_free(&s->state);
        start_pruner(s);
    }
    if (s->on_saved) s->on_saved(s->on_saved_arg, &rep);
}

void ckpt_saver_poll(ckpt_saver *s) {
    if (!s->in_flight) return;
    const bool mine = atomic_load_explicit(&s->done, memory_order_acquire);
    double v[2] = {mine ? 0.0 : 1.0, mine ? s->write_s : 0.0}; /* busy, write time */
    group_allreduce_double(s->c.job, v, 2, GROUP_MAX);
    if (v[0] == 0.0) publish(s, v[1]);
}

void ckpt_saver_wait(ckpt_saver *s) {
    if (!s->in_flight) return;
    join_writer(s);
    double write_s = s->write_s;
    group_allreduce_double(s->c.job, &write_s, 1, GROUP_MAX);
    publish(s, write_s);
}

/* ---------------------------------------------------------- the snapshot */

void ckpt_saver_start(ckpt_saver *s, const ckpt_progress *p) {
    /* At most one save in flight: training waits for the previous one's
     * files, and that wait is part of this save's stall. */
    const double t0 = clock_s();
    ckpt_saver_wait(s);
    const ckpt_ctx *c = &s->c;
    const optimizer *opt = c->opt;
    const int rank = c->ddp->comm->rank;
    ckpt_tmp_dir(s->tmp, sizeof s->tmp, c->run_dir, p->step);
    ckpt_step_dir(s->final, sizeof s->final, c->run_dir, p->step);
    if (rank == 0) {
        remove_tree(s->tmp);
        make_dirs_or_fail(s->tmp);
    }
    group_barrier(c->job);
    const size_t lo = c->ddp->map.lo[rank];
    CHECK(opt->lo <= lo && lo + s->n <= opt->hi,
          "optimizer range [%zu, %zu) lacks shard [%zu, %zu)", opt->lo, opt->hi, lo, lo + s->n);
    const size_t off = lo - opt->lo, bytes = s->n * sizeof(float);
    for (int i = 0; i < s->n_arrays; i++)
        c->ops->download(s->arrays[i], optimizer_array(opt, i) + off, bytes);
    ckpt_write_gather_master(c, s->arrays[0], s->n, s->full);
    if (rank == 0) ckpt_write_state(c, p, opt->step, &s->state);
    if (s->has_fp8) fp8_layers_state_free(&s->fp8); /* a failed save's, never written */
    if (c->fp8) {
        fp8_layers_state_get(c->fp8, c->ops, &s->fp8);
        s->has_fp8 = true;
    }
    s->header = ckpt_write_shard_header(c, p->step, opt->step);
    s->progress = *p;
    s->failed = false;
    s->error[0] = '\0';
    s->write_s = 0.0;
    atomic_store(&s->done, 0);
    s->stall_s = clock_s() - t0;
    CHECK(pthread_create(&s->writer, NULL, writer_main, s) == 0,
          "cannot start the checkpoint writer thread");
    s->joined = false;
    s->in_flight = true;
}

/* ---------------------------------------------------------- set-up */

/* Collective: the most any node needs for its ranks' buffers, against what
 * that node has available; true when every node holds its ranks' buffers
 * with 10% of its available RAM to spare. */
static bool buffers_fit(const config *cfg, const dist_state *dist, const gpt2_layout *lay,
                        double *need, double *avail) {
    const optimizer_kind *kind = optimizer_kind_for(cfg);
    shard_map map;
    optimizer_shard_map(kind, lay, dist->dp.size, &map);
    const size_t shard = map.hi[dist->dp.rank] - map.lo[dist->dp.rank];
    zero_shard_map_free(&map);
    double node_need = (double)ckpt_async_rank_bytes(kind, lay->n_elements, shard, dist->dp.rank);
    group_allreduce_double(&dist->node, &node_need, 1, GROUP_SUM);
    const double have = meminfo_available_bytes(CKPT_ASYNC_TEST_MEM_ENV);
    /* unknown RAM (no /proc/meminfo) is taken to fit: the allocation says */
    double short_by = 0.0;
    int worst = 0;
    group_maxloc(&dist->job, have < 0 ? -1e300 : node_need - 0.9 * have, &short_by, &worst);
    double both[2] = {node_need, have};
    group_bcast(&dist->job, both, sizeof both, worst);
    *need = both[0];
    *avail = both[1];
    return short_by <= 0;
}

static const double GIB = 1024.0 * 1024.0 * 1024.0;

bool ckpt_async_wanted(const config *cfg, const kernel_ops *ops, const dist_state *dist,
                       const gpt2_layout *lay) {
    const bool asked = strcmp(cfg->checkpoint_async, "true") == 0;
    const bool on_gpu = strcmp(ops->name, "cuda") == 0;
    if (cfg->checkpoint_every == 0 || strcmp(cfg->checkpoint_async, "false") == 0 ||
        (!asked && !on_gpu))
        return false;
    double need = 0, avail = 0;
    if (buffers_fit(cfg, dist, lay, &need, &avail)) return true;
    if (asked)
        fail_collective(EXIT_USAGE,
                        "checkpoint_async = true needs %.2f GiB of host memory per node for the "
                        "checkpoint snapshot buffers (a copy of each rank's optimizer shard, and "
                        "rank 0's full weights), but a node has %.2f GiB available (MemAvailable; "
                        "10%% is kept free). Use checkpoint_async = false (saves wait for the "
                        "disk), fewer ranks per node, or more nodes",
                        need / GIB, avail / GIB);
    if (dist->rank == 0)
        printf("checkpoint: saves wait for the disk: background saves need %.2f GiB of host memory "
               "per node for their snapshot buffers, and a node has %.2f GiB available "
               "(checkpoint_async = false goes without this note)\n",
               need / GIB, avail / GIB);
    return false;
}

ckpt_saver *ckpt_saver_create(const ckpt_ctx *c, ckpt_saved_fn on_saved, void *arg) {
    const bool asked = strcmp(c->cfg->checkpoint_async, "true") == 0;
    const int rank = c->ddp->comm->rank;
    ckpt_saver *s = xcalloc(1, sizeof *s);
    s->c = *c;
    s->on_saved = on_saved;
    s->on_saved_arg = arg;
    s->n = shard_elements(c, rank);
    const size_t bytes = ckpt_saver_rank_bytes(c, rank);
    const double t0 = clock_s();
    s->buffer = c->ops->host_alloc(bytes);
    int ok = s->buffer != NULL;
    group_allreduce_int(c->job, &ok, 1, GROUP_MIN);
    if (!ok) {
        if (s->buffer) c->ops->host_release(s->buffer);
        free(s);
        if (asked)
            fail_collective(EXIT_USAGE,
                            "checkpoint_async = true: a rank could not allocate its %.2f GiB of "
                            "snapshot buffers (host memory); use checkpoint_async = false",
                            bytes / GIB);
        if (rank == 0)
            printf("checkpoint: saves wait for the disk: a rank could not allocate its snapshot "
                   "buffers (host memory)\n");
        return NULL;
    }
    float *f = s->buffer;
    s->n_arrays = optimizer_n_arrays(c->opt->kind);
    if (rank == 0) {
        s->full = f;
        s->arrays[0] = f + c->ddp->map.lo[0];
        f += c->lay->n_elements;
    } else {
        s->arrays[0] = f;
        f += s->n;
    }
    for (int i = 1; i < s->n_arrays; i++, f += s->n) s->arrays[i] = f;
    if (rank == 0)
        printf("checkpoint: saves written in the background (snapshot buffers: %.2f GiB on rank 0, "
               "allocated in %.1f s)\n",
               bytes / GIB, clock_s() - t0);
    return s;
}

void ckpt_saver_free(ckpt_saver *s) {
    if (!s) return;
    if (s->in_flight) join_writer(s);
    join_pruner(s);
    if (s->full) ckpt_write_state_free(&s->state);
    s->c.ops->host_release(s->buffer);
    free(s);
}
