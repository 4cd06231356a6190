/* Distributed state of one rank: who we are in the job and on our node, and
 * the groups of ranks the other rooms talk over (group.h). One struct,
 * created once by dist_init and passed to everything that talks to other
 * ranks; dist_check_environment reports the job's shape (rank 0) and
 * rejects launches that cannot work. */
#ifndef GPT2_DIST_DIST_H
#define GPT2_DIST_DIST_H

#include <mpi.h>

#include "dist/group.h"

typedef struct {
    int rank, world;             /* in the job (MPI_COMM_WORLD) */
    int local_rank, local_world; /* on this node, from MPI_Comm_split_type(SHARED) */
    /* The groups (each its own message space). job: every rank, for what
     * all must agree on (the run directory, stops, checkpoints); dp: the
     * data-parallel group (gradients, ZeRO-1 shards, batches), today every
     * rank too; node: the ranks of this node (its GPUs, its RAM). */
    dist_group job, dp, node;
    char host[256];
    int n_nodes;      /* nodes in the job (one shared-memory communicator each) */
    int gpus_visible; /* GPUs this rank's CUDA runtime sees; 0 in a CPU-only build */
    int gpu;          /* the device index this rank uses with device=cuda: local_rank,
                         or 0 when the launcher bound one GPU to each rank; -1: none */
} dist_state;

/* Initialises MPI (a plain ./gpt2_ddp is a world of one) and fills d.
 * A world of one while the launcher's environment says it started several
 * processes (a binary built against another MPI than the launcher's) is an
 * error, exit 2, instead of N silent copies of a one-rank run. */
void dist_init(dist_state *d, int *argc, char ***argv);

/* Collective. Rank 0 prints the environment: launcher, ranks, nodes, ranks
 * per node, GPUs visible per rank, MPI / HDF5 / NCCL versions. With
 * use_gpus, every rank needs a GPU of its own on its node: otherwise every
 * rank exits 2 and the message gives the numbers. Sets d->gpu. */
void dist_check_environment(dist_state *d, int use_gpus);

void dist_free(dist_state *d);
#endif
