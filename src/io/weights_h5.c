/* HDF5 weights file: named fp32 datasets and size attributes (see weights_h5.h). */
#include "io/weights_h5.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fail.h"
#include "io/h5_io.h"

/* The size attributes are model/shape.h's names, in its order. */
#define SIZE_ATTRS shape_size_names

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

static int read_sizes(hid_t file, const char *path, model_shape *s, char *err, size_t err_len) {
    for (int i = 0; i < SHAPE_N_SIZES; i++) {
        char why[128];
        if (h5_attr_get_i64(file, SIZE_ATTRS[i], shape_size(s, i), why, sizeof why) != 0)
            return set_error(err, err_len,
                             "%s: size attribute '%s': %s (a gpt2_ddp weights file has the "
                             "integer attributes n_layer, n_embd, n_head, vocab_size, "
                             "padded_vocab_size and block_size)",
                             path, SIZE_ATTRS[i], why);
    }
    char why[512];
    if (shape_check(s, NULL, why, sizeof why) != 0)
        return set_error(err, err_len, "%s: %s", path, why);
    return 0;
}

/* "192 x 64" */
static void format_dims(char *buf, size_t len, int ndim, const int64_t *dims) {
    if (ndim == 1)
        snprintf(buf, len, "%lld", (long long)dims[0]);
    else if (ndim == 2)
        snprintf(buf, len, "%lld x %lld", (long long)dims[0], (long long)dims[1]);
    else
        snprintf(buf, len, "a %d-D array", ndim);
}

/* A tensor's shape in terms of the sizes: "3 n_embd x n_embd". */
static void format_rule(char *buf, size_t len, const gpt2_layout *lay, const param_tensor *t) {
    char dim[2][32];
    for (int i = 0; i < t->ndim; i++) {
        const int64_t k = t->shape[i] / lay->n_embd;
        if (i == 0 && strcmp(t->name, "wte.weight") == 0)
            snprintf(dim[i], sizeof dim[i], "padded_vocab_size");
        else if (i == 0 && strcmp(t->name, "wpe.weight") == 0)
            snprintf(dim[i], sizeof dim[i], "block_size");
        else if (k == 1)
            snprintf(dim[i], sizeof dim[i], "n_embd");
        else
            snprintf(dim[i], sizeof dim[i], "%lld n_embd", (long long)k);
    }
    snprintf(buf, len, t->ndim == 2 ? "%s x %s" : "%s", dim[0], dim[1]);
}

/* Every tensor of lay is a floating-point dataset of its shape. */
static int check_datasets(hid_t file, const char *path, const gpt2_layout *lay, char *err,
                          size_t err_len) {
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        int ndim = 0;
        int64_t dims[2];
        bool is_float = false;
        if (h5_dataset_info(file, t->name, &ndim, dims, &is_float) != 0)
            return set_error(err, err_len,
                             "%s: dataset %s is missing (a model of n_layer = %d has it)", path,
                             t->name, lay->n_layer);
        if (!is_float)
            return set_error(err, err_len, "%s: dataset %s does not hold floating-point numbers",
                             path, t->name);
        if (ndim == t->ndim && dims[0] == t->shape[0] && (ndim == 1 || dims[1] == t->shape[1]))
            continue;
        char got[48], want[48], rule[64];
        format_dims(got, sizeof got, ndim, dims);
        format_dims(want, sizeof want, t->ndim, t->shape);
        format_rule(rule, sizeof rule, lay, t);
        return set_error(err, err_len,
                         "%s: dataset %s is %s, but the size attributes make it %s (%s; n_embd = "
                         "%d, block_size = %d, padded_vocab_size = %d)",
                         path, t->name, got, want, rule, lay->n_embd, lay->block_size,
                         lay->padded_vocab_size);
    }
    /* A file whose n_layer was lowered would otherwise load its first
     * layers and drop the rest without a word. */
    char extra[LAYOUT_NAME_MAX];
    snprintf(extra, sizeof extra, "h.%d.ln_1.weight", lay->n_layer);
    int ndim = 0;
    int64_t dims[2];
    bool is_float = false;
    if (h5_dataset_info(file, extra, &ndim, dims, &is_float) == 0)
        return set_error(err, err_len,
                         "%s: dataset %s is a layer beyond n_layer = %d (the size attribute "
                         "does not match the layers the file stores)",
                         path, extra, lay->n_layer);
    return 0;
}

int weights_read_shape(const char *path, model_shape *s, char *err, size_t err_len) {
    hid_t file = h5_open_read(path, "weights file");
    int rc = read_sizes(file, path, s, err, err_len);
    if (rc == 0) {
        gpt2_layout lay;
        shape_layout_build(s, &lay);
        rc = check_datasets(file, path, &lay, err, err_len);
        layout_free(&lay);
    }
    H5Fclose(file);
    return rc;
}

void weights_read(hid_t file, const char *path, const gpt2_layout *lay, float *host_params) {
    memset(host_params, 0, lay->n_elements * sizeof(float));
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        h5_read_f32(file, path, t->name, t->ndim, t->shape, host_params + t->offset);
    }
}

void weights_load(const char *path, const gpt2_layout *lay, float *host_params) {
    hid_t file = h5_open_read_whole(path, "weights file");
    weights_read(file, path, lay, host_params);
    H5Fclose(file);
}
