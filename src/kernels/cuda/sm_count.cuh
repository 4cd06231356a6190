/* The current device's number of multiprocessors, for grids of one wave
 * (one block, or as many as fit, per SM): a host query, cached per device,
 * so that launches stay cheap. For .cu files only (C++). */
#ifndef GPT2_KERNELS_CUDA_SM_COUNT_CUH
#define GPT2_KERNELS_CUDA_SM_COUNT_CUH

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"

inline int sm_count() {
    static int known[64];
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev < 64 && known[dev]) return known[dev];
    int n = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    if (dev < 64) known[dev] = n;
    return n;
}
#endif
