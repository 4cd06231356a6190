/* config.json of a Hugging Face GPT-2 (see hf_config.h). */
#include "io/hf_config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/files.h"
#include "io/json_util.h"
#include "model/shape.h"

/* transformers' GPT2Config defaults for what a config.json may leave out. */
static const hf_config GPT2_DEFAULTS = {
    .n_layer = 12, .n_embd = 768, .n_head = 12, .vocab_size = GPT2_BPE_VOCAB, .n_positions = 1024};

/* A boolean member that must have the value want (absent: dflt). */
static bool check_bool(json_object *root, const char *key, bool dflt, bool want, const char *why,
                       char *err, size_t err_len) {
    json_object *v = json_member(root, key);
    bool value = dflt;
    if (v) {
        if (!json_object_is_type(v, json_type_boolean)) {
            snprintf(err, err_len, "%s = %s: not true or false", key,
                     json_object_to_json_string(v));
            return false;
        }
        value = json_object_get_boolean(v);
    }
    if (value == want) return true;
    snprintf(err, err_len, "%s = %s: %s", key, value ? "true" : "false", why);
    return false;
}

/* The sizes by the rules every reader applies (model/shape.h), named as
 * config.json names them. */
static bool check_sizes(json_object *root, hf_config *c, char *err, size_t err_len) {
    *c = GPT2_DEFAULTS;
    model_shape shape = {.n_layer = c->n_layer,
                         .n_embd = c->n_embd,
                         .n_head = c->n_head,
                         .vocab_size = c->vocab_size,
                         .block_size = c->n_positions};
    static const char *const names[SHAPE_N_SIZES] = {
        "n_layer", "n_embd", "n_head", "vocab_size", "padded_vocab_size", "n_positions"};
    for (int i = 0; i < SHAPE_N_SIZES; i++) {
        int ignored;
        json_object *v = json_member(root, names[i]);
        if (i == 4 || !v) continue; /* not in config.json; left out: GPT2Config's default */
        /* json_member_int for its type check; the value is read whole, so
         * the shape check sees what the file says. */
        if (!json_member_int(root, names[i], INT64_MIN, INT64_MAX, &ignored, err, err_len))
            return false;
        *shape_size(&shape, i) = json_object_get_int64(v);
    }
    shape.padded_vocab_size = shape_padded_vocab(shape.vocab_size);
    if (shape_check(&shape, names, err, err_len) != 0) return false;
    c->n_layer = (int)shape.n_layer, c->n_embd = (int)shape.n_embd, c->n_head = (int)shape.n_head;
    c->vocab_size = (int)shape.vocab_size, c->n_positions = (int)shape.block_size;
    int n_inner = 4 * c->n_embd;
    if (!json_member_int(root, "n_inner", 1, 1 << 30, &n_inner, err, err_len)) return false;
    if (n_inner != 4 * c->n_embd) {
        snprintf(err, err_len, "n_inner = %d: GPT-2's MLP is 4 * n_embd = %d wide", n_inner,
                 4 * c->n_embd);
        return false;
    }
    return true;
}

/* The numerics gpt2_ddp's GPT-2 has: tanh GELU, LayerNorm epsilon 1e-5,
 * attention scaled by 1/sqrt(head size), tied embeddings, no cross-attention. */
static bool check_numerics(json_object *root, char *err, size_t err_len) {
    json_object *act = json_member(root, "activation_function");
    const char *name = act && json_object_is_type(act, json_type_string)
                           ? json_object_get_string(act)
                       : act ? NULL
                             : "gelu_new";
    if (!name || (strcmp(name, "gelu_new") != 0 && strcmp(name, "gelu_pytorch_tanh") != 0)) {
        snprintf(err, err_len,
                 "activation_function = %s: gpt2_ddp's GPT-2 uses the tanh GELU (gelu_new)",
                 json_object_to_json_string(act));
        return false;
    }
    json_object *eps = json_member(root, "layer_norm_epsilon");
    if (eps) {
        bool number =
            json_object_is_type(eps, json_type_double) || json_object_is_type(eps, json_type_int);
        if (!number || fabs(json_object_get_double(eps) - 1e-5) > 1e-5 * 1e-9) {
            snprintf(err, err_len, "layer_norm_epsilon = %s: gpt2_ddp's LayerNorm uses 1e-5",
                     json_object_to_json_string(eps));
            return false;
        }
    }
    return check_bool(root, "tie_word_embeddings", true, true,
                      "gpt2_ddp's GPT-2 ties the output layer to wte", err, err_len) &&
           check_bool(root, "scale_attn_weights", true, true,
                      "gpt2_ddp scales attention scores by 1/sqrt(head size)", err, err_len) &&
           check_bool(root, "scale_attn_by_inverse_layer_idx", false, false,
                      "gpt2_ddp does not scale attention by layer", err, err_len) &&
           check_bool(root, "add_cross_attention", false, false,
                      "a decoder with cross-attention is not GPT-2's language model", err, err_len);
}

int hf_config_read(const char *path, hf_config *c, char *err, size_t err_len) {
    json_object *root = json_read_file(path, err, err_len);
    if (!root) return -1;
    char why[512] = "";
    bool ok = false;
    json_object *type = json_member(root, "model_type");
    if (!json_object_is_type(root, json_type_object))
        snprintf(why, sizeof why, "not a JSON object");
    else if (!type || !json_object_is_type(type, json_type_string))
        snprintf(why, sizeof why, "no model_type (not a Hugging Face model config)");
    else if (strcmp(json_object_get_string(type), "gpt2") != 0)
        snprintf(why, sizeof why, "model_type = \"%.64s\": gpt2_ddp reads GPT-2 models (\"gpt2\")",
                 json_object_get_string(type));
    else
        ok = check_sizes(root, c, why, sizeof why) && check_numerics(root, why, sizeof why);
    json_object_put(root);
    if (!ok) snprintf(err, err_len, "%s: %s", path, why);
    return ok ? 0 : -1;
}

static int write_json(const char *path, json_object *root, char *err, size_t err_len) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (remove_stale_file(tmp, err, err_len) != 0) {
        json_object_put(root);
        return -1;
    }
    int rc = json_object_to_file_ext(tmp, root,
                                     JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                         JSON_C_TO_STRING_NOSLASHESCAPE);
    json_object_put(root);
    if (rc != 0 || rename(tmp, path) != 0) {
        snprintf(err, err_len, "cannot write %s: %s", path, json_util_get_last_err());
        return -1;
    }
    return 0;
}

int hf_config_write(const char *path, const gpt2_layout *lay, bool bf16, char *err,
                    size_t err_len) {
    json_object *root = json_object_new_object();
    json_object *arch = json_object_new_array();
    json_object_array_add(arch, json_object_new_string("GPT2LMHeadModel"));
    json_object_object_add(root, "architectures", arch);
    json_object_object_add(root, "model_type", json_object_new_string("gpt2"));
    const struct {
        const char *key;
        int value;
    } sizes[] = {{"vocab_size", lay->vocab_size}, {"n_positions", lay->block_size},
                 {"n_ctx", lay->block_size},      {"n_embd", lay->n_embd},
                 {"n_layer", lay->n_layer},       {"n_head", lay->n_head}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        json_object_object_add(root, sizes[i].key, json_object_new_int(sizes[i].value));
    json_object_object_add(root, "n_inner", NULL);
    json_object_object_add(root, "activation_function", json_object_new_string("gelu_new"));
    json_object_object_add(root, "layer_norm_epsilon", json_object_new_double_s(1e-5, "1e-05"));
    json_object_object_add(root, "initializer_range", json_object_new_double_s(0.02, "0.02"));
    /* The trainer uses no dropout; transformers' defaults (0.1) would
     * change a fine-tune of the export. */
    const char *const dropouts[] = {"resid_pdrop", "embd_pdrop", "attn_pdrop"};
    for (int i = 0; i < 3; i++)
        json_object_object_add(root, dropouts[i], json_object_new_double_s(0.0, "0.0"));
    json_object_object_add(root, "scale_attn_weights", json_object_new_boolean(1));
    json_object_object_add(root, "tie_word_embeddings", json_object_new_boolean(1));
    json_object_object_add(root, "use_cache", json_object_new_boolean(1));
    /* GPT-2's BPE: <|endoftext|> begins and ends documents */
    if (lay->vocab_size == GPT2_BPE_VOCAB) {
        json_object_object_add(root, "bos_token_id", json_object_new_int(50256));
        json_object_object_add(root, "eos_token_id", json_object_new_int(50256));
    }
    /* transformers 4 reads torch_dtype, 5 reads dtype. */
    const char *dtype = bf16 ? "bfloat16" : "float32";
    json_object_object_add(root, "torch_dtype", json_object_new_string(dtype));
    json_object_object_add(root, "dtype", json_object_new_string(dtype));
    return write_json(path, root, err, err_len);
}

int hf_tokenizer_config_write(const char *path, int model_max_length, char *err, size_t err_len) {
    json_object *root = json_object_new_object();
    json_object_object_add(root, "tokenizer_class", json_object_new_string("GPT2Tokenizer"));
    json_object_object_add(root, "model_max_length", json_object_new_int(model_max_length));
    const char *const specials[] = {"bos_token", "eos_token", "unk_token"};
    for (int i = 0; i < 3; i++)
        json_object_object_add(root, specials[i], json_object_new_string("<|endoftext|>"));
    json_object_object_add(root, "add_prefix_space", json_object_new_boolean(0));
    return write_json(path, root, err, err_len);
}
