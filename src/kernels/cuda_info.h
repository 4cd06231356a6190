/* What the CUDA runtime sees: GPU count, names, PCI ids and memory in use, for --version, the
 * environment report and device=auto. Defined only in CUDA builds. */
#ifndef GPT2_KERNELS_CUDA_INFO_H
#define GPT2_KERNELS_CUDA_INFO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The device's compute capability as major * 10 + minor (90: H100); 0 when unknown. */
int cuda_compute_capability(int device);
/* Number of visible GPUs; 0 when there is no driver or no device. */
int cuda_device_count(void);
/* "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)" into buf. */
void cuda_device_describe(int device, char *buf, size_t len);
/* CUDA runtime version as major*1000 + minor*10 (e.g. 13000). */
int cuda_runtime_version(void);
/* "0000:18:00.0": tells physical GPUs apart across ranks of one node. */
void cuda_device_pci_bus_id(int device, char *buf, size_t len);
/* Bytes in use on the current device, by every process and the driver
 * (cudaMemGetInfo: total - free); 0 when unknown. */
size_t cuda_memory_in_use(void);
/* The current device's measured ceilings (kernels/cuda/ceilings.cu): an
 * 8192^3 bf16 GEMM's FLOP/s through the kernel table, the same product's
 * with FP8 operands (E4M3; 0 on GPUs without FP8 tensor cores) and a
 * device copy's bytes/s (read + written); 0 where memory for the trial was
 * lacking. ops_cuda_init must have run. */
void cuda_measure_ceilings(double *gemm_flops_per_s, double *fp8_flops_per_s,
                           double *copy_bytes_per_s);
/* Free and total bytes on the current device (cudaMemGetInfo); 0, or -1
 * when unknown. */
int cuda_memory_info(size_t *free_bytes, size_t *total_bytes);
#ifdef __cplusplus
}
#endif
#endif
