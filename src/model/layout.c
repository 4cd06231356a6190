/* Builds the flat parameter layout and tensor table (see layout.h). */
#include "model/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"

typedef struct {
    gpt2_layout *lay;
    size_t cursor;
    int capacity;
} layout_builder;

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static size_t add_tensor(layout_builder *b, const char *name, int64_t d0, int64_t d1) {
    gpt2_layout *lay = b->lay;
    CHECK(lay->n_tensors < b->capacity, "tensor table overflow");
    param_tensor *t = &lay->tensors[lay->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = d1 > 0 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1 > 0 ? d1 : 0;
    t->numel = (size_t)d0 * (size_t)(d1 > 0 ? d1 : 1);
    t->decay = t->ndim == 2; /* GPT-2/nanoGPT practice: no decay on biases and LayerNorm */
    t->offset = align_up(b->cursor, LAYOUT_ALIGN);
    b->cursor = t->offset + t->numel;
    lay->n_params += t->numel;
    return t->offset;
}

static size_t add_block_tensor(layout_builder *b, int l, const char *suffix, int64_t d0,
                               int64_t d1) {
    char name[LAYOUT_NAME_MAX];
    snprintf(name, sizeof name, "h.%d.%s", l, suffix);
    return add_tensor(b, name, d0, d1);
}

void layout_build(gpt2_layout *lay, int n_layer, int n_embd, int n_head, int vocab_size,
                  int padded_vocab_size, int block_size) {
    memset(lay, 0, sizeof *lay);
    lay->n_layer = n_layer;
    lay->n_embd = n_embd;
    lay->n_head = n_head;
    lay->vocab_size = vocab_size;
    lay->padded_vocab_size = padded_vocab_size;
    lay->block_size = block_size;
    layout_builder b = {.lay = lay, .cursor = 0, .capacity = 12 * n_layer + 4};
    lay->tensors = xcalloc((size_t)b.capacity, sizeof(param_tensor));
    lay->blocks = xcalloc((size_t)n_layer, sizeof(block_offsets));
    const int64_t C = n_embd;

    /* Backward order: what backward finishes first comes first. */
    lay->lnf_w = add_tensor(&b, "ln_f.weight", C, 0);
    lay->lnf_b = add_tensor(&b, "ln_f.bias", C, 0);
    for (int l = n_layer - 1; l >= 0; l--) {
        block_offsets *o = &lay->blocks[l];
        o->begin = align_up(b.cursor, LAYOUT_ALIGN);
        o->fcproj_w = add_block_tensor(&b, l, "mlp.c_proj.weight", C, 4 * C);
        o->fcproj_b = add_block_tensor(&b, l, "mlp.c_proj.bias", C, 0);
        o->fc_w = add_block_tensor(&b, l, "mlp.c_fc.weight", 4 * C, C);
        o->fc_b = add_block_tensor(&b, l, "mlp.c_fc.bias", 4 * C, 0);
        o->ln2_w = add_block_tensor(&b, l, "ln_2.weight", C, 0);
        o->ln2_b = add_block_tensor(&b, l, "ln_2.bias", C, 0);
        o->attproj_w = add_block_tensor(&b, l, "attn.c_proj.weight", C, C);
        o->attproj_b = add_block_tensor(&b, l, "attn.c_proj.bias", C, 0);
        o->qkv_w = add_block_tensor(&b, l, "attn.c_attn.weight", 3 * C, C);
        o->qkv_b = add_block_tensor(&b, l, "attn.c_attn.bias", 3 * C, 0);
        o->ln1_w = add_block_tensor(&b, l, "ln_1.weight", C, 0);
        o->ln1_b = add_block_tensor(&b, l, "ln_1.bias", C, 0);
        o->end = b.cursor;
    }
    lay->wpe = add_tensor(&b, "wpe.weight", block_size, C);
    lay->wte = add_tensor(&b, "wte.weight", padded_vocab_size, C);
    lay->n_elements = align_up(b.cursor, LAYOUT_ALIGN);
}

void layout_free(gpt2_layout *lay) {
    free(lay->tensors);
    free(lay->blocks);
    memset(lay, 0, sizeof *lay);
}

const param_tensor *layout_find(const gpt2_layout *lay, const char *name) {
    for (int i = 0; i < lay->n_tensors; i++)
        if (strcmp(lay->tensors[i].name, name) == 0) return &lay->tensors[i];
    return NULL;
}

size_t layout_model_params(const gpt2_layout *lay) {
    return lay->n_params - (size_t)(lay->padded_vocab_size - lay->vocab_size) * lay->n_embd;
}

double layout_flops_per_token(const gpt2_layout *lay, int seq_len) {
    /* nanoGPT's estimate_mfu: 6 N for the matmuls with parameters (forward
     * and backward), 12 L C T for attention scores and values. N counts the
     * real parameters (the padded vocabulary rows of wte included, as they
     * are multiplied in the classifier). */
    double n = (double)lay->n_params;
    return 6.0 * n + 12.0 * lay->n_layer * (double)lay->n_embd * seq_len;
}
