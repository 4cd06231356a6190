/* What a run shows besides its losses: HellaSwag accuracy at every
 * evaluation (hellaswag_data) and text samples (sample_every). Both need the
 * tokenizer; in a build without it the config refuses them, and every
 * function here is a no-op on the NULL that watch_open then returns. */
#ifndef GPT2_TRAIN_OBSERVE_WATCH_H
#define GPT2_TRAIN_OBSERVE_WATCH_H

#include <stdbool.h>

#include "config/config.h"
#include "dist/comm.h"
#include "model/gpt2.h"
#include "train/observe/metrics.h"

typedef struct run_watch run_watch;

/* Collective. Loads the tokenizer and this rank's share of HellaSwag (a
 * missing or malformed file ends every rank with exit code 2, naming the
 * line) and, on rank 0, opens samples.jsonl. NULL when neither is on. */
run_watch *watch_open(const config *cfg, int rank, int world, const char *run_dir);
void watch_close(run_watch *w);

/* Collective, after each validation loss: HellaSwag on every rank's share,
 * summed, logged by rank 0. Returns the ms it took (0 when off). */
double watch_hellaswag(run_watch *w, gpt2_model *m, communicator *comm, metrics_log *log, int step);

/* Is a sample due before step `step` (a positive multiple of sample_every)? */
bool watch_sample_due(const run_watch *w, int step);
/* Rank 0 generates, prints and records a sample (other ranks return at
 * once). Returns the ms it took. */
double watch_sample(run_watch *w, gpt2_model *m, int step);
#endif
