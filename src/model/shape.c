/* The model-shape rules every reader applies (see shape.h). */
#include "model/shape.h"

#include <stdio.h>

#include "kernels/attention.h"

const char *const shape_size_names[SHAPE_N_SIZES] = {
    "n_layer", "n_embd", "n_head", "vocab_size", "padded_vocab_size", "block_size"};

int64_t *shape_size(model_shape *s, int i) {
    int64_t *const sizes[SHAPE_N_SIZES] = {
        &s->n_layer, &s->n_embd, &s->n_head, &s->vocab_size, &s->padded_vocab_size, &s->block_size};
    return sizes[i];
}

int64_t shape_padded_vocab(int64_t vocab_size) {
    /* Out of range: shape_check refuses vocab_size itself (and the sum
     * below could overflow). */
    if (vocab_size < 1 || vocab_size > SHAPE_MAX_VOCAB) return vocab_size;
    return (vocab_size + SHAPE_VOCAB_PAD - 1) / SHAPE_VOCAB_PAD * SHAPE_VOCAB_PAD;
}

int shape_check(const model_shape *s, const char *const *names, char *err, size_t err_len) {
    if (!names) names = shape_size_names;
    const int64_t max[SHAPE_N_SIZES] = {SHAPE_MAX_LAYER,
                                        SHAPE_MAX_EMBD,
                                        SHAPE_MAX_HEAD,
                                        SHAPE_MAX_VOCAB,
                                        SHAPE_MAX_VOCAB + SHAPE_VOCAB_PAD - 1,
                                        SHAPE_MAX_BLOCK};
    model_shape copy = *s;
    for (int i = 0; i < SHAPE_N_SIZES; i++) {
        const int64_t v = *shape_size(&copy, i);
        if (v < 1 || v > max[i])
            return snprintf(err, err_len, "%s = %lld: out of range: must be in [1, %lld]", names[i],
                            (long long)v, (long long)max[i]),
                   -1;
    }
    if (s->vocab_size > s->padded_vocab_size)
        return snprintf(err, err_len, "%s = %lld is larger than %s = %lld (the rows wte stores)",
                        names[3], (long long)s->vocab_size, names[4],
                        (long long)s->padded_vocab_size),
               -1;
    const int64_t padded = shape_padded_vocab(s->vocab_size);
    if (s->padded_vocab_size != padded)
        return snprintf(err, err_len,
                        "%s = %lld: must be %s = %lld rounded up to a multiple of %d, %lld",
                        names[4], (long long)s->padded_vocab_size, names[3],
                        (long long)s->vocab_size, SHAPE_VOCAB_PAD, (long long)padded),
               -1;
    if (s->n_embd % s->n_head != 0)
        return snprintf(err, err_len, "%s = %lld is not divisible by %s = %lld", names[1],
                        (long long)s->n_embd, names[2], (long long)s->n_head),
               -1;
    return 0;
}

int shape_check_cuda(const model_shape *s, char *err, size_t err_len) {
    const int head_size = (int)(s->n_embd / s->n_head);
    if (attention_cuda_head_size_ok(head_size)) return 0;
    snprintf(err, err_len,
             "head size n_embd / n_head = %lld / %lld = %d, but the CUDA attention supports head "
             "sizes 64 and 128",
             (long long)s->n_embd, (long long)s->n_head, head_size);
    return -1;
}

void shape_layout_build(const model_shape *s, gpt2_layout *lay) {
    layout_build(lay, (int)s->n_layer, (int)s->n_embd, (int)s->n_head, (int)s->vocab_size,
                 (int)s->padded_vocab_size, (int)s->block_size);
}
