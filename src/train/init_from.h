/* init_from: the starting weights of a new run (step 0, fresh optimizer) from
 * a checkpoint, a weights file, an llm.c model file or a Hugging Face GPT-2
 * directory (io/model_io.h). */
#ifndef GPT2_TRAIN_INIT_FROM_H
#define GPT2_TRAIN_INIT_FROM_H

#include <stddef.h>

#include "config/config.h"
#include "dist/group.h"
#include "model/layout.h"

/* Collective, after config_load and before config_validate (which checks
 * the shape against the batch and the backend): the model sizes the config
 * leaves at their defaults (n_layer, n_embd, n_head, vocab_size, block_size
 * set neither in the file nor on the command line) are taken from
 * init_from's model, and note says so ("model shape from init_from = ...:
 * 12 layers, 768 wide, ..."; "" when nothing was taken). A run that will
 * resume takes them from the checkpoint it resumes instead, without reading
 * init_from. A new run whose config sets a size init_from's model does not
 * have, or whose init_from is no model, ends every rank with exit code 2
 * before anything is written. Nothing happens when init_from is empty. */
void init_from_fit_shape(const dist_group *job, config *cfg, char *note, size_t note_len);

/* Collective. Rank 0 reads cfg->init_from into host_params (flat fp32 in
 * lay) and broadcasts it to every rank. A path that is no model, or a model
 * whose sizes differ from the config's, ends every rank with exit code 2
 * naming the key. */
void init_from_load(const dist_group *job, const config *cfg, const gpt2_layout *lay,
                    float *host_params);
#endif
