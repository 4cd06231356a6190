/* Unit test for llm.c token shards: shard_write/shard_open/shard_read round
 * trip, every rejection naming the file and its specific problem (a FIFO
 * refused without blocking), and a file that changes after it was opened:
 * truncated or rewritten in place (an error naming it), grown or replaced by
 * a rename (read as it was). */
#include "test_shard_util.h"

#include <errno.h>
#include <sys/stat.h>

#define VOCAB 50257

static uint64_t rng_state = 12345;

static uint32_t test_rand(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

static void test_round_trip(void) {
    enum { N = 10007 };
    static uint16_t tokens[N];
    for (int i = 0; i < N; i++) tokens[i] = (uint16_t)(test_rand() % VOCAB);
    tokens[0] = 0;
    tokens[N - 1] = VOCAB - 1; /* the largest valid token must pass */
    const char *path = test_path("round.bin");
    char err[1024] = "";
    EXPECT(shard_write(path, tokens, N, err, sizeof(err)) == 0, "shard_write: %s", err);
    EXPECT(access(test_path("round.bin.tmp"), F_OK) != 0, "temp file left behind");

    token_shard shard;
    EXPECT(shard_open(&shard, path, VOCAB, err, sizeof(err)) == 0, "shard_open: %s", err);
    EXPECT_EQ_I64(shard.n_tokens, N);
    EXPECT(strcmp(shard.path, path) == 0, "path %s", shard.path);
    static uint16_t got[N];
    EXPECT(shard_read(&shard, 0, N, got, err, sizeof err) == 0, "shard_read: %s", err);
    EXPECT(memcmp(got, tokens, sizeof(tokens)) == 0, "tokens differ");
    EXPECT(shard_read(&shard, N - 3, 3, got, err, sizeof err) == 0 && got[2] == VOCAB - 1,
           "the last 3 tokens: %s", err);
    EXPECT(shard_read(&shard, N - 3, 4, got, err, sizeof err) == -1, "read past the end accepted");
    EXPECT_CONTAINS(err, "tokens [10004, 10008) asked of a shard of 10007 tokens");
    int32_t header[SHARD_HEADER_INTS];
    FILE *f = fopen(path, "rb");
    REQUIRE(f && fread(header, sizeof header, 1, f) == 1, "cannot read %s", path);
    fclose(f);
    EXPECT_EQ_I64(header[0], 20240520);
    EXPECT_EQ_I64(header[1], 1);
    EXPECT_EQ_I64(header[2], N);
    int nonzero = 0;
    for (int i = 3; i < SHARD_HEADER_INTS; i++) nonzero += header[i] != 0;
    EXPECT_EQ_I64(nonzero, 0);
    shard_close(&shard);
    EXPECT(shard.fd == -1 && shard.n_tokens == 0, "shard_close leaves state");
}

/* A header with zero tokens is a valid (useless) shard. */
static void test_empty_shard(void) {
    const char *path = test_path("empty_tokens.bin");
    char err[1024] = "";
    EXPECT(shard_write(path, NULL, 0, err, sizeof(err)) == 0, "shard_write: %s", err);
    token_shard shard;
    EXPECT(shard_open(&shard, path, VOCAB, err, sizeof(err)) == 0, "shard_open: %s", err);
    EXPECT_EQ_I64(shard.n_tokens, 0);
    shard_close(&shard);
}

/* Opens `path`, expects failure with a message naming the file and holding
 * each of the given fragments. */
static void expect_reject(const char *path, int vocab, const char *const *fragments) {
    token_shard shard;
    char err[1024] = "";
    int rc = shard_open(&shard, path, vocab, err, sizeof(err));
    EXPECT(rc == -1, "%s: accepted, want rejection", path);
    EXPECT(shard.fd == -1, "%s: failed open leaves a descriptor", path);
    EXPECT(strncmp(err, path, strlen(path)) == 0, "message \"%s\" does not start with %s", err,
           path);
    for (int i = 0; fragments[i] != NULL; i++) EXPECT_CONTAINS(err, fragments[i]);
    if (rc == 0) shard_close(&shard);
}

static void test_rejections(void) {
    uint16_t body[101];
    for (int i = 0; i < 101; i++) body[i] = (uint16_t)(i * 7);

    const char *p = test_path("magic.bin");
    test_write_raw(p, 12345, 1, 100, body, 100);
    expect_reject(p, VOCAB, (const char *[]){"bad magic 12345", "20240520", NULL});

    p = test_path("version.bin");
    test_write_raw(p, SHARD_MAGIC, 2, 100, body, 100);
    expect_reject(p, VOCAB, (const char *[]){"unsupported version 2", NULL});

    /* 100 tokens need 1024 + 200 = 1224 bytes. */
    p = test_path("truncated.bin");
    test_write_raw(p, SHARD_MAGIC, 1, 100, body, 99);
    expect_reject(p, VOCAB,
                  (const char *[]){"truncated", "100 tokens", "1224 bytes", "1222 bytes", NULL});

    p = test_path("extra.bin");
    test_write_raw(p, SHARD_MAGIC, 1, 100, body, 101);
    expect_reject(p, VOCAB, (const char *[]){"1224 bytes", "1226 bytes", "2 extra bytes", NULL});

    p = test_path("negative.bin");
    test_write_raw(p, SHARD_MAGIC, 1, -5, body, 0);
    expect_reject(p, VOCAB, (const char *[]){"bad token count -5", NULL});

    /* Two bad tokens: the message must name the first. */
    uint16_t bad[64];
    for (int i = 0; i < 64; i++) bad[i] = (uint16_t)(VOCAB - 1 - i);
    bad[17] = 50300;
    bad[40] = 60000;
    p = test_path("range.bin");
    test_write_raw(p, SHARD_MAGIC, 1, 64, bad, 64);
    expect_reject(p, VOCAB, (const char *[]){"token 50300 at index 17", "50257", NULL});

    p = test_path("short.bin");
    test_write_bytes(p, 512);
    expect_reject(p, VOCAB, (const char *[]){"512 bytes", "1024-byte header", NULL});

    p = test_path("zero.bin");
    test_write_bytes(p, 0);
    expect_reject(p, VOCAB, (const char *[]){"0 bytes", "empty", NULL});

    p = test_path("missing.bin");
    expect_reject(p, VOCAB, (const char *[]){"cannot open", strerror(ENOENT), NULL});

    expect_reject(test_dir, VOCAB, (const char *[]){"not a regular file", NULL});

    /* Without a writer, a blocking open would wait for ever (main's alarm
     * ends the test if it does). */
    p = test_path("fifo.bin");
    REQUIRE(mkfifo(p, 0600) == 0, "mkfifo %s: %s", p, strerror(errno));
    expect_reject(p, VOCAB, (const char *[]){"a FIFO (named pipe), not a regular file", NULL});
}

/* Another job changes the file after shard_open checked it. */
static void test_changed_after_open(void) {
    enum { N = 4096 };
    static uint16_t tokens[N], got[N];
    for (int i = 0; i < N; i++) tokens[i] = (uint16_t)(i % VOCAB);
    const char *path = test_path("changing.bin");
    char err[1024] = "";
    REQUIRE(shard_write(path, tokens, N, err, sizeof(err)) == 0, "shard_write: %s", err);
    token_shard shard;
    REQUIRE(shard_open(&shard, path, VOCAB, err, sizeof(err)) == 0, "shard_open: %s", err);

    /* Grown: read as the header gave it at open. */
    FILE *f = fopen(path, "ab");
    REQUIRE(f && fwrite(tokens, 2, 100, f) == 100 && fclose(f) == 0, "append to %s", path);
    EXPECT(shard_read(&shard, N - 10, 10, got, err, sizeof err) == 0, "grown: %s", err);
    EXPECT_EQ_I64(shard.n_tokens, N);

    /* Rewritten in place with a token out of the vocabulary. */
    const uint16_t bad = 50300;
    f = fopen(path, "r+b");
    REQUIRE(f && fseek(f, 1024 + 2 * 1000, SEEK_SET) == 0 && fwrite(&bad, 2, 1, f) == 1 &&
                fclose(f) == 0,
            "rewrite %s", path);
    EXPECT(shard_read(&shard, 990, 20, got, err, sizeof err) == -1, "token 50300 read");
    EXPECT(strncmp(err, path, strlen(path)) == 0, "message \"%s\" does not name the file", err);
    EXPECT_CONTAINS(err, "changed after it was opened and checked");
    EXPECT_CONTAINS(err, "token 50300 at index 1000 is out of range (vocab_size 50257)");
    EXPECT(shard_read(&shard, 0, 990, got, err, sizeof err) == 0, "the rest: %s", err);

    /* Truncated: a short read, not SIGBUS. */
    REQUIRE(truncate(path, 1024 + 2 * 2000) == 0, "truncate %s", path);
    EXPECT(shard_read(&shard, 1990, 20, got, err, sizeof err) == -1, "read past the new end");
    EXPECT_CONTAINS(err, "changed after it was opened and checked");
    EXPECT_CONTAINS(err, "it is now 5024 bytes, shorter than the 9216 it had when opened");
    EXPECT(shard_read(&shard, 0, 10, got, err, sizeof err) == 0, "before the cut: %s", err);

    /* Replaced by a rename: the open file is read, not the new one. */
    REQUIRE(truncate(path, 1024 + 2 * N) == 0, "restore %s", path);
    const uint16_t fine = 1;
    f = fopen(path, "r+b");
    REQUIRE(f && fseek(f, 1024 + 2 * 1000, SEEK_SET) == 0 && fwrite(&fine, 2, 1, f) == 1 &&
                fclose(f) == 0,
            "mend %s", path);
    REQUIRE(shard_write(path, tokens + 1, N - 1, err, sizeof(err)) == 0, "shard_write: %s", err);
    EXPECT(shard_read(&shard, 0, N, got, err, sizeof err) == 0, "renamed over: %s", err);
    EXPECT(got[5] == tokens[5], "renamed over: read the new file");
    shard_close(&shard);
}

static void test_write_errors(void) {
    const char *p = test_path("no_such_dir/out.bin");
    uint16_t tokens[4] = {1, 2, 3, 4};
    char err[1024] = "";
    EXPECT(shard_write(p, tokens, 4, err, sizeof(err)) == -1, "write into missing dir succeeded");
    EXPECT_CONTAINS(err, p);
    EXPECT_CONTAINS(err, strerror(ENOENT));
}

int main(void) {
    test_make_dir("test_shard");
    test_round_trip();
    test_empty_shard();
    alarm(20);
    test_rejections();
    test_changed_after_open();
    test_write_errors();
    test_remove_dir();
    return test_report("test_shard");
}
