/* Unit test for the token dataset and loader: sample cutting across shards,
 * per-epoch shuffles, epoch-crossing reads, and the global-batch property the
 * trainer relies on (any ranks x micro-steps split reads the same batch). */
#include "test_shard_util.h"

#include <stdbool.h>

#include "data/loader.h"

#define VOCAB 50257

/* Writes a shard whose token at position p is base + p. */
static void write_counting_shard(const char *name, int base, int n_tokens) {
    uint16_t *tokens = malloc((size_t)n_tokens * sizeof(uint16_t) + 1);
    REQUIRE(tokens != NULL, "malloc");
    for (int p = 0; p < n_tokens; p++) tokens[p] = (uint16_t)(base + p);
    char err[1024] = "";
    REQUIRE(shard_write(test_path(name), tokens, (size_t)n_tokens, err, sizeof(err)) == 0, "%s",
            err);
    free(tokens);
}

/* Checks one sample: inputs base..base+T-1, targets shifted by one. */
static void expect_sample(const int32_t *in, const int32_t *tgt, int seq_len, int base,
                          const char *what) {
    for (int t = 0; t < seq_len; t++) {
        EXPECT(in[t] == base + t, "%s input[%d] = %d, want %d", what, t, in[t], base + t);
        EXPECT(tgt[t] == base + t + 1, "%s target[%d] = %d, want %d", what, t, tgt[t],
               base + t + 1);
    }
}

/* Three shards, written out of name order: d_00 (11 tokens: 2 samples of
 * T=4, tokens 9..10 unused), d_01 (4 tokens: too short, no sample), d_02
 * (13 tokens: 3 samples). */
static void test_dataset_samples(void) {
    write_counting_shard("d_02.bin", 2000, 13);
    write_counting_shard("d_01.bin", 1000, 4);
    write_counting_shard("d_00.bin", 0, 11);
    char pattern[4200], err[1024] = "";
    snprintf(pattern, sizeof(pattern), "%s/d_*.bin", test_dir);
    token_dataset ds;
    REQUIRE(dataset_open(&ds, pattern, VOCAB, 4, err, sizeof(err)) == 0, "%s", err);
    EXPECT_EQ_I64(ds.n_shards, 3);
    EXPECT_EQ_I64(ds.n_samples, 5);
    const int64_t want_first[4] = {0, 2, 2, 5};
    for (int s = 0; s < 4; s++) EXPECT_EQ_I64(ds.shard_first_sample[s], want_first[s]);
    EXPECT(strstr(ds.shards[1].path, "d_01.bin") != NULL, "shards not sorted: %s",
           ds.shards[1].path);

    /* File order; sample 1 ends at shard 0's token 8, sample 2 starts shard 2. */
    data_loader ld;
    loader_init(&ld, &ds, 0, false);
    int32_t in[7 * 4], tgt[7 * 4];
    loader_read(&ld, 0, 5, in, tgt);
    const int want_base[5] = {0, 4, 2000, 2004, 2008};
    for (int k = 0; k < 5; k++)
        expect_sample(in + 4 * k, tgt + 4 * k, 4, want_base[k], "file order");
    EXPECT_EQ_I64(tgt[4 * 1 + 3], 8);
    EXPECT_EQ_I64(in[4 * 2], 2000);
    EXPECT_EQ_I64(tgt[4 * 4 + 3], 2012); /* last token of d_02 is a target */

    /* Unshuffled read across the epoch boundary: samples 3, 4, 0, 1, 2, 3, 4. */
    loader_read(&ld, 3, 7, in, tgt);
    const int want_wrap[7] = {2004, 2008, 0, 4, 2000, 2004, 2008};
    for (int k = 0; k < 7; k++) expect_sample(in + 4 * k, tgt + 4 * k, 4, want_wrap[k], "wrap");
    EXPECT_EQ_I64(loader_sample_at(&ld, 5 * 1000 + 3), 3);
    loader_free(&ld);
    dataset_close(&ds);
    EXPECT(ds.shards == NULL && ds.n_shards == 0, "dataset_close leaves state");
}

static void test_dataset_errors(void) {
    char pattern[4200], err[1024] = "";
    token_dataset ds;
    snprintf(pattern, sizeof(pattern), "%s/nothing_*.bin", test_dir);
    EXPECT(dataset_open(&ds, pattern, VOCAB, 4, err, sizeof(err)) == DATASET_NO_FILES,
           "no-match accepted, or not told apart from a bad shard");
    EXPECT_CONTAINS(err, "no files match");
    EXPECT_CONTAINS(dataset_no_files_hint(true), "--val-files");
    EXPECT_CONTAINS(dataset_no_files_hint(true), "eval_every = 0");
    EXPECT_CONTAINS(dataset_no_files_hint(false), "tools/gpt2_tokenize");
    EXPECT_CONTAINS(err, pattern);

    /* d_00..d_02 hold at most 13 tokens: no sample of T = 100. */
    snprintf(pattern, sizeof(pattern), "%s/d_*.bin", test_dir);
    EXPECT(dataset_open(&ds, pattern, VOCAB, 100, err, sizeof(err)) == -1, "T=100 accepted");
    EXPECT_CONTAINS(err, pattern);
    EXPECT_CONTAINS(err, "seq_len 100");

    EXPECT(dataset_open(&ds, pattern, VOCAB, 0, err, sizeof(err)) == -1, "T=0 accepted");
    EXPECT_CONTAINS(err, "seq_len 0");

    /* One bad shard among good ones: its own path and problem come back. */
    write_counting_shard("e_00.bin", 0, 20);
    test_write_raw(test_path("e_01.bin"), 777, 1, 0, NULL, 0);
    snprintf(pattern, sizeof(pattern), "%s/e_*.bin", test_dir);
    EXPECT(dataset_open(&ds, pattern, VOCAB, 4, err, sizeof(err)) == -1, "bad shard accepted");
    EXPECT_CONTAINS(err, test_path("e_01.bin"));
    EXPECT_CONTAINS(err, "bad magic 777");
}

/* A shard truncated, then rewritten in place, after dataset_open: the reads
 * that reach the change fail with the shard's name and leave token 0, the
 * others read on, and the first error is the one kept. */
static void test_changed_shard(void) {
    write_counting_shard("c_00.bin", 100, 41); /* T = 4: 10 samples */
    char path[4200];
    snprintf(path, sizeof path, "%s", test_path("c_00.bin"));
    char pattern[4200], err[1024] = "";
    snprintf(pattern, sizeof(pattern), "%s/c_*.bin", test_dir);
    token_dataset ds;
    REQUIRE(dataset_open(&ds, pattern, VOCAB, 4, err, sizeof(err)) == 0, "%s", err);
    data_loader ld;
    loader_init(&ld, &ds, 0, false);
    int32_t in[6 * 4], tgt[6 * 4];
    EXPECT(loader_read(&ld, 0, 6, in, tgt) == 0 && loader_error(&ld) == NULL, "intact: %s",
           loader_error(&ld));

    /* 20 tokens left: samples 0-3 (tokens 0..16) still there, 4 and 5 not. */
    REQUIRE(truncate(path, 1024 + 2 * 20) == 0, "truncate %s", path);
    EXPECT(loader_read(&ld, 0, 6, in, tgt) == -1, "truncated shard read");
    for (int k = 0; k < 4; k++) expect_sample(in + 4 * k, tgt + 4 * k, 4, 100 + 4 * k, "kept");
    for (int t = 4 * 4; t < 6 * 4; t++)
        EXPECT(in[t] == 0 && tgt[t] == 0, "lost sample: in[%d] = %d, tgt %d", t, in[t], tgt[t]);
    const char *e = loader_error(&ld);
    EXPECT(e && strncmp(e, path, strlen(path)) == 0, "error '%s' does not name %s",
           e ? e : "(none)", path);
    EXPECT(e && strstr(e, "changed after it was opened and checked") && strstr(e, "truncated"),
           "error '%s'", e ? e : "(none)");
    loader_free(&ld);
    dataset_close(&ds);

    /* Whole again, then token 50300 written over sample 1's second token. */
    write_counting_shard("c_00.bin", 100, 41);
    REQUIRE(dataset_open(&ds, pattern, VOCAB, 4, err, sizeof(err)) == 0, "%s", err);
    loader_init(&ld, &ds, 0, false);
    const uint16_t bad = 50300;
    FILE *f = fopen(path, "r+b");
    REQUIRE(f && fseek(f, 1024 + 2 * 5, SEEK_SET) == 0 && fwrite(&bad, 2, 1, f) == 1 &&
                fclose(f) == 0,
            "rewrite %s", path);
    EXPECT(loader_read(&ld, 0, 3, in, tgt) == -1, "token 50300 read");
    expect_sample(in, tgt, 4, 100, "before the rewrite");
    expect_sample(in + 8, tgt + 8, 4, 108, "after the rewrite");
    EXPECT(in[4] == 0 && in[5] == 0 && tgt[7] == 0, "sample 1 not zeroed: %d %d", in[4], in[5]);
    e = loader_error(&ld);
    EXPECT(e && strstr(e, "token 50300 at index 5 is out of range (vocab_size 50257)"),
           "error '%s'", e ? e : "(none)");
    loader_free(&ld);
    dataset_close(&ds);
}

/* ---- shuffled order ------------------------------------------------------ */

/* One shard, T = 2, token = position: sample i is tokens 2i..2i+2, so a
 * sample's identity is inputs[0] / 2. */
enum { N_SAMPLES = 1000, T = 2 };

static int64_t sample_id(const int32_t *in, const int32_t *tgt) {
    bool ok = in[1] == in[0] + 1 && tgt[0] == in[0] + 1 && tgt[1] == in[0] + 2 && in[0] % 2 == 0;
    EXPECT(ok, "sample at %d is not a contiguous shifted pair", in[0]);
    return in[0] / 2;
}

/* The dataset sample ids of global positions [first, first + count). */
static void read_ids(data_loader *ld, int64_t first, int count, int64_t *ids) {
    int32_t *in = malloc((size_t)count * T * sizeof(int32_t));
    int32_t *tgt = malloc((size_t)count * T * sizeof(int32_t));
    REQUIRE(in && tgt, "malloc");
    loader_read(ld, first, count, in, tgt);
    for (int k = 0; k < count; k++) ids[k] = sample_id(in + k * T, tgt + k * T);
    free(in);
    free(tgt);
}

static bool is_permutation(const int64_t *ids, int n) {
    static bool seen[N_SAMPLES];
    memset(seen, 0, sizeof(seen));
    for (int k = 0; k < n; k++) {
        if (ids[k] < 0 || ids[k] >= n || seen[ids[k]]) return false;
        seen[ids[k]] = true;
    }
    return true;
}

static int count_differences(const int64_t *a, const int64_t *b, int n) {
    int d = 0;
    for (int k = 0; k < n; k++) d += a[k] != b[k];
    return d;
}

static void open_order_dataset(token_dataset *ds) {
    write_counting_shard("o_00.bin", 0, N_SAMPLES * T + 1);
    char pattern[4200], err[1024] = "";
    snprintf(pattern, sizeof(pattern), "%s/o_*.bin", test_dir);
    REQUIRE(dataset_open(ds, pattern, VOCAB, T, err, sizeof(err)) == 0, "%s", err);
    REQUIRE(ds->n_samples == N_SAMPLES, "n_samples %lld", (long long)ds->n_samples);
}

static void test_shuffle(const token_dataset *ds) {
    static int64_t e0[N_SAMPLES], e1[N_SAMPLES], e2[N_SAMPLES], again[N_SAMPLES], other[N_SAMPLES],
        plain[N_SAMPLES];
    data_loader ld, ld2, ld3, ld_plain;
    loader_init(&ld, ds, 1337, true);
    loader_init(&ld2, ds, 1337, true);
    loader_init(&ld3, ds, 1338, true);
    loader_init(&ld_plain, ds, 1337, false);
    read_ids(&ld, 0, N_SAMPLES, e0);
    read_ids(&ld, N_SAMPLES, N_SAMPLES, e1);
    read_ids(&ld, 2 * N_SAMPLES, N_SAMPLES, e2);
    read_ids(&ld2, 0, N_SAMPLES, again);
    read_ids(&ld3, 0, N_SAMPLES, other);
    read_ids(&ld_plain, 0, N_SAMPLES, plain);

    EXPECT(is_permutation(e0, N_SAMPLES), "epoch 0 is not a permutation");
    EXPECT(is_permutation(e1, N_SAMPLES), "epoch 1 is not a permutation");
    EXPECT(is_permutation(e2, N_SAMPLES), "epoch 2 is not a permutation");
    EXPECT(is_permutation(other, N_SAMPLES), "seed 1338 epoch 0 is not a permutation");
    EXPECT_EQ_I64(count_differences(e0, again, N_SAMPLES), 0);
    /* A fresh permutation of 1000 keeps ~1 element in place; > 900 moved. */
    EXPECT(count_differences(e0, e1, N_SAMPLES) > 900, "epochs 0 and 1 too alike");
    EXPECT(count_differences(e1, e2, N_SAMPLES) > 900, "epochs 1 and 2 too alike");
    EXPECT(count_differences(e0, other, N_SAMPLES) > 900, "seeds 1337 and 1338 too alike");
    int not_identity = 0;
    for (int k = 0; k < N_SAMPLES; k++) {
        EXPECT(plain[k] == k, "shuffle=false position %d is sample %lld", k, (long long)plain[k]);
        not_identity += e0[k] != k;
    }
    EXPECT(not_identity > 900, "shuffled order is close to file order (%d moved)", not_identity);

    /* Pinned: checkpointed data positions mean the same samples only while
     * the shuffle never changes; a change here breaks resuming old runs.
     * Values cross-checked with an independent Python transcription of
     * splitmix64 + Lemire bounded draws + Fisher-Yates (i from n-1 down). */
    const int64_t golden_e0[8] = {37, 949, 182, 43, 807, 29, 721, 985};
    const int64_t golden_e1[8] = {751, 386, 676, 613, 853, 591, 121, 624};
    for (int k = 0; k < 8; k++) {
        EXPECT(e0[k] == golden_e0[k], "seed 1337 epoch 0 [%d] = %lld, want %lld", k,
               (long long)e0[k], (long long)golden_e0[k]);
        EXPECT(e1[k] == golden_e1[k], "seed 1337 epoch 1 [%d] = %lld, want %lld", k,
               (long long)e1[k], (long long)golden_e1[k]);
    }

    /* A read across the epoch boundary: 3 samples of epoch 0, 3 of epoch 1,
     * after the cache moved on to epoch 2 (forcing two rebuilds). */
    int64_t cross[6];
    read_ids(&ld, N_SAMPLES - 3, 6, cross);
    for (int k = 0; k < 3; k++) {
        EXPECT_EQ_I64(cross[k], e0[N_SAMPLES - 3 + k]);
        EXPECT_EQ_I64(cross[3 + k], e1[k]);
        EXPECT_EQ_I64(loader_sample_at(&ld2, N_SAMPLES - 3 + k), e0[N_SAMPLES - 3 + k]);
    }
    loader_free(&ld);
    loader_free(&ld2);
    loader_free(&ld3);
    loader_free(&ld_plain);
}

/* ---- global batches across world sizes ------------------------------------ */

enum { STEP_SAMPLES = 16, N_STEPS = 130 }; /* 130 * 16 = 2080: crosses two epochs */

typedef struct {
    int micro_batch, world, grad_accum;
} split;

/* Reads step `step` the way `world` ranks would, each with its own loader
 * (as separate processes have), placing every micro-batch at its offset in
 * the global batch; checks the micro-batches tile the step exactly once. */
static void read_step_split(const token_dataset *ds, data_loader *rank_loaders, split sp,
                            int64_t step, int64_t *ids) {
    int filled[STEP_SAMPLES] = {0};
    int64_t step_first = step * STEP_SAMPLES;
    for (int micro = 0; micro < sp.grad_accum; micro++) {
        for (int rank = 0; rank < sp.world; rank++) {
            int64_t pos = loader_batch_position(step_first, micro, rank, sp.world, sp.micro_batch);
            int64_t off = pos - step_first;
            bool inside = off >= 0 && off + sp.micro_batch <= STEP_SAMPLES;
            EXPECT(inside, "B=%d world=%d micro=%d rank=%d: position %lld outside step %lld",
                   sp.micro_batch, sp.world, micro, rank, (long long)pos, (long long)step);
            if (!inside) continue;
            read_ids(&rank_loaders[rank], pos, sp.micro_batch, ids + off);
            for (int k = 0; k < sp.micro_batch; k++) filled[off + k]++;
        }
    }
    for (int k = 0; k < STEP_SAMPLES; k++)
        EXPECT(filled[k] == 1, "B=%d world=%d: slot %d of step %lld read %d times", sp.micro_batch,
               sp.world, k, (long long)step, filled[k]);
    (void)ds;
}

static void test_world_sizes(const token_dataset *ds) {
    const split splits[] = {
        {16, 1, 1}, {4, 1, 4}, {8, 2, 1}, {4, 2, 2}, {2, 4, 2}, {4, 4, 1}, {1, 4, 4},
    };
    const int n_splits = (int)(sizeof(splits) / sizeof(splits[0]));
    data_loader reference;
    loader_init(&reference, ds, 42, true);
    for (int si = 0; si < n_splits; si++) {
        split sp = splits[si];
        REQUIRE(sp.micro_batch * sp.world * sp.grad_accum == STEP_SAMPLES, "bad split %d", si);
        data_loader ranks[4];
        for (int r = 0; r < sp.world; r++) loader_init(&ranks[r], ds, 42, true);
        int mismatched_steps = 0;
        for (int64_t step = 0; step < N_STEPS; step++) {
            int64_t want[STEP_SAMPLES], got[STEP_SAMPLES];
            for (int k = 0; k < STEP_SAMPLES; k++) got[k] = -1;
            read_ids(&reference, step * STEP_SAMPLES, STEP_SAMPLES, want);
            read_step_split(ds, ranks, sp, step, got);
            mismatched_steps += count_differences(want, got, STEP_SAMPLES) != 0;
        }
        EXPECT(mismatched_steps == 0, "B=%d world=%d accum=%d: %d of %d steps differ",
               sp.micro_batch, sp.world, sp.grad_accum, mismatched_steps, N_STEPS);
        for (int r = 0; r < sp.world; r++) loader_free(&ranks[r]);
    }
    loader_free(&reference);

    /* The formula itself: rank 2 of 4, micro-step 1, B = 8 after position 100. */
    EXPECT_EQ_I64(loader_batch_position(100, 1, 2, 4, 8), 100 + (1 * 4 + 2) * 8);
    EXPECT_EQ_I64(loader_batch_position(0, 0, 0, 1, 8), 0);
}

int main(void) {
    test_make_dir("test_loader");
    test_dataset_samples();
    test_dataset_errors();
    test_changed_shard();
    token_dataset ds;
    open_order_dataset(&ds);
    test_shuffle(&ds);
    test_world_sizes(&ds);
    dataset_close(&ds);
    test_remove_dir();
    return test_report("test_loader");
}
