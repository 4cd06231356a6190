/* The attention kernels' tuning variants as one list, and the API of
 * attention_tuning.h over it: a variant found by name, checked against the
 * call's head size and the device, and run in place of the kernel the
 * dispatcher (attention.cu) would choose, with the dispatcher's own steps
 * around a backward main kernel. Compiled only in tuning builds. */
#include "kernels/cuda/tuning/attention_variants.h"

#include <cuda_bf16.h>
#include <string.h>

#include "base/fail.h"
#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/tuning/attention_tuning.h"

namespace {

int variant_count() { return attention_mma_variant_count + attention_wgmma_variant_count; }

const AttnVariant &variant_at(int i) {
    const int n_mma = attention_mma_variant_count;
    return i < n_mma ? attention_mma_variants[i] : attention_wgmma_variants[i - n_mma];
}

// The variant `name` for a call with head size HS, which must be its own
// and run on this device.
const AttnVariant &find_variant(const char *name, int HS, bool backward) {
    for (int i = 0; i < variant_count(); i++) {
        const AttnVariant &v = variant_at(i);
        if (strcmp(v.info.name, name) != 0) continue;
        if (v.info.backward != backward)
            fail_at(__FILE__, __LINE__, EXIT_FATAL, "attention variant %s is a %s kernel", name,
                    v.info.backward ? "backward" : "forward");
        if (v.info.head_size != HS)
            fail_at(__FILE__, __LINE__, EXIT_FATAL,
                    "attention variant %s is for head size %d, not %d", name, v.info.head_size, HS);
        if (v.wgmma && !attention_wgmma_supported())
            fail_at(__FILE__, __LINE__, EXIT_FATAL,
                    "attention variant %s: the wgmma kernels do not run here", name);
        return v;
    }
    fail_at(__FILE__, __LINE__, EXIT_FATAL, "attention: no tuning variant named %s", name);
}

} // namespace

extern "C" int attention_cuda_variant_count(void) { return variant_count(); }

extern "C" const attention_cuda_variant *attention_cuda_variant_info(int i) {
    return i >= 0 && i < variant_count() ? &variant_at(i).info : nullptr;
}

extern "C" void attention_forward_cuda_variant(const char *name, void *out, float *lse,
                                               const void *qkv, int B, int T, int C, int NH,
                                               cudaStream_t stream) {
    const AttnVariant &v = find_variant(name, attention_head_size(C, NH), false);
    if (B <= 0 || T <= 0) return;
    v.forward(static_cast<__nv_bfloat16 *>(out), lse, static_cast<const __nv_bfloat16 *>(qkv), B, T,
              NH, stream);
}

extern "C" void attention_backward_cuda_variant(const char *name, void *dqkv, const void *dout,
                                                const void *qkv, const void *out, const float *lse,
                                                int B, int T, int C, int NH, void *dqkv_colsum,
                                                void *workspace, cudaStream_t stream) {
    const AttnVariant &v = find_variant(name, attention_head_size(C, NH), true);
    if (B <= 0 || T <= 0) return;
    const AttnBwdArgs a = attention_backward_args(dqkv, dout, qkv, lse, B, T, C, NH, workspace,
                                                  false, dqkv_colsum != nullptr);
    attention_run_backward(a, out, v.backward, v.wgmma, dqkv_colsum, stream);
}
