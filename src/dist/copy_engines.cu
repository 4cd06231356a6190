/* ZeRO-1's collectives by copy engines between the GPUs of one node (see
 * copy_engines.h). */
#include "dist/copy_engines.h"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/driver_entry.cuh"

enum {
    SLOTS = COPY_ENGINES_SLOTS,
    FLAGS_BYTES = COPY_ENGINES_FLAGS_BYTES,
    REASON_LEN = 512, /* why the copy engines cannot be used */
    AHEAD = 1u << 30, /* copy_engines_unblock: past every count a stream waits for */
    BUS_LEN = 32,     /* a PCI bus id */
    SUM_THREADS = 256,
};

/* The head of each rank's mailbox (one cudaMalloc, mapped by every peer):
 * arrived[s] counts the buckets whose part from sender s has landed here,
 * summed[r] the buckets owner r has summed (so its inbox slots for this
 * rank's parts are free again), gathered[s] the parameter pieces whose part
 * owned by s has landed here. The inbox follows: [sender][slot][element],
 * the senders being the other ranks in rank order. */
typedef struct {
    uint32_t arrived[COPY_ENGINES_MAX_RANKS];
    uint32_t summed[COPY_ENGINES_MAX_RANKS];
    uint32_t gathered[COPY_ENGINES_MAX_RANKS];
} mail_flags;
static_assert(sizeof(mail_flags) <= FLAGS_BYTES, "the flags fit before the inbox");

struct copy_engines {
    int rank, world;
    MPI_Comm comm; /* the group's: set-up, mapping and shutdown agree over it */
    cudaStream_t stream;
    cudaStream_t rescue; /* copy_engines_unblock's */
    size_t slot_elements;
    char *mailbox[COPY_ENGINES_MAX_RANKS]; /* every rank's, as mapped in this process */
    uint32_t buckets;                      /* buckets posted so far (atomic) */
    int sum_blocks;
    /* the all-gather: every rank's parameters as mapped here (params[rank]:
     * this rank's own), the IPC mappings to close, and the last gather's
     * map and number of pieces, counted from pieces_before */
    char *params[COPY_ENGINES_MAX_RANKS];
    void *params_mapping[COPY_ENGINES_MAX_RANKS];
    uint32_t pieces; /* pieces posted so far (atomic) */
    uint32_t pieces_before;
    int n_gather_pieces;
    const shard_map *gather_map;
    PFN_cuStreamWaitValue32_v11070 wait_value;
    PFN_cuStreamWriteValue32_v11070 write_value;
    PFN_cuMemGetAddressRange_v3020 address_range;
};

static mail_flags *flags_of(const copy_engines *p, int rank) {
    return reinterpret_cast<mail_flags *>(p->mailbox[rank]);
}

/* Owner's inbox slot for sender's parts. */
static __nv_bfloat16 *inbox(const copy_engines *p, int owner, int sender, uint32_t slot) {
    const int index = sender < owner ? sender : sender - 1;
    return reinterpret_cast<__nv_bfloat16 *>(p->mailbox[owner] + FLAGS_BYTES) +
           ((size_t)index * SLOTS + slot) * p->slot_elements;
}

static CUdeviceptr dev_address(const void *ptr) {
    return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr));
}

/* stream waits until *flag reaches count (cyclically: counts wrap). */
static void wait_count(const copy_engines *p, cudaStream_t stream, const uint32_t *flag,
                       uint32_t count) {
    const CUresult rc = p->wait_value(stream, dev_address(flag), count, CU_STREAM_WAIT_VALUE_GEQ);
    CHECK(rc == CUDA_SUCCESS, "cuStreamWaitValue32 failed (CUresult %d)", (int)rc);
}

/* The stream sets *flag = count after everything before it, with a system
 * fence first, so that the copies before it are visible to the peer. */
static void raise_count(const copy_engines *p, uint32_t *flag, uint32_t count) {
    const CUresult rc =
        p->write_value(p->stream, dev_address(flag), count, CU_STREAM_WRITE_VALUE_DEFAULT);
    CHECK(rc == CUDA_SUCCESS, "cuStreamWriteValue32 failed (CUresult %d)", (int)rc);
}

/* ------------------------------------------------------------ the sum */

typedef struct {
    const __nv_bfloat16 *part[COPY_ENGINES_MAX_RANKS]; /* rank order */
    int n;
} sum_sources;

/* out[i] = the sum of every rank's part[i], in fp32 in rank order, rounded
 * once (for two ranks exactly what a bf16 ncclReduce gives). n is a
 * multiple of 8 and every pointer 16-byte aligned: shards and buckets fall
 * on 128-element boundaries. */
static __global__ void sum_parts(__nv_bfloat16 *out, sum_sources src, size_t n) {
    const size_t vectors = n / 8;
    for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < vectors;
         v += (size_t)gridDim.x * blockDim.x) {
        float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        for (int k = 0; k < src.n; k++) {
            float part[8];
            unpack8(part, reinterpret_cast<const uint4 *>(src.part[k])[v]);
#pragma unroll
            for (int j = 0; j < 8; j++) acc[j] += part[j];
        }
        reinterpret_cast<uint4 *>(out)[v] = pack8(acc);
    }
}

/* ------------------------------------------------------------ one bucket */

extern "C" void copy_engines_reduce(copy_engines *p, const void *buf, size_t begin, size_t end,
                                    const shard_map *map, void *shard_out) {
    const uint32_t count = __atomic_add_fetch(&p->buckets, 1, __ATOMIC_RELAXED);
    const uint32_t slot = count % SLOTS;
    const __nv_bfloat16 *grads = static_cast<const __nv_bfloat16 *>(buf);
    /* This rank's parts of the bucket to their owners, by copy engine. */
    for (int r = 0; r < p->world; r++) {
        if (r == p->rank) continue;
        size_t lo, hi;
        zero_shard_part(map, r, begin, end, &lo, &hi);
        CHECK(hi - lo <= p->slot_elements,
              "a bucket's part of %zu elements exceeds the %zu of an "
              "inbox slot",
              hi - lo, p->slot_elements);
        /* The slot's last bucket (count - SLOTS) must be summed by its owner. */
        wait_count(p, p->stream, &flags_of(p, p->rank)->summed[r], count - SLOTS);
        if (hi > lo)
            CUDA_CHECK(cudaMemcpyAsync(inbox(p, r, p->rank, slot), grads + lo,
                                       (hi - lo) * sizeof(__nv_bfloat16), cudaMemcpyDeviceToDevice,
                                       p->stream));
        raise_count(p, &flags_of(p, r)->arrived[p->rank], count);
    }
    /* The other ranks' parts of this rank's own part, summed with its own. */
    size_t lo, hi;
    zero_shard_part(map, p->rank, begin, end, &lo, &hi);
    sum_sources src;
    src.n = p->world;
    for (int s = 0; s < p->world; s++) {
        if (s == p->rank) {
            src.part[s] = grads + lo;
            continue;
        }
        wait_count(p, p->stream, &flags_of(p, p->rank)->arrived[s], count);
        src.part[s] = inbox(p, p->rank, s, slot);
    }
    if (hi > lo) {
        CHECK((hi - lo) % 8 == 0 && lo % 8 == 0, "part [%zu, %zu) is not in 8-element units", lo,
              hi);
        __nv_bfloat16 *out = static_cast<__nv_bfloat16 *>(shard_out) + (lo - map->lo[p->rank]);
        const size_t blocks = ((hi - lo) / 8 + SUM_THREADS - 1) / SUM_THREADS;
        sum_parts<<<(unsigned)(blocks < (size_t)p->sum_blocks ? blocks : p->sum_blocks),
                    SUM_THREADS, 0, p->stream>>>(out, src, hi - lo);
        CUDA_CHECK_LAUNCH("sum_parts");
    }
    for (int s = 0; s < p->world; s++)
        if (s != p->rank) raise_count(p, &flags_of(p, s)->summed[p->rank], count);
}

/* ------------------------------------------------------------ the all-gather */

/* Collective: maps every peer's buf (the start of its allocation by IPC, plus
 * the offset of buf in it). */
static void map_peer_params(copy_engines *p, void *buf) {
    typedef struct {
        cudaIpcMemHandle_t handle;
        size_t offset;
    } exported;
    exported mine;
    memset(&mine, 0, sizeof mine);
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUresult rc = p->address_range(&base, &size, dev_address(buf));
    CHECK(rc == CUDA_SUCCESS, "cuMemGetAddressRange of the parameters failed (CUresult %d)",
          (int)rc);
    mine.offset = dev_address(buf) - base;
    CUDA_CHECK(cudaIpcGetMemHandle(&mine.handle, reinterpret_cast<void *>(base)));
    exported *all = static_cast<exported *>(xcalloc((size_t)p->world, sizeof(exported)));
    MPI_CHECK(
        MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, p->comm));
    for (int r = 0; r < p->world; r++) {
        if (r == p->rank) {
            p->params[r] = static_cast<char *>(buf);
            continue;
        }
        CUDA_CHECK(cudaIpcOpenMemHandle(&p->params_mapping[r], all[r].handle,
                                        cudaIpcMemLazyEnablePeerAccess));
        p->params[r] = static_cast<char *>(p->params_mapping[r]) + all[r].offset;
    }
    free(all);
}

extern "C" void copy_engines_gather(copy_engines *p, void *buf, const shard_map *map,
                                    const comm_range *pieces, int n_pieces) {
    if (!p->params[p->rank]) map_peer_params(p, buf);
    CHECK(p->params[p->rank] == buf, "the all-gather's parameters moved (%p, mapped %p)", buf,
          (void *)p->params[p->rank]);
    const uint32_t before = __atomic_load_n(&p->pieces, __ATOMIC_RELAXED);
    for (int k = 0; k < n_pieces; k++) {
        size_t a, b;
        zero_shard_part(map, p->rank, pieces[k].begin, pieces[k].end, &a, &b);
        for (int r = 0; r < p->world; r++) {
            if (r == p->rank) continue;
            if (b > a)
                CUDA_CHECK(cudaMemcpyAsync(p->params[r] + a * sizeof(__nv_bfloat16),
                                           p->params[p->rank] + a * sizeof(__nv_bfloat16),
                                           (b - a) * sizeof(__nv_bfloat16),
                                           cudaMemcpyDeviceToDevice, p->stream));
            raise_count(p, &flags_of(p, r)->gathered[p->rank], before + (uint32_t)k + 1);
        }
    }
    p->n_gather_pieces = n_pieces;
    p->gather_map = map;
    p->pieces_before = before;
    __atomic_store_n(&p->pieces, before + (uint32_t)n_pieces, __ATOMIC_RELAXED);
}

extern "C" void copy_engines_gather_wait(copy_engines *p, struct CUstream_st *stream,
                                         comm_range piece, int k) {
    CHECK(k >= 0 && k < p->n_gather_pieces, "piece %d of a gather of %d", k, p->n_gather_pieces);
    for (int s = 0; s < p->world; s++) {
        size_t a, b;
        zero_shard_part(p->gather_map, s, piece.begin, piece.end, &a, &b);
        if (s != p->rank && b > a)
            wait_count(p, stream, &flags_of(p, p->rank)->gathered[s],
                       p->pieces_before + (uint32_t)k + 1);
    }
}

extern "C" void copy_engines_unblock(copy_engines *p) {
    /* Counts compare cyclically: AHEAD past the count posted so far passes
     * every wait already queued, and every one the host could still queue.
     * No error checks: the process is on its way out. */
    const uint32_t buckets = __atomic_load_n(&p->buckets, __ATOMIC_RELAXED) + AHEAD;
    const uint32_t pieces = __atomic_load_n(&p->pieces, __ATOMIC_RELAXED) + AHEAD;
    mail_flags *mine = flags_of(p, p->rank);
    for (int r = 0; r < p->world; r++) {
        p->write_value(p->rescue, dev_address(&mine->arrived[r]), buckets,
                       CU_STREAM_WRITE_VALUE_DEFAULT);
        p->write_value(p->rescue, dev_address(&mine->summed[r]), buckets,
                       CU_STREAM_WRITE_VALUE_DEFAULT);
        p->write_value(p->rescue, dev_address(&mine->gathered[r]), pieces,
                       CU_STREAM_WRITE_VALUE_DEFAULT);
    }
}

/* ------------------------------------------------------------ set-up */

/* Whether every rank can use the copy engines, from this rank's view;
 * otherwise why not. buses: every rank's GPU's PCI bus id. */
static bool can_reach_peers(MPI_Comm comm, int rank, int world, const char *buses, int device,
                            char *why, size_t len) {
    MPI_Comm node;
    MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    int on_node = 0;
    MPI_CHECK(MPI_Comm_size(node, &on_node));
    MPI_CHECK(MPI_Comm_free(&node));
    if (on_node != world) {
        snprintf(why, len, "the %d ranks are on more than one node (%d on rank %d's)", world,
                 on_node, rank);
        return false;
    }
    if (world > COPY_ENGINES_MAX_RANKS) {
        snprintf(why, len, "%d ranks, more than the %d it supports", world,
                 (int)COPY_ENGINES_MAX_RANKS);
        return false;
    }
    for (int r = 0; r < world; r++) {
        if (r == rank) continue;
        const char *bus = buses + (size_t)r * BUS_LEN;
        int peer = -1, can = 0;
        if (cudaDeviceGetByPCIBusId(&peer, bus) != cudaSuccess) {
            cudaGetLastError();
            snprintf(why, len,
                     "rank %d's GPU (PCI %s) is not visible to rank %d: each rank sees only its "
                     "own GPU (CUDA_VISIBLE_DEVICES)",
                     r, bus, rank);
            return false;
        }
        CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
        if (!can) {
            snprintf(why, len, "rank %d's GPU cannot access the memory of rank %d's (PCI %s)", rank,
                     r, bus);
            return false;
        }
    }
    return true;
}

/* Collective: true when no rank has a reason; else every rank gets the
 * lowest failing rank's reason in why. */
static bool all_agree(MPI_Comm comm, int rank, int world, char *why, size_t len) {
    int first_bad = why[0] ? rank : world;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, comm));
    if (first_bad == world) return true;
    char reason[REASON_LEN];
    snprintf(reason, sizeof reason, "%s", why);
    MPI_CHECK(MPI_Bcast(reason, REASON_LEN, MPI_CHAR, first_bad, comm));
    snprintf(why, len, "%s", reason);
    return false;
}

/* Collective: unmaps the peers' mailboxes and parameters, then (once no rank maps it any
 * more) frees this rank's. Nothing may still be on its way into one. */
static void release_mailboxes(copy_engines *p) {
    for (int r = 0; r < p->world; r++) {
        if (r == p->rank) continue;
        if (p->mailbox[r]) CUDA_CHECK(cudaIpcCloseMemHandle(p->mailbox[r]));
        if (p->params_mapping[r]) CUDA_CHECK(cudaIpcCloseMemHandle(p->params_mapping[r]));
    }
    MPI_CHECK(MPI_Barrier(p->comm));
    CUDA_CHECK(cudaFree(p->mailbox[p->rank]));
    CUDA_CHECK(cudaStreamDestroy(p->rescue));
    free(p);
}

extern "C" copy_engines *copy_engines_create(const dist_group *group, struct CUstream_st *stream,
                                             size_t slot_elements, char *why, size_t why_len) {
    copy_engines *p = static_cast<copy_engines *>(xcalloc(1, sizeof *p));
    p->comm = group->mpi;
    p->rank = group->rank;
    p->world = group->size;
    p->stream = stream;
    CHECK(slot_elements % 8 == 0, "inbox slot of %zu elements, not whole 8-element units",
          slot_elements);
    p->slot_elements = slot_elements;
    char reason[REASON_LEN] = "";
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    p->sum_blocks = 4 * sms; /* a few waves of a grid-stride loop */

    char *buses = static_cast<char *>(xcalloc((size_t)p->world, BUS_LEN));
    char bus[BUS_LEN] = "";
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus, BUS_LEN, device));
    MPI_CHECK(MPI_Allgather(bus, BUS_LEN, MPI_CHAR, buses, BUS_LEN, MPI_CHAR, p->comm));
    if (can_reach_peers(p->comm, p->rank, p->world, buses, device, reason, sizeof reason) &&
        !(driver_entry("cuStreamWaitValue32", reinterpret_cast<void **>(&p->wait_value)) &&
          driver_entry("cuStreamWriteValue32", reinterpret_cast<void **>(&p->write_value)) &&
          driver_entry("cuMemGetAddressRange", reinterpret_cast<void **>(&p->address_range))))
        snprintf(reason, sizeof reason, "the driver has no stream memory operations");
    free(buses);
    if (!all_agree(p->comm, p->rank, p->world, reason, sizeof reason)) {
        snprintf(why, why_len, "%s", reason);
        free(p);
        return nullptr;
    }

    CUDA_CHECK(cudaStreamCreateWithFlags(&p->rescue, cudaStreamNonBlocking));
    /* This rank's mailbox, zeroed before any peer can map it. */
    const size_t bytes = copy_engines_mailbox_bytes(p->world, p->slot_elements);
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&p->mailbox[p->rank]), bytes));
    CUDA_CHECK(cudaMemset(p->mailbox[p->rank], 0, FLAGS_BYTES));
    CUDA_CHECK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t mine, *handles = static_cast<cudaIpcMemHandle_t *>(
                                 xcalloc((size_t)p->world, sizeof(cudaIpcMemHandle_t)));
    memset(&mine, 0, sizeof mine);
    cudaError_t st = cudaIpcGetMemHandle(&mine, p->mailbox[p->rank]);
    if (st != cudaSuccess) {
        cudaGetLastError();
        snprintf(reason, sizeof reason, "CUDA IPC refused on rank %d: %s", p->rank,
                 cudaGetErrorString(st));
    }
    MPI_CHECK(MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, handles, (int)sizeof mine, MPI_BYTE,
                            p->comm));
    for (int r = 0; r < p->world && !reason[0]; r++) {
        if (r == p->rank) continue;
        void *mapped = nullptr;
        st = cudaIpcOpenMemHandle(&mapped, handles[r], cudaIpcMemLazyEnablePeerAccess);
        if (st != cudaSuccess) {
            cudaGetLastError();
            snprintf(reason, sizeof reason, "rank %d cannot map rank %d's memory (CUDA IPC): %s",
                     p->rank, r, cudaGetErrorString(st));
        } else {
            p->mailbox[r] = static_cast<char *>(mapped);
        }
    }
    free(handles);
    if (!all_agree(p->comm, p->rank, p->world, reason, sizeof reason)) {
        snprintf(why, why_len, "%s", reason);
        release_mailboxes(p); /* no bucket was posted: nothing is on its way */
        return nullptr;
    }
    return p;
}

extern "C" void copy_engines_destroy(copy_engines *p) {
    if (!p) return;
    /* Once every rank's stream is done, no flag or copy is on its way into
     * a mailbox. */
    CUDA_CHECK(cudaStreamSynchronize(p->stream));
    MPI_CHECK(MPI_Barrier(p->comm));
    release_mailboxes(p);
}
