/* How far the trainer's GEMM algorithm choice is from the best cuBLASLt
 * has: for each product of a GPT-2 block at its training shape (cuBLAS's
 * column-major m n k, the trainer's operand layouts and epilogues), the
 * time of the heuristic's first algorithm, of the best of its first 8 (what
 * matmul.cu's autotuning times), of the best of all it returns (up to
 * HEURISTIC_MAX), and of the best of an exhaustive walk over every
 * algorithm id and configuration cuBLASLt accepts for the product
 * (tiles, stages, cluster shapes, swizzles, custom options; split-K off).
 * Each candidate is timed by the median of a few runs, the fastest few again
 * by the median of REPS. One line per product:
 *   BENCH gemm_algos <name> m= n= k= first_us= best8_us= heuristic_us= (of H) exhaustive_us= (of E) <config>
 *
 * GEMM=<parts of names, comma-separated> runs only the products whose names
 * contain one of them.
 *
 *   bench_gemm_algos [C=768] [tokens=32768] [max configurations per product=20000] */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "cuda_timing.cuh"
#include "kernels/cuda/cuda_check.h"

enum { HEURISTIC_MAX = 128, QUICK_REPS = 3, REPS = 15, FINALISTS = 6 };
static const size_t WORKSPACE_BYTES = 32u << 20; /* the trainer's */
static cudaStream_t g_stream;
static cublasLtHandle_t g_lt;
static void *g_workspace;

struct gemm {
    const char *name;
    int ta, tb, m, n, k, lda, ldb, ldd;
    float beta;
    cublasLtEpilogue_t epilogue;
    const void *A, *B, *bias, *aux;
    void *D;
    cudaDataType_t bias_type; /* of the bias (forward) or the bias gradient (BGRAD epilogues) */
};

struct problem {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
};

static problem make_problem(const gemm &g) {
    problem p;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ops[2] = {CUBLAS_OP_N, CUBLAS_OP_T};
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ops[g.ta],
                                                sizeof ops[0]));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &ops[g.tb],
                                                sizeof ops[0]));
    const uint32_t ep = g.epilogue;
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
    if (g.bias) {
        const int32_t type = g.bias_type;
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                    &type, sizeof type));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                    &g.bias, sizeof g.bias));
    }
    if (g.aux) {
        const int64_t ld = g.ldd;
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux, sizeof g.aux));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                    &ld, sizeof ld));
    }
    CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, g.ta ? g.k : g.m, g.ta ? g.m : g.k, g.lda));
    CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, g.tb ? g.n : g.k, g.tb ? g.k : g.n, g.ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_16BF, g.m, g.n, g.ldd));
    return p;
}

static void destroy_problem(const problem &p) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.d);
    cublasLtMatmulDescDestroy(p.desc);
}

static bool run(const gemm &g, const problem &p, const cublasLtMatmulAlgo_t &algo) {
    const float alpha = 1.0f;
    const cublasStatus_t st =
        cublasLtMatmul(g_lt, p.desc, &alpha, g.A, p.a, g.B, p.b, &g.beta, g.D, p.d, g.D, p.d, &algo,
                       g_workspace, WORKSPACE_BYTES, g_stream);
    if (st != CUBLAS_STATUS_SUCCESS) cudaGetLastError();
    return st == CUBLAS_STATUS_SUCCESS;
}

/* Median time of reps runs, negative where the algorithm does not run. */
static double time_algo(const gemm &g, const problem &p, const cublasLtMatmulAlgo_t &algo,
                        int reps) {
    if (!run(g, p, algo)) return -1.0;
    return median_us(g_stream, 1, reps, [&] { run(g, p, algo); });
}

struct timed {
    double us;
    cublasLtMatmulAlgo_t algo;
};

static void describe(const cublasLtMatmulAlgo_t &algo, char *out, size_t size) {
    int32_t id = 0;
    uint32_t tile = 0, stages = 0, swizzle = 0, custom = 0, cluster = 0;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                         &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                         sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle,
                                         sizeof swizzle, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom,
                                         sizeof custom, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                         sizeof cluster, &w);
    snprintf(out, size, "id=%d tile=%u stages=%u swizzle=%u custom=%u cluster=%u", id, tile, stages,
             swizzle, custom, cluster);
}

/* The fastest of the first n candidates: each timed quickly, the best few
 * again. */
static timed fastest(const gemm &g, const problem &p,
                     const std::vector<cublasLtMatmulAlgo_t> &cands, size_t n) {
    std::vector<timed> quick;
    for (size_t i = 0; i < cands.size() && i < n; i++) {
        const double us = time_algo(g, p, cands[i], QUICK_REPS);
        if (us > 0) quick.push_back({us, cands[i]});
    }
    std::sort(quick.begin(), quick.end(),
              [](const timed &x, const timed &y) { return x.us < y.us; });
    timed best = {-1.0, {}};
    for (size_t i = 0; i < quick.size() && i < FINALISTS; i++) {
        const double us = time_algo(g, p, quick[i].algo, REPS);
        if (us > 0 && (best.us < 0 || us < best.us)) best = {us, quick[i].algo};
    }
    return best;
}

static std::vector<uint32_t> cap_ids(const cublasLtMatmulAlgo_t &algo,
                                     cublasLtMatmulAlgoCapAttributes_t attr) {
    size_t bytes = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) !=
            CUBLAS_STATUS_SUCCESS ||
        bytes == 0)
        return {0};
    std::vector<uint32_t> ids(bytes / sizeof(uint32_t));
    cublasLtMatmulAlgoCapGetAttribute(&algo, attr, ids.data(), bytes, &bytes);
    return ids.empty() ? std::vector<uint32_t>{0} : ids;
}

/* base with {tile, stages, cluster shape, swizzle, custom option} and no
 * split-K, into *out; whether cuBLASLt accepts it for the product within
 * the workspace. */
static bool accepted(const problem &p, const cublasLtMatmulAlgo_t &base, const uint32_t config[5],
                     cublasLtMatmulAlgo_t *out) {
    static const cublasLtMatmulAlgoConfigAttributes_t attrs[5] = {
        CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_STAGES_ID,
        CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING,
        CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION};
    *out = base;
    for (int i = 0; i < 5; i++)
        cublasLtMatmulAlgoConfigSetAttribute(out, attrs[i], &config[i], sizeof config[i]);
    const uint32_t one = 1;
    cublasLtMatmulAlgoConfigSetAttribute(out, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, sizeof one);
    cublasLtMatmulHeuristicResult_t r;
    return cublasLtMatmulAlgoCheck(g_lt, p.desc, p.a, p.b, p.d, p.d, out, &r) ==
               CUBLAS_STATUS_SUCCESS &&
           r.workspaceSize <= WORKSPACE_BYTES;
}

/* Every (algorithm id, tile, stages, cluster, swizzle, custom option) that
 * cublasLtMatmulAlgoCheck accepts for the product, up to limit. */
static std::vector<cublasLtMatmulAlgo_t> every_config(const gemm &g, const problem &p,
                                                      size_t limit) {
    int n_ids = 0;
    std::vector<int> ids(256);
    CUBLAS_CHECK(cublasLtMatmulAlgoGetIds(g_lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF,
                                          CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, (int)ids.size(),
                                          ids.data(), &n_ids));
    std::vector<cublasLtMatmulAlgo_t> out;
    for (int i = 0; i < n_ids && out.size() < limit; i++) {
        cublasLtMatmulAlgo_t base;
        if (cublasLtMatmulAlgoInit(g_lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF,
                                   CUDA_R_16BF, CUDA_R_16BF, ids[i],
                                   &base) != CUBLAS_STATUS_SUCCESS)
            continue;
        uint32_t epilogues = 0, swizzle_max = 0, custom_max = 0;
        size_t w;
        cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_EPILOGUE_MASK, &epilogues,
                                          sizeof epilogues, &w);
        if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT && (epilogues & g.epilogue) != g.epilogue)
            continue;
        cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT,
                                          &swizzle_max, sizeof swizzle_max, &w);
        cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &custom_max,
                                          sizeof custom_max, &w);
        const auto tiles = cap_ids(base, CUBLASLT_ALGO_CAP_TILE_IDS);
        const auto stages = cap_ids(base, CUBLASLT_ALGO_CAP_STAGES_IDS);
        /* cuBLASLt lists no cluster shapes per algorithm: the small ones, checked */
        const uint32_t clusters[] = {CUBLASLT_CLUSTER_SHAPE_AUTO,  CUBLASLT_CLUSTER_SHAPE_1x1x1,
                                     CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1,
                                     CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1,
                                     CUBLASLT_CLUSTER_SHAPE_1x4x1};
        for (uint32_t tile : tiles)
            for (uint32_t st : stages)
                for (uint32_t cl : clusters)
                    for (uint32_t sw = 0; sw <= swizzle_max; sw++)
                        for (uint32_t c = 0; c <= custom_max && out.size() < limit; c++) {
                            const uint32_t config[5] = {tile, st, cl, sw, c};
                            cublasLtMatmulAlgo_t a;
                            if (accepted(p, base, config, &a)) out.push_back(a);
                        }
    }
    return out;
}

static void bench(const gemm &g, size_t exhaustive_limit) {
    const problem p = make_problem(g);
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &WORKSPACE_BYTES, sizeof WORKSPACE_BYTES));
    const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction, sizeof reduction));
    std::vector<cublasLtMatmulHeuristicResult_t> res(HEURISTIC_MAX);
    int found = 0;
    /* an epilogue with no kernel for these types fails here: no algorithm */
    if (cublasLtMatmulAlgoGetHeuristic(g_lt, p.desc, p.a, p.b, p.d, p.d, pref, HEURISTIC_MAX,
                                       res.data(), &found) != CUBLAS_STATUS_SUCCESS)
        found = 0;
    cublasLtMatmulPreferenceDestroy(pref);
    std::vector<cublasLtMatmulAlgo_t> heur;
    for (int i = 0; i < found; i++)
        if (res[i].state == CUBLAS_STATUS_SUCCESS) heur.push_back(res[i].algo);
    if (heur.empty()) {
        printf("BENCH gemm_algos %s m=%d n=%d k=%d: no algorithm\n", g.name, g.m, g.n, g.k);
        destroy_problem(p);
        return;
    }
    const double first = time_algo(g, p, heur[0], REPS);
    const timed best8 = fastest(g, p, heur, 8);
    const timed best_h = fastest(g, p, heur, heur.size());
    const std::vector<cublasLtMatmulAlgo_t> all = every_config(g, p, exhaustive_limit);
    const timed best_e = fastest(g, p, all, all.size());
    char cfg[160] = "-";
    if (best_e.us > 0) describe(best_e.algo, cfg, sizeof cfg);
    char hcfg[160];
    describe(best_h.algo, hcfg, sizeof hcfg);
    const double flops = 2.0 * g.m * g.n * g.k;
    printf("BENCH gemm_algos %s m=%d n=%d k=%d first_us=%.1f best8_us=%.1f heuristic_us=%.1f "
           "(of %zu: %s) exhaustive_us=%.1f (of %zu: %s) best_tflops=%.0f\n",
           g.name, g.m, g.n, g.k, first, best8.us, best_h.us, heur.size(), hcfg, best_e.us,
           all.size(), cfg,
           flops / (std::min(best_h.us, best_e.us > 0 ? best_e.us : 1e30) * 1e-6) * 1e-12);
    fflush(stdout);
    destroy_problem(p);
}

static void *rand_buf(size_t elems, unsigned seed) {
    std::vector<uint16_t> h(elems);
    srand(seed);
    for (auto &v : h) v = (uint16_t)(0x3C00 + (rand() & 0x3FF)) ^ (uint16_t)((rand() & 1) << 15);
    void *d;
    CUDA_CHECK(cudaMalloc(&d, elems * 2));
    CUDA_CHECK(cudaMemcpy(d, h.data(), elems * 2, cudaMemcpyHostToDevice));
    return d;
}

int main(int argc, char **argv) {
    const int C = argc > 1 ? atoi(argv[1]) : 768, N = argc > 2 ? atoi(argv[2]) : 32768;
    const size_t limit = argc > 3 ? (size_t)atol(argv[3]) : 20000;
    CUDA_CHECK(cudaStreamCreate(&g_stream));
    CUBLAS_CHECK(cublasLtCreate(&g_lt));
    CUDA_CHECK(cudaMalloc(&g_workspace, WORKSPACE_BYTES));
    const int H = 4 * C;
    void *x = rand_buf((size_t)N * H, 1), *y = rand_buf((size_t)N * H, 2),
         *pre = rand_buf((size_t)N * H, 3), *d = rand_buf((size_t)N * H, 4),
         *w = rand_buf((size_t)H * C, 5), *bias = rand_buf(H, 6), *dw = rand_buf((size_t)H * C, 7);
    void *grad; /* a bias gradient the BGRAD epilogues write, fp32 or bf16 */
    CUDA_CHECK(cudaMalloc(&grad, (size_t)H * 4));
    const cudaDataType_t BF = CUDA_R_16BF, F32 = CUDA_R_32F;
    const cublasLtEpilogue_t DEF = CUBLASLT_EPILOGUE_DEFAULT;
    /* name, ta tb m n k lda ldb ldd, beta, epilogue, A B bias aux D, bias type
     * (matmul.cu's layouts) */
    const gemm gemms[] = {
        {"c_fc_fwd_gelu", 1, 0, H, N, C, C, C, H, 0.f, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, w, x, bias,
         pre, d, BF},
        {"c_fc_fwd_plain", 1, 0, H, N, C, C, C, H, 0.f, DEF, w, x, nullptr, nullptr, d, BF},
        {"mlp_proj_dinp_dgelu", 0, 0, H, N, C, H, C, H, 0.f, CUBLASLT_EPILOGUE_DGELU, w, y, nullptr,
         pre, d, BF},
        {"mlp_proj_dinp_dgelu_bgrad_f32", 0, 0, H, N, C, H, C, H, 0.f,
         CUBLASLT_EPILOGUE_DGELU_BGRAD, w, y, grad, pre, d, F32},
        {"mlp_proj_dinp_dgelu_bgrad_bf16", 0, 0, H, N, C, H, C, H, 0.f,
         CUBLASLT_EPILOGUE_DGELU_BGRAD, w, y, grad, pre, d, BF},
        {"mlp_proj_dinp_plain", 0, 0, H, N, C, H, C, H, 0.f, DEF, w, y, nullptr, nullptr, d, BF},
        {"c_fc_dw_plain", 0, 1, C, H, N, C, H, C, 1.f, DEF, x, y, nullptr, nullptr, dw, BF},
        {"c_fc_dw_bgradb_f32", 0, 1, C, H, N, C, H, C, 1.f, CUBLASLT_EPILOGUE_BGRADB, x, y, grad,
         nullptr, dw, F32},
        {"c_fc_dw_bgradb_bf16", 0, 1, C, H, N, C, H, C, 1.f, CUBLASLT_EPILOGUE_BGRADB, x, y, grad,
         nullptr, dw, BF},
        {"attn_proj_fwd_bias", 1, 0, C, N, C, C, C, C, 0.f, CUBLASLT_EPILOGUE_BIAS, w, x, bias,
         nullptr, d, BF},
        {"attn_proj_dinp", 0, 0, C, N, C, C, C, C, 0.f, DEF, w, y, nullptr, nullptr, d, BF},
        {"attn_proj_dw", 0, 1, C, C, N, C, C, C, 1.f, DEF, x, y, nullptr, nullptr, dw, BF},
        {"c_attn_fwd_bias", 1, 0, 3 * C, N, C, C, C, 3 * C, 0.f, CUBLASLT_EPILOGUE_BIAS, w, x, bias,
         nullptr, d, BF},
    };
    const char *only = getenv("GEMM"); /* comma-separated parts of names */
    for (const gemm &g : gemms) {
        bool wanted = !only;
        for (const char *part = only; part && *part && !wanted;) {
            const char *end = strchr(part, ',');
            const size_t len = end ? (size_t)(end - part) : strlen(part);
            for (const char *at = g.name; *at && !wanted; at++)
                wanted = strncmp(at, part, len) == 0;
            part = end ? end + 1 : part + len;
        }
        if (wanted) bench(g, limit);
    }
    return 0;
}
