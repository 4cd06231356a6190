/* MPI bootstrap: rank, world size and node-local rank, the check that the
 * launcher and the binary's MPI agree, and the environment report (see dist.h). */
#include "dist/dist.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/fail_job.h"
#include "dist/mpi_watch.h"
#if GPT2_HAVE_CUDA
#include "kernels/cuda_info.h"
#endif
#if defined(GPT2_HAVE_NCCL) && GPT2_HAVE_NCCL
#include <nccl.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

/* What started this process, from the variables launchers set. */
typedef struct {
    const char *name; /* "Open MPI's mpirun", "srun", ... */
    const char *var;  /* the variable that gave the process count */
    int size, rank;   /* processes started and this one's index; 0 when unknown */
} launcher_info;

static int env_int(const char *name, int fallback) {
    const char *s = getenv(name);
    if (!s || !*s) return fallback;
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' && v >= 0 && v < (1L << 30) ? (int)v : fallback;
}

static launcher_info detect_launcher(void) {
    /* Most specific first: mpirun inside a Slurm job also carries SLURM_*.
     * A batch script itself has no SLURM_STEP_NUM_TASKS: only srun steps do. */
    static const struct {
        const char *size_var, *rank_var, *name;
    } known[] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "Open MPI's mpirun"},
        {"PMI_SIZE", "PMI_RANK", "a PMI launcher: mpiexec of MPICH or Intel MPI, srun --mpi=pmi2"},
        {"MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK", "MVAPICH's mpirun_rsh"},
        {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "srun"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        int size = env_int(known[i].size_var, 0);
        if (size > 0)
            return (launcher_info){known[i].name, known[i].size_var, size,
                                   env_int(known[i].rank_var, 0)};
    }
    return (launcher_info){"none (a single process)", NULL, 0, 0};
}

/* First line of MPI_Get_library_version ("Open MPI v4.1.4, package: ..."). */
static void mpi_library(char *buf, size_t len) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(lib, &n);
    lib[n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
    /* "Open MPI v4.1.4", "MPICH Version: 4.0": the rest is packaging. */
    lib[strcspn(lib, ",\n")] = '\0';
    snprintf(buf, len, "%s", lib);
}

void dist_init(dist_state *d, int *argc, char ***argv) {
    memset(d, 0, sizeof *d);
    d->gpu = -1;
    MPI_CHECK(MPI_Init(argc, argv));
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &d->rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &d->world));
    if (d->world == 1) {
        launcher_info l = detect_launcher();
        if (l.size > 1) {
            /* Every copy is rank 0 of its own world: the launcher's first
             * process speaks for all of them. */
            if (l.rank == 0) {
                char lib[512];
                mpi_library(lib, sizeof lib);
                fprintf(
                    stderr,
                    "gpt2_ddp: error: started as %d processes (%s=%d, from %s), but MPI sees a "
                    "world of 1: this binary's MPI library (%s) does not match the launcher's, "
                    "and the job would be %d separate copies of a one-rank run. Start it with the "
                    "mpirun of the MPI it was built with, or under Slurm with an MPI plugin that "
                    "library supports (srun --mpi=pmix for Open MPI; srun --mpi=list shows them)\n",
                    l.size, l.var, l.size, l.name, lib, l.size);
                fflush(stderr);
            }
            MPI_Finalize();
            exit(EXIT_USAGE);
        }
    }
    fail_set_job(MPI_COMM_WORLD);
    group_from_mpi(&d->job, MPI_COMM_WORLD);
    group_from_mpi(&d->dp, MPI_COMM_WORLD);
    /* Ranks that share memory share a node: their order picks the GPU. */
    MPI_Comm node;
    MPI_CHECK(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &node));
    group_from_mpi(&d->node, node);
    MPI_CHECK(MPI_Comm_free(&node));
    d->local_rank = d->node.rank;
    d->local_world = d->node.size;
    if (gethostname(d->host, sizeof d->host) != 0) snprintf(d->host, sizeof d->host, "?");
    d->host[sizeof d->host - 1] = '\0';
    if (d->world > 1) {
        mpi_watch_init(MPI_COMM_WORLD, d->host); /* armed later, on CPU ranks */
        fail_set_job_wait(mpi_watch_wait);
    }
    int first_on_node = d->local_rank == 0;
    MPI_CHECK(MPI_Allreduce(&first_on_node, &d->n_nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
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

/* Picks this rank's GPU, or writes why it has none into err. Collective
 * over the node (the CUDA_VISIBLE_DEVICES of every rank on it). */
static void pick_gpu(dist_state *d, char *err, size_t len) {
    enum { VIS = 128 };
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    char mine[VIS];
    snprintf(mine, sizeof mine, "%s", cvd ? cvd : "");
    char *all = xmalloc((size_t)d->local_world * VIS);
    MPI_CHECK(MPI_Allgather(mine, VIS, MPI_CHAR, all, VIS, MPI_CHAR, d->node.mpi));
    /* One GPU each, bound by the launcher (srun --gpus-per-task=1, a wrapper
     * that sets CUDA_VISIBLE_DEVICES per rank): fine if no two ranks share it. */
    int bound_alone = d->gpus_visible == 1 && mine[0] != '\0';
    for (int r = 0; r < d->local_world && bound_alone; r++)
        if (r != d->local_rank && strcmp(all + (size_t)r * VIS, mine) == 0) bound_alone = 0;
    free(all);

    if (d->gpus_visible == 0)
        snprintf(err, len,
                 "device=cuda but no GPU is visible to rank %d on %s (CUDA_VISIBLE_DEVICES=%s)",
                 d->rank, d->host, cvd ? cvd : "unset");
    else if (d->gpus_visible >= d->local_world)
        d->gpu = d->local_rank;
    else if (bound_alone)
        d->gpu = 0;
    else
        snprintf(err, len,
                 "device=cuda with %d ranks on %s, but rank %d sees only %d GPU(s) "
                 "(CUDA_VISIBLE_DEVICES=%s): start at most one rank per GPU (mpirun -np <= GPUs; "
                 "under Slurm --ntasks-per-node <= --gpus-per-node)",
                 d->local_world, d->host, d->rank, d->gpus_visible, cvd ? cvd : "unset");
}

static void print_report(const dist_state *d, const char *hosts, int rpn_min, int rpn_max,
                         int gpu_min, int gpu_max, int use_gpus) {
    launcher_info l = detect_launcher();
    const char *job = getenv("SLURM_JOB_ID");
    printf("environment: %d rank(s) on %d node(s) (", d->world, d->n_nodes);
    int shown = 0;
    for (int r = 0; r < d->world && shown < 8; r++) {
        const char *h = hosts + (size_t)r * sizeof d->host;
        int first = 1; /* name each node once, in rank order */
        for (int q = 0; q < r && first; q++)
            if (strcmp(hosts + (size_t)q * sizeof d->host, h) == 0) first = 0;
        if (first) printf("%s%s", shown++ ? ", " : "", h);
    }
    printf("%s), ", d->n_nodes > shown ? ", ..." : "");
    /* Two lines: where the ranks run, then the libraries (for bug reports). */
    if (rpn_min == rpn_max)
        printf("%d rank(s) per node", rpn_min);
    else
        printf("%d to %d ranks per node (uneven)", rpn_min, rpn_max);
    printf(" | launcher: %s", l.name);
    if (job) {
        const char *step = getenv("SLURM_STEP_ID");
        printf(" (Slurm job %s%s%s, restart %d)", job, step ? ", step " : "", step ? step : "",
               env_int("SLURM_RESTART_COUNT", 0));
    }
#if GPT2_HAVE_CUDA
    printf(" | GPUs visible per rank: ");
    if (gpu_min == gpu_max)
        printf("%d", gpu_min);
    else
        printf("%d to %d", gpu_min, gpu_max);
    if (use_gpus && d->gpu >= 0)
        printf(" (each rank uses %s)", d->gpus_visible >= d->local_world
                                           ? "the GPU of its node-local rank"
                                           : "the one GPU bound to it");
    printf("\n");
#else
    (void)gpu_min, (void)gpu_max, (void)use_gpus;
    printf(" | GPUs visible per rank: none used (CPU-only build)\n");
#endif
    char lib[512];
    mpi_library(lib, sizeof lib);
    int mpi_major = 0, mpi_minor = 0;
    MPI_Get_version(&mpi_major, &mpi_minor);
    unsigned h5_major = 0, h5_minor = 0, h5_release = 0;
    H5get_libversion(&h5_major, &h5_minor, &h5_release);
    printf("  MPI %d.%d: %s | HDF5 %u.%u.%u | ", mpi_major, mpi_minor, lib, h5_major, h5_minor,
           h5_release);
#if defined(GPT2_HAVE_NCCL) && GPT2_HAVE_NCCL
    int nccl = 0;
    ncclGetVersion(&nccl);
    printf("NCCL %d.%d.%d", nccl / 10000, nccl % 10000 / 100, nccl % 100);
#else
    printf("NCCL: not in this build");
#endif
#ifdef _OPENMP
    printf(" | OpenMP threads per rank: %d", omp_get_max_threads());
#endif
    printf("\n");
    fflush(stdout);
}

void dist_check_environment(dist_state *d, int use_gpus) {
#if GPT2_HAVE_CUDA
    d->gpus_visible = cuda_device_count();
#endif
    int shape[4] = {-d->local_world, d->local_world, -d->gpus_visible, d->gpus_visible};
    group_allreduce_int(&d->job, shape, 4, GROUP_MAX);
    char *hosts = d->rank == 0 ? xmalloc((size_t)d->world * sizeof d->host) : NULL;
    group_gather(&d->job, d->host, sizeof d->host, hosts, 0);

    char err[1024] = "";
    d->gpu = -1;
    if (use_gpus) pick_gpu(d, err, sizeof err);
    /* The lowest rank with a problem names it; every rank exits 2. */
    int first_bad = err[0] ? d->rank : d->world;
    group_allreduce_int(&d->job, &first_bad, 1, GROUP_MIN);
    if (d->rank == 0) print_report(d, hosts, -shape[0], shape[1], -shape[2], shape[3], use_gpus);
    free(hosts);
    if (first_bad < d->world) {
        if (d->rank == first_bad) {
            fprintf(stderr, "gpt2_ddp: error: %s\n", err);
            fflush(stderr);
        }
        group_barrier(&d->job); /* the message out before any rank tears down the job */
        dist_free(d);
        exit(EXIT_USAGE);
    }
}

void dist_free(dist_state *d) {
    fail_set_job_wait(NULL);
    mpi_watch_free();
    group_free(&d->node);
    group_free(&d->dp);
    group_free(&d->job);
    MPI_Finalize();
}
