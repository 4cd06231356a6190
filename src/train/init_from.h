/* init_from: the starting weights of a new run (step 0, fresh optimizer) from
 * a checkpoint, a weights file, an llm.c model file or a Hugging Face GPT-2
 * directory (io/model_io.h). */
#ifndef GPT2_TRAIN_INIT_FROM_H
#define GPT2_TRAIN_INIT_FROM_H

#include "config/config.h"
#include "model/layout.h"

/* Collective. Rank 0 reads cfg->init_from into host_params (flat fp32 in
 * lay) and broadcasts it to every rank. A path that is no model, or a model
 * whose sizes differ from the config's, ends every rank with exit code 2
 * naming the key. */
void init_from_load(const config *cfg, const gpt2_layout *lay, float *host_params);
#endif
