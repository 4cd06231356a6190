/* Runs the trainer's own model and optimizer code on given batches and writes
 * what the PyTorch reference (test_torch_parity.py) compares: the initial
 * weights, gradients from two accumulated half batches of the first batch,
 * and for every AdamW step (clipping, weight decay) the loss, the named
 * gradients and the parameters after the update.
 * usage: parity_driver OUT_DIR TOKENS.bin STEPS B T N_LAYER N_EMBD N_HEAD */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "io/weights_h5.h"
#include "kernels/ops.h"
#include "model/gpt2.h"
#include "optim/optimizer.h"

static const kernel_ops *ops = &ops_cpu;

static void save_buffer(const char *dir, const char *name, const gpt2_layout *lay,
                        const void *buf) {
    float *host = xmalloc(lay->n_elements * sizeof(float));
    ops->download_f32(host, buf, lay->n_elements);
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    weights_save(path, lay, host, NULL);
    free(host);
}

/* Splits batch rows [row0, row0+rows) of a (B, T+1) token block into inputs/targets. */
static void split_batch(const int32_t *block, int row0, int rows, int T, int32_t *inputs,
                        int32_t *targets) {
    for (int b = 0; b < rows; b++)
        for (int t = 0; t < T; t++) {
            inputs[b * T + t] = block[(row0 + b) * (T + 1) + t];
            targets[b * T + t] = block[(row0 + b) * (T + 1) + t + 1];
        }
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: %s OUT_DIR TOKENS.bin STEPS B T N_LAYER N_EMBD N_HEAD\n", argv[0]);
        return 2;
    }
    const char *out = argv[1];
    const int steps = atoi(argv[3]), B = atoi(argv[4]), T = atoi(argv[5]);
    const int L = atoi(argv[6]), C = atoi(argv[7]), NH = atoi(argv[8]);
    gpt2_layout lay;
    layout_build(&lay, L, C, NH, 50257, 50304, T);

    size_t block = (size_t)B * (T + 1);
    int32_t *tokens = xmalloc((size_t)steps * block * sizeof(int32_t));
    FILE *f = fopen(argv[2], "rb");
    CHECK(f && fread(tokens, sizeof(int32_t), steps * block, f) == steps * block,
          "cannot read %zu tokens from %s", steps * block, argv[2]);
    fclose(f);

    gpt2_model model;
    gpt2_create(&model, &lay, ops, B, T);
    float *host = xmalloc(lay.n_elements * sizeof(float));
    gpt2_init_params(&lay, 1337, host);
    ops->upload_f32(model.params, host, lay.n_elements);
    save_buffer(out, "init.h5", &lay, model.params);

    int32_t *inputs = xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *targets = xmalloc((size_t)B * T * sizeof(int32_t));
    char path[1024], name[64];
    snprintf(path, sizeof path, "%s/results.txt", out);
    FILE *res = fopen(path, "w");
    CHECK(res, "cannot write %s", path);

    /* The first batch as two accumulated half batches. */
    for (int half = 0; half < 2; half++) {
        split_batch(tokens, half * B / 2, B / 2, T, inputs, targets);
        gpt2_forward(&model, inputs, targets, B / 2, T, 1.0f / (B * T));
        gpt2_backward(&model, NULL, NULL);
    }
    save_buffer(out, "grads0_accum.h5", &lay, model.grads);

    /* AdamW steps with clipping and decoupled weight decay on 2-D tensors. */
    config cfg;
    memset(&cfg, 0, sizeof cfg); /* the optimizer reads its hyper-parameters only */
    cfg.lr = 1e-3, cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8, cfg.weight_decay = 0.1;
    optimizer *opt = optimizer_create(&optimizer_adamw, &cfg, &lay, ops, 0, lay.n_elements, host);
    const optimizer_schedule at_lr = {.lr = cfg.lr, .factor = 1.0};
    const double clip = 1.0;
    for (int s = 0; s < steps; s++) {
        ops->zero(model.grads, lay.n_elements * ops->elem_bytes);
        split_batch(tokens + s * block, 0, B, T, inputs, targets);
        float step_loss = gpt2_forward(&model, inputs, targets, B, T, 1.0f / (B * T));
        gpt2_backward(&model, NULL, NULL);
        optimizer_grad_sum_squares(opt, model.grads);
        optimizer_clip(opt, clip);
        const double norm = optimizer_grad_norm(opt);
        optimizer_step(opt, model.params, model.grads, &at_lr);
        fprintf(res, "step %d loss %.9g norm %.9g\n", s, step_loss, norm);
        snprintf(name, sizeof name, "grads_step%d.h5", s);
        save_buffer(out, name, &lay, model.grads);
        snprintf(name, sizeof name, "params_step%d.h5", s + 1);
        save_buffer(out, name, &lay, model.params);
    }
    fclose(res);
    optimizer_free(opt);
    gpt2_free(&model);
    layout_free(&lay);
    free(host);
    free(tokens);
    free(inputs);
    free(targets);
    return 0;
}
