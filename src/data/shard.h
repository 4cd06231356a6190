/* Token shards in llm.c's format: a 256 x int32 header (magic 20240520,
 * version 1, token count, rest zero) followed by the tokens as uint16. */
#ifndef GPT2_DATA_SHARD_H
#define GPT2_DATA_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_INTS 256

typedef struct {
    char path[512];
    const uint16_t *tokens; /* into the mapping, after the header */
    size_t n_tokens;
    void *map;
    size_t map_bytes;
} token_shard;

/* Maps the file and checks the header (magic, version, token count against
 * the file length) and that every token is below vocab_size. On failure
 * returns -1 and writes "<path>: <problem>" into err. */
int shard_open(token_shard *shard, const char *path, int vocab_size, char *err, size_t err_len);
void shard_close(token_shard *shard);

/* Writes a shard atomically enough for tools (temp file + rename). Returns -1
 * and fills err on failure. */
int shard_write(const char *path, const uint16_t *tokens, size_t n_tokens, char *err,
                size_t err_len);
#endif
