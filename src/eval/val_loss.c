/* Validation loss of one rank's share (see val_loss.h). */
#include "eval/val_loss.h"

double val_loss_mean(gpt2_model *model, data_loader *val, int n_batches, int B, int T, int rank,
                     int world, int32_t *inputs, int32_t *targets) {
    gpt2_loss_reset(model);
    for (int k = 0; k < n_batches; k++) {
        int64_t pos = loader_batch_position(0, k, rank, world, B);
        loader_read(val, pos, B, inputs, targets);
        gpt2_forward_async(model, inputs, targets, B, T, 0.0f);
    }
    return gpt2_loss_take(model);
}
