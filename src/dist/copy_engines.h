/* ZeRO-1's two collectives by the GPUs' copy engines, for ranks of one node
 * whose GPUs reach each other's memory (NVLink or PCIe peer access). NCCL's
 * kernels hold SMs while they run, beside backward's and forward's products,
 * which then run slower; here the data travels by copy engine
 * (cudaMemcpyAsync into a peer's buffer, mapped by CUDA IPC) and only the
 * gradient sums run on SMs, in short kernels. Ranks order each other
 * through counters in each other's memory, written and waited for by the
 * streams themselves (cuStreamWriteValue32 / cuStreamWaitValue32): the
 * host never waits.
 *
 * Gradient reduction, per bucket, on the communication stream:
 *   1. wait until each owner has summed the bucket that last used the inbox
 *      slot this one will fill (two slots per sender, so one bucket's sum
 *      overlaps the next one's copies);
 *   2. copy each owner's part of the bucket into its inbox, then raise the
 *      owner's "arrived" counter for this sender;
 *   3. wait for every sender's part of this rank's own part, sum them with
 *      this rank's gradients in rank order (fp32, rounded once), write the
 *      sum into the reduced shard, and raise each sender's "summed" counter.
 *
 * Parameter all-gather, per piece (in the order forward reads them): copy
 * this rank's part of the piece into every peer's parameters, then raise the
 * peer's "gathered" counter for this owner. Forward's stream waits for the
 * counters of a piece's owners just before its first use. A peer's
 * parameters are overwritten only after it sent this rank the gradients of
 * those parameters, that is after its backward stopped reading them.
 *
 * Every rank posts the same buckets and pieces in the same order, and the
 * counters count them, so no stream ever waits for a later one. */
#ifndef GPT2_DIST_COPY_ENGINES_H
#define GPT2_DIST_COPY_ENGINES_H

#include <stdbool.h>
#include <stddef.h>

#include "dist/comm.h"
#include "dist/zero.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    COPY_ENGINES_MAX_RANKS = 8, /* one node's GPUs */
    /* comm_transport = auto picks them up to this many ranks: where they
     * were measured faster than NCCL (2x and 4x H200, docs/multi-gpu.md);
     * beyond, until measured there, only comm_transport = copy_engines
     * does */
    COPY_ENGINES_AUTO_RANKS = 4,
    /* inbox slots per sender: bucket k + 1 lands while bucket k is summed */
    COPY_ENGINES_SLOTS = 2,
    COPY_ENGINES_FLAGS_BYTES = 256, /* a mailbox's counters, then its inbox at 256 bytes */
};

/* The bytes of one rank's mailbox: its counters, then COPY_ENGINES_SLOTS
 * bucket slots of slot_elements bf16 elements for each other rank (the
 * memory estimate counts them too). */
static inline size_t copy_engines_mailbox_bytes(int world, size_t slot_elements) {
    return COPY_ENGINES_FLAGS_BYTES +
           (size_t)(world - 1) * COPY_ENGINES_SLOTS * slot_elements * 2 /* bf16 */;
}

/* Whether transport plans ZeRO-1's data on the copy engines at world ranks
 * (the communicator's choice and the memory estimate both ask here): asked
 * for, or auto up to COPY_ENGINES_AUTO_RANKS. Start-up can still find them
 * unusable (copy_engines_create's why): auto then takes NCCL. */
static inline bool copy_engines_planned(comm_transport transport, int world) {
    return transport == COMM_TRANSPORT_COPY_ENGINES ||
           (transport == COMM_TRANSPORT_AUTO && world <= COPY_ENGINES_AUTO_RANKS);
}

typedef struct copy_engines copy_engines;
struct CUstream_st; /* cudaStream_t's struct, without the CUDA headers */

/* Collective over group (the data-parallel one), on the current CUDA
 * device, which must outlive it; its copies and
 * sums run on `stream`. slot_elements: the most bf16 elements of one
 * bucket, a multiple of 8 (buckets_elements_per_bucket's are). Returns
 * NULL on every rank, with the reason in why, when any rank cannot use it:
 * ranks on more than one node, more than COPY_ENGINES_MAX_RANKS ranks, a
 * peer's GPU not visible to a rank or not reachable from its GPU, no stream
 * memory operations, or CUDA IPC refused. */
copy_engines *copy_engines_create(const dist_group *group, struct CUstream_st *stream,
                                  size_t slot_elements, char *why, size_t why_len);

/* On the stream: sums the bf16 buf[begin, end) over ranks; each rank
 * receives the part of the range in its shard at shard_out[i - lo] for
 * element i (comm.h's reduce_scatter_async). The stream must already be
 * ordered after the kernels that wrote buf[begin, end). */
void copy_engines_reduce(copy_engines *p, const void *buf, size_t begin, size_t end,
                         const shard_map *map, void *shard_out);

/* On the stream, ordered after the optimizer wrote this rank's shard of the
 * bf16 buf: this rank's part of each piece into every peer's buf, piece by
 * piece (comm.h's all_gather_async). buf is mapped into the peers at the
 * first call, a collective one (every rank's first gather); every call must
 * pass the same buf. */
void copy_engines_gather(copy_engines *p, void *buf, const shard_map *map, const comm_range *pieces,
                         int n_pieces);
/* `stream` (compute's) waits until every owner's part of piece k of the
 * last gather, the range `piece`, has landed in this rank's buf. */
void copy_engines_gather_wait(copy_engines *p, struct CUstream_st *stream, comm_range piece, int k);

/* When the job is being aborted (any thread): raises this rank's counters
 * far past every count a stream waits for, on a stream of its own, so that
 * the waits for a peer that will never answer pass and the streams drain.
 * NCCL's abort and the process's exit wait for the device. */
void copy_engines_unblock(copy_engines *p);

/* Collective: waits for the stream, then unmaps the peers' buffers and
 * frees this rank's inbox once no peer can write into it any more. */
void copy_engines_destroy(copy_engines *p);

#ifdef __cplusplus
}
#endif
#endif
