/* The FP8 scaling state in checkpoints (see ckpt_fp8.h). */
#include "ckpt/ckpt_fp8.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "io/ckpt_dir.h"
#include "io/h5_io.h"

void ckpt_fp8_write(hid_t file, const char *path, const fp8_layers_state *s) {
    const int64_t n = s->n, dims[2] = {s->n, s->len};
    h5_write_f32(file, path, "fp8_scale", 1, &n, s->scale);
    h5_write_f32(file, path, "fp8_amax", 1, &n, s->amax);
    h5_write_f32(file, path, "fp8_bootstrapped", 1, &n, s->bootstrapped);
    h5_write_f32(file, path, "fp8_history", 2, dims, s->history);
    h5_attr_write_i64(file, "fp8_forwards", s->forwards);
}

void ckpt_fp8_load(const ckpt_ctx *c, const char *dir, const ckpt_state *st) {
    const int rank = c->ddp->comm->rank;
    const int from = rank < st->world ? rank : 0;
    const ckpt_shard_header expect = ckpt_shard_expected(st, from);
    char path[CKPT_PATH_MAX + 32];
    ckpt_shard_path(path, sizeof path, dir, from);
    hid_t file = ckpt_h5_shard_open(path, &expect);
    fp8_layers_state now;
    fp8_layers_state_get(c->fp8, c->ops, &now);
    int ndim = 0;
    int64_t dims[2] = {0, 0};
    bool is_float = false;
    const char *why = NULL;
    char detail[160];
    if (h5_dataset_info(file, "fp8_history", &ndim, dims, &is_float) != 0) {
        why = "it was saved with fp8 = false";
    } else if (ndim != 2 || dims[0] != now.n || dims[1] != now.len) {
        snprintf(detail, sizeof detail,
                 "its state is for %lld tensors x %lld steps of history, this run has %d x %d "
                 "(fp8_amax_history changed?)",
                 (long long)dims[0], (long long)(ndim == 2 ? dims[1] : 0), now.n, now.len);
        why = detail;
    }
    if (why) {
        if (rank == 0)
            printf("fp8: %s has no FP8 scaling state for this run (%s): the scales start "
                   "again from each tensor's first cast\n",
                   dir, why);
    } else {
        const int64_t n = now.n;
        h5_read_f32(file, path, "fp8_scale", 1, &n, now.scale);
        h5_read_f32(file, path, "fp8_amax", 1, &n, now.amax);
        h5_read_f32(file, path, "fp8_bootstrapped", 1, &n, now.bootstrapped);
        h5_read_f32(file, path, "fp8_history", 2, dims, now.history);
        now.forwards = h5_attr_read_i64(file, path, "fp8_forwards");
        fp8_layers_state_set(c->fp8, c->ops, &now);
    }
    fp8_layers_state_free(&now);
    h5_close(file, path);
}
