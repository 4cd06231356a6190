/* Unit tests of the safetensors reader and writer (io/safetensors.h): a
 * written file read back bit for bit (fp32) and rounded to nearest even
 * (bf16); F16 (normal, subnormal, infinite), BF16 and F64 widened exactly;
 * and one file per way the specification can be broken, each refused with
 * a message that names the file and the problem. Files are built byte by
 * byte here, so the expected answers do not depend on the writer. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect.h"
#include "io/safetensors.h"
#include "model/bf16.h"

static char dir[] = "/tmp/test_safetensors_XXXXXX";

/* A file of an 8-byte header length (header_len, or the header's own length
 * when header_len is UINT64_MAX), the header text, then data_len bytes. */
static const char *raw_file(const char *name, uint64_t header_len, const char *header,
                            const void *data, size_t data_len) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) exit(1);
    uint64_t n = header_len == UINT64_MAX ? strlen(header) : header_len;
    for (int i = 0; i < 8; i++) fputc((int)(n >> (8 * i)) & 0xff, f);
    fwrite(header, 1, strlen(header), f);
    if (data_len) fwrite(data, 1, data_len, f);
    fclose(f);
    return path;
}

/* ---- writer + reader */

static const float VALUES[2][6] = {{1.0f, -2.5f, 3.25f, 1e-8f, 65504.0f, -0.0f},
                                   {1.00390625f, 1.01171875f, 3.14159265f, -1e30f, 7.0f, 0.5f}};

static void fill(void *ctx, int index, float *out) {
    (void)ctx;
    memcpy(out, VALUES[index], index == 0 ? 6 * sizeof(float) : 3 * sizeof(float));
}

static void test_round_trip(bool bf16) {
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/written_%s.safetensors", dir, bf16 ? "bf16" : "f32");
    st_spec specs[2] = {{"a.weight", 2, {2, 3}}, {"b.bias", 1, {3}}};
    const char *meta[] = {"format", "pt", NULL};
    EXPECT(st_write(path, specs, 2, bf16, fill, NULL, meta, err, sizeof err) == 0, "write: %s",
           err);
    st_file f;
    EXPECT(st_open(&f, path, err, sizeof err) == 0, "open written file: %s", err);
    if (failures) return;
    EXPECT(f.header_len % 8 == 0, "header padded to 8 bytes, got %llu",
           (unsigned long long)f.header_len);
    EXPECT(strcmp(f.format, "pt") == 0, "metadata format '%s'", f.format);
    EXPECT(f.n_tensors == 2, "2 tensors, got %d", f.n_tensors);
    const st_tensor *a = st_find(&f, "a.weight"), *b = st_find(&f, "b.bias");
    EXPECT(a && b && !st_find(&f, "c"), "find by name");
    if (!a || !b) return;
    const int elem = bf16 ? 2 : 4;
    EXPECT(a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3 && a->begin == 0 &&
               a->end == (uint64_t)(6 * elem),
           "a: shape and offsets");
    EXPECT(b->ndim == 1 && b->shape[0] == 3 && b->begin == a->end && b->end == a->end + 3 * elem,
           "b: back to back after a");
    EXPECT(strcmp(a->dtype_name, bf16 ? "BF16" : "F32") == 0, "dtype %s", a->dtype_name);
    float got[6];
    for (int t = 0; t < 2; t++) {
        const st_tensor *x = t == 0 ? a : b;
        EXPECT(st_read_f32(&f, x, got, err, sizeof err) == 0, "read %s: %s", x->name, err);
        for (size_t i = 0; i < st_numel(x); i++) {
            float want = bf16 ? bf16_to_f32(bf16_from_f32(VALUES[t][i])) : VALUES[t][i];
            EXPECT(memcmp(&got[i], &want, 4) == 0, "%s[%zu] = %.9g, want %.9g", x->name, i, got[i],
                   want);
        }
    }
    st_close(&f);
}

/* ---- dtypes written by others */

static void test_dtypes(void) {
    /* F16: 1.0, -2.0, 65504 (max), smallest subnormal 2^-24, +inf, 0.5 */
    const uint16_t f16[6] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x3800};
    const float f16_want[6] = {1.0f, -2.0f, 65504.0f, 5.9604644775390625e-8f, INFINITY, 0.5f};
    const uint16_t bf[2] = {0x3f80, 0xc0a0}; /* 1.0, -5.0 */
    const double f64[2] = {0.1, -3.0};
    const int64_t i64[1] = {7};
    unsigned char data[12 + 4 + 16 + 8];
    memcpy(data, f16, 12);
    memcpy(data + 12, bf, 4);
    memcpy(data + 16, f64, 16);
    memcpy(data + 32, i64, 8);
    const char *header = "{\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
                         "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[12,16]},"
                         "\"d\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[16,32]},"
                         "\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[32,40]},"
                         "\"e\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[40,40]}}  ";
    const char *path = raw_file("dtypes.safetensors", UINT64_MAX, header, data, sizeof data);
    st_file f;
    char err[512];
    EXPECT(st_open(&f, path, err, sizeof err) == 0, "open dtypes file: %s", err);
    if (failures) return;
    float got[6];
    EXPECT(st_read_f32(&f, st_find(&f, "h"), got, err, sizeof err) == 0, "F16: %s", err);
    for (int i = 0; i < 6; i++)
        EXPECT(got[i] == f16_want[i], "F16[%d] = %.9g, want %.9g", i, got[i], f16_want[i]);
    EXPECT(st_read_f32(&f, st_find(&f, "b"), got, err, sizeof err) == 0 && got[0] == 1.0f &&
               got[1] == -5.0f,
           "BF16 widened: %g %g", got[0], got[1]);
    EXPECT(st_read_f32(&f, st_find(&f, "d"), got, err, sizeof err) == 0 && got[0] == 0.1f &&
               got[1] == -3.0f,
           "F64 rounded: %.9g %g", got[0], got[1]);
    EXPECT(st_read_f32(&f, st_find(&f, "i"), got, err, sizeof err) == -1 &&
               strstr(err, "'i' has dtype I64, not a floating-point type"),
           "I64 refused as fp32: %s", err);
    const st_tensor *e = st_find(&f, "e");
    EXPECT(e && st_numel(e) == 0, "empty tensor allowed");
    st_close(&f);
}

/* ---- broken files: each refused, naming the file and the problem */

static void expect_refused(const char *name, uint64_t header_len, const char *header,
                           size_t data_len, const char *want) {
    unsigned char data[64] = {0};
    const char *path = raw_file(name, header_len, header, data, data_len);
    st_file f;
    char err[1024] = "";
    int rc = st_open(&f, path, err, sizeof err);
    EXPECT(rc == -1 && strstr(err, path) && strstr(err, want), "%s: rc %d, message '%s', want '%s'",
           name, rc, err, want);
    if (rc == 0)
        st_close(&f);
    else
        printf("refused %s: %s\n", name, err + strlen(path) + 2);
}

#define T4(n) "{\"t\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0," #n "]}}"

static void test_refused(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/short.safetensors", dir);
    FILE *f = fopen(path, "wb");
    fwrite("\x10\x00\x00", 1, 3, f);
    fclose(f);
    st_file st;
    char err[512];
    EXPECT(st_open(&st, path, err, sizeof err) == -1 &&
               strstr(err, "shorter than the 8-byte header length"),
           "3-byte file: %s", err);
    snprintf(path, sizeof path, "%s/absent.safetensors", dir);
    EXPECT(st_open(&st, path, err, sizeof err) == -1 && strstr(err, "No such file"), "absent: %s",
           err);

    expect_refused("header_past_end.safetensors", 4096, T4(16), 16,
                   "its header alone needs 8 + 4096");
    expect_refused("header_huge.safetensors", 1ull << 40, T4(16), 16,
                   "header length 1099511627776 is not in");
    expect_refused("not_object.safetensors", UINT64_MAX, "[1, 2]", 0, "does not begin with '{'");
    expect_refused("bad_json.safetensors", UINT64_MAX, "{\"t\":{\"dtype\":\"F32\",,}}", 0,
                   "not valid JSON at byte");
    expect_refused("cut_json.safetensors", UINT64_MAX, "{\"t\":{\"dtype\":\"F32\"", 0,
                   "in the middle of a value");
    expect_refused("junk_after.safetensors", UINT64_MAX, T4(16) " x", 16,
                   "unexpected text after the value");
    expect_refused("truncated_data.safetensors", UINT64_MAX, T4(16), 10, "truncated");
    expect_refused("extra_data.safetensors", UINT64_MAX, T4(16), 20,
                   "4 bytes after the last tensor's data");
    expect_refused("size_mismatch.safetensors", UINT64_MAX, T4(12), 12,
                   "but F32 [4] needs 16 bytes");
    expect_refused("unknown_dtype.safetensors", UINT64_MAX,
                   "{\"t\":{\"dtype\":\"F31\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
                   "unknown dtype \"F31\"");
    expect_refused("negative_dim.safetensors", UINT64_MAX,
                   "{\"t\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", 16,
                   "shape entry that is not a size");
    expect_refused("reversed_offsets.safetensors", UINT64_MAX,
                   "{\"t\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8,
                   "begin <= end");
    expect_refused("hole.safetensors", UINT64_MAX,
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                   12, "bytes [4, 8) of the data belong to no tensor");
    expect_refused("overlap.safetensors", UINT64_MAX,
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                   8, "overlaps another one");
    expect_refused("metadata_not_string.safetensors", UINT64_MAX,
                   "{\"__metadata__\":{\"format\":1},"
                   "\"t\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                   16, "__metadata__ value of \"format\" is not a string");
    expect_refused("unknown_field.safetensors", UINT64_MAX,
                   "{\"t\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16],\"x\":1}}", 16,
                   "unknown field 'x'");
    expect_refused("invalid_utf8.safetensors", UINT64_MAX,
                   "{\"\xff\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
                   "invalid utf-8");
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    test_round_trip(false);
    test_round_trip(true);
    test_dtypes();
    test_refused();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    printf("%s\n", failures ? "FAILED" : "all safetensors checks passed");
    return failures ? 1 : 0;
}
