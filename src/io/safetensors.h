/* safetensors, Hugging Face's tensor file (github.com/huggingface/safetensors,
 * "Format"): an unsigned little-endian 64-bit header length N; N bytes of
 * UTF-8 JSON that begin with '{' and may end in spaces,
 *   {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]},
 *    ..., "__metadata__": {"format": "pt"}}
 * (offsets relative to the byte buffer; metadata values are strings); then
 * the byte buffer: every tensor little-endian, row-major, and together they
 * cover it exactly (no holes, no overlaps).
 *
 * The reader checks all of that, plus the reference implementation's header
 * limit (100 MB) and the file length, before any tensor is read, so a
 * truncated or corrupt file is refused with a message that names it. The
 * writer writes what the reference writes: the header padded with spaces to
 * a multiple of 8 bytes, tensors in the order given, back to back. */
#ifndef GPT2_IO_SAFETENSORS_H
#define GPT2_IO_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER 100000000ull /* the reference implementation's limit */

/* The floating-point dtypes we convert from; every other dtype of the
 * specification is accepted in a file (ST_OTHER) but not converted. */
typedef enum { ST_F32, ST_F16, ST_BF16, ST_F64, ST_OTHER } st_dtype;

typedef struct {
    char *name;
    char dtype_name[8]; /* as in the header: "F32", "BF16", "I64", ... */
    st_dtype dtype;
    int elem_bytes;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    uint64_t begin, end; /* byte range in the byte buffer */
} st_tensor;

typedef struct {
    char *path;
    uint64_t header_len; /* N */
    uint64_t file_size;
    st_tensor *tensors; /* in header order */
    int n_tensors;
    char format[16]; /* __metadata__["format"], "" when absent */
} st_file;

/* Reads and checks the header of path; returns -1 with "path: problem" in
 * err when the file is missing, truncated or not valid safetensors. */
int st_open(st_file *f, const char *path, char *err, size_t err_len);
void st_close(st_file *f);

/* The tensor named name, or NULL. */
const st_tensor *st_find(const st_file *f, const char *name);
size_t st_numel(const st_tensor *t);
/* "[768, 2304]" */
void st_format_shape(int ndim, const int64_t *shape, char *buf, size_t len);

/* Reads tensor t as fp32 (F32 as is, F16/BF16 widened exactly, F64
 * rounded) into out (st_numel(t) floats); -1 with err for another dtype or
 * a read error. */
int st_read_f32(const st_file *f, const st_tensor *t, float *out, char *err, size_t err_len);

/* ---- writing */

/* One tensor to write: its fp32 values come from fill (called once, in
 * order, with a buffer of numel floats), so that a caller can transpose or
 * gather a tensor without holding a second copy of the model. */
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
} st_spec;
typedef void (*st_fill_fn)(void *ctx, int index, float *out);

/* Writes n tensors as F32 or (bf16) BF16, rounded to nearest even, with
 * __metadata__ from metadata (key, value pairs, NULL-terminated; may be
 * NULL) to path. Returns -1 with err on an I/O error (the file may then be
 * partial: write to a temporary name and rename). */
int st_write(const char *path, const st_spec *tensors, int n, bool bf16, st_fill_fn fill, void *ctx,
             const char *const *metadata, char *err, size_t err_len);
#endif
