/* GPT-2's parameters as one flat buffer plus a named tensor table.
 * The buffer is ordered so that backward finalises gradients front to back:
 * ln_f, then blocks L-1 .. 0 (within a block in backward order), then wpe and
 * wte (wte last: the tied embedding gets its last gradient from the encoder,
 * at the very end of backward). A gradient bucket is then a contiguous range,
 * and a ZeRO-1 shard a contiguous slice [lo, hi). Every tensor starts on a
 * multiple of LAYOUT_ALIGN elements. Names are Hugging Face GPT-2's; weights
 * are stored as nn.Linear (out, in), the transpose of HF's Conv1D. */
#ifndef GPT2_MODEL_LAYOUT_H
#define GPT2_MODEL_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LAYOUT_ALIGN 128
#define LAYOUT_NAME_MAX 48

typedef struct {
    char name[LAYOUT_NAME_MAX]; /* "h.3.attn.c_attn.weight" */
    int ndim;
    int64_t shape[2];
    size_t offset; /* element offset in the flat buffer */
    size_t numel;
    bool decay; /* weight decay applies (2-D tensors) */
} param_tensor;

/* Offsets of one block's tensors. */
typedef struct {
    size_t ln1_w, ln1_b, qkv_w, qkv_b, attproj_w, attproj_b;
    size_t ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
    size_t begin, end; /* the block's range in the flat buffer */
} block_offsets;

typedef struct {
    int n_layer, n_embd, n_head, vocab_size, padded_vocab_size, block_size;
    param_tensor *tensors;
    int n_tensors;
    size_t n_elements; /* flat buffer length, alignment gaps included */
    size_t n_params;   /* parameters as stored (sum of numel): wte's padded rows included */
    block_offsets *blocks;
    size_t lnf_w, lnf_b, wpe, wte;
} gpt2_layout;

void layout_build(gpt2_layout *lay, int n_layer, int n_embd, int n_head, int vocab_size,
                  int padded_vocab_size, int block_size);
void layout_free(gpt2_layout *lay);
/* The tensor with this name, or NULL. */
const param_tensor *layout_find(const gpt2_layout *lay, const char *name);

/* The model's own parameters: n_params less wte's padding rows (GPT-2 124M:
 * 124,439,808; 124,475,904 as stored with the vocabulary padded to 50304). */
size_t layout_model_params(const gpt2_layout *lay);
/* FLOPs of one training token, forward and backward: 6 N + 12 L C T
 * (nanoGPT's estimate_mfu), N = real parameters. */
double layout_flops_per_token(const gpt2_layout *lay, int seq_len);
#endif
