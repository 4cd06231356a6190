/* The training run: set-up (run.c), the step loop and the end of the run.
 * Each step (step.c) is queued on the device while the ranks agree whether
 * to stop after it; then it is logged, a non-finite one skipped, and
 * periodic validation, samples and checkpoints run between steps. A stop
 * saves and exits 3; a completed run ends with a validation, a sample and
 * its final weights in the run directory. */
#include "train/train.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "dist/mpi_watch.h"
#include "eval/val_loss.h"
#include "kernels/ops_profile.h"
#include "model/fp8_layers.h"
#include "optim/schedule.h"
#include "train/backend.h"
#include "train/run.h"
#include "train/safety/streams.h"
#include "train/step.h"

/* A batch read that failed on some rank (a shard changed under the run:
 * shorter, or holding ids out of the vocabulary; data/shard.h) ends every
 * rank with exit 1 after the step that read it, before anything of that
 * step is saved; a save in flight (of an earlier step) is finished first.
 * Collective, once the ranks know that one failed. */
_Noreturn static void train_data_failed(run_state *r, const data_loader *ld, const char *key) {
    const char *err = loader_error(ld);
    if (r->saver) ckpt_saver_wait(r->saver);
    /* Rank 0's view of the run directory (another node may not share it). */
    char newest[CKPT_PATH_MAX] = "";
    if (r->dist->rank == 0 && ckpt_find_newest(r->run_dir, newest, sizeof newest) < 0)
        newest[0] = '\0';
    group_bcast(&r->dist->job, newest, sizeof newest, 0);
    static char msg[4096];
    if (err) {
        char resume[CKPT_PATH_MAX + 128];
        if (newest[0])
            snprintf(resume, sizeof resume, "the same command then resumes from %s", newest);
        else
            snprintf(resume, sizeof resume, "this run has no checkpoint yet to resume from");
        snprintf(msg, sizeof msg,
                 "%s: %s. A run reads its shards until it ends: give it its own copy, and write "
                 "new data under new names (a run keeps reading the file it opened, not one "
                 "renamed over it). Restore the file; %s",
                 key, err, resume);
    }
    fail_collective_any(EXIT_FATAL, err ? msg : NULL);
    FAIL("%s: a rank failed to read its batch", key); /* not reached: one rank has err */
}

/* The same for reads outside the step (validation): one all-reduce. */
static void train_check_data(run_state *r, const data_loader *ld, const char *key) {
    int bad = loader_error(ld) != NULL;
    group_allreduce_int(&r->dist->job, &bad, 1, GROUP_BOR);
    if (bad) train_data_failed(r, ld, key);
}

/* Validation loss and HellaSwag at step; returns when they began (clock_ms). */
static double train_eval(run_state *r, int step) {
    const config *cfg = r->cfg;
    mpi_watch_phase("the evaluation at step %d", step);
    const double t0 = clock_ms();
    const double val = val_loss_mean(&r->model, &r->val_ld, r->eval_batches, cfg->micro_batch,
                                     cfg->seq_len, &r->dist->dp, r->inputs, r->targets);
    train_check_data(r, &r->val_ld, "val_data");
    metrics_eval(&r->log, step, val, clock_ms() - t0);
    watch_hellaswag(r->watch, &r->model, r->comm, &r->log, step);
    return t0;
}

/* An evaluation between steps, timed for the time limit and the ETA. */
static void train_eval_periodic(run_state *r, int step) {
    const double t0 = train_eval(r, step);
    run_stop_note_eval(&r->stopper, clock_ms() - t0);
    r->step_start = clock_ms();
    eta_periodic(&r->eta, ETA_EVAL, r->step_start - t0, r->cfg->eval_every);
}

static void train_sample_periodic(run_state *r, int step) {
    eta_periodic(&r->eta, ETA_SAMPLE, watch_sample(r->watch, &r->model, step),
                 r->cfg->sample_every);
    r->step_start = clock_ms();
}

static bool step_logged(const config *cfg, int step) {
    return cfg->log_every > 0 &&
           ((step + 1) % cfg->log_every == 0 || step == 0 || step + 1 == cfg->max_steps);
}

/* The step's time, from the end of the previous one; the next starts now. */
static double train_time_step(run_state *r) {
    const double ms = clock_ms() - r->step_start;
    r->step_start = clock_ms();
    eta_step(&r->eta, ms);
    run_stop_note_step(&r->stopper, ms);
    if (r->cfg->profile_ops) ops_profile_step_done();
    return ms;
}

/* The loss of the step just done, once its sum over ranks is: the mean over
 * ranks and micro-steps (every rank the same). */
static double step_mean_loss(run_state *r) {
    return gpt2_loss_sum_read(&r->model) / ((double)r->model.loss_tokens * r->comm->world);
}

/* Rank 0 logs step (1-based). */
static void train_log_step(run_state *r, int step, double ms) {
    const config *cfg = r->cfg;
    const double loss = step_mean_loss(r);
    const double grad_norm = optimizer_grad_norm(r->opt);
    step_record rec = {.step = step,
                       .loss = loss,
                       .lr = r->lr,
                       .grad_norm = grad_norm,
                       .ms = ms,
                       .tokens_per_s = cfg->total_batch / (ms / 1e3),
                       .mfu = -1,
                       .elapsed_s = eta_elapsed_s(&r->eta, r->step_start),
                       .eta_s = eta_left_s(&r->eta, cfg->max_steps - step)};
    /* MFU per GPU: this rank's share of the tokens at the device's peak. */
    if (r->peak_flops > 0)
        rec.mfu = rec.tokens_per_s / r->comm->world * r->flops_per_token / r->peak_flops;
    metrics_step(&r->log, &rec);
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

/* Rank 0 logs skipped step (1-based) with its loss (summed over ranks here
 * when the step was not logged: every rank knows of the skip, the factor is
 * global). Returns false when max_bad_steps in a row end the run. */
static bool train_skip_step(run_state *r, int step, bool loss_summed) {
    communicator *comm = r->comm;
    const nonfinite_guard *g = &r->guard;
    if (!loss_summed && comm->world > 1) comm->ops->sum_in_place(comm, r->model.loss_sum);
    const double loss = step_mean_loss(r);
    metrics_skip(&r->log, step, loss, optimizer_grad_norm(r->opt), g->in_a_row, g->max_in_a_row,
                 g->total);
    if (!nonfinite_give_up(g)) return true;
    if (r->dist->rank == 0) report_give_up(g, step, r->run_dir);
    r->gave_up = true;
    return false;
}

/* Runs step (0-based) and accounts for it: the stop agreement while the
 * device works, then its time, the progress, the logs. Returns false when
 * the non-finite guard ends the run. */
static bool train_loop_step(run_state *r, int step) {
    const config *cfg = r->cfg;
    r->lr = (float)schedule_lr(cfg, step);
    const bool logged = step_logged(cfg, step);
    mpi_watch_phase("step %d", step + 1); /* named should a rank stall meanwhile */
    train_step(r, logged, nonfinite_test_poison(&r->guard, step + 1, r->dist->rank));
    /* While the device works through the step, the ranks agree whether a
     * stop signal, the STOP file or the time limit ends the run after it,
     * or a batch read failed (one host collective for all of them). */
    const bool eval_next = r->do_eval && (step + 1) % cfg->eval_every == 0;
    r->stop_reasons = run_stop_agree(&r->stopper, eval_next, loader_error(&r->train_ld) != NULL);
    if (r->stop_reasons & STOP_DATA) train_data_failed(r, &r->train_ld, "train_data");
    r->preempted = r->stop_reasons != 0;
    if (r->saver) ckpt_saver_poll(r->saver); /* publishes a background save once written */
    r->ops->synchronize();
    ddp_step_done(&r->ddp);
    const bool skipped = nonfinite_step_skipped(&r->guard, r->opt);
    backend_sample_memory(r->ops);
    const double ms = train_time_step(r);
    r->progress = (ckpt_progress){.step = step + 1,
                                  .lr = r->lr,
                                  .samples_consumed = r->progress.samples_consumed +
                                                      cfg->total_batch / cfg->seq_len};
    if (cfg->comm_trace && r->comm->world > 1)
        buckets_write_trace(&r->ddp.buckets, r->trace_path, step + 1);
    if (logged && !skipped) train_log_step(r, step + 1, ms);
    streams_check(r->run_dir); /* a closed standard output ends nothing */
    if (skipped) return train_skip_step(r, step + 1, logged);
    return true;
}

static bool checkpoint_due(const config *cfg, int steps_done) {
    return cfg->checkpoint_every > 0 &&
           (steps_done % cfg->checkpoint_every == 0 || steps_done == cfg->max_steps);
}

/* A save: in the background where the run has a saver (a stop's final save
 * then waits for its files), else waiting for the disk. */
static void train_checkpoint(run_state *r) {
    const double t0 = clock_ms();
    mpi_watch_phase("the checkpoint of step %d", r->progress.step);
    if (r->saver) {
        ckpt_saver_start(r->saver, &r->progress);
        if (r->preempted) ckpt_saver_wait(r->saver);
    } else {
        ckpt_save_report rep;
        ckpt_save(&r->ckpt, &r->progress, &rep);
        run_note_save(r, &rep);
    }
    r->step_start = clock_ms();
    eta_periodic(&r->eta, ETA_CHECKPOINT, r->step_start - t0, r->cfg->checkpoint_every);
}

/* From the resumed step to max_steps, a stop or the non-finite guard's end. */
static void train_loop(run_state *r) {
    const config *cfg = r->cfg;
    /* A step's time runs from the end of the previous step (or of the
     * evaluation or checkpoint between them), so that it includes the loop's
     * own host work: logging, the stop agreement, reading the batch. */
    r->step_start = clock_ms();
    eta_start(&r->eta, r->step_start);
    for (int step = r->progress.step; step < cfg->max_steps && !r->preempted; step++) {
        if (r->do_eval && step % cfg->eval_every == 0) train_eval_periodic(r, step);
        if (watch_sample_due(r->watch, step)) train_sample_periodic(r, step);
        if (!train_loop_step(r, step)) break;
        /* A skipped step's state is the last good one: saving it is safe. */
        if (r->preempted || checkpoint_due(cfg, step + 1)) train_checkpoint(r);
    }
    /* The last save's files, before anything else writes HDF5 (the final
     * weights) and before the run ends in any way. */
    if (r->saver) ckpt_saver_wait(r->saver);
    ddp_params_ready(&r->ddp); /* what follows reads the parameters outside a forward */
}

static void save_final_weights(run_state *r) {
    r->ops->download_f32(r->host_params, r->model.params, r->lay.n_elements);
    run_save_weights(r, "model.h5", "weights");
}

/* A completed run ends with a validation, a sample and its weights; a
 * stopped one says why; then the reports of the whole run. */
static void train_finish(run_state *r) {
    const config *cfg = r->cfg;
    const int rank = r->dist->rank;
    const bool completed = !r->preempted && !r->gave_up;
    mpi_watch_phase("the end of the run");
    if (r->preempted && !r->gave_up)
        run_stop_report(&r->stopper, r->stop_reasons, r->progress.step);
    if (r->do_eval && completed) train_eval(r, cfg->max_steps);
    if (completed) watch_sample(r->watch, &r->model, cfg->max_steps);
    if (rank == 0 && completed) save_final_weights(r);
    if (cfg->profile_ops && rank == 0) {
        backend_print_profile(r->ops, stdout);
        if (r->model.fp8) fp8_layers_print_ranges(r->model.fp8, r->ops, stdout);
    }
    ddp_report(&r->ddp, r->model.params, r->lay.n_elements);
    backend_report_memory(r->ops, &r->dist->job, &r->mem);
}

int train_run(const config *cfg, dist_state *dist) {
    run_state *r = xcalloc(1, sizeof *r);
    mpi_watch_phase("the start of the run");
    run_plan(r, cfg, dist);
    int rc = 0;
    if (cfg->dry_run) {
        layout_free(&r->lay);
    } else if (!run_setup(r)) {
        layout_free(&r->lay); /* finished: nothing to do */
    } else {
        train_loop(r);
        train_finish(r);
        rc = run_exit_code(r);
        run_teardown(r);
    }
    free(r);
    return rc;
}
