/* Check macros for the CUDA runtime and cuBLAS(Lt): each names the failed
 * statement, the library's message and file:line, then ends every rank
 * through fail_at (dist/fail.h). For .cu files only (C++). */
#ifndef GPT2_KERNELS_CUDA_CUDA_CHECK_H
#define GPT2_KERNELS_CUDA_CUDA_CHECK_H

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "base/fail.h"

#define CUDA_CHECK(stmt)                                                                           \
    do {                                                                                           \
        const cudaError_t cuda_err_ = (stmt);                                                      \
        if (cuda_err_ != cudaSuccess)                                                              \
            fail_at(__FILE__, __LINE__, EXIT_FATAL, "%s failed: %s (%s)", #stmt,                   \
                    cudaGetErrorString(cuda_err_), cudaGetErrorName(cuda_err_));                   \
    } while (0)

#define CUBLAS_CHECK(stmt)                                                                         \
    do {                                                                                           \
        const cublasStatus_t cublas_st_ = (stmt);                                                  \
        if (cublas_st_ != CUBLAS_STATUS_SUCCESS)                                                   \
            fail_at(__FILE__, __LINE__, EXIT_FATAL, "%s failed: %s (%d)", #stmt,                   \
                    cublasGetStatusString(cublas_st_), (int)cublas_st_);                           \
    } while (0)

/* After a kernel launch: a bad configuration surfaces here, at the launcher
 * that made it, not at the next synchronising call. */
#define CUDA_CHECK_LAUNCH(kernel)                                                                  \
    do {                                                                                           \
        const cudaError_t cuda_err_ = cudaGetLastError();                                          \
        if (cuda_err_ != cudaSuccess)                                                              \
            fail_at(__FILE__, __LINE__, EXIT_FATAL, "launch of %s failed: %s (%s)", kernel,        \
                    cudaGetErrorString(cuda_err_), cudaGetErrorName(cuda_err_));                   \
    } while (0)

#endif
