/* The Hopper (sm_90a) helpers the wgmma kernels share (attention_wgmma_*.cuh,
 * matmul_wgmma.cu; tuning/layernorm_tuning.cu): on the host, the
 * driver's tensor-map encoder; on the device, the shared-memory descriptor
 * of 128-byte-swizzled tiles, wgmma's fence, commit and wait, stmatrix,
 * mbarriers, bulk loads, the proxy fence and bulk groups of the copy
 * engine, and setmaxnreg, defined only in the device pass for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL), where the
 * kernels that use them have bodies. */
#ifndef GPT2_KERNELS_CUDA_HOPPER_CUH
#define GPT2_KERNELS_CUDA_HOPPER_CUH

#include <cuda.h> // CUtensorMap
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include "kernels/cuda/driver_entry.cuh"
#include "kernels/cuda/ptx.cuh" // named barriers

// The driver's cuTensorMapEncodeTiled, looked up once; NULL where the
// driver has none (the callers then run their kernels without TMA, or not
// at all).
static inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(void) {
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
        void *fn = nullptr;
        driver_entry("cuTensorMapEncodeTiled", &fn);
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    }();
    return encode;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Shared-memory matrix descriptor of a 128-byte-swizzled tile of 128-byte
// rows starting at saddr (1024-aligned, or advanced within a row for the
// next k step of a K-major operand): 8-row groups 1024 bytes apart (stride
// byte offset); the leading byte offset is unused by these layouts (1).
// Sw128(saddr).at(off) is the descriptor at saddr + off: the low word
// holds the address in 16-byte units (14 bits, no carry out of them in 228 KB
// of shared memory), so that a descriptor costs one integer add instead of
// the mask, shift and or of the address (with the warpgroup index
// made warp-uniform, the descriptors then live in uniform registers).
struct Sw128 {
    uint32_t lo; // (saddr >> 4) | leading byte offset 1
    __device__ __forceinline__ explicit Sw128(uint32_t saddr)
        : lo(((saddr & 0x3FFFFu) >> 4) | 1u << 16) {}
    __device__ __forceinline__ uint64_t at(uint32_t off) const {
        // high word: stride byte offset 1024 >> 4, swizzle mode 1 (128 bytes) at bit 62
        return (uint64_t)((1024 >> 4) | 1u << 30) << 32 | (lo + (off >> 4));
    }
};

static __device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N of this warpgroup's committed wgmma groups are pending.
template <int N> static __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accesses of the accumulators across the
// asynchronous wgmma that writes them.
template <int N> static __device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}

// mbarriers (shared-memory barrier objects that count arrivals and the bytes
// of asynchronous copies).
static __device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// This thread's arrival, and `bytes` more of asynchronous copies to wait for.
static __device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}
// Waits for the completion of the barrier's phase of the given parity.
static __device__ __forceinline__ void mbar_wait(uint32_t bar, int parity) {
    asm volatile("{\n.reg .pred done;\n"
                 "WAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
// Makes the mbarrier initialisations of this thread visible to the other
// threads and to the copy engine (a block barrier must follow).
static __device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Four 8x8 bf16 matrices from mma fragments (register i: matrix i, each
// thread two adjacent elements of a row, as ldmatrix_x4 gives them) into
// shared memory: lane 8i + c gives the address of row c of matrix i (16
// bytes). _trans: the address of row c of matrix i's transpose.
static __device__ __forceinline__ void stmatrix_x4(uint32_t addr, const uint32_t (&r)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                 "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}
static __device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, const uint32_t (&r)[4]) {
    asm volatile(
        "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
        "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
        : "memory");
}
// A bulk copy of `bytes` (a multiple of 16; both addresses 16-byte aligned)
// from global into shared memory, completing on the mbarrier bar.
static __device__ __forceinline__ void bulk_load(uint32_t dst, const void *src, uint32_t bytes,
                                                 uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
// Generic-proxy writes to shared memory (cp.async, st.shared, stmatrix)
// made visible to the async proxy that wgmma and TMA read through, and the
// other way round.
static __device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// A thread's bulk copies (TMA stores, bulk reductions) go in bulk groups:
// commit closes one; the waits are for all of the thread's groups.
static __device__ __forceinline__ void bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until this thread's bulk operations have read their shared source.
static __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// Waits until they have completed (their writes done).
static __device__ __forceinline__ void bulk_wait_done() {
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
// This warpgroup's registers per thread lowered or raised to N (all its
// threads execute it); the block's total must stay within the register file.
template <int N> static __device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> static __device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
#endif
#endif
