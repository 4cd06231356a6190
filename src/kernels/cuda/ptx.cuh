/* PTX helpers the CUDA kernels share: shared-memory addresses, cp.async
 * (asynchronous global -> shared copies, sm_80 and newer), ldmatrix, named barriers
 * (a barrier for a subset of a block's warps) and the MUFU's exp2 and
 * reciprocal. */
#ifndef GPT2_KERNELS_CUDA_PTX_CUH
#define GPT2_KERNELS_CUDA_PTX_CUH

#include <cuda_runtime.h>
#include <stdint.h>

constexpr float LOG2E = 1.4426950408889634f;

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared; zero-filled when !valid (src is not read then).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0));
}
// 4 bytes global -> shared; zero-filled when !valid.
__device__ __forceinline__ void cp_async4(uint32_t dst, const void *src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}
// Waits until at most N of this thread's committed cp.async groups are pending.
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 bf16 matrices from shared memory into mma fragments: lane
// 8i + c gives the address of row c of matrix i (16 bytes); register i
// gets matrix i, each thread two adjacent elements of a row (row lane / 4,
// columns 2 (lane % 4)..). _trans: each matrix transposed on the way.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// Barrier `id` (1-15; 0 is __syncthreads') for `threads` threads, a
// multiple of 32: sync waits for all of them, arrive only counts itself.
static __device__ __forceinline__ void named_bar_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// the same where the threads come to it from different instructions
static __device__ __forceinline__ void named_bar_sync_unaligned(int id, int threads) {
    asm volatile("barrier.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
static __device__ __forceinline__ void named_bar_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// 2^x by the MUFU's ex2, results under 2^-126 flushed to zero (__exp2f and
// __expf add a range fix-up of several instructions in builds without -ftz).
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
// 1 / x by the MUFU's rcp, flush-to-zero (__fdividef(1, x) adds a range
// fix-up in builds without -ftz); 1 / inf is 0.
__device__ __forceinline__ float fast_rcp(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

#endif
