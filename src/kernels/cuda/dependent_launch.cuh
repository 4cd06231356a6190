/* Programmatic dependent launch (compute capability 9.0 and newer): a
 * kernel launched by launch_dependent may start while the kernel before it
 * in the stream still runs, so that its launch and the part of its start
 * that reads nothing the one before writes go under that one's last wave.
 * Such a kernel calls grid_dependency_wait() before its first access to
 * what the kernel before writes (or reads, where it writes it); the kernel
 * before may call launch_dependents() to let it be launched before its own
 * blocks end. On older devices, and in kernels launched with <<<>>>, both
 * calls do nothing. For .cu files only (C++). */
#ifndef GPT2_KERNELS_CUDA_DEPENDENT_LAUNCH_CUH
#define GPT2_KERNELS_CUDA_DEPENDENT_LAUNCH_CUH

#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda/cuda_check.h"

// Waits until the kernel before this one in the stream has completed and its
// memory operations are visible.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the kernel after this one (launched by launch_dependent) be launched
// once every block of this one has called it or ended; it still waits for
// this kernel's completion in grid_dependency_wait().
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...), allowed to start before the
// kernel before it in the stream ends; name: for the launch-error message.
template <typename... Params, typename... Args>
void launch_dependent(const char *name, void (*kernel)(Params...), dim3 grid, dim3 block,
                      size_t smem, cudaStream_t stream, Args &&...args) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    const cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
    if (err != cudaSuccess)
        fail_at(__FILE__, __LINE__, EXIT_FATAL, "launch of %s failed: %s (%s)", name,
                cudaGetErrorString(err), cudaGetErrorName(err));
}
#endif
