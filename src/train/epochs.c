/* How many times a run reads its training data (see epochs.h). */
#include "train/epochs.h"

#include <stdio.h>

double epochs_planned(const config *cfg, const token_dataset *train) {
    const double planned = (double)cfg->max_steps * (double)cfg->total_batch;
    return planned / ((double)train->n_samples * (double)cfg->seq_len);
}

/* 1.96M, 10.00B: token counts as people say them. */
static void format_count(double n, char *buf, size_t len) {
    if (n >= 1e9)
        snprintf(buf, len, "%.2fB", n / 1e9);
    else if (n >= 1e6)
        snprintf(buf, len, "%.2fM", n / 1e6);
    else if (n >= 1e3)
        snprintf(buf, len, "%.1fK", n / 1e3);
    else
        snprintf(buf, len, "%.0f", n);
}

void epochs_warn(const config *cfg, const token_dataset *train, int rank) {
    const double epochs = epochs_planned(cfg, train);
    if (rank != 0 || epochs <= EPOCHS_WARN_ABOVE) return;
    char planned[32], have[32];
    format_count((double)cfg->max_steps * (double)cfg->total_batch, planned, sizeof planned);
    format_count((double)train->n_samples * cfg->seq_len, have, sizeof have);
    printf(
        "warning: this run reads %s tokens (max_steps %d x total_batch %lld), but\n"
        "  train_data = %s holds %s (%lld samples of %d):\n"
        "  %.0f epochs; the model will memorise it rather than learn. For a real run point\n"
        "  train_data and val_data at shards of a large corpus in llm.c's format: FineWeb-10B\n"
        "  (fineweb_train_*.bin, fineweb_val_*.bin from llm.c's dev/data/fineweb.py), TinyStories\n"
        "  (dev/data/tinystories.py), or your own text through gpt2_tokenize (JSONL from the\n"
        "  Hugging Face Hub works). docs/data.md, \"Real data\".\n",
        planned, cfg->max_steps, (long long)cfg->total_batch, cfg->train_data, have,
        (long long)train->n_samples, cfg->seq_len, epochs);
    fflush(stdout);
}
