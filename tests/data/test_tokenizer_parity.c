/* tokenizer_parity: our GPT-2 BPE against the npm gpt-3-encoder, token for
 * token (tokenizer_parity.sh runs the node oracle and then this program).
 *
 *   test_tokenizer_parity --write-cases DIR
 *       writes the hard strings (plus generated long and all-code-point
 *       texts) as DIR/case-NN-name.txt, the oracle's inputs
 *   test_tokenizer_parity ENCODER VOCAB ORACLE_OUT [SHARD_PREFIX N_DOCS N_VAL]
 *       encodes every file named in ORACLE_OUT and compares; with
 *       SHARD_PREFIX, also checks that gpt2_tokenize's shards
 *       SHARD_PREFIX_{val,train}_*.bin hold exactly <|endoftext|> + ids of the
 *       first N_DOCS oracle files in order, the first N_VAL of them in val. */
#include <errno.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/shard.h"
#include "data/tokenizer.h"
#include "tokenizer_hard_strings.h"

typedef struct {
    char *path;
    int32_t *ids;
    size_t n;
} oracle_doc;

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
}

static void write_file(const char *dir, int index, const char *name, const char *text, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/case-%02d-%s.txt", dir, index, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "tokenizer_parity: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

static size_t put_utf8(char *out, unsigned cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Every code point of the BMP and plane 1 (and every 7th of planes 2, 3 and
 * 14) after a letter, after a space, before a letter, a digit and '.': a
 * different letter / digit / space class for any character changes the
 * pieces, so this pins our PCRE2 classes to V8's. */
static char *all_code_points_text(size_t *len) {
    size_t cap = 16u << 20, n = 0;
    char *t = malloc(cap);
    for (unsigned cp = 0; cp <= 0xE01EF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;  /* not characters */
        if (cp >= 0x40000 && cp < 0xE0000) continue; /* unassigned planes */
        if (cp >= 0x20000 && cp % 7 != 0) continue;
        char c[4];
        size_t k = put_utf8(c, cp);
        const char *parts[] = {"x", c, " ", c, "a", c, "1", c, ".\n"};
        size_t lens[] = {1, k, 1, k, 1, k, 1, k, 2};
        for (int i = 0; i < 9; i++) {
            memcpy(t + n, parts[i], lens[i]);
            n += lens[i];
        }
    }
    *len = n;
    return t;
}

static int write_cases(const char *dir) {
    int index = 0;
    for (size_t i = 0; i < TOKENIZER_N_HARD_CASES; i++, index++)
        write_file(dir, index, tokenizer_hard_cases[i].name, tokenizer_hard_cases[i].text,
                   tokenizer_hard_cases[i].len);
    /* All hard strings in one text: pieces meet across the joins. */
    size_t all_len = 0;
    for (size_t i = 0; i < TOKENIZER_N_HARD_CASES; i++) all_len += tokenizer_hard_cases[i].len;
    char *all = malloc(all_len + 1);
    size_t o = 0;
    for (size_t i = 0; i < TOKENIZER_N_HARD_CASES; i++) {
        memcpy(all + o, tokenizer_hard_cases[i].text, tokenizer_hard_cases[i].len);
        o += tokenizer_hard_cases[i].len;
    }
    write_file(dir, index++, "all_hard_strings", all, all_len);
    free(all);
    /* Long pieces: one run of spaces, one letter word, one punctuation run. */
    size_t big = 200000;
    char *t = malloc(big + 16);
    memset(t, ' ', big);
    memcpy(t + big, "x  \n", 4);
    write_file(dir, index++, "long_spaces", t, big + 4);
    /* (Encoder.js's BPE is quadratic in the piece length: 4000 keeps node quick.) */
    for (size_t i = 0; i < 4000; i++) t[i] = "abcdefghij"[i * 7 % 10];
    write_file(dir, index++, "long_word", t, 4000);
    for (size_t i = 0; i < 4000; i++) t[i] = ",.\"'!"[i * 3 % 5];
    write_file(dir, index++, "long_punctuation", t, 4000);
    free(t);
    size_t len = 0;
    char *cps = all_code_points_text(&len);
    write_file(dir, index++, "all_code_points", cps, len);
    free(cps);
    printf("tokenizer_parity: wrote %d case files to %s\n", index, dir);
    return 0;
}

/* One oracle line: "<path>\t<n>\t<id> <id> ..." */
static bool parse_oracle_line(char *line, oracle_doc *d) {
    char *tab1 = strchr(line, '\t');
    if (!tab1) return false;
    *tab1 = '\0';
    char *end = NULL;
    long long n = strtoll(tab1 + 1, &end, 10);
    if (*end != '\t' || n < 0) return false;
    d->path = strdup(line);
    d->n = (size_t)n;
    d->ids = malloc((d->n ? d->n : 1) * sizeof *d->ids);
    char *p = end + 1;
    for (size_t i = 0; i < d->n; i++) {
        long v = strtol(p, &end, 10);
        if (end == p) return false;
        d->ids[i] = (int32_t)v;
        p = end;
    }
    return true;
}

static oracle_doc *read_oracle(const char *path, size_t *n_docs) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "tokenizer_parity: cannot open oracle output %s\n", path);
        exit(1);
    }
    oracle_doc *docs = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t line_cap = 0;
    while (getline(&line, &line_cap, f) > 0) {
        if (n == cap) docs = realloc(docs, (cap = cap ? 2 * cap : 128) * sizeof *docs);
        if (!parse_oracle_line(line, &docs[n])) {
            fprintf(stderr, "tokenizer_parity: %s: malformed line %zu\n", path, n + 1);
            exit(1);
        }
        n++;
    }
    free(line);
    fclose(f);
    *n_docs = n;
    return docs;
}

/* Shows the first mismatch with the token bytes on both sides. */
static void show_token(const bpe_tokenizer *tok, const char *label, const int32_t *ids, size_t n,
                       size_t at) {
    fprintf(stderr, "    %s:", label);
    size_t lo = at >= 3 ? at - 3 : 0;
    for (size_t i = lo; i < n && i < at + 4; i++) {
        size_t len = 0;
        const char *b = tokenizer_token_bytes(tok, ids[i], &len);
        fprintf(stderr, " %s%d'", i == at ? ">" : "", ids[i]);
        for (size_t k = 0; b && k < len; k++) {
            unsigned char c = (unsigned char)b[k];
            if (c >= 0x20 && c < 0x7F && c != '\'')
                fputc(c, stderr);
            else
                fprintf(stderr, "\\x%02X", c);
        }
        fputc('\'', stderr);
    }
    fputc('\n', stderr);
}

static bool compare_doc(bpe_tokenizer *tok, const oracle_doc *d, size_t *compared) {
    size_t len = 0;
    char *text = read_all(d->path, &len);
    if (!text) {
        fprintf(stderr, "tokenizer_parity: cannot read %s\n", d->path);
        return false;
    }
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    if (tokenizer_encode(tok, text, len, &ids, &n, &cap) != 0) {
        fprintf(stderr, "FAIL %s: encode error: %s\n", d->path, tokenizer_last_error(tok));
        free(text);
        return false;
    }
    size_t common = n < d->n ? n : d->n, at = 0;
    while (at < common && ids[at] == d->ids[at]) at++;
    *compared += common;
    bool ok = at == common && n == d->n;
    if (!ok) {
        fprintf(stderr, "FAIL %s: first difference at token %zu (ours %zu tokens, npm %zu)\n",
                d->path, at, n, d->n);
        show_token(tok, "ours", ids, n, at);
        show_token(tok, "npm ", d->ids, d->n, at);
    }
    free(ids);
    free(text);
    return ok;
}

/* The tokens of SHARD_PREFIX_<split>_*.bin, concatenated in file order. */
static uint16_t *read_split(const char *prefix, const char *split, int vocab, size_t *n,
                            int *n_files) {
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s_%s_*.bin", prefix, split);
    glob_t g;
    *n = 0;
    *n_files = 0;
    uint16_t *all = NULL;
    if (glob(pattern, 0, NULL, &g) != 0) return NULL;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        token_shard s;
        char err[1024];
        if (shard_open(&s, g.gl_pathv[i], vocab, err, sizeof err) != 0) {
            fprintf(stderr, "FAIL %s\n", err);
            exit(1);
        }
        all = realloc(all, (*n + s.n_tokens + 1) * sizeof *all);
        if (shard_read(&s, 0, s.n_tokens, all + *n, err, sizeof err) != 0) {
            fprintf(stderr, "FAIL %s\n", err);
            exit(1);
        }
        *n += s.n_tokens;
        shard_close(&s);
    }
    *n_files = (int)g.gl_pathc;
    globfree(&g);
    return all;
}

/* Expected stream: <|endoftext|> + ids of each document of the split. */
static bool check_split(const bpe_tokenizer *tok, const char *prefix, const char *split,
                        const oracle_doc *docs, size_t first, size_t last) {
    size_t n = 0;
    int files = 0;
    uint16_t *got = read_split(prefix, split, tokenizer_vocab_size(tok), &n, &files);
    size_t pos = 0;
    bool ok = true;
    for (size_t d = first; d < last && ok; d++) {
        for (size_t i = 0; i <= docs[d].n && ok; i++, pos++) {
            int32_t want = i == 0 ? GPT2_EOT_TOKEN : docs[d].ids[i - 1];
            if (pos >= n || got[pos] != want) {
                fprintf(stderr, "FAIL %s shards: token %zu is %d, npm says %d (%s)\n", split, pos,
                        pos < n ? (int)got[pos] : -1, (int)want, docs[d].path);
                ok = false;
            }
        }
    }
    if (ok && pos != n) {
        fprintf(stderr, "FAIL %s shards: %zu tokens, expected %zu\n", split, n, pos);
        ok = false;
    }
    if (ok)
        printf("tokenizer_parity: %s shards: %d files, %zu tokens = <|endoftext|> + npm ids of "
               "%zu documents\n",
               split, files, n, last - first);
    free(got);
    return ok;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--write-cases") == 0) return write_cases(argv[2]);
    if (argc != 4 && argc != 7) {
        fprintf(stderr,
                "usage: %s --write-cases DIR | ENCODER VOCAB ORACLE_OUT "
                "[SHARD_PREFIX N_DOCS N_VAL]\n",
                argv[0]);
        return 2;
    }
    char err[1024];
    bpe_tokenizer *tok = tokenizer_load(argv[1], argv[2], err, sizeof err);
    if (!tok) {
        fprintf(stderr, "tokenizer_parity: %s\nrun tools/prepare_data.sh first\n", err);
        return 1;
    }
    size_t n_docs = 0, compared = 0, failed = 0;
    oracle_doc *docs = read_oracle(argv[3], &n_docs);
    if (n_docs == 0) {
        fprintf(stderr, "tokenizer_parity: the oracle produced no documents\n");
        return 1;
    }
    for (size_t i = 0; i < n_docs; i++)
        if (!compare_doc(tok, &docs[i], &compared)) failed++;
    printf("tokenizer_parity: %zu documents, %zu tokens compared with npm gpt-3-encoder, "
           "%zu documents differ\n",
           n_docs, compared, failed);
    if (argc == 7) {
        size_t n_corpus = (size_t)atol(argv[5]), n_val = (size_t)atol(argv[6]);
        if (n_corpus > n_docs || n_val > n_corpus) {
            fprintf(stderr, "tokenizer_parity: bad N_DOCS/N_VAL\n");
            return 2;
        }
        if (!check_split(tok, argv[4], "val", docs, 0, n_val)) failed++;
        if (!check_split(tok, argv[4], "train", docs, n_val, n_corpus)) failed++;
    }
    for (size_t i = 0; i < n_docs; i++) {
        free(docs[i].path);
        free(docs[i].ids);
    }
    free(docs);
    tokenizer_free(tok);
    return failed ? 1 : 0;
}
