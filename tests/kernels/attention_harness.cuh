/* What the attention test and benchmark share (tests/kernels/test_attention_cuda.cu,
 * bench/bench_attention.cu): the fatal-error hook the kernels call when they
 * are built without the core library (scripts/build_attention_standalone.sh),
 * and CK, which ends the program on a failed CUDA call. */
#ifndef GPT2_TESTS_ATTENTION_HARNESS_CUH
#define GPT2_TESTS_ATTENTION_HARNESS_CUH

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#ifdef GPT2_ATTN_STANDALONE
/* Built without the core library (no MPI): the fatal-error hook the kernels call. */
extern "C" [[noreturn]] void fail_at(const char *file, int line, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: error: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(code);
}
#endif

#define CK(stmt)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (stmt);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #stmt,                   \
                    cudaGetErrorString(e_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#endif
