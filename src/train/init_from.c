/* Starting weights from an existing model (see init_from.h): the model's
 * shape taken from it before the config is validated, and its weights
 * read by rank 0 and broadcast. */
#include "train/init_from.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/fail.h"
#include "io/ckpt_dir.h"
#include "io/model_io.h"

enum { MSG_MAX = 3 * CKPT_PATH_MAX + 1024, N_SHAPE_KEYS = 5 };

static const char *const shape_keys[N_SHAPE_KEYS] = {"n_layer", "n_embd", "n_head", "vocab_size",
                                                     "block_size"};

static int *shape_field(config *cfg, int i) {
    int *const fields[N_SHAPE_KEYS] = {&cfg->n_layer, &cfg->n_embd, &cfg->n_head, &cfg->vocab_size,
                                       &cfg->block_size};
    return fields[i];
}

static void source_sizes(const model_source *src, int out[N_SHAPE_KEYS]) {
    out[0] = src->n_layer, out[1] = src->n_embd, out[2] = src->n_head;
    out[3] = src->vocab_size, out[4] = src->block_size;
}

/* "init_from = X: the weights file F has n_layer = 2, the config 12; ...":
 * every size that differs, then the two ways out; 0 when none differs. */
static int describe_mismatch(const char *init_from, const model_source *src,
                             const int ours[N_SHAPE_KEYS], char *msg, size_t len) {
    int theirs[N_SHAPE_KEYS];
    source_sizes(src, theirs);
    size_t used = (size_t)snprintf(msg, len, "init_from = %s: the %s %s has", init_from,
                                   model_source_kind_name(src->kind), src->file);
    int n = 0;
    char keys[128] = "";
    for (int i = 0; i < N_SHAPE_KEYS; i++) {
        if (ours[i] == theirs[i]) continue;
        if (used < len)
            used += (size_t)snprintf(msg + used, len - used, "%s %s = %d, the config %d",
                                     n ? ";" : "", shape_keys[i], theirs[i], ours[i]);
        snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", n ? ", " : "",
                 shape_keys[i]);
        n++;
    }
    if (n && used < len)
        snprintf(msg + used, len - used,
                 " (its weights fit only its own shape). Remove %s from the config file and the "
                 "command line to take the shape from init_from, or set %s",
                 keys, n > 1 ? "them to the values above" : "it to the value above");
    return n;
}

/* ------------------------------------------------------------ the shape */

/* What rank 0 found, for every rank. */
typedef struct {
    int status; /* 1: sizes taken, 0: nothing to do, -1: refused (msg) */
    int sizes[N_SHAPE_KEYS];
    char msg[MSG_MAX];
} shape_result;

/* Will this start resume (as ckpt_resolve_resume decides, which also
 * refuses the bad cases later)? The checkpoint to read the shape from into
 * dir. */
static bool finds_resume(const config *cfg, char *dir, size_t len) {
    if (strcmp(cfg->resume, "none") == 0) return false;
    if (strcmp(cfg->resume, "auto") != 0) return snprintf(dir, len, "%s", cfg->resume), true;
    char run_dir[CKPT_PATH_MAX];
    snprintf(run_dir, sizeof run_dir, "%s/%s", cfg->out_dir, cfg->run_name);
    return ckpt_find_newest(run_dir, dir, len) >= 0;
}

/* Rank 0: the sizes the config leaves to the model it starts from. */
static void fit_on_root(const config *cfg, shape_result *res) {
    bool chosen[N_SHAPE_KEYS], all_chosen = true;
    for (int i = 0; i < N_SHAPE_KEYS; i++) {
        chosen[i] = config_key_origin(cfg, shape_keys[i]) != CONFIG_FROM_DEFAULT;
        all_chosen = all_chosen && chosen[i];
    }
    char resumed[CKPT_PATH_MAX], err[CKPT_PATH_MAX + 256];
    model_source src;
    const bool from_resume = finds_resume(cfg, resumed, sizeof resumed);
    const char *from;
    if (from_resume) {
        /* A resumed run keeps its checkpoint's shape, which init_from gave
         * it at the start; the source itself is not read (it may be gone).
         * A checkpoint that does not open is ckpt_resolve_resume's to
         * report. */
        if (all_chosen || model_source_open(&src, resumed, err, sizeof err) != 0) return;
        from = "the checkpoint resumed,";
    } else {
        if (model_source_open(&src, cfg->init_from, err, sizeof err) != 0) {
            snprintf(res->msg, sizeof res->msg, "init_from = %s: %s", cfg->init_from, err);
            res->status = -1;
            return;
        }
        from = "init_from =";
        /* Refused here, before the run directory and its lock exist. */
        int ours[N_SHAPE_KEYS], theirs[N_SHAPE_KEYS];
        source_sizes(&src, theirs);
        for (int i = 0; i < N_SHAPE_KEYS; i++)
            ours[i] = chosen[i] ? *shape_field((config *)cfg, i) : theirs[i];
        if (describe_mismatch(cfg->init_from, &src, ours, res->msg, sizeof res->msg)) {
            res->status = -1;
            return;
        }
        if (all_chosen) return;
    }
    source_sizes(&src, res->sizes);
    res->status = 1;
    snprintf(res->msg, sizeof res->msg,
             "model shape from %s %s: %d layers, %d wide, %d heads, vocab %d, block %d", from,
             from_resume ? src.file : cfg->init_from, src.n_layer, src.n_embd, src.n_head,
             src.vocab_size, src.block_size);
}

void init_from_fit_shape(const dist_group *job, config *cfg, char *note, size_t note_len) {
    if (note_len) note[0] = '\0';
    static shape_result res;
    memset(&res, 0, sizeof res);
    if (job->rank == 0 && cfg->init_from[0] != '\0') fit_on_root(cfg, &res);
    group_bcast(job, &res, sizeof res, 0);
    if (res.status < 0) fail_collective(EXIT_USAGE, "%s", res.msg);
    if (res.status == 0) return;
    for (int i = 0; i < N_SHAPE_KEYS; i++)
        if (config_key_origin(cfg, shape_keys[i]) == CONFIG_FROM_DEFAULT)
            *shape_field(cfg, i) = res.sizes[i];
    /* The defaults' 1024-token sequences do not fit a smaller model's
     * context; a seq_len the user chose is config_validate's to check. */
    const int fit_seq =
        config_key_origin(cfg, "seq_len") == CONFIG_FROM_DEFAULT && cfg->seq_len > cfg->block_size;
    snprintf(note, note_len, "%s%s", res.msg, fit_seq ? "; seq_len lowered to match" : "");
    if (fit_seq) cfg->seq_len = cfg->block_size;
}

/* ---------------------------------------------------------- the weights */

/* Rank 0: opens the source and checks its sizes; 0, or -1 with msg. */
static int open_on_root(const config *cfg, const gpt2_layout *lay, model_source *src, char *msg,
                        size_t len) {
    char err[CKPT_PATH_MAX + 256];
    if (model_source_open(src, cfg->init_from, err, sizeof err) != 0)
        return snprintf(msg, len, "init_from = %s: %s", cfg->init_from, err), -1;
    const int ours[N_SHAPE_KEYS] = {lay->n_layer, lay->n_embd, lay->n_head, lay->vocab_size,
                                    lay->block_size};
    return describe_mismatch(cfg->init_from, src, ours, msg, len) ? -1 : 0;
}

/* Rank 0 alone reads the file: N ranks of a job need not all read (and
 * hold the shared file system for) the same gigabytes, and a file that only
 * rank 0's node can see (node-local disk) works. */
void init_from_load(const dist_group *job, const config *cfg, const gpt2_layout *lay,
                    float *host_params) {
    static char msg[MSG_MAX];
    model_source src;
    int status = job->rank == 0 ? open_on_root(cfg, lay, &src, msg, sizeof msg) : 0;
    group_bcast(job, &status, sizeof status, 0);
    if (status != 0) fail_collective(EXIT_USAGE, "%s", msg);
    if (job->rank == 0) model_source_load(&src, lay, host_params);
    group_bcast(job, host_params, lay->n_elements * sizeof(float), 0);
}
