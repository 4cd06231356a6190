/* Token shards in llm.c's format: a 256 x int32 header (magic 20240520,
 * version 1, token count, rest zero) followed by the tokens as uint16;
 * opened once, read a sample at a time. */
#ifndef GPT2_DATA_SHARD_H
#define GPT2_DATA_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_INTS 256

/* The file stays open for the whole run and every sample is read with
 * pread: a file that another job truncates under the run is then a short
 * read with a message, where a mapping would end the process with SIGBUS;
 * and each read checks its tokens again, so a shard rewritten in place with
 * ids out of the vocabulary is caught at the first batch that reads them.
 * A file replaced by a rename (a new inode) is not seen: the descriptor
 * keeps the file that was opened; one that grows is read up to the length
 * its header gave at open. A rewrite in place with valid ids cannot be
 * told from the data (docs/data.md: the data must not change under a run). */
typedef struct {
    char path[512];
    int fd; /* -1 when closed */
    size_t n_tokens;
    int vocab_size;
} token_shard;

/* Opens the file (a regular file only: a FIFO is refused without blocking)
 * and checks the header (magic, version, token count against the file
 * length) and that every token is below vocab_size. On failure returns -1
 * and writes "<path>: <problem>" into err. */
int shard_open(token_shard *shard, const char *path, int vocab_size, char *err, size_t err_len);
void shard_close(token_shard *shard);

/* Tokens [first, first + count) (first + count <= n_tokens) into out,
 * each checked against vocab_size again. -1 when the file no longer holds
 * them as shard_open found it, with err "<path>: changed after it was
 * opened and checked: <what>" (shorter now, or a token out of range). */
int shard_read(const token_shard *shard, size_t first, size_t count, uint16_t *out, char *err,
               size_t err_len);

/* Writes a shard atomically enough for tools (temp file + rename). Returns -1
 * and fills err on failure. */
int shard_write(const char *path, const uint16_t *tokens, size_t n_tokens, char *err,
                size_t err_len);
#endif
