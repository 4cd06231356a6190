/* Token shards in llm.c's format: read-only mmap with full validation on open,
 * and an atomic (temp file + rename) writer for the tokenizer tools. */
#include "data/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARD_HEADER_BYTES ((int64_t)SHARD_HEADER_INTS * (int64_t)sizeof(int32_t))

/* Every message is "<path>: <problem>" so that a user with hundreds of shards
 * knows which one to look at. */
static int shard_fail(char *err, size_t err_len, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int shard_fail(char *err, size_t err_len, const char *path, const char *fmt, ...) {
    if (err != NULL && err_len > 0) {
        int n = snprintf(err, err_len, "%s: ", path);
        if (n >= 0 && (size_t)n < err_len) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, err_len - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* Header and length checks; the exact-length rule catches both a truncated
 * download and a file written with another token width. */
static int shard_check_header(const int32_t *header, int64_t file_bytes, const char *path,
                              char *err, size_t err_len) {
    if (header[0] != SHARD_MAGIC)
        return shard_fail(err, err_len, path,
                          "bad magic %" PRId32 " (expected %d): not an llm.c token shard",
                          header[0], SHARD_MAGIC);
    if (header[1] != SHARD_VERSION)
        return shard_fail(err, err_len, path,
                          "unsupported version %" PRId32 " (expected %d: uint16 tokens)", header[1],
                          SHARD_VERSION);
    if (header[2] < 0)
        return shard_fail(err, err_len, path, "bad token count %" PRId32 " in header", header[2]);
    int64_t expect = SHARD_HEADER_BYTES + 2 * (int64_t)header[2];
    if (file_bytes < expect)
        return shard_fail(err, err_len, path,
                          "truncated: header says %" PRId32 " tokens (%" PRId64
                          " bytes) but the file is %" PRId64 " bytes",
                          header[2], expect, file_bytes);
    if (file_bytes > expect)
        return shard_fail(err, err_len, path,
                          "size mismatch: header says %" PRId32 " tokens (%" PRId64
                          " bytes) but the file is %" PRId64 " bytes (%" PRId64 " extra bytes)",
                          header[2], expect, file_bytes, file_bytes - expect);
    return 0;
}

/* The common case (all tokens valid) is one vectorisable max-reduction; only
 * a bad shard pays for the second pass that finds the first offender. */
static int shard_check_tokens(const uint16_t *tokens, size_t n_tokens, int vocab_size,
                              const char *path, char *err, size_t err_len) {
    if (vocab_size > UINT16_MAX) return 0; /* no uint16 can be out of range */
    uint16_t max_token = 0;
    for (size_t i = 0; i < n_tokens; i++) max_token = tokens[i] > max_token ? tokens[i] : max_token;
    if (max_token < vocab_size) return 0;
    size_t bad = 0;
    while (tokens[bad] < vocab_size) bad++;
    return shard_fail(err, err_len, path, "token %u at index %zu is out of range (vocab_size %d)",
                      (unsigned)tokens[bad], bad, vocab_size);
}

/* Opens and maps the file; the descriptor is closed again since the mapping
 * keeps the file alive. */
static int shard_map(token_shard *shard, const char *path, char *err, size_t err_len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return shard_fail(err, err_len, path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return shard_fail(err, err_len, path, "cannot stat: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return shard_fail(err, err_len, path, "not a regular file");
    }
    if ((int64_t)st.st_size < SHARD_HEADER_BYTES) {
        close(fd);
        return shard_fail(err, err_len, path,
                          "file is %" PRId64 " bytes, shorter than the %" PRId64 "-byte header%s",
                          (int64_t)st.st_size, SHARD_HEADER_BYTES,
                          st.st_size == 0 ? " (empty file)" : "");
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return shard_fail(err, err_len, path, "cannot mmap: %s", strerror(e));
    shard->map = map;
    shard->map_bytes = (size_t)st.st_size;
    return 0;
}

int shard_open(token_shard *shard, const char *path, int vocab_size, char *err, size_t err_len) {
    memset(shard, 0, sizeof(*shard));
    if (vocab_size <= 0) return shard_fail(err, err_len, path, "bad vocab_size %d", vocab_size);
    if (shard_map(shard, path, err, err_len) != 0) return -1;
    const int32_t *header = (const int32_t *)shard->map;
    const uint16_t *tokens = (const uint16_t *)((const char *)shard->map + SHARD_HEADER_BYTES);
    size_t n_tokens = header[2] > 0 ? (size_t)header[2] : 0;
    if (shard_check_header(header, (int64_t)shard->map_bytes, path, err, err_len) != 0 ||
        shard_check_tokens(tokens, n_tokens, vocab_size, path, err, err_len) != 0) {
        shard_close(shard);
        return -1;
    }
    snprintf(shard->path, sizeof(shard->path), "%s", path);
    shard->tokens = tokens;
    shard->n_tokens = n_tokens;
    return 0;
}

void shard_close(token_shard *shard) {
    if (shard->map != NULL) munmap(shard->map, shard->map_bytes);
    memset(shard, 0, sizeof(*shard));
}

/* Header, tokens, then fsync: the rename must only ever expose a complete file. */
static int shard_write_file(FILE *f, const uint16_t *tokens, size_t n_tokens) {
    int32_t header[SHARD_HEADER_INTS] = {0};
    header[0] = SHARD_MAGIC;
    header[1] = SHARD_VERSION;
    header[2] = (int32_t)n_tokens;
    if (fwrite(header, sizeof(header), 1, f) != 1) return -1;
    if (n_tokens > 0 && fwrite(tokens, sizeof(uint16_t), n_tokens, f) != n_tokens) return -1;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) return -1;
    return 0;
}

int shard_write(const char *path, const uint16_t *tokens, size_t n_tokens, char *err,
                size_t err_len) {
    if (n_tokens > (size_t)INT32_MAX)
        return shard_fail(err, err_len, path,
                          "%zu tokens do not fit one shard (the header count is int32, max %d)",
                          n_tokens, INT32_MAX);
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return shard_fail(err, err_len, path, "path too long");
    FILE *f = fopen(tmp, "wb");
    if (f == NULL) return shard_fail(err, err_len, tmp, "cannot create: %s", strerror(errno));
    bool ok = shard_write_file(f, tokens, n_tokens) == 0;
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        return shard_fail(err, err_len, tmp, "write failed: %s", strerror(e));
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        return shard_fail(err, err_len, path, "cannot rename %s into place: %s", tmp, strerror(e));
    }
    return 0;
}
