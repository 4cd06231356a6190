/* config_validate (see config.h): every stored value within its key's range,
 * then the rules between keys (heads divide the width, the batch divides
 * into micro-steps over the ranks, what HellaSwag and samples need), and the
 * derived fields. Each failure ends every rank with exit code 2 and names
 * the keys and values. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "base/fail.h"
#include "config/config.h"
#include "config/elide.h"
#include "config/keys.h"
#include "config/stored.h"
#include "config/values.h"
#include "model/shape.h"

#ifndef GPT2_HAVE_TOKENIZER
#define GPT2_HAVE_TOKENIZER 0
#endif

static void validate_keys(const config *cfg) {
    for (size_t i = 0; i < config_n_keys; i++) {
        const config_key *k = &config_keys[i];
        char why[512], value[2 * CONFIG_STR_MAX + 8];
        if (config_key_check(cfg, k, why, sizeof why)) continue;
        config_key_format(cfg, k, false, value, sizeof value);
        fail_collective(EXIT_USAGE, "%s = %s: %s", k->name, value, why);
    }
}

/* The model's sizes by the rules every reader of weights applies too
 * (model/shape.h); the key ranges hold the same bounds. */
static void validate_model(config *cfg) {
    /* Padding to 128 keeps the classifier matmul on nice sizes (50257 -> 50304). */
    cfg->padded_vocab_size = (int)shape_padded_vocab(cfg->vocab_size);
    const model_shape shape = {.n_layer = cfg->n_layer,
                               .n_embd = cfg->n_embd,
                               .n_head = cfg->n_head,
                               .vocab_size = cfg->vocab_size,
                               .padded_vocab_size = cfg->padded_vocab_size,
                               .block_size = cfg->block_size};
    char why[512];
    if (shape_check(&shape, NULL, why, sizeof why) != 0) fail_collective(EXIT_USAGE, "%s", why);
    if (cfg->vocab_size > 65536)
        fail_collective(
            EXIT_USAGE,
            "vocab_size = %d: token shards store uint16 ids, so vocab_size must be <= 65536",
            cfg->vocab_size);
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

int config_wsd_decay_steps(const config *cfg) {
    return (int)llround(cfg->decay_frac * cfg->max_steps);
}

/* config_load shortened a warm-up set before max_steps; one set with it (or
 * after it) is what the user asked for, and only the user can choose. */
static void validate_schedule(const config *cfg) {
    if (cfg->warmup_steps > cfg->max_steps)
        fail_collective(EXIT_USAGE,
                        "warmup_steps = %d is larger than max_steps = %d: the run would end "
                        "before the warm-up does (set --warmup_steps=N with N <= %d, or raise "
                        "max_steps)",
                        cfg->warmup_steps, cfg->max_steps, cfg->max_steps);
    const int decay = config_wsd_decay_steps(cfg);
    if (strcmp(cfg->lr_schedule, "wsd") == 0 && cfg->warmup_steps + decay > cfg->max_steps)
        fail_collective(EXIT_USAGE,
                        "lr_schedule = wsd: warmup_steps = %d and the decay over decay_frac = %g "
                        "of max_steps = %d (%d steps) overlap: lower decay_frac to at most %g or "
                        "warmup_steps to at most %d, or raise max_steps",
                        cfg->warmup_steps, cfg->decay_frac, cfg->max_steps, decay,
                        (double)(cfg->max_steps - cfg->warmup_steps) / cfg->max_steps,
                        cfg->max_steps - decay);
}

/* A new train_data with the bundled corpus's val_data left over from the
 * defaults or the config file: the validation loss would measure another
 * corpus than the one trained on, and look like overfitting or worse. A
 * val_data set in the same place as train_data (or later) is a choice. */
static void validate_val_matches_train(const config *cfg) {
    const config_key *train = config_key_find("train_data"), *val = config_key_find("val_data");
    if (cfg->eval_every == 0 || strcmp(cfg->train_data, train->def) == 0 ||
        strcmp(cfg->val_data, val->def) != 0 ||
        config_key_origin(cfg, "val_data") >= config_key_origin(cfg, "train_data"))
        return;
    char shown[ELIDE_KEEP + 40];
    elide(cfg->train_data, shown, sizeof shown);
    fail_collective(EXIT_USAGE,
                    "train_data = %s is set, but val_data is still the bundled corpus's (%s): "
                    "the validation loss would measure another corpus than the one trained on. "
                    "Set val_data to your validation shards (gpt2_tokenize --val-files writes "
                    "them), or eval_every = 0 to train without validation, or val_data = %s "
                    "next to train_data to keep the bundled ones",
                    shown, val->def, val->def);
}

/* HellaSwag runs with each evaluation; both it and samples read text. */
static void validate_watch(const config *cfg) {
    if (cfg->hellaswag_data[0] != '\0' && cfg->eval_every == 0)
        fail_collective(EXIT_USAGE,
                        "hellaswag_data is set but eval_every = 0 (HellaSwag is scored at every "
                        "evaluation: set eval_every, or leave hellaswag_data empty)");
    const char *needs = cfg->hellaswag_data[0]  ? "hellaswag_data"
                        : cfg->sample_every > 0 ? "sample_every"
                                                : NULL;
    if (needs && !GPT2_HAVE_TOKENIZER)
        fail_collective(EXIT_USAGE,
                        "%s needs the GPT-2 tokenizer, which this binary was built without "
                        "(install PCRE2 and json-c: apt-get install libpcre2-dev libjson-c-dev, "
                        "and rebuild)",
                        needs);
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
    validate_val_matches_train(cfg);
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

/* FP8 runs on the GPU only, and its transposed copies of the activations
 * need a token count per micro-batch that is a multiple of 16. */
static void validate_fp8(const config *cfg) {
    if (!cfg->fp8) return;
    if (strcmp(cfg->device, "cpu") == 0)
        fail_collective(EXIT_USAGE,
                        "fp8 = true needs device=cuda (a GPU of compute capability 8.9 or newer: "
                        "H100, H200, L40S); the CPU backend trains in fp32 only");
    if ((int64_t)cfg->micro_batch * cfg->seq_len % 16 != 0)
        fail_collective(EXIT_USAGE,
                        "fp8 = true: micro_batch * seq_len = %d * %d must be a multiple of 16 "
                        "(the FP8 copies of the activations are stored transposed in 16-byte rows)",
                        cfg->micro_batch, cfg->seq_len);
}

/* Stream timing needs the GPU's stream; the CPU backend has none. */
static void validate_profile(const config *cfg) {
    if (cfg->profile_ops && strcmp(cfg->profile_ops_timing, "stream") == 0 &&
        strcmp(cfg->device, "cpu") == 0)
        fail_collective(EXIT_USAGE,
                        "profile_ops_timing = stream times ops by events on the GPU's stream; "
                        "device=cpu has none: use profile_ops_timing = sync");
}

/* The copy engines move ZeRO-1's data between GPUs. */
static void validate_dist(const config *cfg) {
    if (strcmp(cfg->comm_transport, "copy_engines") != 0) return;
    if (strcmp(cfg->device, "cpu") == 0)
        fail_collective(EXIT_USAGE, "comm_transport = copy_engines needs device=cuda (the CPU "
                                    "backend communicates over MPI): use comm_transport = auto");
    if (cfg->zero_stage != 1)
        fail_collective(EXIT_USAGE,
                        "comm_transport = copy_engines moves ZeRO-1's shards, which needs "
                        "zero_stage = 1 (zero_stage 0 all-reduces through NCCL): set zero_stage = "
                        "1 or comm_transport = auto");
}

void config_validate(config *cfg, int launched_world) {
    if (launched_world < 1) FAIL("config_validate: world size %d", launched_world);
    validate_keys(cfg);
    cfg->world = cfg->dry_run && cfg->dry_run_ranks > 0 ? cfg->dry_run_ranks : launched_world;
    validate_model(cfg);
    validate_batch(cfg);
    validate_profile(cfg);
    validate_schedule(cfg);
    validate_run(cfg);
    validate_fp8(cfg);
    validate_dist(cfg);
    char why[2 * CONFIG_STR_MAX];
    if (!config_check_allowed(cfg, why, sizeof why)) fail_collective(EXIT_USAGE, "%s", why);
}
