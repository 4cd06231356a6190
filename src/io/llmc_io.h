/* llm.c's model file (karpathy/llm.c, train_gpt2.c / train_gpt2.cu): a header
 * of 256 int32 (magic 20240326; version 3 = fp32, 5 = bf16; max_seq_len,
 * vocab_size, num_layers, num_heads, channels, padded_vocab_size), then every
 * parameter in llm.c's order: wte (Vp, C), wpe (maxT, C), then each per-layer
 * tensor stacked over the layers (ln1w, ln1b, qkvw, qkvb, attprojw, attprojb,
 * ln2w, ln2b, fcw, fcb, fcprojw, fcprojb), then lnfw, lnfb. llm.c stores
 * linear weights as (out, in), as we do, so tensors copy as they are.
 * Import lets users start from the GPT-2 weights they converted for llm.c;
 * export feeds llm.c's own tools. */
#ifndef GPT2_IO_LLMC_IO_H
#define GPT2_IO_LLMC_IO_H

#include <stdbool.h>
#include <stddef.h>

#include "model/layout.h"
#include "model/shape.h"

#define LLMC_MAGIC 20240326
#define LLMC_VERSION_FP32 3
#define LLMC_VERSION_BF16 5

typedef struct {
    int version, max_seq_len, vocab_size, n_layer, n_head, n_embd, padded_vocab_size;
} llmc_header;

/* Does path begin with llm.c's model magic? (false when unreadable) */
bool llmc_is_model_file(const char *path);
/* Reads and checks the header (magic, version, the sizes by the rules of
 * model/shape.h) and the file's length against what the sizes imply,
 * before anything is allocated: 0, or -1 with "path: problem" in err (bad
 * input: callers exit 2). */
int llmc_read_header(const char *path, llmc_header *h, char *err, size_t err_len);
/* The header's sizes as model/shape.h names them (max_seq_len is block_size). */
model_shape llmc_header_shape(const llmc_header *h);
/* Reads every parameter into host_params (flat fp32 in lay's layout, zeroed
 * first); the file's sizes must be lay's. */
void llmc_load(const char *path, const gpt2_layout *lay, float *host_params);
/* Writes lay's parameters as an llm.c model file, fp32 (version 3) or bf16
 * (version 5, rounded to nearest even), through a renamed temporary file. */
void llmc_save(const char *path, const gpt2_layout *lay, const float *host_params, bool bf16);
#endif
