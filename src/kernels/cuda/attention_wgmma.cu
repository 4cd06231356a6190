/* Causal flash attention on wgmma and TMA, the kernel family of Hopper
 * (sm_90a code, compute capability 9.0: H100, H200, GH200), head size 64 or
 * 128, forward and the backward's main kernel: the FlashAttention-2
 * algorithm of the mma.sync family (attention_mma.cu; same lse layout and
 * results within bf16 rounding) with the matrix products on wgmma, the
 * Hopper tensor-core instruction that a warpgroup (4 warps) issues
 * asynchronously with its operands read from shared memory through matrix
 * descriptors, and the copies on the Hopper copy engine (TMA). The
 * dispatcher (attention.cu) runs these where they run, unless its options
 * say otherwise, and the backward's passes around the main kernel.
 *
 * Forward: a block of NWG warpgroups owns 64 * NWG query rows of one
 * (batch, head); warpgroup w the rows 64w..64w+63. Thread 0 loads the Q
 * tile and K, V tiles of BN keys with TMA (a 4-D tensor map of qkv) into
 * 4 (head size 64) or 3 (128) buffers, each with a "full" mbarrier the
 * copy completes and an "empty" one every warp arrives at when done with
 * it, and refills a buffer once every warp is done with it; no block-wide
 * barrier in the loop. The walk is software pipelined: a warpgroup issues
 * S of key tile j together with P V of the tile before, and computes the
 * softmax of tile j while the tensor cores do that P V. At head size 128,
 * whose walk over key tiles of 128 needs 160 registers for O, S and P, the
 * block is FlashAttention-3's: one block per SM, a producer warpgroup whose
 * thread 0 does the loading and whose registers go to the two computing
 * warpgroups (setmaxnreg), which issue their products in turns (ping-pong),
 * on a persistent grid whose blocks walk pairs of query tiles.
 * The tiles are in the 128-byte swizzled layout of attention_tiles.cuh, which
 * is both TMA's 128-byte swizzle and the layout wgmma reads (K-major for Q
 * and K in S = Q K^T; MN-major, transposed by the instruction, for V in
 * O += P V); 128 head dims are two 64-column atoms.
 * The walk over key tiles, causal skipping per warpgroup, masking and the
 * online softmax (base 2, fp32) are the mma.sync family's; the wgmma
 * accumulator layout per warp is the mma.sync one, so P goes from the S
 * accumulators straight into wgmma's register A operand. Blocks go in
 * groups of 16 heads, longest query tiles first (fwd_block_coords;
 * persistent, the backward's schedule over query tiles, ws_schedule).
 * Where no TMA tensor map can be made (a driver without
 * cuTensorMapEncodeTiled), the same shapes run with cp.async loads
 * (CpAsyncFwd, CpAsyncBwd64, CpAsyncBwd).
 *
 * Backward: warp-specialized, as FlashAttention-3 builds it
 * (attn_bwd_ws_kernel: a producer warpgroup and two consumer warpgroups
 * over 128 keys), at both head sizes; one warpgroup over 64 keys
 * (attn_bwd_wgmma_kernel) where no tensor map can be made.
 *
 * Tile shapes: WgmmaFwd64 ... WgmmaBwd128 below; tuning builds
 * (GPT2_ATTN_TUNING) add the other shapes measured, by name
 * (attention_wgmma_variants, at the end). This file's kernels have bodies
 * only when compiled for sm_90a (GPT2_CUDA_ARCHS with "90a"; the build then
 * defines GPT2_HAVE_SM90A). */
#include <cuda.h> // CUtensorMap (the driver's function is reached through the runtime)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include <type_traits>

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/hopper.cuh"
#include "kernels/cuda/sm_count.cuh"

namespace {

using namespace attention_tiles;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTN_WGMMA_DEVICE 1 // this device pass emits the wgmma code
#endif

// ---------------------------------------------------------------------------
// wgmma (PTX ISA 8.0, sm_90a). Operand lists are spelled out: inline asm
// takes no arrays.

#ifdef ATTN_WGMMA_DEVICE

// TMA tile loads, completing on an mbarrier (hopper.cuh).
// One 64 x 64 bf16 box of a 4-D tensor map at coordinates (c0..c3) into
// shared memory (128-byte swizzled by the map), completing on bar.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap *map, int c0, int c1,
                                            int c2, int c3, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                 : "memory");
}
// ROWS positions from row0 of head `head` of batch b of a make_head_map
// tensor map, NA atoms of 64 head dims (ROWS / 64 x NA boxes), into the
// tile at s in the atom layout (attention_tiles.cuh), completing on bar.
template <int ROWS, int NA>
__device__ __forceinline__ void tma_tile(bf16 *s, const CUtensorMap *map, int head, int row0, int b,
                                         uint32_t bar) {
#pragma unroll
    for (int a = 0; a < NA; a++)
#pragma unroll
        for (int r = 0; r < ROWS / 64; r++)
            tma_load_4d(smem_u32(s + a * ROWS * 64 + r * 64 * 64), map, 64 * a, head, row0 + 64 * r,
                        b, bar);
}

// The tile that tma_tile<ROWS, NA> would load, into L2 only (no completion
// to wait for): a later tma_tile of it then reads L2 instead of memory.
template <int ROWS, int NA>
__device__ __forceinline__ void tma_prefetch_tile(const CUtensorMap *map, int head, int row0,
                                                  int b) {
#pragma unroll
    for (int a = 0; a < NA; a++)
#pragma unroll
        for (int r = 0; r < ROWS / 64; r++)
            asm volatile(
                "cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n" ::"l"(
                    reinterpret_cast<uint64_t>(map)),
                "r"(64 * a), "r"(head), "r"(row0 + 64 * r), "r"(b)
                : "memory");
}

// One 64 x 64 bf16 box from shared memory (in the map's 128-byte swizzle)
// to a 4-D tensor map at coordinates (c0..c3), as an operation of this
// thread's bulk group; rows past the tensor's end are not written.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap *map, int c0, int c1, int c2, int c3,
                                             uint32_t src) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group"
                 " [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(reinterpret_cast<uint64_t>(map)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
                 : "memory");
}

// dst[i] += src[i] for `bytes` / 4 floats, global += shared, by the bulk
// copy engine (TMA) as one asynchronous operation of this thread's bulk
// group; bytes a multiple of 16, both addresses 16-byte aligned.
__device__ __forceinline__ void bulk_reduce_add_f32(float *dst, uint32_t src, uint32_t bytes) {
    asm volatile(
        "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst),
        "r"(src), "r"(bytes)
        : "memory");
}
// dst[i] = src[i], the same way.
__device__ __forceinline__ void bulk_store_f32(float *dst, uint32_t src, uint32_t bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst),
                 "r"(src), "r"(bytes)
                 : "memory");
}

// The deterministic mode's turn-taking on a global counter: wait until it
// reaches `turn` (acquire), and pass the turn on (release). The proxy fences
// order the copy engine's writes with these generic-proxy accesses.
__device__ __forceinline__ void turn_wait(const unsigned *counter, unsigned turn) {
    unsigned v;
    do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(counter) : "memory");
    } while (v < turn);
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
__device__ __forceinline__ void turn_pass(unsigned *counter) {
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(counter) : "memory");
}

// D (64 x 64, fp32) = A B (scale_d = 0) or D += A B (scale_d = 1), A 64 x 16
// and B 16 x 64 in shared memory (descriptors): A K-major; B K-major (stored
// as 64 x 16, TRANS_B = 0: D = A B^T of that) or MN-major (TRANS_B = 1).
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b,
                                                   int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "
                 "%30, %31 "
                 "}, %32, %33, p, 1, 1, 0, %35;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_B));
}

// D (64 x 128, fp32) = A B^T (scale_d = 0) or D += A B^T (scale_d = 1): A is
// 64 x 16 and B 128 x 16, both K-major in shared memory (descriptors).
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t desc_a,
                                                    uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "
                 "%30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "
                 "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, "
                 "%58, %59, %60, %61, %62, %63 "
                 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// D (64 x 64, fp32) += A B: A 64 x 16 bf16 in registers (per warp of the
// group, the mma.sync m16n8k16 A fragment), B 16 x 64 MN-major in shared memory.
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4],
                                                   uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "
                 "%30, %31 "
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

// The A fragments of wgmma's register operand from fp32 accumulators of the
// same rows (the mma.sync layout: two n-tiles of 8 columns = one k step of 16).
template <int KS>
__device__ __forceinline__ void pack_a_frags(const float (&x)[KS * 8], uint32_t (&frag)[KS][4]) {
#pragma unroll
    for (int k = 0; k < KS; k++)
#pragma unroll
        for (int r = 0; r < 4; r++) frag[k][r] = pack_bf16(x[8 * k + 2 * r], x[8 * k + 2 * r + 1]);
}

// acc (NA atoms of 64 columns, 32 accumulators each) += A B, issued: A from
// registers (frag[k], the A fragment of k step k: 16 rows of B), B the
// MN-major tile at desc, its atoms ROWS * 128 bytes apart (P V in the
// forward; dV += P^T dO, dK += dS^T Q in the backward).
template <int NA, int KS, int ROWS>
__device__ __forceinline__ void wgmma_rs_tile(float *acc, const uint32_t (&frag)[KS][4],
                                              Sw128 desc) {
#pragma unroll
    for (int a = 0; a < NA; a++)
#pragma unroll
        for (int k = 0; k < KS; k++)
            wgmma_m64n64k16_rs(*reinterpret_cast<float(*)[32]>(acc + 32 * a), frag[k],
                               desc.at(a * ROWS * 128 + 2048 * k));
}
#endif

// ---------------------------------------------------------------------------
// Forward, head size HS = 64 or 128

// Shared-memory byte address of k step kk (16 head dims) of a K-major tile
// of ROWS rows in the atom layout (attention_tiles.cuh): 32 bytes a step within a
// 64-column atom, atoms ROWS * 128 bytes apart.
template <int ROWS> __device__ __forceinline__ constexpr uint32_t kstep_off(int kk) {
    return (kk >> 2) * ROWS * 128 + 32 * (kk & 3);
}

// STAGES: 0 = K, V double-buffered by cp.async, the block synchronising
// each tile; 2 to 4 = that many K, V buffers filled by TMA, each with a
// "full" mbarrier (the copy landed) and an "empty" one (every computing
// warp is done with it), thread 0 (of the producer warpgroup, where there
// is one) refilling a buffer once it is empty. TABLE_ROWS: the items of a
// persistent block's schedule that its shared memory holds (0: one item a
// block, no table).
template <int HS, int NWG, int BN, int STAGES, int TABLE_ROWS = 0> struct WgmmaFwdCfg {
    // NTH: the threads that compute (a producer warpgroup comes on top)
    static constexpr int BM = 64 * NWG, NTH = 128 * NWG, NBUF = STAGES ? STAGES : 2;
    // Q, then NBUF x (K, V), then the mbarriers (full, empty, Q's full and
    // empty), then the table; +1024 to align the base for the swizzle
    static constexpr size_t SMEM = (size_t)(BM + 2 * NBUF * BN) * HS * sizeof(bf16) +
                                   (2 * NBUF + 2) * 8 + TABLE_ROWS * 8 + 1024;
};
// A persistent forward's table: rows of (bh, query tile) in shared memory.
// 192 fit beside WgmmaFwd128's 3 stages in the 227 KB an SM gives a block;
// a schedule with more items a block runs one item a block instead.
constexpr int FWD_TABLE_ROWS = 192;
template <class Shape>
using FwdCfgOf = WgmmaFwdCfg<Shape::HS, Shape::WARPGROUPS, Shape::KEYS, Shape::TMA_STAGES,
                             Shape::PERSISTENT ? FWD_TABLE_ROWS : 0>;

// A block's threads: the computing warpgroups and, with PRODUCER, the one
// that loads for them
template <class Shape> constexpr int fwd_block_threads() {
    return FwdCfgOf<Shape>::NTH + (Shape::PRODUCER ? 128 : 0);
}

#ifdef ATTN_WGMMA_DEVICE
// This block's items (the key blocks it walks, or the forward's query
// tiles as fwd_item_at maps them: WsWork, attention_block_order.h)
// into its row of the table, an item a thread; the block's barrier after it
// makes them visible to every role.
__device__ __forceinline__ void ws_table_write(const WsWork &wk, int2 *row, int n_kb) {
    const int block = (int)blockIdx.x, grid = (int)gridDim.x;
    for (int ic = (int)threadIdx.x; ic < wk.rows; ic += (int)blockDim.x) {
        WsItem x;
        const int more = ws_item_at(&wk, block, grid, ic, n_kb, 1, &x);
        row[ic] = more ? make_int2(x.bh, x.n_it ? x.k0 : -1) : make_int2(-1, -1);
    }
}
// Item ic of this block under the forward's schedule wk (attention_block_order.h:
// ws_item_at's key block kb of n_qt is query tile n_qt - 1 - kb, which has
// as many key tiles as that key block has query tiles): its (batch, head)
// pair and query tile, qt -1 for a pair's second that is its first; false
// past the block's last.
__device__ __forceinline__ bool fwd_item_at(const WsWork &wk, int ic, int n_qt, int &bh, int &qt) {
    WsItem x;
    if (!ws_item_at(&wk, (int)blockIdx.x, (int)gridDim.x, ic, n_qt, 1, &x)) return false;
    bh = x.bh;
    qt = x.n_it ? n_qt - 1 - x.k0 : -1;
    return true;
}
#endif

// Shape: WgmmaFwd64's members (below). qkv_map (TMA_STAGES > 0): qkv as a
// 4-D tensor (head dim, 3 x NH, T, B) with 64 x 1 x 64 x 1 boxes, 128-byte
// swizzled (make_head_map). wk: the blocks' items (ws_schedule's, over
// query tiles; PERSISTENT: several a block, else one).
template <class Shape>
static __global__ void __launch_bounds__(fwd_block_threads<Shape>(), Shape::MIN_BLOCKS)
    attn_fwd_wgmma_kernel(bf16 *__restrict__ out, float *__restrict__ lse,
                          const bf16 *__restrict__ qkv, int T, int NH, float scale_log2,
                          const WsWork wk, const __grid_constant__ CUtensorMap qkv_map) {
    // the shape under the body's names (unused where the body is __trap())
    [[maybe_unused]] constexpr int HS = Shape::HS, NWG = Shape::WARPGROUPS, BN = Shape::KEYS,
                                   STAGES = Shape::TMA_STAGES;
    [[maybe_unused]] constexpr bool LAZY = Shape::LAZY_RESCALE, PIPE = Shape::PIPELINED,
                                    PROD = Shape::PRODUCER, PING = Shape::PINGPONG,
                                    PERSIST = Shape::PERSISTENT, PREFETCH_Q = Shape::PREFETCH_Q;
#ifdef ATTN_WGMMA_DEVICE
    static_assert(BN == 64 || BN == 128, "key tiles of whole 64-row atoms");
    static_assert(!PROD || (PIPE && STAGES > 0), "the producer serves the pipelined TMA walk");
    // the warpgroups take turns per tile: they must walk as many tiles
    static_assert(!PING || (PROD && Shape::WARPGROUPS == 2 && BN == 64 * Shape::WARPGROUPS),
                  "ping-pong: two warpgroups, key tiles as tall as the block");
    static_assert(!PERSIST || PROD, "the producer walks a persistent block's items ahead");
    static_assert(!PREFETCH_Q || PERSIST, "the next item's Q: persistent blocks have one");
    typedef FwdCfgOf<Shape> Cfg;
    constexpr int BM = Cfg::BM, NTH = Cfg::NTH, NS = BN / 8, NO = HS / 8, NA = HS / 64;
    constexpr int NBUF = Cfg::NBUF;
    extern __shared__ unsigned char smem_raw[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023));
    bf16 *sK = sQ + BM * HS; // [NBUF][BN * HS]
    bf16 *sV = sK + NBUF * BN * HS;
    // mbarriers (TMA): full[NBUF], empty[NBUF], then Q's full and empty
    const uint32_t bar0 = smem_u32(sV + NBUF * BN * HS);
    auto full_bar = [&](int i) { return bar0 + 8 * i; };
    auto empty_bar = [&](int i) { return bar0 + 8 * (NBUF + i); };
    const uint32_t q_bar = bar0 + 16 * NBUF, q_empty = q_bar + 8;
    int2 *const table = reinterpret_cast<int2 *>(
        reinterpret_cast<unsigned char *>(sV + NBUF * BN * HS) + (2 * NBUF + 2) * 8);

    // PIPE: wg, warp broadcast from lane 0: the compiler then knows them
    // warp-uniform, and keeps what derives from them (descriptors, the walk's
    // counters) in uniform registers, as wgmma takes its descriptors (the
    // unpipelined walk at head size 128 had its wgmma serialized that way)
    // PROD: warpgroup 0 loads; tid, wg and warp count the computing ones
    const int tid = (int)threadIdx.x - (PROD ? 128 : 0), lane = tid & 31;
    const int wg = PIPE ? __shfl_sync(0xffffffffu, tid >> 7, 0) : tid >> 7;
    const int warp = PIPE ? __shfl_sync(0xffffffffu, (tid >> 5) & 3, 0) : (tid >> 5) & 3;
    const int n_qt = (T + BM - 1) / BM;
    const int C = NH * HS;
    const size_t ld = (size_t)3 * C;
    // The block's items: persistent, its row of the table, written below
    // (one load an item: computed, they spilled the producer's registers in
    // the backward); else its one item, computed here before the roles part.
    int bh0 = 0, qt0 = 0;
    if constexpr (!PERSIST) fwd_item_at(wk, 0, n_qt, bh0, qt0);
    auto item = [&](int ic, int &bh, int &qt) {
        if constexpr (PERSIST) {
            const int2 e = table[ic]; // (bh, key block: fwd_item_at's)
            bh = e.x, qt = e.y < 0 ? -1 : n_qt - 1 - e.y;
            return e.x >= 0;
        } else {
            bh = bh0, qt = qt0;
            return ic == 0;
        }
    };
    constexpr int MOST_ITEMS = PERSIST ? FWD_TABLE_ROWS : 1; // bounds the walks for the compiler
    // key tiles up to the causal limit of query tile qt
    auto key_tiles = [&](int qt) { return (min(qt * BM + BM, T) - 1) / BN + 1; };

    // TMA: the K, V tile at key k0 of head h of batch b into buffer t % NBUF
    // (t: the block's tiles before it)
    auto tma_kv = [&](int t, int k0, int h, int b) {
        const int buf = t % NBUF;
        mbar_arrive_expect_tx(full_bar(buf), 2 * BN * HS * sizeof(bf16));
        tma_tile<BN, NA>(sK + buf * BN * HS, &qkv_map, NH + h, k0, b, full_bar(buf));
        tma_tile<BN, NA>(sV + buf * BN * HS, &qkv_map, 2 * NH + h, k0, b, full_bar(buf));
    };
    auto tma_q = [&](int q0, int h, int b) {
        mbar_arrive_expect_tx(q_bar, BM * HS * sizeof(bf16));
        tma_tile<BM, NA>(sQ, &qkv_map, h, q0, b, q_bar);
    };
    if constexpr (STAGES > 0) {
        if (threadIdx.x == 0) {
            for (int i = 0; i < NBUF; i++) {
                mbar_init(full_bar(i), 1);
                mbar_init(empty_bar(i), NTH / 32); // one arrival per warp
            }
            mbar_init(q_bar, 1);
            mbar_init(q_empty, NTH / 32);
            mbar_init_fence();
        }
        if constexpr (PERSIST) ws_table_write(wk, table, n_qt);
        __syncthreads(); // the barriers initialised and the table written
        if constexpr (PROD) {
            // the producer: one thread loads each item's Q once every
            // computing warp is done with the last item's, and refills each
            // K, V buffer once every computing warp is done with it, the
            // next item's tiles under this one's last; its warpgroup's
            // registers go to the others (FlashAttention-3's register
            // reallocation)
            if (threadIdx.x < 128) {
                setmaxnreg_dec<24>();
                if (threadIdx.x == 0) {
                    int bh, qt;
                    for (int ic = 0, t = 0, qc = 0; ic < MOST_ITEMS && item(ic, bh, qt); ic++) {
                        if (qt < 0) continue;
                        const int b = bh / NH, h = bh % NH, n_kt = key_tiles(qt);
                        for (int it = 0; it < n_kt; it++, t++) {
                            if (t >= NBUF) mbar_wait(empty_bar(t % NBUF), (t / NBUF - 1) & 1);
                            tma_kv(t, (n_kt - 1 - it) * BN, h, b);
                            if (it == 0) {
                                if (qc > 0) mbar_wait(q_empty, (qc - 1) & 1);
                                tma_q(qt * BM, h, b);
                                qc++;
                                // the next item's Q into L2, so that its load
                                // (once this one's products are done with Q)
                                // does not wait for memory
                                int nbh, nqt;
                                for (int nc = ic + 1;
                                     PREFETCH_Q && nc < MOST_ITEMS && item(nc, nbh, nqt); nc++)
                                    if (nqt >= 0) {
                                        tma_prefetch_tile<BM, NA>(&qkv_map, nbh % NH, nqt * BM,
                                                                  nbh / NH);
                                        break;
                                    }
                            }
                        }
                    }
                }
                return;
            }
            setmaxnreg_inc<240>();
        }
    }

    const int g = lane >> 2, t4 = lane & 3;
    const Sw128 q_desc(smem_u32(sQ + 64 * wg * 64)); // the group's rows of atom 0
    const Sw128 k_desc0(smem_u32(sK)), v_desc0(smem_u32(sV));
    auto buf_desc = [&](Sw128 d, int t) { // buffer t % NBUF's, from buffer 0's
        d.lo += (unsigned)t % NBUF * (BN * HS * sizeof(bf16) >> 4);
        return d;
    };
    auto k_tile = [&](int t) { return buf_desc(k_desc0, t); };
    auto v_tile = [&](int t) { return buf_desc(v_desc0, t); };
    // PING: the warpgroups issue their products in turns (named barriers
    // 1 + w), so that one's softmax runs under the other's products
    // (FlashAttention-3's ping-pong); warpgroup 0 goes first. Turns come in
    // pairs: a warpgroup past T walks the tiles too, and warpgroup 1 passes
    // every turn, its last taken after the block's last item.
    auto my_turn = [&] {
        if (PING) named_bar_sync(1 + wg, 256);
    };
    auto pass_turn = [&] {
        if (PING) named_bar_arrive(2 - wg, 256);
    };
    if (PING && wg == 0) named_bar_arrive(1, 256);

    int bh, qt;
    // gt: the block's key tiles before the item (the buffers' parities); qc: its items
    for (int ic = 0, gt = 0, qc = 0; ic < MOST_ITEMS && item(ic, bh, qt); ic++) {
        if (qt < 0) continue;
        const int b = bh / NH, h = bh % NH, q0 = qt * BM, n_kt = key_tiles(qt);
        const bf16 *qg = qkv + (size_t)b * T * ld + (size_t)h * HS;
        const bf16 *kg = qg + C, *vg = qg + 2 * C;
        if constexpr (STAGES > 0 && !PROD) { // one item a block: gt = 0
            if (threadIdx.x == 0) {
                tma_q(q0, h, b);
                for (int it = 0; it < min(NBUF, n_kt); it++) tma_kv(it, (n_kt - 1 - it) * BN, h, b);
            }
        } else if constexpr (STAGES == 0) {
            load_tile<BM, HS, NTH, true>(sQ, qg + (size_t)q0 * ld, ld, T - q0, tid);
            const int k0 = (n_kt - 1) * BN;
            load_tile<BN, HS, NTH, true>(sK, kg + (size_t)k0 * ld, ld, T - k0, tid);
            load_tile<BN, HS, NTH, true>(sV, vg + (size_t)k0 * ld, ld, T - k0, tid);
            cp_async_commit();
        }

        const int g_row0 = q0 + 64 * wg;      // the warpgroup's first row in the sequence
        const int wrow0 = g_row0 + 16 * warp; // the warp's
        const bool group_active = g_row0 < T;

        float o[NO * 4]; // 32 per 64 head dims: atom a's accumulators are o[32a..32a+31]
        float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
        for (int i = 0; i < NO * 4; i++) o[i] = 0.f;

        // The steps of one key tile, shared by both walks below.
        // S = Q K^T, issued (not waited for): k steps of 16 head dims.
        auto issue_s = [&](float(&s)[NS * 4], Sw128 k_desc) {
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++) {
                const uint64_t da = q_desc.at(kstep_off<BM>(kk)), db = k_desc.at(kstep_off<BN>(kk));
                if constexpr (BN == 64)
                    wgmma_m64n64k16_ss<0>(s, da, db, kk > 0);
                else
                    wgmma_m64n128k16_ss(s, da, db, kk > 0);
            }
            wgmma_commit();
        };
        // Key tile j's mask and online softmax, base 2: s becomes p = 2^(s*scale*log2e - m),
        // m and l move on, alpha is O's factor; returns whether a row max of this thread went up.
        // may_cross = false: the caller knows the tile below every row of the warp.
        auto softmax_tile = [&](float(&s)[NS * 4], int j, float(&alpha)[2], bool may_cross) {
            // s[4n + e]: row wrow0 + g + 8 (e >> 1), key j BN + 8n + 2 t4 + (e & 1)
            if (may_cross && j * BN + BN - 1 > wrow0) { // crosses the diagonal
#pragma unroll
                for (int n = 0; n < NS; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int row = wrow0 + g + ((e >> 1) << 3);
                        const int col = j * BN + n * 8 + 2 * t4 + (e & 1);
                        if (col > row) s[4 * n + e] = -INFINITY;
                    }
            }
            bool grew = false;
#pragma unroll
            for (int r = 0; r < 2; r++) {
                float mx = -INFINITY;
#pragma unroll
                for (int n = 0; n < NS; n++)
                    mx = fmaxf(mx, fmaxf(s[4 * n + 2 * r], s[4 * n + 2 * r + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float m_new = fmaxf(m[r], mx * scale_log2);
                const float m_use = m_new == -INFINITY ? 0.f : m_new; // row fully masked so far
                alpha[r] = fast_exp2(m[r] - m_use);
                grew |= m_new > m[r];
                m[r] = m_new;
                float sum = 0.f;
#pragma unroll
                for (int n = 0; n < NS; n++) {
                    const float p0 = fast_exp2(fmaf(s[4 * n + 2 * r], scale_log2, -m_use));
                    const float p1 = fast_exp2(fmaf(s[4 * n + 2 * r + 1], scale_log2, -m_use));
                    s[4 * n + 2 * r] = p0;
                    s[4 * n + 2 * r + 1] = p1;
                    sum += p0 + p1;
                }
                l[r] = l[r] * alpha[r] + sum;
            }
            return grew;
        };
        // alpha = 1 exactly where the max stayed: the warp skips the HS / 2
        // multiplies a thread unless one of its 16 rows went up (LAZY; after
        // the first tiles from the diagonal most tiles raise no row max)
        auto rescale_o = [&](bool grew, const float(&alpha)[2]) {
            if (LAZY && !__any_sync(0xffffffffu, grew)) return;
#pragma unroll
            for (int r = 0; r < 2; r++)
#pragma unroll
                for (int n = 0; n < NO; n++) {
                    o[4 * n + 2 * r] *= alpha[r];
                    o[4 * n + 2 * r + 1] *= alpha[r];
                }
        };
        // P as the A fragments of P V
        auto pack_p = [&](const float(&s)[NS * 4], uint32_t(&pa)[BN / 16][4]) {
            pack_a_frags<BN / 16>(s, pa);
        };
        // O += P V per 64 head dims (atom a of V), issued: k steps of 16 keys =
        // 16 rows of V (2048 bytes)
        auto issue_pv = [&](const uint32_t(&pa)[BN / 16][4], Sw128 v_desc) {
            wgmma_fence();
            fence_regs(o);
            wgmma_rs_tile<NA, BN / 16, BN>(o, pa, v_desc);
            wgmma_commit();
        };
        // the item's Q read by every product of this warp that reads it
        auto q_done = [&] {
            if (PERSIST && lane == 0) mbar_arrive(q_empty);
        };

        if constexpr (PIPE) {
            // Software pipelined (TMA only): S of tile it is issued together
            // with P V of tile it - 1, and the softmax of tile it runs while the
            // tensor cores do that P V. The warp is done with tile u once its
            // P V completed; thread 0 then refills u's buffer with tile u + NBUF.
            auto wait_full = [&](int it) {
                mbar_wait(full_bar((gt + it) % NBUF), ((gt + it) / NBUF) & 1);
            };
            auto release = [&](int u) {
                if (lane == 0) mbar_arrive(empty_bar((gt + u) % NBUF));
                if (!PROD && tid == 0 && u + NBUF < n_kt) { // gt = 0
                    mbar_wait(empty_bar(u % NBUF), (u / NBUF) & 1);
                    tma_kv(u + NBUF, (n_kt - 1 - (u + NBUF)) * BN, h, b);
                }
            };
            // the tiles above this warpgroup's diagonal: a prefix of the walk
            const int it0 = group_active || PING ? max(0, n_kt - 1 - (g_row0 + 63) / BN) : n_kt;
            for (int it = 0; it < it0; it++) {
                wait_full(it);
                release(it);
            }
            if (it0 < n_kt) {
                float s[NS * 4], alpha[2];
                uint32_t pa[BN / 16][4];
                mbar_wait(q_bar, qc & 1);
                wait_full(it0);
                my_turn();
                issue_s(s, k_tile(gt + it0));
                pass_turn();
                wgmma_wait<0>();
                fence_regs(s);
                if (it0 == n_kt - 1) q_done();
                // the warpgroup's diagonal tile first; the later ones are below all its
                // rows (its first row and the tiles are multiples of 64): unmasked
                softmax_tile(s, n_kt - 1 - it0, alpha, true); // O is still 0: no rescale
                pack_p(s, pa);
                for (int it = it0 + 1; it < n_kt; it++) {
                    wait_full(it);
                    my_turn();
                    issue_s(s, k_tile(gt + it));
                    issue_pv(pa, v_tile(gt + it - 1));
                    pass_turn();
                    wgmma_wait<1>(); // S landed; P V of the previous tile still runs
                    fence_regs(s);
                    if (it == n_kt - 1) q_done();
                    const bool grew = softmax_tile(s, n_kt - 1 - it, alpha, false);
                    wgmma_wait<0>();
                    fence_regs(o);
                    release(it - 1);
                    rescale_o(grew, alpha);
                    pack_p(s, pa);
                }
                my_turn();
                issue_pv(pa, v_tile(gt + n_kt - 1));
                pass_turn();
                wgmma_wait<0>();
                fence_regs(o);
                release(n_kt - 1);
            } else {
                q_done();
            }
        } else {
            for (int it = 0; it < n_kt; it++) {
                const int j = n_kt - 1 - it, buf = it % NBUF;
                if constexpr (STAGES > 0) {
                    // thread 0 refills the buffer of the previous tile once all warps
                    // are done with it: the copy runs NBUF - 1 tiles ahead of its use
                    if (tid == 0 && it >= 1 && it - 1 + NBUF < n_kt) {
                        mbar_wait(empty_bar((it - 1) % NBUF), ((it - 1) / NBUF) & 1);
                        tma_kv(it - 1 + NBUF, (n_kt - 1 - (it - 1 + NBUF)) * BN, h, b);
                    }
                    if (it == 0) mbar_wait(q_bar, 0);
                    mbar_wait(full_bar(buf), (it / NBUF) & 1);
                } else {
                    cp_async_wait_all();
                    fence_proxy_async();
                    __syncthreads(); // tile j landed; everyone is done with buffer buf ^ 1
                    if (j > 0) {
                        const int k0 = (j - 1) * BN;
                        load_tile<BN, HS, NTH, true>(sK + (buf ^ 1) * BN * HS, kg + (size_t)k0 * ld,
                                                     ld, T - k0, tid);
                        load_tile<BN, HS, NTH, true>(sV + (buf ^ 1) * BN * HS, vg + (size_t)k0 * ld,
                                                     ld, T - k0, tid);
                        cp_async_commit();
                    }
                }
                // causal block skipping per warpgroup (wgmma is issued by all 4 warps)
                if (!group_active || j * BN > g_row0 + 63) {
                    if (STAGES > 0 && lane == 0) mbar_arrive(empty_bar(buf));
                    continue;
                }
                float s[NS * 4], alpha[2];
                uint32_t pa[BN / 16][4];
                issue_s(s, k_tile(it));
                wgmma_wait<0>();
                fence_regs(s);
                const bool grew = softmax_tile(s, j, alpha, true);
                rescale_o(grew, alpha);
                pack_p(s, pa);
                issue_pv(pa, v_tile(it));
                wgmma_wait<0>();
                fence_regs(o);
                if (STAGES > 0 && lane == 0) mbar_arrive(empty_bar(buf)); // K, V read: warp done
            }
        }
        gt += n_kt, qc++;
        if (!group_active) continue;

        // lse, O / l. One item a block: O goes through the warp's own 16
        // rows of sQ (read by this warpgroup's wgmma only, all complete)
        // for 16-byte global stores. Persistent: the next item's Q may be
        // landing there; each thread stores its own pairs of columns.
        if constexpr (!PERSIST) fence_proxy_async();
        float *lse_bh = lse + (size_t)bh * T;
        bf16 *og = out + (size_t)b * T * C + (size_t)h * HS;
        const int wl0 = 64 * wg + 16 * warp; // the warp's first row within the block
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float sum = l[r];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = 1.f / sum;
            const int lr = wl0 + g + 8 * r;
            if (t4 == 0 && q0 + lr < T) lse_bh[q0 + lr] = (m[r] + __log2f(sum)) * LN2;
            if constexpr (PERSIST) {
                if (q0 + lr < T)
#pragma unroll
                    for (int n = 0; n < NO; n++)
                        *reinterpret_cast<uint32_t *>(og + (size_t)(q0 + lr) * C + n * 8 + 2 * t4) =
                            pack_bf16(o[4 * n + 2 * r] * inv, o[4 * n + 2 * r + 1] * inv);
            } else {
#pragma unroll
                for (int n = 0; n < NO; n++)
                    *reinterpret_cast<uint32_t *>(sQ + atom_off<BM>(lr, n * 8 + 2 * t4)) =
                        pack_bf16(o[4 * n + 2 * r] * inv, o[4 * n + 2 * r + 1] * inv);
            }
        }
        if constexpr (!PERSIST) {
            __syncwarp();
            constexpr int CH = HS / 8;
#pragma unroll
            for (int k = 0; k < 16 * CH / 32; k++) {
                const int i = lane + 32 * k, r = i / CH, c = i % CH;
                const int row = wrow0 + r;
                if (row < T)
                    *reinterpret_cast<uint4 *>(og + (size_t)row * C + c * 8) =
                        *reinterpret_cast<const uint4 *>(sQ + atom_off<BM>(wl0 + r, c * 8));
            }
        }
    }
    if (PING && wg == 0) my_turn(); // warpgroup 1's last pass
#else
    __trap(); // built without sm_90a code: attention_wgmma_forward never launches this
#endif
}

// ---------------------------------------------------------------------------
// Backward main kernel, head size HS = 64 or 128 (the dispatcher,
// attention.cu, runs the D = rowsum(dO*O) pass before it and the dQ
// conversion after, as for the mma.sync main kernel).
//
// A block (one warpgroup) owns 64 keys of one (batch, head) and keeps dK, dV
// for them in wgmma accumulators while it walks the query tiles of 64 rows
// from the diagonal to T, Q, dO, lse and D in NST stages (3 at head size
// 64, measured faster than 2; 2 at 128, whose third would leave room for one
// block per SM). Thread 0 loads K, V and the Q, dO tiles with TMA (tensor
// maps of qkv and dout), which frees the registers that the cp.async
// addresses took (cp.async stays the fallback where no tensor map can be
// made). Per tile:
// S^T = K Q^T and dP^T = V dO^T (A and B K-major from shared memory),
// P^T = exp(S^T - lse) masked above the diagonal, dS^T = P^T (dP^T - D)
// (SPLIT: P^T computed while the tensor cores do dP^T; SPLIT 2: dV issued
// then too, and dK before the dS barrier; measured faster at head size 128
// only, where there are registers for it);
// dV += P^T dO and dK += dS^T Q with P^T, dS^T as register A operands (dO, Q
// MN-major); dS^T goes to shared memory transposed (stmatrix .trans), so
// that dQ_tile = dS K is one more wgmma (dS K-major, K MN-major). dQ_tile
// goes to shared memory (into this stage's Q and dO tiles, which the
// products have finished with) and is added to the fp32 dQ accumulator by
// the copy engine (TMA), one bulk reduction (cp.reduce.async.bulk) per warp
// for its 16 rows, instead of 1024 vector atomics per warp.
//
// DET (dq_order): the adds into each 16-row slice of dQ go in the order of
// the key blocks, so that fp32 rounding is the same every run. Key block kb
// contributes to query tiles kb.. (causal); warp w of block kb waits until
// the slice's counter says kb blocks have added, adds, waits for its add to
// complete and passes the turn. Blocks are dispatched in index order and
// block kb waits only on blocks before it, so every wait ends. The blocks
// walk the query tiles from the last one down in this mode (the first tile
// of block kb is the last of every earlier block; walking up, block kb
// would wait a whole tile's work for block kb - 1 at every tile). The
// accumulator's layout (dq_wgmma_index, attention_tiles.cuh) makes each tile
// one contiguous block and the stores to shared memory free of bank conflicts.
// Products with HS columns run per 64 (one atom of the tiles): at HS = 128
// dQ is done half by half, so that its accumulators (32 registers) come on
// top of dK's and dV's only.

constexpr int BWD_BM = 64, BWD_BN = 64;
// Compile-time flags of the backward's tile step: the tile that may cross
// the diagonal (masked) or one known to be below it.
typedef std::true_type Diagonal;
typedef std::false_type Below;
// K, V, NST x (Q, dO), dS (queries x keys), then NST x (lse, D), NST mbarriers;
// +1024 for alignment
template <int HS, int NST = 2>
constexpr size_t BWD_SMEM = (size_t)(2 * BWD_BN * HS + 2 * NST * BWD_BM * HS + BWD_BM * BWD_BN) *
                                sizeof(bf16) +
                            2 * NST *BWD_BM * sizeof(float) + NST * 8 + 1024;

// The backward's element-wise steps on a warp's fragments of a tile of 16
// keys x 8 QN queries (S^T, dP^T: key kw0 + g + 8 (e >> 1), query q0 + 8n
// + 2 t4 + (e & 1) in [4n + e]). P^T = exp(S^T - lse) in place of S^T,
// zero above the diagonal where MASKED (the compares, 64 instructions, in
// the diagonal tile only); ls: the tile's lse rows.
template <bool MASKED, int QN>
__device__ __forceinline__ void exp_p_frags(float (&s)[QN * 4], const float *ls, float scale_log2,
                                            int kw0, int q0, int g, int t4) {
#pragma unroll
    for (int n = 0; n < QN; n++) {
        const float2 L = *reinterpret_cast<const float2 *>(ls + n * 8 + 2 * t4);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float p =
                fast_exp2(fmaf(s[4 * n + e], scale_log2, -((e & 1) ? L.y : L.x) * LOG2E));
            s[4 * n + e] =
                MASKED && kw0 + g + ((e >> 1) << 3) > q0 + n * 8 + 2 * t4 + (e & 1) ? 0.f : p;
        }
    }
}
// dS^T = P^T (dP^T - D) in place of dP^T; ds: the tile's D rows.
template <int QN>
__device__ __forceinline__ void ds_of_p_frags(float (&dp)[QN * 4], const float (&p)[QN * 4],
                                              const float *ds, int t4) {
#pragma unroll
    for (int n = 0; n < QN; n++) {
        const float2 Dq = *reinterpret_cast<const float2 *>(ds + n * 8 + 2 * t4);
#pragma unroll
        for (int e = 0; e < 4; e++)
            dp[4 * n + e] = p[4 * n + e] * (dp[4 * n + e] - ((e & 1) ? Dq.y : Dq.x));
    }
}
#ifdef ATTN_WGMMA_DEVICE
// dS (queries x keys) from a warp's dS^T A fragments into the 64-key atom
// at `atom` of a tile of queries as rows (128 bytes each, swizzled):
// fragment da[kq][m] is the 8x8 block of keys 16 warp + 8 (m & 1).. x
// queries 16 kq + 8 (m >> 1).., stored transposed.
template <int KQ>
__device__ __forceinline__ void store_ds_trans(uint32_t atom, const uint32_t (&da)[KQ][4], int warp,
                                               int lane) {
    const int m = lane >> 3, c = lane & 7, chunk = 2 * warp + (m & 1);
#pragma unroll
    for (int kq = 0; kq < KQ; kq++) {
        const int q = 16 * kq + 8 * (m >> 1) + c;
        stmatrix_x4_trans(atom + q * 128 + ((chunk ^ (q & 7)) << 4), da[kq]);
    }
}
#endif

// dK (scaled) and dV of one warp's 16 keys (its wgmma accumulators: key
// chunk_k0 + 16 warp + g + 8 (e >> 1), column 8 n + 2 t4 + (e & 1) in
// [4 n + e]) into dqkv, both rows of a column group in one step: by rows,
// ptxas spilled more of the one-warpgroup kernel at head size 128, which
// has all 255 registers in use.
template <int NO>
__device__ __forceinline__ void store_warp_dkv(const float (&dk)[NO * 4], const float (&dv)[NO * 4],
                                               bf16 *dqkv, const BwdBlock &blk, int T, int chunk_k0,
                                               int warp, int lane, float scale) {
    constexpr int HS = NO * 8;
    const int g = lane >> 2, t4 = lane & 3, C = blk.C, kw0 = chunk_k0 + 16 * warp;
    bf16 *dkg = dqkv + (size_t)blk.b * T * blk.ld + C + (size_t)blk.h * HS;
    bf16 *dst0 = dkg + (size_t)(kw0 + g) * blk.ld + 2 * t4, *dst1 = dst0 + 8 * blk.ld;
    const bool in0 = kw0 + g < T, in1 = kw0 + g + 8 < T;
#pragma unroll
    for (int n = 0; n < NO; n++) {
        if (in0) {
            *reinterpret_cast<uint32_t *>(dst0 + n * 8) =
                pack_bf16(dk[4 * n] * scale, dk[4 * n + 1] * scale);
            *reinterpret_cast<uint32_t *>(dst0 + C + n * 8) = pack_bf16(dv[4 * n], dv[4 * n + 1]);
        }
        if (in1) {
            *reinterpret_cast<uint32_t *>(dst1 + n * 8) =
                pack_bf16(dk[4 * n + 2] * scale, dk[4 * n + 3] * scale);
            *reinterpret_cast<uint32_t *>(dst1 + C + n * 8) =
                pack_bf16(dv[4 * n + 2], dv[4 * n + 3]);
        }
    }
}

#ifdef ATTN_WGMMA_DEVICE
// A warp's dQ fragments of a 64 x 64 product (query row 16 warp + g + 8
// (e >> 1), dim 8n + 2 t4 + (e & 1) in [4n + e]) into the 64 fp32 rows at
// rows, in dq_wgmma_index's layout (8-float chunk n of row r at n ^ (r &
// 7), and r & 7 = g: stores free of bank conflicts).
__device__ __forceinline__ void stage_dq_frags(float *rows, const float (&dq)[32], int warp,
                                               int lane) {
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = 16 * warp + g + 8 * r;
#pragma unroll
        for (int n = 0; n < 8; n++)
            *reinterpret_cast<float2 *>(rows + row * 64 + ((n ^ g) << 3) + 2 * t4) =
                make_float2(dq[4 * n + 2 * r], dq[4 * n + 2 * r + 1]);
    }
}
// Counter `slot` (of 4) of the 64 dQ rows from row0 (a multiple of 64) of
// pair bh (dq_counters_bytes' layout): the deterministic mode's turns, or
// the warp-specialized kernel's claims.
__device__ __forceinline__ unsigned *dq_turn_counter(unsigned *counters, int bh, int T, int row0,
                                                     int slot) {
    return counters + ((size_t)bh * ((T + 63) / 64) + row0 / 64) * 4 + slot;
}
#endif

// A key block's walk over its n_it query tiles, step(it, Diagonal() or
// Below()): the NDIAG tiles on the diagonal (masked; two where the query
// tiles are half the key block) first, or last where the walk goes from T
// down (DET).
template <bool DET, int NDIAG = 1, class Step>
__device__ __forceinline__ void walk_query_tiles(int n_it, Step &step) {
    const int n_diag = n_it < NDIAG ? n_it : NDIAG;
    if (DET) {
        for (int it = 0; it < n_it - n_diag; it++) step(it, Below());
        for (int it = n_it - n_diag; it < n_it; it++) step(it, Diagonal());
    } else {
        for (int it = 0; it < n_diag; it++) step(it, Diagonal());
        for (int it = n_diag; it < n_it; it++) step(it, Below());
    }
}

// Shape: WgmmaBwd64's members (below). Shape::TMA: thread 0 loads K, V and
// each stage's Q, dO with TMA (qkv_map, dout_map: make_head_map's)
// completing on the stage's mbarrier; else all threads with cp.async. lse
// and D rows go by cp.async either way. DET: the deterministic mode.
template <class Shape, bool DET>
static __global__ void __launch_bounds__(128, Shape::MIN_BLOCKS)
    attn_bwd_wgmma_kernel(bf16 *__restrict__ dqkv, float *__restrict__ dq_acc,
                          const bf16 *__restrict__ dout, const bf16 *__restrict__ qkv,
                          const float *__restrict__ lse, const float *__restrict__ dsum, int T,
                          int NH, float scale, float scale_log2, unsigned *__restrict__ dq_order,
                          int group, const __grid_constant__ CUtensorMap qkv_map,
                          const __grid_constant__ CUtensorMap dout_map) {
    // the shape under the body's names (unused where the body is __trap())
    [[maybe_unused]] constexpr int HS = Shape::HS, NST = Shape::STAGES, SPLIT = Shape::SPLIT;
    [[maybe_unused]] constexpr bool TMA = Shape::TMA;
#ifdef ATTN_WGMMA_DEVICE
    constexpr int BM = BWD_BM, BN = BWD_BN, NTH = 128, QN = BM / 8, NO = HS / 8, NA = HS / 64;
    extern __shared__ unsigned char smem_raw[];
    bf16 *sK = reinterpret_cast<bf16 *>(smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023));
    bf16 *sV = sK + BN * HS;
    // [NST stages][Q, dO] (BM * HS each): a stage's pair is also the staging
    // area of that tile's dQ in fp32 ([HS / 64 atoms][BM][64])
    bf16 *sQdO = sV + BN * HS;
    bf16 *sdS = sQdO + 2 * NST * BM * HS;                 // BM x BN: dS, queries as rows
    float *sL = reinterpret_cast<float *>(sdS + BM * BN); // [NST][BM]
    float *sD = sL + NST * BM;                            // [NST][BM]
    const uint32_t full_bar0 = smem_u32(sD + NST * BM);   // TMA: stage st's Q, dO landed: + 8 st

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const BwdBlock blk = bwd_block<HS, BN>(qkv, dout, lse, dsum, T, NH, group);
    const int bh = blk.bh, b = blk.b, h = blk.h, k0 = blk.k0, C = blk.C;
    const size_t ld = blk.ld;
    const bf16 *qg = blk.qg, *dog = blk.dog;
    const int i0 = k0 / BM, n_qt = (T + BM - 1) / BM;

    if constexpr (TMA) {
        if (tid == 0) {
            for (int st = 0; st < NST; st++) mbar_init(full_bar0 + 8 * st, 1);
            mbar_init_fence();
        }
        __syncthreads(); // the barriers are initialised before anyone waits on them
    } else {
        load_tile<BN, HS, NTH, true>(sK, qg + C + (size_t)k0 * ld, ld, T - k0, tid);
        load_tile<BN, HS, NTH, true>(sV, qg + 2 * C + (size_t)k0 * ld, ld, T - k0, tid);
    }
    // stage st's tiles; with_kv (the first): K and V with them
    auto load_q_tile = [&](int i, int st, bool with_kv) {
        const int q0 = i * BM;
        bf16 *sq = sQdO + st * 2 * BM * HS;
        if constexpr (TMA) {
            if (tid == 0) {
                const uint32_t bar = full_bar0 + 8 * st;
                const int rows = with_kv ? 2 * BN + 2 * BM : 2 * BM; // of HS bf16
                mbar_arrive_expect_tx(bar, rows * HS * sizeof(bf16));
                if (with_kv) {
                    tma_tile<BN, NA>(sK, &qkv_map, NH + h, k0, b, bar);
                    tma_tile<BN, NA>(sV, &qkv_map, 2 * NH + h, k0, b, bar);
                }
                tma_tile<BM, NA>(sq, &qkv_map, h, q0, b, bar);
                tma_tile<BM, NA>(sq + BM * HS, &dout_map, h, q0, b, bar);
            }
        } else {
            load_tile<BM, HS, NTH, true>(sq, qg + (size_t)q0 * ld, ld, T - q0, tid);
            load_tile<BM, HS, NTH, true>(sq + BM * HS, dog + (size_t)q0 * C, C, T - q0, tid);
        }
        load_row_stats<BM>(sL + st * BM, sD + st * BM, blk, q0, T, tid);
    };
    // the walk over query tiles: from the diagonal up, or (DET) from the last
    // tile down, so that all key blocks of a head reach a tile together and
    // take their turns at its dQ one add after another, not a tile apart
    const int n_it = n_qt - i0;
    auto tile_of = [&](int it) { return DET ? n_qt - 1 - it : i0 + it; };
    load_q_tile(tile_of(0), 0, true);
    cp_async_commit();
    if (NST > 2) { // one cp.async group per tile, empty past the last
        if (n_it > 1) load_q_tile(tile_of(1), 1, false);
        cp_async_commit();
    }

    const int kw0 = k0 + 16 * warp; // this warp's first key in the sequence
    const uint32_t ds_addr = smem_u32(sdS);
    const Sw128 k_desc(smem_u32(sK)), v_desc(smem_u32(sV)), ds_desc(ds_addr);
    float dk[NO * 4], dv[NO * 4]; // atom a's accumulators: [32a..32a+31]
#pragma unroll
    for (int i = 0; i < NO * 4; i++) dk[i] = dv[i] = 0.f;

    // One query tile. MASKED: the tile on the diagonal (the walk's first,
    // or last with DET), the only one with keys above queries. The walk
    // peels it off rather than branching on it per tile: a branch there made
    // ptxas serialize the wgmma.
    auto tile_step = [&](const int it, auto masked) {
        constexpr bool MASKED = decltype(masked)::value;
        const int i = tile_of(it), st = it % NST, q0 = i * BM;
        cp_async_wait<NST - 2>(); // tile it's; with 3 stages, tile it + 1's may be pending
        if (TMA) mbar_wait(full_bar0 + 8 * st, (it / NST) & 1);
        if (!TMA) fence_proxy_async(); // cp.async's writes, read by wgmma
        __syncthreads();               // tile i landed; everyone is done with sdS
        const Sw128 q_desc(smem_u32(sQdO + st * 2 * BM * HS)),
            do_desc(smem_u32(sQdO + (st * 2 + 1) * BM * HS));
        const float *ls = sL + st * BM, *ds = sD + st * BM;

        // S^T = K Q^T, dP^T = V dO^T (64 keys x 64 queries each)
        float s[QN * 4], dp[QN * 4];
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < HS / 16; kk++)
            wgmma_m64n64k16_ss<0>(s, k_desc.at(kstep_off<BN>(kk)), q_desc.at(kstep_off<BM>(kk)),
                                  kk > 0);
        if (SPLIT) wgmma_commit();
#pragma unroll
        for (int kk = 0; kk < HS / 16; kk++)
            wgmma_m64n64k16_ss<0>(dp, v_desc.at(kstep_off<BN>(kk)), do_desc.at(kstep_off<BM>(kk)),
                                  kk > 0);
        wgmma_commit();
        // s[4n + e], dp[4n + e]: key kw0 + g + 8 (e >> 1), query q0 + 8n + 2 t4 + (e & 1)
        // P^T = exp(S^T - lse) in place of S^T, zero above the diagonal (the
        // compares, 64 instructions, in the MASKED tile only); dS^T = P^T
        // (dP^T - D) in place of dP^T
        auto exp_p = [&] { exp_p_frags<MASKED, QN>(s, ls, scale_log2, kw0, q0, g, t4); };
        auto ds_of_p = [&] { ds_of_p_frags<QN>(dp, s, ds, t4); };
        uint32_t pa[BM / 16][4], da[BM / 16][4]; // P^T, dS^T as A fragments (16 queries each)
        if (SPLIT) {                             // P^T while the tensor cores do dP^T
            wgmma_wait<1>();
            fence_regs(s);
            exp_p();
        }
        if (SPLIT == 2) { // dV += P^T dO issued now, under dS's computation
            pack_a_frags<BM / 16>(s, pa);
            wgmma_fence();
            fence_regs(dv);
            wgmma_rs_tile<NA, BM / 16, BM>(dv, pa, do_desc);
            wgmma_commit();
            wgmma_wait<1>(); // dP^T landed
        } else {
            wgmma_wait<0>();
        }
        fence_regs(s);
        fence_regs(dp);
        if (!SPLIT) exp_p();
        ds_of_p();
#pragma unroll
        for (int kq = 0; kq < BM / 16; kq++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                if (SPLIT != 2) pa[kq][r] = pack_bf16(s[8 * kq + 2 * r], s[8 * kq + 2 * r + 1]);
                da[kq][r] = pack_bf16(dp[8 * kq + 2 * r], dp[8 * kq + 2 * r + 1]);
            }
        store_ds_trans<BM / 16>(ds_addr, da, warp, lane); // dS (queries x keys)
        if (SPLIT == 2) {                                 // dK += dS^T Q issued before the barrier
            wgmma_fence();
            fence_regs(dk);
            wgmma_rs_tile<NA, BM / 16, BM>(dk, da, q_desc);
            wgmma_commit();
        }
        fence_proxy_async();
        // The next tile's loads go into stage st ^ 1 once the last tile's dQ
        // rows have left it: waited for here rather than at the top of the
        // loop, the copy engine's reads of them had the products and the
        // softmax of this tile to finish (measured faster, most at head
        // size 128)
        if (lane == 0) bulk_wait_read();
        __syncthreads(); // dS complete (all four warps' keys); stage st ^ 1 free
        if (NST > 2) {   // tile it + 2 into the stage of tile it - 1
            if (it + 2 < n_it) load_q_tile(tile_of(it + 2), (it + 2) % NST, false);
            cp_async_commit();
        } else if (it + 1 < n_it) {
            load_q_tile(tile_of(it + 1), st ^ 1, false);
            cp_async_commit();
        }

        // dV += P^T dO, dK += dS^T Q per 64 head dims (k steps of 16 queries
        // = 2048 bytes of an atom of dO, Q); then dQ_tile = dS K per 64 head
        // dims (k steps of 16 keys), added to dq_acc
        wgmma_fence();
        if (SPLIT != 2) {
            fence_regs(dv);
            fence_regs(dk);
#pragma unroll
            for (int a = 0; a < NA; a++)
#pragma unroll
                for (int kq = 0; kq < BM / 16; kq++) {
                    wgmma_m64n64k16_rs(*reinterpret_cast<float(*)[32]>(dv + 32 * a), pa[kq],
                                       do_desc.at(a * BM * 128 + 2048 * kq));
                    wgmma_m64n64k16_rs(*reinterpret_cast<float(*)[32]>(dk + 32 * a), da[kq],
                                       q_desc.at(a * BM * 128 + 2048 * kq));
                }
        }
        // dQ staging: this stage's Q and dO tiles, [HS / 64 atoms][BM rows][64]
        float *sdq = reinterpret_cast<float *>(sQdO + st * 2 * BM * HS);
#pragma unroll
        for (int a = 0; a < NA; a++) {
            float dq[32];
            if (a > 0) wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++)
                wgmma_m64n64k16_ss<1>(dq, ds_desc.at(32 * kk), k_desc.at(a * BN * 128 + 2048 * kk),
                                      kk > 0);
            wgmma_commit();
            wgmma_wait<0>();
            if (a == 0) { // this wait completed them
                fence_regs(dv);
                fence_regs(dk);
            }
            fence_regs(dq);

            stage_dq_frags(sdq + a * BM * 64, dq, warp, lane); // head dims 64a..
        }
        // the warp's 16 rows (4 KB an atom, contiguous in dq_acc) to the copy engine
        fence_proxy_async();
        __syncwarp();
        const int rows = min(16, T - (q0 + 16 * warp));
        unsigned *turn = DET ? dq_turn_counter(dq_order, bh, T, q0, warp) : nullptr;
        if (DET && lane == 0) turn_wait(turn, (unsigned)(k0 / BN));
        if (lane == 0 && rows > 0) {
#pragma unroll
            for (int a = 0; a < NA; a++)
                bulk_reduce_add_f32(dq_acc + (((size_t)bh * NA + a) * T + q0 + 16 * warp) * 64,
                                    smem_u32(sdq + (a * BM + 16 * warp) * 64),
                                    (uint32_t)rows * 64 * sizeof(float));
            bulk_commit();
        }
        if (DET && lane == 0) {
            bulk_wait_done();
            turn_pass(turn);
        }
    };
    walk_query_tiles<DET>(n_it, tile_step);
    if (lane == 0) bulk_wait_read(); // shared memory stays until the last add has read it

    store_warp_dkv<NO>(dk, dv, dqkv, blk, T, k0, warp, lane, scale);
#else
    __trap(); // built without sm_90a code: attention_wgmma_backward never launches it
#endif
}

// ---------------------------------------------------------------------------
// Backward main kernel, warp-specialized (FlashAttention-3's structure, read
// from its hopper/ sources; docs/attention.md), head sizes 64 and 128.
//
// A block walks key blocks of 128 keys of one (batch, head) each (WsWork,
// attention_block_order.h: one block per SM, over pairs of key blocks whose
// tiles add up alike, and a tail of single ones; the block's threads write
// its list into its row of the schedule's table at the start, in shared
// memory where it fits, and every role reads it there), and
// for each the query tiles of BM rows (128 at head size 64, 64 at 128:
// WsBwdCfg) from the diagonal to T (DET: from T down), with three
// warpgroups:
// - warpgroup 0 gives up its registers (setmaxnreg) to the other two. Its
//   warp 0 loads each key block's K and V (once the last key block's
//   products are done with them) and each tile's Q and dO by TMA into two
//   stages, each with a "full" mbarrier (the copy landed) and an "empty"
//   one (every consumer warp done with it). Its warp 1 adds each tile's
//   dQ into dq_acc: one bulk reduction
//   (cp.reduce.async.bulk) per consumer warpgroup and tile, from that
//   warpgroup's fp32 slab, handed over and back through named barriers, so
//   that the products never wait for the reduction, only for the slab; or,
//   the first contribution to a 64-row slice, one bulk store (nothing
//   zeroes dq_acc before).
// - warpgroups 1 and 2 each own 64 of the keys and do what the one-warpgroup
//   kernel above does for them: S^T = K Q^T and dP^T = V dO^T (keys as the
//   wgmma M, queries as N = BM), P^T and dS^T in registers, dV += P^T dO
//   and dK += dS^T Q with them as register A operands. dS goes to shared
//   memory (stmatrix .trans, double buffered by tile), and after one barrier
//   of the two warpgroups per tile, warpgroup w computes its slab of the
//   tile's dQ over all 128 keys (query rows 64w.. at head size 64, head
//   dims 64w.. at 128): each warpgroup a disjoint slice of the output, so
//   the two never add partial sums. The consumer threads load the row
//   statistics (lse, D) themselves, one value a thread a tile, a tile
//   ahead: written by the producer warp and published by the mbarrier,
//   they measured faster at T = 4096, but racecheck does not follow that
//   hand-over of plain stores (docs/attention.md).
// Per tile the products are issued back to back and waited for one behind
// (wgmma.wait_group 1), so that the tensor cores run while a warpgroup does
// the softmax of S, the dS, and hands its dQ slab over.
// At the end of a key block each consumer warpgroup stages its dK and dV as
// two 64 x 64 boxes in shared memory of their own, and one of its threads
// stores them with TMA: the warps go on to the next key block while the copy
// engine writes the rows out (head size 64; at 128, below, the warps store
// them from registers).
// The dq_acc layout is dq_wgmma_index's: a slab (64 rows of one 64-dim
// atom) is one contiguous 16 KB block. DET (dq_order): warp 1 adds a 64-row
// slice in the order of the key blocks, as the one-warpgroup kernel's warps
// do, key block 0 storing.

// The kernel's shape for head size HS (WsBwd64, WsBwd128 below): key
// blocks of BN = 128 keys (64 a consumer warpgroup), query tiles of BM
// rows: 128 at head size 64, 64 at 128, where the dK and dV accumulators
// (64 keys x 128 dims each) leave a warpgroup the registers of that many
// queries' S^T and dP^T only (FlashAttention-3's shape for head size 128).
// A tile's dQ is two 64 x 64 fp32 slabs, one a consumer warpgroup: query
// rows 64w.. of a tile of 128, or head dims 64w.. of a tile of 64.
//
// Shared memory, byte offsets from the 1024-aligned base: K, V (128 keys),
// 2 stages of Q and dO (BM queries), 2 of dS (queries x keys as two 64-key
// atoms), the two consumer warpgroups' dQ slabs, at head size 64 their dK
// and dV boxes (64 keys x 64 dims bf16 each, in TMA's swizzle) on the way
// out, 2 stages of lse and D, the mbarriers. At head size 128 the boxes
// would take the block past its 227 KB, and each warp stores its dK and dV
// rows from registers (store_warp_dkv, as the one-warpgroup kernel does).
template <int HS_> struct WsBwdCfg {
    static constexpr int HS = HS_, NA = HS / 64, BN = 128, BM = HS == 64 ? 128 : 64, NTH = 384;
    static constexpr bool BOXES = HS == 64; // dK and dV out through TMA boxes
    // where warpgroup w's dQ slab is in the tile's dQ: its query rows, its head-dim atom
    static constexpr int DQ_ROW_STEP = BM == 128 ? 64 : 0, DQ_ATOM_STEP = BM == 128 ? 0 : 1;
    static constexpr int KV_TILE = BN * HS * 2; // bytes of K's (V's) tile
    static constexpr int TILE = BM * HS * 2;    // bytes of a stage's Q (dO) tile
    static constexpr int SLAB = 64 * 64 * 4;    // bytes of a warpgroup's fp32 dQ slab
    static constexpr int BOX = 64 * 64 * 2;     // bytes of a 64 x 64 bf16 box (a TMA store)
    static constexpr int K = 0, V = KV_TILE, Q = 2 * KV_TILE, DO = Q + 2 * TILE, DS = DO + 2 * TILE,
                         DQ = DS + 2 * BM * BN * 2, DKV = DQ + 2 * SLAB,
                         L = DKV + (BOXES ? 4 * BOX : 0), D = L + 2 * BM * 4, BARS = D + 2 * BM * 4;
    // kv_full, kv_empty, q_full[2], q_empty[2], do_full[2], do_empty[2];
    // then the block's row of the schedule's table (ws_table_write), in the
    // rest of the 227 KB a block may have: TABLE_ROWS items. No slack for
    // aligning the base, so the layout takes the dynamic shared memory's own
    // 1024-byte alignment (CUTLASS's Hopper kernels, which lay their shared
    // storage out from the base, rely on it too; the kernel traps without it)
    static constexpr int TABLE = BARS + 10 * 8, TABLE_ROWS = (227 * 1024 - TABLE) / 8;
    static constexpr size_t SMEM = TABLE + 8 * TABLE_ROWS;
    // named barriers (0 is __syncthreads'): the two warpgroups' dS stored;
    // warpgroup w's dQ slab free, and full; warpgroup w's own
    static constexpr int BAR_DS = 1, BAR_DQ_EMPTY = 2, BAR_DQ_FULL = 4, BAR_WG = 6;
    static constexpr int GROUP = 16; // (batch, head) pairs a group of bwd_block_at's order
    static_assert(BM * HS == 128 * 64 && (BM == 128 || BM == 64), "a stage's tile is 16 KB");
    static_assert(SMEM <= 227 * 1024 && DKV % 1024 == 0 && DS % 1024 == 0 && Q % 1024 == 0,
                  "a block's shared memory; the tiles 1024-aligned for the 128-byte swizzle");
    static_assert(BAR_DS > 0 && BAR_DQ_EMPTY == BAR_DS + 1 && BAR_DQ_FULL == BAR_DQ_EMPTY + 2 &&
                      BAR_WG == BAR_DQ_FULL + 2 && BAR_WG + 2 <= 16,
                  "named barriers: past __syncthreads' 0, one pair per consumer warpgroup");
};
typedef WsBwdCfg<64> WsBwd64;
typedef WsBwdCfg<128> WsBwd128;
// The layout's order, and each consumer warpgroup's dQ slab a disjoint
// part of the tile's (checked here too, so that builds whose device pass
// has no kernel body still reference every member)
template <class W> constexpr bool ws_layout_ok() {
    return W::K + W::KV_TILE == W::V && W::V + W::KV_TILE == W::Q && W::Q + 2 * W::TILE == W::DO &&
           W::DO + 2 * W::TILE == W::DS && W::NA * 64 == W::HS &&
           (W::DQ_ROW_STEP == 64) + W::DQ_ATOM_STEP == 1;
}
static_assert(ws_layout_ok<WsBwd64>() && ws_layout_ok<WsBwd128>(),
              "K, V, then two stages of Q and of dO, then dS; the dQ slabs split the tile");

#ifdef ATTN_WGMMA_DEVICE
// This block's item ic from its row of the table: false past its last.
// Its query tiles (of BM rows) from its key block's diagonal to T.
template <class W>
__device__ __forceinline__ bool ws_item(const int2 *row, int ic, int T, WsItem &x) {
    const int2 e = row[ic];
    x.bh = e.x;
    x.k0 = e.y * W::BN; // read only where the item has tiles
    x.n_it = e.y < 0 ? 0 : (T + W::BM - 1) / W::BM - e.y * (W::BN / W::BM);
    return e.x >= 0;
}
#endif

#ifdef ATTN_WGMMA_DEVICE
// One consumer warp's 16 keys of dK (scaled) and dV (accumulators as
// store_warp_dkv's, head size 64) as bf16 rows 16 warp.. of the warpgroup's
// two boxes at `boxes` (dK's, then dV's), 16-byte chunk n of row r at
// n ^ (r & 7): TMA's 128-byte swizzle, and stores free of bank conflicts.
// The offset is tile_off<64>'s, written out: through tile_off the producer
// warps spilled 136 bytes instead of 80 and the backward ran 5% slower
// (docs/attention.md).
__device__ __forceinline__ void stage_warp_dkv(const float (&dk)[32], const float (&dv)[32],
                                               unsigned char *boxes, int warp, int lane,
                                               float scale) {
    const int g = lane >> 2, t4 = lane & 3;
    uint32_t *k32 = reinterpret_cast<uint32_t *>(boxes + warp * 16 * 128),
             *v32 = k32 + WsBwd64::BOX / 4;
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int n = 0; n < 8; n++) {
            const int at = ((g + 8 * r) * 8 + (n ^ g)) * 4 + t4;
            k32[at] = pack_bf16(dk[4 * n + 2 * r] * scale, dk[4 * n + 2 * r + 1] * scale);
            v32[at] = pack_bf16(dv[4 * n + 2 * r], dv[4 * n + 2 * r + 1]);
        }
}

#endif

template <class W, bool DET>
static __global__ void __launch_bounds__(W::NTH, 1)
    attn_bwd_ws_kernel(bf16 *__restrict__ dqkv, float *__restrict__ dq_acc,
                       const bf16 *__restrict__ dout, const bf16 *__restrict__ qkv,
                       const float *__restrict__ lse, const float *__restrict__ dsum, int T, int NH,
                       float scale, float scale_log2, unsigned *__restrict__ dq_counters,
                       const WsWork wk, int *ws_table, const __grid_constant__ CUtensorMap qkv_map,
                       const __grid_constant__ CUtensorMap dout_map,
                       const __grid_constant__ CUtensorMap dqkv_map) {
#ifdef ATTN_WGMMA_DEVICE
    constexpr int BM = W::BM, BN = W::BN, HS = W::HS, NA = W::NA, QN = BM / 8;
    // a tile's 64-row dQ slices (each with its counters) and the slab of each
    constexpr int SLICES = BM / 64;
    extern __shared__ __align__(1024) unsigned char ws_smem[];
    unsigned char *sm = ws_smem;
    if (smem_u32(sm) & 1023) __trap(); // W::SMEM has no slack to align it
    bf16 *sK = reinterpret_cast<bf16 *>(sm + W::K), *sV = reinterpret_cast<bf16 *>(sm + W::V);
    auto sQ = [&](int st) { return reinterpret_cast<bf16 *>(sm + W::Q + st * W::TILE); };
    auto sdO = [&](int st) { return reinterpret_cast<bf16 *>(sm + W::DO + st * W::TILE); };
    float *sL = reinterpret_cast<float *>(sm + W::L), *sD = reinterpret_cast<float *>(sm + W::D);
    const uint32_t bars = smem_u32(sm + W::BARS), kv_full = bars, kv_empty = bars + 8;
    auto q_full = [&](int st) { return bars + 16 + 8 * st; };
    auto q_empty = [&](int st) { return bars + 32 + 8 * st; };
    auto do_full = [&](int st) { return bars + 48 + 8 * st; };
    auto do_empty = [&](int st) { return bars + 64 + 8 * st; };

    const int tid = threadIdx.x, lane = tid & 31;
    const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0); // warp-uniform, as wgmma wants
    const int n_qt = (T + BM - 1) / BM;
    // The block's row of the table: in shared memory where it fits (faster
    // than the same row in global memory, docs/attention.md), else in the
    // workspace. DET's rows always fit: one key block a block.
    int2 *const table_row = DET || wk.rows <= W::TABLE_ROWS
                                ? reinterpret_cast<int2 *>(sm + W::TABLE)
                                : reinterpret_cast<int2 *>(ws_table) + (size_t)blockIdx.x * wk.rows;
    auto item = [&](int ic, WsItem &x) { return ws_item<W>(table_row, ic, T, x); };
    // the query tile of an item's step it (of the walk from its key block k0)
    auto tile_of = [&](int k0, int it) { return DET ? n_qt - 1 - it : k0 / BM + it; };

    if (tid == 0) {
        mbar_init(kv_full, 1);
        mbar_init(kv_empty, 8); // one arrival per consumer warp
        for (int st = 0; st < 2; st++) {
            mbar_init(q_full(st), 1);
            mbar_init(do_full(st), 1);
            mbar_init(q_empty(st), 8);
            mbar_init(do_empty(st), 8);
        }
        mbar_init_fence();
    }
    launch_dependents(); // the dQ conversion after it waits for its end
    ws_table_write(wk, table_row, (T + BN - 1) / BN);
    __syncthreads(); // the barriers initialised and the table written before anyone uses them
    // Launched by launch_dependent: the pass before (D, the dQ counters
    // zeroed) may still run. The loads of K, V, Q and dO go first; every
    // other role waits for its end here.
    if (tid >= 32) grid_dependency_wait();

    // Every role walks the items alike and counts their tiles (gt: the
    // block's tiles before the item) for the stages' parities, and the
    // items with tiles (kc) for K and V's.
    if (wg == 0) {
        setmaxnreg_dec<24>();
        const int warp = tid >> 5;
        if (warp == 0) { // the loads: each tile's Q and dO; an item's K, V after its first
            WsItem x;
            for (int ic = 0, gt = 0, kc = 0; item(ic, x); ic++) {
                if (!x.n_it) continue;
                const int b = x.bh / NH, h = x.bh - b * NH;
                for (int it = 0; it < x.n_it; it++) {
                    const int gi = gt + it, st = gi & 1, q0 = tile_of(x.k0, it) * BM;
                    if (gi >= 2) {
                        mbar_wait(q_empty(st), ((gi >> 1) - 1) & 1);
                        mbar_wait(do_empty(st), ((gi >> 1) - 1) & 1);
                    }
                    if (lane == 0) {
                        mbar_arrive_expect_tx(q_full(st), W::TILE);
                        tma_tile<BM, NA>(sQ(st), &qkv_map, h, q0, b, q_full(st));
                        mbar_arrive_expect_tx(do_full(st), W::TILE);
                        tma_tile<BM, NA>(sdO(st), &dout_map, h, q0, b, do_full(st));
                    }
                    if (it == 0) { // once the last item's products are done with them
                        if (kc > 0) mbar_wait(kv_empty, (kc - 1) & 1);
                        if (lane == 0) {
                            mbar_arrive_expect_tx(kv_full, 2 * W::KV_TILE);
                            tma_tile<BN, NA>(sK, &qkv_map, NH + h, x.k0, b, kv_full);
                            tma_tile<BN, NA>(sV, &qkv_map, 2 * NH + h, x.k0, b, kv_full);
                        }
                    }
                }
                gt += x.n_it;
                kc++;
            }
        } else if (warp == 1) { // the dQ stores and adds
            // The first contribution to a 64-row slice of dq_acc is stored
            // (no pass zeroes it), the others added once it is: the block
            // whose claim on the slice's counter 0 comes first stores and
            // then raises its counter 1, for which the others wait (on the
            // tile after, mostly, it has long been raised). DET: key block 0
            // stores, and the turns on counter 0 order the adds. At head
            // size 128 both slabs are of the one slice (its two head-dim
            // atoms): one claim, one turn for both.
            WsItem x;
            for (int ic = 0, gt = 0; item(ic, x); ic++) {
                for (int it = 0; it < x.n_it; it++, gt++) {
                    if (gt > 0) { // the last tile's slabs read out
                        if (lane == 0) bulk_wait_read();
                        __syncwarp();
                    }
                    for (int w = 0; w < 2; w++) named_bar_arrive(W::BAR_DQ_EMPTY + w, 160);
                    const int q0 = tile_of(x.k0, it) * BM;
                    unsigned claim[SLICES]; // the claims, their latency under the slabs' wait
#pragma unroll
                    for (int sl = 0; sl < SLICES; sl++) claim[sl] = 1;
                    if (!DET && lane == 0)
#pragma unroll
                        for (int sl = 0; sl < SLICES; sl++)
                            if (q0 + 64 * sl < T)
                                claim[sl] = atomicAdd(
                                    dq_turn_counter(dq_counters, x.bh, T, q0 + 64 * sl, 0), 1u);
                    for (int w = 0; w < 2; w++) {
                        named_bar_sync(W::BAR_DQ_FULL + w, 160);
                        const int sl = SLICES == 2 ? w : 0, r0 = q0 + 64 * sl,
                                  rows = min(64, T - r0);
                        // the slab's first and last of its slice
                        const bool opens = SLICES == 2 || w == 0, closes = SLICES == 2 || w == 1;
                        if (lane == 0 && rows > 0) {
                            unsigned *cnt = dq_turn_counter(dq_counters, x.bh, T, r0, 0);
                            float *dst =
                                dq_acc + (((size_t)x.bh * NA + w * W::DQ_ATOM_STEP) * T + r0) * 64;
                            const uint32_t src = smem_u32(sm + W::DQ + w * W::SLAB),
                                           bytes = (uint32_t)rows * 64 * sizeof(float);
                            const bool first = DET ? x.k0 == 0 : claim[sl] == 0;
                            if (opens) {
                                if (DET)
                                    turn_wait(cnt, (unsigned)(x.k0 / BN));
                                else if (!first)
                                    turn_wait(cnt + 1, 1);
                            }
                            if (first)
                                bulk_store_f32(dst, src, bytes);
                            else
                                bulk_reduce_add_f32(dst, src, bytes);
                            bulk_commit();
                            if ((DET || first) && closes) {
                                bulk_wait_done();
                                turn_pass(DET ? cnt : cnt + 1);
                            }
                        }
                    }
                }
            }
            if (lane == 0) bulk_wait_read(); // shared memory stays until the last add has read it
        }
        return;
    }

    setmaxnreg_inc<240>();
    const int w = wg - 1, warp = __shfl_sync(0xffffffffu, (tid >> 5) & 3, 0);
    const int g = lane >> 2, t4 = lane & 3;
    // this warpgroup's 64 keys of K and V (A operands, K-major); K's keys x
    // the warpgroup's dQ head dims (the B operand of dQ, MN-major)
    const Sw128 k_base(smem_u32(sK + 64 * w * 64)), v_base(smem_u32(sV + 64 * w * 64)),
        kt_base(smem_u32(sK + w * W::DQ_ATOM_STEP * BN * 64));
    float *sdq = reinterpret_cast<float *>(sm + W::DQ + w * W::SLAB);
    // The row statistics of a tile (zeros past T): consumer thread c < 2 BM
    // loads lse (c < BM) or D of query row c % BM one tile ahead (the next
    // item's first where the item ends), and stores it into that tile's
    // stage before the dS barrier (after which the stage's last readers,
    // the tile before, are done): one load a thread a tile, its latency
    // under a tile's work.
    const int c = tid - 128;
    constexpr bool ALL_STAT = 2 * BM >= 256; // every consumer thread has one
    const bool has_stat = ALL_STAT || c < 2 * BM;
    float *stat_s = (c < BM ? sL : sD) + (c & (BM - 1));
    // the address of thread c's statistic of item x's step it, or NULL past T
    auto stat_at = [&](const WsItem &x, int it) -> const float * {
        const int t = tile_of(x.k0, it) * BM + (c & (BM - 1));
        return has_stat && t < T ? (c < BM ? lse : dsum) + (size_t)x.bh * T + t : nullptr;
    };
    WsItem x;
    item(0, x); // every block has a unit, and a unit's first item has tiles
    {
        const float *p = stat_at(x, 0);
        if (has_stat) *stat_s = p ? *p : 0.f;
    }
    named_bar_sync(W::BAR_DS, 256);

    for (int ic = 0, gt = 0, kc = 0;;) {
        const int k0 = x.k0, n_it = x.n_it;
        const int kw0 = k0 + 64 * w + 16 * warp; // this warp's first key in the sequence
        int jc = ic + 1;                         // the next item with tiles
        WsItem y;
        bool more;
        while ((more = item(jc, y)) && !y.n_it) jc++;
        const float *next_stat = more ? stat_at(y, 0) : nullptr;
        float dk[NA * 32], dv[NA * 32];
#pragma unroll
        for (int i = 0; i < NA * 32; i++) dk[i] = dv[i] = 0.f;
        mbar_wait(kv_full, kc & 1);

        // One query tile; MASKED: one on the diagonal (keys above queries).
        auto tile_step = [&](const int it, auto masked) {
            constexpr bool MASKED = decltype(masked)::value;
            const int gi = gt + it, st = gi & 1, ph = (gi >> 1) & 1, q0 = tile_of(k0, it) * BM;
            const Sw128 q_desc(smem_u32(sQ(st))), do_desc(smem_u32(sdO(st)));
            const uint32_t ds_addr = smem_u32(sm + W::DS + st * BM * BN * 2);
            const Sw128 ds_desc(ds_addr);
            // K's and V's descriptors from their bases afresh each tile:
            // hoisted out of the walk, the 24 of head size 128 took
            // registers that the accumulators need, ptxas spilled them, and
            // the backward ran slower (docs/attention.md)
            Sw128 k_desc = k_base, v_desc = v_base, kt_desc = kt_base;
            asm volatile("" : "+r"(k_desc.lo), "+r"(v_desc.lo), "+r"(kt_desc.lo));
            const float *ls = sL + st * BM, *ds = sD + st * BM;
            const float *stat_p = it + 1 < n_it ? stat_at(x, it + 1) : next_stat;
            const float stat_next = stat_p ? *stat_p : 0.f;
            // this warpgroup's dQ slab = its query rows of dS (all 128 keys:
            // two atoms) x its head dims of K, issued
            auto issue_dq = [&](float(&dq)[32]) {
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BN / 16; kk++)
                    wgmma_m64n64k16_ss<1>(
                        dq,
                        ds_desc.at((kk >> 2) * BM * 128 + w * W::DQ_ROW_STEP * 128 + 32 * (kk & 3)),
                        kt_desc.at(2048 * kk), kk > 0);
                wgmma_commit();
            };
            // dQ to the slab once warp 1 has read the last one out
            auto hand_dq = [&](const float(&dq)[32]) {
                named_bar_sync(W::BAR_DQ_EMPTY + w, 160);
                stage_dq_frags(sdq, dq, warp, lane);
                fence_proxy_async();
                named_bar_arrive(W::BAR_DQ_FULL + w, 160);
            };
            if constexpr (MASKED && BN / BM == 2) {
                // At head size 128 all of the second warpgroup's keys are
                // above the first tile's queries: its P^T and dS^T are
                // zeros, so it stores the zero dS and does its dQ only
                if (k0 + 64 * w >= q0 + BM) {
                    const uint32_t zero[BM / 16][4] = {};
                    store_ds_trans<BM / 16>(ds_addr + w * BM * 128, zero, warp, lane);
                    if (has_stat) stat_s[(st ^ 1) * BM] = stat_next;
                    fence_proxy_async();
                    named_bar_sync_unaligned(W::BAR_DS, 256);
                    float dq[32];
                    issue_dq(dq);
                    wgmma_wait<0>();
                    fence_regs(dq);
                    if (lane == 0) {
                        mbar_arrive(do_empty(st));
                        if (it + 1 == n_it) mbar_arrive(kv_empty);
                    }
                    hand_dq(dq);
                    if (lane == 0) mbar_arrive(q_empty(st));
                    return;
                }
            }

            // S^T = K Q^T, dP^T = V dO^T (64 keys x BM queries each), issued
            float s[QN * 4], dp[QN * 4];
            mbar_wait(q_full(st), ph);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++)
                if constexpr (BM == 128)
                    wgmma_m64n128k16_ss(s, k_desc.at(kstep_off<BN>(kk)),
                                        q_desc.at(kstep_off<BM>(kk)), kk > 0);
                else
                    wgmma_m64n64k16_ss<0>(s, k_desc.at(kstep_off<BN>(kk)),
                                          q_desc.at(kstep_off<BM>(kk)), kk > 0);
            wgmma_commit();
            mbar_wait(do_full(st), ph);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++)
                if constexpr (BM == 128)
                    wgmma_m64n128k16_ss(dp, v_desc.at(kstep_off<BN>(kk)),
                                        do_desc.at(kstep_off<BM>(kk)), kk > 0);
                else
                    wgmma_m64n64k16_ss<0>(dp, v_desc.at(kstep_off<BN>(kk)),
                                          do_desc.at(kstep_off<BM>(kk)), kk > 0);
            wgmma_commit();
            // s[4n + e], dp[4n + e]: key kw0 + g + 8 (e >> 1), query q0 + 8n + 2 t4 + (e & 1).
            // P^T = exp(S^T - lse) while the tensor cores do dP^T
            wgmma_wait<1>();
            fence_regs(s);
            exp_p_frags<MASKED, QN>(s, ls, scale_log2, kw0, q0, g, t4);
            wgmma_wait<0>();
            fence_regs(dp);
            ds_of_p_frags<QN>(dp, s, ds, t4);        // dS^T = P^T (dP^T - D)
            uint32_t pa[BM / 16][4], da[BM / 16][4]; // P^T, dS^T as A fragments (16 queries each)
            pack_a_frags<BM / 16>(s, pa);
            pack_a_frags<BM / 16>(dp, da);
            // dS (queries x keys) into this warpgroup's atom of the stage's dS
            store_ds_trans<BM / 16>(ds_addr + w * BM * 128, da, warp, lane);
            // dV += P^T dO, issued
            wgmma_fence();
            fence_regs(dv);
            wgmma_rs_tile<NA, BM / 16, BM>(dv, pa, do_desc);
            wgmma_commit();
            if (has_stat) stat_s[(st ^ 1) * BM] = stat_next;
            fence_proxy_async();
            // both warpgroups' dS and the next tile's statistics stored (in
            // a key block's first tile at head size 128 the idle warpgroup
            // meets this barrier at its own instruction, above: bar.sync is
            // aligned, barrier.sync is not)
            named_bar_sync_unaligned(W::BAR_DS, 256);

            float dq[32];
            issue_dq(dq);
            wgmma_wait<1>(); // dV done: dO and D read
            fence_regs(dv);
            if (lane == 0) mbar_arrive(do_empty(st));
            // dK += dS^T Q, issued
            wgmma_fence();
            fence_regs(dk);
            wgmma_rs_tile<NA, BM / 16, BM>(dk, da, q_desc);
            wgmma_commit();
            wgmma_wait<1>(); // dQ done: the item's last tile is done with K and V
            fence_regs(dq);
            if (it + 1 == n_it && lane == 0) mbar_arrive(kv_empty);
            hand_dq(dq);
            wgmma_wait<0>(); // dK done: Q and lse read
            fence_regs(dk);
            if (lane == 0) mbar_arrive(q_empty(st));
        };
        walk_query_tiles<DET, BN / BM>(n_it, tile_step);
        gt += n_it;
        kc++;
        const BwdBlock blk = bwd_block_for<HS>(x.bh, k0, qkv, dout, lse, dsum, T, NH);
        if constexpr (W::BOXES) {
            // dK and dV go out as the warpgroup's two boxes, stored by its
            // first thread with TMA once every warp has staged its rows (and
            // the last item's boxes have been read out)
            const bool leader = (tid & 127) == 0;
            unsigned char *boxes = sm + W::DKV + 2 * w * W::BOX;
            if (leader) bulk_wait_read();
            named_bar_sync(W::BAR_WG + w, 128);
            if (k0 + 64 * w < T) {
                stage_warp_dkv(dk, dv, boxes, warp, lane, scale);
                fence_proxy_async();
                named_bar_sync(W::BAR_WG + w, 128);
                if (leader) {
                    tma_store_4d(&dqkv_map, 0, NH + blk.h, k0 + 64 * w, blk.b, smem_u32(boxes));
                    tma_store_4d(&dqkv_map, 0, 2 * NH + blk.h, k0 + 64 * w, blk.b,
                                 smem_u32(boxes + W::BOX));
                    bulk_commit();
                }
            }
        } else {
            store_warp_dkv<HS / 8>(dk, dv, dqkv, blk, T, k0 + 64 * w, warp, lane, scale);
        }
        if (!more) break;
        ic = jc;
        item(ic, x);
    }
    if (W::BOXES && (tid & 127) == 0) bulk_wait_done(); // the last boxes stored before the end
#else
    __trap(); // built without sm_90a code: attention_wgmma_backward never launches it
#endif
}

// The TMA descriptor of a [B][T][HEADS][HS] bf16 tensor (qkv: HEADS = 3 NH,
// q, k, v's heads in turn; dout: NH) as a 4-D tensor (HS, HEADS, T, B),
// innermost first, read in 64 x 1 x 64 x 1 boxes (64 head dims of one head
// for 64 positions) into the 128-byte swizzled layout; positions past T read
// as zeros. 0 when the driver has no cuTensorMapEncodeTiled or refuses the
// tensor (then the cp.async kernels run).
int make_head_map(CUtensorMap *map, const bf16 *x, int B, int T, int HEADS, int HS) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (!encode) return 0;
    const cuuint64_t row = (cuuint64_t)HEADS * HS * sizeof(bf16); // bytes a position
    const cuuint64_t dims[4] = {(cuuint64_t)HS, (cuuint64_t)HEADS, (cuuint64_t)T, (cuuint64_t)B};
    const cuuint64_t strides[3] = {HS * sizeof(bf16), row, (cuuint64_t)T * row}; // dims 1..3
    const cuuint32_t box[4] = {64, 1, 64, 1}, elem_strides[4] = {1, 1, 1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<bf16 *>(x), dims, strides,
                  box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Tile shapes

// Forward: WARPGROUPS warpgroups of 64 query rows a block, key tiles of KEYS;
// MIN_BLOCKS: blocks per SM the register allocation must allow
// (__launch_bounds__). LAZY_RESCALE: O rescaled only where a row max went
// up. TMA_STAGES: K, V buffers filled by TMA (WgmmaFwdCfg); 0: cp.async,
// double buffered. PIPELINED (TMA only): the software-pipelined walk.
// GROUP: (batch, head) pairs a group of the block order (fwd_block_coords;
// 0: all of them, longest query tiles first over all heads).
//
// PRODUCER: a warpgroup more, which loads, its registers given to the
// others (setmaxnreg); PINGPONG: the two computing warpgroups issue their
// products in turns; PERSISTENT (with PRODUCER): a grid of one block per SM
// whose blocks walk several query tiles each (ws_schedule's pairs of query
// tiles p and n - 1 - p, n + 1 key tiles whatever p, and its tail), the
// producer loading the next one's first tiles and Q under the last one's
// end; PREFETCH_Q (PERSISTENT): the next item's Q brought into L2 as the
// item starts. Fallback: the shape with cp.async loads, where no tensor map
// can be made.
template <class Shape> struct CpAsyncFwd;

// Head size 64: 2 blocks per SM, the walk pipelined, which holds two tiles
// at a time: 4 stages keep two loads in flight.
struct WgmmaFwd64 {
    static constexpr int HS = 64, WARPGROUPS = 2, KEYS = 64, MIN_BLOCKS = 2;
    static constexpr bool LAZY_RESCALE = true;
    static constexpr int TMA_STAGES = 4;
    static constexpr bool PIPELINED = true, PRODUCER = false, PINGPONG = false;
    static constexpr bool PERSISTENT = false, PREFETCH_Q = false;
    static constexpr int GROUP = 16;
    typedef CpAsyncFwd<WgmmaFwd64> Fallback;
};
// Head size 128: FlashAttention-3's forward. One block per SM: a producer
// warpgroup and two that compute, 64 query rows each, with 240 registers,
// which the pipelined walk over key tiles of 128 needs (O, S and P take
// 160); the two take turns at the tensor cores, and 3 stages of K and V
// (224 KB) keep the copies ahead. Persistent: with one block per SM, a
// block starting its tile would otherwise wait for its first loads with
// nothing else on the SM.
struct CpAsyncFwd128;
struct WgmmaFwd128 {
    static constexpr int HS = 128, WARPGROUPS = 2, KEYS = 128, MIN_BLOCKS = 1;
    static constexpr bool LAZY_RESCALE = true;
    static constexpr int TMA_STAGES = 3;
    static constexpr bool PIPELINED = true, PRODUCER = true, PINGPONG = true;
    static constexpr bool PERSISTENT = true, PREFETCH_Q = true;
    static constexpr int GROUP = 16;
    typedef CpAsyncFwd128 Fallback;
};
// Its fallback: 2 blocks per SM (128 registers), key tiles of 64 double
// buffered; with 2 TMA stages, the production shape before (tuning builds)
struct CpAsyncFwd128 {
    static constexpr int HS = 128, WARPGROUPS = 2, KEYS = 64, MIN_BLOCKS = 2;
    static constexpr bool LAZY_RESCALE = true;
    static constexpr int TMA_STAGES = 0;
    static constexpr bool PIPELINED = false, PRODUCER = false, PINGPONG = false;
    static constexpr bool PERSISTENT = false, PREFETCH_Q = false;
    static constexpr int GROUP = 16;
    typedef CpAsyncFwd128 Fallback;
};
// A forward shape with cp.async loads: where no tensor map can be made.
template <class Shape> struct CpAsyncFwd : Shape {
    static constexpr int TMA_STAGES = 0;
    static constexpr bool PIPELINED = false, PRODUCER = false, PINGPONG = false;
    static constexpr bool PERSISTENT = false, PREFETCH_Q = false;
};

// Backward (a block: one warpgroup, 64 keys, query tiles of 64): TMA: K, V,
// Q and dO by TMA, else by cp.async; STAGES: Q, dO, lse, D stages; SPLIT: 0
// the products in order, 1 P^T computed under dP^T, 2 also dV issued under
// dP^T and dK before the dS barrier; GROUP as the forward's (1: each pair's
// key blocks in turn).
//
// Both head sizes run the warp-specialized kernel (attn_bwd_ws_kernel).
// This one runs where no tensor map can be made (CpAsyncBwd64: 3 blocks per
// SM, 168 registers; CpAsyncBwd128: 2 blocks per SM), and in tuning builds
// with TMA, as the production kernel before it (WgmmaBwd64, WgmmaBwd128).
// A backward shape with cp.async loads, from one with TMA.
template <class Shape> struct CpAsyncBwd : Shape {
    static constexpr bool TMA = false;
    static constexpr int STAGES = 2, SPLIT = 0;
};
struct CpAsyncBwd64 {
    static constexpr int HS = 64, MIN_BLOCKS = 3;
    static constexpr bool TMA = false;
    static constexpr int STAGES = 2, SPLIT = 0, GROUP = 16;
};
struct CpAsyncBwd128 {
    static constexpr int HS = 128, MIN_BLOCKS = 2;
    static constexpr bool TMA = false;
    static constexpr int STAGES = 2, SPLIT = 0, GROUP = 16;
};

// ---------------------------------------------------------------------------
// Launchers

template <class Shape>
void launch_fwd_wgmma(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH,
                      cudaStream_t stream) {
    constexpr int HS = Shape::HS;
    static_assert(!Shape::PIPELINED || Shape::TMA_STAGES > 0,
                  "the pipelined walk waits on the TMA stages");
    CUtensorMap map = {};
    if constexpr (Shape::TMA_STAGES > 0) {
        if (!make_head_map(&map, qkv, B, T, 3 * NH, HS))
            return launch_fwd_wgmma<typename Shape::Fallback>(out, lse, qkv, B, T, NH, stream);
    }
    typedef FwdCfgOf<Shape> Cfg;
    auto kernel = attn_fwd_wgmma_kernel<Shape>;
    static unsigned long long smem_done = 0;
    raise_smem_limit(kernel, Cfg::SMEM, smem_done);
    const int n_qt = (T + Cfg::BM - 1) / Cfg::BM, group = Shape::GROUP ? Shape::GROUP : B * NH;
    // The schedule of the last shape (ws_schedule walks every item to
    // choose the tail, so a step's layers reuse it): persistent where its
    // rows fit the block's table, else one item a block.
    static struct {
        int n_bh, n_qt, sms, grid;
        WsWork wk;
    } last = {-1, -1, -1, 0, {}};
    const int sms = sm_count();
    if (last.n_bh != B * NH || last.n_qt != n_qt || last.sms != sms) {
        last.n_bh = B * NH, last.n_qt = n_qt, last.sms = sms;
        if (Shape::PERSISTENT) last.wk = ws_schedule(B * NH, n_qt, sms, 1, 1, 1, group, &last.grid);
        if (!Shape::PERSISTENT || last.wk.rows > FWD_TABLE_ROWS)
            last.wk = ws_schedule(B * NH, n_qt, sms, 0, 0, 0, group, &last.grid);
    }
    const float scale_log2 = LOG2E / sqrtf((float)HS);
    kernel<<<last.grid, fwd_block_threads<Shape>(), Cfg::SMEM, stream>>>(out, lse, qkv, T, NH,
                                                                         scale_log2, last.wk, map);
    CUDA_CHECK_LAUNCH("attn_fwd_wgmma_kernel");
}

template <class Shape> void launch_bwd_wgmma(const AttnBwdArgs &a, cudaStream_t stream) {
    constexpr int HS = Shape::HS;
    CUtensorMap qkv_map = {}, dout_map = {};
    if constexpr (Shape::TMA) {
        if (!(make_head_map(&qkv_map, a.qkv, a.B, a.T, 3 * a.NH, HS) &&
              make_head_map(&dout_map, a.dout, a.B, a.T, a.NH, HS)))
            return launch_bwd_wgmma<CpAsyncBwd<Shape>>(a, stream);
    }
    auto kernel =
        a.dq_order ? attn_bwd_wgmma_kernel<Shape, true> : attn_bwd_wgmma_kernel<Shape, false>;
    constexpr size_t SMEM = BWD_SMEM<HS, Shape::STAGES>;
    static unsigned long long smem_done[2] = {0, 0};
    raise_smem_limit(kernel, SMEM, smem_done[a.dq_order != nullptr]);
    const unsigned grid = (unsigned)a.B * a.NH * ((a.T + BWD_BN - 1) / BWD_BN);
    const float scale = 1.f / sqrtf((float)HS);
    attention_zero_dq_acc(a, stream); // every warp adds into it
    kernel<<<grid, 128, SMEM, stream>>>(a.dqkv, a.dq_acc, a.dout, a.qkv, a.lse, a.dsum, a.T, a.NH,
                                        scale, scale * LOG2E, a.dq_order, Shape::GROUP, qkv_map,
                                        dout_map);
    CUDA_CHECK_LAUNCH("attn_bwd_wgmma_kernel");
}

// The warp-specialized backward's schedule (WsWork): PAIRED units of two
// key blocks, a PERSISTENT grid of one block per SM, and a TAIL of single
// key blocks where the pairs would leave a round of the grid part-filled.
// Together they measured fastest (docs/attention.md): a key block's first
// loads go under the last one's final tile and epilogue, and every block
// walks about as many tiles as the others (persistent over single key
// blocks, the blocks end far apart). The deterministic mode runs one key
// block a block whatever the schedule: its dQ turns wait on lower key
// blocks, which a block walking several could hold up.
struct WsPairedPersistent {
    static constexpr bool PAIRED = true, PERSISTENT = true, TAIL = true;
};

// The warp-specialized backward of shape W (WsBwd64, WsBwd128); where no
// tensor map can be made, the one-warpgroup kernel's cp.async shape.
template <class W = WsBwd64, class Sched = WsPairedPersistent>
void launch_bwd_ws(const AttnBwdArgs &a, cudaStream_t stream) {
    CUtensorMap qkv_map = {}, dout_map = {}, dqkv_map = {};
    if (!(make_head_map(&qkv_map, a.qkv, a.B, a.T, 3 * a.NH, W::HS) &&
          make_head_map(&dout_map, a.dout, a.B, a.T, a.NH, W::HS) &&
          make_head_map(&dqkv_map, a.dqkv, a.B, a.T, 3 * a.NH, W::HS))) {
        if constexpr (W::HS == 64)
            return launch_bwd_wgmma<CpAsyncBwd64>(a, stream);
        else
            return launch_bwd_wgmma<CpAsyncBwd128>(a, stream);
    }
    const bool det = a.dq_order != nullptr;
    auto kernel = det ? attn_bwd_ws_kernel<W, true> : attn_bwd_ws_kernel<W, false>;
    static unsigned long long smem_done[2] = {0, 0};
    raise_smem_limit(kernel, W::SMEM, smem_done[det]);
    const int n_kb = (a.T + W::BN - 1) / W::BN;
    // the schedule of the last shape (the model behind the tail's choice
    // walks every item, so a step's layers reuse it)
    static struct {
        int n_bh, n_kb, sms, det, grid;
        WsWork wk;
    } last = {-1, -1, -1, -1, 0, {}};
    const int sms = sm_count();
    if (last.n_bh != a.B * a.NH || last.n_kb != n_kb || last.sms != sms || last.det != det) {
        last.n_bh = a.B * a.NH, last.n_kb = n_kb, last.sms = sms, last.det = det;
        last.wk = ws_schedule(a.B * a.NH, n_kb, sms, Sched::PAIRED && !det,
                              Sched::PERSISTENT && !det, Sched::TAIL, W::GROUP, &last.grid);
        if ((long)last.grid * last.wk.rows > ws_table_entries(a.B * a.NH, n_kb))
            fail_at(__FILE__, __LINE__, EXIT_FATAL,
                    "the attention backward's schedule (%d blocks) outgrows its table "
                    "(ws_table_entries, attention_block_order.h)",
                    last.grid);
        if (det && last.wk.rows > W::TABLE_ROWS) // the kernel takes them as fitting
            fail_at(__FILE__, __LINE__, EXIT_FATAL,
                    "the deterministic attention backward's schedule (%d items a block) "
                    "outgrows its shared memory (TABLE_ROWS %d)",
                    last.wk.rows, W::TABLE_ROWS);
    }
    const WsWork wk = last.wk;
    const int grid = last.grid;
    const float scale = 1.f / sqrtf((float)W::HS);
    launch_dependent("attn_bwd_ws_kernel", kernel, grid, W::NTH, W::SMEM, stream, a.dqkv, a.dq_acc,
                     a.dout, a.qkv, a.lse, a.dsum, a.T, a.NH, scale, scale * LOG2E, a.dq_counters,
                     wk, a.ws_table, qkv_map, dout_map, dqkv_map);
}

} // namespace

bool attention_wgmma_supported() {
#ifdef GPT2_HAVE_SM90A
    static signed char known[64]; // per device: 0 unknown, 1 yes, -1 no
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev < 64 && known[dev]) return known[dev] > 0;
    int major = 0, minor = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    const bool yes = major == 9 && minor == 0; // sm_90a code runs on compute capability 9.0 only
    if (dev < 64) known[dev] = yes ? 1 : -1;
    return yes;
#else
    return false;
#endif
}

void attention_wgmma_forward(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH, int HS,
                             cudaStream_t stream) {
    if (HS == 64)
        launch_fwd_wgmma<WgmmaFwd64>(out, lse, qkv, B, T, NH, stream);
    else
        launch_fwd_wgmma<WgmmaFwd128>(out, lse, qkv, B, T, NH, stream);
}

void attention_wgmma_backward(const AttnBwdArgs &a, cudaStream_t stream) {
    if (a.HS == 64)
        launch_bwd_ws<WsBwd64>(a, stream);
    else
        launch_bwd_ws<WsBwd128>(a, stream);
}

#ifdef GPT2_ATTN_TUNING
// ---------------------------------------------------------------------------
// Tuning variants: the shapes measured against the production ones, each
// the production shape with the members it changes, named in
// attention_wgmma_variants; and the cp.async fallbacks, to test them.

namespace {
// forward, head size 64
struct WgmmaFwd64_CpAsync2x128 : CpAsyncFwd<WgmmaFwd64> {
    static constexpr int KEYS = 128, MIN_BLOCKS = 1;
};
struct WgmmaFwd64_CpAsync3wg : CpAsyncFwd<WgmmaFwd64> {
    static constexpr int WARPGROUPS = 3, MIN_BLOCKS = 1;
};
struct WgmmaFwd64_CpAsync1wg : CpAsyncFwd<WgmmaFwd64> {
    static constexpr int WARPGROUPS = 1, MIN_BLOCKS = 4;
};
struct WgmmaFwd64_Tma3 : WgmmaFwd64 { // the unpipelined walk, 3 stages
    static constexpr int TMA_STAGES = 3;
    static constexpr bool PIPELINED = false;
};
struct WgmmaFwd64_Tma3Ungrouped : WgmmaFwd64_Tma3 {
    static constexpr int GROUP = 0;
};
struct WgmmaFwd64_Tma3EagerRescale : WgmmaFwd64_Tma3 {
    static constexpr bool LAZY_RESCALE = false;
};
struct WgmmaFwd64_Tma2 : WgmmaFwd64_Tma3 {
    static constexpr int TMA_STAGES = 2;
};
struct WgmmaFwd64_PipelinedTma3 : WgmmaFwd64 {
    static constexpr int TMA_STAGES = 3;
};
struct WgmmaFwd64_WsPingpong : WgmmaFwd64 { // WgmmaFwd128's walk, 4 stages
    static constexpr int KEYS = 128, MIN_BLOCKS = 1;
    static constexpr bool PRODUCER = true, PINGPONG = true;
};
// forward, head size 128
struct WgmmaFwd128_2blocks : CpAsyncFwd128 { // the production shape before ping-pong
    static constexpr int TMA_STAGES = 2;
};
struct WgmmaFwd128_CpAsync3wg : CpAsyncFwd128 {
    static constexpr int WARPGROUPS = 3, MIN_BLOCKS = 1;
};
struct WgmmaFwd128_CpAsync1block : CpAsyncFwd128 {
    static constexpr int MIN_BLOCKS = 1;
};
// head size 128 pipelined at one block per SM (all 255 registers): key
// tiles of 64 in 4 stages, of 128 in 2, or three warpgroups
struct WgmmaFwd128_Pipelined1block : WgmmaFwd128_2blocks {
    static constexpr int MIN_BLOCKS = 1, TMA_STAGES = 4;
    static constexpr bool PIPELINED = true;
};
struct WgmmaFwd128_Pipelined128keys : WgmmaFwd128_Pipelined1block {
    static constexpr int KEYS = 128, TMA_STAGES = 2;
};
struct WgmmaFwd128_Pipelined3wg : WgmmaFwd128_Pipelined1block {
    static constexpr int WARPGROUPS = 3;
};
struct WgmmaFwd128_Pipelined2blocks : WgmmaFwd128_2blocks { // 128 registers: spills
    static constexpr bool PIPELINED = true;
};
// the production shape one tile a block, without its turns, with 2
// stages, with neither
struct WgmmaFwd128_OneTileABlock : WgmmaFwd128 {
    static constexpr bool PERSISTENT = false, PREFETCH_Q = false;
};
struct WgmmaFwd128_NoQPrefetch : WgmmaFwd128 {
    static constexpr bool PREFETCH_Q = false;
};
struct WgmmaFwd128_NoPingpong : WgmmaFwd128 {
    static constexpr bool PINGPONG = false;
};
struct WgmmaFwd128_2stages : WgmmaFwd128 {
    static constexpr int TMA_STAGES = 2;
};
struct WgmmaFwd128_2stagesNoPingpong : WgmmaFwd128_2stages {
    static constexpr bool PINGPONG = false;
};
struct WgmmaFwd128_Tma3wg : WgmmaFwd128_2blocks {
    static constexpr int WARPGROUPS = 3, MIN_BLOCKS = 1, TMA_STAGES = 3;
};
// backward, head size 64: the one-warpgroup kernel with TMA, 3 stages (the
// production shape before the warp-specialized kernel), and its variants
struct WgmmaBwd64 : CpAsyncBwd64 {
    static constexpr bool TMA = true;
    static constexpr int STAGES = 3;
};
struct WgmmaBwd64_2blocks : WgmmaBwd64 {
    static constexpr int MIN_BLOCKS = 2;
};
struct WgmmaBwd64_Tma2 : WgmmaBwd64 {
    static constexpr int STAGES = 2;
};
struct WgmmaBwd64_Ungrouped : WgmmaBwd64 {
    static constexpr int GROUP = 1;
};
// the warp-specialized kernel's other schedules
struct WsPerKeyBlock {
    static constexpr bool PAIRED = false, PERSISTENT = false, TAIL = false;
};
struct WsPaired {
    static constexpr bool PAIRED = true, PERSISTENT = false, TAIL = false;
};
struct WsPersistent {
    static constexpr bool PAIRED = false, PERSISTENT = true, TAIL = false;
};
struct WsPairedPersistentNoTail {
    static constexpr bool PAIRED = true, PERSISTENT = true, TAIL = false;
};
// backward, head size 128: the one-warpgroup kernel with TMA (the production
// shape before the warp-specialized kernel: 2 blocks per SM, 2 stages, SPLIT
// 2; the key blocks of 16 pairs longest first measured faster than each
// pair's key blocks in turn, groups of 8 and 32 no better), and its variants
struct WgmmaBwd128 : CpAsyncBwd128 {
    static constexpr bool TMA = true;
    static constexpr int SPLIT = 2;
};
struct WgmmaBwd128_Unsplit : WgmmaBwd128 {
    static constexpr int SPLIT = 0;
};
struct WgmmaBwd128_SplitP : WgmmaBwd128 {
    static constexpr int SPLIT = 1;
};
struct WgmmaBwd128_Ungrouped : WgmmaBwd128 {
    static constexpr int GROUP = 1;
};
constexpr const char *WGMMA = ATTN_FAMILY_WGMMA;
} // namespace

const AttnVariant attention_wgmma_variants[] = {
    {{"wgmma_fwd64_cp_async", WGMMA, 64, false, "the fallback: loads by cp.async, double buffered"},
     true,
     launch_fwd_wgmma<CpAsyncFwd<WgmmaFwd64>>,
     nullptr},
    {{"wgmma_fwd64_cp_async_2x128", WGMMA, 64, false,
      "cp.async, 2 warpgroups x 128 keys, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_CpAsync2x128>,
     nullptr},
    {{"wgmma_fwd64_cp_async_3wg", WGMMA, 64, false, "cp.async, 3 warpgroups, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_CpAsync3wg>,
     nullptr},
    {{"wgmma_fwd64_cp_async_1wg", WGMMA, 64, false, "cp.async, 1 warpgroup, 4 blocks/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_CpAsync1wg>,
     nullptr},
    {{"wgmma_fwd64_tma3", WGMMA, 64, false, "the walk unpipelined, 3 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_Tma3>,
     nullptr},
    {{"wgmma_fwd64_tma3_ungrouped", WGMMA, 64, false,
      "tma3 with the blocks longest first over all heads, not in groups of 16"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_Tma3Ungrouped>,
     nullptr},
    {{"wgmma_fwd64_tma3_eager_rescale", WGMMA, 64, false, "tma3 rescaling O after every tile"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_Tma3EagerRescale>,
     nullptr},
    {{"wgmma_fwd64_tma2", WGMMA, 64, false, "the walk unpipelined, 2 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_Tma2>,
     nullptr},
    {{"wgmma_fwd64_pipelined_tma3", WGMMA, 64, false, "the pipelined walk with 3 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_PipelinedTma3>,
     nullptr},
    {{"wgmma_fwd64_ws_pingpong", WGMMA, 64, false,
      "a producer warpgroup, key tiles of 128, products in turns, 4 stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd64_WsPingpong>,
     nullptr},
    {{"wgmma_fwd128_cp_async", WGMMA, 128, false,
      "the fallback: loads by cp.async, double buffered"},
     true,
     launch_fwd_wgmma<CpAsyncFwd128>,
     nullptr},
    {{"wgmma_fwd128_2blocks", WGMMA, 128, false,
      "before ping-pong: 2 blocks/SM, unpipelined, 2 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_2blocks>,
     nullptr},
    {{"wgmma_fwd128_cp_async_3wg", WGMMA, 128, false, "cp.async, 3 warpgroups, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_CpAsync3wg>,
     nullptr},
    {{"wgmma_fwd128_cp_async_1block", WGMMA, 128, false, "cp.async, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_CpAsync1block>,
     nullptr},
    {{"wgmma_fwd128_pipelined_1block", WGMMA, 128, false,
      "the pipelined walk, 1 block/SM, 4 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Pipelined1block>,
     nullptr},
    {{"wgmma_fwd128_pipelined_128keys", WGMMA, 128, false,
      "the pipelined walk, key tiles of 128, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Pipelined128keys>,
     nullptr},
    {{"wgmma_fwd128_pipelined_3wg", WGMMA, 128, false,
      "the pipelined walk, 3 warpgroups, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Pipelined3wg>,
     nullptr},
    {{"wgmma_fwd128_pipelined_2blocks", WGMMA, 128, false,
      "the pipelined walk, 2 blocks/SM, 2 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Pipelined2blocks>,
     nullptr},
    {{"wgmma_fwd128_one_tile_a_block", WGMMA, 128, false,
      "before persistence: the production shape, a query tile a block"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_OneTileABlock>,
     nullptr},
    {{"wgmma_fwd128_no_q_prefetch", WGMMA, 128, false,
      "persistent, the next query tile not prefetched into L2"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_NoQPrefetch>,
     nullptr},
    {{"wgmma_fwd128_no_pingpong", WGMMA, 128, false, "the production shape without turns"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_NoPingpong>,
     nullptr},
    {{"wgmma_fwd128_2stages", WGMMA, 128, false, "the production shape with 2 TMA stages"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_2stages>,
     nullptr},
    {{"wgmma_fwd128_2stages_no_pingpong", WGMMA, 128, false, "2 TMA stages, without turns"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_2stagesNoPingpong>,
     nullptr},
    {{"wgmma_fwd128_tma_3wg", WGMMA, 128, false, "3 warpgroups, 3 TMA stages, 1 block/SM"},
     true,
     launch_fwd_wgmma<WgmmaFwd128_Tma3wg>,
     nullptr},
    {{"wgmma_bwd64_1wg", WGMMA, 64, true,
      "one warpgroup a block, 64 keys, 3 blocks/SM (the production kernel before the "
      "warp-specialized one)"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd64>},
    {{"wgmma_bwd64_ws_per_key_block", WGMMA, 64, true,
      "warp-specialized, one key block a block (the production schedule before pairs)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd64, WsPerKeyBlock>},
    {{"wgmma_bwd64_ws_pairs", WGMMA, 64, true,
      "warp-specialized, a block per pair of key blocks (not persistent)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd64, WsPaired>},
    {{"wgmma_bwd64_ws_persistent", WGMMA, 64, true,
      "warp-specialized, one block per SM over single key blocks"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd64, WsPersistent>},
    {{"wgmma_bwd64_ws_no_tail", WGMMA, 64, true,
      "warp-specialized, persistent over pairs of key blocks to the end (no tail of singles)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd64, WsPairedPersistentNoTail>},
    {{"wgmma_bwd128_ws_per_key_block", WGMMA, 128, true, "warp-specialized, one key block a block"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd128, WsPerKeyBlock>},
    {{"wgmma_bwd128_ws_pairs", WGMMA, 128, true,
      "warp-specialized, a block per pair of key blocks (not persistent)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd128, WsPaired>},
    {{"wgmma_bwd128_ws_persistent", WGMMA, 128, true,
      "warp-specialized, one block per SM over single key blocks"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd128, WsPersistent>},
    {{"wgmma_bwd128_ws_no_tail", WGMMA, 128, true,
      "warp-specialized, persistent over pairs of key blocks to the end (no tail of singles)"},
     true,
     nullptr,
     launch_bwd_ws<WsBwd128, WsPairedPersistentNoTail>},
    {{"wgmma_bwd64_cp_async", WGMMA, 64, true, "the fallback: loads by cp.async, 2 stages"},
     true,
     nullptr,
     launch_bwd_wgmma<CpAsyncBwd64>},
    {{"wgmma_bwd64_2blocks", WGMMA, 64, true, "2 blocks/SM"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd64_2blocks>},
    {{"wgmma_bwd64_tma2", WGMMA, 64, true, "2 TMA stages"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd64_Tma2>},
    {{"wgmma_bwd64_ungrouped", WGMMA, 64, true, "each pair's key blocks in turn"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd64_Ungrouped>},
    {{"wgmma_bwd128_1wg", WGMMA, 128, true,
      "one warpgroup a block, 64 keys, 2 blocks/SM (the production kernel before the "
      "warp-specialized one)"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd128>},
    {{"wgmma_bwd128_cp_async", WGMMA, 128, true, "the fallback: loads by cp.async, 2 stages"},
     true,
     nullptr,
     launch_bwd_wgmma<CpAsyncBwd128>},
    {{"wgmma_bwd128_unsplit", WGMMA, 128, true, "the products in order (SPLIT 0)"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd128_Unsplit>},
    {{"wgmma_bwd128_split_p", WGMMA, 128, true, "only P^T under dP^T (SPLIT 1)"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd128_SplitP>},
    {{"wgmma_bwd128_ungrouped", WGMMA, 128, true, "each pair's key blocks in turn"},
     true,
     nullptr,
     launch_bwd_wgmma<WgmmaBwd128_Ungrouped>},
};
const int attention_wgmma_variant_count =
    (int)(sizeof attention_wgmma_variants / sizeof attention_wgmma_variants[0]);
#endif
