/* HellaSwag and samples during training (see watch.h). */
#include "train/observe/watch.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/bundled.h"
#include "base/clock.h"
#include "base/fail.h"

#ifndef GPT2_HAVE_TOKENIZER
#define GPT2_HAVE_TOKENIZER 0
#endif

#if GPT2_HAVE_TOKENIZER
#include "eval/hellaswag.h"
#include "train/observe/samples.h"

struct run_watch {
    int rank, sample_every;
    bpe_tokenizer *tok;
    bool hellaswag_on, samples_on;
    hellaswag_set hellaswag;
    train_samples samples; /* rank 0 */
};

run_watch *watch_open(const config *cfg, int rank, int world, const char *run_dir) {
    const bool hellaswag_on = cfg->hellaswag_data[0] != '\0', samples_on = cfg->sample_every > 0;
    if (!hellaswag_on && !samples_on) return NULL;
    run_watch *w = xcalloc(1, sizeof *w);
    w->rank = rank;
    w->sample_every = cfg->sample_every;
    char encoder[4300], vocab[4300], err[2048], dir_buf[4200], hellaswag_buf[4200];
    /* The bundled files from another folder (base/bundled.h). */
    FILE *note_to = rank == 0 ? stdout : NULL;
    const char *dir = bundled_path("tokenizer_dir =", cfg->tokenizer_dir, dir_buf, sizeof dir_buf,
                                   note_to, "note: ");
    const char *hellaswag =
        hellaswag_on ? bundled_path("hellaswag_data =", cfg->hellaswag_data, hellaswag_buf,
                                    sizeof hellaswag_buf, note_to, "note: ")
                     : cfg->hellaswag_data;
    snprintf(encoder, sizeof encoder, "%s/encoder.json", dir);
    snprintf(vocab, sizeof vocab, "%s/vocab.bpe", dir);
    w->tok = tokenizer_load(encoder, vocab, err, sizeof err);
    if (!w->tok)
        fail_collective(EXIT_USAGE, "tokenizer_dir = %s: %s (tools/prepare_data.sh fetches them)",
                        cfg->tokenizer_dir, err);
    if (hellaswag_on) {
        const double t0 = clock_ms();
        if (hellaswag_load(&w->hellaswag, hellaswag, w->tok, cfg->hellaswag_examples, rank, world,
                           err, sizeof err) != 0)
            fail_collective(EXIT_USAGE, "hellaswag_data: %s", err);
        w->hellaswag_on = true;
        if (rank == 0)
            printf("HellaSwag: %d examples from %s over %d rank(s), tokenized in %.1f s\n",
                   w->hellaswag.n_total, hellaswag, world, (clock_ms() - t0) / 1e3);
    }
    if (samples_on && rank == 0) samples_open(&w->samples, w->tok, cfg, run_dir);
    w->samples_on = samples_on;
    return w;
}

void watch_close(run_watch *w) {
    if (!w) return;
    if (w->hellaswag_on) hellaswag_free(&w->hellaswag);
    if (w->samples_on && w->rank == 0) samples_close(&w->samples);
    tokenizer_free(w->tok);
    free(w);
}

double watch_hellaswag(run_watch *w, gpt2_model *m, communicator *comm, metrics_log *log,
                       int step) {
    if (!w || !w->hellaswag_on) return 0.0;
    const double t0 = clock_ms();
    hellaswag_counts c = hellaswag_evaluate(&w->hellaswag, m, NULL);
    double *sums[] = {&c.n, &c.correct, &c.correct_norm, &c.cut};
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++)
        *sums[i] = comm->ops->sum_scalar(comm, *sums[i]);
    const double ms = clock_ms() - t0;
    metrics_hellaswag(log, step, c.n, c.correct, c.correct_norm, c.cut, ms);
    return ms;
}

bool watch_sample_due(const run_watch *w, int step) {
    return w && w->samples_on && step > 0 && step % w->sample_every == 0;
}

double watch_sample(run_watch *w, gpt2_model *m, int step) {
    if (!w || !w->samples_on || w->rank != 0) return 0.0;
    const double t0 = clock_ms();
    samples_write(&w->samples, m, step);
    return clock_ms() - t0;
}

#else /* built without the tokenizer: config_validate refuses both features */

run_watch *watch_open(const config *cfg, int rank, int world, const char *run_dir) {
    (void)rank, (void)world, (void)run_dir;
    CHECK(cfg->hellaswag_data[0] == '\0' && cfg->sample_every == 0,
          "HellaSwag and samples need the tokenizer (config_validate should have said so)");
    return NULL;
}
void watch_close(run_watch *w) { (void)w; }
double watch_hellaswag(run_watch *w, gpt2_model *m, communicator *comm, metrics_log *log,
                       int step) {
    (void)w, (void)m, (void)comm, (void)log, (void)step;
    return 0.0;
}
bool watch_sample_due(const run_watch *w, int step) { return (void)w, (void)step, false; }
double watch_sample(run_watch *w, gpt2_model *m, int step) {
    (void)w, (void)m, (void)step;
    return 0.0;
}
#endif
