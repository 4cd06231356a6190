/* Linear layers with GPT-2's GELU epilogues by a GEMM of our own on Hopper
 * (sm_90a: wgmma, TMA, a producer warpgroup and two consumer warpgroups in
 * ping-pong, so that one's epilogue runs under the other's products), where
 * cuBLASLt's GELU epilogues cost the product more than their own work and
 * the backward's bias gradient needs a pass of its own
 * (docs/gpu-training.md has the measurements).
 *   matmul_wgmma_gelu_forward: out = gelu(inp W^T + bias), pre = inp W^T + bias
 *   matmul_wgmma_dgelu:        dinp = (dout W) * gelu'(pre), and the column
 *                              sums of dinp per 128 rows (for dpre_colsum)
 * Both take bf16 row-major operands, K-major: the backward's W (OC x C)
 * goes through a transposed copy (C x OC) in the caller's scratch. The
 * DGELU's pre-activations come in, and its output goes out, through a tile
 * of shared memory per warpgroup moved by TMA: ldmatrix and stmatrix give
 * and take them in the accumulators' layout, so that the epilogue, which
 * must issue fewer instructions than the other warpgroup's products take,
 * spends none on shuffling values between lanes. */
#include "kernels/matmul.h"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gelu.cuh"
#include "kernels/cuda/hopper.cuh"
#include "kernels/cuda/ptx.cuh"
#include "kernels/cuda/sm_count.cuh"
#include "kernels/cuda/smem_limit.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace {

enum { EPI_DGELU = 0, EPI_GELU = 1 };

struct LinearArgs {
    int M, N, K;
    bf16 *out;
    bf16 *aux;          // DGELU: pre (read); GELU: pre (written)
    const bf16 *bias;   // GELU
    float *colsum_part; // DGELU: [M / 128][N], or NULL
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LINEAR_WGMMA_DEVICE 1 // this device pass emits the wgmma code
#endif

// 4 stages: 6 measured slower with the DGELU epilogue's reads (docs/gpu-training.md)
struct P {
    static constexpr int BM = 128, BN = 128, BK = 64, STAGES = 4, NTH = 384;
    static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE = A_BYTES + B_BYTES;
    // DGELU: each consumer warpgroup's tile of pre, then of its output, as
    // two boxes of 128 rows x 64 columns (TMA's 128-byte swizzle)
    static constexpr int BOX = BM * 64 * 2, EPI_TILES = STAGES * STAGE;
    static constexpr int SUMS = EPI_TILES + 2 * 2 * BOX; // [2 warpgroups][4 warps][BN] fp32
    // full[S], empty[S], mainloop_done[2], pre_full[2], pre_free[2]
    static constexpr int BARS = SUMS + 8 * BN * 4;
    static constexpr size_t SMEM = BARS + (2 * STAGES + 6) * 8 + 1024;
};
static_assert(P::SMEM <= 227 * 1024, "shared memory");

#ifdef LINEAR_WGMMA_DEVICE
// Read-only loads as volatile asm, so that they stay where they are written
// (before the products, whose time hides their latency) where __ldg may be
// sunk to its use.
__device__ __forceinline__ uint32_t ld_nc_u32(const void *ptr) {
    uint32_t v;
    asm volatile("ld.global.nc.u32 %0, [%1];\n" : "=r"(v) : "l"(ptr));
    return v;
}

// The quad's 4 x 4 transpose of packed column pairs: before, thread t4 holds
// v[j] = columns 8 (4q + j) + 2 t4 (+1) of a row (the accumulator layout);
// after, v[k] = columns 8 (4q + t4) + 2 k (+1): 8 consecutive columns, one
// 16-byte access, the quad's 4 covering 64 contiguous bytes of the row (the
// accumulator layout's 4-byte accesses left the epilogue bound by its
// stores). Its own inverse.
__device__ __forceinline__ void quad_transpose(uint32_t (&v)[4], int t4) {
#pragma unroll
    for (int j = 0; j < 4; j += 2) {
        const uint32_t got = __shfl_xor_sync(0xffffffffu, (t4 & 1) ? v[j] : v[j + 1], 1);
        if (t4 & 1)
            v[j] = got;
        else
            v[j + 1] = got;
    }
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const uint32_t got = __shfl_xor_sync(0xffffffffu, (t4 & 2) ? v[j] : v[j + 2], 2);
        if (t4 & 2)
            v[j] = got;
        else
            v[j + 2] = got;
    }
}

// The DGELU epilogue of group q (columns 8 (4q + j) + 2 t4 + e, j < 4) of
// one 64-row half's accumulators acc[4n + e], n = 4q + j, rows 8 r + g
// (r = 0, 1) of the warp's 16 (e >> 1 = r): pre[r] their pre-activations as
// ldmatrix gave them from the staged tile (the accumulators' layout), the
// output written over them there by stmatrix at this lane's addresses
// at[r]; cs[2j + e] gets this thread's column sums of the output before its
// bf16 rounding (the fp32 reference's sums).
__device__ __forceinline__ void dgelu_group(const float (&acc)[64], int q, const uint32_t (&at)[2],
                                            const uint32_t (&pre)[2][4], float (&cs)[8]) {
#pragma unroll
    for (int r = 0; r < 2; r++) {
        uint32_t v[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int n = 4 * q + j;
            const float2 x =
                __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&pre[r][j]));
            const float d0 = acc[4 * n + 2 * r] * gelu_grad(x.x),
                        d1 = acc[4 * n + 2 * r + 1] * gelu_grad(x.y);
            v[j] = pack_bf16(d0, d1);
            cs[2 * j] += d0, cs[2 * j + 1] += d1;
        }
        stmatrix_x4(at[r], v);
    }
}

// The GELU epilogue of group q: bias2[n] the bias pair of columns 8 n + 2 t4
// (+1); pre and gelu(pre) stored.
__device__ __forceinline__ void gelu_group(const float (&acc)[64], int q,
                                           const uint32_t (&bias2)[16], bf16 *out, bf16 *pre_out,
                                           size_t row, int ld, int col_store, int t4) {
#pragma unroll
    for (int r = 0; r < 2; r++) {
        uint32_t a[4], o[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int n = 4 * q + j;
            const float2 b =
                __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&bias2[n]));
            const float x0 = acc[4 * n + 2 * r] + b.x, x1 = acc[4 * n + 2 * r + 1] + b.y;
            a[j] = pack_bf16(x0, x1);
            o[j] = pack_bf16(gelu(x0), gelu(x1));
        }
        quad_transpose(a, t4);
        quad_transpose(o, t4);
        const size_t at = (row + 8 * r) * ld + col_store;
        *reinterpret_cast<uint4 *>(pre_out + at) = make_uint4(a[0], a[1], a[2], a[3]);
        *reinterpret_cast<uint4 *>(out + at) = make_uint4(o[0], o[1], o[2], o[3]);
    }
}

// cs summed over the warp's 8 row groups g, stored by g = 0 at
// sums_row[8 (4q + j) + 2 t4 + e]
__device__ __forceinline__ void colsum_group(float (&cs)[8], int q, float *sums_row, int g,
                                             int t4) {
#pragma unroll
    for (int k = 0; k < 8; k++)
#pragma unroll
        for (int m = 4; m < 32; m <<= 1) cs[k] += __shfl_xor_sync(0xffffffffu, cs[k], m);
    if (g == 0)
#pragma unroll
        for (int j = 0; j < 4; j++)
            *reinterpret_cast<float2 *>(sums_row + 8 * (4 * q + j) + 2 * t4) =
                make_float2(cs[2 * j], cs[2 * j + 1]);
}
#endif

// Each consumer warpgroup computes its own 128 x 128 tiles (the block's
// tiles in turn: warpgroup 0 the even ones), two m64n128k16 a k step (128
// accumulators a thread), so that one's epilogue runs under the other's
// products. The producer fills the stages in the block's tile order; a
// warpgroup starts a tile's products only once the other has finished its
// products of the tile before (mainloop_done), which also keeps every
// stage's fills in the order of their waits (a warpgroup waiting on a
// stage's fill f must not see the phase of f - 2 as f's). DGELU: a second
// producer thread loads each tile's pre into its warpgroup's tile (pre_full)
// once the warpgroup's first thread has seen its last output read out by
// its TMA store (pre_free); the warpgroup reads pre and writes its output
// there in place, each lane the elements it read.
template <int EPI>
__global__ void __launch_bounds__(P::NTH, 1)
    wgmma_linear_kernel(const __grid_constant__ CUtensorMap map_a,
                        const __grid_constant__ CUtensorMap map_b,
                        const __grid_constant__ CUtensorMap map_pre,
                        const __grid_constant__ CUtensorMap map_out, const LinearArgs p) {
#ifdef LINEAR_WGMMA_DEVICE
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sm = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    const uint32_t bars = smem_u32(sm + P::BARS);
    auto full = [&](int s) { return bars + 8 * s; };
    auto empty = [&](int s) { return bars + 8 * (P::STAGES + s); };
    auto done = [&](int w) { return bars + 8 * (2 * P::STAGES + w); };
    // DGELU: warpgroup w's tile of pre landed; its last output read out
    auto pre_full = [&](int w) { return bars + 8 * (2 * P::STAGES + 2 + w); };
    auto pre_free = [&](int w) { return bars + 8 * (2 * P::STAGES + 4 + w); };
    auto epi_tile = [&](int w) { return smem_u32(sm + P::EPI_TILES + w * 2 * P::BOX); };
    auto sA = [&](int s) { return smem_u32(sm + s * P::STAGE); };
    auto sB = [&](int s) { return smem_u32(sm + s * P::STAGE + P::A_BYTES); };
    const int tid = threadIdx.x, lane = tid & 31;
    const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
    const int n_nblk = p.N / P::BN, tiles = (p.M / P::BM) * n_nblk, ksteps = p.K / P::BK;
    // tile t's row block and its first row and column
    auto tile_at = [&](int t, int &mblk, int &m0, int &n0) {
        mblk = t / n_nblk, m0 = mblk * P::BM, n0 = (t % n_nblk) * P::BN;
    };
    if (tid == 0) {
        for (int s = 0; s < P::STAGES; s++) {
            mbar_init(full(s), 1);
            mbar_init(empty(s), 4); // the consuming warpgroup's 4 warps
        }
        for (int w = 0; w < 2; w++) {
            mbar_init(done(w), 1);
            mbar_init(pre_full(w), 1);
            mbar_init(pre_free(w), 1); // the warpgroup's first thread
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) { // the producer: one thread issues every stage's two TMA loads
        setmaxnreg_dec<40>();
        if (EPI == EPI_DGELU && tid == 32) {
            // another loads each tile's pre into its warpgroup's tile once
            // the last output there has been read out (i: the block's tile)
            for (int i = 0, t = blockIdx.x; t < tiles; i++, t += gridDim.x) {
                const int w = i & 1;
                int mblk, m0, n0;
                tile_at(t, mblk, m0, n0);
                if (i >= 2) mbar_wait(pre_free(w), ((i >> 1) - 1) & 1);
                mbar_arrive_expect_tx(pre_full(w), 2 * P::BOX);
                tma_load_2d(epi_tile(w), &map_pre, n0, m0, pre_full(w));
                tma_load_2d(epi_tile(w) + P::BOX, &map_pre, n0 + 64, m0, pre_full(w));
            }
        } else if (tid == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                int mblk, m0, n0;
                tile_at(t, mblk, m0, n0);
                for (int kb = 0; kb < ksteps; kb++, it++) {
                    const int s = it % P::STAGES;
                    if (it >= P::STAGES) mbar_wait(empty(s), ((it / P::STAGES) - 1) & 1);
                    mbar_arrive_expect_tx(full(s), P::STAGE);
                    tma_load_2d(sA(s), &map_a, kb * P::BK, m0, full(s));
                    tma_load_2d(sB(s), &map_b, kb * P::BK, n0, full(s));
                }
            }
        }
        return;
    }

    setmaxnreg_inc<232>();
    const int w = wg - 1, warp = (tid >> 5) & 3, g = lane >> 2, t4 = lane & 3;
    const bool leader = tid % 128 == 0; // issues the warpgroup's TMA stores
    float *sums = reinterpret_cast<float *>(sm + P::SUMS) + w * 4 * P::BN;
    // DGELU: this lane's ldmatrix / stmatrix address in its warpgroup's tile
    // for row group r = 0 of the first half, 16-byte chunk 4 q + (lane >> 3)
    // of q = 0 (row 16 warp + (lane & 7), chunk c at c ^ (row & 7)); chunk
    // 4 (q & 1) + i is at i ^ 4 of chunk i (i < 4), columns from 64 in the
    // second box
    const uint32_t epi_at =
        epi_tile(w) + (16 * warp + (lane & 7)) * 128 + (((lane >> 3) ^ (lane & 7)) << 4);
    // i: the block's tile index (t = blockIdx.x + i gridDim.x); j: this warpgroup's
    for (int i = w, j = 0; blockIdx.x + i * gridDim.x < tiles; i += 2, j++) {
        int mblk, m0, n0;
        tile_at(blockIdx.x + i * gridDim.x, mblk, m0, n0);
        // acc_h[4n + e]: row m0 + 64 h + 16 warp + g + 8 (e >> 1), col n0 + 8 n + 2 t4 + (e & 1)
        const size_t row0 = (size_t)m0 + 16 * warp + g;
        // GELU: the bias, read before the products (after them, a round trip
        // in series with the epilogue); DGELU: the last tile's output read
        // out of the warpgroup's tile, which the next pre may then fill
        uint32_t bias2[16]; // [n]
        if constexpr (EPI == EPI_GELU) {
#pragma unroll
            for (int n = 0; n < 16; n++) bias2[n] = ld_nc_u32(p.bias + n0 + 8 * n + 2 * t4);
        } else if (j > 0 && leader) {
            bulk_wait_read();
            mbar_arrive(pre_free(w));
        }
        if (i > 0) // the other warpgroup's products of tile i - 1 are done
            mbar_wait(done(w ^ 1), (w == 0 ? j - 1 : j) & 1);
        float acc0[64], acc1[64]; // rows m0 + 0..63, m0 + 64..127
        int it = i * ksteps;
        for (int kb = 0; kb < ksteps; kb++, it++) {
            const int s = it % P::STAGES;
            mbar_wait(full(s), (it / P::STAGES) & 1);
            const Sw128 da(sA(s)), db(sB(s));
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                wgmma_m64n128k16_ss(acc0, da.at(32 * kk), db.at(32 * kk), kb > 0 || kk > 0);
                wgmma_m64n128k16_ss(acc1, da.at(64 * 128 + 32 * kk), db.at(32 * kk),
                                    kb > 0 || kk > 0);
            }
            wgmma_commit();
            wgmma_wait<1>(); // the step before's products done: its stage is free
            fence_regs(acc0);
            fence_regs(acc1);
            if (kb > 0 && lane == 0) mbar_arrive(empty((it - 1) % P::STAGES));
        }
        wgmma_wait<0>();
        fence_regs(acc0);
        fence_regs(acc1);
        if (lane == 0) mbar_arrive(empty((it - 1) % P::STAGES));
        if (leader) mbar_arrive(done(w)); // the other warpgroup may start its products

        if constexpr (EPI == EPI_DGELU) {
            mbar_wait(pre_full(w), j & 1);
#pragma unroll
            for (int q = 0; q < 4; q++) {
                // the group's pre of both halves first: four loads in flight
                uint32_t at[2][2], pre[2][2][4];
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int r = 0; r < 2; r++) {
                        at[h][r] =
                            (epi_at ^ ((q & 1) << 6)) + (q >> 1) * P::BOX + (64 * h + 8 * r) * 128;
                        ldmatrix_x4(pre[h][r], at[h][r]);
                    }
                float cs[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
                dgelu_group(acc0, q, at[0], pre[0], cs);
                dgelu_group(acc1, q, at[1], pre[1], cs);
                if (p.colsum_part) colsum_group(cs, q, sums + warp * P::BN, g, t4);
            }
            fence_proxy_async(); // the output's stmatrix, read next by TMA
            named_bar_sync(1 + w, 128);
            if (leader) {
                tma_store_2d(&map_out, n0, m0, epi_tile(w));
                tma_store_2d(&map_out, n0 + 64, m0, epi_tile(w) + P::BOX);
                bulk_commit();
            }
            if (p.colsum_part) {
                const int c = tid % 128; // one column each, the 4 warps' sums in order
                p.colsum_part[(size_t)mblk * p.N + n0 + c] =
                    sums[c] + sums[P::BN + c] + sums[2 * P::BN + c] + sums[3 * P::BN + c];
                named_bar_sync(1 + w, 128);
            }
        } else {
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const int col_store = n0 + 8 * (4 * q + t4);
                gelu_group(acc0, q, bias2, p.out, p.aux, row0, p.N, col_store, t4);
                gelu_group(acc1, q, bias2, p.out, p.aux, row0 + 64, p.N, col_store, t4);
            }
        }
    }
    if (EPI == EPI_DGELU && leader) bulk_wait_done(); // the last outputs stored
#else
    __trap();
#endif
}

// out (cols x rows) = in (rows x cols) transposed, bf16, 32 x 32 tiles
static __global__ void transpose_kernel(bf16 *out, const bf16 *in, int rows, int cols) {
    __shared__ bf16 tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;
    for (int k = threadIdx.y; k < 32; k += 8)
        if (r0 + k < rows && c < cols) tile[k][threadIdx.x] = in[(size_t)(r0 + k) * cols + c];
    __syncthreads();
    const int r = r0 + threadIdx.x, c0 = blockIdx.x * 32;
    for (int k = threadIdx.y; k < 32; k += 8)
        if (c0 + k < cols && r < rows) out[(size_t)(c0 + k) * rows + r] = tile[threadIdx.x][k];
}

// a row-major [rows][cols] bf16 matrix in boxes of box_rows x 64 columns, 128-byte swizzle; 0
// where the driver has no tensor maps
static int make_map(CUtensorMap *m, const void *x, int rows, int cols, int box_rows) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (!encode) return 0;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)cols * sizeof(bf16)};
    const cuuint32_t box[2] = {64, (cuuint32_t)box_rows}, es[2] = {1, 1};
    return encode(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(x), dims, strides, box,
                  es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Whether this call can run here: sm_90a code on compute capability 9.0,
// the tile multiples, 16-byte aligned operands.
static bool runs(int M, int N, int K, const void *const *ptrs, int n) {
#ifdef GPT2_HAVE_SM90A
    int dev = 0, major = 0, minor = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major != 9 || minor != 0) return false;
    if (M % P::BM || N % P::BN || K % P::BK) return false;
    for (int i = 0; i < n; i++)
        if (ptrs[i] && (uintptr_t)ptrs[i] % 16) return false;
    return true;
#else
    (void)M, (void)N, (void)K, (void)ptrs, (void)n;
    return false;
#endif
}

template <int EPI>
static int launch(const void *A, const void *Bt, const LinearArgs &p, cudaStream_t stream) {
    CUtensorMap ma, mb, mpre, mout; // DGELU's pre and output: 128-row boxes of 64 columns
    if (!make_map(&ma, A, p.M, p.K, P::BM) || !make_map(&mb, Bt, p.N, p.K, P::BN)) return 0;
    if (EPI == EPI_DGELU) {
        if (!make_map(&mpre, p.aux, p.M, p.N, P::BM) || !make_map(&mout, p.out, p.M, p.N, P::BM))
            return 0;
    } else {
        mpre = mout = ma; // unused
    }
    static unsigned long long raised = 0; // a bit per device
    raise_smem_limit(wgmma_linear_kernel<EPI>, P::SMEM, raised);
    const int tiles = (p.M / P::BM) * (p.N / P::BN), sms = sm_count();
    auto kernel = wgmma_linear_kernel<EPI>;
    const int grid = tiles < sms ? tiles : sms;
    kernel<<<grid, P::NTH, P::SMEM, stream>>>(ma, mb, mpre, mout, p);
    CUDA_CHECK_LAUNCH("wgmma_linear_kernel");
    return 1;
}

} // namespace

extern "C" int matmul_wgmma_gelu_forward(void *out, void *pre, const void *inp, const void *weight,
                                         const void *bias, int N, int C, int OC,
                                         cudaStream_t stream) {
    const void *ptrs[] = {out, pre, inp, weight, bias};
    if (!bias || !runs(N, OC, C, ptrs, 5)) return 0;
    const LinearArgs p = {N, OC, C, (bf16 *)out, (bf16 *)pre, (const bf16 *)bias, nullptr};
    return launch<EPI_GELU>(inp, weight, p, stream);
}

extern "C" size_t matmul_wgmma_dgelu_scratch_bytes(int N, int C, int OC) {
    return (size_t)C * OC * sizeof(bf16) + (size_t)(N / P::BM) * C * sizeof(float);
}

extern "C" int matmul_wgmma_dgelu(void *dinp, void *dpre_colsum, const void *dout,
                                  const void *weight, const void *pre, int N, int C, int OC,
                                  void *scratch, cudaStream_t stream) {
    const void *ptrs[] = {dinp, dout, weight, pre, scratch};
    if (!runs(N, C, OC, ptrs, 5)) return 0;
    bf16 *wt = (bf16 *)scratch; // W^T: C x OC
    float *partials = (float *)((char *)scratch + (size_t)C * OC * sizeof(bf16));
    transpose_kernel<<<dim3((C + 31) / 32, (OC + 31) / 32), dim3(32, 8), 0, stream>>>(
        wt, (const bf16 *)weight, OC, C);
    CUDA_CHECK_LAUNCH("transpose_kernel");
    const LinearArgs p = {
        N, C, OC, (bf16 *)dinp, (bf16 *)pre, nullptr, dpre_colsum ? partials : nullptr};
    if (!launch<EPI_DGELU>(dout, wt, p, stream)) return 0;
    if (dpre_colsum) bias_partials_add_cuda(dpre_colsum, partials, N / P::BM, C, stream);
    return 1;
}
