/* CPU FP32 reference of the linear layers (nn.Linear layout) and their
 * gradients; the matmuls are most of the CPU backend's time.
 *
 * Design: the three products (out = inp W^T, dinp = dout W, dW += dout^T inp)
 * are one strided GEMM, C (M x N) [+]= A (M x K) B (K x N), blocked as in
 * BLIS/GotoBLAS: B is packed in KC x NC blocks of NR-column panels
 * (contiguous, zero-padded at the edge), and a register-tiled MR x NR
 * micro-kernel runs over them, reading A in place through its strides (one
 * broadcast per element, so packing A would only add a copy; only a ragged
 * last MR rows is packed, zero-padded). Each element of C starts from its
 * old value (or the bias, or 0) and adds its K products in order
 * k = 0, 1, ..., so the result does not depend on the blocking or the thread
 * count: deterministic, as bitwise resume needs.
 * The micro-kernel uses GCC vector extensions (the auto-vectoriser spills a
 * plain-C register tile). The build targets baseline x86-64 (SSE2, 16
 * registers), where a tile sized for AVX2 spills badly, so the block code is
 * compiled twice from one inline body: 6 x 16 with AVX2+FMA, picked at run
 * time when the CPU has it (~100 GFLOP/s per core here), and 6 x 8 for
 * everything else.
 * Under the sanitizers (GPT2_SANITIZE) the block code is not instrumented:
 * checked element by element it ran about 12 times slower, most of the
 * sanitizer run's time. gemm instead checks, once per product, that every
 * byte its operands span is addressable, and a byte that is not is reported
 * by ASan as any bad access is: the same finding for these loops, whose
 * every access lies in those spans, without the per-element cost. */
#include "kernels/matmul.h"

#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define GEMM_UNCHECKED __attribute__((no_sanitize("address", "undefined")))
/* An ASan report (exit 86 in the sanitizer run) unless all of p[0, n) is
 * addressable: the instrumented load of the first bad byte makes it. */
static void require_addressable(const float *p, size_t n) {
    const char *bad = n ? __asan_region_is_poisoned((void *)p, n * sizeof(float)) : NULL;
    if (bad) {
        volatile char byte = *(const volatile char *)bad;
        (void)byte;
    }
}
#else
#define GEMM_UNCHECKED
#endif

/* MR x 16 with 8-float vectors keeps 12 AVX2 accumulators + 2 B vectors +
 * 1 broadcast in 16 registers (MR x 8 does the same with SSE's 4-float
 * registers). A KC x NR B panel (<= 16 KiB) stays in L1 while MC rows of A
 * (96 KiB for KC = 256) come from L2; the KC x NC B block is 256 KiB. B is
 * packed once per work unit, which costs ~16/rows-per-unit of the product
 * (scalar copies against 16-wide multiply-adds). */
enum { MR = 6, NR_MAX = 16, KC = 256, MC = 96, NC = 256 };

typedef float vec8 __attribute__((vector_size(32)));

#if defined(__GNUC__) && defined(__x86_64__)
#define GEMM_HAVE_AVX2_PATH 1
#else
#define GEMM_HAVE_AVX2_PATH 0
#endif

/* A strided matrix operand: element (r, k) at p[r * rs + k * ks]. */
typedef struct {
    const float *p;
    size_t rs, ks;
} operand;

/* Packs rows [r0, r0+rows) x cols [k0, k0+kc) of x as a panel dst[k][width],
 * zero-padding rows up to width; the loop order follows the unit stride. */
GEMM_UNCHECKED static void pack_panel(float *restrict dst, int width, operand x, int r0, int rows,
                                      int k0, int kc) {
    const float *src = x.p + (size_t)r0 * x.rs + (size_t)k0 * x.ks;
    if (x.ks == 1) {
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < kc; k++) dst[k * width + r] = src[(size_t)r * x.rs + k];
    } else {
        for (int k = 0; k < kc; k++)
            for (int r = 0; r < rows; r++)
                dst[k * width + r] = src[(size_t)k * x.ks + (size_t)r * x.rs];
    }
    for (int k = 0; k < kc; k++)
        for (int r = rows; r < width; r++) dst[k * width + r] = 0.0f;
}

/* ct (MR x nr_w, row-major) += A (MR x kc, element (i, k) at a[i*rs + k*ks])
 * times panel B (kc x nr_w), nr_w = 8 * nv. Always inlined with a constant
 * nv, so each caller gets a fully unrolled tile in its own instruction set. */
GEMM_UNCHECKED static inline __attribute__((always_inline)) void
micro_kernel(int kc, const float *restrict a, size_t rs, size_t ks, const float *restrict bp,
             float *restrict ct, const int nv) {
    vec8 acc[MR][NR_MAX / 8];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < nv; v++) memcpy(&acc[i][v], ct + (i * nv + v) * 8, sizeof(vec8));
    for (int k = 0; k < kc; k++) {
        vec8 b[NR_MAX / 8];
        for (int v = 0; v < nv; v++) memcpy(&b[v], bp + ((size_t)k * nv + v) * 8, sizeof(vec8));
        for (int i = 0; i < MR; i++) {
            const float x = a[(size_t)i * rs + (size_t)k * ks];
            for (int v = 0; v < nv; v++) acc[i][v] += x * b[v];
        }
    }
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < nv; v++) memcpy(ct + (i * nv + v) * 8, &acc[i][v], sizeof(vec8));
}

/* ct (MR x nr_w) = the mr x nr corner of C at cb, or with start the bias
 * row (0 when NULL); the rest 0. Full tiles take constant-bound loops that
 * the compiler turns into vector copies (variable bounds became byte loops). */
GEMM_UNCHECKED static inline __attribute__((always_inline)) void
load_tile(float *restrict ct, const float *cb, size_t ldc, int mr, int nr, int start,
          const float *bias, const int nr_w) {
    if (mr == MR && nr == nr_w) {
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < nr_w; j++)
                ct[i * nr_w + j] = !start ? cb[(size_t)i * ldc + j] : bias ? bias[j] : 0.0f;
        return;
    }
    for (int i = 0; i < MR * nr_w; i++) ct[i] = 0.0f;
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            ct[i * nr_w + j] = !start ? cb[(size_t)i * ldc + j] : bias ? bias[j] : 0.0f;
}

/* The mr x nr corner of ct (MR x nr_w) back to C at cb. */
GEMM_UNCHECKED static inline __attribute__((always_inline)) void
store_tile(float *cb, size_t ldc, const float *restrict ct, int mr, int nr, const int nr_w) {
    if (mr == MR && nr == nr_w) {
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < nr_w; j++) cb[(size_t)i * ldc + j] = ct[i * nr_w + j];
        return;
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) cb[(size_t)i * ldc + j] = ct[i * nr_w + j];
}

/* One product: C (row stride ldc) [+]= A B with B given as its transpose
 * bt, K deep; init: C starts from bias (0 when NULL), else from itself. */
typedef struct {
    float *c;
    size_t ldc;
    operand a, bt;
    int K, init;
    const float *bias;
} gemm_args;

/* One work unit: rows [i0, i1) x columns [j0, j0+nc) of C, all of K. Per KC
 * slice, pack the B block once into nr_w-wide panels, then run the
 * micro-kernel over every MR x nr_w sub-tile, MC rows at a time.
 * ap (MR x KC) and bp (NC x KC): the thread's pack space. */
GEMM_UNCHECKED static inline __attribute__((always_inline)) void
gemm_block(const gemm_args *g, int i0, int i1, int j0, int nc, float *ap, float *bp,
           const int nr_w) {
    const operand a = g->a;
    for (int k0 = 0; k0 < g->K; k0 += KC) {
        const int kc = g->K - k0 < KC ? g->K - k0 : KC;
        const int start = g->init && k0 == 0;
        for (int jp = 0; jp < nc; jp += nr_w)
            pack_panel(bp + (size_t)jp * kc, nr_w, g->bt, j0 + jp, nc - jp < nr_w ? nc - jp : nr_w,
                       k0, kc);
        for (int ib = i0; ib < i1; ib += MC) {
            const int mc = i1 - ib < MC ? i1 - ib : MC;
            const int full = mc / MR * MR; /* rows read in place; a ragged end is packed */
            if (full < mc) pack_panel(ap, MR, a, ib + full, mc - full, k0, kc);
            for (int jp = 0; jp < nc; jp += nr_w) {
                const int nr = nc - jp < nr_w ? nc - jp : nr_w;
                for (int ip = 0; ip < mc; ip += MR) {
                    const int mr = mc - ip < MR ? mc - ip : MR;
                    float ct[MR * NR_MAX] __attribute__((aligned(32)));
                    float *cb = g->c + (size_t)(ib + ip) * g->ldc + j0 + jp;
                    load_tile(ct, cb, g->ldc, mr, nr, start, g->bias ? g->bias + j0 + jp : NULL,
                              nr_w);
                    if (mr == MR)
                        micro_kernel(kc, a.p + (size_t)(ib + ip) * a.rs + (size_t)k0 * a.ks, a.rs,
                                     a.ks, bp + (size_t)jp * kc, ct, nr_w / 8);
                    else
                        micro_kernel(kc, ap, 1, MR, bp + (size_t)jp * kc, ct, nr_w / 8);
                    store_tile(cb, g->ldc, ct, mr, nr, nr_w);
                }
            }
        }
    }
}

/* The two compiled instances: the same body, two instruction sets. */
GEMM_UNCHECKED static void gemm_block_base(const gemm_args *g, int i0, int i1, int j0, int nc,
                                           float *ap, float *bp) {
    gemm_block(g, i0, i1, j0, nc, ap, bp, 8);
}

#if GEMM_HAVE_AVX2_PATH
GEMM_UNCHECKED __attribute__((target("avx2,fma"))) static void
gemm_block_avx2(const gemm_args *g, int i0, int i1, int j0, int nc, float *ap, float *bp) {
    gemm_block(g, i0, i1, j0, nc, ap, bp, 16);
}
#endif

/* C (M x N, row stride ldc) = init ? bias + A B : C + A B, where A is M x K
 * and B is given by its transpose bt: bt(j, k) = B(k, j).
 * Work units are NC-column blocks times row ranges; a unit packs each B
 * block once for all its rows, so rows are split only as far as needed to
 * give every thread about two units. Units are independent (each thread
 * packs its own operands): the only synchronisation is the end of the
 * loop, so a thread descheduled on a busy or oversubscribed machine (CI,
 * several ranks per node) stalls nobody mid-product. */
static void gemm(float *c, size_t ldc, operand a, operand bt, int M, int N, int K, int init,
                 const float *bias) {
    void (*block)(const gemm_args *, int, int, int, int, float *, float *) = gemm_block_base;
#if GEMM_HAVE_AVX2_PATH
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) block = gemm_block_avx2;
#endif
    const gemm_args g = {c, ldc, a, bt, K, init, bias};
#if defined(__SANITIZE_ADDRESS__)
    if (M > 0 && N > 0 && K > 0) {
        require_addressable(a.p, (size_t)(M - 1) * a.rs + (size_t)(K - 1) * a.ks + 1);
        require_addressable(bt.p, (size_t)(N - 1) * bt.rs + (size_t)(K - 1) * bt.ks + 1);
    }
    if (M > 0 && N > 0) require_addressable(c, (size_t)(M - 1) * ldc + (size_t)N);
    if (bias) require_addressable(bias, (size_t)N);
#endif
    const int blocks_n = (N + NC - 1) / NC;
    const int want_parts = (2 * omp_get_max_threads() + blocks_n - 1) / blocks_n;
    const int max_parts = (M + MR - 1) / MR;
    const int parts = want_parts < max_parts ? want_parts : max_parts;
    const int rows = (M + parts * MR - 1) / (parts * MR) * MR; /* per part, a multiple of MR */
    const int parts_m = (M + rows - 1) / rows;
#pragma omp parallel
    {
        const size_t kc_max = K < KC ? (size_t)K : KC;
        const size_t nc_max = N < NC ? (size_t)(N + NR_MAX - 1) / NR_MAX * NR_MAX : NC;
        float *ap = xmalloc(sizeof(float) * MR * kc_max);
        float *bp = xmalloc(sizeof(float) * nc_max * kc_max);
        /* Round-robin so a few uneven units still split evenly. */
#pragma omp for schedule(static, 1)
        for (int u = 0; u < blocks_n * parts_m; u++) {
            const int i0 = (u % parts_m) * rows, j0 = (u / parts_m) * NC;
            const int i1 = M - i0 < rows ? M : i0 + rows, nc = N - j0 < NC ? N - j0 : NC;
            block(&g, i0, i1, j0, nc, ap, bp);
        }
        free(bp);
        free(ap);
    }
}

void matmul_forward_cpu(float *out, const float *inp, const float *weight, const float *bias, int N,
                        int C, int OC) {
    /* out (N x OC) = inp (N x C) weight^T; weight rows are B^T rows. */
    const operand a = {inp, (size_t)C, 1};
    const operand bt = {weight, (size_t)C, 1};
    gemm(out, (size_t)OC, a, bt, N, OC, C, 1, bias);
}

enum { BIAS_CHUNK = 64 };

void matmul_backward_cpu(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, int N, int C, int OC) {
    if (dinp) {
        /* dinp (N x C) = dout (N x OC) weight (OC x C): B^T(c, o) = weight[o][c]. */
        const operand a = {dout, (size_t)OC, 1};
        const operand bt = {weight, 1, (size_t)C};
        gemm(dinp, (size_t)C, a, bt, N, C, OC, 1, NULL);
    }
    /* dweight (OC x C) += dout^T (OC x N) inp (N x C): sums over the N rows
     * inside each element, in row order. */
    const operand a = {dout, 1, (size_t)OC};
    const operand bt = {inp, 1, (size_t)C};
    gemm(dweight, (size_t)C, a, bt, OC, C, N, 0, NULL);
    if (dbias) bias_grad_cpu(dbias, dout, N, OC);
}

void bias_grad_cpu(float *dbias, const float *dout, int N, int OC) {
    /* Each thread owns a slice of outputs and adds the rows in order. */
    const int chunks = (OC + BIAS_CHUNK - 1) / BIAS_CHUNK;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < chunks; ch++) {
        const int o0 = ch * BIAS_CHUNK;
        const int o1 = o0 + BIAS_CHUNK < OC ? o0 + BIAS_CHUNK : OC;
        for (int n = 0; n < N; n++) {
            const float *d = dout + (size_t)n * OC;
            for (int o = o0; o < o1; o++) dbias[o] += d[o];
        }
    }
}
