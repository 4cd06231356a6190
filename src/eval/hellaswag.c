/* HellaSwag: reading the official JSONL (json-c), tokenizing, and scoring
 * the endings with the model's per-token losses (see hellaswag.h). */
#include "eval/hellaswag.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/files.h"

/* ------------------------------------------------------------ the file */

/* The fields one line gives; pointers into the line's json-c object. */
typedef struct {
    const char *ctx;
    const char *endings[HELLASWAG_ENDINGS];
    int label;
} example_text;

__attribute__((format(printf, 5, 6))) static int
line_error(char *err, size_t err_len, const char *path, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(err, err_len, "%s:%d: %s", path, line, msg);
    else
        snprintf(err, err_len, "%s: %s", path, msg);
    return -1;
}

static bool is_blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return false;
    return true;
}

/* Parses one line into a json-c object that must be freed (json_object_put);
 * NULL with the reason in why. Text after the object is an error: two
 * objects on one line are a broken file, not an example. */
static json_object *parse_line(const char *text, char *why, size_t why_len) {
    json_tokener *tok = json_tokener_new();
    CHECK(tok, "out of memory for the JSON parser");
    const int len = (int)strlen(text);
    json_object *obj = json_tokener_parse_ex(tok, text, len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    if (!obj && e == json_tokener_continue) {
        snprintf(why, why_len, "not valid JSON: the line ends inside the object");
    } else if (!obj) {
        snprintf(why, why_len, "not valid JSON: %s at character %zu", json_tokener_error_desc(e),
                 json_tokener_get_parse_end(tok) + 1);
    } else if (!is_blank(text + json_tokener_get_parse_end(tok))) {
        snprintf(why, why_len, "unexpected text after the JSON object at character %zu",
                 json_tokener_get_parse_end(tok) + 1);
        json_object_put(obj);
        obj = NULL;
    }
    json_tokener_free(tok);
    return obj;
}

/* The fields of one example, checked; -1 with the reason in why. */
static int read_fields(json_object *obj, example_text *ex, char *why, size_t why_len) {
    if (!json_object_is_type(obj, json_type_object))
        return snprintf(why, why_len,
                        "expected a JSON object {\"ctx\": ..., \"endings\": "
                        "[4 strings], \"label\": 0-3}"),
               -1;
    json_object *ctx, *endings, *label;
    if (!json_object_object_get_ex(obj, "ctx", &ctx) || !json_object_is_type(ctx, json_type_string))
        return snprintf(why, why_len, "\"ctx\" missing or not a string"), -1;
    ex->ctx = json_object_get_string(ctx);
    if (ex->ctx[0] == '\0') return snprintf(why, why_len, "\"ctx\" is empty"), -1;
    if (!json_object_object_get_ex(obj, "endings", &endings) ||
        !json_object_is_type(endings, json_type_array) ||
        json_object_array_length(endings) != HELLASWAG_ENDINGS)
        return snprintf(why, why_len, "\"endings\" missing or not an array of %d strings",
                        HELLASWAG_ENDINGS),
               -1;
    for (int j = 0; j < HELLASWAG_ENDINGS; j++) {
        json_object *e = json_object_array_get_idx(endings, (size_t)j);
        if (!json_object_is_type(e, json_type_string))
            return snprintf(why, why_len, "\"endings\"[%d] is not a string", j), -1;
        ex->endings[j] = json_object_get_string(e);
    }
    if (!json_object_object_get_ex(obj, "label", &label) ||
        !json_object_is_type(label, json_type_int))
        return snprintf(why, why_len, "\"label\" missing or not an integer"), -1;
    const int64_t v = json_object_get_int64(label);
    if (v < 0 || v >= HELLASWAG_ENDINGS)
        return snprintf(why, why_len, "\"label\" = %lld: must be 0, 1, 2 or 3", (long long)v), -1;
    ex->label = (int)v;
    return 0;
}

/* Appends the tokens of text (with prefix in front, may be "") to *ids;
 * returns how many. */
static int encode_into(bpe_tokenizer *tok, const char *prefix, const char *text, int32_t **ids,
                       size_t *n, size_t *cap) {
    const size_t before = *n, lp = strlen(prefix), lt = strlen(text);
    char *joined = xmalloc(lp + lt + 1);
    memcpy(joined, prefix, lp);
    memcpy(joined + lp, text, lt + 1);
    CHECK(tokenizer_encode(tok, joined, lp + lt, ids, n, cap) == 0, "HellaSwag: cannot encode: %s",
          tokenizer_last_error(tok));
    free(joined);
    return (int)(*n - before);
}

static void tokenize_example(hellaswag_example *e, const example_text *ex, bpe_tokenizer *tok) {
    size_t n = 0, cap = 64;
    int32_t *ids = xmalloc(cap * sizeof(int32_t));
    e->ctx_len = encode_into(tok, "", ex->ctx, &ids, &n, &cap);
    for (int j = 0; j < HELLASWAG_ENDINGS; j++)
        e->end_len[j] = encode_into(tok, " ", ex->endings[j], &ids, &n, &cap);
    e->tokens = ids;
}

int hellaswag_load(hellaswag_set *set, const char *path, bpe_tokenizer *tok, int max_examples,
                   int rank, int world, char *err, size_t err_len) {
    memset(set, 0, sizeof *set);
    FILE *f = fopen_regular(path, "r", 0, NULL, 0); /* a FIFO would block the open */
    if (!f) {
        char why[256];
        return line_error(err, err_len, path, 0, "cannot read: %s",
                          open_regular_reason(path, errno, why, sizeof why));
    }
    char *text = NULL, why[512];
    size_t text_cap = 0;
    int line = 0, count = 0, cap = 0, rc = 0;
    errno = 0;
    ssize_t got;
    while ((got = getline(&text, &text_cap, f)) >= 0) {
        line++;
        if (memchr(text, '\0', (size_t)got)) { /* JSON would stop reading at it, unseen */
            rc = line_error(err, err_len, path, line,
                            "a NUL byte in the line (a binary file, or a damaged one?)");
            break;
        }
        if (is_blank(text)) continue;
        json_object *obj = parse_line(text, why, sizeof why);
        example_text ex;
        if (!obj || read_fields(obj, &ex, why, sizeof why) != 0) {
            if (obj) json_object_put(obj);
            rc = line_error(err, err_len, path, line, "%s", why);
            break;
        }
        const bool used = max_examples <= 0 || count < max_examples;
        if (used && count % world == rank) {
            if (set->n == cap) {
                cap = cap ? 2 * cap : 256;
                set->examples = realloc(set->examples, (size_t)cap * sizeof(hellaswag_example));
                CHECK(set->examples, "out of memory for HellaSwag examples");
            }
            hellaswag_example *e = &set->examples[set->n++];
            *e = (hellaswag_example){.index = count, .line = line, .label = ex.label};
            tokenize_example(e, &ex, tok);
        }
        if (used) set->n_total++;
        count++;
        json_object_put(obj);
        errno = 0;
    }
    if (rc == 0 && ferror(f)) /* a directory opens but cannot be read */
        rc = line_error(err, err_len, path, 0, "cannot read: %s", strerror(errno));
    if (rc == 0 && count == 0) rc = line_error(err, err_len, path, 0, "no examples in the file");
    free(text);
    fclose(f);
    if (rc != 0) hellaswag_free(set);
    return rc;
}

void hellaswag_free(hellaswag_set *set) {
    for (int i = 0; i < set->n; i++) free(set->examples[i].tokens);
    free(set->examples);
    memset(set, 0, sizeof *set);
}

/* ------------------------------------------------------------ scoring */

/* One of an example's four rows: context + ending, cut to fit T. Row token
 * i is full[skip + i] of full = ctx ++ ending; inputs are its first len
 * tokens, targets the next ones; targets that are ending tokens are scored. */
typedef struct {
    const hellaswag_example *e;
    int ending;
    int skip, len;
} hellaswag_row;

static const int32_t *ending_tokens(const hellaswag_example *e, int j) {
    const int32_t *p = e->tokens + e->ctx_len;
    for (int k = 0; k < j; k++) p += e->end_len[k];
    return p;
}

static int32_t row_token(const hellaswag_row *r, int i) {
    const int pos = r->skip + i, c = r->e->ctx_len;
    return pos < c ? r->e->tokens[pos] : ending_tokens(r->e, r->ending)[pos - c];
}

/* The four rows of e for a model of T positions; true when tokens were dropped. */
static bool example_rows(const hellaswag_example *e, int T, hellaswag_row rows[HELLASWAG_ENDINGS]) {
    int longest = 0;
    for (int j = 0; j < HELLASWAG_ENDINGS; j++)
        if (e->end_len[j] > longest) longest = e->end_len[j];
    const int inputs = e->ctx_len + longest - 1;
    int skip = inputs > T ? inputs - T : 0;
    if (skip > e->ctx_len - 1) skip = e->ctx_len - 1;
    bool cut = skip > 0;
    for (int j = 0; j < HELLASWAG_ENDINGS; j++) {
        int len = e->ctx_len + e->end_len[j] - 1 - skip;
        if (len > T) len = T, cut = true;
        rows[j] = (hellaswag_row){.e = e, .ending = j, .skip = skip, .len = len};
    }
    return cut;
}

/* The rows of up to m->B at a time, as a forward of B x T_batch tokens:
 * shorter rows are padded at the end (causal attention never lets padding
 * reach an earlier position), padded targets are token 0 and never scored. */
static void fill_batch(const hellaswag_row *rows, int n_rows, int T_batch, int32_t *inputs,
                       int32_t *targets) {
    for (int b = 0; b < n_rows; b++) {
        const hellaswag_row *r = &rows[b];
        for (int t = 0; t < T_batch; t++) {
            const bool real = t < r->len;
            inputs[(size_t)b * T_batch + t] = real ? row_token(r, t) : GPT2_EOT_TOKEN;
            targets[(size_t)b * T_batch + t] = real ? row_token(r, t + 1) : 0;
        }
    }
}

/* Adds a row's scored losses (targets that are ending tokens) to s. */
static void score_row(const hellaswag_row *r, const float *losses, hellaswag_score *s) {
    double sum = 0.0;
    int n = 0;
    for (int t = 0; t < r->len; t++) {
        if (r->skip + t + 1 < r->e->ctx_len) continue; /* a context token */
        sum += losses[t];
        n++;
    }
    s->loss_sum[r->ending] = sum;
    s->n_tokens[r->ending] = n;
}

static void decide(hellaswag_score *s) {
    s->pred = s->pred_norm = 0;
    for (int j = 1; j < HELLASWAG_ENDINGS; j++) {
        if (s->loss_sum[j] < s->loss_sum[s->pred]) s->pred = j;
        const double mean = s->loss_sum[j] / s->n_tokens[j];
        if (mean < s->loss_sum[s->pred_norm] / s->n_tokens[s->pred_norm]) s->pred_norm = j;
    }
}

hellaswag_counts hellaswag_evaluate(const hellaswag_set *set, gpt2_model *m,
                                    hellaswag_score *scores) {
    const int B = m->B, T = m->T;
    hellaswag_counts counts = {0};
    hellaswag_score *all = scores ? scores : xcalloc((size_t)set->n, sizeof(hellaswag_score));
    hellaswag_row *rows = xmalloc((size_t)set->n * HELLASWAG_ENDINGS * sizeof(hellaswag_row));
    for (int i = 0; i < set->n; i++) {
        const hellaswag_example *e = &set->examples[i];
        all[i] = (hellaswag_score){.index = e->index, .label = e->label};
        all[i].cut = example_rows(e, T, &rows[(size_t)i * HELLASWAG_ENDINGS]);
    }
    int32_t *inputs = xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *targets = xmalloc((size_t)B * T * sizeof(int32_t));
    float *losses = xmalloc((size_t)B * T * sizeof(float));
    const int n_rows = set->n * HELLASWAG_ENDINGS;
    /* Each batch's length is its longest row's: shapes that the GPU should
     * neither tune nor keep in place of the training step's. */
    if (m->ops->transient_shapes) m->ops->transient_shapes(true);
    for (int first = 0; first < n_rows; first += B) {
        const int nb = n_rows - first < B ? n_rows - first : B;
        int T_batch = 1;
        for (int b = 0; b < nb; b++)
            if (rows[first + b].len > T_batch) T_batch = rows[first + b].len;
        fill_batch(&rows[first], nb, T_batch, inputs, targets);
        if (first > 0) gpt2_params_unchanged(m);
        gpt2_forward_async(m, inputs, targets, nb, T_batch, 0.0f);
        m->ops->download(losses, m->losses, (size_t)nb * T_batch * sizeof(float));
        for (int b = 0; b < nb; b++)
            score_row(&rows[first + b], losses + (size_t)b * T_batch,
                      &all[(first + b) / HELLASWAG_ENDINGS]);
    }
    if (m->ops->transient_shapes) m->ops->transient_shapes(false);
    gpt2_loss_reset(m);
    for (int i = 0; i < set->n; i++) {
        decide(&all[i]);
        counts.n += 1;
        counts.correct += all[i].pred == all[i].label;
        counts.correct_norm += all[i].pred_norm == all[i].label;
        counts.cut += all[i].cut;
    }
    free(losses);
    free(targets);
    free(inputs);
    free(rows);
    if (!scores) free(all);
    return counts;
}
