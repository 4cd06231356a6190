/* Hugging Face's config.json for GPT-2 (transformers' GPT2Config): read,
 * with every setting gpt2_ddp's GPT-2 cannot reproduce refused, and written
 * for an export. A key config.json leaves out means what GPT2Config's
 * default means (n_layer 12, n_embd 768, ...), as in transformers. */
#ifndef GPT2_IO_HF_CONFIG_H
#define GPT2_IO_HF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "model/layout.h"

/* GPT-2's BPE vocabulary: the size the tokenizer files of an export fit. */
#define GPT2_BPE_VOCAB 50257

typedef struct {
    int n_layer, n_embd, n_head, vocab_size, n_positions;
} hf_config;

/* Reads and checks path (a config.json): model_type gpt2, the sizes, a
 * tanh GELU, LayerNorm epsilon 1e-5, tied input/output embeddings, the
 * standard attention scaling. -1 with "path: problem" in err. */
int hf_config_read(const char *path, hf_config *c, char *err, size_t err_len);

/* Writes lay's config.json to path (model_type gpt2, GPT2LMHeadModel,
 * vocab_size unpadded, torch_dtype float32 or bfloat16). -1 with err on an
 * I/O error. */
int hf_config_write(const char *path, const gpt2_layout *lay, bool bf16, char *err, size_t err_len);

/* tokenizer_config.json for GPT-2's BPE (vocab.json + merges.txt) with
 * model_max_length = the model's context. */
int hf_tokenizer_config_write(const char *path, int model_max_length, char *err, size_t err_len);
#endif
