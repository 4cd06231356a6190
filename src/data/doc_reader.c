/* Documents from text and JSONL files, plain or gzip (see doc_reader.h). */
#define _FILE_OFFSET_BITS 64
#include "data/doc_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/files.h"

#define READ_CHUNK (1 << 20)

bool doc_is_jsonl(const char *path) {
    /* .json.gz: JSON lines as C4 and Dolma ship them */
    return path_ends_with(path, ".jsonl") || path_ends_with(path, ".jsonl.gz") ||
           path_ends_with(path, ".json.gz");
}

/* ------------------------------------------------------------------ batches */

doc_batch *batch_new(void) { return xcalloc(1, sizeof(doc_batch)); }

void batch_clear(doc_batch *b) {
    b->len = b->n_docs = b->n_ids = 0;
    b->error[0] = '\0';
    b->done = false;
}

void batch_free(doc_batch *b) {
    if (!b) return;
    free(b->bytes);
    free(b->docs);
    free(b->ids);
    free(b->ends);
    free(b);
}

static void batch_append(doc_batch *b, const char *bytes, size_t n) {
    b->bytes = xgrow(b->bytes, &b->cap, b->len + n + 1, 1, "documents read");
    memcpy(b->bytes + b->len, bytes, n);
    b->len += n;
}

static void batch_add_doc(doc_batch *b, doc_ref d) {
    b->docs = xgrow(b->docs, &b->docs_cap, b->n_docs + 1, sizeof *b->docs, "documents read");
    b->docs[b->n_docs++] = d;
}

/* ------------------------------------------------------------------ reading */

struct doc_reader {
    char *const *paths;
    size_t n_paths, next_path;
    /* the file being read: through zlib when its name ends in .gz */
    const char *path;
    FILE *file;
    gzFile gz;
    bool jsonl;
    int64_t line;
    char *chunk;
    size_t chunk_len, chunk_pos;
    /* progress */
    size_t files_done;
    int64_t disk_done, text_done; /* disk_done: files finished */
};

doc_reader *doc_reader_open(char *const *paths, size_t n) {
    doc_reader *r = xcalloc(1, sizeof *r);
    r->paths = paths;
    r->n_paths = n;
    r->chunk = xmalloc(READ_CHUNK);
    return r;
}

static int64_t raw_offset(const doc_reader *r) {
    if (r->gz) return (int64_t)gzoffset(r->gz);
    return r->file ? (int64_t)ftello(r->file) : 0;
}

static void close_file(doc_reader *r) {
    struct stat st;
    r->disk_done += stat(r->path, &st) == 0 ? (int64_t)st.st_size : raw_offset(r);
    if (r->gz) gzclose(r->gz);
    if (r->file) fclose(r->file);
    r->gz = NULL;
    r->file = NULL;
    r->path = NULL;
    r->files_done++;
}

void doc_reader_close(doc_reader *r) {
    if (!r) return;
    if (r->path) close_file(r);
    free(r->chunk);
    free(r);
}

static int open_next(doc_reader *r, char *err, size_t err_len) {
    r->path = r->paths[r->next_path++];
    r->jsonl = doc_is_jsonl(r->path);
    r->line = 0;
    r->chunk_len = r->chunk_pos = 0;
    /* The paths were regular files when listed; one replaced since by a
     * FIFO would block the open. */
    const int fd = open_regular(r->path, O_RDONLY, 0, 0, NULL, 0);
    if (fd >= 0 && path_ends_with(r->path, ".gz")) {
        r->gz = gzdopen(fd, "rb");
        if (r->gz) gzbuffer(r->gz, READ_CHUNK);
    } else if (fd >= 0) {
        r->file = fdopen(fd, "rb");
    }
    if (!r->gz && !r->file) {
        const int e = errno;
        char why[256];
        if (fd >= 0) close(fd);
        snprintf(err, err_len, "%s: cannot open: %s", r->path,
                 open_regular_reason(r->path, e, why, sizeof why));
        return -1;
    }
    return 0;
}

/* Refills the chunk; returns the bytes read (0 at the end of the file), or
 * -1 with err set on a read error. */
static int64_t refill(doc_reader *r, char *err, size_t err_len) {
    r->chunk_pos = 0;
    r->chunk_len = 0;
    if (r->gz) {
        int got = gzread(r->gz, r->chunk, READ_CHUNK);
        int code = Z_OK;
        const char *why = gzerror(r->gz, &code);
        if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
            /* zlib's message begins with the name it was given: "<fd:N>"
             * for the descriptor of gzdopen. */
            const char *end = strncmp(why, "<fd:", 4) == 0 ? strstr(why, ">: ") : NULL;
            if (end) why = end + 3;
            snprintf(err, err_len, "%s: cannot decompress: %s (a corrupt or truncated gzip file)",
                     r->path, why);
            return -1;
        }
        if (got > 0 && gzdirect(r->gz)) { /* zlib passes other data through as it is */
            snprintf(err, err_len, "%s: not gzip-compressed, but its name ends in .gz", r->path);
            return -1;
        }
        r->chunk_len = (size_t)got;
    } else {
        r->chunk_len = fread(r->chunk, 1, READ_CHUNK, r->file);
        if (r->chunk_len == 0 && ferror(r->file)) {
            snprintf(err, err_len, "%s: read error: %s", r->path, strerror(errno));
            return -1;
        }
    }
    r->text_done += (int64_t)r->chunk_len;
    return (int64_t)r->chunk_len;
}

static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
    return true;
}

/* The next line of a JSONL file into b (1), or 0 at the file's end. */
static int next_line(doc_reader *r, doc_batch *b, char *err, size_t err_len) {
    for (;;) {
        const size_t start = b->len;
        bool ended = false, any = false;
        while (!ended) {
            if (r->chunk_pos == r->chunk_len) {
                int64_t got = refill(r, err, err_len);
                if (got < 0) return -1;
                if (got == 0) break;
            }
            const char *p = r->chunk + r->chunk_pos;
            const size_t avail = r->chunk_len - r->chunk_pos;
            const char *nl = memchr(p, '\n', avail);
            const size_t take = nl ? (size_t)(nl - p) : avail;
            batch_append(b, p, take);
            r->chunk_pos += take + (nl ? 1 : 0);
            ended = nl != NULL;
            any = true;
        }
        if (!any) return 0;
        r->line++;
        if (blank(b->bytes + start, b->len - start)) {
            b->len = start; /* blank lines are no documents */
            if (!ended) return 0;
            continue;
        }
        batch_add_doc(b, (doc_ref){start, b->len - start, true, r->path, r->line});
        return 1;
    }
}

/* The whole text file into b as one document. */
static int whole_file(doc_reader *r, doc_batch *b, char *err, size_t err_len) {
    const size_t start = b->len;
    for (;;) {
        if (r->chunk_pos < r->chunk_len)
            batch_append(b, r->chunk + r->chunk_pos, r->chunk_len - r->chunk_pos);
        int64_t got = refill(r, err, err_len);
        if (got < 0) return -1;
        if (got == 0) break;
    }
    batch_add_doc(b, (doc_ref){start, b->len - start, false, r->path, 0});
    return 1;
}

int doc_reader_next(doc_reader *r, doc_batch *b, char *err, size_t err_len) {
    for (;;) {
        if (!r->path) {
            if (r->next_path == r->n_paths) return 0;
            if (open_next(r, err, err_len) != 0) return -1;
        }
        int rc = r->jsonl ? next_line(r, b, err, err_len) : whole_file(r, b, err, err_len);
        if (rc < 0) return -1;
        if (!r->jsonl || rc == 0) close_file(r); /* a text file is read whole */
        if (rc == 1) return 1;
    }
}

void doc_reader_progress(const doc_reader *r, size_t *files_done, int64_t *disk_bytes,
                         int64_t *text_bytes) {
    *files_done = r->files_done;
    *disk_bytes = r->disk_done + (r->path ? raw_offset(r) : 0);
    *text_bytes = r->text_done;
}
