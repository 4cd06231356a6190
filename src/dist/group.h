/* A group of ranks, and the host-side collectives the other rooms run over
 * it (agreeing on a decision, gathering a report, a checkpoint's barrier).
 * The rooms above dist never name an MPI communicator: they are given a
 * group. Today a job has two over the same ranks, the job itself (what
 * every rank must agree on: the run directory, stops, checkpoint
 * publication) and the data-parallel group (gradients, shards, batches);
 * a tensor- or pipeline-parallel group would be one more (dist.h makes
 * them). Each group is its own message space (a duplicate communicator).
 *
 * A group of one (group_single, or a job of one rank) calls no MPI at all,
 * so the tools use the same code without MPI_Init. Every function here is
 * collective over the group and blocking; an MPI failure ends the job
 * (MPI_CHECK), and so does, once the watch is armed (CPU ranks), a rank that
 * stops answering while the others wait (mpi_watch.h). */
#ifndef GPT2_DIST_GROUP_H
#define GPT2_DIST_GROUP_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int rank, size; /* this process's place in the group, and the group's size */
    MPI_Comm mpi;   /* MPI_COMM_NULL for a group of one */
} dist_group;

typedef enum { GROUP_SUM, GROUP_MAX, GROUP_MIN, GROUP_BOR } group_op;

/* This process alone (rank 0 of 1): no MPI needed. */
dist_group group_single(void);
/* A group over the ranks of comm, in its own message space (MPI_Comm_dup);
 * collective over comm. */
void group_from_mpi(dist_group *g, MPI_Comm comm);
void group_free(dist_group *g);

void group_barrier(const dist_group *g);
/* bytes of buf from root to every rank (any size: sent in pieces). */
void group_bcast(const dist_group *g, void *buf, size_t bytes, int root);
/* values[0..n) combined element-wise over the ranks, in place (GROUP_BOR
 * only for ints). */
void group_allreduce_int(const dist_group *g, int *values, int n, group_op op);
void group_allreduce_double(const dist_group *g, double *values, int n, group_op op);
/* The least (minloc) or greatest (maxloc) of one value per rank, and the
 * lowest rank that holds it, on every rank. */
void group_minloc(const dist_group *g, double value, double *least, int *at_rank);
void group_maxloc(const dist_group *g, double value, double *most, int *at_rank);
/* bytes from every rank into root's recv (size x bytes, in rank order;
 * recv is used on root only). */
void group_gather(const dist_group *g, const void *send, size_t bytes, void *recv, int root);
/* Rank r's counts[r] floats into root's recv at displs[r]. Root's own part
 * must already lie in place in recv (its send is not read). */
void group_gatherv_float(const dist_group *g, const float *send, const size_t *counts,
                         const size_t *displs, float *recv, int root);
#ifdef __cplusplus
}
#endif
#endif
