/* tokenizer_roundtrip: decode(encode(x)) == x on the corpus and the hard
 * strings, WHATWG replacement of invalid UTF-8 byte for byte, known GPT-2 ids,
 * and the loader's error messages.
 *
 * Usage: test_tokenizer ENCODER_JSON VOCAB_BPE CORPUS_TEXT_DIR */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "expect.h"
#include "tokenizer_hard_strings.h"

static int32_t *encode(bpe_tokenizer *tok, const char *text, size_t len, size_t *n) {
    int32_t *ids = NULL;
    size_t cap = 0;
    *n = 0;
    if (tokenizer_encode(tok, text, len, &ids, n, &cap) != 0) {
        fprintf(stderr, "FAIL encode: %s\n", tokenizer_last_error(tok));
        failures++;
    }
    return ids;
}

/* decode(encode(text)) must be `expect` (text itself for valid UTF-8). */
static size_t check_roundtrip(bpe_tokenizer *tok, const char *name, const char *text, size_t len,
                              const char *expect, size_t expect_len) {
    size_t n = 0, out_len = 0;
    int32_t *ids = encode(tok, text, len, &n);
    char *out = tokenizer_decode(tok, ids, n, &out_len);
    bool same = out && out_len == expect_len && memcmp(out, expect, expect_len) == 0;
    if (!same) {
        size_t at = 0;
        while (out && at < out_len && at < expect_len && out[at] == expect[at]) at++;
        EXPECT(same, "%s: decode(encode(x)) differs at byte %zu (%zu bytes back, %zu expected)",
               name, at, out ? out_len : 0, expect_len);
    }
    free(out);
    free(ids);
    return n;
}

static void check_ids(bpe_tokenizer *tok, const char *text, const int32_t *want, size_t n_want) {
    size_t n = 0;
    int32_t *ids = encode(tok, text, strlen(text), &n);
    bool same = n == n_want && memcmp(ids, want, n * sizeof *ids) == 0;
    EXPECT(same, "\"%s\": got %zu ids (first %d), expected %zu (first %d)", text, n,
           n ? ids[0] : -1, n_want, want[0]);
    free(ids);
}

/* Ids from the npm gpt-3-encoder (and OpenAI's encoder.py). */
static void test_known_ids(bpe_tokenizer *tok) {
    EXPECT(tokenizer_vocab_size(tok) == 50257, "vocab size %d", tokenizer_vocab_size(tok));
    size_t len = 0;
    const char *eot = tokenizer_token_bytes(tok, GPT2_EOT_TOKEN, &len);
    EXPECT(eot && len == 13 && memcmp(eot, "<|endoftext|>", 13) == 0,
           "id 50256 is not <|endoftext|>");
    EXPECT(tokenizer_token_bytes(tok, 50257, &len) == NULL, "id 50257 should be unknown");
    EXPECT(tokenizer_token_bytes(tok, -1, &len) == NULL, "id -1 should be unknown");
    check_ids(tok, "Hello world", (const int32_t[]){15496, 995}, 2);
    check_ids(tok, "Hello, world!", (const int32_t[]){15496, 11, 995, 0}, 4);
    check_ids(tok, " the", (const int32_t[]){262}, 1);
    /* The special token's text is ordinary text to the encoder. */
    check_ids(tok, "<|endoftext|>", (const int32_t[]){27, 91, 437, 1659, 5239, 91, 29}, 7);
    /* Upper-case 'S is not a contraction in GPT-2's pattern. */
    check_ids(tok, "IT'S", (const int32_t[]){2043, 6, 50}, 3);
    /* Encoding appends to what is already there. */
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    tokenizer_encode(tok, "Hello", 5, &ids, &n, &cap);
    tokenizer_encode(tok, " world", 6, &ids, &n, &cap);
    EXPECT(n == 2 && ids[0] == 15496 && ids[1] == 995, "encode does not append");
    char *bad = tokenizer_decode(tok, (const int32_t[]){15496, 60000}, 2, &len);
    EXPECT(bad == NULL, "decode of an unknown id should fail");
    free(bad);
    free(ids);
}

/* WHATWG: one U+FFFD per maximal subpart of an ill-formed sequence. */
static void test_sanitize(void) {
#define FFFD "\xEF\xBF\xBD"
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"abc", "abc"},
        {"\xFF", FFFD},
        {"\xC0\xAF", FFFD FFFD},                   /* C0 can never start a sequence */
        {"\xE0\x80\xAF", FFFD FFFD FFFD},          /* overlong: 80 is below E0's A0 */
        {"\xED\xA0\x80", FFFD FFFD FFFD},          /* a surrogate */
        {"\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD}, /* above U+10FFFF */
        {"\xE2\x82", FFFD},                        /* truncated at the end: one */
        {"\xE2\x82x", FFFD "x"},
        {"\xF0\x9F\x98"
         "a",
         FFFD "a"}, /* truncated emoji: one */
        {"\xE1\x80\xE2\x82\xAC", FFFD "\xE2\x82\xAC"},
        {"\xC3\xC3\xA9", FFFD "\xC3\xA9"},
        {"\x80\x80", FFFD FFFD},
        {"\xF8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD},
        {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"}, /* valid 4-byte */
        {"\xEF\xBB\xBF", "\xEF\xBB\xBF"},         /* a BOM stays */
    };
#undef FFFD
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = 0, want = strlen(cases[i].out);
        char *out = tokenizer_sanitize_utf8(cases[i].in, strlen(cases[i].in), &len);
        EXPECT(out && len == want && memcmp(out, cases[i].out, want) == 0,
               "sanitize case %zu: got %zu bytes, expected %zu", i, len, want);
        free(out);
    }
}

static void test_hard_strings(bpe_tokenizer *tok, size_t *tokens) {
    for (size_t i = 0; i < TOKENIZER_N_HARD_CASES; i++) {
        const tokenizer_case *c = &tokenizer_hard_cases[i];
        size_t len = c->len;
        char *expect = tokenizer_sanitize_utf8(c->text, c->len, &len);
        bool unchanged = len == c->len && memcmp(expect, c->text, len) == 0;
        EXPECT(unchanged == c->valid_utf8, "%s: sanitize %s the text", c->name,
               unchanged ? "kept" : "changed");
        *tokens += check_roundtrip(tok, c->name, c->text, c->len, expect, len);
        free(expect);
    }
}

/* Pieces long enough to stress PCRE2's JIT stack and the BPE loop. */
static void test_long_pieces(bpe_tokenizer *tok, size_t *tokens) {
    size_t big = 1 << 20;
    char *t = malloc(big + 1);
    memset(t, ' ', big);
    t[big - 1] = 'x';
    *tokens += check_roundtrip(tok, "1 MiB of spaces", t, big, t, big);
    for (size_t i = 0; i < big; i++) t[i] = "etaoinshrdlu"[i * 7 % 12];
    *tokens += check_roundtrip(tok, "1 MiB word", t, big, t, big);
    free(t);
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)size + 1);
    *len = fread(buf, 1, (size_t)size, f);
    fclose(f);
    return buf;
}

static int test_corpus(bpe_tokenizer *tok, const char *dir, size_t *tokens) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int docs = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (nl < 5 || strcmp(e->d_name + nl - 4, ".txt") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = 0;
        char *text = read_all(path, &len);
        EXPECT(text != NULL, "cannot read %s", path);
        if (!text) continue;
        *tokens += check_roundtrip(tok, path, text, len, text, len);
        free(text);
        docs++;
    }
    closedir(d);
    return docs;
}

/* Errors name the file and the problem. */
static void test_load_errors(const char *encoder, const char *vocab) {
    char err[1024] = "";
    bpe_tokenizer *tok = tokenizer_load("/nonexistent/encoder.json", vocab, err, sizeof err);
    EXPECT(!tok && strstr(err, "/nonexistent/encoder.json"), "missing encoder: '%s'", err);
    tok = tokenizer_load(encoder, encoder, err, sizeof err);
    EXPECT(!tok && strstr(err, "#version"), "encoder.json as vocab.bpe: '%s'", err);
    tok = tokenizer_load(vocab, vocab, err, sizeof err);
    EXPECT(!tok && strstr(err, vocab), "vocab.bpe as encoder.json: '%s'", err);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s ENCODER_JSON VOCAB_BPE CORPUS_TEXT_DIR\n", argv[0]);
        return 2;
    }
    char err[1024];
    bpe_tokenizer *tok = tokenizer_load(argv[1], argv[2], err, sizeof err);
    if (!tok) {
        fprintf(stderr, "tokenizer_roundtrip: %s\nrun tools/prepare_data.sh first\n", err);
        return 1;
    }
    size_t tokens = 0;
    test_known_ids(tok);
    test_sanitize();
    test_hard_strings(tok, &tokens);
    test_long_pieces(tok, &tokens);
    int docs = test_corpus(tok, argv[3], &tokens);
    if (docs <= 0) {
        fprintf(stderr,
                "tokenizer_roundtrip: no documents in %s: run tools/prepare_data.sh first\n",
                argv[3]);
        failures++;
    }
    test_load_errors(argv[1], argv[2]);
    tokenizer_free(tok);
    printf("tokenizer_roundtrip: %d corpus documents + %zu hard strings + 2 long pieces, "
           "%zu tokens round-tripped, %d failures\n",
           docs, TOKENIZER_N_HARD_CASES, tokens, failures);
    return failures ? 1 : 0;
}
