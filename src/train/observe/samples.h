/* Text samples while a run trains: every sample_every steps and at the end,
 * rank 0 continues sample_prompt by sample_tokens tokens on the run's
 * backend, prints the text and appends it to <run_dir>/samples.jsonl. The
 * seed is the run's seed at every step, so two samples differ only by what
 * the model learned in between; on the CPU backend a sample depends only on
 * the weights, so it is the same for any rank count, and gpt2_sample with
 * the same weights, prompt, seed and --top-k gives the same text. */
#ifndef GPT2_TRAIN_OBSERVE_SAMPLES_H
#define GPT2_TRAIN_OBSERVE_SAMPLES_H

#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "data/tokenizer.h"
#include "model/generate.h"
#include "model/gpt2.h"

/* build-nanogpt's choice: sample among the 50 most likely tokens. */
#define SAMPLES_TOP_K 50

typedef struct {
    const bpe_tokenizer *tok;
    char *prompt;    /* sample_prompt as valid UTF-8 (what the tokenizer encodes) */
    int32_t *ids;    /* <|endoftext|>, the prompt's tokens, room for the new ones */
    size_t n_prompt; /* tokens before the new ones */
    int n_new;
    uint64_t seed;
    sample_options opt;
    FILE *jsonl;     /* NULL until the first sample */
    char path[1200]; /* run_dir/samples.jsonl */
} train_samples;

/* Rank 0: encodes the prompt; run_dir/samples.jsonl is opened for appending
 * at the first sample. */
void samples_open(train_samples *s, bpe_tokenizer *tok, const config *cfg, const char *run_dir);
void samples_close(train_samples *s);
/* Generates one sample from m's current weights, prints "sample STEP | text"
 * and appends {"step", "seed", "top_k", "temperature", "prompt", "text"}
 * (text: the continuation only) to samples.jsonl. */
void samples_write(train_samples *s, gpt2_model *m, int step);
#endif
