/* safetensors reader and writer (see safetensors.h). */
#define _FILE_OFFSET_BITS 64
#include "io/safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fail.h"
#include "base/files.h"
#include "io/json_util.h"
#include "model/bf16.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "safetensors is little-endian; this reader copies bytes as they are");

/* Every dtype of the specification and its size in bytes. */
static const struct {
    const char *name;
    int bytes;
    st_dtype dtype;
} DTYPES[] = {
    {"F32", 4, ST_F32},       {"F16", 2, ST_F16},   {"BF16", 2, ST_BF16}, {"F64", 8, ST_F64},
    {"BOOL", 1, ST_OTHER},    {"U8", 1, ST_OTHER},  {"I8", 1, ST_OTHER},  {"F8_E5M2", 1, ST_OTHER},
    {"F8_E4M3", 1, ST_OTHER}, {"I16", 2, ST_OTHER}, {"U16", 2, ST_OTHER}, {"I32", 4, ST_OTHER},
    {"U32", 4, ST_OTHER},     {"I64", 8, ST_OTHER}, {"U64", 8, ST_OTHER},
};

void st_format_shape(int ndim, const int64_t *shape, char *buf, size_t len) {
    size_t o = snprintf(buf, len, "[");
    for (int i = 0; i < ndim && o < len; i++)
        o += snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

size_t st_numel(const st_tensor *t) {
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

const st_tensor *st_find(const st_file *f, const char *name) {
    for (int i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

void st_close(st_file *f) {
    for (int i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------------------ header */

static bool json_uint(json_object *v, uint64_t *out) {
    if (!v || !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) return false;
    *out = (uint64_t)json_object_get_int64(v);
    return true;
}

/* One entry {"dtype", "shape", "data_offsets"} into t; why says what is wrong. */
static bool parse_entry(json_object *entry, st_tensor *t, char *why, size_t why_len) {
    if (!json_object_is_type(entry, json_type_object))
        return snprintf(why, why_len, "is %s, not an object", json_object_to_json_string(entry)),
               false;
    json_object *dtype = NULL, *shape = NULL, *offsets = NULL;
    json_object_object_foreach(entry, key, value) {
        if (strcmp(key, "dtype") == 0)
            dtype = value;
        else if (strcmp(key, "shape") == 0)
            shape = value;
        else if (strcmp(key, "data_offsets") == 0)
            offsets = value;
        else
            return snprintf(why, why_len, "has an unknown field '%s'", key), false;
    }
    if (!dtype || !json_object_is_type(dtype, json_type_string))
        return snprintf(why, why_len, "has no \"dtype\" string"), false;
    const char *dname = json_object_get_string(dtype);
    int d = -1;
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
        if (strcmp(dname, DTYPES[i].name) == 0) d = (int)i;
    if (d < 0) return snprintf(why, why_len, "has an unknown dtype \"%.32s\"", dname), false;
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", DTYPES[d].name);
    t->dtype = DTYPES[d].dtype;
    t->elem_bytes = DTYPES[d].bytes;
    if (!shape || !json_object_is_type(shape, json_type_array) ||
        json_object_array_length(shape) > ST_MAX_DIMS)
        return snprintf(why, why_len, "has no \"shape\" array of at most %d dimensions",
                        ST_MAX_DIMS),
               false;
    t->ndim = (int)json_object_array_length(shape);
    uint64_t bytes = (uint64_t)t->elem_bytes;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t dim;
        if (!json_uint(json_object_array_get_idx(shape, i), &dim) || dim > (1ull << 40))
            return snprintf(why, why_len, "has a shape entry that is not a size"), false;
        t->shape[i] = (int64_t)dim;
        if (__builtin_mul_overflow(bytes, dim, &bytes))
            return snprintf(why, why_len, "has a shape too large to address"), false;
    }
    if (!offsets || !json_object_is_type(offsets, json_type_array) ||
        json_object_array_length(offsets) != 2 ||
        !json_uint(json_object_array_get_idx(offsets, 0), &t->begin) ||
        !json_uint(json_object_array_get_idx(offsets, 1), &t->end) || t->end < t->begin)
        return snprintf(why, why_len, "has no \"data_offsets\" [begin, end] with begin <= end"),
               false;
    char sh[128];
    st_format_shape(t->ndim, t->shape, sh, sizeof sh);
    if (t->end - t->begin != bytes)
        return snprintf(why, why_len,
                        "has data_offsets [%llu, %llu] (%llu bytes), but %s %s needs %llu bytes",
                        (unsigned long long)t->begin, (unsigned long long)t->end,
                        (unsigned long long)(t->end - t->begin), t->dtype_name, sh,
                        (unsigned long long)bytes),
               false;
    return true;
}

static bool parse_metadata(st_file *f, json_object *meta, char *why, size_t why_len) {
    if (!json_object_is_type(meta, json_type_object))
        return snprintf(why, why_len, "__metadata__ is not an object"), false;
    json_object_object_foreach(meta, key, value) {
        if (!json_object_is_type(value, json_type_string))
            return snprintf(why, why_len, "__metadata__ value of \"%.64s\" is not a string", key),
                   false;
        if (strcmp(key, "format") == 0)
            snprintf(f->format, sizeof f->format, "%s", json_object_get_string(value));
    }
    return true;
}

static int compare_begin(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* The byte buffer must be indexed entirely, without holes or overlaps (the
 * specification's rule against polyglot files), and end where the file ends. */
static int check_coverage(st_file *f, char *err, size_t err_len) {
    const uint64_t buffer = f->file_size - 8 - f->header_len;
    const st_tensor **order = malloc(((size_t)f->n_tensors + 1) * sizeof *order);
    if (!order) return set_error(err, err_len, "%s: out of memory", f->path);
    for (int i = 0; i < f->n_tensors; i++) order[i] = &f->tensors[i];
    qsort(order, (size_t)f->n_tensors, sizeof *order, compare_begin);
    uint64_t at = 0;
    int rc = 0;
    for (int i = 0; i < f->n_tensors && rc == 0; i++) {
        if (order[i]->begin > at)
            rc = set_error(err, err_len,
                           "%s: bytes [%llu, %llu) of the data belong to no tensor (a hole)",
                           f->path, (unsigned long long)at, (unsigned long long)order[i]->begin);
        else if (order[i]->begin < at)
            rc = set_error(err, err_len, "%s: tensor '%s' overlaps another one at data byte %llu",
                           f->path, order[i]->name, (unsigned long long)order[i]->begin);
        at = order[i]->end;
    }
    free(order);
    if (rc == 0 && at > buffer)
        rc = set_error(
            err, err_len,
            "%s: %llu bytes, but its header describes %llu (8 + %llu of header + %llu of data): "
            "truncated",
            f->path, (unsigned long long)f->file_size, (unsigned long long)(8 + f->header_len + at),
            (unsigned long long)f->header_len, (unsigned long long)at);
    else if (rc == 0 && at < buffer)
        rc = set_error(
            err, err_len,
            "%s: %llu bytes after the last tensor's data (the header describes %llu bytes of "
            "data, the file holds %llu)",
            f->path, (unsigned long long)(buffer - at), (unsigned long long)at,
            (unsigned long long)buffer);
    return rc;
}

static int parse_header(st_file *f, const char *text, char *err, size_t err_len) {
    if (text[0] != '{')
        return set_error(err, err_len,
                         "%s: the header does not begin with '{' (not a safetensors file)",
                         f->path);
    char why[512];
    json_object *root = json_parse_text(text, f->header_len, true, why, sizeof why);
    if (!root) return set_error(err, err_len, "%s: header: %s", f->path, why);
    int rc = 0;
    if (!json_object_is_type(root, json_type_object)) {
        rc = set_error(err, err_len, "%s: the header is not a JSON object", f->path);
        goto done;
    }
    f->tensors = calloc((size_t)json_object_object_length(root) + 1, sizeof *f->tensors);
    if (!f->tensors) {
        rc = set_error(err, err_len, "%s: out of memory", f->path);
        goto done;
    }
    json_object_object_foreach(root, key, value) {
        if (strcmp(key, "__metadata__") == 0) {
            if (!parse_metadata(f, value, why, sizeof why)) {
                rc = set_error(err, err_len, "%s: header: %s", f->path, why);
                goto done;
            }
            continue;
        }
        st_tensor *t = &f->tensors[f->n_tensors];
        if (!parse_entry(value, t, why, sizeof why)) {
            rc = set_error(err, err_len, "%s: header: tensor '%.200s' %s", f->path, key, why);
            goto done;
        }
        if (!(t->name = strdup(key))) {
            rc = set_error(err, err_len, "%s: out of memory", f->path);
            goto done;
        }
        f->n_tensors++;
    }
    rc = check_coverage(f, err, err_len);
done:
    json_object_put(root);
    return rc;
}

int st_open(st_file *f, const char *path, char *err, size_t err_len) {
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path))) return set_error(err, err_len, "out of memory");
    FILE *file = fopen_regular(path, "rb", 0, NULL, 0); /* a FIFO would block the open */
    struct stat st;
    if (!file || fstat(fileno(file), &st) != 0) {
        int e = errno;
        if (file) fclose(file);
        char why[256];
        set_error(err, err_len, "%s: %s", path, open_regular_reason(path, e, why, sizeof why));
        st_close(f);
        return -1;
    }
    f->file_size = (uint64_t)st.st_size;
    unsigned char len_bytes[8];
    int rc = 0;
    char *text = NULL;
    if (f->file_size < 8 || fread(len_bytes, 1, 8, file) != 8) {
        rc = set_error(err, err_len,
                       "%s: %llu bytes, shorter than the 8-byte header length: truncated", path,
                       (unsigned long long)f->file_size);
        goto done;
    }
    for (int i = 7; i >= 0; i--) f->header_len = f->header_len << 8 | len_bytes[i];
    if (f->header_len < 2 || f->header_len > ST_MAX_HEADER) {
        rc = set_error(
            err, err_len,
            "%s: header length %llu is not in [2, %llu] (a corrupt file, or not safetensors)", path,
            (unsigned long long)f->header_len, ST_MAX_HEADER);
        goto done;
    }
    if (f->header_len > f->file_size - 8) {
        rc = set_error(err, err_len,
                       "%s: %llu bytes, but its header alone needs 8 + %llu: truncated", path,
                       (unsigned long long)f->file_size, (unsigned long long)f->header_len);
        goto done;
    }
    if (!(text = malloc(f->header_len))) {
        rc = set_error(err, err_len, "%s: out of memory for a %llu-byte header", path,
                       (unsigned long long)f->header_len);
        goto done;
    }
    if (fread(text, 1, f->header_len, file) != f->header_len) {
        rc = set_error(err, err_len, "%s: read error in the header", path);
        goto done;
    }
    rc = parse_header(f, text, err, err_len);
done:
    free(text);
    fclose(file);
    if (rc != 0) st_close(f);
    return rc;
}

/* ------------------------------------------------------------------ reading */

static float f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h >> 15) << 31;
    int exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | mant << 13; /* inf, NaN */
    } else if (exp != 0) {
        u = sign | (uint32_t)(exp + 112) << 23 | mant << 13;
    } else if (mant == 0) {
        u = sign;
    } else { /* subnormal: normalise */
        exp = 113;
        while (!(mant & 0x400)) mant <<= 1, exp--;
        u = sign | (uint32_t)exp << 23 | (mant & 0x3ff) << 13;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int st_read_f32(const st_file *f, const st_tensor *t, float *out, char *err, size_t err_len) {
    if (t->dtype == ST_OTHER)
        return set_error(err, err_len, "%s: tensor '%s' has dtype %s, not a floating-point type",
                         f->path, t->name, t->dtype_name);
    const size_t n = st_numel(t), bytes = t->end - t->begin;
    /* F32 reads in place; the others through a buffer of their own size. */
    void *raw = t->dtype == ST_F32 ? (void *)out : malloc(bytes ? bytes : 1);
    if (!raw) return set_error(err, err_len, "%s: out of memory reading '%s'", f->path, t->name);
    FILE *file = fopen_regular(f->path, "rb", 0, NULL, 0);
    int rc = 0;
    if (!file || fseeko(file, (off_t)(8 + f->header_len + t->begin), SEEK_SET) != 0 ||
        fread(raw, 1, bytes, file) != bytes)
        rc = set_error(err, err_len, "%s: cannot read tensor '%s': %s", f->path, t->name,
                       file && !ferror(file) ? "the file ended early" : strerror(errno));
    if (file) fclose(file);
    for (size_t i = 0; rc == 0 && i < n && t->dtype != ST_F32; i++) {
        if (t->dtype == ST_F16)
            out[i] = f16_to_f32(((const uint16_t *)raw)[i]);
        else if (t->dtype == ST_BF16)
            out[i] = bf16_to_f32(((const uint16_t *)raw)[i]);
        else
            out[i] = (float)((const double *)raw)[i];
    }
    if (raw != out) free(raw);
    return rc;
}

/* ------------------------------------------------------------------ writing */

static json_object *header_json(const st_spec *tensors, int n, bool bf16,
                                const char *const *metadata) {
    json_object *root = json_object_new_object();
    if (metadata) {
        json_object *meta = json_object_new_object();
        for (const char *const *kv = metadata; kv[0]; kv += 2)
            json_object_object_add(meta, kv[0], json_object_new_string(kv[1]));
        json_object_object_add(root, "__metadata__", meta);
    }
    const int64_t elem = bf16 ? 2 : 4;
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        int64_t bytes = elem;
        json_object *shape = json_object_new_array();
        for (int d = 0; d < tensors[i].ndim; d++) {
            json_object_array_add(shape, json_object_new_int64(tensors[i].shape[d]));
            bytes *= tensors[i].shape[d];
        }
        json_object *offsets = json_object_new_array();
        json_object_array_add(offsets, json_object_new_int64(at));
        json_object_array_add(offsets, json_object_new_int64(at + bytes));
        at += bytes;
        json_object *entry = json_object_new_object();
        json_object_object_add(entry, "dtype", json_object_new_string(bf16 ? "BF16" : "F32"));
        json_object_object_add(entry, "shape", shape);
        json_object_object_add(entry, "data_offsets", offsets);
        json_object_object_add(root, tensors[i].name, entry);
    }
    return root;
}

int st_write(const char *path, const st_spec *tensors, int n, bool bf16, st_fill_fn fill, void *ctx,
             const char *const *metadata, char *err, size_t err_len) {
    json_object *root = header_json(tensors, n, bf16, metadata);
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
    const size_t text_len = strlen(text);
    const uint64_t header_len = (text_len + 7) / 8 * 8; /* spaces up to 8-byte alignment */
    FILE *f = fopen_regular(path, "wb", OPEN_REPLACE, err, err_len);
    if (!f) {
        json_object_put(root);
        return -1;
    }
    unsigned char len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = (unsigned char)(header_len >> (8 * i));
    bool ok = fwrite(len_bytes, 1, 8, f) == 8 && fwrite(text, 1, text_len, f) == text_len;
    for (uint64_t i = text_len; ok && i < header_len; i++) ok = fputc(' ', f) != EOF;
    json_object_put(root);
    for (int i = 0; ok && i < n; i++) {
        size_t numel = 1;
        for (int d = 0; d < tensors[i].ndim; d++) numel *= (size_t)tensors[i].shape[d];
        float *values = malloc(numel * sizeof(float) + 1);
        if (!values) {
            fclose(f);
            return set_error(err, err_len, "%s: out of memory for tensor '%s'", path,
                             tensors[i].name);
        }
        fill(ctx, i, values);
        if (bf16) { /* narrowed in place: the bf16 halves fill the front */
            uint16_t *half = (uint16_t *)values;
            for (size_t k = 0; k < numel; k++) half[k] = bf16_from_f32(values[k]);
        }
        ok = fwrite(values, bf16 ? 2 : 4, numel, f) == numel;
        free(values);
    }
    if (fclose(f) != 0) ok = false;
    if (!ok) return set_error(err, err_len, "%s: write failed (disk full?)", path);
    return 0;
}
