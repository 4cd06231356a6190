/* The training loop: for each optimizer step, grad_accum micro-steps of
 * forward + backward on this rank's part of the global batch, gradient
 * reduction across ranks, global-norm clipping, AdamW, logging; periodic
 * validation; final weights saved to the run directory. */
#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "data/loader.h"
#include "dist/fail.h"
#include "dist/weights_h5.h"
#include "kernels/ops.h"
#include "model/gpt2.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "train/schedule.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* mkdir -p; returns 0 or fails naming the path. */
static void make_dirs(const char *path) {
    char buf[2048];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) FAIL("path too long: %s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) FAIL("cannot create %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) FAIL("cannot create %s: %s", buf, strerror(errno));
}

static const kernel_ops *select_backend(const config *cfg) {
    /* config_validate resolved "auto" and rejected backends not compiled in. */
    if (strcmp(cfg->device, "cpu") == 0) return &ops_cpu;
    FAIL("device=%s: backend not available in this build", cfg->device);
}

static void open_dataset(token_dataset *ds, const char *key, const char *pattern,
                         const config *cfg) {
    char err[1024];
    if (dataset_open(ds, pattern, cfg->vocab_size, cfg->seq_len, err, sizeof err) != 0)
        FAIL("%s: %s", key, err);
}

/* Mean of a per-rank value over all ranks. */
static double mean_over_ranks(double value, const dist_state *dist) {
    if (dist->world == 1) return value;
    double sum = 0.0;
    MPI_CHECK(MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    return sum / dist->world;
}

/* Mean validation loss over eval_batches batches; rank r takes the r-th
 * micro-batch of every group of `world`, so ranks read disjoint sequences. */
static double evaluate(gpt2_model *model, data_loader *val, const config *cfg,
                       const dist_state *dist, int32_t *inputs, int32_t *targets) {
    const int B = cfg->micro_batch, T = cfg->seq_len;
    double sum = 0.0;
    for (int k = 0; k < cfg->eval_batches; k++) {
        int64_t pos = loader_batch_position(0, k, dist->rank, dist->world, B);
        loader_read(val, pos, B, inputs, targets);
        sum += gpt2_forward(model, inputs, targets, B, T, 0.0f);
    }
    return mean_over_ranks(sum / cfg->eval_batches, dist);
}

/* Sums gradients over ranks (plain data parallelism). */
static void reduce_gradients(gpt2_model *model, const dist_state *dist) {
    if (dist->world == 1) return;
    CHECK(model->ops->elem_bytes == sizeof(float), "MPI gradient reduction expects fp32");
    size_t n = model->lay.n_elements;
    /* MPI counts are int: reduce in pieces below 2^30 elements. */
    for (size_t off = 0; off < n; off += (size_t)1 << 30) {
        size_t len = n - off < ((size_t)1 << 30) ? n - off : ((size_t)1 << 30);
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, (float *)model->grads + off, (int)len, MPI_FLOAT,
                                MPI_SUM, MPI_COMM_WORLD));
    }
}

static void print_run_header(const config *cfg, const dist_state *dist, const gpt2_layout *lay,
                             const char *run_dir, const char *config_text) {
    if (dist->rank != 0) return;
    printf("gpt2_ddp %s | %d rank(s) | device %s | run dir %s\n", GPT2_VERSION, dist->world,
           cfg->device, run_dir);
    printf("---- resolved config ----\n%s-------------------------\n", config_text);
    printf("model: %d layers, %d wide, %d heads, vocab %d (padded %d): %zu parameters\n",
           lay->n_layer, lay->n_embd, lay->n_head, lay->vocab_size, lay->padded_vocab_size,
           lay->n_params);
    printf("batch: %lld tokens/step = %d ranks x %d micro-steps x %d x %d\n",
           (long long)cfg->total_batch, dist->world, cfg->grad_accum, cfg->micro_batch,
           cfg->seq_len);
    fflush(stdout);
}

int train_run(const config *cfg, dist_state *dist) {
    const kernel_ops *ops = select_backend(cfg);
    gpt2_layout lay;
    layout_build(&lay, cfg->n_layer, cfg->n_embd, cfg->n_head, cfg->vocab_size,
                 cfg->padded_vocab_size, cfg->block_size);
    static char config_text[16384];
    config_format(cfg, config_text, sizeof config_text);
    char run_dir[1100];
    snprintf(run_dir, sizeof run_dir, "%s/%s", cfg->out_dir, cfg->run_name);
    if (dist->rank == 0) make_dirs(run_dir);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    print_run_header(cfg, dist, &lay, run_dir, config_text);

    const int B = cfg->micro_batch, T = cfg->seq_len;
    token_dataset train_ds, val_ds;
    open_dataset(&train_ds, "train_data", cfg->train_data, cfg);
    const int do_eval = cfg->eval_every > 0 && cfg->eval_batches > 0;
    if (do_eval) open_dataset(&val_ds, "val_data", cfg->val_data, cfg);
    data_loader train_ld, val_ld;
    loader_init(&train_ld, &train_ds, cfg->seed, true);
    if (do_eval) loader_init(&val_ld, &val_ds, cfg->seed, false);

    gpt2_model model;
    gpt2_create(&model, &lay, ops, B, T);
    float *host_params = xmalloc(lay.n_elements * sizeof(float));
    gpt2_init_params(&lay, cfg->seed, host_params);
    ops->upload_f32(model.params, host_params, lay.n_elements);
    adamw_state opt;
    optimizer_init(&opt, &lay, ops, 0, lay.n_elements, host_params);
    const adamw_hparams hp_base = {.beta1 = (float)cfg->beta1, .beta2 = (float)cfg->beta2,
                                   .eps = (float)cfg->eps, .weight_decay = (float)cfg->weight_decay};

    metrics_log log;
    metrics_open(&log, run_dir, dist->rank, cfg->max_steps);
    int32_t *inputs = xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *targets = xmalloc((size_t)B * T * sizeof(int32_t));
    const int64_t seqs_per_step = (int64_t)B * dist->world * cfg->grad_accum;
    /* Every token of the global batch carries the same weight in the loss:
     * sum over ranks and micro-steps of dloss-scaled gradients is the mean. */
    const float dloss = 1.0f / ((float)B * T * cfg->grad_accum * dist->world);

    for (int step = 0; step < cfg->max_steps; step++) {
        if (do_eval && step % cfg->eval_every == 0) {
            double t0 = now_ms();
            double val = evaluate(&model, &val_ld, cfg, dist, inputs, targets);
            metrics_eval(&log, step, val, now_ms() - t0);
        }
        double t0 = now_ms();
        ops->zero(model.grads, lay.n_elements * ops->elem_bytes);
        double loss_sum = 0.0;
        for (int micro = 0; micro < cfg->grad_accum; micro++) {
            int64_t pos = loader_batch_position(step * seqs_per_step, micro, dist->rank,
                                                dist->world, B);
            loader_read(&train_ld, pos, B, inputs, targets);
            loss_sum += gpt2_forward(&model, inputs, targets, B, T, dloss);
            gpt2_backward(&model, NULL, NULL);
        }
        reduce_gradients(&model, dist);
        double grad_norm = sqrt(optimizer_grad_sum_squares(&opt, ops, model.grads));
        float clip_scale = optimizer_clip_scale(grad_norm, cfg->grad_clip);
        adamw_hparams hp = hp_base;
        hp.lr = (float)schedule_lr(cfg, step);
        optimizer_step(&opt, ops, model.params, model.grads, &hp, clip_scale);
        double loss = mean_over_ranks(loss_sum / cfg->grad_accum, dist);
        ops->synchronize();
        double ms = now_ms() - t0;
        if (cfg->log_every > 0 && ((step + 1) % cfg->log_every == 0 || step == 0 ||
                                   step + 1 == cfg->max_steps)) {
            step_record r = {.step = step + 1, .loss = loss, .lr = hp.lr, .grad_norm = grad_norm,
                             .ms = ms, .tokens_per_s = cfg->total_batch / (ms / 1e3), .mfu = -1};
            metrics_step(&log, &r);
        }
    }
    if (do_eval) {
        double t0 = now_ms();
        double val = evaluate(&model, &val_ld, cfg, dist, inputs, targets);
        metrics_eval(&log, cfg->max_steps, val, now_ms() - t0);
    }
    if (dist->rank == 0) {
        ops->download_f32(host_params, model.params, lay.n_elements);
        char path[1200];
        snprintf(path, sizeof path, "%s/model.h5", run_dir);
        weights_save(path, &lay, host_params, config_text);
        printf("saved weights to %s\n", path);
    }
    metrics_close(&log);
    free(inputs);
    free(targets);
    free(host_params);
    optimizer_free(&opt, ops);
    gpt2_free(&model);
    loader_free(&train_ld);
    dataset_close(&train_ds);
    if (do_eval) {
        loader_free(&val_ld);
        dataset_close(&val_ds);
    }
    layout_free(&lay);
    return 0;
}
