/* The shape check (model/shape.h): each rule on its own, with the message
 * that names the size, its value and the rule; the bounds at their edges;
 * the names a reader passes; the CUDA head sizes. */
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "model/shape.h"

static const model_shape GPT2_124M = {.n_layer = 12,
                                      .n_embd = 768,
                                      .n_head = 12,
                                      .vocab_size = 50257,
                                      .padded_vocab_size = 50304,
                                      .block_size = 1024};

/* s with size i set to v. */
static model_shape with(int i, int64_t v) {
    model_shape s = GPT2_124M;
    *shape_size(&s, i) = v;
    return s;
}

/* shape_check fails on s with exactly this message. */
static void expect_refused(const model_shape *s, const char *const *names, const char *want) {
    char err[512] = "";
    int rc = shape_check(s, names, err, sizeof err);
    EXPECT(rc == -1 && strcmp(err, want) == 0, "rc %d, message '%s', want '%s'", rc, err, want);
}

static void expect_accepted(const model_shape *s, const char *what) {
    char err[512] = "";
    EXPECT(shape_check(s, NULL, err, sizeof err) == 0, "%s refused: %s", what, err);
}

static void test_ranges(void) {
    const int64_t max[SHAPE_N_SIZES] = {1024, 65536, 4096, 1 << 24, (1 << 24) + 127, 1 << 20};
    for (int i = 0; i < SHAPE_N_SIZES; i++) {
        if (i == 4) continue; /* padded_vocab_size follows vocab_size: test_vocab */
        char want[256];
        const int64_t bad[] = {0, -1, max[i] + 1, (int64_t)1 << 40, INT64_MIN};
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            model_shape s = with(i, bad[k]);
            snprintf(want, sizeof want, "%s = %lld: out of range: must be in [1, %lld]",
                     shape_size_names[i], (long long)bad[k], (long long)max[i]);
            expect_refused(&s, NULL, want);
        }
    }
    expect_refused(&(model_shape){12, 768, 12, 50257, 0, 1024}, NULL,
                   "padded_vocab_size = 0: out of range: must be in [1, 16777343]");
    /* The largest shape passes (and its products fit: shape.h). */
    const model_shape big = {1024, 65536, 4096, 1 << 24, 1 << 24, 1 << 20};
    expect_accepted(&big, "the largest shape");
    const model_shape one = {1, 1, 1, 1, 128, 1};
    expect_accepted(&one, "the smallest shape");
    expect_accepted(&GPT2_124M, "GPT-2 124M");
}

static void test_vocab(void) {
    EXPECT(shape_padded_vocab(50257) == 50304 && shape_padded_vocab(128) == 128 &&
               shape_padded_vocab(129) == 256 && shape_padded_vocab(1) == 128,
           "padding to 128");
    EXPECT(shape_padded_vocab(INT64_MAX) == INT64_MAX && shape_padded_vocab(-5) == -5,
           "an out-of-range vocab_size is left for shape_check to refuse (no overflow)");
    model_shape huge = with(3, INT64_MAX);
    huge.padded_vocab_size = shape_padded_vocab(huge.vocab_size);
    expect_refused(&huge, NULL,
                   "vocab_size = 9223372036854775807: out of range: must be in [1, 16777216]");
    model_shape s = with(3, 60000);
    expect_refused(&s, NULL,
                   "vocab_size = 60000 is larger than padded_vocab_size = 50304 (the rows wte "
                   "stores)");
    s = with(4, 50432);
    expect_refused(&s, NULL,
                   "padded_vocab_size = 50432: must be vocab_size = 50257 rounded up to a "
                   "multiple of 128, 50304");
}

static void test_heads(void) {
    model_shape s = with(2, 5);
    expect_refused(&s, NULL, "n_embd = 768 is not divisible by n_head = 5");
    s = with(2, 4096); /* more heads than channels never divides */
    expect_refused(&s, NULL, "n_embd = 768 is not divisible by n_head = 4096");
    char err[256] = "";
    EXPECT(shape_check_cuda(&GPT2_124M, err, sizeof err) == 0, "head size 64 on CUDA: %s", err);
    s = with(2, 6); /* head size 128 */
    EXPECT(shape_check_cuda(&s, err, sizeof err) == 0, "head size 128 on CUDA: %s", err);
    s = with(2, 24); /* head size 32: CPU only */
    expect_accepted(&s, "head size 32");
    EXPECT(shape_check_cuda(&s, err, sizeof err) == -1 &&
               strcmp(err, "head size n_embd / n_head = 768 / 24 = 32, but the CUDA attention "
                           "supports head sizes 64 and 128") == 0,
           "head size 32 on CUDA: '%s'", err);
}

/* A reader names the sizes as its file does (config.json: n_positions). */
static void test_names(void) {
    static const char *const hf[SHAPE_N_SIZES] = {
        "n_layer", "n_embd", "n_head", "vocab_size", "padded_vocab_size", "n_positions"};
    model_shape s = with(5, 0);
    expect_refused(&s, hf, "n_positions = 0: out of range: must be in [1, 1048576]");
    expect_refused(&s, NULL, "block_size = 0: out of range: must be in [1, 1048576]");
}

/* The first broken rule is the one reported, in the order of the sizes. */
static void test_order(void) {
    const model_shape s = {0, 768, 0, 50257, 50304, 0};
    expect_refused(&s, NULL, "n_layer = 0: out of range: must be in [1, 1024]");
    char err[8] = "";
    EXPECT(shape_check(&s, NULL, err, sizeof err) == -1 && strlen(err) == 7,
           "a short buffer holds a cut message: '%s'", err);
}

static void test_layout(void) {
    gpt2_layout lay;
    shape_layout_build(&GPT2_124M, &lay);
    EXPECT(lay.n_params == 124475904, "124M laid out from its shape: %zu parameters", lay.n_params);
    layout_free(&lay);
}

int main(void) {
    test_ranges();
    test_vocab();
    test_heads();
    test_names();
    test_order();
    test_layout();
    if (failures)
        printf("test_shape: %d failure(s)\n", failures);
    else
        printf("test_shape: OK\n");
    return failures != 0;
}
