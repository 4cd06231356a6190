/* Weights from a checkpoint, a weights file, an llm.c file or a Hugging Face
 * directory (see model_io.h). */
#include "io/model_io.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fail.h"
#include "base/files.h"
#include "io/h5_io.h"
#include "io/llmc_io.h"
#include "io/weights_h5.h"

#ifndef GPT2_HAVE_HF
#define GPT2_HAVE_HF 0 /* built without json-c: no Hugging Face directories */
#endif
#if GPT2_HAVE_HF
#include "io/hf_gpt2.h"
#endif

static bool has_file(const char *dir, const char *name) {
    char path[CKPT_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return is_regular_file(path);
}

/* A directory as transformers' save_pretrained or the Hub leaves it. */
static bool is_hf_dir(const char *dir) {
    return has_file(dir, "config.json") || has_file(dir, "model.safetensors") ||
           has_file(dir, "model.safetensors.index.json");
}

static int open_hf(model_source *s, const char *path, char *err, size_t err_len) {
#if GPT2_HAVE_HF
    hf_config c;
    gpt2_layout lay;
    if (hf_open(path, &c, &lay, err, err_len) != 0) return -1;
    layout_free(&lay);
    s->kind = MODEL_FROM_HF;
    snprintf(s->file, sizeof s->file, "%s", path);
    s->n_layer = c.n_layer, s->n_embd = c.n_embd, s->n_head = c.n_head;
    s->vocab_size = c.vocab_size, s->padded_vocab_size = (int)shape_padded_vocab(c.vocab_size);
    s->block_size = c.n_positions;
    return 0;
#else
    (void)s;
    snprintf(err, err_len,
             "%s: a Hugging Face model directory, but this binary was built without json-c, "
             "which reads it (apt-get install libjson-c-dev, then configure again)",
             path);
    return -1;
#endif
}

/* A step directory whose marker is missing: being written, or left by a
 * crash. Its model.h5 may be half written, so it is never read. */
static bool is_partial_checkpoint(const char *dir) {
    char run_dir[CKPT_PATH_MAX];
    char shard[CKPT_PATH_MAX + 32];
    ckpt_shard_path(shard, sizeof shard, dir, 0);
    return ckpt_split_step_dir(dir, run_dir, sizeof run_dir) >= 0 || is_regular_file(shard);
}

/* A step directory; or a run directory: its final weights (model.h5, what a
 * user who trained a run means by "the run's model"), else its newest
 * complete checkpoint. */
static int resolve_dir(model_source *s, const char *path, char *err, size_t err_len) {
    char dir[CKPT_PATH_MAX];
    if (ckpt_is_complete(path)) {
        snprintf(dir, sizeof dir, "%s", path);
    } else if (is_partial_checkpoint(path)) {
        return set_error(err, err_len,
                         "%s: an incomplete checkpoint (no %s marker: it was being written, or "
                         "the run stopped while writing it); use a complete step_* directory or "
                         "the run directory above it",
                         path, CKPT_MARKER);
    } else if (has_file(path, CKPT_MODEL_FILE)) {
        s->kind = MODEL_FROM_WEIGHTS;
        ckpt_model_path(s->file, sizeof s->file, path);
        s->from_run_dir = true;
        return 0;
    } else if (ckpt_find_newest(path, dir, sizeof dir) < 0) {
        return set_error(err, err_len,
                         "%s: a directory without weights: no %s (a finished run's weights), no "
                         "complete step_* checkpoint, and no config.json or model.safetensors (a "
                         "Hugging Face model); pass a run or step directory, a weights .h5, an "
                         "llm.c .bin or a Hugging Face directory",
                         path, CKPT_MODEL_FILE);
    } else {
        s->from_run_dir = true;
    }
    s->kind = MODEL_FROM_CHECKPOINT;
    ckpt_model_path(s->file, sizeof s->file, dir);
    return 0;
}

/* The sizes of a source that passed its reader's checks. */
static void set_sizes(model_source *s, const model_shape *shape) {
    s->n_layer = (int)shape->n_layer, s->n_embd = (int)shape->n_embd;
    s->n_head = (int)shape->n_head, s->vocab_size = (int)shape->vocab_size;
    s->padded_vocab_size = (int)shape->padded_vocab_size, s->block_size = (int)shape->block_size;
}

/* A file: an llm.c model (by its magic) or an HDF5 weights file. */
static int open_file(model_source *s, char *err, size_t err_len) {
    model_shape shape;
    if (llmc_is_model_file(s->file)) {
        llmc_header h;
        if (llmc_read_header(s->file, &h, err, err_len) != 0) return -1;
        s->kind = MODEL_FROM_LLMC;
        shape = llmc_header_shape(&h);
    } else if (h5_is_hdf5(s->file)) {
        if (weights_read_shape(s->file, &shape, err, err_len) != 0) return -1;
    } else {
        return set_error(err, err_len,
                         "%s: neither an HDF5 weights file nor an llm.c model file (accepted: a "
                         "weights .h5 such as a run's model.h5, a checkpoint's step or run "
                         "directory, an llm.c .bin, or a Hugging Face GPT-2 directory)",
                         s->file);
    }
    set_sizes(s, &shape);
    return 0;
}

int model_source_open(model_source *s, const char *path, char *err, size_t err_len) {
    memset(s, 0, sizeof *s);
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode) && is_hf_dir(path)) return open_hf(s, path, err, err_len);
    if (S_ISDIR(st.st_mode)) {
        if (resolve_dir(s, path, err, err_len) != 0) return -1;
        model_shape shape;
        if (weights_read_shape(s->file, &shape, err, err_len) != 0) return -1;
        set_sizes(s, &shape);
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return set_error(err, err_len, "%s: not a regular file nor a directory", path);
    snprintf(s->file, sizeof s->file, "%s", path);
    s->kind = MODEL_FROM_WEIGHTS;
    return open_file(s, err, err_len);
}

model_shape model_source_shape(const model_source *s) {
    return (model_shape){.n_layer = s->n_layer,
                         .n_embd = s->n_embd,
                         .n_head = s->n_head,
                         .vocab_size = s->vocab_size,
                         .padded_vocab_size = s->padded_vocab_size,
                         .block_size = s->block_size};
}

void model_source_layout(const model_source *s, gpt2_layout *lay) {
    layout_build(lay, s->n_layer, s->n_embd, s->n_head, s->vocab_size, s->padded_vocab_size,
                 s->block_size);
}

void model_source_load(const model_source *s, const gpt2_layout *lay, float *host_params) {
#if GPT2_HAVE_HF
    if (s->kind == MODEL_FROM_HF) {
        char err[CKPT_PATH_MAX + 512];
        if (hf_load(s->file, lay, host_params, err, sizeof err) != 0)
            fail_collective(EXIT_USAGE, "%s", err);
        return;
    }
#endif
    if (s->kind == MODEL_FROM_LLMC)
        llmc_load(s->file, lay, host_params);
    else
        weights_load(s->file, lay, host_params);
}

const char *model_source_kind_name(model_source_kind kind) {
    switch (kind) {
    case MODEL_FROM_CHECKPOINT: return "checkpoint";
    case MODEL_FROM_WEIGHTS: return "weights file";
    case MODEL_FROM_LLMC: return "llm.c model file";
    case MODEL_FROM_HF: return "Hugging Face model";
    }
    return "?";
}

char *model_source_config_text(const model_source *s) {
    if (s->kind != MODEL_FROM_CHECKPOINT && s->kind != MODEL_FROM_WEIGHTS) return NULL;
    if (!h5_is_hdf5(s->file)) return NULL;
    hid_t file = h5_open_read(s->file, "weights");
    char *text = H5Aexists(file, "config") > 0 ? h5_attr_read_str(file, s->file, "config") : NULL;
    h5_close(file, s->file);
    return text;
}
