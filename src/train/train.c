/* The training loop: for each optimizer step, grad_accum micro-steps of
 * forward + backward on this rank's part of the global batch (the last one
 * reducing gradient buckets while backward runs), global-norm clipping,
 * AdamW on this rank's shard, parameter all-gather, logging; periodic
 * validation and checkpoints; resume; a stop signal saves and exits 3;
 * final weights saved to the run directory. */
#include "train/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "data/loader.h"
#include "ckpt/ckpt.h"
#include "io/ckpt_dir.h"
#include "dist/comm.h"
#include "dist/ddp.h"
#include "base/alloc.h"
#include "base/fail.h"
#include "base/files.h"
#include "eval/val_loss.h"
#include "io/weights_h5.h"
#include "kernels/ops.h"
#include "kernels/ops_profile.h"
#include "model/gpt2.h"
#include "train/backend.h"
#include "train/epochs.h"
#include "train/observe/eta.h"
#include "train/init_from.h"
#include "train/safety/memory.h"
#include "train/observe/metrics.h"
#include "train/safety/nonfinite.h"
#include "optim/optimizer.h"
#include "train/safety/preflight.h"
#include "train/safety/run_lock.h"
#include "train/safety/run_stop.h"
#include "optim/schedule.h"
#include "train/safety/signals.h"
#include "train/observe/watch.h"


/* Expands ${NAME} from the environment, so one config can name per-node or
 * per-job paths (${SLURM_JOB_ID}, ${OMPI_COMM_WORLD_RANK}, ...). */
static void expand_env(const char *key, const char *in, char *out, size_t len) {
    size_t o = 0;
    for (const char *p = in; *p;) {
        if (p[0] == '$' && p[1] == '{') {
            const char *close = strchr(p, '}');
            if (!close) FAIL("%s = %s: unterminated ${", key, in);
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(close - p - 2), p + 2);
            const char *value = getenv(name);
            if (!value) FAIL("%s = %s: environment variable %s is not set", key, in, name);
            size_t n = strlen(value);
            if (o + n >= len) FAIL("%s: expanded value too long", key);
            memcpy(out + o, value, n);
            o += n;
            p = close + 1;
        } else {
            if (o + 1 >= len) FAIL("%s: expanded value too long", key);
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

static void open_dataset(token_dataset *ds, const char *key, const char *pattern,
                         const config *cfg) {
    char expanded[2048], err[2048];
    expand_env(key, pattern, expanded, sizeof expanded);
    if (dataset_open(ds, expanded, cfg->vocab_size, cfg->seq_len, err, sizeof err) != 0)
        FAIL("%s: %s", key, err);
}

static void print_run_header(const config *cfg, int world, const gpt2_layout *lay,
                             const char *run_dir, const char *config_text) {
    printf("gpt2_ddp %s | %d rank(s) | device %s | run dir %s\n", GPT2_VERSION, world,
           cfg->device, run_dir);
    printf("---- resolved config ----\n%s-------------------------\n", config_text);
    printf("model: %d layers, %d wide, %d heads, vocab %d (padded %d): %zu parameters (%zu as "
           "stored, with the padded rows)\n",
           lay->n_layer, lay->n_embd, lay->n_head, lay->vocab_size, lay->padded_vocab_size,
           layout_model_params(lay), lay->n_params);
    printf("batch: %lld tokens/step = %d ranks x %d micro-steps x %d x %d\n",
           (long long)cfg->total_batch, world, cfg->grad_accum, cfg->micro_batch, cfg->seq_len);
}

/* The weights a run starts from: GPT-2 initialisation, or init_from's model
 * for a new run (a resumed run gets everything from its checkpoint). */
static void initial_weights(const config *cfg, const gpt2_layout *lay, bool resuming, int rank,
                            float *host_params) {
    gpt2_init_params(lay, cfg->seed, host_params); /* identical on every rank */
    if (cfg->init_from[0] == '\0') return;
    if (resuming) {
        if (rank == 0) printf("init_from = %s ignored: resuming this run\n", cfg->init_from);
        return;
    }
    init_from_load(cfg, lay, host_params);
    if (rank == 0) printf("initialised from %s\n", cfg->init_from);
}

/* save_init: the weights before step 1, for reproducing the run elsewhere
 * (tests/train/test_loss_curve_cuda.py starts PyTorch from them). */
static void save_initial_weights(const char *run_dir, const gpt2_layout *lay,
                                 const float *host_params, const char *config_text) {
    char path[1200];
    snprintf(path, sizeof path, "%s/init.h5", run_dir);
    weights_save(path, lay, host_params, config_text);
    printf("saved initial weights to %s\n", path);
}

/* Rank 0 logs a skipped step with its loss (summed over ranks here when the
 * step was not logged: every rank knows of the skip, the factor is global). */
static void log_skipped_step(gpt2_model *model, communicator *comm, const adamw_state *opt,
                             const kernel_ops *ops, metrics_log *log, const nonfinite_guard *g,
                             int step, bool loss_summed) {
    if (!loss_summed && comm->world > 1) comm->ops->sum_in_place(comm, model->loss_sum);
    const double loss = gpt2_loss_sum_read(model) / ((double)model->loss_tokens * comm->world);
    metrics_skip(log, step, loss, optimizer_grad_norm(opt, ops), g->in_a_row, g->max_in_a_row,
                 g->total);
}

/* Rank 0: why the run ends with EXIT_NONFINITE, and what is left to resume. */
static void report_give_up(const nonfinite_guard *g, int step, const char *run_dir) {
    char newest[CKPT_PATH_MAX], left[CKPT_PATH_MAX + 128];
    if (ckpt_find_newest(run_dir, newest, sizeof newest) >= 0)
        snprintf(left, sizeof left, "the newest checkpoint, %s, holds the last finite state",
                 newest);
    else
        snprintf(left, sizeof left, "this run has no checkpoint");
    fflush(stdout);
    fprintf(stderr,
            "gpt2_ddp: error: steps %d-%d all had a NaN/Inf loss or gradient norm (max_bad_steps = "
            "%d): the run stops, nothing saved (exit code %d); %s\n",
            step - g->in_a_row + 1, step, g->max_in_a_row, EXIT_NONFINITE, left);
}

static bool checkpoint_due(const config *cfg, int steps_done) {
    return cfg->checkpoint_every > 0 &&
           (steps_done % cfg->checkpoint_every == 0 || steps_done == cfg->max_steps);
}

/* Queues one optimizer step on the global batch of samples [step_first,
 * step_first + total_batch / seq_len). Nothing in it waits for the device:
 * the gradient norm, its sum over ranks, the clip factor and (want_loss) the
 * loss summed over ranks stay on the device, the loss for
 * gpt2_loss_sum_read once the step is done. A NaN/Inf loss or norm makes the
 * clip factor CLIP_SKIP_STEP: AdamW then changes nothing (see nonfinite.h).
 * poison: the GPT2_TEST_NAN_STEP hook (NaN gradients on this rank). */
static void train_step(gpt2_model *model, data_parallel *ddp, adamw_state *opt,
                       data_loader *train_ld, const config *cfg, int64_t step_first,
                       const adamw_hparams *hp, int32_t *inputs, int32_t *targets,
                       bool want_loss, bool poison) {
    const kernel_ops *ops = model->ops;
    communicator *comm = ddp->comm;
    const int B = cfg->micro_batch, T = cfg->seq_len;
    /* Every token of the global batch weighs the same: the sum over ranks
     * and micro-steps of dloss-scaled gradients is the mean. */
    const float dloss = poison ? NAN : 1.0f / ((float)B * T * cfg->grad_accum * comm->world);
    ops->zero(model->grads, model->lay.n_elements * ops->elem_bytes);
    gpt2_loss_reset(model);
    for (int micro = 0; micro < cfg->grad_accum; micro++) {
        int64_t pos = loader_batch_position(step_first, micro, comm->rank, comm->world, B);
        loader_read(train_ld, pos, B, inputs, targets);
        const int last = micro + 1 == cfg->grad_accum;
        if (last) ddp_arm(ddp, model->grads);
        gpt2_forward_async(model, inputs, targets, B, T, dloss);
        gpt2_backward(model, last && comm->world > 1 ? buckets_on_ready : NULL, &ddp->buckets);
    }
    ddp_finish_reduction(ddp);
    /* Every step's loss sum, for the non-finite guard; summed over ranks
     * when logged, before the all-gather (queued behind it, the sums would
     * wait for all of it). */
    double *loss_sum = gpt2_loss_sum_async(model);
    if (want_loss && comm->world > 1) comm->ops->sum_in_place(comm, loss_sum);
    optimizer_grad_sum_squares(opt, ops, ddp->shard_grads);
    /* A NaN/Inf loss makes the norm NaN. Folded in before the norm's sum
     * over ranks, or once the loss itself is summed, so that every rank
     * skips alike (zero_stage 0 sums no norm: a NaN loss there shows in the
     * all-reduced gradients anyway). */
    if (want_loss || comm->world == 1 || ddp->zero_stage == 1)
        ops->nonfinite_fold(opt->grad_sum_squares, loss_sum);
    ddp_sum_shards(ddp, opt->grad_sum_squares);
    optimizer_clip(opt, ops, cfg->grad_clip);
    optimizer_step(opt, ops, model->params, ddp->shard_grads, hp);
    ddp_gather_params(ddp, model->params);
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

int train_run(const config *cfg, dist_state *dist) {
    gpt2_layout lay;
    layout_build(&lay, cfg->n_layer, cfg->n_embd, cfg->n_head, cfg->vocab_size,
                 cfg->padded_vocab_size, cfg->block_size);
    static char config_text[16384];
    config_format(cfg, config_text, sizeof config_text);
    char run_dir[1100];
    snprintf(run_dir, sizeof run_dir, "%s/%s", cfg->out_dir, cfg->run_name);
    memory_estimate mem = memory_estimate_for(cfg, &lay, cfg->world);
    if (dist->rank == 0) {
        print_run_header(cfg, cfg->world, &lay, run_dir, config_text);
        memory_print(stdout, &mem, cfg, lay.n_params);
        fflush(stdout);
    }
    if (cfg->dry_run) {
        layout_free(&lay);
        return 0;
    }

    signals_install();
    const kernel_ops *ops = backend_select(cfg, dist);
    preflight_check(cfg, &lay, dist, ops); /* before anything of the model is allocated */
    if (cfg->profile_ops) ops = ops_profile_wrap(ops);
    const double peak_flops = backend_peak_flops(cfg, dist);
    const double flops_per_token = layout_flops_per_token(&lay, cfg->seq_len);
    /* Before the run directory is created: a bad HellaSwag file or tokenizer
     * ends the run here and leaves nothing behind. */
    run_watch *watch = watch_open(cfg, dist->rank, dist->world, run_dir);
    if (dist->rank == 0) make_dirs_or_fail(run_dir);
    /* Before anything is read or written there: a second run ends here. */
    run_lock lock;
    run_lock_acquire(&lock, run_dir, dist->rank);
    /* Rank 0's share of a checkpoint (model.h5 and its shard), for the time
     * limit's save estimate until a save is measured. */
    run_stop stopper;
    run_stop_init(&stopper, cfg, run_dir, dist->rank, 4.0 * lay.n_elements + mem.optimizer);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    char resume_dir[CKPT_PATH_MAX];
    const bool resuming = ckpt_resolve_resume(cfg, run_dir, resume_dir, sizeof resume_dir);
    const int B = cfg->micro_batch, T = cfg->seq_len;
    token_dataset train_ds, val_ds;
    open_dataset(&train_ds, "train_data", cfg->train_data, cfg);
    epochs_warn(cfg, &train_ds, dist->rank);
    const int do_eval = cfg->eval_every > 0 && cfg->eval_batches > 0;
    if (do_eval) open_dataset(&val_ds, "val_data", cfg->val_data, cfg);
    data_loader train_ld, val_ld;
    loader_init(&train_ld, &train_ds, cfg->seed, true);
    if (do_eval) loader_init(&val_ld, &val_ds, cfg->seed, false);

    gpt2_model model;
    const gpt2_options model_opt = {.recompute_gelu = cfg->recompute_gelu};
    gpt2_create_with(&model, &lay, ops, B, T, &model_opt);
    float *host_params = xmalloc(lay.n_elements * sizeof(float));
    initial_weights(cfg, &lay, resuming, dist->rank, host_params);
    if (cfg->save_init && !resuming && dist->rank == 0)
        save_initial_weights(run_dir, &lay, host_params, config_text);
    ops->upload_f32(model.params, host_params, lay.n_elements);
    communicator *comm = backend_communicator(cfg, dist, ops);
    data_parallel ddp;
    comm_range *pieces = xmalloc(((size_t)lay.n_layer + 2) * sizeof(comm_range));
    const int n_pieces = forward_gather_pieces(&lay, pieces);
    ddp_init(&ddp, comm, ops, lay.n_elements, cfg->zero_stage, cfg->bucket_mb, model.grads,
             pieces, n_pieces);
    free(pieces);
    gpt2_set_params_needed(&model, ddp_params_needed, &ddp);
    adamw_state opt;
    optimizer_init(&opt, &lay, ops, ddp.lo, ddp.hi, host_params);
    ckpt_ctx ckpt = {.cfg = cfg, .config_text = config_text, .run_dir = run_dir, .lay = &lay,
                     .ops = ops, .ddp = &ddp, .opt = &opt, .host_scratch = host_params,
                     .train_samples = train_ds.n_samples};
    ckpt_progress progress = {0};
    if (resuming) ckpt_load(&ckpt, resume_dir, model.params, &progress);
    /* Only now, with the run's state loaded: a failed load deletes nothing. */
    if (dist->rank == 0 && ckpt_remove_partial(run_dir) > 0)
        printf("removed partial checkpoint directories (interrupted saves) from %s\n", run_dir);
    adamw_hparams hp = {.beta1 = (float)cfg->beta1, .beta2 = (float)cfg->beta2,
                        .eps = (float)cfg->eps, .weight_decay = (float)cfg->weight_decay};
    char trace_path[1200];
    snprintf(trace_path, sizeof trace_path, "%s/trace_rank%d.jsonl", run_dir, dist->rank);
    if (cfg->comm_trace) remove(trace_path);

    metrics_log log;
    metrics_open(&log, run_dir, dist->rank, cfg->max_steps);
    int32_t *inputs = xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *targets = xmalloc((size_t)B * T * sizeof(int32_t));
    const int64_t samples_per_step = cfg->total_batch / T;
    bool preempted = false, gave_up = false;
    int stop_reasons = 0;
    nonfinite_guard guard;
    nonfinite_init(&guard, cfg->max_bad_steps);
    /* A step's time runs from the end of the previous step (or of the
     * evaluation or checkpoint between them), so that it includes the loop's
     * own host work: logging, the stop agreement, reading the batch. */
    double step_start = clock_ms();
    eta_clock eta;
    eta_start(&eta, step_start);
    for (int step = progress.step; step < cfg->max_steps && !preempted; step++) {
        if (do_eval && step % cfg->eval_every == 0) {
            double t0 = clock_ms();
            double val = val_loss_mean(&model, &val_ld, cfg->eval_batches, B, T, comm->rank,
                                       comm->world, inputs, targets);
            metrics_eval(&log, step, val, clock_ms() - t0);
            watch_hellaswag(watch, &model, comm, &log, step);
            run_stop_note_eval(&stopper, clock_ms() - t0);
            step_start = clock_ms();
            eta_periodic(&eta, ETA_EVAL, step_start - t0, cfg->eval_every);
        }
        if (watch_sample_due(watch, step)) {
            eta_periodic(&eta, ETA_SAMPLE, watch_sample(watch, &model, step), cfg->sample_every);
            step_start = clock_ms();
        }
        hp.lr = (float)schedule_lr(cfg, step);
        const bool logged = cfg->log_every > 0 && ((step + 1) % cfg->log_every == 0 ||
                                                   step == 0 || step + 1 == cfg->max_steps);
        train_step(&model, &ddp, &opt, &train_ld, cfg, progress.samples_consumed, &hp, inputs,
                   targets, logged, nonfinite_test_poison(&guard, step + 1, dist->rank));
        /* While the device works through the step, the ranks agree whether a
         * stop signal, the STOP file or the time limit ends the run after it
         * (a host collective). */
        const bool eval_next = do_eval && (step + 1) % cfg->eval_every == 0;
        stop_reasons = run_stop_agree(&stopper, eval_next);
        preempted = stop_reasons != 0;
        ops->synchronize();
        ddp_step_done(&ddp);
        const bool skipped = nonfinite_step_skipped(&guard, &opt, ops);
        backend_sample_memory(ops);
        const double ms = clock_ms() - step_start;
        step_start = clock_ms();
        eta_step(&eta, ms);
        run_stop_note_step(&stopper, ms);
        if (cfg->profile_ops) ops_profile_step_done();
        progress = (ckpt_progress){.step = step + 1, .lr = hp.lr,
                                   .samples_consumed = progress.samples_consumed + samples_per_step};
        if (cfg->comm_trace && comm->world > 1) buckets_write_trace(&ddp.buckets, trace_path, step + 1);
        if (logged && !skipped) {
            /* The mean over ranks and micro-steps (every rank the same). */
            const double loss =
                gpt2_loss_sum_read(&model) / ((double)model.loss_tokens * comm->world);
            const double grad_norm = optimizer_grad_norm(&opt, ops);
            step_record r = {.step = step + 1, .loss = loss, .lr = hp.lr, .grad_norm = grad_norm,
                             .ms = ms, .tokens_per_s = cfg->total_batch / (ms / 1e3), .mfu = -1,
                             .elapsed_s = eta_elapsed_s(&eta, step_start),
                             .eta_s = eta_left_s(&eta, cfg->max_steps - (step + 1))};
            /* MFU per GPU: this rank's share of the tokens at the device's peak. */
            if (peak_flops > 0)
                r.mfu = r.tokens_per_s / comm->world * flops_per_token / peak_flops;
            metrics_step(&log, &r);
        }
        if (skipped) {
            log_skipped_step(&model, comm, &opt, ops, &log, &guard, step + 1, logged);
            if (nonfinite_give_up(&guard)) {
                if (dist->rank == 0) report_give_up(&guard, step + 1, run_dir);
                gave_up = true;
                break;
            }
        }
        /* A skipped step's state is the last good one: saving it is safe. */
        if (preempted || checkpoint_due(cfg, step + 1)) {
            const double t0 = clock_ms();
            ckpt_save(&ckpt, &progress);
            run_stop_note_save(&stopper, (clock_ms() - t0) / 1e3);
            step_start = clock_ms();
            eta_periodic(&eta, ETA_CHECKPOINT, step_start - t0, cfg->checkpoint_every);
        }
    }
    ddp_params_ready(&ddp); /* what follows reads the parameters outside a forward */
    if (preempted && !gave_up) run_stop_report(&stopper, stop_reasons, progress.step);
    if (do_eval && !preempted && !gave_up) {
        double t0 = clock_ms();
        double val = val_loss_mean(&model, &val_ld, cfg->eval_batches, B, T, comm->rank,
                                   comm->world, inputs, targets);
        metrics_eval(&log, cfg->max_steps, val, clock_ms() - t0);
        watch_hellaswag(watch, &model, comm, &log, cfg->max_steps);
    }
    if (!preempted && !gave_up) watch_sample(watch, &model, cfg->max_steps); /* ends with a sample */
    if (dist->rank == 0 && !preempted && !gave_up) {
        ops->download_f32(host_params, model.params, lay.n_elements);
        char path[1200];
        snprintf(path, sizeof path, "%s/model.h5", run_dir);
        weights_save(path, &lay, host_params, config_text);
        printf("saved weights to %s\n", path);
    }
    if (cfg->profile_ops && dist->rank == 0) backend_print_profile(ops, stdout);
    ddp_report(&ddp, model.params, lay.n_elements);
    backend_report_memory(ops, &mem);
    watch_close(watch);
    metrics_close(&log);
    free(inputs);
    free(targets);
    free(host_params);
    optimizer_free(&opt, ops);
    ddp_free(&ddp);
    comm->ops->destroy(comm);
    gpt2_free(&model);
    loader_free(&train_ld);
    dataset_close(&train_ds);
    if (do_eval) {
        loader_free(&val_ld);
        dataset_close(&val_ds);
    }
    layout_free(&lay);
    run_lock_release(&lock);
    if (gave_up) return EXIT_NONFINITE;
    return preempted ? EXIT_PREEMPTED : 0;
}
