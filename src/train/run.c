/* A training run's set-up and teardown: the backend, the run directory and
 * its guards (lock, stop), data, model, ranks and optimizer, the state of a
 * resumed run; freed in reverse, the run lock last. */
#include "train/run.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bundled.h"
#include "base/fail.h"
#include "base/files.h"
#include "eval/val_loss.h"
#include "io/weights_h5.h"
#if GPT2_HAVE_CUDA
#include "kernels/cuda_info.h"
#endif
#include "kernels/ops_profile.h"
#include "model/fp8_layers.h"
#include "train/backend.h"
#include "train/epochs.h"
#include "train/init_from.h"
#include "train/observe/run_record.h"
#include "train/safety/exit_status.h"
#include "train/safety/preflight.h"
#include "train/safety/run_dir_names.h"
#include "train/safety/signals.h"

static void open_dataset(token_dataset *ds, const char *key, const char *pattern, const config *cfg,
                         int rank) {
    char err[2048], msg[4096]; /* ${VAR} in the pattern was expanded by config_load */
    char found[4200], what[64];
    snprintf(what, sizeof what, "%s =", key);
    const char *path =
        bundled_path(what, pattern, found, sizeof found, rank == 0 ? stdout : NULL, "note: ");
    const int rc = dataset_open(ds, path, cfg->vocab_size, cfg->seq_len, err, sizeof err);
    /* Every rank opens the data here: one message, from the lowest rank. */
    if (rc == DATASET_NO_FILES)
        snprintf(msg, sizeof msg, "%s: %s\n  %s", key, err,
                 dataset_no_files_hint(strcmp(key, "val_data") == 0));
    else if (rc != 0)
        snprintf(msg, sizeof msg, "%s: %s", key, err);
    fail_collective_any(rc == DATASET_NO_FILES ? EXIT_USAGE : EXIT_FATAL, rc != 0 ? msg : NULL);
}

/* Where the run is and what it trains, in a few lines: the whole resolved
 * config is in --print-config and in the run's records, not on the screen. */
static void print_run_header(const run_state *r) {
    const config *cfg = r->cfg;
    const gpt2_layout *lay = &r->lay;
    const int world = cfg->world;
    char device[256];
    snprintf(device, sizeof device, "%s", cfg->device);
#if GPT2_HAVE_CUDA
    if (strcmp(cfg->device, "cuda") == 0 && r->dist->gpu >= 0) {
        char name[200];
        cuda_device_describe(r->dist->gpu, name, sizeof name);
        snprintf(device, sizeof device, "cuda (%s)", name);
    }
#endif
    printf("gpt2_ddp %s | %d rank(s) | device %s | run dir %s\n", GPT2_VERSION, world, device,
           r->run_dir);
    printf("model: %d layers, %d wide, %d head(s) of %d: %zu parameters (vocab %d)\n", lay->n_layer,
           lay->n_embd, lay->n_head, lay->n_embd / lay->n_head, layout_model_params(lay),
           lay->vocab_size);
    printf("batch: %lld tokens/step = %d ranks x %d micro-steps x %d x %d\n",
           (long long)cfg->total_batch, world, cfg->grad_accum, cfg->micro_batch, cfg->seq_len);
    char decay[128] = "then constant";
    if (strcmp(cfg->lr_schedule, "wsd") == 0)
        snprintf(decay, sizeof decay, "then constant, linear decay to %g over the last %d steps",
                 cfg->lr * cfg->min_lr_frac, config_wsd_decay_steps(cfg));
    else if (strcmp(cfg->lr_schedule, "constant") != 0)
        snprintf(decay, sizeof decay, "%s decay to %g", cfg->lr_schedule,
                 cfg->lr * cfg->min_lr_frac);
    printf("schedule: lr %g, %d warm-up steps, %s, max_steps %d (%lld tokens)\n", cfg->lr,
           cfg->warmup_steps, decay, cfg->max_steps, (long long)cfg->total_batch * cfg->max_steps);
    if (strcmp(cfg->optimizer, "muon") == 0)
        printf("optimizer: muon for the blocks' 2-D weights (muon_lr %g, momentum %g, weight "
               "decay %g), adamw for the rest (lr %g, weight_decay %g)\n",
               cfg->muon_lr, cfg->muon_momentum, cfg->muon_weight_decay, cfg->lr,
               cfg->weight_decay);
    else
        printf("optimizer: %s (lr %g, weight_decay %g, betas %g, %g)\n", cfg->optimizer, cfg->lr,
               cfg->weight_decay, cfg->beta1, cfg->beta2);
}

void run_path(const run_state *r, char path[RUN_PATH_MAX], const char *name_fmt, ...) {
    const int n = snprintf(path, RUN_PATH_MAX, "%s/", r->run_dir); /* < RUN_PATH_MAX */
    va_list ap;
    va_start(ap, name_fmt);
    vsnprintf(path + n, RUN_PATH_MAX - (size_t)n, name_fmt, ap);
    va_end(ap);
}

void run_plan(run_state *r, const config *cfg, dist_state *dist) {
    r->cfg = cfg;
    r->dist = dist;
    layout_build(&r->lay, cfg->n_layer, cfg->n_embd, cfg->n_head, cfg->vocab_size,
                 cfg->padded_vocab_size, cfg->block_size);
    config_format(cfg, r->config_text, sizeof r->config_text);
    snprintf(r->run_dir, sizeof r->run_dir, "%s/%s", cfg->out_dir, cfg->run_name);
    r->mem = memory_estimate_for(cfg, &r->lay, cfg->world);
    /* A dry run reports now; a run once it is known to have work to do (a
     * finished run started again prints only that). */
    if (cfg->dry_run) run_print_plan(r);
}

void run_print_plan(const run_state *r) {
    const config *cfg = r->cfg;
    if (r->dist->rank == 0) {
        print_run_header(r);
        /* A dry run is for planning memory: it gets the itemised report. */
        if (cfg->dry_run)
            memory_print(stdout, &r->mem, cfg, r->lay.n_params);
        else
            memory_print_line(stdout, &r->mem);
        fflush(stdout);
    }
}

/* Signals, the kernel table (checked against the device's memory before
 * anything of the model is allocated) and the MFU's constants. */
static void run_open_backend(run_state *r) {
    const config *cfg = r->cfg;
    signals_install();
    r->ops = backend_select(cfg, r->dist);
    preflight_check(cfg, &r->lay, r->dist, r->ops);
    if (cfg->profile_ops)
        r->ops = ops_profile_wrap(r->ops, strcmp(cfg->profile_ops_timing, "stream") == 0);
    r->peak_flops = backend_peak_flops(cfg, r->dist);
    r->flops_per_token = layout_flops_per_token(&r->lay, cfg->seq_len);
}

/* The run directory, guarded by the lock and watched for a stop: created
 * only once the start has passed every check. */
static void run_claim_dir(run_state *r) {
    const int rank = r->dist->rank;
    if (rank == 0) make_dirs_or_fail(r->run_dir);
    /* Before anything is read or written there: a second run ends here. */
    run_lock_acquire(&r->lock, r->run_dir, &r->dist->job);
    /* The plan was made without the lock: a run that saved meanwhile ends
     * this start before anything is moved. */
    ckpt_confirm_plan(&r->dist->job, &r->plan, r->run_dir);
    /* Rank 0's share of a checkpoint (model.h5 and its shard), for the time
     * limit's save estimate until a save is measured. */
    const double checkpoint_share = 4.0 * r->lay.n_elements + r->mem.optimizer;
    run_stop_init(&r->stopper, r->cfg, r->run_dir, &r->dist->job, checkpoint_share);
    group_barrier(&r->dist->job);
}

/* The validation batches an evaluation reads, each window once: a val set
 * smaller than eval_batches x micro_batch windows gives fewer batches (with
 * a note), one smaller than a single batch ends the run (exit 2). */
static int val_batches_or_fail(const config *cfg, const token_dataset *val, int rank) {
    const long long windows = (long long)val->n_samples, want = (long long)cfg->eval_batches;
    const int batches = val_loss_batches(val->n_samples, cfg->eval_batches, cfg->micro_batch);
    if (batches == 0)
        fail_collective(EXIT_USAGE,
                        "val_data = %s holds %lld windows of seq_len + 1 = %d tokens, fewer than "
                        "one validation batch of micro_batch = %d: give val_data at least %lld "
                        "tokens, lower micro_batch, or set eval_every = 0",
                        cfg->val_data, windows, cfg->seq_len + 1, cfg->micro_batch,
                        (long long)cfg->micro_batch * cfg->seq_len + 1);
    if (batches < cfg->eval_batches && rank == 0)
        printf("note: val_data holds %lld windows of %d tokens, fewer than eval_batches x "
               "micro_batch = %lld x %d = %lld: each evaluation uses %d batches (%lld windows, "
               "each once); set eval_batches = %d to silence this note, or give val_data more "
               "tokens\n",
               windows, cfg->seq_len + 1, want, cfg->micro_batch, want * cfg->micro_batch, batches,
               (long long)batches * cfg->micro_batch, batches);
    return batches;
}

static void run_open_data(run_state *r) {
    const config *cfg = r->cfg;
    open_dataset(&r->train_ds, "train_data", cfg->train_data, cfg, r->dist->rank);
    epochs_warn(cfg, &r->train_ds, r->dist->rank);
    r->do_eval = cfg->eval_every > 0 && cfg->eval_batches > 0;
    if (r->do_eval) {
        open_dataset(&r->val_ds, "val_data", cfg->val_data, cfg, r->dist->rank);
        /* Validation on training data would measure memory, not the model:
         * a pattern that matches both sets (nlp_*.bin) is the usual cause. */
        const char *shared = dataset_shared_file(&r->train_ds, &r->val_ds);
        char msg[2048];
        if (shared)
            snprintf(msg, sizeof msg,
                     "train_data = %s and val_data = %s both match %s: the validation loss would "
                     "be measured on training data. Give train_data a pattern that leaves out the "
                     "validation shards (for the bundled corpus data/nlp-corpus/nlp_train_*.bin), "
                     "or set eval_every = 0 to train without validation",
                     cfg->train_data, cfg->val_data, shared);
        fail_collective_any(EXIT_USAGE, shared ? msg : NULL);
        r->eval_batches = val_batches_or_fail(cfg, &r->val_ds, r->dist->rank);
    }
    loader_init(&r->train_ld, &r->train_ds, cfg->seed, true);
    if (r->do_eval) loader_init(&r->val_ld, &r->val_ds, cfg->seed, false);
}

/* The weights a run starts from: GPT-2 initialisation, or init_from's model
 * for a new run (a resumed run gets everything from its checkpoint). */
static void initial_weights(const config *cfg, const gpt2_layout *lay, bool resuming,
                            const dist_group *job, float *host_params) {
    gpt2_init_params(lay, cfg->seed, host_params); /* identical on every rank */
    if (cfg->init_from[0] == '\0') return;
    if (resuming) {
        if (job->rank == 0) printf("init_from = %s ignored: resuming this run\n", cfg->init_from);
        return;
    }
    init_from_load(job, cfg, lay, host_params);
    if (job->rank == 0) printf("initialised from %s\n", cfg->init_from);
}

/* save_init: the weights before step 1, for reproducing the run elsewhere
 * (tests/train/test_loss_curve_cuda.py starts PyTorch from them). */
static void save_initial_weights(const run_state *r) {
    run_save_weights(r, "init.h5", "initial weights");
}

void run_save_weights(const run_state *r, const char *file, const char *what) {
    char path[RUN_PATH_MAX];
    run_path(r, path, "%s", file);
    weights_save(path, &r->lay, r->host_params, r->config_text);
    printf("saved %s to %s\n", what, path);
}

/* The initial weights on the host: init_from's are read (and refused)
 * before the run directory exists. */
static void run_read_initial_weights(run_state *r) {
    r->host_params = xmalloc(r->lay.n_elements * sizeof(float));
    initial_weights(r->cfg, &r->lay, r->resuming, &r->dist->job, r->host_params);
}

/* The model on the backend, with its initial weights. */
static void run_build_model(run_state *r) {
    const config *cfg = r->cfg;
    fp8_fast_accum fast_accum = FP8_FAST_ACCUM_FORWARD; /* the key's choices are the names */
    fp8_fast_accum_named(cfg->fp8_fast_accum, &fast_accum);
    const gpt2_options model_opt = {.recompute_gelu = cfg->recompute_gelu,
                                    .fp8 = cfg->fp8,
                                    .fp8_history = cfg->fp8_amax_history,
                                    .fp8_margin = cfg->fp8_margin,
                                    .fp8_fast_accum = fast_accum,
                                    .fp8_attn_proj_bf16 = cfg->fp8 && !cfg->fp8_attn_proj,
                                    .fp8_lm_head = cfg->fp8 && cfg->fp8_lm_head};
    gpt2_create_with(&r->model, &r->lay, r->ops, cfg->micro_batch, cfg->seq_len, &model_opt);
    if (cfg->save_init && !r->resuming && r->dist->rank == 0) save_initial_weights(r);
    r->ops->upload_f32(r->model.params, r->host_params, r->lay.n_elements);
}

/* The all-gather's pieces in the order forward first reads them (see
 * gpt2.h): the embeddings [wpe, end), block 0, ..., block L-1, ln_f [0, ...).
 * Together they cover the flat buffer. Returns how many (L + 2). */
static int forward_gather_pieces(const gpt2_layout *lay, comm_range *pieces) {
    int n = 0;
    size_t end = lay->n_elements;
    pieces[n++] = (comm_range){lay->wpe, end};
    end = lay->wpe;
    for (int l = 0; l < lay->n_layer; l++) {
        pieces[n++] = (comm_range){lay->blocks[l].begin, end};
        end = lay->blocks[l].begin;
    }
    pieces[n++] = (comm_range){0, end};
    return n;
}

/* The communicator over the data-parallel group, data parallelism over it
 * with the optimizer's shard map, and the optimizer on this rank's shard. */
static void run_build_dist(run_state *r) {
    const config *cfg = r->cfg;
    const gpt2_layout *lay = &r->lay;
    const optimizer_kind *kind = optimizer_kind_for(cfg);
    r->comm = backend_communicator(cfg, r->dist, r->ops);
    comm_range *pieces = xmalloc(((size_t)lay->n_layer + 2) * sizeof(comm_range));
    const int n_pieces = forward_gather_pieces(lay, pieces);
    shard_map map;
    optimizer_shard_map(kind, lay, r->comm->world, &map);
    ddp_init(&r->ddp, r->comm, r->ops, &map, cfg->zero_stage, cfg->bucket_mb, r->model.grads,
             pieces, n_pieces);
    zero_shard_map_free(&map);
    free(pieces);
    gpt2_set_params_needed(&r->model, ddp_params_needed, &r->ddp);
    r->opt = optimizer_create(kind, cfg, lay, r->ops, r->ddp.lo, r->ddp.hi, r->host_params);
}

/* A resumed run's state from its checkpoint; then the partial checkpoints
 * of interrupted saves go. */
static void run_restore(run_state *r) {
    r->ckpt = (ckpt_ctx){.cfg = r->cfg,
                         .config_text = r->config_text,
                         .run_dir = r->run_dir,
                         .job = &r->dist->job,
                         .lay = &r->lay,
                         .ops = r->ops,
                         .ddp = &r->ddp,
                         .opt = r->opt,
                         .host_scratch = r->host_params,
                         .train_samples = r->train_ds.n_samples,
                         .fp8 = r->model.fp8};
    r->progress = (ckpt_progress){0};
    if (r->resuming) ckpt_load(&r->ckpt, r->resume_dir, r->model.params, &r->progress);
    /* Only now, with the run's state loaded: a failed load moves or deletes
     * nothing. */
    ckpt_clear_ahead(&r->dist->job, r->run_dir, r->progress.step,
                     r->resuming ? r->resume_dir : NULL);
    if (r->dist->rank == 0 && ckpt_remove_partial(r->run_dir) > 0)
        printf("removed partial checkpoint directories (interrupted saves) from %s\n", r->run_dir);
}

/* The logs, the batch buffers and the non-finite guard. */
static void run_open_loop(run_state *r) {
    const config *cfg = r->cfg;
    run_path(r, r->trace_path, "trace_rank%d.jsonl", r->dist->rank);
    if (cfg->comm_trace) remove(r->trace_path);
    metrics_open(&r->log, r->run_dir, r->dist->rank, cfg->max_steps);
    /* The first record of this start, before any step's. */
    run_record_write(&r->log, cfg, r->dist, r->progress.step);
    const size_t tokens = (size_t)cfg->micro_batch * cfg->seq_len;
    r->inputs = xmalloc(tokens * sizeof(int32_t));
    r->targets = xmalloc(tokens * sizeof(int32_t));
    nonfinite_init(&r->guard, cfg->max_bad_steps);
}

bool run_setup(run_state *r) {
    /* What the run directory holds decides first, from its files alone: a
     * finished run ends here having touched nothing. */
    run_lock_check_free(r->run_dir, &r->dist->job); /* a live run there is named first */
    run_dir_names_check_or_fail(&r->dist->job, r->run_dir);
    ckpt_plan_start(&r->dist->job, r->cfg, r->run_dir, &r->plan);
    if (r->plan.kind == CKPT_START_FINISHED) return false;
    run_print_plan(r);
    if (r->dist->rank == 0 && exit_status_plain_mpirun())
        printf("note: started by plain mpirun: Ctrl-C ends the ranks within about 2 s (Open MPI "
               "kills them), too soon for a checkpoint; to stop with one, touch %s/STOP, or start "
               "with launch/local.sh, where Ctrl-C saves a checkpoint\n",
               r->run_dir);
    r->resuming = r->plan.kind == CKPT_START_RESUME;
    snprintf(r->resume_dir, sizeof r->resume_dir, "%s", r->plan.dir);
    run_open_backend(r);
    r->async_saves = ckpt_async_wanted(r->cfg, r->ops, r->dist, &r->lay);
    /* A bad HellaSwag file or tokenizer, data or init_from ends the start
     * here, before the run directory is created. */
    r->watch = watch_open(r->cfg, r->dist->rank, r->dist->world, r->run_dir);
    run_open_data(r);
    ckpt_check_samples(&r->plan, (int64_t)r->train_ds.n_samples);
    run_read_initial_weights(r);
    run_claim_dir(r);
    run_build_model(r);
    run_build_dist(r);
    run_restore(r);
    run_open_loop(r);
    if (r->async_saves) r->saver = ckpt_saver_create(&r->ckpt, run_note_save, r);
    return true;
}

void run_note_save(void *arg, const ckpt_save_report *rep) {
    run_state *r = arg;
    /* A stop's final save waits for one in flight and then writes its own:
     * the time limit keeps room for both. */
    run_stop_note_save(&r->stopper, rep->stall_s + (rep->async ? 2 * rep->write_s : 0.0));
    metrics_record(&r->log,
                   "{\"type\":\"checkpoint\",\"step\":%d,\"bytes\":%lld,\"async\":%s,"
                   "\"stall_ms\":%.1f,\"write_s\":%.3f,\"mb_per_s\":%.1f}",
                   rep->step, (long long)rep->bytes, rep->async ? "true" : "false",
                   rep->stall_s * 1e3, rep->write_s,
                   rep->write_s > 0 ? rep->bytes / 1e6 / rep->write_s : 0.0);
}

void run_teardown(run_state *r) {
    ckpt_saver_free(r->saver);
    watch_close(r->watch);
    metrics_close(&r->log);
    free(r->inputs);
    free(r->targets);
    free(r->host_params);
    optimizer_free(r->opt);
    ddp_free(&r->ddp);
    r->comm->ops->destroy(r->comm);
    gpt2_free(&r->model);
    loader_free(&r->train_ld);
    dataset_close(&r->train_ds);
    if (r->do_eval) {
        loader_free(&r->val_ld);
        dataset_close(&r->val_ds);
    }
    layout_free(&r->lay);
    run_lock_release(&r->lock);
}

int run_exit_code(const run_state *r) {
    if (r->gave_up) return EXIT_NONFINITE;
    return r->preempted ? EXIT_PREEMPTED : 0;
}
