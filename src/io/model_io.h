/* Model weights from any of the places a user has them: a checkpoint (a step
 * directory, or a run directory: its final model.h5 when the run wrote one,
 * else its newest complete checkpoint), a weights file (a run's model.h5),
 * an llm.c model file (fp32 or bf16) or a Hugging Face GPT-2 directory
 * (config.json + model.safetensors, io/hf_gpt2.h).
 * Used by init_from (a new run from existing weights) and by gpt2_convert. */
#ifndef GPT2_IO_MODEL_IO_H
#define GPT2_IO_MODEL_IO_H

#include <stdbool.h>
#include <stddef.h>

#include "io/ckpt_dir.h"
#include "model/layout.h"
#include "model/shape.h"

typedef enum {
    MODEL_FROM_CHECKPOINT,
    MODEL_FROM_WEIGHTS,
    MODEL_FROM_LLMC,
    MODEL_FROM_HF
} model_source_kind;

typedef struct {
    model_source_kind kind;
    char file[CKPT_PATH_MAX + 16]; /* what is read: model.h5 of a checkpoint, the .h5, the .bin
                                      or the Hugging Face directory */
    int n_layer, n_embd, n_head, vocab_size, padded_vocab_size, block_size;
    bool from_run_dir; /* file was chosen inside the run directory given: say which */
} model_source;

/* Resolves path and reads the model sizes, checking them (model/shape.h)
 * and the tensors' shapes in the file against them without reading a
 * tensor; returns -1 with the reason in err (bad input: callers exit 2)
 * when path is none of the sources above (a missing path, a text file, a
 * directory without a complete checkpoint), or one whose sizes or stored
 * shapes are wrong. An .h5 HDF5 cannot open (damaged) fails the process. */
int model_source_open(model_source *s, const char *path, char *err, size_t err_len);
/* The source's sizes (they passed shape_check in model_source_open). */
model_shape model_source_shape(const model_source *s);
/* Builds the layout of the source's sizes (layout_free it). */
void model_source_layout(const model_source *s, gpt2_layout *lay);
/* Reads the weights into host_params (flat fp32 in lay, whose sizes must be
 * the source's). A Hugging Face file that fails here (an lm_head.weight
 * that is not wte) ends every rank with exit code 2. */
void model_source_load(const model_source *s, const gpt2_layout *lay, float *host_params);
const char *model_source_kind_name(model_source_kind kind);
/* The config the run stored with the weights (a checkpoint's or a run's
 * model.h5: config_format's text, malloc'd), or NULL (llm.c and Hugging
 * Face files, weights written without one). */
char *model_source_config_text(const model_source *s);
#endif
