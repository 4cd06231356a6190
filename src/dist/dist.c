/* MPI bootstrap: rank, world size and node-local rank (see dist.h). */
#include "dist/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/fail.h"

#ifdef _OPENMP
#include <omp.h>
#endif

void dist_init(dist_state *d, int *argc, char ***argv) {
    memset(d, 0, sizeof *d);
    MPI_CHECK(MPI_Init(argc, argv));
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &d->rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &d->world));
    /* Ranks that share memory share a node: their order picks the GPU. */
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL,
                                  &d->node_comm));
    MPI_CHECK(MPI_Comm_rank(d->node_comm, &d->local_rank));
    MPI_CHECK(MPI_Comm_size(d->node_comm, &d->local_world));
    if (gethostname(d->host, sizeof d->host) != 0) snprintf(d->host, sizeof d->host, "?");
    d->host[sizeof d->host - 1] = '\0';
#ifdef _OPENMP
    /* Ranks on one node share its cores: without an explicit OMP_NUM_THREADS,
     * each rank takes its share, since oversubscribed OpenMP threads spin
     * and can slow a step by orders of magnitude. */
    if (!getenv("OMP_NUM_THREADS") && d->local_world > 1) {
        int share = omp_get_num_procs() / d->local_world;
        omp_set_num_threads(share > 0 ? share : 1);
    }
#endif
}

void dist_free(dist_state *d) {
    MPI_Comm_free(&d->node_comm);
    MPI_Finalize();
}
