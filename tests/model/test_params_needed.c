/* The forward's params_needed contract (model/gpt2.h), which ZeRO-1's
 * all-gather under the next forward relies on: every parameter tensor a
 * forward op reads was announced through the hook before that op, inside one
 * announced range, and the announcements of one forward come in forward
 * order (descending offsets: the order the all-gather queues its pieces in).
 * A kernel table wrapping the CPU one checks each parameter pointer an op is
 * given against the ranges announced so far. With a hook that announces
 * nothing the same checker must report violations (the test can fail). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/ops.h"
#include "model/gpt2.h"
#include "model/layout.h"

enum { L = 3, C = 64, NH = 1, V = 50257, VP = 50304, B = 2, T = 16, MAX_RANGES = 64 };

static const gpt2_layout *lay;
static const float *params;
static size_t ann_begin[MAX_RANGES], ann_end[MAX_RANGES];
static int n_ann, out_of_order, unannounced, checked;
static bool announcing;

static void hook(void *ctx, size_t begin, size_t end) {
    (void)ctx;
    if (!announcing || n_ann == MAX_RANGES) return;
    if (n_ann > 0 && begin >= ann_begin[n_ann - 1]) out_of_order++;
    ann_begin[n_ann] = begin;
    ann_end[n_ann++] = end;
}

/* p points at a parameter tensor (or at activations: ignored). */
static void check_param(const void *p) {
    const float *f = p;
    if (!f || f < params || f >= params + lay->n_elements) return;
    const size_t offset = (size_t)(f - params);
    size_t numel = 0;
    for (int i = 0; i < lay->n_tensors; i++)
        if (lay->tensors[i].offset == offset) numel = lay->tensors[i].numel;
    checked++;
    for (int k = 0; k < n_ann; k++)
        if (numel > 0 && ann_begin[k] <= offset && offset + numel <= ann_end[k]) return;
    unannounced++;
}

static void w_encoder_forward(void *out, const int32_t *inp, const void *wte, const void *wpe,
                              int b, int t, int c) {
    check_param(wte);
    check_param(wpe);
    ops_cpu.encoder_forward(out, inp, wte, wpe, b, t, c);
}
static void w_layernorm_forward(void *out, float *mean, float *rstd, const void *inp,
                                const void *weight, const void *bias, int n, int c) {
    check_param(weight);
    check_param(bias);
    ops_cpu.layernorm_forward(out, mean, rstd, inp, weight, bias, n, c);
}
static void w_residual_layernorm_forward(void *residual, void *out, float *mean, float *rstd,
                                         const void *a, const void *b, const void *weight,
                                         const void *bias, int n, int c) {
    check_param(weight);
    check_param(bias);
    ops_cpu.residual_layernorm_forward(residual, out, mean, rstd, a, b, weight, bias, n, c);
}
static void w_matmul_forward(void *out, const void *inp, const void *weight, const void *bias,
                             int n, int c, int oc) {
    check_param(weight);
    check_param(bias);
    ops_cpu.matmul_forward(out, inp, weight, bias, n, c, oc);
}
static void w_matmul_residual_forward(void *out, const void *residual, const void *inp,
                                      const void *weight, const void *bias, int n, int c, int oc) {
    check_param(weight);
    check_param(bias);
    ops_cpu.matmul_residual_forward(out, residual, inp, weight, bias, n, c, oc);
}
static void w_matmul_gelu_forward(void *out, void *pre, const void *inp, const void *weight,
                                  const void *bias, int n, int c, int oc) {
    check_param(weight);
    check_param(bias);
    ops_cpu.matmul_gelu_forward(out, pre, inp, weight, bias, n, c, oc);
}

/* One forward with the hook on; returns its loss. */
static float forward_once(gpt2_model *m, bool announce) {
    announcing = announce;
    n_ann = out_of_order = unannounced = checked = 0;
    int32_t inputs[B * T], targets[B * T];
    for (int i = 0; i < B * T; i++) {
        inputs[i] = (i * 7919) % V;
        targets[i] = (i * 104729 + 1) % V;
    }
    return gpt2_forward(m, inputs, targets, B, T, 0.0f);
}

int main(void) {
    gpt2_layout layout;
    layout_build(&layout, L, C, NH, V, VP, T);
    lay = &layout;
    kernel_ops checking = ops_cpu;
    checking.encoder_forward = w_encoder_forward;
    checking.layernorm_forward = w_layernorm_forward;
    checking.residual_layernorm_forward = w_residual_layernorm_forward;
    checking.matmul_forward = w_matmul_forward;
    checking.matmul_residual_forward = w_matmul_residual_forward;
    checking.matmul_gelu_forward = w_matmul_gelu_forward;
    gpt2_model m;
    gpt2_create(&m, &layout, &checking, B, T);
    gpt2_init_params(&layout, 1, m.params);
    params = m.params;
    gpt2_set_params_needed(&m, hook, NULL);
    int failed = 0;

    const float loss = forward_once(&m, true);
    printf("announced %d ranges; %d parameter reads checked: %d unannounced, %d out of order; "
           "loss %.6f\n",
           n_ann, checked, unannounced, out_of_order, loss);
    /* every tensor is read at least once: 2 per LayerNorm and linear layer
     * (weight, bias), wte twice (encoder, classifier), wpe */
    const int expected_reads = 2 + L * 12 + 2 + 1;
    if (unannounced || out_of_order || n_ann != L + 2 || checked != expected_reads) {
        printf("FAIL: expected %d reads in %d announced ranges, all announced, in order\n",
               expected_reads, L + 2);
        failed = 1;
    }
    const float loss_silent = forward_once(&m, false);
    printf("hook silent: %d of %d parameter reads unannounced\n", unannounced, checked);
    if (unannounced != checked || checked == 0 || loss_silent != loss) {
        printf(
            "FAIL: with nothing announced every read must be flagged (and the loss unchanged)\n");
        failed = 1;
    }
    gpt2_free(&m);
    layout_free(&layout);
    printf(failed ? "params_needed: FAILED\n" : "params_needed: OK\n");
    return failed;
}
