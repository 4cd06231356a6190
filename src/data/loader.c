/* Token dataset over a glob of shards and the loader that turns global sample
 * positions into (inputs, targets) batches, shuffled deterministically per
 * epoch, each sample read from its shard when it is needed (shard_read). */
#include "data/loader.h"

#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/fail.h"

/* ---- dataset ------------------------------------------------------------- */

static int cmp_path(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* glob(3) sorts by the locale's collation; strcmp order makes the sample
 * numbering (and so every checkpointed position) independent of LANG. */
static int dataset_glob(glob_t *g, const char *pattern, char *err, size_t err_len) {
    int rc = glob(pattern, GLOB_NOSORT, NULL, g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g->gl_pathc == 0)) {
        snprintf(err, err_len, "no files match pattern '%s'", pattern);
        return DATASET_NO_FILES;
    }
    if (rc != 0) {
        snprintf(err, err_len, "cannot expand pattern '%s' (%s)", pattern,
                 rc == GLOB_NOSPACE ? "out of memory" : "read error");
        return -1;
    }
    qsort(g->gl_pathv, g->gl_pathc, sizeof(char *), cmp_path);
    return 0;
}

const char *dataset_no_files_hint(bool val) {
    /* A user who tokenized their own text without --val-files has train
     * shards only: say so, and the two ways on. */
    if (val)
        return "gpt2_tokenize writes val shards (DIR/PREFIX_val_*.bin) only when given "
               "--val-files N: tokenize again with it, point val_data at existing shards, or set "
               "eval_every = 0 to train without validation";
    return "token shards are made by tools/gpt2_tokenize (your own text or JSONL: gpt2_tokenize "
           "--out-dir DIR --val-files N INPUT...) or tools/prepare_data.sh (the bundled corpus); "
           "a relative pattern is read from the current directory";
}

static int64_t shard_n_samples(const token_shard *shard, int seq_len) {
    return shard->n_tokens > 0 ? (int64_t)(shard->n_tokens - 1) / seq_len : 0;
}

/* Prefix sums of per-shard sample counts: sample i lives in the shard s with
 * first[s] <= i < first[s + 1]. */
static void dataset_index(token_dataset *ds) {
    ds->shard_first_sample[0] = 0;
    for (int s = 0; s < ds->n_shards; s++)
        ds->shard_first_sample[s + 1] =
            ds->shard_first_sample[s] + shard_n_samples(&ds->shards[s], ds->seq_len);
    ds->n_samples = ds->shard_first_sample[ds->n_shards];
}

static int dataset_check_size(const token_dataset *ds, const char *pattern, char *err,
                              size_t err_len) {
    if (ds->n_samples == 0) {
        snprintf(err, err_len,
                 "pattern '%s' (%d files) has no sample of seq_len %d: every shard holds "
                 "fewer than seq_len + 1 = %d tokens",
                 pattern, ds->n_shards, ds->seq_len, ds->seq_len + 1);
        return -1;
    }
    if (ds->n_samples > (int64_t)UINT32_MAX) {
        snprintf(err, err_len,
                 "pattern '%s' has %" PRId64 " samples of seq_len %d; the loader's "
                 "uint32 permutation supports at most %" PRIu32,
                 pattern, ds->n_samples, ds->seq_len, UINT32_MAX);
        return -1;
    }
    return 0;
}

/* Every shard stays open while the run reads it (shard.h): a dataset of
 * more shards than the soft limit on descriptors (often 1024) raises it
 * toward the hard one, as the Go runtime does for every program. */
static void dataset_raise_file_limit(size_t n_files) {
    enum { SPARE = 256 }; /* MPI, HDF5, logs */
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
    const rlim_t want = (rlim_t)n_files + SPARE;
    if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= want) return;
    lim.rlim_cur = lim.rlim_max != RLIM_INFINITY && lim.rlim_max < want ? lim.rlim_max : want;
    setrlimit(RLIMIT_NOFILE, &lim); /* failing, the open says EMFILE and what to do */
}

int dataset_open(token_dataset *ds, const char *pattern, int vocab_size, int seq_len, char *err,
                 size_t err_len) {
    memset(ds, 0, sizeof(*ds));
    if (seq_len <= 0) {
        snprintf(err, err_len, "bad seq_len %d for pattern '%s'", seq_len, pattern);
        return -1;
    }
    glob_t g;
    const int glob_rc = dataset_glob(&g, pattern, err, err_len);
    if (glob_rc != 0) {
        globfree(&g);
        return glob_rc;
    }
    ds->seq_len = seq_len;
    dataset_raise_file_limit(g.gl_pathc);
    ds->shards = xcalloc(g.gl_pathc, sizeof(token_shard));
    ds->shard_first_sample = xcalloc(g.gl_pathc + 1, sizeof(int64_t));
    int rc = 0;
    for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
        rc = shard_open(&ds->shards[i], g.gl_pathv[i], vocab_size, err, err_len);
        if (rc == 0) ds->n_shards++;
    }
    if (rc == 0) {
        dataset_index(ds);
        rc = dataset_check_size(ds, pattern, err, err_len);
    }
    globfree(&g);
    if (rc != 0) dataset_close(ds);
    return rc;
}

const char *dataset_shared_file(const token_dataset *a, const token_dataset *b) {
    for (int i = 0; i < a->n_shards; i++) {
        struct stat sa;
        if (stat(a->shards[i].path, &sa) != 0) continue;
        for (int j = 0; j < b->n_shards; j++) {
            struct stat sb;
            if (stat(b->shards[j].path, &sb) == 0 && sa.st_dev == sb.st_dev &&
                sa.st_ino == sb.st_ino)
                return a->shards[i].path;
        }
    }
    return NULL;
}

void dataset_close(token_dataset *ds) {
    for (int s = 0; s < ds->n_shards; s++) shard_close(&ds->shards[s]);
    free(ds->shards);
    free(ds->shard_first_sample);
    memset(ds, 0, sizeof(*ds));
}

/* Binary search for the last shard whose first sample is <= sample; shards
 * without samples share their successor's prefix sum and are skipped. */
static int dataset_find_shard(const token_dataset *ds, int64_t sample) {
    int lo = 0, hi = ds->n_shards; /* answer in [lo, hi) */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (ds->shard_first_sample[mid] <= sample)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int dataset_read_sample(const token_dataset *ds, int64_t sample, uint16_t *out, char *err,
                        size_t err_len) {
    CHECK(sample >= 0 && sample < ds->n_samples, "sample %" PRId64 " out of range [0, %" PRId64 ")",
          sample, ds->n_samples);
    int s = dataset_find_shard(ds, sample);
    int64_t local = sample - ds->shard_first_sample[s];
    return shard_read(&ds->shards[s], (size_t)(local * ds->seq_len), (size_t)ds->seq_len + 1, out,
                      err, err_len);
}

/* ---- loader -------------------------------------------------------------- */

/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and statistically good
 * enough for a shuffle; its finaliser also mixes (seed, epoch) into a state. */
static uint64_t splitmix64_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t splitmix64_next(uint64_t *state) {
    *state += 0x9e3779b97f4a7c15ULL;
    return splitmix64_mix(*state);
}

/* Uniform in [0, range) without modulo bias (Lemire 2019); range < 2^32. */
static uint32_t rng_below(uint64_t *state, uint32_t range) {
    uint64_t m = (splitmix64_next(state) >> 32) * (uint64_t)range;
    uint32_t low = (uint32_t)m;
    if (low < range) {
        uint32_t threshold = (uint32_t)(-range) % range;
        while (low < threshold) {
            m = (splitmix64_next(state) >> 32) * (uint64_t)range;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* Fisher-Yates over the identity: the order depends only on (seed, epoch),
 * so every rank, and a resumed run, rebuilds the same permutation. */
static void loader_build_perm(data_loader *ld, int64_t epoch) {
    uint32_t n = (uint32_t)ld->ds->n_samples;
    uint64_t state = splitmix64_mix(splitmix64_mix(ld->seed) ^ (uint64_t)epoch);
    for (uint32_t i = 0; i < n; i++) ld->perm[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = rng_below(&state, i + 1);
        uint32_t t = ld->perm[i];
        ld->perm[i] = ld->perm[j];
        ld->perm[j] = t;
    }
    ld->cached_epoch = epoch;
}

void loader_init(data_loader *ld, const token_dataset *ds, uint64_t seed, bool shuffle) {
    CHECK(ds->n_samples > 0 && ds->n_samples <= (int64_t)UINT32_MAX,
          "loader needs 1 to 2^32-1 samples, the dataset has %" PRId64, ds->n_samples);
    ld->ds = ds;
    ld->seed = seed;
    ld->shuffle = shuffle;
    ld->cached_epoch = -1;
    /* Allocated once so that loader_read never allocates. */
    ld->perm = shuffle ? xmalloc((size_t)ds->n_samples * sizeof(uint32_t)) : NULL;
    ld->sample_buf = xmalloc(((size_t)ds->seq_len + 1) * sizeof(uint16_t));
    ld->error[0] = '\0';
}

void loader_free(data_loader *ld) {
    free(ld->perm);
    free(ld->sample_buf);
    memset(ld, 0, sizeof(*ld));
}

int64_t loader_sample_at(data_loader *ld, int64_t position) {
    CHECK(position >= 0, "negative data position %" PRId64, position);
    int64_t epoch = position / ld->ds->n_samples;
    int64_t index = position % ld->ds->n_samples;
    if (!ld->shuffle) return index;
    if (epoch != ld->cached_epoch) loader_build_perm(ld, epoch);
    return ld->perm[index];
}

/* Widening copy: sample = T + 1 tokens, inputs the first T, targets the last T. */
static void copy_sample(const uint16_t *tokens, int seq_len, int32_t *inputs, int32_t *targets) {
    for (int t = 0; t < seq_len; t++) {
        inputs[t] = tokens[t];
        targets[t] = tokens[t + 1];
    }
}

int loader_read(data_loader *ld, int64_t first, int count, int32_t *inputs, int32_t *targets) {
    CHECK(first >= 0 && count >= 0, "bad loader_read(first=%" PRId64 ", count=%d)", first, count);
    int seq_len = ld->ds->seq_len, rc = 0;
    for (int k = 0; k < count; k++) {
        /* Per sample, so a batch that crosses an epoch boundary switches
         * permutation mid-batch (rebuilt once, in place). */
        int64_t sample = loader_sample_at(ld, first + k);
        size_t off = (size_t)k * (size_t)seq_len;
        char *err = ld->error[0] ? NULL : ld->error; /* the first failure is the one to tell */
        if (dataset_read_sample(ld->ds, sample, ld->sample_buf, err, sizeof ld->error) != 0) {
            memset(ld->sample_buf, 0, ((size_t)seq_len + 1) * sizeof(uint16_t));
            rc = -1;
        }
        copy_sample(ld->sample_buf, seq_len, inputs + off, targets + off);
    }
    return rc;
}

const char *loader_error(const data_loader *ld) { return ld->error[0] ? ld->error : NULL; }

int64_t loader_batch_position(int64_t step_first, int micro, int rank, int world, int micro_batch) {
    return step_first + ((int64_t)micro * world + rank) * micro_batch;
}
