/* HDF5 weights file: named fp32 datasets and size attributes (see weights_h5.h). */
#include "dist/weights_h5.h"

#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#include "dist/fail.h"

static const char *const SIZE_ATTRS[] = {"n_layer",    "n_embd",
                                         "n_head",     "vocab_size",
                                         "padded_vocab_size", "block_size"};

static void attr_write_int(hid_t obj, const char *name, int value) {
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(obj, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
    H5_CHECK(attr);
    H5_CHECK(H5Awrite(attr, H5T_NATIVE_INT, &value));
    H5Aclose(attr);
    H5Sclose(space);
}

static void attr_write_string(hid_t obj, const char *name, const char *value) {
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, strlen(value) + 1);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    H5_CHECK(attr);
    H5_CHECK(H5Awrite(attr, type, value));
    H5Aclose(attr);
    H5Sclose(space);
    H5Tclose(type);
}

void weights_save(const char *path, const gpt2_layout *lay, const float *host_params,
                  const char *config_text) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) FAIL("cannot create %s", tmp);
    const int sizes[] = {lay->n_layer,    lay->n_embd,           lay->n_head,
                         lay->vocab_size, lay->padded_vocab_size, lay->block_size};
    for (int i = 0; i < 6; i++) attr_write_int(file, SIZE_ATTRS[i], sizes[i]);
    attr_write_string(file, "format", "gpt2_ddp weights v1");
    if (config_text) attr_write_string(file, "config", config_text);
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        hsize_t dims[2] = {(hsize_t)t->shape[0], (hsize_t)t->shape[1]};
        hid_t space = H5Screate_simple(t->ndim, dims, NULL);
        hid_t dset = H5Dcreate2(file, t->name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT);
        if (dset < 0) FAIL("%s: cannot create dataset %s", tmp, t->name);
        H5_CHECK(H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                          host_params + t->offset));
        H5Dclose(dset);
        H5Sclose(space);
    }
    if (H5Fclose(file) < 0) FAIL("%s: closing failed (disk full?)", tmp);
    if (rename(tmp, path) != 0) FAIL("cannot rename %s to %s", tmp, path);
}

static hid_t open_weights(const char *path) {
    FILE *probe = fopen(path, "rb");
    if (!probe) FAIL("cannot open weights file %s", path);
    fclose(probe);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) FAIL("%s: not an HDF5 file", path);
    return file;
}

void weights_read_sizes(const char *path, int *n_layer, int *n_embd, int *n_head,
                        int *vocab_size, int *padded_vocab_size, int *block_size) {
    hid_t file = open_weights(path);
    int *out[] = {n_layer, n_embd, n_head, vocab_size, padded_vocab_size, block_size};
    for (int i = 0; i < 6; i++) {
        if (H5Aexists(file, SIZE_ATTRS[i]) <= 0)
            FAIL("%s: attribute '%s' missing (not a gpt2_ddp weights file)", path, SIZE_ATTRS[i]);
        hid_t attr = H5Aopen(file, SIZE_ATTRS[i], H5P_DEFAULT);
        H5_CHECK(H5Aread(attr, H5T_NATIVE_INT, out[i]));
        H5Aclose(attr);
    }
    H5Fclose(file);
}

void weights_load(const char *path, const gpt2_layout *lay, float *host_params) {
    hid_t file = open_weights(path);
    memset(host_params, 0, lay->n_elements * sizeof(float));
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        if (H5Lexists(file, t->name, H5P_DEFAULT) <= 0)
            FAIL("%s: dataset %s missing", path, t->name);
        hid_t dset = H5Dopen2(file, t->name, H5P_DEFAULT);
        hid_t space = H5Dget_space(dset);
        hsize_t dims[2] = {0, 0};
        int ndim = H5Sget_simple_extent_dims(space, dims, NULL);
        if (ndim != t->ndim || dims[0] != (hsize_t)t->shape[0] ||
            (ndim == 2 && dims[1] != (hsize_t)t->shape[1]))
            FAIL("%s: dataset %s has the wrong shape", path, t->name);
        if (H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                    host_params + t->offset) < 0)
            FAIL("%s: cannot read dataset %s", path, t->name);
        H5Sclose(space);
        H5Dclose(dset);
    }
    H5Fclose(file);
}
