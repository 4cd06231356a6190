/* gpu_model_step: one forward + backward of a tiny GPT-2 (model/gpt2.c,
 * unchanged) on the CUDA backend and on the CPU reference backend, from the
 * same weights (gpt2_init_params, rounded to bf16 so both start from the
 * same values) and the same random batch. Exits 77 (skipped) without a GPU.
 *
 * Checks: the mean loss to 1e-2 relative, and every named gradient tensor by
 * its norm-wise relative error ||g_gpu - g_cpu|| / ||g_cpu|| < 5e-2. Why
 * 5e-2: the GPU stores every activation and gradient in bf16 (relative
 * rounding up to 2^-9 ~ 2e-3 per store), and a gradient at the bottom of the
 * network has passed through ~30 such roundings (the activations it is
 * computed from and the upstream gradients), plus LayerNorm backward, which
 * multiplies errors by rstd, and the classifier's dlogits, which are small
 * differences (softmax - onehot). Independent roundings add like a random
 * walk: ~sqrt(30) * 2e-3 ~ 1e-2 expected; 5e-2 leaves a margin while any
 * real bug (a wrong index, a missing term, += versus =) gives errors of
 * order 1. The loss is one fp32 number from bf16 logits: 1e-2 is generous.
 * Also reported (INFO, not a failure): whether a second identical step on
 * the GPU reproduces the gradients bit for bit (the attention backward sums
 * dQ with atomics, so gradients below the last attention layer may differ
 * in the last bits run to run).
 *
 * Sizes: 2 layers, vocab 50257 padded to 50304, T = 64, and C = 64 with one
 * head, C = 128 with two, C = 768 with 12 (GPT-2 124M's width): head size 64
 * throughout, since the flash-attention kernels take head sizes 64 and 128
 * (the brief's C = 64 with 4 heads has head size 16).
 *
 * On a GPU with FP8 tensor cores also: the FP8 layers allocate what
 * fp8_layers_bytes (the memory estimate's term) says, with and without
 * recompute_gelu and attn_proj_bf16; recompute_gelu keeps (L - 1) x 4 C
 * bytes per token fewer, a bf16 attn.c_proj L x (C per token + 2 C^2);
 * the FP8 lm head allocates what fp8_lm_head_bytes says; and weights held
 * through micro-steps (gpt2_params_unchanged): two FP8 models (the lm
 * head in FP8 too) from the same weights run a training forward each, then
 * one is given other values of the weights it holds in FP8 (the blocks'
 * four linear weights and wte's rows that no input or target uses, so
 * that the embedding and everything else reads the same) and told they
 * have not changed: its next forward's loss must be the other model's
 * second forward's on the first weights, bit for bit (both cast at the same
 * scales, the first holding its copies), and differ from the loss of the
 * new weights; a forward after it, not told so, casts the new weights and
 * matches the other model's forward of them, bit for bit; the gradients
 * after the held micro-step are those of the other model within 1e-2
 * (the attention backward's atomics may change their last bits). And a
 * held copy keeps the factor it was cast at while its tensor's scale
 * moves: a forward with the last block's mlp.c_proj weight halved gives
 * its first scale, one with it whole is cast at that scale (delayed
 * scaling: its largest values saturate), then a forward holds those
 * copies while the update, seeing the whole weight's amax, halves the
 * scale: its loss must be the forward's before it, bit for bit (the
 * weight feeds no later delayed-scaled input, so no other scale moves),
 * and the forward after it, which casts again, must differ. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "kernels/cuda_info.h"
#include "kernels/ops.h"
#include "model/fp8_layers.h"
#include "model/gpt2.h"
#include "model/layout.h"
#include "model/rng.h"

static int n_checks, n_failed;

static float bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return x;
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

static void verdict(int pass) {
    n_checks++;
    if (!pass) n_failed++;
}

/* N input and N target tokens below `below` (malloc'd), drawn in turn. */
static void random_tokens(uint64_t seed, int N, uint64_t below, int32_t **inputs,
                          int32_t **targets) {
    rng_state rng;
    rng_seed(&rng, seed);
    *inputs = xmalloc((size_t)N * sizeof(int32_t));
    *targets = xmalloc((size_t)N * sizeof(int32_t));
    for (int i = 0; i < N; i++) {
        (*inputs)[i] = (int32_t)(rng_next(&rng) % below);
        (*targets)[i] = (int32_t)(rng_next(&rng) % below);
    }
}

static void run(int L, int C, int NH, int B, int T, uint64_t seed) {
    const int V = 50257, Vp = 50304, maxT = 64;
    gpt2_layout lay;
    layout_build(&lay, L, C, NH, V, Vp, maxT);
    const size_t n = lay.n_elements;
    char cfg[64];
    snprintf(cfg, sizeof cfg, "L%d C%d NH%d B%d T%d", L, C, NH, B, T);

    float *hp = xmalloc(n * sizeof(float));
    gpt2_init_params(&lay, seed, hp);
    for (size_t i = 0; i < n; i++) hp[i] = bf16_round(hp[i]);

    const int N = B * T;
    int32_t *inputs, *targets;
    random_tokens(seed ^ 0x5eed, N, (uint64_t)V, &inputs, &targets);
    const float dloss = 1.0f / (float)N;

    gpt2_model mc, mg;
    gpt2_create(&mc, &lay, &ops_cpu, B, T);
    ops_cpu.upload(mc.params, hp, n * sizeof(float));
    gpt2_create(&mg, &lay, &ops_cuda, B, T);
    ops_cuda.upload_f32(mg.params, hp, n);

    const float lc = gpt2_forward(&mc, inputs, targets, B, T, dloss);
    gpt2_backward(&mc, NULL, NULL);
    const float lg = gpt2_forward(&mg, inputs, targets, B, T, dloss);
    gpt2_backward(&mg, NULL, NULL);

    const double lrel = fabs((double)lg - lc) / fabs((double)lc);
    int pass = isfinite(lg) && lrel < 1e-2;
    printf("CHECK %-14s %-34s gpu=%.6f cpu=%.6f rel=%.2e tol=1e-2 %s\n", "model_loss", cfg, lg, lc,
           lrel, pass ? "PASS" : "FAIL");
    verdict(pass);

    const float *gc = mc.grads;
    float *gg = xmalloc(n * sizeof(float));
    ops_cuda.download_f32(gg, mg.grads, n);
    double worst = 0.0;
    for (int i = 0; i < lay.n_tensors; i++) {
        const param_tensor *t = &lay.tensors[i];
        double num = 0.0, den = 0.0;
        size_t nonfinite = 0;
        for (size_t k = 0; k < t->numel; k++) {
            const double a = gg[t->offset + k], b = gc[t->offset + k];
            if (!isfinite(a)) nonfinite++;
            num += (a - b) * (a - b);
            den += b * b;
        }
        const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        pass = nonfinite == 0 && rel < 5e-2;
        if (rel > worst) worst = rel;
        printf("CHECK %-14s %-34s %-24s numel=%-8zu |g_cpu|=%.3e rel_l2=%.2e tol=5e-2 "
               "nonfinite=%zu %s\n",
               "model_grad", cfg, t->name, t->numel, sqrt(den), rel, nonfinite,
               pass ? "PASS" : "FAIL");
        verdict(pass);
    }
    printf("INFO  model_grad %s worst rel_l2 %.2e over %d tensors\n", cfg, worst, lay.n_tensors);

    /* the same step again on the GPU: bitwise reproducible? */
    ops_cuda.zero(mg.grads, n * ops_cuda.elem_bytes);
    const float lg2 = gpt2_forward(&mg, inputs, targets, B, T, dloss);
    gpt2_backward(&mg, NULL, NULL);
    float *gg2 = xmalloc(n * sizeof(float));
    ops_cuda.download_f32(gg2, mg.grads, n);
    int differing = 0;
    for (int i = 0; i < lay.n_tensors; i++) {
        const param_tensor *t = &lay.tensors[i];
        if (memcmp(gg + t->offset, gg2 + t->offset, t->numel * sizeof(float)) != 0) differing++;
    }
    printf("INFO  model_determinism %s loss_bitwise=%s tensors_differing=%d of %d\n", cfg,
           memcmp(&lg, &lg2, sizeof lg) == 0 ? "yes" : "no", differing, lay.n_tensors);

    gpt2_free(&mc);
    gpt2_free(&mg);
    layout_free(&lay);
    free(hp);
    free(gg);
    free(gg2);
    free(inputs);
    free(targets);
}

static size_t fp8_counted;
static void *fp8_count_alloc(size_t bytes) {
    fp8_counted += bytes;
    return ops_cuda.alloc(bytes);
}

static void check_fp8_bytes(void) {
    if (cuda_compute_capability(0) < 89) {
        printf("INFO  fp8_bytes skipped: the GPU has no FP8 tensor cores\n");
        return;
    }
    const int L = 3, C = 128, N = 4 * 64, history = 16;
    gpt2_layout lay;
    layout_build(&lay, L, C, 2, 50257, 50304, 64);
    size_t got[2][2]; /* [recompute_gelu][attn_proj_bf16] */
    for (int variant = 0; variant < 4; variant++) {
        const int recompute = variant & 1, bf16_proj = variant >> 1;
        kernel_ops counting = ops_cuda;
        counting.alloc = fp8_count_alloc;
        fp8_counted = 0;
        fp8_layers f;
        fp8_layers_create(&f, &counting, &lay, N, history, 0, FP8_FAST_ACCUM_FORWARD, recompute,
                          bf16_proj);
        got[recompute][bf16_proj] = fp8_counted;
        const size_t want = fp8_layers_bytes(&lay, N, history, recompute, bf16_proj);
        printf("CHECK %-14s recompute_gelu=%d attn_proj_bf16=%d allocated=%zu "
               "fp8_layers_bytes=%zu %s\n",
               "fp8_bytes", recompute, bf16_proj, fp8_counted, want,
               fp8_counted == want ? "PASS" : "FAIL");
        verdict(fp8_counted == want);
        fp8_layers_free(&f, &counting);
    }
    const size_t saved = (size_t)(L - 1) * N * 4 * C;
    printf("CHECK %-14s recompute_gelu keeps %zu bytes fewer, expected %zu %s\n", "fp8_bytes",
           got[0][0] - got[1][0], saved, got[0][0] - got[1][0] == saved ? "PASS" : "FAIL");
    verdict(got[0][0] - got[1][0] == saved);
    /* a bf16 attn.c_proj: no transposed input (N C) nor weight copies (2 C^2) per block */
    const size_t proj = (size_t)L * ((size_t)N * C + 2 * (size_t)C * C);
    printf("CHECK %-14s attn_proj_bf16 keeps %zu bytes fewer, expected %zu %s\n", "fp8_bytes",
           got[0][0] - got[0][1], proj, got[0][0] - got[0][1] == proj ? "PASS" : "FAIL");
    verdict(got[0][0] - got[0][1] == proj);
    { /* the FP8 lm head's buffers, chunks of 64 rows */
        kernel_ops counting = ops_cuda;
        counting.alloc = fp8_count_alloc;
        fp8_layers f;
        fp8_layers_create(&f, &counting, &lay, N, history, 0, FP8_FAST_ACCUM_FORWARD, 0, 0);
        fp8_counted = 0;
        fp8_lm_head_create(&f, &counting, &lay, 64);
        const size_t want = fp8_lm_head_bytes(&lay, 64);
        printf("CHECK %-14s lm head of 64-row chunks allocated=%zu fp8_lm_head_bytes=%zu %s\n",
               "fp8_bytes", fp8_counted, want, fp8_counted == want ? "PASS" : "FAIL");
        verdict(fp8_counted == want);
        fp8_layers_free(&f, &counting);
    }
    layout_free(&lay);
}

/* The held-weights checks' models: FP8, the lm head in FP8 too. */
static const gpt2_options fp8_held_opt = {
    .fp8 = true, .fp8_history = 16, .fp8_fast_accum = FP8_FAST_ACCUM_FORWARD, .fp8_lm_head = true};

/* Host fp32 params of lay: init, rounded to bf16; with changed, the
 * weights that FP8 copies hold (the blocks' linear weights and wte's rows
 * from `unused` on) scaled by 1.5. */
static float *held_params(const gpt2_layout *lay, int changed, int unused) {
    float *hp = xmalloc(lay->n_elements * sizeof(float));
    gpt2_init_params(lay, 99, hp);
    if (changed) {
        const size_t C = (size_t)lay->n_embd;
        for (int l = 0; l < lay->n_layer; l++) {
            const block_offsets *o = &lay->blocks[l];
            const size_t at[4] = {o->qkv_w, o->attproj_w, o->fc_w, o->fcproj_w};
            const size_t n[4] = {3 * C * C, C * C, 4 * C * C, 4 * C * C};
            for (int k = 0; k < 4; k++)
                for (size_t e = 0; e < n[k]; e++) hp[at[k] + e] *= 1.5f;
        }
        for (size_t e = (size_t)unused * C; e < (size_t)lay->vocab_size * C; e++)
            hp[lay->wte + e] *= 1.5f;
    }
    for (size_t i = 0; i < lay->n_elements; i++) hp[i] = bf16_round(hp[i]);
    return hp;
}

/* A training forward + backward on m, its loss gradient scaled by dloss;
 * its mean loss. */
static float train_micro_step(gpt2_model *m, const int32_t *inputs, const int32_t *targets, int B,
                              int T, float dloss) {
    const float loss = gpt2_forward(m, inputs, targets, B, T, dloss);
    gpt2_backward(m, NULL, NULL);
    return loss;
}

static void check_fp8_held_weights(void) {
    if (cuda_compute_capability(0) < 89) {
        printf("INFO  fp8_held skipped: the GPU has no FP8 tensor cores\n");
        return;
    }
    const int L = 2, C = 128, B = 2, T = 64, N = B * T, unused = 1000;
    gpt2_layout lay;
    layout_build(&lay, L, C, 2, 50257, 50304, T);
    const size_t n = lay.n_elements;
    float *first = held_params(&lay, 0, unused), *second = held_params(&lay, 1, unused);
    int32_t *inputs, *targets;
    random_tokens(2024, N, (uint64_t)unused, &inputs, &targets);
    const float dloss = 1.0f / (float)(2 * N);
    gpt2_model held, plain;
    gpt2_create_with(&held, &lay, &ops_cuda, B, T, &fp8_held_opt);
    gpt2_create_with(&plain, &lay, &ops_cuda, B, T, &fp8_held_opt);
    ops_cuda.upload_f32(held.params, first, n);
    ops_cuda.upload_f32(plain.params, first, n);
    train_micro_step(&held, inputs, targets, B, T, dloss);
    train_micro_step(&plain, inputs, targets, B, T, dloss);

    ops_cuda.upload_f32(held.params, second, n); /* not cast: the copies of `first` stay */
    gpt2_params_unchanged(&held);
    const float l_held = train_micro_step(&held, inputs, targets, B, T, dloss);
    const float l_first = train_micro_step(&plain, inputs, targets, B, T, dloss);

    float *g_held = xmalloc(n * sizeof(float)), *g_plain = xmalloc(n * sizeof(float));
    ops_cuda.download_f32(g_held, held.grads, n);
    ops_cuda.download_f32(g_plain, plain.grads, n);
    double num = 0.0, den = 0.0;
    size_t nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(g_held[i])) nonfinite++;
        num += ((double)g_held[i] - g_plain[i]) * ((double)g_held[i] - g_plain[i]);
        den += (double)g_plain[i] * g_plain[i];
    }
    const double g_rel = sqrt(num / den);

    ops_cuda.upload_f32(plain.params, second, n);
    const float l_second_plain = gpt2_forward(&plain, inputs, targets, B, T, dloss);
    const float l_second_held = gpt2_forward(&held, inputs, targets, B, T, dloss);
    const double moved = fabs((double)l_second_plain - l_first) / fabs((double)l_first);

    int pass = isfinite(l_held) && memcmp(&l_held, &l_first, sizeof l_held) == 0;
    printf("CHECK %-14s the held forward's loss %.7f, the first weights' %.7f: %s %s\n", "fp8_held",
           l_held, l_first, pass ? "bit for bit" : "DIFFER", pass ? "PASS" : "FAIL");
    verdict(pass);
    pass = moved > 1e-3;
    printf("CHECK %-14s the second weights' loss %.7f is %.2e away (> 1e-3) %s\n", "fp8_held",
           l_second_plain, moved, pass ? "PASS" : "FAIL");
    verdict(pass);
    pass = memcmp(&l_second_held, &l_second_plain, sizeof l_second_held) == 0;
    printf("CHECK %-14s the forward after the held one casts again: %.7f against %.7f %s\n",
           "fp8_held", l_second_held, l_second_plain, pass ? "PASS" : "FAIL");
    verdict(pass);
    pass = nonfinite == 0 && g_rel < 1e-2;
    printf("CHECK %-14s gradients after a held micro-step rel_l2=%.2e tol=1e-2 nonfinite=%zu %s\n",
           "fp8_held", g_rel, nonfinite, pass ? "PASS" : "FAIL");
    verdict(pass);

    gpt2_free(&held);
    gpt2_free(&plain);
    layout_free(&lay);
    free(first);
    free(second);
    free(inputs);
    free(targets);
    free(g_held);
    free(g_plain);
}

static void check_fp8_held_scale_moved(void) {
    if (cuda_compute_capability(0) < 89) return; /* check_fp8_held_weights said so */
    const int L = 2, C = 128, B = 2, T = 64, N = B * T;
    gpt2_layout lay;
    layout_build(&lay, L, C, 2, 50257, 50304, T);
    const size_t n = lay.n_elements, at = lay.blocks[L - 1].fcproj_w;
    float *whole = held_params(&lay, 0, 0), *halved = xmalloc(n * sizeof(float));
    memcpy(halved, whole, n * sizeof(float));
    for (size_t e = 0; e < (size_t)4 * C * C; e++) halved[at + e] *= 0.5f; /* exact in bf16 */
    int32_t *inputs, *targets;
    random_tokens(77, N, 50257u, &inputs, &targets);
    const float dloss = 1.0f / (float)N;
    gpt2_model m;
    gpt2_create_with(&m, &lay, &ops_cuda, B, T, &fp8_held_opt);
    ops_cuda.upload_f32(m.params, halved, n);
    /* the weight's first scale: the halved one's */
    train_micro_step(&m, inputs, targets, B, T, dloss);
    ops_cuda.upload_f32(m.params, whole, n);
    /* at that scale: saturates */
    const float cast = train_micro_step(&m, inputs, targets, B, T, dloss);
    gpt2_params_unchanged(&m);
    /* the scale has halved */
    const float held = train_micro_step(&m, inputs, targets, B, T, dloss);
    const float recast = train_micro_step(&m, inputs, targets, B, T, dloss);

    int pass = isfinite(held) && memcmp(&held, &cast, sizeof held) == 0;
    printf("CHECK %-14s held through a moved scale: %.7f against the forward that cast it %.7f "
           "%s\n",
           "fp8_held", held, cast, pass ? "PASS" : "FAIL");
    verdict(pass);
    pass = isfinite(recast) && memcmp(&recast, &cast, sizeof recast) != 0;
    printf("CHECK %-14s cast again at the moved scale: %.7f, not %.7f (the scale did move) %s\n",
           "fp8_held", recast, cast, pass ? "PASS" : "FAIL");
    verdict(pass);
    gpt2_free(&m);
    layout_free(&lay);
    free(whole);
    free(halved);
    free(inputs);
    free(targets);
}

int main(void) {
    if (cuda_device_count() < 1) {
        printf("gpu_model_step: no GPU visible, skipped\n");
        return 77;
    }
    char name[128];
    cuda_device_describe(0, name, sizeof name);
    printf("gpu_model_step on %s\n", name);
    ops_cuda_init(0, NULL);
    run(2, 64, 1, 4, 64, 1337);
    run(2, 128, 2, 2, 64, 4242);
    run(2, 768, 12, 2, 64, 777); /* GPT-2 124M's width and heads */
    check_fp8_bytes();
    check_fp8_held_weights();
    check_fp8_held_scale_moved();
    printf("SUMMARY gpu_model_step: %d checks, %d failed: %s\n", n_checks, n_failed,
           n_failed ? "FAIL" : "PASS");
    return n_failed ? 1 : 0;
}
