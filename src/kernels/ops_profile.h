/* Per-op timing of a kernel table (config key profile_ops): a table whose
 * every op runs the wrapped backend's op between two synchronize() + clock
 * reads (or, profile_ops_timing = stream, between two marks on the
 * backend's stream), and a per-step report of where the time went. Host
 * timing with a synchronize on both sides works for any backend; the cost is
 * that each op also pays its launch latency, so a profiled step is a little
 * slower than an unprofiled one (the report gives both the op total and the
 * step time). Stream marks leave the ops queued ahead as in an unprofiled
 * run, overlapped with the communication of several ranks. */
#ifndef GPT2_KERNELS_OPS_PROFILE_H
#define GPT2_KERNELS_OPS_PROFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "kernels/ops.h"

/* The timing table over inner (one per process: later calls return the same
 * table, which must then wrap the same inner the same way). on_stream: each
 * op is timed by the backend's stream marks (kernel_ops.mark_record), read
 * once a step, instead of between synchronizes: ops run as they do
 * unprofiled, overlapped with whatever else the device runs (several
 * ranks' communication), and an op's time is what it took there. */
const kernel_ops *ops_profile_wrap(const kernel_ops *inner, bool on_stream);

/* Marks the end of one training step. The first step is warm-up (autotuning,
 * scratch growth) and is discarded; ops run after the last mark (final
 * evaluation, saving) are not counted. */
void ops_profile_step_done(void);

/* The table, rank 0's business: op (matmuls by shape), calls per step, ms per
 * step, % of step, sorted by time; then the ops' total, the untimed rest
 * (host work between ops) and the step. Prints nothing before two steps.
 * With the device's ceilings (both > 0: a GEMM rate in FLOP/s and a copy
 * bandwidth in bytes/s, read + written) each op also gets its floor (the
 * least work at those rates), its time over the floor, and its rate; the
 * products with FP8 operands against fp8_flops_per_s (0: not measured, the
 * bf16 rate then). */
void ops_profile_print(FILE *out, double gemm_flops_per_s, double fp8_flops_per_s,
                       double bytes_per_s);
#endif
