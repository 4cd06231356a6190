/* Starting weights from an existing model (see init_from.h). */
#include "train/init_from.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>

#include "base/fail.h"
#include "io/model_io.h"

enum { MSG_MAX = 3 * CKPT_PATH_MAX + 1024 };

/* Rank 0: opens the source and checks its sizes; 0, or -1 with msg. */
static int open_on_root(const config *cfg, const gpt2_layout *lay, model_source *src, char *msg,
                        size_t len) {
    char err[CKPT_PATH_MAX + 256];
    if (model_source_open(src, cfg->init_from, err, sizeof err) != 0)
        return snprintf(msg, len, "init_from = %s: %s", cfg->init_from, err), -1;
    const struct {
        const char *key;
        int ours, theirs;
    } same[] = {
        {"n_layer", lay->n_layer, src->n_layer},
        {"n_embd", lay->n_embd, src->n_embd},
        {"n_head", lay->n_head, src->n_head},
        {"vocab_size", lay->vocab_size, src->vocab_size},
        {"block_size", lay->block_size, src->block_size},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        if (same[i].ours != same[i].theirs)
            return snprintf(msg, len, "init_from = %s: the %s %s has %s = %d, the config %d",
                            cfg->init_from, model_source_kind_name(src->kind), src->file,
                            same[i].key, same[i].theirs, same[i].ours),
                   -1;
    return 0;
}

/* MPI counts are ints: the weights of 1558M and beyond go in pieces. */
static void broadcast_floats(float *data, size_t n) {
    const size_t piece = (size_t)1 << 28;
    for (size_t off = 0; off < n; off += piece) {
        const size_t count = n - off < piece ? n - off : piece;
        MPI_CHECK(MPI_Bcast(data + off, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD));
    }
}

/* Rank 0 alone reads the file: N ranks of a job need not all read (and
 * hold the shared file system for) the same gigabytes, and a file that only
 * rank 0's node can see (node-local disk) works. */
void init_from_load(const config *cfg, const gpt2_layout *lay, float *host_params) {
    static char msg[MSG_MAX];
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    model_source src;
    int status = rank == 0 ? open_on_root(cfg, lay, &src, msg, sizeof msg) : 0;
    MPI_CHECK(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (status != 0) fail_collective(EXIT_USAGE, "%s", msg);
    if (rank == 0) model_source_load(&src, lay, host_params);
    broadcast_floats(host_params, lay->n_elements);
}
