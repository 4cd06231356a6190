/* Tokenizing batches of documents on several threads, results in the order
 * the batches were submitted: each thread has its own tokenizer (the BPE
 * tables are read once per thread; the word cache is per thread too), and a
 * document's ids depend only on its text, so the output is the same for any
 * number of threads. JSONL documents are parsed here, on the threads, and
 * their string field `field` is tokenized (text files: all their bytes). */
#ifndef GPT2_DATA_ENCODE_POOL_H
#define GPT2_DATA_ENCODE_POOL_H

#include <stddef.h>

#include "data/doc_reader.h"

typedef struct encode_pool encode_pool;

/* Starts n_threads threads and loads a tokenizer on each; NULL with the
 * reason in err when the BPE files cannot be loaded. At most `depth`
 * batches may be submitted and not yet taken back. */
encode_pool *encode_pool_start(int n_threads, int depth, const char *encoder_json,
                               const char *vocab_bpe, const char *field, char *err, size_t err_len);
/* Hands b to the threads (the caller must not touch it until it comes back
 * from encode_pool_next); at most depth at once. */
void encode_pool_submit(encode_pool *p, doc_batch *b);
/* The oldest submitted batch once it is tokenized (b->error set when one of
 * its documents failed), or NULL when none is outstanding. */
doc_batch *encode_pool_next(encode_pool *p);
int encode_pool_outstanding(const encode_pool *p);
/* Stops the threads (outstanding batches are abandoned) and frees p. */
void encode_pool_stop(encode_pool *p);
#endif
