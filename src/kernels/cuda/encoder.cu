/* Token + position embedding on the GPU, bf16 storage, fp32 sums.
 *
 * Forward: one thread per 8 channels of one (b,t) row; one 16-byte load from
 * the wte row, one from the wpe row, one fp32 add, one rounding.
 *
 * Backward, deterministic without atomics (a bf16 atomicAdd rounds at every
 * add, and fp32 atomics add in whatever order the rows arrive):
 * - dwpe[t] += sum over b of dout[b,t]: one thread per (t, 8 channels) walks
 *   b = 0..B-1 in order.
 * - dwte: the (token, row) pairs are sorted by token with CUB's radix sort,
 *   which is stable, so the rows of one token stay in row order. The sorted
 *   positions are cut into tiles of WTE_TILE (32); one block per tile walks its
 *   positions in order, summing in fp32, and each run of equal tokens that
 *   lies inside the tile is added to dwte[token] at once. A run that crosses
 *   tile edges (a frequent token: in text ",", " the" and "." fill thousands
 *   of the 32K positions of a batch) leaves one fp32 partial per tile it
 *   touches, and a second kernel adds them in tile order for that token:
 *   the serial depth is a tile, not the run. (One block per run left one
 *   block reading a few thousand rows alone on real text: several times
 *   slower than on hashed tokens; docs/gpu-training.md.) Fixed tiles and fixed orders: one
 *   bf16 rounding per element and the same bits on every run. */
#include "kernels/encoder.h"

#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"

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

/* dwpe[t, c..c+8) += sum_b dout[b, t, c..c+8), b in order. */
static __global__ void encoder_backward_wpe_kernel(bf16 *dwpe, const bf16 *dout, int B, int T,
                                                   int C) {
    const int C8 = C / 8;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= T * C8) return;
    const int t = idx / C8, c = (idx % C8) * 8;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int b = 0; b < B; b++) {
        float d[8];
        load8(d, dout + ((size_t)b * T + t) * C + c);
#pragma unroll
        for (int i = 0; i < 8; i++) acc[i] += d[i];
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

static __device__ __forceinline__ void add_row8(float *acc, const bf16 *row) {
    float d[8];
    load8(d, row);
#pragma unroll
    for (int k = 0; k < 8; k++) acc[k] += d[k];
}

static __device__ __forceinline__ void add_into_bf16(bf16 *w, const float *acc) {
    float old[8];
    load8(old, w);
#pragma unroll
    for (int k = 0; k < 8; k++) old[k] += acc[k];
    store8(w, old);
}

/* Block x: tile x of the sorted positions; thread: 8 channels (blockIdx.y
 * selects the channel range when C/8 exceeds the block). */
static __global__ void encoder_backward_wte_tile_kernel(bf16 *dwte, float *partials,
                                                        const bf16 *dout, const int32_t *sorted_tok,
                                                        const int32_t *sorted_row, int N, int C) {
    const int tile = blockIdx.x, first = tile * WTE_TILE, end = min(N, first + WTE_TILE);
    const int c8 = blockIdx.y * blockDim.x + threadIdx.x;
    if (c8 >= C / 8) return;
    const int c = c8 * 8;
    int i = first;
    while (i < end) {
        const int tok = sorted_tok[i];
        const bool begun_before = i == first && i > 0 && sorted_tok[i - 1] == tok;
        float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        int j = i;
        for (; j < end && sorted_tok[j] == tok; j++)
            add_row8(acc, dout + (size_t)sorted_row[j] * C + c);
        const bool goes_on = j == end && end < N && sorted_tok[end] == tok;
        if (begun_before || goes_on) {
            float *p = wte_partial(partials, tile, begun_before ? 0 : 1, C) + c;
#pragma unroll
            for (int k = 0; k < 8; k++) p[k] = acc[k];
        } else {
            add_into_bf16(dwte + (size_t)tok * C + c, acc); /* the whole run was in this tile */
        }
        i = j;
    }
}

/* Block x: tile x; works when a run begins in the tile and goes on past it
 * (slot 1): adds that run's partials in tile order into dwte[token]. */
static __global__ void encoder_backward_wte_runs_kernel(bf16 *dwte, const float *partials,
                                                        const int32_t *sorted_tok, int N, int C) {
    const int tile = blockIdx.x, first = tile * WTE_TILE, end = min(N, first + WTE_TILE);
    const int tok = sorted_tok[end - 1];
    if (end >= N || sorted_tok[end] != tok) return; /* ends in the tile */
    if (sorted_tok[first] == tok && first > 0 && sorted_tok[first - 1] == tok)
        return; /* begun before */
    const int c8 = blockIdx.y * blockDim.x + threadIdx.x;
    if (c8 >= C / 8) return;
    const int c = c8 * 8;
    float acc[8];
    const float *p = wte_partial(const_cast<float *>(partials), tile, 1, C) + c;
#pragma unroll
    for (int k = 0; k < 8; k++) acc[k] = p[k];
    for (int t = tile + 1;; t++) { /* every later tile opens with a piece of the run */
        const float *q = wte_partial(const_cast<float *>(partials), t, 0, C) + c;
#pragma unroll
        for (int k = 0; k < 8; k++) acc[k] += q[k];
        const int t_end = min(N, (t + 1) * WTE_TILE);
        if (t_end >= N || sorted_tok[t_end] != tok) break;
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
                                      int B, int T, int C, void *workspace, size_t workspace_bytes,
                                      cudaStream_t stream) {
    check_shape("encoder_backward_cuda", C, dwte, dwpe, dout);
    const int N = B * T;
    const size_t need = encoder_backward_cuda_workspace_bytes(B, T);
    if (workspace_bytes < need)
        FAIL("encoder_backward_cuda: workspace of %zu bytes, needs %zu", workspace_bytes, need);

    const int C8 = C / 8;
    {
        const int block = 256, threads = T * C8;
        encoder_backward_wpe_kernel<<<(threads + block - 1) / block, block, 0, stream>>>(
            (bf16 *)dwpe, (const bf16 *)dout, B, T, C);
        CUDA_CHECK_LAUNCH("encoder_backward_wpe_kernel");
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
    /* All 32 key bits: the table does not pass the vocabulary size, and for
     * 32K keys the two extra radix passes cost a few microseconds. */
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, inp, sorted_tok, rows, sorted_row,
                                               N, 0, 32, stream));

    if (C > MAX_C) FAIL("encoder_backward_cuda: C=%d is wider than %d", C, MAX_C);
    float *partials = (float *)((char *)temp + align_up(temp_bytes));
    const int block = C8 < 256 ? (C8 + 31) / 32 * 32 : 256;
    const dim3 grid((unsigned)wte_tiles(N), (unsigned)((C8 + block - 1) / block));
    encoder_backward_wte_tile_kernel<<<grid, block, 0, stream>>>(
        (bf16 *)dwte, partials, (const bf16 *)dout, sorted_tok, sorted_row, N, C);
    CUDA_CHECK_LAUNCH("encoder_backward_wte_tile_kernel");
    encoder_backward_wte_runs_kernel<<<grid, block, 0, stream>>>((bf16 *)dwte, partials, sorted_tok,
                                                                 N, C);
    CUDA_CHECK_LAUNCH("encoder_backward_wte_runs_kernel");
}
