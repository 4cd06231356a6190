/* Backend selection, its communicator, device peak rates and memory (see
 * backend.h). */
#include "train/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "dist/buckets.h"
#include "kernels/attention.h"
#include "kernels/ops_profile.h"
#include "model/shape.h"
#if GPT2_HAVE_CUDA
#include "kernels/cuda_info.h"
#include "kernels/matmul.h"
#endif

void backend_resolve_device(config *cfg) {
    if (strcmp(cfg->device, "auto") == 0) {
#if GPT2_HAVE_CUDA
        strcpy(cfg->device, cuda_device_count() > 0 ? "cuda" : "cpu");
#else
        strcpy(cfg->device, "cpu");
#endif
    }
    if (cfg->fp8 && strcmp(cfg->device, "cpu") == 0)
        fail_collective(EXIT_USAGE,
                        "fp8 = true needs device=cuda, but device=auto found no GPU%s (FP8 needs "
                        "a GPU of compute capability 8.9 or newer)",
                        GPT2_HAVE_CUDA ? "" : " (this binary has no CUDA backend)");
    if (strcmp(cfg->comm_transport, "copy_engines") == 0 && strcmp(cfg->device, "cpu") == 0)
        fail_collective(EXIT_USAGE,
                        "comm_transport = copy_engines needs device=cuda, but device=auto found "
                        "no GPU%s: use comm_transport = auto",
                        GPT2_HAVE_CUDA ? "" : " (this binary has no CUDA backend)");
    if (strcmp(cfg->device, "cuda") != 0) return;
    if (!GPT2_HAVE_CUDA && !cfg->dry_run)
        fail_collective(EXIT_USAGE,
                        "device=cuda but this binary was built without the CUDA backend "
                        "(configure where nvcc is found, or use device=cpu)");
    const model_shape shape = {.n_embd = cfg->n_embd, .n_head = cfg->n_head};
    char why[256];
    if (shape_check_cuda(&shape, why, sizeof why) != 0)
        fail_collective(EXIT_USAGE, "device=cuda: %s", why);
}

const kernel_ops *backend_select(const config *cfg, const dist_state *dist) {
    if (strcmp(cfg->device, "cpu") == 0) return &ops_cpu;
#if GPT2_HAVE_CUDA
    if (strcmp(cfg->device, "cuda") == 0) {
        int gpus = cuda_device_count();
        if (gpus == 0)
            FAIL("device=cuda but no GPU is visible on %s (CUDA_VISIBLE_DEVICES=%s)", dist->host,
                 getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
            /* More ranks than GPUs on a node was refused by dist_check_environment,
         * which also allows one GPU bound to each rank (--gpus-per-task=1). */
#if !(defined(GPT2_HAVE_NCCL) && GPT2_HAVE_NCCL)
        if (dist->world > 1)
            FAIL("device=cuda with %d ranks needs the NCCL communicator, which this build does "
                 "not have (configure with NCCL: libnccl-dev, or NCCL_HOME); run one GPU rank, "
                 "or device=cpu for several ranks",
                 dist->world);
#endif
        /* The GPU dist_check_environment picked: the node-local rank's, or
         * the only one when the launcher bound one GPU to each rank. */
        cuda_backend_options opt = cuda_backend_defaults();
        opt.matmul_autotune = cfg->matmul_autotune;
        opt.attention.hopper = cfg->attention_hopper;
        opt.attention.deterministic = cfg->attention_deterministic;
        ops_cuda_init(dist->gpu >= 0 ? dist->gpu : dist->local_rank, &opt);
        if (!attention_cuda_options_supported(&opt.attention))
            fail_at(__FILE__, __LINE__, EXIT_USAGE,
                    "attention_deterministic=true needs the Hopper attention kernels: an "
                    "H100/H200, a build with sm_90a code (GPT2_CUDA_ARCHS with 90a) and "
                    "attention_hopper=true; this run has %s",
                    attention_cuda_kernels(64, &opt.attention));
        const int cc = cuda_compute_capability(dist->gpu >= 0 ? dist->gpu : dist->local_rank);
        if (cfg->fp8 && cc < 89)
            fail_at(__FILE__, __LINE__, EXIT_USAGE,
                    "fp8 = true needs FP8 tensor cores (compute capability 8.9 or newer: H100, "
                    "H200, L40S); this GPU is compute capability %d.%d: set fp8 = false",
                    cc / 10, cc % 10);
        return &ops_cuda;
    }
#endif
    (void)dist;
    FAIL("device=%s: backend not available in this build", cfg->device);
}

double backend_peak_flops(const config *cfg, const dist_state *dist) {
#if GPT2_HAVE_CUDA
    if (strcmp(cfg->device, "cuda") != 0) return 0.0;
    char name[256];
    cuda_device_describe(dist->gpu >= 0 ? dist->gpu : dist->local_rank, name, sizeof name);
    /* Dense bf16 tensor-core peaks from the vendor's datasheets (SXM parts). */
    static const struct {
        const char *model;
        double flops;
    } peaks[] = {{"H200", 989.4e12}, {"H100", 989.4e12}, {"A100", 312e12}, {"L40S", 362e12}};
    for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++)
        if (strstr(name, peaks[i].model)) return peaks[i].flops;
#else
    (void)cfg, (void)dist;
#endif
    return 0.0;
}

#if GPT2_HAVE_CUDA
/* Rank 0 prints one line per rank: host, GPU index, model and PCI bus id, so
 * that a wrong binding (two ranks on one GPU, GPUs of another node) shows. */
static void print_gpu_map(const dist_state *dist) {
    enum { LINE = 512 };
    const int dev = dist->gpu >= 0 ? dist->gpu : dist->local_rank;
    char name[256], bus[64], line[LINE];
    cuda_device_describe(dev, name, sizeof name);
    cuda_device_pci_bus_id(dev, bus, sizeof bus);
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(line, sizeof line, "  rank %d -> %.100s -> GPU %d: %.120s, PCI %.32s%s%.100s",
             dist->rank, dist->host, dev, name, bus, cvd ? ", CUDA_VISIBLE_DEVICES=" : "",
             cvd ? cvd : "");
    char *all = dist->rank == 0 ? xmalloc((size_t)dist->world * LINE) : NULL;
    group_gather(&dist->job, line, LINE, all, 0);
    if (dist->rank == 0) {
        printf("GPU map (rank -> host -> GPU):\n");
        for (int r = 0; r < dist->world; r++) printf("%s\n", all + (size_t)r * LINE);
        fflush(stdout);
    }
    free(all);
}
#endif

communicator *backend_communicator(const config *cfg, const dist_state *dist,
                                   const kernel_ops *ops) {
    if (strcmp(ops->name, "cuda") != 0) return comm_mpi_create(&dist->dp);
#if GPT2_HAVE_CUDA
    print_gpu_map(dist);
#endif
    if (dist->world == 1) return comm_mpi_create(&dist->dp); /* nothing to communicate */
#if defined(GPT2_HAVE_NCCL) && GPT2_HAVE_NCCL
    /* zero_stage 0 all-reduces: NCCL's alone. */
    const comm_transport transport =
        cfg->zero_stage != 1 ? COMM_TRANSPORT_NCCL : comm_transport_named(cfg->comm_transport);
    const comm_nccl_options opt = {
        .timeout_s = cfg->nccl_timeout_s,
        .reduce_fp32 = strcmp(cfg->grad_reduce_dtype, "fp32") == 0,
        .transport = transport,
        .bucket_elements = buckets_elements_per_bucket(cfg->bucket_mb, ops->elem_bytes)};
    communicator *c = comm_nccl_create(&dist->dp, ops_cuda_stream(), COMM_BF16, &opt);
    const char *moved_by = comm_nccl_transport(c);
    const bool by_copy_engines = strcmp(moved_by, "copy engines") == 0;
    if (dist->rank == 0)
        printf("communicator: NCCL, %d ranks, gradients reduced in %s%s%s, watchdog %g s\n",
               dist->world, by_copy_engines ? "fp32 (rounded once)" : cfg->grad_reduce_dtype,
               cfg->zero_stage == 1 ? ", ZeRO-1's data moved by " : "",
               cfg->zero_stage == 1 ? moved_by : "", cfg->nccl_timeout_s);
    return c;
#else
    (void)cfg;
    FAIL("device=cuda with %d ranks needs NCCL, which this build does not have", dist->world);
#endif
}

void backend_print_profile(const kernel_ops *ops, FILE *out) {
    double gemm_rate = 0.0, fp8_rate = 0.0, copy_rate = 0.0;
#if GPT2_HAVE_CUDA
    if (strcmp(ops->name, "cuda") == 0) cuda_measure_ceilings(&gemm_rate, &fp8_rate, &copy_rate);
#else
    (void)ops;
#endif
    ops_profile_print(out, gemm_rate, fp8_rate, copy_rate);
#if GPT2_HAVE_CUDA
    if (strcmp(ops->name, "cuda") == 0) matmul_cuda_print_tuning(out);
#endif
}

static size_t peak_in_use; /* bytes, this rank's device */

void backend_sample_memory(const kernel_ops *ops) {
#if GPT2_HAVE_CUDA
    if (strcmp(ops->name, "cuda") != 0) return;
    const size_t used = cuda_memory_in_use();
    if (used > peak_in_use) peak_in_use = used;
#else
    (void)ops;
#endif
}

void backend_report_memory(const kernel_ops *ops, const dist_group *job,
                           const memory_estimate *est) {
    if (strcmp(ops->name, "cuda") != 0) return;
    backend_sample_memory(ops);
    const double mine = (double)peak_in_use;
    double most = mine;
    group_allreduce_double(job, &most, 1, GROUP_MAX);
    if (job->rank == 0)
        printf("peak GPU memory: %.2f GiB on rank 0, %.2f GiB the most on any rank (estimate "
               "%.2f GiB; measured is device-wide: it adds the CUDA context, cuBLAS and NCCL "
               "buffers)\n",
               mine / 1073741824.0, most / 1073741824.0, est->total / 1073741824.0);
}
