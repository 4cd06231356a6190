/* gpt2_convert: model weights between gpt2_ddp and llm.c.
 * usage: gpt2_convert IN OUT [--bf16]
 *   IN   a checkpoint (step directory, or run directory: its newest complete
 *        one), a weights file (.h5, e.g. a run's model.h5), or an llm.c model
 *        file (.bin, fp32 or bf16)
 *   OUT  *.bin: an llm.c model file, fp32 (version 3) or with --bf16 bf16
 *        (version 5); *.h5: a gpt2_ddp weights file
 * Training starts from any IN directly with init_from=IN. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/fail.h"
#include "io/llmc_io.h"
#include "io/model_io.h"
#include "io/weights_h5.h"

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: gpt2_convert IN OUT [--bf16]\n"
            "  IN   checkpoint directory (step or run), weights .h5, or llm.c model .bin\n"
            "  OUT  .bin: llm.c model file (fp32; --bf16: bf16), .h5: gpt2_ddp weights file\n");
}

int main(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    bool bf16 = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--bf16") == 0)
            bf16 = true;
        else if (argv[i][0] == '-')
            fail_at(__FILE__, __LINE__, EXIT_USAGE, "unknown option '%s' (see --help)", argv[i]);
        else if (!in)
            in = argv[i];
        else if (!out)
            out = argv[i];
        else
            fail_at(__FILE__, __LINE__, EXIT_USAGE, "unexpected argument '%s'", argv[i]);
    }
    if (!in || !out) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const bool to_llmc = ends_with(out, ".bin");
    if (!to_llmc && !ends_with(out, ".h5"))
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "%s: the output must end in .bin (llm.c) or .h5", out);
    if (bf16 && !to_llmc)
        fail_at(__FILE__, __LINE__, EXIT_USAGE, "--bf16 applies to llm.c (.bin) output only");

    model_source src;
    char err[CKPT_PATH_MAX + 256];
    if (model_source_open(&src, in, err, sizeof err) != 0) fail_at(__FILE__, __LINE__, EXIT_USAGE, "%s", err);
    gpt2_layout lay;
    model_source_layout(&src, &lay);
    float *host = xmalloc(lay.n_elements * sizeof(float));
    model_source_load(&src, &lay, host);
    if (to_llmc)
        llmc_save(out, &lay, host, bf16);
    else
        weights_save(out, &lay, host, NULL);
    printf("%s (%s, %zu parameters) -> %s (%s)\n", src.file, model_source_kind_name(src.kind),
           lay.n_params, out, to_llmc ? (bf16 ? "llm.c bf16" : "llm.c fp32") : "weights .h5");
    free(host);
    layout_free(&lay);
    return 0;
}
