/* Benchmark of the CPU FP32 reference kernels (the production ones, linked
 * from the core library): one line per op and shape with the median time of
 * a few runs, GFLOP/s (nominal flop counts, see each line) and GB/s (the
 * bytes each op must at least read and write once).
 * Usage: bench_cpu_kernels [--runs N] [--sizes tiny|124M|all] [--filter TEXT]
 * Threads: OMP_NUM_THREADS (default: all cores). */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/classifier.h"
#include "kernels/encoder.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"

enum { VOCAB = 50257, VOCAB_PADDED = 50304, MAX_RUNS = 101 };

static int runs = 5;
static const char *filter = ""; /* only lines whose label contains this */

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times `stmt` once to warm up, then `runs` times; prints the median. */
#define BENCH(label, flops, bytes, stmt)                                                           \
    do {                                                                                           \
        if (!strstr(label, filter)) break;                                                         \
        double times_[MAX_RUNS];                                                                   \
        stmt;                                                                                      \
        for (int r_ = 0; r_ < runs; r_++) {                                                        \
            const double t0_ = clock_s();                                                          \
            stmt;                                                                                  \
            times_[r_] = clock_s() - t0_;                                                          \
        }                                                                                          \
        qsort(times_, (size_t)runs, sizeof(double), cmp_double);                                   \
        const double med_ = times_[runs / 2];                                                      \
        printf("%-44s %10.3f ms %8.1f GFLOP/s %7.1f GB/s\n", label, med_ * 1e3,                    \
               (double)(flops) / med_ * 1e-9, (double)(bytes) / med_ * 1e-9);                      \
        fflush(stdout);                                                                            \
    } while (0)

static float *random_buffer(size_t n, float scale) {
    float *x = xmalloc(n * sizeof(float));
    uint64_t s = 0x2545f4914f6cdd1dULL ^ n;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = scale * ((float)(s >> 40) / (float)(1 << 24) - 0.5f);
    }
    return x;
}

/* Parameter count of GPT-2 with the padded vocab: embeddings, L blocks
 * (4 C^2 attention + 8 C^2 MLP weights, 13 C biases and LayerNorm
 * parameters), the final LayerNorm. */
static size_t gpt2_params(int max_t, int C, int L) {
    const size_t c = (size_t)C;
    return (size_t)VOCAB_PADDED * c + (size_t)max_t * c + (size_t)L * (12 * c * c + 13 * c) + 2 * c;
}

static void bench_matmul(const char *size, int N, int C, int OC) {
    float *inp = random_buffer((size_t)N * C, 1), *w = random_buffer((size_t)OC * C, 0.1f);
    float *bias = random_buffer(OC, 0.1f), *out = xmalloc((size_t)N * OC * sizeof(float));
    float *dinp = xmalloc((size_t)N * C * sizeof(float));
    float *dw = xcalloc((size_t)OC * C, sizeof(float)), *db = xcalloc(OC, sizeof(float));
    const double flops = 2.0 * N * C * OC;
    const double io = 4.0 * ((double)N * C + (double)OC * C + (double)N * OC);
    char label[96];
    snprintf(label, sizeof(label), "%s matmul_forward N=%d C=%d OC=%d", size, N, C, OC);
    BENCH(label, flops, io, matmul_forward_cpu(out, inp, w, bias, N, C, OC));
    snprintf(label, sizeof(label), "%s matmul_backward N=%d C=%d OC=%d", size, N, C, OC);
    BENCH(label, 2 * flops, 2 * io, matmul_backward_cpu(dinp, dw, db, out, inp, w, N, C, OC));
    free(inp), free(w), free(bias), free(out), free(dinp), free(dw), free(db);
}

static void bench_model_ops(const char *size, int B, int T, int C, int NH, size_t n_params) {
    const int N = B * T, HS = C / NH;
    char label[96];
    int32_t *tokens = xmalloc((size_t)N * sizeof(int32_t));
    for (int i = 0; i < N; i++) tokens[i] = (int32_t)((i * 7919) % VOCAB);
    float *wte = random_buffer((size_t)VOCAB_PADDED * C, 0.1f),
          *wpe = random_buffer((size_t)T * C, 0.1f);
    float *x = random_buffer((size_t)N * C, 1), *y = xmalloc((size_t)N * C * sizeof(float));
    float *dx = xcalloc((size_t)N * C, sizeof(float));
    float *g = random_buffer(C, 1), *b = random_buffer(C, 1);
    float *dg = xcalloc(C, sizeof(float)), *dbias = xcalloc(C, sizeof(float));
    float *mean = xmalloc((size_t)N * sizeof(float)), *rstd = xmalloc((size_t)N * sizeof(float));
    const double nc = (double)N * C;

    snprintf(label, sizeof(label), "%s encoder_forward N=%d C=%d", size, N, C);
    BENCH(label, nc, 12 * nc, encoder_forward_cpu(y, tokens, wte, wpe, B, T, C));
    float *dwte = xcalloc((size_t)VOCAB_PADDED * C, sizeof(float));
    float *dwpe = xcalloc((size_t)T * C, sizeof(float));
    snprintf(label, sizeof(label), "%s encoder_backward N=%d C=%d", size, N, C);
    BENCH(label, 2 * nc, 20 * nc, encoder_backward_cpu(dwte, dwpe, x, tokens, B, T, C));
    free(dwte), free(dwpe), free(wte), free(wpe);

    /* LayerNorm: ~8 flops per element forward, ~14 backward (nominal) */
    snprintf(label, sizeof(label), "%s layernorm_forward N=%d C=%d", size, N, C);
    BENCH(label, 8 * nc, 8 * nc, layernorm_forward_cpu(y, mean, rstd, x, g, b, N, C));
    snprintf(label, sizeof(label), "%s residual_layernorm_forward N=%d C=%d", size, N, C);
    float *res = xmalloc((size_t)N * C * sizeof(float));
    BENCH(label, 9 * nc, 16 * nc,
          residual_layernorm_forward_cpu(res, y, mean, rstd, x, dx, g, b, N, C));
    free(res);
    snprintf(label, sizeof(label), "%s layernorm_backward N=%d C=%d", size, N, C);
    BENCH(label, 14 * nc, 16 * nc,
          layernorm_backward_cpu(dx, dg, dbias, y, x, g, mean, rstd, N, C));

    /* GELU on the 4C-wide MLP activation: ~9 flops + tanh forward, ~16 backward */
    const size_t n4 = (size_t)N * 4 * C;
    float *h = random_buffer(n4, 2), *gh = xmalloc(n4 * sizeof(float));
    snprintf(label, sizeof(label), "%s gelu_forward n=%zu", size, n4);
    BENCH(label, 10.0 * n4, 8.0 * n4, gelu_forward_cpu(gh, h, n4));
    snprintf(label, sizeof(label), "%s gelu_backward n=%zu", size, n4);
    BENCH(label, 17.0 * n4, 12.0 * n4, gelu_backward_cpu(gh, h, gh, n4));
    free(h), free(gh);

    /* Attention: q.k and p.v over the causal half, 2 flops per multiply-add;
     * backward recomputes scores and forms dp, dq, dk, dv: 5 such products. */
    float *qkv = random_buffer((size_t)N * 3 * C, 1),
          *dqkv = xmalloc((size_t)N * 3 * C * sizeof(float));
    float *lse = xmalloc((size_t)B * NH * T * sizeof(float));
    const double pairs = (double)B * NH * T * (T + 1) / 2.0;
    const double attn_io = 4.0 * ((double)N * 3 * C + nc);
    snprintf(label, sizeof(label), "%s attention_forward B=%d T=%d NH=%d HS=%d", size, B, T, NH,
             HS);
    BENCH(label, 4 * pairs * HS, attn_io, attention_forward_cpu(y, lse, qkv, B, T, C, NH));
    snprintf(label, sizeof(label), "%s attention_backward B=%d T=%d NH=%d HS=%d", size, B, T, NH,
             HS);
    BENCH(label, 10 * pairs * HS, 2 * attn_io,
          attention_backward_cpu(dqkv, x, qkv, y, lse, B, T, C, NH));
    free(qkv), free(dqkv), free(lse);

    /* Classifier: max, exp, sum, scale: ~5 flops per logit (expf counted as 1) */
    const double nv = (double)N * VOCAB_PADDED;
    float *logits = random_buffer((size_t)N * VOCAB_PADDED, 4);
    float *losses = xmalloc((size_t)N * sizeof(float));
    snprintf(label, sizeof(label), "%s classifier_fwd_bwd N=%d V=%d", size, N, VOCAB);
    BENCH(
        label, 5 * nv, 8 * nv,
        classifier_forward_backward_cpu(logits, losses, tokens, N, VOCAB, VOCAB_PADDED, 1.0f / N));
    free(logits), free(losses);

    /* AdamW and the gradient norm over a whole model's parameters */
    float *p = random_buffer(n_params, 1), *grad = random_buffer(n_params, 1e-2f);
    float *m = xcalloc(n_params, sizeof(float)), *v = xcalloc(n_params, sizeof(float));
    snprintf(label, sizeof(label), "%s adamw_update n=%zu", size, n_params);
    adamw_hyper hyper = {
        .lr = 6e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .t = 1};
    BENCH(label, 16.0 * n_params, 28.0 * n_params,
          adamw_update_cpu(p, grad, m, v, n_params, 1.0f, &hyper);
          hyper.t++);
    volatile double sink = 0;
    snprintf(label, sizeof(label), "%s sum_squares n=%zu", size, n_params);
    BENCH(label, 2.0 * n_params, 4.0 * n_params, sink += sum_squares_cpu(grad, n_params));
    (void)sink;
    free(p), free(grad), free(m), free(v);

    free(tokens), free(x), free(y), free(dx), free(g), free(b), free(dg), free(dbias), free(mean),
        free(rstd);
}

int main(int argc, char **argv) {
    const char *sizes = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            sizes = argv[++i];
        } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
            filter = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: %s [--runs N (1..%d)] [--sizes tiny|124M|all] [--filter TEXT]\n",
                    argv[0], MAX_RUNS);
            return 2;
        }
    }
    if (runs < 1 || runs > MAX_RUNS ||
        (strcmp(sizes, "all") && strcmp(sizes, "tiny") && strcmp(sizes, "124M"))) {
        fprintf(stderr, "bad --runs or --sizes (see --help)\n");
        return 2;
    }
    printf("# CPU fp32 kernels, %d threads, median of %d runs\n", omp_get_max_threads(), runs);
    if (strcmp(sizes, "124M")) {
        /* configs/tiny.ini: C=64, 4 heads, B=8 x T=64 = 512 rows, 2 layers;
         * qkv, attention projection, fc, fc projection, lm head */
        bench_matmul("tiny", 512, 64, 192);
        bench_matmul("tiny", 512, 64, 64);
        bench_matmul("tiny", 512, 64, 256);
        bench_matmul("tiny", 512, 256, 64);
        bench_matmul("tiny", 512, 64, VOCAB_PADDED);
        bench_model_ops("tiny", 8, 64, 64, 4, gpt2_params(128, 64, 2));
    }
    if (strcmp(sizes, "tiny")) {
        /* GPT-2 124M: C=768, 12 heads, B*T = 1 x 1024, 12 layers */
        bench_matmul("124M", 1024, 768, 2304);
        bench_matmul("124M", 1024, 768, 768);
        bench_matmul("124M", 1024, 768, 3072);
        bench_matmul("124M", 1024, 3072, 768);
        bench_matmul("124M", 1024, 768, VOCAB_PADDED);
        bench_model_ops("124M", 1, 1024, 768, 12, gpt2_params(1024, 768, 12));
    }
    return 0;
}
