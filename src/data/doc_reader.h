/* The documents of a list of input files, in order, for gpt2_tokenize: a
 * text file is one document; a JSONL file (name ending in .jsonl,
 * .jsonl.gz or .json.gz) holds one per line (a JSON object, parsed later by the
 * tokenizing threads; blank lines are skipped). Files ending in .gz are
 * read through zlib. Documents are appended to a doc_batch, whose raw bytes
 * the encode pool (encode_pool.h) then tokenizes. */
#ifndef GPT2_DATA_DOC_READER_H
#define GPT2_DATA_DOC_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One document's bytes in its batch: the text, or (json) a JSONL line. */
typedef struct {
    size_t off, len;
    bool json;
    const char *path; /* for messages: the file, and (json) its 1-based line */
    int64_t line;
} doc_ref;

/* Documents to tokenize together, and (filled by the encode pool) their ids:
 * document i's are ids[ends[i-1] .. ends[i]), ends[-1] = 0. */
typedef struct {
    char *bytes;
    size_t len, cap;
    doc_ref *docs;
    size_t n_docs, docs_cap;
    int32_t *ids;
    size_t n_ids, ids_cap;
    size_t *ends;
    size_t ends_cap;
    char error[1024]; /* set by the pool when a document fails: "file:line: problem" */
    bool done;        /* the pool has tokenized it */
    /* progress after this batch: input files finished, bytes read from disk
     * (compressed for .gz), bytes of text (uncompressed) */
    size_t files_done;
    int64_t disk_bytes, text_bytes;
} doc_batch;

doc_batch *batch_new(void);
void batch_clear(doc_batch *b);
void batch_free(doc_batch *b);

typedef struct doc_reader doc_reader;

/* Reads paths[0, n) in order (the strings must outlive the reader). */
doc_reader *doc_reader_open(char *const *paths, size_t n);
void doc_reader_close(doc_reader *r);

/* Appends the next document to b; returns 1 when one was added, 0 when the
 * input is exhausted, -1 with "path: problem" in err on a read error (a
 * corrupt or truncated .gz). */
int doc_reader_next(doc_reader *r, doc_batch *b, char *err, size_t err_len);

/* Progress so far: files finished, bytes read from disk, bytes of text. */
void doc_reader_progress(const doc_reader *r, size_t *files_done, int64_t *disk_bytes,
                         int64_t *text_bytes);

/* Is path read as JSONL (by its name)? */
bool doc_is_jsonl(const char *path);
#endif
