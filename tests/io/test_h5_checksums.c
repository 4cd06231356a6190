/* The CRC32C of fp32 datasets (io/h5_io.h): the published check value and
 * the SSE4.2 path against the table on unaligned, odd-length pieces and
 * continued CRCs; a dataset written and read back whole and in ranges that
 * start and end inside checksum blocks, with the checksums in the file (the
 * damaged-file cases are ckpt_damage's and weights_bad_inputs'). */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect.h"
#include "io/h5_io.h"

static void check_crc(void) {
    /* RFC 3720's check value of "123456789" */
    const char *nine = "123456789";
    EXPECT(h5_crc32c(0, nine, 9, false) == 0xE3069283u, "crc32c(123456789) = %08x",
           h5_crc32c(0, nine, 9, false));
    EXPECT(h5_crc32c(0, nine, 9, true) == 0xE3069283u, "table crc32c(123456789) = %08x",
           h5_crc32c(0, nine, 9, true));
    unsigned char buf[4099];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n + off <= sizeof buf; n += 37) {
            const uint32_t fast = h5_crc32c(0, buf + off, n, false);
            EXPECT(fast == h5_crc32c(0, buf + off, n, true), "off %zu n %zu differs", off, n);
            /* continued: the CRC of a + b from the CRC of a */
            const size_t half = n / 2;
            EXPECT(h5_crc32c(h5_crc32c(0, buf + off, half, false), buf + off + half, n - half,
                             false) == fast,
                   "continued CRC, off %zu n %zu", off, n);
        }
}

static void check_dataset(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/test_h5_checksums.h5", dir);
    const int64_t n = 4 * H5_SUM_BLOCK + 12345; /* five blocks, the last partial: the
                                                 sums computed by their own thread */
    float *data = malloc((size_t)n * sizeof(float)), *back = calloc((size_t)n, sizeof(float));
    for (int64_t i = 0; i < n; i++) data[i] = (float)i * 0.25f - 7.0f;
    hid_t f = h5_create(path);
    h5_write_f32(f, path, "v", 1, &n, data);
    const int64_t empty = 0;
    h5_write_f32(f, path, "empty", 1, &empty, data);
    h5_close(f, path);

    f = h5_open_read_whole(path, "test file");
    h5_read_f32(f, path, "v", 1, &n, back);
    EXPECT(memcmp(back, data, (size_t)n * sizeof(float)) == 0, "whole read differs");
    const int64_t ranges[][2] = {
        {5, 100}, {H5_SUM_BLOCK - 3, 10}, {H5_SUM_BLOCK, H5_SUM_BLOCK}, {1, n - 2}, {n - 7, 7},
        {0, 0}};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        memset(back, 0, (size_t)n * sizeof(float));
        h5_read_f32_range(f, path, "v", n, ranges[r][0], ranges[r][1], back);
        EXPECT(memcmp(back, data + ranges[r][0], (size_t)ranges[r][1] * sizeof(float)) == 0,
               "range [%lld, +%lld) differs", (long long)ranges[r][0], (long long)ranges[r][1]);
    }
    /* the checksums are in the file: five, the last over the partial block */
    hid_t d = H5Dopen2(f, "v", H5P_DEFAULT);
    EXPECT(H5Aexists(d, H5_SUMS_ATTR) > 0, "no %s attribute", H5_SUMS_ATTR);
    hid_t a = H5Aopen(d, H5_SUMS_ATTR, H5P_DEFAULT);
    hid_t s = H5Aget_space(a);
    uint32_t sums[5] = {0};
    EXPECT(H5Sget_simple_extent_npoints(s) == 5, "%lld checksums",
           (long long)H5Sget_simple_extent_npoints(s));
    H5Aread(a, H5T_NATIVE_UINT32, sums);
    EXPECT(sums[4] == h5_crc32c(0, data + 4 * H5_SUM_BLOCK, 12345 * sizeof(float), true),
           "last block's checksum %08x", sums[4]);
    EXPECT(sums[1] == h5_crc32c(0, data + H5_SUM_BLOCK, H5_SUM_BLOCK * sizeof(float), true),
           "second block's checksum %08x", sums[1]);
    H5Sclose(s);
    H5Aclose(a);
    H5Dclose(d);
    H5Fclose(f);
    unlink(path);
    free(data);
    free(back);
}

int main(int argc, char **argv) {
    check_crc();
    check_dataset(argc > 1 ? argv[1] : ".");
    if (failures)
        printf("%d failure(s)\n", failures);
    else
        printf("test_h5_checksums: OK\n");
    return failures ? 1 : 0;
}
