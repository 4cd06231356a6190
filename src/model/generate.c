/* Token-by-token generation (see generate.h). */
#include "model/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"

int32_t sample_pick_token(float *logits, int V, const sample_options *opt, rng_state *rng) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (opt->greedy) return best;
    /* With top-k, everything below the k-th largest logit is excluded. */
    float cutoff = -INFINITY;
    if (opt->top_k > 0 && opt->top_k < V) {
        float *sorted = xmalloc((size_t)V * sizeof(float));
        memcpy(sorted, logits, (size_t)V * sizeof(float));
        for (int k = 0; k < opt->top_k; k++) { /* partial selection: k is small */
            int m = k;
            for (int i = k + 1; i < V; i++)
                if (sorted[i] > sorted[m]) m = i;
            float tmp = sorted[k];
            sorted[k] = sorted[m];
            sorted[m] = tmp;
        }
        cutoff = sorted[opt->top_k - 1];
        free(sorted);
    }
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        double p = logits[i] >= cutoff ? exp((logits[i] - logits[best]) / opt->temperature) : 0.0;
        logits[i] = (float)p;
        sum += p;
    }
    double u = rng_uniform(rng) * sum, acc = 0.0;
    for (int i = 0; i < V; i++) {
        acc += logits[i];
        if (u < acc) return i;
    }
    return best;
}

void sample_generate(gpt2_model *m, int32_t *ids, size_t n_prompt, int n_new,
                     const sample_options *opt, uint64_t seed, sample_token_fn on_token,
                     void *ctx) {
    CHECK(n_prompt >= 1, "sample_generate: an empty context (start with <|endoftext|>)");
    const int V = m->lay.vocab_size;
    float *logits = xmalloc((size_t)m->lay.padded_vocab_size * sizeof(float));
    rng_state rng;
    rng_seed(&rng, seed);
    size_t n = n_prompt;
    /* Every token is a forward at a new length: shapes the GPU should
     * neither tune nor keep in place of the training step's. */
    if (m->ops->transient_shapes) m->ops->transient_shapes(true);
    for (int k = 0; k < n_new; k++) {
        /* Only the last T tokens fit the context. */
        const size_t start = n > (size_t)m->T ? n - (size_t)m->T : 0;
        const int T = (int)(n - start);
        if (k > 0) gpt2_params_unchanged(m);
        gpt2_forward(m, ids + start, NULL, 1, T, 0.0f);
        gpt2_last_logits(m, 1, T, logits);
        ids[n] = sample_pick_token(logits, V, opt, &rng);
        if (on_token) on_token(ctx, ids[n]);
        n++;
    }
    if (m->ops->transient_shapes) m->ops->transient_shapes(false);
    free(logits);
}
