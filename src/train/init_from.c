/* Starting weights from an existing model (see init_from.h). */
#include "train/init_from.h"

#include <stdio.h>

#include "dist/fail.h"
#include "io/model_io.h"

void init_from_load(const config *cfg, const gpt2_layout *lay, float *host_params) {
    model_source src;
    char err[CKPT_PATH_MAX + 256];
    if (model_source_open(&src, cfg->init_from, err, sizeof err) != 0)
        fail_collective(EXIT_USAGE, "init_from = %s: %s", cfg->init_from, err);
    const struct {
        const char *key;
        int ours, theirs;
    } same[] = {
        {"n_layer", lay->n_layer, src.n_layer},       {"n_embd", lay->n_embd, src.n_embd},
        {"n_head", lay->n_head, src.n_head},          {"vocab_size", lay->vocab_size, src.vocab_size},
        {"block_size", lay->block_size, src.block_size},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        if (same[i].ours != same[i].theirs)
            fail_collective(EXIT_USAGE, "init_from = %s: the %s %s has %s = %d, the config %d",
                            cfg->init_from, model_source_kind_name(src.kind), src.file,
                            same[i].key, same[i].theirs, same[i].ours);
    model_source_load(&src, lay, host_params);
}
