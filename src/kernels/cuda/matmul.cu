/* Linear layers on the GPU through cuBLASLt: bf16 operands and outputs,
 * fp32 accumulation (CUBLAS_COMPUTE_32F; no TF32 anywhere, every GEMM is bf16).
 *
 * Layout: tensors are row-major, cuBLAS is column-major, and a row-major
 * (R, K) matrix is the column-major (K, R) one. So, with nn.Linear's weight
 * (OC, C):
 *   forward   out^T (OC,N) = W (OC,C)    . inp^T (C,N)   m=OC n=N  k=C   A=W^T-stored, op T
 *   dinp      dinp^T (C,N) = W^T (C,OC)  . dout^T (OC,N) m=C  n=N  k=OC
 *   dweight   dW^T (C,OC) += inp^T (C,N) . dout (N,OC)   m=C  n=OC k=N   beta = 1
 * Epilogues (fused into the GEMM, fp32 before the single bf16 rounding):
 *   BIAS           forward bias (length m = OC, broadcast over columns).
 *   GELU_AUX_BIAS  matmul_gelu_forward: D = gelu(acc + bias), aux = acc + bias
 *                  (the pre-activation saved for backward, ld = OC). cuBLASLt's
 *                  GELU is the tanh approximation, GPT-2's "gelu_new";
 *                  test_ops_cuda checks it against the tanh and erf forms.
 *   DGELU          matmul_backward_gelu: dinp = (dout W) * gelu'(aux = pre).
 *   DGELU_BGRAD    the same, and the column sums of that dinp (dpre_colsum:
 *                  the gradient of the bias that produced pre) into a vector
 *                  that a small kernel adds into dpre_colsum (BGRAD
 *                  overwrites); where cuBLASLt offers none, or the flag is
 *                  cleared, the column-sum kernel reads dinp once more.
 *   BGRADB         (off by default) dbias: cuBLASLt sums op(B) = dout over
 *                  k = N into a vector that a small kernel adds into dbias
 *                  (BGRADB overwrites; the contract is +=). On H100 with
 *                  cuBLAS 13.0 it is offered only with a bf16 vector (an extra
 *                  rounding) and the dW GEMM it picks measured slower than the
 *                  plain GEMM plus the column-sum kernel (docs/gpu-training.md),
 *                  so dbias is that kernel by default.
 * dbias by kernel: a deterministic column sum (fixed chunks of BIAS_ROWS
 * rows, each summed in row order, then the chunks added in order), one extra
 * read of dout. Where cuBLASLt offers no algorithm for the GELU epilogues (or
 * a fusion flag is cleared), a plain GEMM plus a separate kernel gives the
 * same results: bias+GELU, or GELU backward. Split-K algorithms are limited
 * to fp32 partial sums (REDUCTION_SCHEME_COMPUTE_TYPE). Note that with
 * beta = 1 (dW +=) some small-shape kernels round the new product to bf16
 * before adding the old value (test_ops_cuda allows for it).
 * Plans (descriptors, layouts and the algorithm) are cached by shape,
 * epilogue and pointer alignment, so steady-state calls only set the
 * epilogue pointers and launch. cuBLASLt with a fixed algorithm and
 * workspace is deterministic.
 * Algorithms by measurement (cublaslt_ctx.autotune, on by default): the
 * heuristic's first answer is often not the fastest at our shapes, so a new
 * plan asks it for up to MAX_CANDIDATES and times each once, on the call's
 * own operands (the first call of a shape: start-up), keeping the fastest
 * unless it beats the heuristic's first by less than TUNE_MARGIN (so that
 * timing noise rarely changes the choice between runs). A GEMM that adds
 * into D (beta = 1: dweight) has D saved and restored around the trials;
 * the others overwrite everything they write, so the call itself, run last
 * with the chosen algorithm, leaves what it would have without them.
 * One-off shapes (cublaslt_ctx.transient: generation, whose every token is a
 * new length) take the heuristic's first algorithm and a ring of plans of
 * their own: in the shared table a sample's few hundred shapes pushed out
 * every plan of the training step, which then re-tuned them all. */
#include "kernels/matmul.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gelu.cuh"

enum { BIAS_ROWS = 64 }; /* rows per chunk of the fallback column sum */
enum { MAX_PLANS = 96, TRANSIENT_PLANS = 16 };
enum { MAX_CANDIDATES = 8, TUNE_REPS = 5 }; /* algorithms tried per plan; timed runs of each */
static const float TUNE_MARGIN = 0.02f;     /* a challenger must be 2% faster */

static int g_fusion = MATMUL_FUSE_DEFAULT;

extern "C" void matmul_cuda_set_fusion(int flags) { g_fusion = flags; }

/* ------------------------------------------------------------------ kernels */

static __global__ void gelu_forward_kernel(bf16 *out, const bf16 *pre, size_t n8) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n8) return;
    float x[8];
    load8(x, pre + i * 8);
#pragma unroll
    for (int k = 0; k < 8; k++) x[k] = gelu(x[k]);
    store8(out + i * 8, x);
}

/* d *= gelu'(pre), in place. */
static __global__ void gelu_backward_kernel(bf16 *d, const bf16 *pre, size_t n8) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n8) return;
    float x[8], g[8];
    load8(x, pre + i * 8);
    load8(g, d + i * 8);
#pragma unroll
    for (int k = 0; k < 8; k++) g[k] *= gelu_grad(x[k]);
    store8(d + i * 8, g);
}

/* partials[chunk, c..c+8) = sum of dout rows of this chunk, in row order. */
static __global__ void bias_partial_kernel(float *partials, const bf16 *dout, int N, int OC) {
    const int c8 = blockIdx.x * blockDim.x + threadIdx.x;
    if (c8 >= OC / 8) return;
    const int r0 = blockIdx.y * BIAS_ROWS, r1 = min(N, r0 + BIAS_ROWS);
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int r = r0; r < r1; r++) {
        float d[8];
        load8(d, dout + (size_t)r * OC + c8 * 8);
#pragma unroll
        for (int k = 0; k < 8; k++) acc[k] += d[k];
    }
    float *p = partials + (size_t)blockIdx.y * OC + c8 * 8;
#pragma unroll
    for (int k = 0; k < 8; k++) p[k] = acc[k];
}

/* dst[j] += src[j] */
static __global__ void add_bf16_kernel(bf16 *dst, const bf16 *src, int n) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) dst[j] = __float2bfloat16_rn(__bfloat162float(dst[j]) + __bfloat162float(src[j]));
}

extern "C" void gelu_backward_cuda(void *d, const void *pre, size_t n, cudaStream_t stream) {
    if (n % 8 != 0 || !is_aligned16(d) || !is_aligned16(pre))
        FAIL("gelu_backward_cuda: n = %zu must be a multiple of 8, tensors 16-byte aligned", n);
    const size_t n8 = n / 8;
    if (n8 == 0) return;
    gelu_backward_kernel<<<(unsigned)((n8 + 255) / 256), 256, 0, stream>>>((bf16 *)d,
                                                                           (const bf16 *)pre, n8);
    CUDA_CHECK_LAUNCH("gelu_backward_kernel");
}

/* ---------------------------------------------------------------- cuBLASLt */

typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldd;
    int type_a, type_b;      /* cudaDataType_t: bf16, or fp8 (a product with FP8 operands) */
    int fast_accum;          /* FP8: CUBLASLT_MATMUL_DESC_FAST_ACCUM */
    int epilogue, bias_type; /* bias_type: a cudaDataType_t, or -1 for none */
    int64_t aux_ld;
    unsigned align_a, align_b, align_d, align_bias, align_aux;
    /* strided batches (matmul_batched_cuda): count (0: one product) and
     * each operand's stride in elements */
    int batch;
    int64_t stride_a, stride_b, stride_d;
} plan_key;

typedef struct {
    plan_key key;
    int used, ok;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    cublasLtMatmulAlgo_t candidates[MAX_CANDIDATES]; /* the heuristic's order */
    int n_candidates;
    int tuned;                    /* candidates timed (or nothing to choose from) */
    int chosen;                   /* index of algo among the candidates */
    float heuristic_us, tuned_us; /* median of TUNE_REPS, first candidate and chosen */
} plan;

static plan g_plans[MAX_PLANS];
static int g_next_evict;
static plan g_transient_plans[TRANSIENT_PLANS]; /* one-off shapes, a ring */
static int g_next_transient;
static matmul_plan_counts g_counts;

/* The GELU forward's kernel per shape (MATMUL_FUSE_OWN_GEMM_TIMED): ours or
 * cuBLASLt's, whichever its first call timed faster; past MAX_GELU_CHOICES
 * shapes the oldest choice gives way (a training run has one or two). */
enum { MAX_GELU_CHOICES = 16 };
typedef struct {
    int N, C, OC, has_bias;
    int own;                   /* 1: ours; 0: cuBLASLt's */
    float own_us, cublaslt_us; /* median of TUNE_REPS (negative: cannot run) */
} gelu_choice;
static gelu_choice g_gelu_choices[MAX_GELU_CHOICES];
static int g_n_gelu_choices, g_next_gelu_choice;

/* Largest power of two (up to 256) that divides the address. */
static unsigned alignment_of(const void *p) {
    const uintptr_t a = (uintptr_t)p;
    unsigned al = 256;
    while (al > 1 && (a % al) != 0) al >>= 1;
    return al;
}

static void plan_destroy(plan *p) {
    if (!p->used) return;
    cublasLtMatrixLayoutDestroy(p->a);
    cublasLtMatrixLayoutDestroy(p->b);
    cublasLtMatrixLayoutDestroy(p->d);
    cublasLtMatmulDescDestroy(p->desc);
    p->used = 0;
}

static void set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                     const void *value, size_t size) {
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, value, size));
}

/* The plan for this key (bias and aux are real pointers: the heuristic reads
 * their alignment from them). */
static plan *plan_find(plan *table, int n, const plan_key *key) {
    for (int i = 0; i < n; i++)
        if (table[i].used && memcmp(&table[i].key, key, sizeof *key) == 0) return &table[i];
    return nullptr;
}

/* A slot for a new plan: a free one, else the next of the ring *next. */
static plan *plan_slot(plan *table, int n, int *next) {
    for (int i = 0; i < n; i++)
        if (!table[i].used) return &table[i];
    plan *p = &table[*next];
    *next = (*next + 1) % n;
    plan_destroy(p);
    return p;
}

static plan *plan_get(const plan_key *key, const void *bias, const void *aux,
                      const cublaslt_ctx *lt) {
    plan *cached = plan_find(g_plans, MAX_PLANS, key);
    if (!cached && lt->transient) /* otherwise a training shape gets its own tuned plan */
        cached = plan_find(g_transient_plans, TRANSIENT_PLANS, key);
    if (cached) return cached;
    plan *p = lt->transient ? plan_slot(g_transient_plans, TRANSIENT_PLANS, &g_next_transient)
                            : plan_slot(g_plans, MAX_PLANS, &g_next_evict);
    if (!lt->transient) g_counts.plans_made++;
    memset(p, 0, sizeof *p);
    p->key = *key;
    p->used = 1;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ops[2] = {CUBLAS_OP_N, CUBLAS_OP_T};
    set_attr(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ops[key->ta], sizeof ops[0]);
    set_attr(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &ops[key->tb], sizeof ops[0]);
    const uint32_t epilogue = (uint32_t)key->epilogue;
    set_attr(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
    if (key->fast_accum) {
        const int8_t on = 1;
        set_attr(p->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof on);
    }
    if (key->bias_type >= 0) {
        const int32_t type = key->bias_type;
        set_attr(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof type);
        set_attr(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    }
    if (key->aux_ld > 0) {
        set_attr(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
        set_attr(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &key->aux_ld, sizeof key->aux_ld);
    }
    /* Stored shapes: op(A) is m x k, op(B) k x n, D m x n. */
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, (cudaDataType_t)key->type_a,
                                            key->ta ? key->k : key->m, key->ta ? key->m : key->k,
                                            key->lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, (cudaDataType_t)key->type_b,
                                            key->tb ? key->n : key->k, key->tb ? key->k : key->n,
                                            key->ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->d, CUDA_R_16BF, key->m, key->n, key->ldd));
    if (key->batch > 1) {
        const cublasLtMatrixLayout_t layouts[3] = {p->a, p->b, p->d};
        const int64_t strides[3] = {key->stride_a, key->stride_b, key->stride_d};
        for (int i = 0; i < 3; i++) {
            CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
                layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &key->batch, sizeof key->batch));
            CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
                layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                sizeof strides[i]));
        }
    }

    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &lt->workspace_bytes, sizeof lt->workspace_bytes));
    const uint32_t al[4] = {key->align_a, key->align_b, key->align_d, key->align_d};
    const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], &al[i], sizeof al[i]));
    /* Split-K partial sums in fp32 only: the INPLACE and OUTPUT_TYPE schemes
     * add partials in the bf16 output type, a rounding per split. */
    const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction, sizeof reduction));
    cublasLtMatmulHeuristicResult_t results[MAX_CANDIDATES];
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        lt->handle, p->desc, p->a, p->b, p->d, p->d, pref, MAX_CANDIDATES, results, &found);
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    p->ok = st == CUBLAS_STATUS_SUCCESS && found > 0;
    for (int i = 0; p->ok && i < found; i++)
        if (results[i].state == CUBLAS_STATUS_SUCCESS)
            p->candidates[p->n_candidates++] = results[i].algo;
    p->ok = p->ok && p->n_candidates > 0;
    if (p->ok) p->algo = p->candidates[0];
    p->tuned = !lt->autotune || lt->transient || p->n_candidates < 2;
    return p;
}

/* Median time in us of TUNE_REPS runs of run() (after one untimed run); a
 * negative value when run() returns false (it cannot run these operands). */
template <typename Run> static float median_time_us(cudaStream_t stream, Run run) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    float t[TUNE_REPS], us = -1.0f;
    int r = -1;
    for (; r < TUNE_REPS; r++) {
        if (r >= 0) CUDA_CHECK(cudaEventRecord(start, stream));
        if (!run()) break;
        if (r < 0) continue;
        CUDA_CHECK(cudaEventRecord(stop, stream));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&t[r], start, stop));
    }
    if (r == TUNE_REPS) {
        for (int i = 1; i < TUNE_REPS; i++) /* insertion sort: five values */
            for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
                const float x = t[j];
                t[j] = t[j - 1];
                t[j - 1] = x;
            }
        us = t[TUNE_REPS / 2] * 1e3f;
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return us;
}

/* median_time_us of the plan with one algorithm. */
static float time_algo(const cublaslt_ctx *lt, cudaStream_t stream, const plan *p,
                       const cublasLtMatmulAlgo_t *algo, const void *A, const void *B, void *D,
                       float beta) {
    const float alpha = 1.0f;
    return median_time_us(stream, [&] {
        if (cublasLtMatmul(lt->handle, p->desc, &alpha, A, p->a, B, p->b, &beta, D, p->d, D, p->d,
                           algo, lt->workspace, lt->workspace_bytes,
                           stream) == CUBLAS_STATUS_SUCCESS)
            return true;
        cudaGetLastError();
        return false;
    });
}

/* Times the plan's candidates on this call's operands and keeps the
 * fastest (see the top of the file). The epilogue pointers are set. */
static void tune_plan(const cublaslt_ctx *lt, cudaStream_t stream, plan *p, const void *A,
                      const void *B, void *D, float beta) {
    p->tuned = 1;
    g_counts.plans_tuned++;
    void *saved = nullptr;
    const size_t d_bytes = p->key.batch > 1 ? (size_t)p->key.stride_d * (size_t)p->key.batch * 2
                                            : (size_t)p->key.ldd * (size_t)p->key.n * 2;
    CUDA_CHECK(cudaStreamSynchronize(stream)); /* D is final; nothing else runs in the timings */
    if (beta != 0.0f) {
        if (cudaMalloc(&saved, d_bytes) != cudaSuccess) { /* no room: keep the heuristic's */
            cudaGetLastError();
            return;
        }
        CUDA_CHECK(cudaMemcpyAsync(saved, D, d_bytes, cudaMemcpyDeviceToDevice, stream));
    }
    int best = 0;
    float best_us = -1.0f;
    for (int i = 0; i < p->n_candidates; i++) {
        const float us = time_algo(lt, stream, p, &p->candidates[i], A, B, D, beta);
        if (i == 0) p->heuristic_us = us;
        if (us > 0.0f && (best_us < 0.0f || us < best_us)) {
            best = i;
            best_us = us;
        }
    }
    if (best_us < 0.0f) p->ok = 0; /* none of them runs these operands: no algorithm */
    if (p->heuristic_us > 0.0f && best_us > p->heuristic_us * (1.0f - TUNE_MARGIN)) {
        best = 0;
        best_us = p->heuristic_us;
    }
    p->chosen = best;
    p->tuned_us = best_us;
    p->algo = p->candidates[best];
    if (saved) {
        CUDA_CHECK(cudaMemcpyAsync(D, saved, d_bytes, cudaMemcpyDeviceToDevice, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        CUDA_CHECK(cudaFree(saved));
    }
}

/* FP8 operands of a GEMM (cuBLAS's A and B): their types, the device
 * floats that dequantise them, and whether it accumulates fast. */
typedef struct {
    cudaDataType_t type_a, type_b;
    const float *scale_a, *scale_b;
    int fast_accum;
} fp8_operands;

/* Strided batches of one GEMM shape (matmul_batched_cuda), C beside D. */
typedef struct {
    int count;
    int64_t stride_a, stride_b, stride_d;
    float alpha;
    const void *C; /* beta's operand, laid out as D (NULL: D itself) */
} gemm_batch;

/* D (m,n; ld ldd) = op(A) op(B) + beta D with the epilogue; returns 0 when
 * cuBLASLt has no algorithm for it (the caller falls back). f8: FP8 A and B
 * (NULL: bf16); batch: batch->count products of strided operands, alpha
 * times the product, beta times C (NULL: one product, alpha 1, C = D). */
static int lt_gemm(const cublaslt_ctx *lt, cudaStream_t stream, int ta, int tb, int m, int n, int k,
                   const void *A, int lda, const void *B, int ldb, void *D, int ldd, float beta,
                   cublasLtEpilogue_t epilogue, const void *bias, int bias_type, const void *aux,
                   int64_t aux_ld, const fp8_operands *f8 = nullptr,
                   const gemm_batch *batch = nullptr) {
    plan_key key;
    memset(&key, 0, sizeof key); /* padding too: keys are compared with memcmp */
    key.ta = ta;
    key.tb = tb;
    key.m = m;
    key.n = n;
    key.k = k;
    key.lda = lda;
    key.ldb = ldb;
    key.ldd = ldd;
    key.type_a = f8 ? f8->type_a : CUDA_R_16BF;
    key.type_b = f8 ? f8->type_b : CUDA_R_16BF;
    key.fast_accum = f8 ? f8->fast_accum : 0;
    key.epilogue = (int)epilogue;
    key.bias_type = bias ? bias_type : -1;
    key.aux_ld = aux ? aux_ld : 0;
    key.align_a = alignment_of(A);
    key.align_b = alignment_of(B);
    key.align_d = alignment_of(D);
    if (batch && batch->C) { /* C is read as D's layout: the plan holds for the lesser */
        const unsigned align_c = alignment_of(batch->C);
        if (align_c < key.align_d) key.align_d = align_c;
    }
    key.align_bias = bias ? alignment_of(bias) : 0;
    key.align_aux = aux ? alignment_of(aux) : 0;
    if (batch && batch->count > 1) {
        key.batch = batch->count;
        key.stride_a = batch->stride_a;
        key.stride_b = batch->stride_b;
        key.stride_d = batch->stride_d;
    }
    plan *p = plan_get(&key, bias, aux, lt);
    if (!p->ok) return 0;
    if (bias) set_attr(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    if (aux) set_attr(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
    if (f8) {
        set_attr(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &f8->scale_a, sizeof f8->scale_a);
        set_attr(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &f8->scale_b, sizeof f8->scale_b);
    }
    if (!p->tuned) tune_plan(lt, stream, p, A, B, D, beta);
    if (!p->ok) return 0;
    const float alpha = batch ? batch->alpha : 1.0f;
    const void *C = batch && batch->C ? batch->C : D;
    CUBLAS_CHECK(cublasLtMatmul(lt->handle, p->desc, &alpha, A, p->a, B, p->b, &beta, C, p->d, D,
                                p->d, &p->algo, lt->workspace, lt->workspace_bytes, stream));
    return 1;
}

extern "C" void matmul_batched_cuda(int ta, int tb, int m, int n, int k, float alpha, const void *A,
                                    int lda, int64_t stride_a, const void *B, int ldb,
                                    int64_t stride_b, float beta, const void *C, void *D, int ldd,
                                    int64_t stride_d, int count, const cublaslt_ctx *lt,
                                    cudaStream_t stream) {
    if (count <= 0) return;
    const gemm_batch batch = {count, stride_a, stride_b, stride_d, alpha, C};
    if (!lt_gemm(lt, stream, ta, tb, m, n, k, A, lda, B, ldb, D, ldd, beta,
                 CUBLASLT_EPILOGUE_DEFAULT, nullptr, 0, nullptr, 0, nullptr, &batch))
        FAIL("cuBLASLt has no algorithm for a batch of %d bf16 GEMMs m=%d n=%d k=%d (op %c%c)",
             count, m, n, k, ta ? 'T' : 'N', tb ? 'T' : 'N');
}

static const char *epilogue_name(cublasLtEpilogue_t e) {
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "DEFAULT";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_GELU_AUX: return "GELU_AUX";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: return "GELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DGELU: return "DGELU";
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: return "DGELU_BGRAD";
    case CUBLASLT_EPILOGUE_BGRADB: return "BGRADB";
    default: return "?";
    }
}

extern "C" matmul_plan_counts matmul_cuda_plan_counts(void) { return g_counts; }

extern "C" void matmul_cuda_print_tuning(FILE *out) {
    int any = 0;
    for (int i = 0; i < MAX_PLANS; i++) {
        const plan *p = &g_plans[i];
        if (!p->used || !p->ok || p->n_candidates < 2 || p->tuned_us <= 0.0f) continue;
        if (!any)
            fprintf(out,
                    "GEMM algorithms by measurement (cuBLASLt; m n k as cuBLAS sees them, "
                    "column-major; us = median of %d runs):\n%-14s %6s %6s %6s %12s "
                    "%12s %6s %10s\n",
                    TUNE_REPS, "epilogue", "m", "n", "k", "heuristic us", "chosen us", "pick",
                    "TFLOP/s");
        any = 1;
        const plan_key *k = &p->key;
        const double flops = 2.0 * k->m * (double)k->n * k->k;
        fprintf(out, "%-14s %6d %6d %6d %12.1f %12.1f %3d/%-2d %10.1f\n",
                k->type_a != CUDA_R_16BF ? (k->fast_accum ? "FP8 fast" : "FP8")
                                         : epilogue_name((cublasLtEpilogue_t)k->epilogue),
                k->m, k->n, k->k, p->heuristic_us, p->tuned_us, p->chosen + 1, p->n_candidates,
                flops / (p->tuned_us * 1e-6) * 1e-12);
    }
    if (any) fprintf(out, "\n");
    for (int i = 0; i < g_n_gelu_choices; i++) {
        const gelu_choice *c = &g_gelu_choices[i];
        if (i == 0)
            fprintf(out,
                    "GELU forward, ours or cuBLASLt's by measurement (us = median of %d "
                    "runs):\n%6s %6s %6s %10s %12s %10s\n",
                    TUNE_REPS, "N", "C", "OC", "ours us", "cuBLASLt us", "pick");
        fprintf(out, "%6d %6d %6d %10.1f %12.1f %10s\n", c->N, c->C, c->OC, c->own_us,
                c->cublaslt_us, c->own ? "ours" : "cuBLASLt");
    }
    if (g_n_gelu_choices) fprintf(out, "\n");
}

/* One product's cuBLAS operands: A, B as cuBLAS sees them (column-major,
 * op T where ta/tb), and with FP8 their types and dequantising factors. */
typedef struct {
    int ta, tb;
    const void *A, *B;
    int lda, ldb;
    fp8_operands f8; /* scale_a NULL: bf16 */
} product;

/* The three products of a linear layer (the layout table at the top of the
 * file) from bf16 operands (q NULL) or from their FP8 copies: with FP8 both
 * of cuBLAS's operands are the op-T, K-contiguous ones. */
static product forward_product(const void *inp, const void *weight, int C,
                               const fp8_linear_operands *q) {
    product p = {1, 0, weight, inp, C, C, {}};
    if (q) {
        p.A = q->weight, p.B = q->inp;
        p.f8 = {CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, q->weight_dequant, q->inp_dequant,
                q->fast_accum != FP8_FAST_ACCUM_NONE};
    }
    return p;
}
static product dinp_product(const void *dout, const void *weight, int C, int OC,
                            const fp8_linear_operands *q) {
    product p = {0, 0, weight, dout, C, OC, {}};
    if (q) {
        p = {1, 0, q->weight_t, q->dout, OC, OC, {}};
        p.f8 = {CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, q->weight_dequant, q->dout_dequant,
                q->fast_accum == FP8_FAST_ACCUM_ALL};
    }
    return p;
}
static product dweight_product(const void *inp, const void *dout, int N, int C, int OC,
                               const fp8_linear_operands *q) {
    product p = {0, 1, inp, dout, C, OC, {}};
    if (q) {
        p = {1, 0, q->inp_t, q->dout_t, N, N, {}};
        p.f8 = {CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, q->inp_dequant, q->dout_dequant,
                q->fast_accum == FP8_FAST_ACCUM_ALL};
    }
    return p;
}

/* lt_gemm of a product (D: m x n, k the product's inner dimension); C
 * (NULL: D) is what beta scales. */
static int lt_product(const cublaslt_ctx *lt, cudaStream_t stream, const product *p, int m, int n,
                      int k, void *D, int ldd, float beta, cublasLtEpilogue_t epilogue,
                      const void *bias, int bias_type, const void *aux, int64_t aux_ld,
                      const void *C = nullptr) {
    const bool fp8 = p->f8.scale_a != nullptr;
    const gemm_batch one = {1, 0, 0, 0, 1.0f, C};
    return lt_gemm(lt, stream, p->ta, p->tb, m, n, k, p->A, p->lda, p->B, p->ldb, D, ldd, beta,
                   epilogue, bias, bias_type, aux, aux_ld, fp8 ? &p->f8 : nullptr,
                   C ? &one : nullptr);
}
static void lt_product_required(const cublaslt_ctx *lt, cudaStream_t stream, const product *p,
                                int m, int n, int k, void *D, int ldd, float beta,
                                cublasLtEpilogue_t epilogue, const void *bias,
                                const void *C = nullptr) {
    if (!lt_product(lt, stream, p, m, n, k, D, ldd, beta, epilogue, bias, CUDA_R_16BF, nullptr, 0,
                    C))
        FAIL("cuBLASLt has no algorithm for a%s GEMM m=%d n=%d k=%d (epilogue %s)%s",
             p->f8.scale_a ? "n FP8" : " bf16", m, n, k, epilogue_name(epilogue),
             p->f8.scale_a ? ": FP8 GEMMs need compute capability 8.9 or newer, and "
                             "16-byte aligned operands and scale pointers"
                           : "");
}

/* Says once per epilogue that the unfused path runs instead. */
static void note_fallback(cublasLtEpilogue_t e, int m, int n, int k) {
    static int noted[5];
    const int i = e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ? 0
                  : e == CUBLASLT_EPILOGUE_GELU_AUX    ? 1
                  : e == CUBLASLT_EPILOGUE_DGELU       ? 2
                  : e == CUBLASLT_EPILOGUE_DGELU_BGRAD ? 3
                                                       : 4;
    if (noted[i]) return;
    noted[i] = 1;
    if (fail_world_rank() != 0) return; /* every rank runs the same shapes */
    fprintf(stderr,
            "matmul_cuda: cuBLASLt offers no %s epilogue for m=%d n=%d k=%d; using a separate "
            "kernel\n",
            epilogue_name(e), m, n, k);
}

/* --------------------------------------------------------------- launchers */

static void check_args(const char *op, int N, int C, int OC, const void *const *ptrs, int n) {
    if (C % 8 != 0 || OC % 8 != 0 || N < 0)
        FAIL("%s: C=%d and OC=%d must be multiples of 8 (N=%d)", op, C, OC, N);
    for (int i = 0; i < n; i++)
        if (ptrs[i] && !is_aligned16(ptrs[i]))
            FAIL("%s: tensor %p is not 16-byte aligned", op, ptrs[i]);
}

static unsigned blocks_for(size_t n, int block) { return (unsigned)((n + block - 1) / block); }

extern "C" void matmul_forward_cuda(void *out, const void *inp, const void *weight,
                                    const void *bias, int N, int C, int OC,
                                    const fp8_linear_operands *fp8, const cublaslt_ctx *lt,
                                    cudaStream_t stream) {
    matmul_residual_forward_cuda(out, NULL, inp, weight, bias, N, C, OC, fp8, lt, stream);
}

extern "C" void matmul_residual_forward_cuda(void *out, const void *residual, const void *inp,
                                             const void *weight, const void *bias, int N, int C,
                                             int OC, const fp8_linear_operands *fp8,
                                             const cublaslt_ctx *lt, cudaStream_t stream) {
    const void *ptrs[] = {out, residual, inp, weight, bias};
    check_args("matmul_forward_cuda", N, C, OC, ptrs, 5);
    if (residual && residual == out)
        FAIL("matmul_residual_forward_cuda: out and residual must be distinct");
    if (N == 0) return;
    const product p = forward_product(inp, weight, C, fp8);
    lt_product_required(lt, stream, &p, OC, N, C, out, OC, residual ? 1.0f : 0.0f,
                        bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT, bias, residual);
}

/* matmul_gelu_forward by cuBLASLt: its GELU_AUX(_BIAS) epilogue where it has
 * one and MATMUL_FUSE_GELU is set, else the bias epilogue and the GELU kernel. */
static void lt_gelu_forward(void *out, void *pre, const void *inp, const void *weight,
                            const void *bias, int N, int C, int OC, const fp8_linear_operands *fp8,
                            const cublaslt_ctx *lt, cudaStream_t stream) {
    const cublasLtEpilogue_t ep =
        bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    const int fuse = g_fusion & MATMUL_FUSE_GELU;
    const product p = forward_product(inp, weight, C, fp8);
    if (fuse && lt_product(lt, stream, &p, OC, N, C, out, OC, 0.0f, ep, bias, CUDA_R_16BF, pre, OC))
        return;
    if (fuse) note_fallback(ep, OC, N, C);
    lt_product_required(lt, stream, &p, OC, N, C, pre, OC, 0.0f,
                        bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT, bias);
    gelu_forward_cuda(out, pre, (size_t)N * OC, stream);
}

/* Whether our GELU forward runs this shape. With MATMUL_FUSE_OWN_GEMM_TIMED
 * and autotune, a shape's first call times ours and cuBLASLt's on its own
 * operands (both overwrite all they write, so the call itself, made after,
 * leaves what it would have without them) and keeps cuBLASLt's only if it
 * is TUNE_MARGIN faster: ours leads at 124M's width, cuBLASLt's at 1558M's
 * on the H100 (docs/gpu-training.md). One-off shapes take ours untimed. */
static int own_gelu_forward_chosen(void *out, void *pre, const void *inp, const void *weight,
                                   const void *bias, int N, int C, int OC, const cublaslt_ctx *lt,
                                   cudaStream_t stream) {
    if (!(g_fusion & MATMUL_FUSE_OWN_GEMM_TIMED) || !lt->autotune || lt->transient) return 1;
    const int has_bias = bias != nullptr;
    for (int i = 0; i < g_n_gelu_choices; i++) {
        const gelu_choice *c = &g_gelu_choices[i];
        if (c->N == N && c->C == C && c->OC == OC && c->has_bias == has_bias) return c->own;
    }
    CUDA_CHECK(cudaStreamSynchronize(stream)); /* nothing else runs in the timings */
    gelu_choice c = {N, C, OC, has_bias, 1, -1.0f, -1.0f};
    c.own_us = median_time_us(stream, [&] {
        return matmul_wgmma_gelu_forward(out, pre, inp, weight, bias, N, C, OC, stream) != 0;
    });
    if (c.own_us > 0.0f) { /* cuBLASLt's first call makes and tunes its plan, untimed */
        c.cublaslt_us = median_time_us(stream, [&] {
            lt_gelu_forward(out, pre, inp, weight, bias, N, C, OC, nullptr, lt, stream);
            return true;
        });
        c.own = c.cublaslt_us > c.own_us * (1.0f - TUNE_MARGIN);
    }
    g_counts.gelu_choices_timed++;
    g_gelu_choices[g_next_gelu_choice] = c;
    g_next_gelu_choice = (g_next_gelu_choice + 1) % MAX_GELU_CHOICES;
    if (g_n_gelu_choices < MAX_GELU_CHOICES) g_n_gelu_choices++;
    return c.own;
}

extern "C" void matmul_gelu_forward_cuda(void *out, void *pre, const void *inp, const void *weight,
                                         const void *bias, int N, int C, int OC,
                                         const fp8_linear_operands *fp8, const cublaslt_ctx *lt,
                                         cudaStream_t stream) {
    const void *ptrs[] = {out, pre, inp, weight, bias};
    check_args("matmul_gelu_forward_cuda", N, C, OC, ptrs, 5);
    if (N == 0) return;
    if (!fp8 && (g_fusion & MATMUL_FUSE_OWN_GEMM) &&
        own_gelu_forward_chosen(out, pre, inp, weight, bias, N, C, OC, lt, stream) &&
        matmul_wgmma_gelu_forward(out, pre, inp, weight, bias, N, C, OC, stream))
        return;
    lt_gelu_forward(out, pre, inp, weight, bias, N, C, OC, fp8, lt, stream);
}

extern "C" void gelu_forward_cuda(void *out, const void *pre, size_t n, cudaStream_t stream) {
    /* 8 elements per thread, as 16-byte vectors */
    if (n % 8 != 0 || !is_aligned16(out) || !is_aligned16(pre))
        FAIL("gelu_forward_cuda: n = %zu must be a multiple of 8, tensors 16-byte aligned", n);
    const size_t n8 = n / 8;
    if (n8 == 0) return;
    gelu_forward_kernel<<<blocks_for(n8, 256), 256, 0, stream>>>((bf16 *)out, (const bf16 *)pre,
                                                                 n8);
    CUDA_CHECK_LAUNCH("gelu_forward_kernel");
}

static int bias_chunks(int N) { return (N + BIAS_ROWS - 1) / BIAS_ROWS; }

extern "C" size_t matmul_backward_cuda_workspace_bytes(int N, int C, int OC, const void *dbias,
                                                       const void *dpre_colsum) {
    /* the column-sum kernel's per-chunk partials (the fused paths need one
     * row of them); dbias and dpre_colsum use it one after the other */
    const int chunks = bias_chunks(N) > 1 ? bias_chunks(N) : 1;
    const int width = dpre_colsum && C > OC ? C : dbias || dpre_colsum ? OC : 0;
    const size_t bytes = (size_t)chunks * (size_t)width * sizeof(float);
    const size_t own = dpre_colsum ? matmul_wgmma_dgelu_scratch_bytes(N, C, OC) : 0;
    return own > bytes ? own : bytes;
}

/* dst (ncols, bf16) += the column sums of src (nrows x ncols, bf16), by the
 * deterministic two-kernel sum (chunk partials, then the chunks in order). */
static void column_sums_add(bf16 *dst, const bf16 *src, int nrows, int ncols, float *partials,
                            cudaStream_t stream) {
    const dim3 grid(blocks_for(ncols / 8, 128), (unsigned)bias_chunks(nrows));
    bias_partial_kernel<<<grid, 128, 0, stream>>>(partials, src, nrows, ncols);
    CUDA_CHECK_LAUNCH("bias_partial_kernel");
    bias_partials_add_cuda(dst, partials, bias_chunks(nrows), ncols, stream);
}

/* The DGELU GEMM with dpre_colsum from its epilogue (DGELU_BGRAD), its
 * vector fp32 where offered, else bf16; 0 when cuBLASLt has neither. */
static int dgelu_bgrad_gemm(const cublaslt_ctx *lt, cudaStream_t stream, bf16 *dinp,
                            bf16 *dpre_colsum, const void *dout, const void *weight,
                            const void *pre, int N, int C, int OC, void *workspace) {
    if (lt_gemm(lt, stream, 0, 0, C, N, OC, weight, C, dout, OC, dinp, C, 0.0f,
                CUBLASLT_EPILOGUE_DGELU_BGRAD, workspace, CUDA_R_32F, pre, C)) {
        bias_partials_add_cuda(dpre_colsum, (const float *)workspace, 1, C, stream);
        return 1;
    }
    if (lt_gemm(lt, stream, 0, 0, C, N, OC, weight, C, dout, OC, dinp, C, 0.0f,
                CUBLASLT_EPILOGUE_DGELU_BGRAD, workspace, CUDA_R_16BF, pre, C)) {
        add_bf16_kernel<<<blocks_for(C, 256), 256, 0, stream>>>(dpre_colsum,
                                                                (const bf16 *)workspace, C);
        CUDA_CHECK_LAUNCH("add_bf16_kernel");
        return 1;
    }
    return 0;
}

extern "C" void matmul_backward_cuda(void *dinp, void *dweight, void *dbias, const void *dout,
                                     const void *inp, const void *weight, const void *pre, int N,
                                     int C, int OC, void *dpre_colsum, void *workspace,
                                     size_t workspace_bytes, const fp8_linear_operands *fp8,
                                     const cublaslt_ctx *lt, cudaStream_t stream) {
    const void *ptrs[] = {dinp, dweight, dbias, dout, inp, weight, pre, dpre_colsum};
    check_args("matmul_backward_cuda", N, C, OC, ptrs, 8);
    if (N == 0) return;
    const size_t need = matmul_backward_cuda_workspace_bytes(N, C, OC, dbias, dpre_colsum);
    if (workspace_bytes < need)
        FAIL("matmul_backward_cuda: workspace of %zu bytes, needs %zu", workspace_bytes, need);
    if (dpre_colsum && (!pre || !dinp))
        FAIL("matmul_backward_cuda: dpre_colsum needs pre and dinp");

    const product dp = dinp_product(dout, weight, C, OC, fp8),
                  wp = dweight_product(inp, dout, N, C, OC, fp8);
    if (dinp) {
        int done = 0, colsum_done = 0;
        if (!fp8 && pre && dpre_colsum && (g_fusion & MATMUL_FUSE_OWN_GEMM))
            done = colsum_done = matmul_wgmma_dgelu(dinp, dpre_colsum, dout, weight, pre, N, C, OC,
                                                    workspace, stream);
        if (!done && !fp8 && pre && dpre_colsum && (g_fusion & MATMUL_FUSE_DGELU) &&
            (g_fusion & MATMUL_FUSE_DGELU_BGRAD)) {
            done = colsum_done = dgelu_bgrad_gemm(lt, stream, (bf16 *)dinp, (bf16 *)dpre_colsum,
                                                  dout, weight, pre, N, C, OC, workspace);
            if (!done) note_fallback(CUBLASLT_EPILOGUE_DGELU_BGRAD, C, N, OC);
        }
        /* not with FP8 operands: cuBLASLt's FP8 DGELU kernels measured 2.7x slower than
         * the plain FP8 product plus the GELU backward kernel (docs/fp8.md) */
        if (!done && !fp8 && pre && (g_fusion & MATMUL_FUSE_DGELU)) {
            done = lt_product(lt, stream, &dp, C, N, OC, dinp, C, 0.0f, CUBLASLT_EPILOGUE_DGELU,
                              nullptr, -1, pre, C);
            if (!done) note_fallback(CUBLASLT_EPILOGUE_DGELU, C, N, OC);
        }
        if (!done) {
            lt_product_required(lt, stream, &dp, C, N, OC, dinp, C, 0.0f, CUBLASLT_EPILOGUE_DEFAULT,
                                nullptr);
            if (pre) {
                const size_t n8 = (size_t)N * C / 8;
                gelu_backward_kernel<<<blocks_for(n8, 256), 256, 0, stream>>>(
                    (bf16 *)dinp, (const bf16 *)pre, n8);
                CUDA_CHECK_LAUNCH("gelu_backward_kernel");
            }
        }
        if (dpre_colsum && !colsum_done)
            column_sums_add((bf16 *)dpre_colsum, (const bf16 *)dinp, N, C, (float *)workspace,
                            stream);
    }

    float *bias_f32 = (float *)workspace;
    int bias_done = 0;
    if (!fp8 && dbias && (g_fusion & MATMUL_FUSE_BGRADB)) {
        /* BGRADB overwrites its vector: into scratch, then += into dbias. An
         * fp32 vector where cuBLASLt offers it, else bf16 (one more rounding
         * of the column sums, ~2^-9 relative). */
        bias_done = lt_gemm(lt, stream, 0, 1, C, OC, N, inp, C, dout, OC, dweight, C, 1.0f,
                            CUBLASLT_EPILOGUE_BGRADB, bias_f32, CUDA_R_32F, nullptr, 0);
        if (bias_done) {
            bias_partials_add_cuda(dbias, bias_f32, 1, OC, stream);
        } else {
            bf16 *bias_bf16 = (bf16 *)workspace;
            bias_done = lt_gemm(lt, stream, 0, 1, C, OC, N, inp, C, dout, OC, dweight, C, 1.0f,
                                CUBLASLT_EPILOGUE_BGRADB, bias_bf16, CUDA_R_16BF, nullptr, 0);
            if (bias_done) {
                add_bf16_kernel<<<blocks_for(OC, 256), 256, 0, stream>>>((bf16 *)dbias, bias_bf16,
                                                                         OC);
                CUDA_CHECK_LAUNCH("add_bf16_kernel");
            } else {
                note_fallback(CUBLASLT_EPILOGUE_BGRADB, C, OC, N);
            }
        }
    }
    if (!bias_done) {
        lt_product_required(lt, stream, &wp, C, OC, N, dweight, C, 1.0f, CUBLASLT_EPILOGUE_DEFAULT,
                            nullptr);
        if (dbias) column_sums_add((bf16 *)dbias, (const bf16 *)dout, N, OC, bias_f32, stream);
    }
}
