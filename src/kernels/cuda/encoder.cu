/* Token + position embedding on the GPU, bf16 storage, fp32 sums.
 *
 * Forward: one thread per 8 channels of one (b,t) row; one 16-byte load from
 * the wte row, one from the wpe row, one fp32 add, one rounding.
 *
 * Backward, deterministic without atomics (a bf16 atomicAdd rounds at every
 * add, and fp32 atomics add in whatever order the rows arrive):
 * - dwpe[t] += sum over b of dout[b,t]: one thread per (t, 8 channels) adds
 *   b = 0..B-1 in order.
 * - dwte: the (token, row) pairs are sorted by token with CUB's radix sort
 *   (on the bits a token below V has), which is stable, so the rows of one
 *   token stay in row order. The sorted positions are cut into tiles of
 *   WTE_TILE (32); one block per tile adds its positions in order, in fp32,
 *   and each run of equal tokens that lies inside the tile is added to
 *   dwte[token] at once. A run that crosses tile edges (a frequent token:
 *   in text ",", " the" and "." fill thousands of the 32K positions of a
 *   batch) leaves one fp32 partial per tile it touches, and a second kernel
 *   adds them in tile order for that token: the serial depth is a tile, not
 *   the run. (One block per run left one block reading a few thousand rows
 *   alone on real text: several times slower than on hashed tokens;
 *   docs/gpu-training.md.) Fixed tiles and fixed orders: one bf16 rounding
 *   per element and the same bits on every run.
 * The backward's kernels load ROWS_IN_FLIGHT rows (or partials) before
 * adding them, in the order they would be added one at a time, so that
 * their loads are not waited for one by one. */
#include "kernels/encoder.h"

#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dependent_launch.cuh"

static __global__ void encoder_forward_kernel(bf16 *out, const int32_t *inp, const bf16 *wte,
                                              const bf16 *wpe, int N, int T, int C) {
    const int C8 = C / 8;
    const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)N * C8) return;
    const int row = (int)(idx / C8), c = (int)(idx % C8) * 8;
    const int t = row % T;
    float e[8], p[8];
    load8(e, wte + (size_t)inp[row] * C + c);
    load8(p, wpe + (size_t)t * C + c);
#pragma unroll
    for (int i = 0; i < 8; i++) e[i] += p[i];
    store8(out + (size_t)row * C + c, e);
}

static __global__ void iota_kernel(int32_t *x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = i;
}

enum { ROWS_IN_FLIGHT = 8 }; /* rows a thread loads before adding them */

static __device__ __forceinline__ void add8(float *acc, uint4 row) {
    float d[8];
    unpack8(d, row);
#pragma unroll
    for (int k = 0; k < 8; k++) acc[k] += d[k];
}

/* dwpe[t, c..c+8) += sum_b dout[b, t, c..c+8), b in order; the loads of
 * ROWS_IN_FLIGHT batch rows go out before their adds (one at a time, each
 * waited for, left the kernel bound by latency). */
static __global__ void encoder_backward_wpe_kernel(bf16 *dwpe, const bf16 *dout, int B, int T,
                                                   int C) {
    grid_dependency_wait(); // launched by launch_dependent
    const int C8 = C / 8;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= T * C8) return;
    const int t = idx / C8, c = (idx % C8) * 8;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int b0 = 0; b0 < B; b0 += ROWS_IN_FLIGHT) {
        uint4 rows[ROWS_IN_FLIGHT];
#pragma unroll
        for (int u = 0; u < ROWS_IN_FLIGHT; u++)
            if (b0 + u < B)
                rows[u] =
                    *reinterpret_cast<const uint4 *>(dout + ((size_t)(b0 + u) * T + t) * C + c);
#pragma unroll
        for (int u = 0; u < ROWS_IN_FLIGHT; u++)
            if (b0 + u < B) add8(acc, rows[u]);
    }
    bf16 *w = dwpe + (size_t)t * C + c;
    float old[8];
    load8(old, w);
#pragma unroll
    for (int i = 0; i < 8; i++) old[i] += acc[i];
    store8(w, old);
}

enum { WTE_TILE = 32 }; /* sorted positions per block (16 measured slower on text) */

/* Partials of runs that cross tile edges: slot (tile, 0) holds the piece
 * that opens the tile and belongs to a run begun in an earlier tile; slot
 * (tile, 1) the piece of a run that begins in the tile and goes on past it. */
static __device__ __forceinline__ float *wte_partial(float *partials, int tile, int slot, int C) {
    return partials + ((size_t)tile * 2 + slot) * C;
}

static __device__ __forceinline__ void add_into_bf16(bf16 *w, const float *acc) {
    float old[8];
    load8(old, w);
#pragma unroll
    for (int k = 0; k < 8; k++) old[k] += acc[k];
    store8(w, old);
}

/* Block x: tile x of the sorted positions; thread: 8 channels (blockIdx.y
 * selects the channel range when C/8 exceeds the block). The tile's tokens
 * and rows are staged in shared memory. A run of equal tokens ends at a
 * token change or the tile's end: wholly inside the tile it is added to
 * dwte[token]; begun in an earlier tile (slot 0) or going on past this one
 * (slot 1) it is left as a partial. */
static __global__ void encoder_backward_wte_tile_kernel(bf16 *dwte, float *partials,
                                                        const bf16 *dout, const int32_t *sorted_tok,
                                                        const int32_t *sorted_row, int N, int C) {
    __shared__ int32_t tile_tok[WTE_TILE], tile_row[WTE_TILE];
    grid_dependency_wait(); // launched by launch_dependent
    const int tile = blockIdx.x, first = tile * WTE_TILE, n = min(N - first, (int)WTE_TILE);
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        tile_tok[k] = sorted_tok[first + k];
        tile_row[k] = sorted_row[first + k];
    }
    __syncthreads();
    const int c8 = blockIdx.y * blockDim.x + threadIdx.x;
    if (c8 >= C / 8) return;
    const int c = c8 * 8;
    int tok = tile_tok[0];
    bool begun_before = first > 0 && sorted_tok[first - 1] == tok;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    /* the run of tok, ended; goes_on: it continues in the next tile */
    auto end_run = [&](bool goes_on) {
        if (begun_before || goes_on) {
            float *p = wte_partial(partials, tile, begun_before ? 0 : 1, C) + c;
#pragma unroll
            for (int k = 0; k < 8; k++) p[k] = acc[k];
        } else {
            add_into_bf16(dwte + (size_t)tok * C + c, acc);
        }
    };
    for (int k0 = 0; k0 < n; k0 += ROWS_IN_FLIGHT) {
        uint4 rows[ROWS_IN_FLIGHT];
#pragma unroll
        for (int u = 0; u < ROWS_IN_FLIGHT; u++)
            if (k0 + u < n)
                rows[u] = *reinterpret_cast<const uint4 *>(dout + (size_t)tile_row[k0 + u] * C + c);
#pragma unroll
        for (int u = 0; u < ROWS_IN_FLIGHT; u++) {
            const int k = k0 + u;
            if (k >= n) break;
            if (tile_tok[k] != tok) {
                end_run(false);
                tok = tile_tok[k];
                begun_before = false;
#pragma unroll
                for (int i = 0; i < 8; i++) acc[i] = 0.f;
            }
            add8(acc, rows[u]);
        }
    }
    const int end = first + n;
    end_run(end < N && sorted_tok[end] == tok);
}

/* Block x: tile x; works when a run begins in the tile and goes on past it
 * (slot 1): adds that run's partials in tile order into dwte[token]. The
 * run's last tile is found a block's width of tiles at a time, and
 * ROWS_IN_FLIGHT partials are loaded before their adds: a frequent token's
 * run spans tens to hundreds of tiles on text, and walking them one
 * dependent load at a time made text far slower than hashed tokens. */
static __global__ void encoder_backward_wte_runs_kernel(bf16 *dwte, const float *partials,
                                                        const int32_t *sorted_tok, int N, int C) {
    grid_dependency_wait(); // launched by launch_dependent
    const int tile = blockIdx.x, first = tile * WTE_TILE, end = min(N, first + WTE_TILE);
    const int tok = sorted_tok[end - 1];
    if (end >= N || sorted_tok[end] != tok) return; /* ends in the tile */
    if (sorted_tok[first] == tok && first > 0 && sorted_tok[first - 1] == tok)
        return; /* begun before */
    /* Every later tile opens with a piece of the run, up to the first tile
     * whose end the run does not pass: the run's last tile. The tokens are
     * sorted, so the tiles whose end it passes form a leading stretch,
     * counted here a block's width of tiles at a time. */
    int last = tile + 1;
    for (;;) {
        const long long t_end = (long long)(last + (int)threadIdx.x + 1) * WTE_TILE;
        const int passes = __syncthreads_count(t_end < N && sorted_tok[t_end] == tok);
        last += passes;
        if (passes < (int)blockDim.x) break;
    }
    const int c8 = blockIdx.y * blockDim.x + threadIdx.x;
    if (c8 >= C / 8) return;
    const int c = c8 * 8;
    float acc[8];
    const float *p = wte_partial(const_cast<float *>(partials), tile, 1, C) + c;
#pragma unroll
    for (int k = 0; k < 8; k++) acc[k] = p[k];
    for (int t0 = tile + 1; t0 <= last; t0 += ROWS_IN_FLIGHT) {
        float4 q[ROWS_IN_FLIGHT][2];
#pragma unroll
        for (int u = 0; u < ROWS_IN_FLIGHT; u++)
            if (t0 + u <= last) {
                const float4 *at = reinterpret_cast<const float4 *>(
                    wte_partial(const_cast<float *>(partials), t0 + u, 0, C) + c);
                q[u][0] = at[0];
                q[u][1] = at[1];
            }
#pragma unroll
        for (int u = 0; u < ROWS_IN_FLIGHT; u++)
            if (t0 + u <= last) {
                acc[0] += q[u][0].x, acc[1] += q[u][0].y, acc[2] += q[u][0].z;
                acc[3] += q[u][0].w, acc[4] += q[u][1].x, acc[5] += q[u][1].y;
                acc[6] += q[u][1].z, acc[7] += q[u][1].w;
            }
    }
    add_into_bf16(dwte + (size_t)tok * C + c, acc);
}

static void check_shape(const char *op, int C, const void *a, const void *b, const void *c) {
    if (C % 8 != 0 || !is_aligned16(a) || !is_aligned16(b) || !is_aligned16(c))
        FAIL("%s: C=%d must be a multiple of 8 and the tensors 16-byte aligned", op, C);
}

extern "C" void encoder_forward_cuda(void *out, const int32_t *inp, const void *wte,
                                     const void *wpe, int B, int T, int C, cudaStream_t stream) {
    check_shape("encoder_forward_cuda", C, out, wte, wpe);
    const int N = B * T;
    const size_t threads = (size_t)N * (C / 8);
    const int block = 256;
    encoder_forward_kernel<<<(unsigned)((threads + block - 1) / block), block, 0, stream>>>(
        (bf16 *)out, inp, (const bf16 *)wte, (const bf16 *)wpe, N, T, C);
    CUDA_CHECK_LAUNCH("encoder_forward_kernel");
}

static size_t align_up(size_t x) { return (x + 255) / 256 * 256; }

/* CUB's scratch for sorting N pairs on all 32 key bits: enough for the
 * backward's sort on fewer (V's), so that the workspace needs no V. */
static size_t sort_temp_bytes(int N) {
    size_t bytes = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, (const int32_t *)nullptr,
                                               (int32_t *)nullptr, (const int32_t *)nullptr,
                                               (int32_t *)nullptr, N));
    return bytes;
}

static int wte_tiles(int N) { return (N + WTE_TILE - 1) / WTE_TILE; }

/* The partials need C; the workspace query has no C, so it reserves for the
 * widest C the layernorm kernels allow (2048). */
enum { MAX_C = 2048 };

extern "C" size_t encoder_backward_cuda_workspace_bytes(int B, int T) {
    const int N = B * T;
    return 3 * align_up((size_t)N * sizeof(int32_t)) + align_up(sort_temp_bytes(N)) +
           align_up((size_t)wte_tiles(N) * 2 * MAX_C * sizeof(float));
}

extern "C" void encoder_backward_cuda(void *dwte, void *dwpe, const void *dout, const int32_t *inp,
                                      int B, int T, int C, int V, void *workspace,
                                      size_t workspace_bytes, cudaStream_t stream) {
    check_shape("encoder_backward_cuda", C, dwte, dwpe, dout);
    if (V < 1) FAIL("encoder_backward_cuda: V=%d rows of dwte; at least 1", V);
    const int N = B * T;
    const size_t need = encoder_backward_cuda_workspace_bytes(B, T);
    if (workspace_bytes < need)
        FAIL("encoder_backward_cuda: workspace of %zu bytes, needs %zu", workspace_bytes, need);

    const int C8 = C / 8;
    {
        const int block = 256, threads = T * C8;
        launch_dependent("encoder_backward_wpe_kernel", encoder_backward_wpe_kernel,
                         dim3((threads + block - 1) / block), dim3(block), 0, stream, (bf16 *)dwpe,
                         (const bf16 *)dout, B, T, C);
    }

    char *ws = (char *)workspace;
    const size_t ints = align_up((size_t)N * sizeof(int32_t));
    int32_t *sorted_tok = (int32_t *)ws;
    int32_t *rows = (int32_t *)(ws + ints);
    int32_t *sorted_row = (int32_t *)(ws + 2 * ints);
    void *temp = ws + 3 * ints;
    size_t temp_bytes = sort_temp_bytes(N);
    iota_kernel<<<(N + 255) / 256, 256, 0, stream>>>(rows, N);
    CUDA_CHECK_LAUNCH("iota_kernel");
    /* Only the bits a token below V has: 16 for GPT-2's vocabulary, two
     * radix passes of 8 bits where all 32 bits took four. */
    int key_bits = 1;
    while (key_bits < 31 && (1 << key_bits) < V) key_bits++;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, inp, sorted_tok, rows, sorted_row,
                                               N, 0, key_bits, stream));

    if (C > MAX_C) FAIL("encoder_backward_cuda: C=%d is wider than %d", C, MAX_C);
    float *partials = (float *)((char *)temp + align_up(temp_bytes));
    const int block = C8 < 256 ? (C8 + 31) / 32 * 32 : 256;
    const dim3 grid((unsigned)wte_tiles(N), (unsigned)((C8 + block - 1) / block));
    launch_dependent("encoder_backward_wte_tile_kernel", encoder_backward_wte_tile_kernel, grid,
                     dim3(block), 0, stream, (bf16 *)dwte, partials, (const bf16 *)dout,
                     (const int32_t *)sorted_tok, (const int32_t *)sorted_row, N, C);
    launch_dependent("encoder_backward_wte_runs_kernel", encoder_backward_wte_runs_kernel, grid,
                     dim3(block), 0, stream, (bf16 *)dwte, (const float *)partials,
                     (const int32_t *)sorted_tok, N, C);
}
