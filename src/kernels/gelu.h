/* GELU, tanh approximation (GPT-2's "gelu_new"). */
#ifndef GPT2_KERNELS_GELU_H
#define GPT2_KERNELS_GELU_H
#include <stddef.h>

void gelu_forward_cpu(float *out, const float *inp, size_t n);
/* dinp = gelu'(inp) * dout; dinp may alias dout. */
void gelu_backward_cpu(float *dinp, const float *inp, const float *dout, size_t n);
#endif
