/* A CUDA driver function reached through the runtime's entry-point query
 * (no link against the driver library): the tensor-map encoder for TMA
 * (hopper.cuh) and the stream memory operations of the copy engines
 * (dist/copy_engines.cu). For .cu files only (C++). */
#ifndef GPT2_KERNELS_CUDA_DRIVER_ENTRY_CUH
#define GPT2_KERNELS_CUDA_DRIVER_ENTRY_CUH

#include <cuda_runtime.h>

/* Sets *fn to the driver's `name` as of the CUDA 12.0 ABI and returns true;
 * or sets it to NULL and returns false where the driver has none, clearing
 * the runtime's error so that the next launch check does not report it. */
static inline bool driver_entry(const char *name, void **fn) {
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        *fn = nullptr;
        return false;
    }
    return true;
}

#endif
