/* Samples during training (see samples.h). */
#include "train/observe/samples.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/files.h"

void samples_open(train_samples *s, bpe_tokenizer *tok, const config *cfg, const char *run_dir) {
    memset(s, 0, sizeof *s);
    s->tok = tok;
    size_t prompt_len = 0;
    const char *prompt = cfg->sample_prompt;
    s->prompt = tokenizer_sanitize_utf8(prompt, strlen(prompt), &prompt_len);
    CHECK(s->prompt, "out of memory for sample_prompt");
    s->n_new = cfg->sample_tokens;
    s->seed = cfg->seed;
    s->opt = (sample_options){.temperature = 1.0, .top_k = SAMPLES_TOP_K};
    /* As GPT-2's own samples and gpt2_sample: the context starts with <|endoftext|>. */
    size_t n = 1, cap = 16;
    s->ids = xmalloc(cap * sizeof(int32_t));
    s->ids[0] = GPT2_EOT_TOKEN;
    CHECK(tokenizer_encode(tok, s->prompt, prompt_len, &s->ids, &n, &cap) == 0,
          "sample_prompt: cannot encode: %s", tokenizer_last_error(tok));
    s->n_prompt = n;
    s->ids = realloc(s->ids, (n + (size_t)s->n_new) * sizeof(int32_t));
    CHECK(s->ids, "out of memory for sample tokens");
    /* Opened at the first sample, so that a run refused before its first step
     * leaves nothing in its directory (which may not exist yet). */
    snprintf(s->path, sizeof s->path, "%s/samples.jsonl", run_dir);
}

void samples_close(train_samples *s) {
    if (s->jsonl) fclose(s->jsonl);
    free(s->ids);
    free(s->prompt);
    memset(s, 0, sizeof *s);
}

/* The continuation as text: valid UTF-8 (a sample may end inside a
 * character, which JSON cannot hold), malloc'd. */
static char *continuation_text(const train_samples *s) {
    size_t len = 0, clean_len = 0;
    char *raw = tokenizer_decode(s->tok, s->ids + s->n_prompt, (size_t)s->n_new, &len);
    CHECK(raw, "cannot decode a sample (a token outside the vocabulary)");
    char *clean = tokenizer_sanitize_utf8(raw, len, &clean_len);
    CHECK(clean, "out of memory for a sample");
    free(raw);
    return clean;
}

void samples_write(train_samples *s, gpt2_model *m, int step) {
    sample_generate(m, s->ids, s->n_prompt, s->n_new, &s->opt, s->seed, NULL, NULL);
    char *text = continuation_text(s);
    printf("sample %5d | %s%s\n", step, s->prompt, text);
    fflush(stdout);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "step", json_object_new_int(step));
    json_object_object_add(o, "seed", json_object_new_uint64(s->seed));
    json_object_object_add(o, "top_k", json_object_new_int(s->opt.top_k));
    json_object_object_add(o, "temperature", json_object_new_double(s->opt.temperature));
    json_object_object_add(o, "prompt", json_object_new_string(s->prompt));
    json_object_object_add(o, "text", json_object_new_string(text));
    const int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
    char why[4400];
    if (!s->jsonl) s->jsonl = fopen_regular(s->path, "a", OPEN_NO_LINK, why, sizeof why);
    if (!s->jsonl) FAIL("%s", why);
    fprintf(s->jsonl, "%s\n", json_object_to_json_string_ext(o, flags));
    fflush(s->jsonl);
    json_object_put(o);
    free(text);
}
