/* gpt2_ddp: config -> dist -> model -> data -> train loop.
 * Usage: gpt2_ddp [CONFIG.ini] [key=value | --key=value ...] | --help | --version */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#if defined(GPT2_HAVE_NCCL) && GPT2_HAVE_NCCL
#include <nccl.h>
#endif

#include "base/fail.h"
#include "dist/dist.h"
#include "dist/mpi_watch.h"
#if GPT2_HAVE_CUDA
#include "kernels/cuda_info.h"
#endif
#include "config/args.h"
#include "config/config.h"
#include "train/backend.h"
#include "train/init_from.h"
#include "train/safety/config_agree.h"
#include "train/safety/exit_status.h"
#include "train/train.h"
#include "train/variant_name.h"

static void print_usage(FILE *out) {
    fprintf(out, "usage: gpt2_ddp [CONFIG.ini] [key=value | --key=value | --key value ...]\n"
                 "       gpt2_ddp --print-config [CONFIG.ini] [settings ...]\n"
                 "       gpt2_ddp --help | --version\n\n"
                 "Trains GPT-2 on one or many ranks (mpirun -np N gpt2_ddp ...). Settings are the\n"
                 "keys below: CONFIG.ini first (optional: without it the defaults, GPT-2 124M),\n"
                 "then settings on the command line, which override it (the last one wins).\n"
                 "--lr=1e-3, --lr 1e-3 and lr=1e-3 are the same setting; a boolean key alone\n"
                 "(--save_init) is true. --print-config prints the resolved configuration and\n"
                 "exits; --help, --version and --print-config may stand anywhere on the line.\n"
                 "Example: gpt2_ddp configs/tiny.ini --max_steps=50 --lr=1e-3\n\n");
}

#if defined(GPT2_SANITIZE_BUILD) && GPT2_SANITIZE_BUILD
/* The sanitizer job checks the trainer for memory errors and undefined
 * behaviour, not for leaks: in the trainer's process LeakSanitizer's tracer
 * meets a bogus dynamic-TLS range (gcc 12's libsanitizer on glibc 2.36,
 * Debian 12) and dies with signal 11 now and then, failing a test that found
 * nothing. The tools and unit tests keep the leak check; ASAN_OPTIONS=
 * detect_leaks=1 turns it back on here. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }
#endif

static void print_version(void) {
    printf("gpt2_ddp %s\n", GPT2_VERSION);
    printf("backends: cpu (fp32%s)", GPT2_HAVE_OPENMP ? ", OpenMP" : "");
#if GPT2_HAVE_CUDA
    int v = cuda_runtime_version();
    printf(", cuda (runtime %d.%d, %d GPU(s) visible)", v / 1000, (v % 1000) / 10,
           cuda_device_count());
#endif
    printf("\n");
    int mpi_major = 0, mpi_minor = 0;
    MPI_Get_version(&mpi_major, &mpi_minor);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *newline = strchr(lib, '\n');
    if (newline) *newline = '\0';
    unsigned h5_major = 0, h5_minor = 0, h5_release = 0;
    H5get_libversion(&h5_major, &h5_minor, &h5_release);
    printf("features: MPI %d.%d (%s), HDF5 %u.%u.%u checkpoints\n", mpi_major, mpi_minor, lib,
           h5_major, h5_minor, h5_release);
#if defined(GPT2_HAVE_NCCL) && GPT2_HAVE_NCCL
    int nccl = 0; /* the library loaded now; the build's header may be older */
    ncclGetVersion(&nccl);
    printf("NCCL: %d.%d.%d (GPU communicator; built against %d.%d.%d)\n", nccl / 10000,
           nccl % 10000 / 100, nccl % 100, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
#else
    printf("NCCL: not in this build (device=cuda runs one rank)\n");
#endif
#ifdef GPT2_TOKENIZER
    printf("tokenizer: GPT-2 BPE, %s (gpt2_tokenize, gpt2_sample)\n", GPT2_TOKENIZER);
#else
    printf("tokenizer: not built (needs PCRE2 and json-c)\n");
#endif
}

int main(int argc, char **argv) {
    dist_state dist;
    dist_init(&dist, &argc, &argv);

    config_args args;
    char why[1024];
    if (!config_args_parse(argc, argv, &args, why, sizeof why))
        fail_collective(EXIT_USAGE, "command line: %s", why);
    if (args.action == ARGS_HELP || args.action == ARGS_VERSION) {
        if (dist.rank == 0 && args.action == ARGS_HELP) {
            print_usage(stdout);
            config_print_help(stdout);
        }
        if (dist.rank == 0 && args.action == ARGS_VERSION) print_version();
        config_args_free(&args);
        dist_free(&dist);
        return 0;
    }
    /* Nothing at all: the defaults would start a GPT-2 124M run on the
     * default data, rarely what a first "gpt2_ddp" means. */
    if (args.action == ARGS_USAGE) {
        if (dist.rank == 0) print_usage(stderr);
        fail_collective(EXIT_USAGE,
                        "nothing to run: give a config file (gpt2_ddp configs/tiny.ini) or "
                        "settings for the defaults, GPT-2 124M (gpt2_ddp --max_steps=10)");
    }
    const int print_only = args.action == ARGS_PRINT_CONFIG;

    config cfg;
    config_load(&cfg, args.config_path, args.n_overrides, args.overrides);
    config_args_free(&args);
    config_agree_or_fail(&cfg, &dist.job);
    /* Before validation: the shape decides the head size and whether
     * seq_len fits block_size. */
    static char shape_note[8192];
    init_from_fit_shape(&dist.job, &cfg, shape_note, sizeof shape_note);
    /* What the trainer chose for the user, before a validation error they
     * may explain; --print-config's output stays a config file that reads
     * back, so there they are comments. */
    const char *comment = print_only ? "# " : "";
    if (dist.rank == 0 && cfg.load_note[0]) printf("%snote: %s\n", comment, cfg.load_note);
    if (dist.rank == 0 && shape_note[0]) printf("%s%s\n", comment, shape_note);
    fflush(stdout);
    config_validate(&cfg, dist.world);
    backend_resolve_device(&cfg);
    if (print_only) {
        if (dist.rank == 0) {
            static char text[16384];
            config_format(&cfg, text, sizeof text);
            fputs(text, stdout);
        }
        dist_free(&dist);
        return 0;
    }
    /* CPU ranks wait for each other in MPI: from here on, one that stops
     * answering ends the job (on GPUs the NCCL watchdog does). */
    if (strcmp(cfg.device, "cpu") == 0) mpi_watch_arm(cfg.mpi_timeout_s);
    /* Rank 0 reports the job's shape; a rank without a GPU of its own ends the job. */
    dist_check_environment(&dist, strcmp(cfg.device, "cuda") == 0 && !cfg.dry_run);
    variant_name_choose(&cfg, &dist.job);
    int rc = train_run(&cfg, &dist);
    /* Before MPI_Finalize: an mpirun that was signalled itself kills its
     * ranks a second after it asks them to stop, and exits 1 whatever they
     * return; the launch scripts read the code from here instead. */
    exit_status_record(dist.rank, rc);
    dist_free(&dist);
    return rc;
}
