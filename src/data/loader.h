/* Token dataset over a glob of shards, cut into samples of seq_len + 1 tokens,
 * and the global-sample addressing that makes every rank count see the same
 * global batches: step s uses global samples [s*S, (s+1)*S) of the shuffled
 * order, S = sequences per optimizer step; rank r, micro-step m reads its own
 * contiguous part of them. */
#ifndef GPT2_DATA_LOADER_H
#define GPT2_DATA_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/shard.h"

typedef struct {
    token_shard *shards;
    int n_shards;
    int seq_len;
    int64_t *shard_first_sample; /* prefix sums, n_shards + 1 entries */
    int64_t n_samples;           /* sample i: tokens [i*T, i*T + T + 1) of its shard */
} token_dataset;

/* Opens every file matching pattern (sorted by name, strcmp order, so sample
 * numbers do not depend on the locale). A shard of n tokens holds
 * (n - 1) / seq_len samples; one shorter than seq_len + 1 tokens holds none.
 * Returns DATASET_NO_FILES when no file matches, -1 when a shard is bad or
 * the dataset has no sample at all or 2^32 or more; err names the pattern,
 * or "<path>: <problem>" for a bad shard. The caller prefixes err with its
 * key name. */
enum { DATASET_NO_FILES = -2 };
int dataset_open(token_dataset *ds, const char *pattern, int vocab_size, int seq_len, char *err,
                 size_t err_len);
void dataset_close(token_dataset *ds);
/* The first shard file of a that is also one of b's (the same file, however
 * each pattern spells its path: compared by device and inode), or NULL. */
const char *dataset_shared_file(const token_dataset *a, const token_dataset *b);
/* What to do when a pattern matches no file (DATASET_NO_FILES): how token
 * shards are made, and for a validation set (val) how to train without one.
 * One line, for fail_set_hint or after the error. */
const char *dataset_no_files_hint(bool val);

/* The seq_len + 1 tokens of dataset sample `sample` (in [0, n_samples))
 * into out, read from its shard now (shard_read): -1 with err "<path>:
 * changed after it was opened and checked: ..." when the file no longer
 * holds them as dataset_open found it. */
int dataset_read_sample(const token_dataset *ds, int64_t sample, uint16_t *out, char *err,
                        size_t err_len);

/* The sample order: shuffled per epoch (deterministic in seed and epoch), or
 * in file order when shuffle is false (validation). */
typedef struct {
    const token_dataset *ds;
    uint64_t seed;
    bool shuffle;
    int64_t cached_epoch;
    uint32_t *perm;       /* permutation of the current epoch, n_samples entries */
    uint16_t *sample_buf; /* one sample's seq_len + 1 tokens, as read */
    char error[1200];     /* the first failed read's message; "" while none */
} data_loader;

/* Allocates the permutation buffer (when shuffling) and the read buffer
 * once, here: loader_read never allocates. Not thread-safe: one loader per
 * thread. */
void loader_init(data_loader *ld, const token_dataset *ds, uint64_t seed, bool shuffle);
void loader_free(data_loader *ld);

/* The dataset sample at global position `position` (>= 0); rebuilds the
 * cached permutation when the position's epoch differs from the cached one. */
int64_t loader_sample_at(data_loader *ld, int64_t position);

/* Fills inputs and targets (count x seq_len int32 each) with the samples at
 * global positions [first, first + count); position g is sample
 * order(epoch = g / n_samples)[g % n_samples], so training runs across epochs.
 * Returns 0; or -1 when a sample's shard changed under the run (shorter
 * now, or holding a token >= vocab_size): that sample is left as token 0
 * (the batch stays within the model's vocabulary), the others are read, and
 * loader_error says what happened. The caller ends the run, collectively:
 * the other ranks' reads may have succeeded. */
int loader_read(data_loader *ld, int64_t first, int count, int32_t *inputs, int32_t *targets);

/* The first failed read's message ("<path>: changed after it was opened and
 * checked: ..."), or NULL while every read succeeded. */
const char *loader_error(const data_loader *ld);

/* Position of rank `rank`'s micro-batch `micro` within optimizer step `step`,
 * for S = micro_batch * world * grad_accum sequences per step: the same global
 * batch for any split of S into ranks x micro-steps. */
int64_t loader_batch_position(int64_t step_first, int micro, int rank, int world, int micro_batch);
#endif
