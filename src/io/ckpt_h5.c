/* Checkpoint shard files and the rank-0 state file in HDF5 (see ckpt_h5.h). */
#include "io/ckpt_h5.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "io/h5_io.h"
#include "io/weights_h5.h"

/* One table per file kind names every int64 attribute once, for both the
 * writer and the reader. */
typedef struct {
    const char *name;
    size_t offset;
} i64_attr;

static const i64_attr STATE_ATTRS[] = {
    {"format_version", offsetof(ckpt_state, format_version)},
    {"step", offsetof(ckpt_state, step)},
    {"samples_consumed", offsetof(ckpt_state, samples_consumed)},
    {"optimizer_step", offsetof(ckpt_state, optimizer_step)},
    {"world_size", offsetof(ckpt_state, world)},
    {"n_elements", offsetof(ckpt_state, n_elements)},
    {"seq_len", offsetof(ckpt_state, seq_len)},
    {"micro_batch", offsetof(ckpt_state, micro_batch)},
    {"total_batch", offsetof(ckpt_state, total_batch)},
    {"zero_stage", offsetof(ckpt_state, zero_stage)},
    {"train_samples", offsetof(ckpt_state, train_samples)},
};

static const i64_attr SHARD_ATTRS[] = {
    {"format_version", offsetof(ckpt_shard_header, format_version)},
    {"rank", offsetof(ckpt_shard_header, rank)},
    {"world_size", offsetof(ckpt_shard_header, world)},
    {"step", offsetof(ckpt_shard_header, step)},
    {"lo", offsetof(ckpt_shard_header, lo)},
    {"hi", offsetof(ckpt_shard_header, hi)},
    {"n_elements", offsetof(ckpt_shard_header, n_elements)},
    {"optimizer_step", offsetof(ckpt_shard_header, optimizer_step)},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int64_t *field(const void *base, const i64_attr *a) {
    return (int64_t *)((char *)base + a->offset);
}

static void attrs_write(hid_t obj, const i64_attr *attrs, size_t n, const void *base) {
    for (size_t i = 0; i < n; i++) h5_attr_write_i64(obj, attrs[i].name, *field(base, &attrs[i]));
}

static void attrs_read(hid_t obj, const char *path, const i64_attr *attrs, size_t n, void *base) {
    for (size_t i = 0; i < n; i++)
        *field(base, &attrs[i]) = h5_attr_read_i64(obj, path, attrs[i].name);
}

/* ------------------------------------------------------------------ shards */

hid_t ckpt_h5_shard_create(const char *path, const ckpt_shard_header *h) {
    hid_t file = h5_create(path);
    h5_attr_write_str(file, "format", "gpt2_ddp checkpoint shard v1");
    attrs_write(file, SHARD_ATTRS, N_OF(SHARD_ATTRS), h);
    return file;
}

hid_t ckpt_h5_shard_open(const char *path, const ckpt_shard_header *expected) {
    hid_t file = h5_open_read_whole(path, "checkpoint shard");
    ckpt_shard_header got;
    attrs_read(file, path, SHARD_ATTRS, N_OF(SHARD_ATTRS), &got);
    for (size_t i = 0; i < N_OF(SHARD_ATTRS); i++) {
        int64_t g = *field(&got, &SHARD_ATTRS[i]), e = *field(expected, &SHARD_ATTRS[i]);
        if (g != e)
            FAIL("%s: attribute %s = %lld, but %s says %lld (a shard of another checkpoint?)", path,
                 SHARD_ATTRS[i].name, (long long)g, "the checkpoint's model.h5", (long long)e);
    }
    return file;
}

/* ------------------------------------------------------------ rank-0 file */

void ckpt_h5_model_write(const char *path, const gpt2_layout *lay, const float *host_master,
                         const ckpt_state *st) {
    hid_t file = h5_create(path);
    h5_attr_write_str(file, "format", "gpt2_ddp checkpoint v1");
    attrs_write(file, STATE_ATTRS, N_OF(STATE_ATTRS), st);
    h5_attr_write_u64(file, "seed", st->seed);
    h5_attr_write_f64(file, "lr", st->lr);
    h5_attr_write_str(file, "optimizer", st->optimizer);
    h5_attr_write_i64_array(file, "shard_lo", st->shard_lo, (size_t)st->world);
    h5_attr_write_i64_array(file, "shard_hi", st->shard_hi, (size_t)st->world);
    h5_attr_write_i64_array(file, "loader_position", st->loader_position, (size_t)st->world);
    weights_write(file, path, lay, host_master, st->config_text);
    h5_close(file, path);
}

void ckpt_h5_state_read(const char *path, ckpt_state *st) {
    memset(st, 0, sizeof *st);
    /* Every rank reads the same file and comes to the same verdict. */
    model_shape shape;
    char err[8192]; /* a path and a message */
    if (weights_read_shape(path, &shape, err, sizeof err) != 0)
        fail_collective(EXIT_USAGE,
                        "cannot resume: %s (the checkpoint's model file is not one this build "
                        "can read: resume=<step> continues from another checkpoint)",
                        err);
    st->n_layer = (int)shape.n_layer, st->n_embd = (int)shape.n_embd;
    st->n_head = (int)shape.n_head, st->vocab_size = (int)shape.vocab_size;
    st->padded_vocab_size = (int)shape.padded_vocab_size, st->block_size = (int)shape.block_size;
    hid_t file = h5_open_read(path, "checkpoint file");
    attrs_read(file, path, STATE_ATTRS, N_OF(STATE_ATTRS), st);
    if (st->format_version != CKPT_FORMAT_VERSION)
        FAIL("%s: checkpoint format version %lld, this build reads version %d", path,
             (long long)st->format_version, CKPT_FORMAT_VERSION);
    if (st->world < 1 || st->world > (1 << 24))
        FAIL("%s: world_size = %lld is not a rank count", path, (long long)st->world);
    st->seed = h5_attr_read_u64(file, path, "seed");
    st->lr = h5_attr_read_f64(file, path, "lr");
    size_t n = (size_t)st->world;
    st->shard_lo = xcalloc(n, sizeof(int64_t));
    st->shard_hi = xcalloc(n, sizeof(int64_t));
    st->loader_position = xcalloc(n, sizeof(int64_t));
    h5_attr_read_i64_array(file, path, "shard_lo", st->shard_lo, n);
    h5_attr_read_i64_array(file, path, "shard_hi", st->shard_hi, n);
    h5_attr_read_i64_array(file, path, "loader_position", st->loader_position, n);
    st->config_text = h5_attr_read_str(file, path, "config");
    /* Written since the optimizer became a seam; before, AdamW's alone. */
    snprintf(st->optimizer, sizeof st->optimizer, "adamw");
    if (H5Aexists(file, "optimizer") > 0) {
        char *name = h5_attr_read_str(file, path, "optimizer");
        snprintf(st->optimizer, sizeof st->optimizer, "%s", name);
        free(name);
    }
    H5Fclose(file);
}

void ckpt_state_free(ckpt_state *st) {
    free(st->shard_lo);
    free(st->shard_hi);
    free(st->loader_position);
    free(st->config_text);
    memset(st, 0, sizeof *st);
}

ckpt_shard_header ckpt_shard_expected(const ckpt_state *st, int k) {
    return (ckpt_shard_header){.format_version = CKPT_FORMAT_VERSION,
                               .rank = k,
                               .world = st->world,
                               .step = st->step,
                               .lo = st->shard_lo[k],
                               .hi = st->shard_hi[k],
                               .n_elements = st->n_elements,
                               .optimizer_step = st->optimizer_step};
}
