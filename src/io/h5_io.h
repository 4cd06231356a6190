/* HDF5 helpers shared by the weights file and the checkpoint files: files in
 * the HDF5 1.10 format (checksummed metadata), scalar and array attributes,
 * and fp32 datasets with a CRC32C per 4 MiB block, so that a damaged byte
 * anywhere is found when it is read. Every failure ends the process with a
 * message naming the file, the object and the reason ("elements [0, 1048576)
 * do not match their CRC32C checksum", HDF5's "truncated file"). */
#ifndef GPT2_IO_H5_IO_H
#define GPT2_IO_H5_IO_H

#include <hdf5.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* fp32 datasets are written contiguous and unfiltered, with one CRC32C
 * per H5_SUM_BLOCK elements (4 MiB) of the flattened data in the dataset's
 * attribute H5_SUMS_ATTR; every read checks the blocks it touches (older
 * files' Fletcher32 chunks are checked by HDF5 itself). */
#define H5_SUM_BLOCK ((int64_t)1 << 20)
#define H5_SUMS_ATTR "crc32c_per_4MiB"
/* CRC-32C of n bytes continuing crc (0 to start); portable: the table
 * version even where the CPU has SSE4.2 (the tests compare both). */
uint32_t h5_crc32c(uint32_t crc, const void *data, size_t n, bool portable);

/* Creates (truncates) path for writing. While it is open, a thread starts
 * the disk's write-back of what is written, so that the final fsync finds
 * little left (h5_io.c says why); h5_close ends it. */
hid_t h5_create(const char *path);
/* Opens an existing file read-only; what names the file's role in messages
 * ("weights file", "checkpoint shard"). */
hid_t h5_open_read(const char *path, const char *what);
/* The same, for a file that is about to be read whole (a checkpoint shard,
 * weights being loaded): a large one is read into the page cache in the
 * background meanwhile, so that the disk works while HDF5 checks and copies. */
hid_t h5_open_read_whole(const char *path, const char *what);
/* Does path begin with HDF5's file signature? (false when unreadable) */
bool h5_is_hdf5(const char *path);
/* Closes a file; a failure (disk full while flushing) names path. */
void h5_close(hid_t file, const char *path);

/* HDF5's innermost error description of the last failed call, for messages. */
void h5_last_error(char *buf, size_t len);

void h5_attr_write_i64(hid_t obj, const char *name, int64_t value);
/* A 1-D attribute of n values (n >= 1). */
void h5_attr_write_i64_array(hid_t obj, const char *name, const int64_t *values, size_t n);
void h5_attr_write_u64(hid_t obj, const char *name, uint64_t value);
void h5_attr_write_f64(hid_t obj, const char *name, double value);
void h5_attr_write_str(hid_t obj, const char *name, const char *value);

/* Readers fail naming path and the attribute when it is missing or has
 * another size than asked for. */
int64_t h5_attr_read_i64(hid_t obj, const char *path, const char *name);
void h5_attr_read_i64_array(hid_t obj, const char *path, const char *name, int64_t *values,
                            size_t n);
uint64_t h5_attr_read_u64(hid_t obj, const char *path, const char *name);
double h5_attr_read_f64(hid_t obj, const char *path, const char *name);
/* For readers that refuse a bad file themselves: a scalar integer
 * attribute into *value, or -1 with why ("missing", "not an integer", ...). */
int h5_attr_get_i64(hid_t obj, const char *name, int64_t *value, char *why, size_t why_len);
/* Returns a malloc'd string. */
char *h5_attr_read_str(hid_t obj, const char *path, const char *name);

/* Writes a 1-D or 2-D fp32 dataset from host memory, contiguous, with its
 * CRC32C per block (above). */
void h5_write_f32(hid_t file, const char *path, const char *name, int ndim, const int64_t *dims,
                  const float *data);
/* The rank (*ndim) and up to two dimensions of dataset name, and whether
 * it holds floating-point numbers: 0, or -1 when file has no dataset of
 * that name. Reads no data. */
int h5_dataset_info(hid_t file, const char *name, int *ndim, int64_t dims[2], bool *is_float);
/* Reads a whole dataset whose shape must be exactly (ndim, dims). */
void h5_read_f32(hid_t file, const char *path, const char *name, int ndim, const int64_t *dims,
                 float *out);
/* Reads elements [begin, begin + count) of a 1-D dataset of `length`
 * elements (a hyperslab: only the chunks it touches are read and checked). */
void h5_read_f32_range(hid_t file, const char *path, const char *name, int64_t length,
                       int64_t begin, int64_t count, float *out);
#endif
