/* A GPT-2's six sizes and the one check of them that every reader applies:
 * weights .h5 files and checkpoints, llm.c model files, Hugging Face
 * config.json and the trainer's config, so that a rule and its message are
 * the same wherever a size comes from. A shape that passes lays out
 * (layout_build) without overflow and runs on the CPU backend. */
#ifndef GPT2_MODEL_SHAPE_H
#define GPT2_MODEL_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "model/layout.h"

/* Upper bounds. They keep every product the code forms from the sizes
 * within its integer type: the widest tensor, wte, has at most
 * (2^24 + 127) x 2^16 < 2^41 elements, the flat buffer fewer than 2^47
 * (bytes fit size_t and HDF5's hsize_t with room to spare), and the widths
 * the kernels take as int (4 C, 3 C, Vp, T) stay below 2^23. They are
 * also the trainer's key ranges (config/keys.c). */
#define SHAPE_MAX_LAYER 1024
#define SHAPE_MAX_EMBD 65536
#define SHAPE_MAX_HEAD 4096
#define SHAPE_MAX_VOCAB (1 << 24)
#define SHAPE_MAX_BLOCK (1 << 20)
/* wte's rows: the vocabulary rounded up to a multiple of this (llm.c's
 * padding, kept by every format we write). */
#define SHAPE_VOCAB_PAD 128

/* int64_t: a file's value is checked before anything narrows it to int. */
typedef struct {
    int64_t n_layer, n_embd, n_head, vocab_size, padded_vocab_size, block_size;
} model_shape;

enum { SHAPE_N_SIZES = 6 };
/* The sizes' names, in the struct's order: the attribute names of a weights
 * file and the trainer's keys (padded_vocab_size is derived there). */
extern const char *const shape_size_names[SHAPE_N_SIZES];
/* The size at index i (0 .. SHAPE_N_SIZES - 1, in the order above). */
int64_t *shape_size(model_shape *s, int i);

/* vocab_size rounded up to a multiple of SHAPE_VOCAB_PAD (vocab_size
 * itself when it is out of range: no overflow on a file's value). */
int64_t shape_padded_vocab(int64_t vocab_size);

/* 0 when s is a GPT-2 gpt2_ddp can build; else -1 with the first broken
 * rule in err, naming the size, its value and the rule ("n_head = 0: out of
 * range: must be in [1, 4096]"). Rules: every size within [1, its maximum];
 * vocab_size <= padded_vocab_size = shape_padded_vocab(vocab_size);
 * n_embd divisible by n_head. names (may be NULL: shape_size_names) are
 * the sizes' names in the reader's own file, for the message. */
int shape_check(const model_shape *s, const char *const *names, char *err, size_t err_len);

/* 0 when the CUDA attention runs s's head size n_embd / n_head (the CPU
 * backend runs any); else -1 with the reason in err. s passed shape_check. */
int shape_check_cuda(const model_shape *s, char *err, size_t err_len);

/* The layout of a shape that passed shape_check (layout_free it). */
void shape_layout_build(const model_shape *s, gpt2_layout *lay);
#endif
