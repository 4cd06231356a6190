/* Token shards in llm.c's format: full validation on open, reads with pread
 * that check again, and an atomic (temp file + rename) writer for the
 * tokenizer tools. */
#include "data/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"

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

/* Index of the first token >= vocab_size, or n. The common case (all
 * valid) is one vectorisable max-reduction; only a bad read pays for the
 * second pass that finds the offender. */
static size_t first_out_of_range(const uint16_t *tokens, size_t n, int vocab_size) {
    if (vocab_size > UINT16_MAX) return n; /* no uint16 can be out of range */
    uint16_t max_token = 0;
    for (size_t i = 0; i < n; i++) max_token = tokens[i] > max_token ? tokens[i] : max_token;
    if (max_token < vocab_size) return n;
    size_t bad = 0;
    while (tokens[bad] < vocab_size) bad++;
    return bad;
}

/* pread until bytes are in or the file ends; the bytes read, or -1. */
static int64_t read_fully(int fd, void *buf, size_t bytes, int64_t offset) {
    size_t done = 0;
    while (done < bytes) {
        ssize_t n = pread(fd, (char *)buf + done, bytes - done, (off_t)(offset + (int64_t)done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) break;
        done += (size_t)n;
    }
    return (int64_t)done;
}

/* Tokens [first, first + count) into out, checked; changed prefixes the
 * problem ("" while opening: nothing was checked yet). */
static int read_tokens(const token_shard *shard, size_t first, size_t count, uint16_t *out,
                       const char *changed, char *err, size_t err_len) {
    const char *path = shard->path;
    const int64_t offset = SHARD_HEADER_BYTES + 2 * (int64_t)first;
    const int64_t got = read_fully(shard->fd, out, 2 * count, offset);
    if (got < 0)
        return shard_fail(err, err_len, path, "%sread failed at byte %" PRId64 ": %s", changed,
                          offset, strerror(errno));
    if ((size_t)got < 2 * count) {
        struct stat st;
        const int64_t now = fstat(shard->fd, &st) == 0 ? (int64_t)st.st_size : offset + got;
        return shard_fail(err, err_len, path,
                          "%sit is now %" PRId64 " bytes, shorter than the %" PRId64
                          " it had when opened (truncated)",
                          changed, now, SHARD_HEADER_BYTES + 2 * (int64_t)shard->n_tokens);
    }
    const size_t bad = first_out_of_range(out, count, shard->vocab_size);
    if (bad < count)
        return shard_fail(err, err_len, path,
                          "%stoken %u at index %zu is out of range (vocab_size %d)", changed,
                          (unsigned)out[bad], first + bad, shard->vocab_size);
    return 0;
}

int shard_read(const token_shard *shard, size_t first, size_t count, uint16_t *out, char *err,
               size_t err_len) {
    if (first > shard->n_tokens || count > shard->n_tokens - first)
        return shard_fail(err, err_len, shard->path,
                          "tokens [%zu, %zu) asked of a shard of %zu tokens", first, first + count,
                          shard->n_tokens);
    return read_tokens(shard, first, count, out, "changed after it was opened and checked: ", err,
                       err_len);
}

/* Every token, a chunk at a time. */
static int shard_check_tokens(const token_shard *shard, char *err, size_t err_len) {
    enum { CHUNK = 1 << 20 };
    uint16_t *buf = malloc(CHUNK * sizeof(uint16_t));
    if (!buf) return shard_fail(err, err_len, shard->path, "out of memory");
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < shard->n_tokens; i += CHUNK) {
        const size_t n = shard->n_tokens - i < CHUNK ? shard->n_tokens - i : CHUNK;
        rc = read_tokens(shard, i, n, buf, "", err, err_len);
    }
    free(buf);
    return rc;
}

/* Opens the file and reads its header; a FIFO (which would block the open
 * until something writes it) or anything else not a regular file is
 * refused. */
static int shard_open_file(token_shard *shard, const char *path, int32_t *header, char *err,
                           size_t err_len) {
    int fd = open_regular(path, O_RDONLY, 0, 0, NULL, 0);
    if (fd < 0) {
        const int e = errno;
        char why[256];
        return shard_fail(err, err_len, path, "cannot open: %s%s",
                          open_regular_reason(path, e, why, sizeof why),
                          e == EMFILE ? " (a run keeps every shard open: raise the limit, ulimit "
                                        "-n, or use fewer, larger shards)"
                                      : "");
    }
    shard->fd = fd;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return shard_fail(err, err_len, path, "cannot stat: %s", strerror(errno));
    if ((int64_t)st.st_size < SHARD_HEADER_BYTES)
        return shard_fail(err, err_len, path,
                          "file is %" PRId64 " bytes, shorter than the %" PRId64 "-byte header%s",
                          (int64_t)st.st_size, SHARD_HEADER_BYTES,
                          st.st_size == 0 ? " (empty file)" : "");
    errno = 0;
    if (read_fully(fd, header, SHARD_HEADER_BYTES, 0) != SHARD_HEADER_BYTES)
        return shard_fail(err, err_len, path, "cannot read the header: %s",
                          errno ? strerror(errno) : "the file ended early");
    return shard_check_header(header, (int64_t)st.st_size, path, err, err_len);
}

int shard_open(token_shard *shard, const char *path, int vocab_size, char *err, size_t err_len) {
    memset(shard, 0, sizeof(*shard));
    shard->fd = -1;
    if (vocab_size <= 0) return shard_fail(err, err_len, path, "bad vocab_size %d", vocab_size);
    snprintf(shard->path, sizeof(shard->path), "%s", path);
    shard->vocab_size = vocab_size;
    int32_t header[SHARD_HEADER_INTS];
    if (shard_open_file(shard, path, header, err, err_len) != 0) {
        shard_close(shard);
        return -1;
    }
    shard->n_tokens = (size_t)header[2];
    if (shard_check_tokens(shard, err, err_len) != 0) {
        shard_close(shard);
        return -1;
    }
    return 0;
}

void shard_close(token_shard *shard) {
    if (shard->fd >= 0) close(shard->fd);
    memset(shard, 0, sizeof(*shard));
    shard->fd = -1;
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
