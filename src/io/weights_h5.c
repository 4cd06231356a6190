/* HDF5 weights file: named fp32 datasets and size attributes (see weights_h5.h). */
#include "io/weights_h5.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fail.h"
#include "io/h5_io.h"

static const char *const SIZE_ATTRS[] = {"n_layer",           "n_embd",    "n_head", "vocab_size",
                                         "padded_vocab_size", "block_size"};

void weights_write(hid_t file, const char *path, const gpt2_layout *lay, const float *host_params,
                   const char *config_text) {
    const int sizes[] = {lay->n_layer,           lay->n_embd,    lay->n_head, lay->vocab_size,
                         lay->padded_vocab_size, lay->block_size};
    for (int i = 0; i < 6; i++) h5_attr_write_i64(file, SIZE_ATTRS[i], sizes[i]);
    if (config_text) h5_attr_write_str(file, "config", config_text);
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        h5_write_f32(file, path, t->name, t->ndim, t->shape, host_params + t->offset);
    }
}

/* A failed write (a full disk) must not leave a half-written PATH.tmp. */
static void remove_tmp(void *tmp) { unlink((const char *)tmp); }

void weights_save(const char *path, const gpt2_layout *lay, const float *host_params,
                  const char *config_text) {
    static char tmp[2100]; /* static: the failure's clean-up reads it */
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    fail_cleanup_push(remove_tmp, tmp);
    hid_t file = h5_create(tmp);
    h5_attr_write_str(file, "format", "gpt2_ddp weights v1");
    weights_write(file, tmp, lay, host_params, config_text);
    h5_close(file, tmp);
    if (rename(tmp, path) != 0) FAIL("cannot rename %s to %s: %s", tmp, path, strerror(errno));
    fail_cleanup_pop(remove_tmp, tmp);
}

void weights_read_sizes(const char *path, int *n_layer, int *n_embd, int *n_head, int *vocab_size,
                        int *padded_vocab_size, int *block_size) {
    hid_t file = h5_open_read(path, "weights file");
    int *out[] = {n_layer, n_embd, n_head, vocab_size, padded_vocab_size, block_size};
    for (int i = 0; i < 6; i++) {
        if (H5Aexists(file, SIZE_ATTRS[i]) <= 0)
            FAIL("%s: attribute '%s' missing (not a gpt2_ddp weights file)", path, SIZE_ATTRS[i]);
        *out[i] = (int)h5_attr_read_i64(file, path, SIZE_ATTRS[i]);
    }
    H5Fclose(file);
}

void weights_read(hid_t file, const char *path, const gpt2_layout *lay, float *host_params) {
    memset(host_params, 0, lay->n_elements * sizeof(float));
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        h5_read_f32(file, path, t->name, t->ndim, t->shape, host_params + t->offset);
    }
}

void weights_load(const char *path, const gpt2_layout *lay, float *host_params) {
    hid_t file = h5_open_read(path, "weights file");
    weights_read(file, path, lay, host_params);
    H5Fclose(file);
}
