/* Hugging Face GPT-2 directories: import and export (see hf_gpt2.h). */
#include "io/hf_gpt2.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fail.h"
#include "base/files.h"
#include "io/json_util.h"
#include "io/safetensors.h"

#define HF_PREFIX "transformer."
#define HF_PATH_MAX 4200

static void path_in(char *out, const char *dir, const char *name) {
    snprintf(out, HF_PATH_MAX, "%s/%s", dir, name);
}

/* ------------------------------------------------------------ tensor names */

/* The four projections are transformers' Conv1D: weight (in, out). */
static bool is_conv1d(const char *name) {
    return path_ends_with(name, "attn.c_attn.weight") ||
           path_ends_with(name, "attn.c_proj.weight") || path_ends_with(name, "mlp.c_fc.weight") ||
           path_ends_with(name, "mlp.c_proj.weight");
}

/* The shape the Hugging Face file stores our tensor t in. */
static int hf_shape(const gpt2_layout *lay, const param_tensor *t, int64_t shape[2]) {
    shape[0] = t->shape[0], shape[1] = t->shape[1];
    if (is_conv1d(t->name)) shape[0] = t->shape[1], shape[1] = t->shape[0];
    if (t->offset == lay->wte) shape[0] = lay->vocab_size; /* no padding rows */
    return t->ndim;
}

/* h.N.attn.bias / h.N.attn.masked_bias: the causal mask buffers of old
 * GPT-2 files, not weights. */
static bool is_mask_buffer(const char *name) {
    if (strncmp(name, "h.", 2) != 0 || !isdigit((unsigned char)name[2])) return false;
    const char *p = name + 2;
    while (isdigit((unsigned char)*p)) p++;
    return strcmp(p, ".attn.bias") == 0 || strcmp(p, ".attn.masked_bias") == 0;
}

static const char *without_prefix(const char *name) {
    return strncmp(name, HF_PREFIX, strlen(HF_PREFIX)) == 0 ? name + strlen(HF_PREFIX) : name;
}

/* --------------------------------------------------- the safetensors files */

typedef struct {
    st_file *files;
    int n_files;
} weight_files;

static void weights_close(weight_files *w) {
    for (int i = 0; i < w->n_files; i++) st_close(&w->files[i]);
    free(w->files);
    memset(w, 0, sizeof *w);
}

static int weights_add(weight_files *w, const char *path, char *err, size_t err_len) {
    for (int i = 0; i < w->n_files; i++)
        if (strcmp(w->files[i].path, path) == 0) return 0;
    st_file *more = realloc(w->files, ((size_t)w->n_files + 1) * sizeof *more);
    if (!more) return set_error(err, err_len, "out of memory");
    w->files = more;
    if (st_open(&w->files[w->n_files], path, err, err_len) != 0) return -1;
    w->n_files++;
    return 0;
}

/* model.safetensors.index.json: {"weight_map": {"tensor": "shard file"}}. */
static int weights_open_index(weight_files *w, const char *dir, const char *index, char *err,
                              size_t err_len) {
    json_object *root = json_read_file(index, err, err_len);
    if (!root) return -1;
    json_object *map = json_member(root, "weight_map");
    int rc = 0;
    if (!map || !json_object_is_type(map, json_type_object)) {
        rc = set_error(err, err_len, "%s: no \"weight_map\" object", index);
    } else {
        json_object_object_foreach(map, name, file) {
            const char *f =
                json_object_is_type(file, json_type_string) ? json_object_get_string(file) : NULL;
            /* Shards are files next to the index, never paths out of DIR. */
            if (!f || !*f || strchr(f, '/') || strcmp(f, "..") == 0) {
                rc = set_error(err, err_len, "%s: weight_map[\"%.200s\"] is not a file name", index,
                               name);
                break;
            }
            char shard[HF_PATH_MAX];
            path_in(shard, dir, f);
            if ((rc = weights_add(w, shard, err, err_len)) != 0) break;
        }
    }
    json_object_put(root);
    if (rc == 0 && w->n_files == 0)
        rc = set_error(err, err_len, "%s: \"weight_map\" names no file", index);
    return rc;
}

static int weights_open(weight_files *w, const char *dir, char *err, size_t err_len) {
    memset(w, 0, sizeof *w);
    char single[HF_PATH_MAX], index[HF_PATH_MAX];
    path_in(single, dir, "model.safetensors");
    path_in(index, dir, "model.safetensors.index.json");
    int rc;
    /* Present but no regular file (a FIFO, a folder): its reader says so. */
    struct stat st;
    if (stat(single, &st) == 0)
        rc = weights_add(w, single, err, err_len);
    else if (stat(index, &st) == 0)
        rc = weights_open_index(w, dir, index, err, err_len);
    else
        rc = set_error(
            err, err_len,
            "%s: no model.safetensors (nor model.safetensors.index.json) in this Hugging Face "
            "directory%s",
            dir,
            is_regular_file((path_in(single, dir, "pytorch_model.bin"), single))
                ? "; it has pytorch_model.bin only: download the model's safetensors files"
                : "");
    if (rc != 0) weights_close(w);
    return rc;
}

/* Where our tensor `name` is stored, with or without the GPT2LMHeadModel prefix. */
static int weights_find(const weight_files *w, const char *name, const st_file **file,
                        const st_tensor **tensor, char *err, size_t err_len) {
    char prefixed[LAYOUT_NAME_MAX + 16];
    snprintf(prefixed, sizeof prefixed, HF_PREFIX "%s", name);
    *tensor = NULL;
    for (int i = 0; i < w->n_files; i++) {
        const char *names[2] = {prefixed, name};
        for (int k = 0; k < 2; k++) {
            const st_tensor *t = st_find(&w->files[i], names[k]);
            if (!t) continue;
            if (*tensor)
                return set_error(err, err_len, "%s: GPT-2's '%s' is stored twice ('%s' and '%s')",
                                 w->files[i].path, name, (*tensor)->name, t->name);
            *file = &w->files[i];
            *tensor = t;
        }
    }
    if (!*tensor)
        return set_error(err, err_len, "%s: tensor '%s' (or '%s') is missing", w->files[0].path,
                         prefixed, name);
    return 0;
}

/* GPT2LMHeadModel's state_dict order: wte, wpe, each block, ln_f. */
static int hf_order(const gpt2_layout *lay, const param_tensor **order) {
    static const char *const block[] = {
        "ln_1.weight",        "ln_1.bias",        "attn.c_attn.weight", "attn.c_attn.bias",
        "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight",        "ln_2.bias",
        "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
    int n = 0;
    order[n++] = layout_find(lay, "wte.weight");
    order[n++] = layout_find(lay, "wpe.weight");
    for (int l = 0; l < lay->n_layer; l++)
        for (int k = 0; k < 12; k++) {
            char name[LAYOUT_NAME_MAX];
            snprintf(name, sizeof name, "h.%d.%s", l, block[k]);
            order[n++] = layout_find(lay, name);
        }
    order[n++] = layout_find(lay, "ln_f.weight");
    order[n++] = layout_find(lay, "ln_f.bias");
    return n;
}

/* Our tensor p present once, of a floating-point dtype and the right shape. */
static int check_tensor(const weight_files *w, const gpt2_layout *lay, const param_tensor *p,
                        const char *config_path, char *err, size_t err_len) {
    const st_file *f;
    const st_tensor *t;
    if (weights_find(w, p->name, &f, &t, err, err_len) != 0) return -1;
    int64_t want[2];
    int ndim = hf_shape(lay, p, want);
    char got_s[128], want_s[64];
    st_format_shape(t->ndim, t->shape, got_s, sizeof got_s);
    st_format_shape(ndim, want, want_s, sizeof want_s);
    if (t->ndim != ndim || t->shape[0] != want[0] || (ndim == 2 && t->shape[1] != want[1]))
        return set_error(err, err_len,
                         "%s: tensor '%s' has shape %s, but %s (n_layer %d, n_embd %d, vocab_size "
                         "%d, n_positions %d) needs %s%s",
                         f->path, t->name, got_s, config_path, lay->n_layer, lay->n_embd,
                         lay->vocab_size, lay->block_size, want_s,
                         is_conv1d(p->name) ? " (Conv1D: in, out)" : "");
    if (t->dtype == ST_OTHER)
        return set_error(err, err_len, "%s: tensor '%s' has dtype %s, not a floating-point type",
                         f->path, t->name, t->dtype_name);
    return 0;
}

/* Nothing but GPT-2's tensors, mask buffers and a tied lm_head.weight. */
static int check_unknown(const weight_files *w, const gpt2_layout *lay, char *err, size_t err_len) {
    for (int i = 0; i < w->n_files; i++) {
        for (int k = 0; k < w->files[i].n_tensors; k++) {
            const st_tensor *t = &w->files[i].tensors[k];
            const char *name = without_prefix(t->name);
            if (layout_find(lay, name) || is_mask_buffer(name)) continue;
            if (strcmp(t->name, "lm_head.weight") == 0 && t->ndim == 2 &&
                t->shape[0] == lay->vocab_size && t->shape[1] == lay->n_embd)
                continue; /* hf_load checks that it is wte */
            return set_error(
                err, err_len,
                "%s: tensor '%.200s' is not one of GPT-2's (GPT2LMHeadModel has wte, wpe, "
                "h.N.{ln_1,attn,ln_2,mlp}.*, ln_f and a tied lm_head)",
                w->files[i].path, t->name);
        }
    }
    return 0;
}

/* Each of our tensors present, float, of the right shape (in the file's
 * order, so that the first problem is the one reported); nothing unknown. */
static int weights_check(const weight_files *w, const gpt2_layout *lay, const char *config_path,
                         char *err, size_t err_len) {
    const param_tensor **order = calloc((size_t)lay->n_tensors, sizeof *order);
    if (!order) return set_error(err, err_len, "out of memory");
    const int n = hf_order(lay, order);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = check_tensor(w, lay, order[i], config_path, err, err_len);
    free(order);
    if (rc != 0) return rc;
    return check_unknown(w, lay, err, err_len);
}

/* ------------------------------------------------------------------ import */

int hf_open(const char *dir, hf_config *c, gpt2_layout *lay, char *err, size_t err_len) {
    char config_path[HF_PATH_MAX];
    path_in(config_path, dir, "config.json");
    if (hf_config_read(config_path, c, err, err_len) != 0) return -1;
    layout_build(lay, c->n_layer, c->n_embd, c->n_head, c->vocab_size,
                 (c->vocab_size + 127) / 128 * 128, c->n_positions);
    weight_files w;
    int rc = weights_open(&w, dir, err, err_len);
    if (rc == 0) {
        rc = weights_check(&w, lay, config_path, err, err_len);
        weights_close(&w); /* open files also when the check fails */
    }
    if (rc != 0) layout_free(lay);
    return rc;
}

/* Copies an HF tensor (rows x cols as stored) into our layout, transposing Conv1D. */
static void place(const float *src, int64_t rows, int64_t cols, float *dst, bool transpose) {
    if (!transpose) {
        memcpy(dst, src, (size_t)(rows * cols) * sizeof(float));
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) dst[k * rows + r] = src[r * cols + k];
}

static int check_lm_head(const weight_files *w, const gpt2_layout *lay, const float *host_params,
                         char *err, size_t err_len) {
    for (int i = 0; i < w->n_files; i++) {
        const st_tensor *t = st_find(&w->files[i], "lm_head.weight");
        if (!t) continue;
        float *head = malloc(st_numel(t) * sizeof(float) + 1);
        if (!head) return set_error(err, err_len, "out of memory");
        int rc = st_read_f32(&w->files[i], t, head, err, err_len);
        if (rc == 0 && memcmp(head, host_params + lay->wte, st_numel(t) * sizeof(float)) != 0)
            rc = set_error(
                err, err_len,
                "%s: lm_head.weight differs from wte.weight: an untied output layer, which "
                "GPT-2 (and gpt2_ddp) does not have",
                w->files[i].path);
        free(head);
        if (rc != 0) return rc;
    }
    return 0;
}

int hf_load(const char *dir, const gpt2_layout *lay, float *host_params, char *err,
            size_t err_len) {
    weight_files w;
    if (weights_open(&w, dir, err, err_len) != 0) return -1;
    memset(host_params, 0, lay->n_elements * sizeof(float));
    int rc = 0;
    float *buf = NULL;
    for (int i = 0; i < lay->n_tensors && rc == 0; i++) {
        const param_tensor *p = &lay->tensors[i];
        const st_file *f;
        const st_tensor *t;
        if ((rc = weights_find(&w, p->name, &f, &t, err, err_len)) != 0) break;
        int64_t shape[2];
        const int ndim = hf_shape(lay, p, shape);
        const int64_t rows = shape[0], cols = ndim == 2 ? shape[1] : 1;
        if (st_numel(t) != (size_t)(rows * cols)) {
            rc = set_error(err, err_len, "%s: tensor '%s' changed shape while reading", f->path,
                           t->name);
            break;
        }
        free(buf);
        if (!(buf = malloc((size_t)(rows * cols) * sizeof(float) + 1))) {
            rc = set_error(err, err_len, "out of memory reading %s", t->name);
            break;
        }
        if ((rc = st_read_f32(f, t, buf, err, err_len)) != 0) break;
        place(buf, rows, cols, host_params + p->offset, is_conv1d(p->name));
    }
    free(buf);
    if (rc == 0) rc = check_lm_head(&w, lay, host_params, err, err_len);
    weights_close(&w);
    return rc;
}

/* ------------------------------------------------------------------ export */

typedef struct {
    const gpt2_layout *lay;
    const float *host_params;
    const param_tensor **order;
} export_ctx;

static void export_fill(void *ctx_, int index, float *out) {
    const export_ctx *ctx = ctx_;
    const param_tensor *p = ctx->order[index];
    const float *src = ctx->host_params + p->offset;
    int64_t shape[2];
    int ndim = hf_shape(ctx->lay, p, shape);
    size_t n = (size_t)shape[0] * (size_t)(ndim == 2 ? shape[1] : 1);
    if (!is_conv1d(p->name)) {
        memcpy(out, src, n * sizeof(float)); /* wte: its first vocab_size rows */
        return;
    }
    const int64_t rows = p->shape[0], cols = p->shape[1]; /* ours: (out, in) */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) out[k * rows + r] = src[r * cols + k];
}

static int copy_file(const char *from, const char *to, char *err, size_t err_len) {
    char tmp[HF_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", to);
    FILE *in = fopen_regular(from, "rb", 0, NULL, 0); /* a FIFO would block the open */
    char why[256];
    if (!in)
        return set_error(err, err_len, "%s: %s", from,
                         open_regular_reason(from, errno, why, sizeof why));
    FILE *out = fopen_regular(tmp, "wb", OPEN_REPLACE, err, err_len);
    if (!out) {
        fclose(in);
        return -1;
    }
    char buf[1 << 16];
    bool ok = true;
    for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;) ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in);
    fclose(in);
    if (fclose(out) != 0) ok = false;
    if (!ok || rename(tmp, to) != 0)
        return set_error(err, err_len, "cannot copy %s to %s: %s", from, to, strerror(errno));
    return 0;
}

int hf_save(const char *dir, const gpt2_layout *lay, const float *host_params, bool bf16,
            const char *encoder_json, const char *vocab_bpe, char *err, size_t err_len) {
    if (make_dirs(dir, 0777, err, err_len) != 0) return -1;
    const param_tensor **order = calloc((size_t)lay->n_tensors, sizeof *order);
    st_spec *specs = calloc((size_t)lay->n_tensors, sizeof *specs);
    char(*names)[LAYOUT_NAME_MAX + 16] = calloc((size_t)lay->n_tensors, sizeof *names);
    if (!order || !specs || !names) {
        free(order), free(specs), free(names);
        return set_error(err, err_len, "out of memory");
    }
    const int n = hf_order(lay, order);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], HF_PREFIX "%s", order[i]->name);
        specs[i].name = names[i];
        specs[i].ndim = hf_shape(lay, order[i], specs[i].shape);
    }
    char path[HF_PATH_MAX], tmp[HF_PATH_MAX + 8];
    path_in(path, dir, "model.safetensors");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    static const char *const metadata[] = {"format", "pt", NULL};
    export_ctx ctx = {lay, host_params, order};
    int rc = st_write(tmp, specs, n, bf16, export_fill, &ctx, metadata, err, err_len);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = set_error(err, err_len, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    free(order), free(specs), free(names);
    if (rc == 0)
        rc = hf_config_write((path_in(path, dir, "config.json"), path), lay, bf16, err, err_len);
    if (rc != 0 || !encoder_json) return rc;
    if (copy_file(encoder_json, (path_in(path, dir, "vocab.json"), path), err, err_len) != 0 ||
        copy_file(vocab_bpe, (path_in(path, dir, "merges.txt"), path), err, err_len) != 0)
        return -1;
    return hf_tokenizer_config_write((path_in(path, dir, "tokenizer_config.json"), path),
                                     lay->block_size, err, err_len);
}
