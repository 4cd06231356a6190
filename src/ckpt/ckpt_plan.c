/* How a start goes on (see ckpt.h): fresh, from which checkpoint, or not at
 * all because the run is finished; and whether this config may continue
 * the run it finds. Decided by rank 0 from the files alone, before the run
 * directory is created or locked, so that a refused or finished start
 * touches nothing. */
#include "ckpt/ckpt.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fail.h"
#include "config/stored.h"
#include "data/loader.h"
#include "io/ckpt_h5.h"
#include "io/h5_io.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"

#define MSG_MAX 16384
#define MAX_CHANGES 64

/* ------------------------------------------------------ which checkpoint */

static bool same_dir(const char *a, const char *b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* dir is a step directory of run_dir itself. */
static bool inside_run_dir(const char *dir, const char *run_dir) {
    char parent[CKPT_PATH_MAX + 4];
    snprintf(parent, sizeof parent, "%s/..", dir);
    return same_dir(parent, run_dir);
}

static bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* resume = <path>: a step directory, or a run directory (its newest). */
static int resolve_path(const char *path, char *dir, size_t len, char *err, size_t err_len) {
    if (ckpt_is_complete(path)) {
        snprintf(dir, len, "%s", path);
        return 1;
    }
    if (ckpt_find_newest(path, dir, len) >= 0) return 1;
    return set_error(
        err, err_len,
        "resume = %s: no complete checkpoint there (neither a step directory with a %s "
        "marker nor a run directory holding one)",
        path, CKPT_MARKER);
}

/* Rank 0: 1 and dir to resume, 0 to start fresh, -1 with err. The run
 * directory's checkpoints must stay one history: a fresh start or another
 * run's checkpoint would interleave with them. */
static int resolve_checkpoint(const config *cfg, const char *run_dir, char *dir, size_t len,
                              char *err, size_t err_len) {
    char newest[CKPT_PATH_MAX];
    const bool has_own = ckpt_find_newest(run_dir, newest, sizeof newest) >= 0;
    if (strcmp(cfg->resume, "auto") == 0) {
        if (has_own) snprintf(dir, len, "%s", newest);
        return has_own;
    }
    if (strcmp(cfg->resume, "none") == 0) {
        if (!has_own) return 0;
        return set_error(err, err_len,
                         "resume = none, but %s already holds checkpoints (newest %s): resume=auto "
                         "continues that run; choose another run_name or out_dir for a new one",
                         run_dir, newest);
    }
    if (resolve_path(cfg->resume, dir, len, err, err_len) < 0) return -1;
    /* Going back to an older checkpoint of this run keeps one history: the
     * newer ones are moved aside once it has loaded (ckpt_clear_ahead). */
    if (has_own && !same_dir(dir, newest) && inside_run_dir(dir, run_dir)) {
        char parent[CKPT_PATH_MAX];
        const int step = ckpt_split_step_dir(dir, parent, sizeof parent);
        /* Once only: a requeued job with the same resume=<step> continues
         * from what it saved since instead of going back again. */
        if (step >= 0 && ckpt_went_back_to(run_dir, step)) {
            printf("resume = %s: this run already went back to step %d once; continuing from "
                   "its newest checkpoint, %s (set resume=auto; to go back again, move the "
                   "step_*.superseded_by_step_%08d directories away)\n",
                   cfg->resume, step, newest, step);
            snprintf(dir, len, "%s", newest);
        }
        return 1;
    }
    if (has_own && !same_dir(dir, newest))
        return set_error(err, err_len,
                         "resume = %s, but %s holds checkpoints of its own (newest %s): continuing "
                         "from another one would mix two histories there; use resume=auto, or "
                         "another run_name",
                         cfg->resume, run_dir, newest);
    return 1;
}

/* ------------------------------------------------------- what may change */

/* Keys a resume can never change: the weights' layout, and which tokens
 * each step reads (seq_len, total_batch and seed fix the data order). */
static const char *const fixed_keys[] = {"n_layer",    "n_embd",  "n_head",      "vocab_size",
                                         "block_size", "seq_len", "total_batch", "seed"};
/* Keys that define the run: changed only when allow_changed names them. */
static const char *const defining_keys[] = {"train_data",
                                            "val_data",
                                            "lr",
                                            "min_lr_frac",
                                            "warmup_steps",
                                            "lr_schedule",
                                            "decay_frac",
                                            "max_steps",
                                            "weight_decay",
                                            "beta1",
                                            "beta2",
                                            "eps",
                                            "grad_clip",
                                            "muon_lr",
                                            "muon_momentum",
                                            "muon_weight_decay"};
/* Keys that say how to start, not what the run is: never reported. */
static const char *const start_keys[] = {"allow_changed", "resume", "init_from"};
/* Keys of the learning-rate schedule: a change moves the lr of the next step. */
static const char *const schedule_keys[] = {
    "lr", "min_lr_frac", "warmup_steps", "lr_schedule", "decay_frac", "max_steps", "muon_lr"};

#define IN(list, key) in_list(list, sizeof list / sizeof list[0], key)
static bool in_list(const char *const *list, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], key) == 0) return true;
    return false;
}

typedef struct {
    config_change all[MAX_CHANGES];
    int n;
    int fixed, refused, allowed; /* changes of fixed keys, of defining keys not allowed, allowed */
    bool schedule;               /* a schedule key changed */
} change_set;

static void changes_find(const config *was, const config *now, change_set *c) {
    config_change found[MAX_CHANGES];
    const int n = config_diff(was, now, found, MAX_CHANGES);
    *c = (change_set){.n = 0};
    for (int i = 0; i < n && i < MAX_CHANGES; i++) {
        const char *key = found[i].key;
        if (IN(start_keys, key)) continue;
        c->all[c->n++] = found[i];
        if (IN(fixed_keys, key))
            c->fixed++;
        else if (IN(defining_keys, key))
            config_change_allowed(now, key) ? c->allowed++ : c->refused++;
        if (IN(schedule_keys, key)) c->schedule = true;
    }
}

/* A change a refusal names: of a fixed key, or of a defining key (only
 * those allow_changed does not name when skip_allowed). */
static bool listed(const config_change *ch, const config *now, bool skip_allowed) {
    if (IN(fixed_keys, ch->key)) return true;
    return IN(defining_keys, ch->key) && !(skip_allowed && config_change_allowed(now, ch->key));
}

/* "lr: 0.003 in the checkpoint, 0.001 now" for each change listed(). */
static size_t list_changes(const change_set *c, const config *now, const char *there,
                           bool skip_allowed, char *out, size_t len) {
    size_t o = 0;
    int n = 0;
    for (int i = 0; i < c->n; i++) n += listed(&c->all[i], now, skip_allowed);
    /* One change stays on the message's first line, several get a line each. */
    const char *sep = n == 1 ? " " : "\n  ";
    for (int i = 0; i < c->n && o < len; i++) {
        const config_change *ch = &c->all[i];
        if (!listed(ch, now, skip_allowed)) continue;
        o += (size_t)snprintf(out + o, len - o, "%s%s: %s %s, %s now%s", sep, ch->key, ch->was,
                              there, ch->now,
                              IN(fixed_keys, ch->key) ? " (never changes on a resume)" : "");
    }
    return o;
}

/* "lr,max_steps": the defining keys that changed without being allowed;
 * and "lr=0.003 max_steps=6", their values in the checkpoint. */
static void refused_names(const change_set *c, const config *now, char *out, size_t len, char *was,
                          size_t was_len) {
    size_t o = 0, w = 0;
    out[0] = was[0] = '\0';
    for (int i = 0; i < c->n && o < len && w < was_len; i++)
        if (IN(defining_keys, c->all[i].key) && !config_change_allowed(now, c->all[i].key)) {
            o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "," : "", c->all[i].key);
            w += (size_t)snprintf(was + w, was_len - w, "%s%s=%s", w ? " " : "", c->all[i].key,
                                  c->all[i].was);
        }
}

/* The one message of a resume the config cannot continue. */
static int refuse_resume(const change_set *c, const config *now, const char *dir, char *err,
                         size_t len) {
    static char list[MSG_MAX / 2];
    char names[1024], was[2048], allow[4000] = "";
    list_changes(c, now, "in the checkpoint", true, list, sizeof list);
    refused_names(c, now, names, sizeof names, was, sizeof was);
    /* "drop them" cannot be followed where a value comes from the file or
     * the defaults (the run was changed with allow_changed before): the
     * checkpoint's values, written out, can. */
    if (c->refused) {
        const bool had = now->allow_changed[0] != '\0';
        snprintf(allow, sizeof allow,
                 "To continue with the new values, add allow_changed=%s%s%s (each change is "
                 "printed at the start); to continue as the checkpoint ran, add %s.",
                 had ? now->allow_changed : "", had ? "," : "", names, was);
    }
    return set_error(err, len,
                     "cannot resume from %s: the config differs from the checkpoint's in %s that "
                     "define%s the run:%s\n%s%s%s%s",
                     dir, c->fixed + c->refused > 1 ? "keys" : "a key",
                     c->fixed + c->refused > 1 ? "" : "s", list, allow,
                     c->fixed && c->refused ? " " : "",
                     c->fixed ? "The model shape, seq_len, total_batch and seed never change on a "
                                "resume (they fix the weights' layout and the tokens each step "
                                "reads): a new run can start from this checkpoint's weights with "
                                "init_from="
                              : "",
                     c->fixed ? dir : "");
}

/* Rank 0: each accepted change, one line each, and where the lr goes. */
static void print_changes(const change_set *c, const config *was, const config *now, int step) {
    for (int i = 0; i < c->n; i++) {
        const config_change *ch = &c->all[i];
        printf("resume: %s %s -> %s%s\n", ch->key, ch->was, ch->now,
               IN(defining_keys, ch->key) ? " (allowed by allow_changed)" : "");
    }
    if (c->schedule)
        printf("resume: the lr of step %d is %.4g under the new schedule, %.4g under the "
               "checkpoint's\n",
               step + 1, schedule_lr(now, step), schedule_lr(was, step));
}

/* ------------------------------------------------------------- deciding */

/* A resume of dir: may the config continue it, and is there anything left
 * to do? Rank 0; 1 (resume), 2 (finished) or -1 with err. A checkpoint
 * whose marker or config cannot be read is left to ckpt_load, which says
 * what is damaged and how to go back. */
/* The checkpoint's fields against each other and against the config
 * stored with it: a field edited or damaged by hand would otherwise resume
 * at another place in the data, or (an empty config) bypass the check of
 * changed settings. 0, or -1 with err naming the field and the way back. */
static int check_state_fields(const ckpt_state *st, const config *was, bool known,
                              const char *model_path, const char *hint, char *err, size_t err_len) {
    char what[512] = "";
    const long long per_step = st->seq_len > 0 ? st->total_batch / st->seq_len : 0;
    if (!known)
        snprintf(what, sizeof what,
                 "its stored config is empty or holds no key, so the settings it was trained "
                 "with are unknown and a changed key could not be told");
    else if (st->step < 0 || st->samples_consumed != st->step * per_step)
        snprintf(what, sizeof what,
                 "samples_consumed = %lld disagrees with step %lld x %lld samples per step "
                 "(total_batch %lld / seq_len %lld) = %lld",
                 (long long)st->samples_consumed, (long long)st->step, per_step,
                 (long long)st->total_batch, (long long)st->seq_len, st->step * per_step);
    else if (st->optimizer_step < 0 || st->optimizer_step > st->step)
        snprintf(what, sizeof what, "optimizer_step = %lld is outside 0..step (%lld)",
                 (long long)st->optimizer_step, (long long)st->step);
    else if (st->seq_len != was->seq_len || st->total_batch != was->total_batch ||
             st->micro_batch != was->micro_batch || st->seed != was->seed)
        snprintf(what, sizeof what,
                 "its fields (seq_len %lld, total_batch %lld, micro_batch %lld, seed %llu) "
                 "disagree with its stored config (%d, %lld, %d, %llu)",
                 (long long)st->seq_len, (long long)st->total_batch, (long long)st->micro_batch,
                 (unsigned long long)st->seed, was->seq_len, (long long)was->total_batch,
                 was->micro_batch, (unsigned long long)was->seed);
    for (int r = 0; !what[0] && r < st->world; r++) {
        const int64_t at =
            loader_batch_position(st->samples_consumed, 0, r, (int)st->world, (int)st->micro_batch);
        if (st->loader_position[r] != at)
            snprintf(what, sizeof what,
                     "loader_position of rank %d is %lld, where samples_consumed = %lld puts it "
                     "at %lld",
                     r, (long long)st->loader_position[r], (long long)st->samples_consumed,
                     (long long)at);
    }
    if (!what[0]) return 0;
    return set_error(err, err_len, "%s: cannot resume: %s (the file was damaged or edited). %s",
                     model_path, what, hint);
}

static int check_resume(const config *cfg, const char *run_dir, ckpt_start_plan *plan, char *err,
                        size_t err_len) {
    char why[CKPT_PATH_MAX], hint[4 * CKPT_PATH_MAX], model_path[CKPT_PATH_MAX + 32];
    if (ckpt_marker_check(plan->dir, NULL, why, sizeof why) != 0) return 1;
    ckpt_fallback_hint(plan->dir, hint, sizeof hint);
    fail_set_hint(hint);
    ckpt_model_path(model_path, sizeof model_path, plan->dir);
    ckpt_state st;
    ckpt_h5_state_read(model_path, &st);
    fail_set_hint(NULL);
    plan->step = (int)st.step;
    plan->train_samples = st.train_samples;
    const char *ours = optimizer_kind_for(cfg)->name;
    if (strcmp(st.optimizer, ours) != 0) {
        set_error(err, err_len,
                  "%s: cannot continue this run: its optimizer state is %s's, and this run uses %s "
                  "(init_from=%s starts a new run from its weights)",
                  model_path, st.optimizer, ours, plan->dir);
        ckpt_state_free(&st);
        return -1;
    }
    static config was;
    const bool known = st.config_text && config_read_stored(&was, st.config_text);
    const int fields = check_state_fields(&st, &was, known, model_path, hint, err, err_len);
    ckpt_state_free(&st);
    if (fields != 0) return -1;
    static change_set c;
    changes_find(&was, cfg, &c);
    if (c.fixed || c.refused) return refuse_resume(&c, cfg, plan->dir, err, err_len);
    char newest[CKPT_PATH_MAX];
    const bool is_newest =
        ckpt_find_newest(run_dir, newest, sizeof newest) >= 0 && same_dir(newest, plan->dir);
    if (is_newest && plan->has_final && plan->step >= was.max_steps &&
        cfg->max_steps == was.max_steps) {
        printf("%s finished at step %d of max_steps = %d: nothing to do (to train further, raise "
               "max_steps and add allow_changed=max_steps)\n",
               run_dir, plan->step, cfg->max_steps);
        return 2;
    }
    if (cfg->max_steps < plan->step)
        return set_error(err, err_len,
                         "max_steps = %d is below the step of the checkpoint to resume, %s (step "
                         "%d): raise max_steps to at least %d, or go back to an older checkpoint "
                         "with resume=<its step directory>",
                         cfg->max_steps, plan->dir, plan->step, plan->step);
    print_changes(&c, &was, cfg, plan->step);
    return 1;
}

/* The config stored in a weights file (malloc'd), or NULL. */
static char *stored_config_text(const char *path) {
    if (!h5_is_hdf5(path)) return NULL;
    hid_t file = h5_open_read(path, "weights");
    char *text = NULL;
    if (H5Aexists(file, "config") > 0) text = h5_attr_read_str(file, path, "config");
    h5_close(file, path);
    return text;
}

/* run_dir holds the final weights of a run (model.h5) and no checkpoint.
 * With this config and resume=auto the run is finished (2); anything else
 * would overwrite them (-1 with err). */
static int check_final(const config *cfg, const char *run_dir, ckpt_start_plan *plan, char *err,
                       size_t err_len) {
    char path[CKPT_PATH_MAX + 32];
    ckpt_model_path(path, sizeof path, run_dir);
    const char *fixes = "choose another run_name (run_name=...), or move the old run away (mv";
    if (strcmp(cfg->resume, "auto") != 0)
        return set_error(err, err_len,
                         "resume = %s, but %s holds the final weights of a finished run (%s) and "
                         "no checkpoint: this start would overwrite them; %s %s %s.old)",
                         cfg->resume, run_dir, path, fixes, run_dir, run_dir);
    char *text = stored_config_text(path);
    static config was;
    const bool known = text && config_read_stored(&was, text);
    free(text);
    if (!known)
        return set_error(err, err_len,
                         "%s holds %s, weights of unknown origin (no config stored with them), "
                         "and no checkpoint: this start would overwrite them; %s %s %s.old)",
                         run_dir, path, fixes, run_dir, run_dir);
    static change_set c;
    static char list[MSG_MAX / 2];
    changes_find(&was, cfg, &c);
    if (c.fixed || c.refused || c.allowed) {
        list_changes(&c, cfg, "there", false, list, sizeof list);
        return set_error(
            err, err_len,
            "%s holds the final weights (model.h5) of another run, which finished at max_steps = "
            "%d with other settings:%s\nThat run saved no checkpoint (checkpoint_every = %d), so "
            "it cannot be continued, and this start would overwrite its weights: nothing was "
            "changed. For a new run, %s %s %s.old); a run that is to be continued later needs "
            "checkpoint_every > 0; init_from=%s starts a new run from its weights.",
            run_dir, was.max_steps, list, was.checkpoint_every, fixes, run_dir, run_dir, path);
    }
    plan->step = was.max_steps;
    printf("%s finished at step %d of max_steps = %d: nothing to do (it saved no checkpoint, so "
           "it cannot be continued; init_from=%s with another run_name starts a new run from its "
           "weights)\n",
           run_dir, was.max_steps, was.max_steps, path);
    return 2;
}

/* A value as part of a directory name: letters, digits, '.', '+', '-';
 * anything else becomes '-'. */
static void append_name_part(char *name, size_t len, const char *key, const char *value) {
    size_t o = strlen(name);
    o += (size_t)snprintf(name + o, o < len ? len - o : 0, "_%s", key);
    for (const char *v = value; *v && o + 1 < len; v++, o++) {
        const char ch = *v;
        const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                          (ch >= '0' && ch <= '9') || ch == '.' || ch == '+' || ch == '-';
        name[o] = keep ? ch : '-';
        name[o + 1] = '\0';
    }
}

bool ckpt_variant_name(const config *cfg, const char *run_dir, char *name, size_t name_len,
                       char *keys, size_t keys_len) {
    char newest[CKPT_PATH_MAX], path[CKPT_PATH_MAX + 32];
    ckpt_model_path(path, sizeof path, run_dir);
    if (ckpt_find_newest(run_dir, newest, sizeof newest) >= 0)
        ckpt_model_path(path, sizeof path, newest);
    else if (!is_file(path))
        return false;
    char *text = stored_config_text(path);
    static config was;
    const bool known = text && config_read_stored(&was, text);
    free(text);
    if (!known) return false;
    static change_set c;
    changes_find(&was, cfg, &c);
    snprintf(name, name_len, "%s", cfg->run_name);
    size_t o = 0;
    keys[0] = '\0';
    for (int i = 0; i < c.n; i++) {
        const char *key = c.all[i].key;
        const bool blocks =
            IN(fixed_keys, key) || (IN(defining_keys, key) && !config_change_allowed(cfg, key));
        if (!blocks || config_key_origin(cfg, key) != CONFIG_FROM_COMMAND_LINE) continue;
        append_name_part(name, name_len, key, c.all[i].now);
        o += (size_t)snprintf(keys + o, o < keys_len ? keys_len - o : 0, "%s%s", o ? "," : "", key);
    }
    return o > 0;
}

/* Rank 0: the plan's kind as 0 (fresh), 1 (resume), 2 (finished), or -1
 * with err. */
static int plan_on_root(const config *cfg, const char *run_dir, ckpt_start_plan *plan, char *err,
                        size_t err_len) {
    char newest[CKPT_PATH_MAX], path[CKPT_PATH_MAX + 32];
    plan->newest_step = ckpt_find_newest(run_dir, newest, sizeof newest);
    ckpt_model_path(path, sizeof path, run_dir);
    plan->has_final = is_file(path);
    if (plan->newest_step < 0 && plan->has_final)
        return check_final(cfg, run_dir, plan, err, err_len);
    const int status = resolve_checkpoint(cfg, run_dir, plan->dir, sizeof plan->dir, err, err_len);
    if (status != 1) {
        snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
        if (status == 0 && is_file(path))
            printf("note: %s holds the records of an earlier start that left no checkpoint: this "
                   "start begins at step 0 and appends its own records after a new run record\n",
                   path);
        return status;
    }
    return check_resume(cfg, run_dir, plan, err, err_len);
}

void ckpt_plan_start(const dist_group *job, const config *cfg, const char *run_dir,
                     ckpt_start_plan *plan) {
    static char err[MSG_MAX];
    *plan = (ckpt_start_plan){.kind = CKPT_START_FRESH, .train_samples = -1, .newest_step = -1};
    int status = 0;
    if (job->rank == 0) status = plan_on_root(cfg, run_dir, plan, err, sizeof err);
    fflush(stdout);
    status = ckpt_agree_with_root(job, status, err, EXIT_USAGE);
    group_bcast(job, plan, sizeof *plan, 0);
    plan->kind = status == 0   ? CKPT_START_FRESH
                 : status == 1 ? CKPT_START_RESUME
                               : CKPT_START_FINISHED;
}

void ckpt_check_samples(const ckpt_start_plan *plan, int64_t train_samples) {
    if (plan->kind != CKPT_START_RESUME || plan->train_samples < 0) return;
    if (plan->train_samples != train_samples)
        fail_collective(EXIT_USAGE,
                        "%s: cannot continue this run: train_data holds %lld samples of seq_len + "
                        "1 tokens, the checkpoint's %lld (a resume reads the same data in the same "
                        "order; init_from=%s starts a new run from its weights)",
                        plan->dir, (long long)train_samples, (long long)plan->train_samples,
                        plan->dir);
}

void ckpt_confirm_plan(const dist_group *job, const ckpt_start_plan *plan, const char *run_dir) {
    int changed = 0;
    if (job->rank == 0) {
        char newest[CKPT_PATH_MAX], path[CKPT_PATH_MAX + 32];
        ckpt_model_path(path, sizeof path, run_dir);
        changed = ckpt_find_newest(run_dir, newest, sizeof newest) != plan->newest_step ||
                  (int)is_file(path) != plan->has_final;
    }
    group_bcast(job, &changed, sizeof changed, 0);
    if (changed)
        fail_collective(EXIT_USAGE,
                        "%s changed while this run was starting (another run saved there in the "
                        "meantime): nothing was written; start again to continue from what is "
                        "there now",
                        run_dir);
}
