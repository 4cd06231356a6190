/* Raising a kernel's dynamic shared-memory limit once per device: a plain
 * host call (cudaFuncSetAttribute), kept out of the launch path and out of
 * CUDA graph captures. For .cu files only (C++). */
#ifndef GPT2_KERNELS_CUDA_SMEM_LIMIT_CUH
#define GPT2_KERNELS_CUDA_SMEM_LIMIT_CUH

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"

/* Sets kernel's limit to `bytes` on the current device unless `done` (the
 * caller's static, one per kernel instantiation, a bit per device) says it
 * is set there already. */
template <typename Kernel>
void raise_smem_limit(Kernel kernel, size_t bytes, unsigned long long &done) {
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev < 64 && (done >> dev & 1ull)) return;
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    if (dev < 64) done |= 1ull << dev;
}
#endif
