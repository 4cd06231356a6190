/* recompute_gelu on the CPU backend: a model that keeps no per-block GELU
 * output (backward recomputes it from fch) must give bitwise the same loss
 * and gradients as one that keeps them, over two forward+backward passes (the
 * second accumulates into the first's gradients, as gradient accumulation
 * does), and must allocate 4 C x B x T elements per block less, one buffer
 * more. Why bitwise: the recomputation is the same function on the same fp32
 * input as the forward's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "kernels/ops.h"
#include "model/gpt2.h"
#include "model/layout.h"
#include "model/rng.h"

enum { L = 3, C = 64, NH = 2, V = 50257, VP = 50304, B = 2, T = 16 };

static size_t counted;
static int failed;

static void expect(int ok, const char *what) {
    if (!ok) {
        printf("FAIL: %s\n", what);
        failed = 1;
    }
}

static void *count_alloc(size_t bytes) {
    counted += bytes;
    return ops_cpu.alloc(bytes);
}

/* Two forward+backward passes over fixed batches; returns the summed loss
 * and leaves the gradients in m->grads. Counts the model's allocations. */
static double train_two(gpt2_model *m, const gpt2_layout *lay, const float *params, bool recompute,
                        size_t *bytes) {
    static kernel_ops counting;
    counting = ops_cpu;
    counting.alloc = count_alloc;
    counted = 0;
    const gpt2_options opt = {.recompute_gelu = recompute};
    gpt2_create_with(m, lay, &counting, B, T, &opt);
    *bytes = counted;
    memcpy(m->params, params, lay->n_elements * sizeof(float));
    rng_state rng;
    rng_seed(&rng, 7);
    int32_t inputs[B * T], targets[B * T];
    double loss = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < B * T; i++) {
            inputs[i] = (int32_t)(rng_next(&rng) % V);
            targets[i] = (int32_t)(rng_next(&rng) % V);
        }
        loss += gpt2_forward(m, inputs, targets, B, T, 1.0f / (B * T));
        gpt2_backward(m, NULL, NULL);
    }
    return loss;
}

int main(void) {
    gpt2_layout lay;
    layout_build(&lay, L, C, NH, V, VP, T);
    float *params = xmalloc(lay.n_elements * sizeof(float));
    gpt2_init_params(&lay, 1337, params);

    gpt2_model keep, recompute;
    size_t keep_bytes, recompute_bytes;
    const double loss_keep = train_two(&keep, &lay, params, false, &keep_bytes);
    const double loss_recompute = train_two(&recompute, &lay, params, true, &recompute_bytes);
    const size_t grad_bytes = lay.n_elements * sizeof(float);
    const int same_grads = memcmp(keep.grads, recompute.grads, grad_bytes) == 0;
    const size_t saved = (size_t)(L - 1) * B * T * 4 * C * sizeof(float);

    printf("loss keep %.9f recompute %.9f\n", loss_keep, loss_recompute);
    expect(loss_keep == loss_recompute, "losses differ");
    expect(same_grads, "gradients differ");
    printf("model bytes keep %zu recompute %zu (saves %zu, expected %zu)\n", keep_bytes,
           recompute_bytes, keep_bytes - recompute_bytes, saved);
    expect(keep_bytes - recompute_bytes == saved, "memory not saved");
    gpt2_free(&keep);
    gpt2_free(&recompute);
    free(params);
    layout_free(&lay);
    puts(failed ? "test_recompute_gelu: FAILED" : "test_recompute_gelu: OK");
    return failed;
}
