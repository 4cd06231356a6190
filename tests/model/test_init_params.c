/* GPT-2's initialisation (gpt2_init_params), drawn in parallel chunks: the
 * same bits as one sequential pass over the seed's stream (the form it had
 * before, written here again as the reference), whatever the thread count,
 * with tensors of several chunks and chunks that start mid-stream; biases
 * 0, LayerNorm weights 1, wte's padding rows 0, and the projections into
 * the residual stream at 0.02 / sqrt(2 L). */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "model/gpt2.h"
#include "model/layout.h"
#include "model/rng.h"

/* wte is 2,000 x 64 = 128,000 values: two chunks of 65,536 and a part */
enum { L = 2, C = 64, NH = 2, V = 2000, VP = 2048, T = 64 };

/* The reference: one stream, tensors in the layout's order. */
static void init_sequential(const gpt2_layout *lay, uint64_t seed, float *p0) {
    memset(p0, 0, lay->n_elements * sizeof(float));
    rng_state rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        const size_t len = strlen(t->name);
        float *p = p0 + t->offset;
        if (len > 5 && strcmp(t->name + len - 5, ".bias") == 0) continue;
        if (strstr(t->name, "ln_")) {
            for (size_t k = 0; k < t->numel; k++) p[k] = 1.0f;
            continue;
        }
        const double s = strstr(t->name, ".c_proj.weight") ? 0.02 / sqrt(2.0 * L) : 0.02;
        const size_t n = t->offset == lay->wte ? (size_t)V * C : t->numel;
        for (size_t k = 0; k < n; k++) p[k] = (float)(s * rng_normal(&rng));
    }
}

static double rms(const float *p, size_t n) {
    double s = 0;
    for (size_t k = 0; k < n; k++) s += (double)p[k] * p[k];
    return sqrt(s / n);
}

int main(void) {
    gpt2_layout lay;
    layout_build(&lay, L, C, NH, V, VP, T);
    const size_t bytes = lay.n_elements * sizeof(float);
    float *ref = malloc(bytes), *one = malloc(bytes), *many = malloc(bytes);
    init_sequential(&lay, 1337, ref);
    omp_set_num_threads(1);
    gpt2_init_params(&lay, 1337, one);
    omp_set_num_threads(3);
    gpt2_init_params(&lay, 1337, many);
    EXPECT(memcmp(one, ref, bytes) == 0, "one thread: the sequential stream's bits");
    EXPECT(memcmp(many, ref, bytes) == 0, "three threads: the sequential stream's bits");
    gpt2_init_params(&lay, 1338, many);
    EXPECT(memcmp(many, ref, bytes) != 0, "another seed: other values");

    /* what the values are, from the layout alone */
    bool zeros = true, ones = true;
    for (int i = 0; i < lay.n_tensors; i++) {
        const param_tensor *t = &lay.tensors[i];
        const size_t len = strlen(t->name);
        const float want = len > 5 && strcmp(t->name + len - 5, ".bias") == 0 ? 0.0f
                           : strstr(t->name, "ln_")                           ? 1.0f
                                                                              : -1.0f;
        for (size_t k = 0; want >= 0 && k < t->numel; k++) {
            if (one[t->offset + k] == want) continue;
            if (want == 0.0f)
                zeros = false;
            else
                ones = false;
        }
    }
    EXPECT(zeros, "biases 0");
    EXPECT(ones, "LayerNorm weights 1");
    bool pad = true;
    for (size_t k = (size_t)V * C; k < (size_t)VP * C; k++) pad = pad && one[lay.wte + k] == 0.0f;
    EXPECT(pad, "wte's padding rows 0");
    const double wte_rms = rms(one + lay.wte, (size_t)V * C);
    const param_tensor *proj = layout_find(&lay, "h.0.mlp.c_proj.weight");
    const double proj_rms = rms(one + proj->offset, proj->numel);
    printf("wte rms %.5f (0.02), h.0.mlp.c_proj.weight rms %.5f (%.5f)\n", wte_rms, proj_rms,
           0.02 / sqrt(2.0 * L));
    EXPECT(fabs(wte_rms / 0.02 - 1) < 0.01, "wte at std 0.02");
    EXPECT(fabs(proj_rms / (0.02 / sqrt(2.0 * L)) - 1) < 0.03, "residual projections scaled");
    free(ref);
    free(one);
    free(many);
    layout_free(&lay);
    printf("%s\n", failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}
