/* The Hopper (sm_90a) attention kernels (attention_wgmma.cu), called by the
 * dispatch in attention.cu before the mma.sync kernels. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_FAMILIES_H
#define GPT2_KERNELS_CUDA_ATTENTION_FAMILIES_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif
/* 1 when this build has sm_90a code and the current device runs it
 * (compute capability 9.0: H100, H200, GH200). */
int attention_sm90_supported(void);
/* The causal forward (attention_forward_cuda's contract) for head size 64 or 128 on
 * such a device: returns 1 when launched, 0 when the caller must run another
 * kernel (other head size, other GPU, build without sm_90a). */
int attention_forward_sm90(void *out, float *lse, const void *qkv, int B, int T, int C, int NH,
                           cudaStream_t stream);
/* The backward's main kernel for head size 64 or 128 on such a device (attention.cu
 * runs the passes around it: dq_acc zeroed and dsum = rowsum(dout * out)
 * before, dq_acc * scale -> dqkv after; dq_acc in dq_sm90_index's layout,
 * attention_tiles.cuh): returns 1 when launched, else 0. dq_order: NULL, or
 * B * NH * ceil(T / 64) * 4 zeroed counters: the deterministic mode, which
 * adds each dq tile's contributions in the order of the key blocks. */
int attention_backward_sm90(void *dqkv, float *dq_acc, const void *dout, const void *qkv,
                            const float *lse, const float *dsum, int B, int T, int C, int NH,
                            unsigned *dq_order, cudaStream_t stream);
/* Tile shapes, for the benchmark and the test. Forward, head size 64: 0 =
 * 2 warpgroups x 64 keys, 2 blocks/SM, K and V by TMA in 4 stages, the
 * pipelined walk (default); with cp.async: 1 = 2 x 128 keys, 2 = 3 x 64,
 * 3 = 1 x 64, 6 = the default's shape; TMA, the walk unpipelined: 9 = 3
 * stages (the previous default), 4 = 9 with the blocks longest first over
 * all heads (not grouped by 16 heads), 5 = 9 rescaling O after every tile,
 * 7 = 9 with 2 stages; 8 = the default with 3 stages. Head size 128: 0 =
 * 2 x 64, 2 blocks/SM, 2 TMA stages, unpipelined (default); with cp.async:
 * 2 = 3 x 64, 3 = 2 x 64 at 1 block/SM, 6 = the default's shape.
 * Backward: 0 = K, V, Q, dO by TMA; head size 64: 3 blocks/SM, 3 stages;
 * 128: 2 blocks/SM, 2 stages, P^T and dV under dP^T; the key blocks of 16
 * pairs longest first (default); 2 = loads by cp.async, 2 stages, in order;
 * head size 64: 1 = the default at 2 blocks/SM, 3 = with 2 stages, 4 =
 * each pair's key blocks in turn; 128: 3 = the products in order, 4 = only
 * P^T under dP^T, 5 = each pair's key blocks in turn. */
void attention_sm90_set_variant(int fwd, int bwd);
#ifdef __cplusplus
}
#endif
#endif
