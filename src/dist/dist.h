/* Distributed state of one rank: who we are in the job and on our node.
 * One struct, created once by dist_init and passed to everything that talks
 * to other ranks. */
#ifndef GPT2_DIST_DIST_H
#define GPT2_DIST_DIST_H

#include <mpi.h>

typedef struct {
    int rank, world;             /* in MPI_COMM_WORLD */
    int local_rank, local_world; /* on this node, from MPI_Comm_split_type(SHARED) */
    MPI_Comm node_comm;
    char host[256];
} dist_state;

/* Initialises MPI (a plain ./gpt2_ddp is a world of one) and fills d. */
void dist_init(dist_state *d, int *argc, char ***argv);
void dist_free(dist_state *d);
#endif
