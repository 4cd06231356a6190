/* The communicator: the collectives data parallelism needs, behind one
 * interface that MPI (host buffers, CPU backend) and NCCL (device buffers on a
 * communication stream) both implement. Asynchronous operations return at
 * once; comm_progress lets them advance while compute continues, and
 * comm_wait_all completes them. Buffers hold `elem` elements (fp32 or bf16)
 * and are addressed by element index. */
#ifndef GPT2_DIST_COMM_H
#define GPT2_DIST_COMM_H

#include <stdbool.h>
#include <stddef.h>

#include "dist/zero.h"

typedef enum { COMM_F32, COMM_BF16 } comm_dtype;

typedef struct communicator communicator;

typedef struct {
    /* Sums buf[begin, end) over ranks; each rank receives the part of the
     * range that lies in its shard, at shard_out[i - lo] for element i. */
    void (*reduce_scatter_async)(communicator *c, const void *buf, size_t begin, size_t end,
                                 const shard_map *map, void *shard_out);
    /* Sums buf[begin, end) over ranks, in place. */
    void (*all_reduce_async)(communicator *c, void *buf, size_t begin, size_t end);
    /* Every rank's shard [lo, hi) of buf is copied to all ranks, in place. */
    void (*all_gather)(communicator *c, void *buf, const shard_map *map);
    /* Sum of one double over ranks (blocking). */
    double (*sum_scalar)(communicator *c, double value);
    /* Drives outstanding operations; true when none is left. */
    bool (*progress)(communicator *c);
    void (*wait_all)(communicator *c);
    void (*barrier)(communicator *c);
    /* Ends every rank of the job (never returns). */
    void (*abort)(communicator *c, int exit_code);
    void (*destroy)(communicator *c);
} comm_ops;

struct communicator {
    const comm_ops *ops;
    int rank, world;
    comm_dtype dtype;
    void *impl;
};

/* MPI over a duplicate of MPI_COMM_WORLD (its own message space, so the
 * bucket traffic never matches other collectives). fp32 host buffers. */
communicator *comm_mpi_create(void);
#endif
