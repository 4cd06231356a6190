/* Picks and starts the backend a run asked for: the CPU kernel table, or the
 * CUDA one on the GPU given by this rank's place on its node; the
 * communicator that goes with it (MPI for CPU ranks, NCCL between GPUs);
 * knows the peak rate of that hardware, for MFU, and measures its memory. */
#ifndef GPT2_TRAIN_BACKEND_H
#define GPT2_TRAIN_BACKEND_H

#include <stdio.h>

#include "config/config.h"
#include "dist/comm.h"
#include "dist/dist.h"
#include "kernels/ops.h"
#include "train/safety/memory.h"

/* Resolves device=auto (cuda when this build has the CUDA backend and a GPU
 * is visible, else cpu) and checks that the build and the model suit the
 * device: device=cuda needs the CUDA backend (a dry run may plan for GPUs on
 * any build) and a head size its attention kernels run. Collective; exit
 * code 2 naming the problem. */
void backend_resolve_device(config *cfg);

/* Fails (naming the problem) when the device cannot be used: no GPU visible,
 * more ranks on this node than GPUs, a backend missing from the build. */
const kernel_ops *backend_select(const config *cfg, const dist_state *dist);

/* Dense bf16 peak FLOP/s of this rank's device, or 0 when unknown (CPU, an
 * unlisted GPU): MFU is then not reported. */
double backend_peak_flops(const config *cfg, const dist_state *dist);

/* Collective. The communicator for ops over the data-parallel group
 * (dist->dp): NCCL between GPU ranks (this build's NCCL), MPI otherwise
 * (CPU ranks; a single rank communicates nothing). With device=cuda, rank 0 first prints which host and GPU each
 * rank runs on. */
communicator *backend_communicator(const config *cfg, const dist_state *dist,
                                   const kernel_ops *ops);

/* The per-op table of a profile_ops run (rank 0), with each op's floor on
 * this device (its measured GEMM and copy ceilings) and, on the GPU, the
 * GEMM algorithms chosen by measurement. */
void backend_print_profile(const kernel_ops *ops, FILE *out);

/* GPU memory in use on this rank's device (cudaMemGetInfo: the CUDA context,
 * NCCL's buffers and every allocation), sampled after each step; the peak is
 * reported at the end next to the estimate. No-ops on the CPU backend. */
void backend_sample_memory(const kernel_ops *ops);
/* Collective. Rank 0 prints "peak GPU memory: ..." for rank 0 and the
 * largest over ranks, next to est (rank 0's estimate). */
void backend_report_memory(const kernel_ops *ops, const dist_group *job,
                           const memory_estimate *est);
#endif
