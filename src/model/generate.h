/* Text generation from a GPT-2 model, one token at a time: the context's
 * last-position logits -> greedy, or temperature and top-k sampling with a
 * seeded splitmix64 stream. The same on every backend and rank count for the
 * same logits, so a sample depends only on the weights, the prompt and the
 * seed. Used by gpt2_sample and by the trainer's samples (train/samples.h). */
#ifndef GPT2_MODEL_GENERATE_H
#define GPT2_MODEL_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/gpt2.h"
#include "model/rng.h"

typedef struct {
    double temperature; /* > 0 */
    int top_k;          /* sample among the top_k most likely tokens; 0 = all */
    bool greedy;        /* always the most likely token */
} sample_options;

/* Picks the next token from logits (the first V entries are real; they are
 * overwritten). */
int32_t sample_pick_token(float *logits, int V, const sample_options *opt, rng_state *rng);

/* Called with each generated token as it is picked. */
typedef void (*sample_token_fn)(void *ctx, int32_t token);

/* Continues ids[0, n_prompt) (n_prompt >= 1) by n_new tokens written to
 * ids[n_prompt, n_prompt + n_new) (the caller's buffer holds both). Each
 * token comes from one forward of the last m->T tokens (B = 1) on m's
 * backend; on_token (may be NULL) sees it at once. */
void sample_generate(gpt2_model *m, int32_t *ids, size_t n_prompt, int n_new,
                     const sample_options *opt, uint64_t seed, sample_token_fn on_token, void *ctx);
#endif
