/* The save that training waits for (see ckpt.h): shards, rank-0 file,
 * barrier, then rank 0 publishes it (ckpt_write.h). */
#include "ckpt/ckpt.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/fail.h"
#include "base/files.h"
#include "ckpt/ckpt_fp8.h"
#include "ckpt/ckpt_write.h"
#include "io/ckpt_dir.h"
#include "io/ckpt_h5.h"
#include "io/h5_io.h"

/* This rank's slice [lo, hi) of the shard map: every array of the
 * optimizer, master first (the optimizer holds that slice, ZeRO-1, or
 * everything, ZeRO-0 and one rank); rank 0 also writes model.h5. The slice
 * is staged at [lo, hi) of the host scratch, where the gathered master has
 * it too, so no buffer is allocated (first-touch page faults of a fresh
 * 0.5 GB buffer cost seconds at 124M); rank 0 writes model.h5 from the
 * gathered master before the other arrays reuse it. */
static void save_files(const ckpt_ctx *c, const char *dir, const ckpt_progress *p) {
    const data_parallel *d = c->ddp;
    const optimizer *opt = c->opt;
    const int rank = d->comm->rank;
    const size_t lo = d->map.lo[rank], hi = d->map.hi[rank], n = hi - lo;
    CHECK(opt->lo <= lo && hi <= opt->hi, "optimizer range [%zu, %zu) lacks shard [%zu, %zu)",
          opt->lo, opt->hi, lo, hi);
    const ckpt_shard_header h = ckpt_write_shard_header(c, p->step, opt->step);
    char path[CKPT_PATH_MAX + 32];
    ckpt_shard_path(path, sizeof path, dir, rank);
    hid_t file = ckpt_h5_shard_create(path, &h);
    float *stage = c->host_scratch + lo;
    const int64_t len = (int64_t)n;
    for (int i = 0; i < optimizer_n_arrays(opt->kind); i++) {
        c->ops->download(stage, optimizer_array(opt, i) + (lo - opt->lo), n * sizeof(float));
        h5_write_f32(file, path, optimizer_array_name(opt->kind, i), 1, &len, stage);
        if (i > 0) continue;
        ckpt_write_gather_master(c, stage, n, c->host_scratch);
        if (rank != 0) continue;
        ckpt_state st;
        ckpt_write_state(c, p, opt->step, &st);
        ckpt_write_model(c, dir, c->host_scratch, &st);
        ckpt_write_state_free(&st);
    }
    if (c->fp8) {
        fp8_layers_state fs;
        fp8_layers_state_get(c->fp8, c->ops, &fs);
        ckpt_fp8_write(file, path, &fs);
        fp8_layers_state_free(&fs);
    }
    h5_close(file, path);
    fsync_path(path);
}

void ckpt_save(const ckpt_ctx *c, const ckpt_progress *p, ckpt_save_report *rep) {
    const double t0 = clock_s();
    const int rank = c->ddp->comm->rank;
    char tmp[CKPT_PATH_MAX], final[CKPT_PATH_MAX];
    ckpt_tmp_dir(tmp, sizeof tmp, c->run_dir, p->step);
    ckpt_step_dir(final, sizeof final, c->run_dir, p->step);
    if (rank == 0) {
        remove_tree(tmp);
        make_dirs_or_fail(tmp);
    }
    group_barrier(c->job);
    const double t_files = clock_s();
    save_files(c, tmp, p);
    double write_s = clock_s() - t_files;
    ckpt_write_test_delay();
    group_allreduce_double(c->job, &write_s, 1, GROUP_MAX);
    *rep = (ckpt_save_report){.step = p->step, .async = false, .write_s = write_s};
    if (rank == 0) {
        rep->bytes = ckpt_write_publish(c, tmp, final, p->step);
        char report[6000];
        ckpt_prune(c->run_dir, c->cfg->keep_last, report, sizeof report);
        if (report[0]) printf("%s\n", report);
        rep->stall_s = clock_s() - t0;
        ckpt_write_print(rep, final);
    }
    group_barrier(c->job);
    rep->stall_s = clock_s() - t0;
}
