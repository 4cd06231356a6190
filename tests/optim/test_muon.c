/* Muon on the CPU backend, without PyTorch (test_loss_curve_cuda.py
 * --device cpu-muon holds it to a PyTorch oracle):
 *  - Muon's shard maps for GPT-2's layouts at 1 to 9, 12, 16, 32 and 64
 *    ranks: every block 2-D weight on exactly one rank (never split), the
 *    buffer tiled; the balance of its cost printed at 2, 4, 8 and 64.
 *  - The Newton-Schulz iteration makes matrices far from orthogonal
 *    (wide, square, tall) nearly so: every singular value in [0.5, 1.3]
 *    (the quintic's published range is about [0.7, 1.2]); the tall case is
 *    the wide one transposed, bit for bit.
 *  - The per-shape scale, and the seam: a step changes Muon's matrices
 *    and AdamW's tensors, leaves "v" at zero on Muon's matrices, and a
 *    step with the skip factor changes nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "kernels/muon.h"
#include "kernels/norm.h"
#include "optim/optimizer.h"

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("FAIL: %s\n", what);
        failures++;
    }
}

static bool is_block_matrix(const param_tensor *t) {
    return t->ndim == 2 && strncmp(t->name, "h.", 2) == 0;
}

static void check_shard_maps(void) {
    static const struct {
        const char *name;
        int n_layer, n_embd, n_head;
    } sizes[] = {
        {"tiny", 2, 64, 1}, {"124M", 12, 768, 12}, {"350M", 24, 1024, 16}, {"1558M", 48, 1600, 25}};
    static const int worlds[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 32, 64};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        gpt2_layout lay;
        layout_build(&lay, sizes[s].n_layer, sizes[s].n_embd, sizes[s].n_head, 50257, 50304, 1024);
        for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
            shard_map map;
            optimizer_shard_map(&optimizer_muon, &lay, worlds[w], &map);
            int split = 0;
            check(map.lo[0] == 0 && map.hi[map.world - 1] == lay.n_elements, "map tiles");
            for (int r = 1; r < map.world; r++) check(map.lo[r] == map.hi[r - 1], "map tiles");
            double *cost = xcalloc((size_t)map.world, sizeof *cost);
            for (int i = 0; i < lay.n_tensors; i++) {
                const param_tensor *t = &lay.tensors[i];
                const int first = zero_shard_owner(&map, t->offset);
                const int last = zero_shard_owner(&map, t->offset + t->numel - 1);
                if (is_block_matrix(t) && first != last) split++;
                for (int r = first; r <= last; r++) { /* a split tensor: by its share */
                    const size_t b = map.lo[r] > t->offset ? map.lo[r] : t->offset;
                    const size_t e =
                        map.hi[r] < t->offset + t->numel ? map.hi[r] : t->offset + t->numel;
                    cost[r] += optimizer_muon.cost(t) * (double)(e - b) / (double)t->numel;
                }
            }
            char what[128];
            snprintf(what, sizeof what, "%s at %d ranks: no block matrix split", sizes[s].name,
                     worlds[w]);
            check(split == 0, what);
            double sum = 0, largest = 0;
            for (int r = 0; r < map.world; r++) {
                sum += cost[r];
                if (cost[r] > largest) largest = cost[r];
            }
            if (worlds[w] == 2 || worlds[w] == 4 || worlds[w] == 8 || worlds[w] == 64)
                printf("%s, %d ranks: largest rank's Muon cost / mean %.3f\n", sizes[s].name,
                       worlds[w], largest / (sum / map.world));
            free(cost);
            zero_shard_map_free(&map);
        }
        layout_free(&lay);
    }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}

/* Eigenvalues of the symmetric s x s G at the ends of its spectrum, by
 * power iteration on G and on lambda_max I - G. */
static void spectrum_ends(const double *G, int s, double *lo, double *hi) {
    double *v = xcalloc((size_t)s, sizeof *v), *w = xcalloc((size_t)s, sizeof *w);
    for (int pass = 0; pass < 2; pass++) {
        const double shift = pass ? *hi : 0.0;
        for (int i = 0; i < s; i++) v[i] = uniform() - 0.5;
        double lambda = 0;
        for (int it = 0; it < 500; it++) {
            double norm = 0;
            for (int i = 0; i < s; i++) {
                double acc = 0;
                for (int j = 0; j < s; j++) acc += G[(size_t)i * s + j] * v[j];
                w[i] = pass ? shift * v[i] - acc : acc;
                norm += w[i] * w[i];
            }
            norm = sqrt(norm);
            lambda = norm;
            for (int i = 0; i < s; i++) v[i] = w[i] / norm;
        }
        if (pass)
            *lo = shift - lambda;
        else
            *hi = lambda;
    }
    free(v);
    free(w);
}

/* The singular values of X (rows x cols) lie in [lo, hi]. */
static void singular_range(const float *X, int rows, int cols, double *lo, double *hi) {
    const int s = rows < cols ? rows : cols;
    double *G = xcalloc((size_t)s * s, sizeof *G);
    for (int i = 0; i < s; i++)
        for (int j = 0; j < s; j++) {
            double acc = 0;
            for (int k = 0; k < (rows < cols ? cols : rows); k++)
                acc += rows <= cols ? (double)X[(size_t)i * cols + k] * X[(size_t)j * cols + k]
                                    : (double)X[(size_t)k * cols + i] * X[(size_t)k * cols + j];
            G[(size_t)i * s + j] = acc;
        }
    spectrum_ends(G, s, lo, hi);
    *lo = sqrt(*lo > 0 ? *lo : 0);
    *hi = sqrt(*hi);
    free(G);
}

/* Inputs far from orthogonal: columns scaled over `decades` orders of
 * magnitude. Rectangular ones are random (well conditioned at these aspect
 * ratios); the square ones the identity plus a small random part, since a random square
 * matrix has singular values near 0, which five iterations of any quintic
 * cannot lift (the iteration multiplies a small one by a = 3.4445 each
 * time, and gradients are not square-random). */
static void check_newton_schulz(void) {
    static const int shapes[][3] = {{48, 192, 1}, {64, 64, 3}, {160, 40, 2}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        const int rows = shapes[c][0], cols = shapes[c][1], count = shapes[c][2];
        const size_t n = (size_t)rows * cols;
        const double decades = rows == cols ? 1.0 : 2.0;
        float *x = xcalloc(n * count, sizeof *x);
        for (int k = 0; k < count; k++)
            for (size_t j = 0; j < n; j++) {
                const int i = (int)(j / cols), col = (int)(j % cols);
                const double base =
                    rows == cols ? 0.1 * (uniform() - 0.5) + (i == col) : uniform() - 0.5;
                x[k * n + j] = (float)(base * pow(10.0, decades * col / cols));
            }
        double in_lo, in_hi;
        singular_range(x, rows, cols, &in_lo, &in_hi);
        float *work = xcalloc(muon_orthogonalize_cpu_floats(rows, cols), sizeof *work);
        float *xt = xcalloc(n, sizeof *xt);
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) xt[(size_t)j * rows + i] = x[(size_t)i * cols + j];
        muon_orthogonalize_cpu(x, count, rows, cols, work);
        for (int k = 0; k < count; k++) {
            double lo, hi;
            singular_range(x + k * n, rows, cols, &lo, &hi);
            printf("newton-schulz %d x %d (#%d): singular values in [%.3f, %.3f] (input [%.3g, "
                   "%.3g])\n",
                   rows, cols, k, lo, hi, in_lo, in_hi);
            check(lo >= 0.5 && hi <= 1.3, "singular values after Newton-Schulz in [0.5, 1.3]");
        }
        /* the transpose, orthogonalised on its own, is the transpose of the
         * result (the tall case runs the wide one on the transpose) */
        if (rows == cols) {
            free(x);
            free(xt);
            free(work);
            continue;
        }
        float *work_t = xcalloc(muon_orthogonalize_cpu_floats(cols, rows), sizeof *work_t);
        muon_orthogonalize_cpu(xt, 1, cols, rows, work_t);
        int same = 1;
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++)
                same &= xt[(size_t)j * rows + i] == x[(size_t)i * cols + j];
        check(same, "Newton-Schulz of X^T is the transpose of X's, bit for bit");
        free(x);
        free(xt);
        free(work);
        free(work_t);
    }
}

static void check_seam(void) {
    check(muon_shape_scale(3072, 768) == 2.0f, "c_fc's scale is sqrt(3072 / 768) = 2");
    check(muon_shape_scale(768, 3072) == 1.0f, "mlp.c_proj's scale is 1");
    check(muon_shape_scale(768, 768) == 1.0f, "a square matrix's scale is 1");
    check(optimizer_kind_named("muon") == &optimizer_muon, "muon by name");
    check(strcmp(optimizer_array_name(&optimizer_muon, 1), "m") == 0 &&
              strcmp(optimizer_array_name(&optimizer_muon, 2), "v") == 0,
          "Muon's arrays are m and v");

    gpt2_layout lay;
    layout_build(&lay, 2, 64, 1, 50257, 50304, 128);
    check(optimizer_state_bytes(&optimizer_muon, &lay, 0, lay.n_elements, 4) >
              optimizer_state_bytes(&optimizer_adamw, &lay, 0, lay.n_elements, 4),
          "Muon's state counts its workspace");
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.optimizer, sizeof cfg.optimizer, "muon");
    cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8, cfg.weight_decay = 0.1;
    cfg.muon_lr = 0.02, cfg.muon_momentum = 0.95, cfg.muon_weight_decay = 0.01;
    check(optimizer_kind_for(&cfg) == &optimizer_muon, "optimizer = muon gives Muon");
    const size_t n = lay.n_elements;
    float *init = xcalloc(n, sizeof *init), *params = xcalloc(n, sizeof *params);
    float *grads = xcalloc(n, sizeof *grads);
    for (size_t i = 0; i < n; i++) {
        init[i] = (float)(uniform() - 0.5) * 0.04f;
        grads[i] = (float)(uniform() - 0.5) * 1e-2f;
    }
    memcpy(params, init, n * sizeof *params);
    optimizer *opt = optimizer_create(&optimizer_muon, &cfg, &lay, &ops_cpu, 0, n, init);
    const optimizer_schedule sched = {.lr = 1e-3, .factor = 1.0};
    const float skip = CLIP_SKIP_STEP;
    memcpy(opt->grad_scale, &skip, sizeof skip);
    optimizer_step(opt, params, grads, &sched);
    check(memcmp(params, init, n * sizeof *params) == 0 && memcmp(opt->master, init, n * 4) == 0,
          "a skipped step changes nothing");
    const float one = 1.0f;
    memcpy(opt->grad_scale, &one, sizeof one);
    optimizer_step(opt, params, grads, &sched);
    for (int i = 0; i < lay.n_tensors; i++) {
        const param_tensor *t = &lay.tensors[i];
        int moved = 0, v_zero = 1;
        for (size_t j = t->offset; j < t->offset + t->numel; j++) {
            moved |= params[j] != init[j];
            v_zero &= opt->state[1][j] == 0.0f;
        }
        char what[128];
        snprintf(what, sizeof what, "%s moved by a step", t->name);
        check(moved, what);
        snprintf(what, sizeof what, "%s: v is %s", t->name,
                 is_block_matrix(t) ? "zero (Muon's)" : "AdamW's");
        check(is_block_matrix(t) ? v_zero : !v_zero, what);
    }
    optimizer_free(opt);
    free(init);
    free(params);
    free(grads);
    layout_free(&lay);
}

int main(void) {
    check_shard_maps();
    check_newton_schulz();
    check_seam();
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("muon: OK\n");
    return 0;
}
