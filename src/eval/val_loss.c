/* Validation loss independent of the rank count (see val_loss.h). */
#include "eval/val_loss.h"

#include <stdlib.h>

#include "base/alloc.h"
#include "base/fail.h"

int val_loss_batches(int64_t n_windows, int eval_batches, int B) {
    const int64_t fit = B > 0 ? n_windows / B : 0;
    return fit < eval_batches ? (int)fit : eval_batches;
}

double val_loss_mean(gpt2_model *model, data_loader *val, int eval_batches, int B, int T,
                     const dist_group *dp, int32_t *inputs, int32_t *targets) {
    const kernel_ops *ops = model->ops;
    const int rank = dp->rank, world = dp->size;
    const size_t tokens = (size_t)B * T;
    if (eval_batches < 1 || val_loss_batches(val->ds->n_samples, eval_batches, B) < eval_batches)
        FAIL("val_loss_mean: %d batches of %d windows from a set of %lld windows (the caller "
             "should have used val_loss_batches)",
             eval_batches, B, (long long)val->ds->n_samples);
    /* One double per batch: this rank's on the backend, then every rank's
     * on the host (zero where another rank computed the batch: x + 0 = x). */
    double *on_device = ops->alloc((size_t)eval_batches * sizeof(double));
    double *sums = xcalloc((size_t)eval_batches, sizeof(double));
    int mine = 0;
    for (int k = rank; k < eval_batches; k += world, mine++) {
        loader_read(val, (int64_t)k * B, B, inputs, targets);
        gpt2_loss_reset(model);
        if (mine > 0) gpt2_params_unchanged(model);
        gpt2_forward_async(model, inputs, targets, B, T, 0.0f);
        ops->sum_f32(on_device + mine, model->loss_acc, tokens);
    }
    double *local = xcalloc((size_t)(mine > 0 ? mine : 1), sizeof(double));
    if (mine > 0) ops->download(local, on_device, (size_t)mine * sizeof(double));
    for (int i = 0; i < mine; i++) sums[rank + i * world] = local[i];
    group_allreduce_double(dp, sums, eval_batches, GROUP_SUM);
    double total = 0.0;
    for (int k = 0; k < eval_batches; k++) total += sums[k];
    gpt2_loss_reset(model);
    free(local);
    free(sums);
    ops->release(on_device);
    return total / ((double)eval_batches * (double)tokens);
}
