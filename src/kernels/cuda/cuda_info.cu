// GPU discovery through the CUDA runtime (see kernels/cuda_info.h).
#include "kernels/cuda_info.h"

#include <cuda_runtime.h>
#include <stdio.h>

extern "C" int cuda_device_count(void) {
    int n = 0;
    // No driver or no device is not an error here: the CPU backend still runs.
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int cuda_compute_capability(int device) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return major * 10 + minor;
}

extern "C" void cuda_device_describe(int device, char *buf, size_t len) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        snprintf(buf, len, "device %d (unavailable)", device);
        return;
    }
    snprintf(buf, len, "%s (sm_%d%d, %.0f GiB)", prop.name, prop.major, prop.minor,
             prop.totalGlobalMem / 1073741824.0);
}

extern "C" int cuda_runtime_version(void) {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return v;
}

extern "C" void cuda_device_pci_bus_id(int device, char *buf, size_t len) {
    if (len == 0) return;
    if (cudaDeviceGetPCIBusId(buf, (int)len, device) != cudaSuccess) {
        cudaGetLastError();
        snprintf(buf, len, "?");
    }
}

extern "C" size_t cuda_memory_in_use(void) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return total_b - free_b;
}

extern "C" int cuda_memory_info(size_t *free_bytes, size_t *total_bytes) {
    if (cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return 0;
}
