/* Model weights as an HDF5 file of named fp32 datasets (GPT-2 names, nn.Linear
 * (out, in) shapes) plus the model sizes and config text as attributes:
 * readable by h5dump and h5py alone. Written by training runs and read by
 * gpt2_sample; the checkpoint's rank-0 file is the same content plus the run
 * state (ckpt_h5.h), so it is a weights file too. */
#ifndef GPT2_IO_WEIGHTS_H5_H
#define GPT2_IO_WEIGHTS_H5_H

#include <hdf5.h>
#include <stddef.h>

#include "model/layout.h"
#include "model/shape.h"

/* Writes the size attributes, the config text (may be NULL) and every tensor
 * of lay from host_params (flat fp32) into an open file; path is for messages. */
void weights_write(hid_t file, const char *path, const gpt2_layout *lay, const float *host_params,
                   const char *config_text);

/* A weights file at path, written through a temporary file renamed into
 * place. Fails the process on I/O errors. */
void weights_save(const char *path, const gpt2_layout *lay, const float *host_params,
                  const char *config_text);

/* Reads the model sizes stored in path and checks them (model/shape.h)
 * and every tensor's dataset (present, floating point, of the shape the
 * sizes imply) without reading any tensor: 0, or -1 with "path: problem"
 * in err when path is not a gpt2_ddp weights file of one consistent shape
 * (bad input: callers exit 2). A file HDF5 cannot open (damaged) fails the
 * process as h5_open_read does. */
int weights_read_shape(const char *path, model_shape *s, char *err, size_t err_len);

/* Reads every tensor of lay into host_params (flat fp32, zeroed first); a
 * missing dataset, a shape mismatch or a checksum error fails, naming the
 * file and the tensor. */
void weights_read(hid_t file, const char *path, const gpt2_layout *lay, float *host_params);
void weights_load(const char *path, const gpt2_layout *lay, float *host_params);
#endif
