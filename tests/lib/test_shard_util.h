/* Helpers shared by the shard and loader unit tests: a failure counter with
 * EXPECT macros, a private temporary directory, and raw shard files (valid or
 * deliberately broken) written without going through shard_write. */
#ifndef GPT2_TEST_SHARD_UTIL_H
#define GPT2_TEST_SHARD_UTIL_H

#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/shard.h"

static int test_failures = 0;

/* Counts and reports a failure, then goes on: one run shows every problem. */
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);                      \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            test_failures++;                                                                       \
        }                                                                                          \
    } while (0)

#define EXPECT_EQ_I64(got, want)                                                                   \
    EXPECT((int64_t)(got) == (int64_t)(want), "got %lld, want %lld", (long long)(got),             \
           (long long)(want))

#define EXPECT_CONTAINS(haystack, needle)                                                          \
    EXPECT(strstr((haystack), (needle)) != NULL, "message \"%s\" lacks \"%s\"", (haystack),        \
           (needle))

/* Hard stop for a broken precondition (temp dir, file write): nothing after
 * it would mean anything. */
#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: REQUIRE %s: ", __FILE__, __LINE__, #cond);                     \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline int test_report(const char *name) {
    if (test_failures == 0)
        printf("%s: all checks passed\n", name);
    else
        printf("%s: %d check(s) FAILED\n", name, test_failures);
    return test_failures == 0 ? 0 : 1;
}

static char test_dir[4096];

static inline void test_make_dir(const char *tag) {
    const char *tmp = getenv("TMPDIR");
    snprintf(test_dir, sizeof(test_dir), "%s/%s_XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    REQUIRE(mkdtemp(test_dir) != NULL, "mkdtemp %s failed", test_dir);
}

static inline int test_rm_entry(const char *path, const struct stat *st, int flag,
                                struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static inline void test_remove_dir(void) {
    nftw(test_dir, test_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Path of `name` inside the test directory (static buffer rotation lets a
 * test hold a few paths at once). */
static inline const char *test_path(const char *name) {
    static char bufs[4][4096 + 64];
    static int next = 0;
    char *p = bufs[next++ % 4];
    snprintf(p, sizeof(bufs[0]), "%s/%s", test_dir, name);
    return p;
}

/* Writes header ints [magic, version, count] and n_body tokens verbatim, so
 * that tests can build files shard_write would refuse to produce. */
static inline void test_write_raw(const char *path, int32_t magic, int32_t version, int32_t count,
                                  const uint16_t *body, size_t n_body) {
    int32_t header[SHARD_HEADER_INTS] = {0};
    header[0] = magic;
    header[1] = version;
    header[2] = count;
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL, "cannot create %s", path);
    REQUIRE(fwrite(header, sizeof(header), 1, f) == 1, "write %s", path);
    REQUIRE(n_body == 0 || fwrite(body, sizeof(uint16_t), n_body, f) == n_body, "write %s", path);
    REQUIRE(fclose(f) == 0, "close %s", path);
}

static inline void test_write_bytes(const char *path, size_t n_bytes) {
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL, "cannot create %s", path);
    for (size_t i = 0; i < n_bytes; i++) fputc((int)(i & 0xff), f);
    REQUIRE(fclose(f) == 0, "close %s", path);
}

#endif
