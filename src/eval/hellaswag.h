/* HellaSwag (Zellers et al. 2019) as build-nanogpt and llm.c score it: each
 * example is a context and four endings; the model's loss on each ending's
 * tokens, given the context, picks one. acc_norm takes the lowest mean loss
 * per token (the number GPT-2 reproductions report: OpenAI's 124M scores
 * about 0.29), acc the lowest total loss. Tokens: encode(ctx), then
 * encode(" " + ending) for each ending, with no <|endoftext|> in front.
 *
 * The file is the official hellaswag_val.jsonl (10,042 lines): one JSON
 * object per line with at least "ctx" (string), "endings" (4 strings) and
 * "label" (0-3); other fields (ind, activity_label, ctx_a, ctx_b, split, ...)
 * are ignored. */
#ifndef GPT2_EVAL_HELLASWAG_H
#define GPT2_EVAL_HELLASWAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer.h"
#include "model/gpt2.h"

#define HELLASWAG_ENDINGS 4

typedef struct {
    int index; /* 0-based example number in the file */
    int line;  /* 1-based line of the file */
    int label; /* the right ending */
    int ctx_len;
    int end_len[HELLASWAG_ENDINGS];
    int32_t *tokens; /* the context's tokens, then each ending's, back to back */
} hellaswag_example;

typedef struct {
    hellaswag_example *examples; /* this rank's share: index % world == rank */
    int n;                       /* examples in the share */
    int n_total;                 /* examples evaluated over all ranks */
} hellaswag_set;

/* Reads and checks every line of path, then tokenizes this rank's share of
 * the first max_examples examples (0: all). Returns -1 with "path:line:
 * problem" (or "path: problem") in err for a file that cannot be read, a
 * line that is not a JSON object with the fields above, or a file without
 * examples. Every rank reads the whole file, so all see the same error. */
int hellaswag_load(hellaswag_set *set, const char *path, bpe_tokenizer *tok, int max_examples,
                   int rank, int world, char *err, size_t err_len);
void hellaswag_free(hellaswag_set *set);

/* One example's result. Rows longer than the model's T (ctx + ending - 1
 * tokens of input) lose context tokens from the front, the same number for
 * all four endings (at least one context token stays); a row still too long
 * (an ending of T tokens or more) loses its last tokens. */
typedef struct {
    int index, label;
    double loss_sum[HELLASWAG_ENDINGS]; /* total loss over the ending's scored tokens */
    int n_tokens[HELLASWAG_ENDINGS];    /* the ending's tokens that were scored */
    int pred;                           /* argmin of loss_sum (first on ties) */
    int pred_norm;                      /* argmin of loss_sum / n_tokens */
    bool cut;                           /* tokens were dropped to fit T */
} hellaswag_score;

/* Counts over examples (doubles: summed over ranks as they are). */
typedef struct {
    double n, correct, correct_norm, cut;
} hellaswag_counts;

/* Scores this rank's share on the model's backend, in forwards of up to
 * m->B rows (four per example) and m->T tokens. scores (may be NULL) gets
 * set->n entries. */
hellaswag_counts hellaswag_evaluate(const hellaswag_set *set, gpt2_model *m,
                                    hellaswag_score *scores);
#endif
