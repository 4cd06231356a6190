/* One optimizer step: grad_accum micro-steps of forward + backward on this
 * rank's part of the global batch (the last one reducing gradient buckets
 * while backward runs), the global gradient norm and clipping, the optimizer
 * on this rank's shard and the parameter all-gather, all queued on the
 * device. */
#include "train/step.h"

#include <math.h>

void train_step(run_state *r, bool want_loss, bool poison) {
    const config *cfg = r->cfg;
    gpt2_model *model = &r->model;
    data_parallel *ddp = &r->ddp;
    optimizer *opt = r->opt;
    const kernel_ops *ops = model->ops;
    communicator *comm = ddp->comm;
    const int B = cfg->micro_batch, T = cfg->seq_len;
    /* Every token of the global batch weighs the same: the sum over ranks
     * and micro-steps of dloss-scaled gradients is the mean. */
    const float dloss = poison ? NAN : 1.0f / ((float)B * T * cfg->grad_accum * comm->world);
    ops->zero(model->grads, model->lay.n_elements * ops->elem_bytes);
    gpt2_loss_reset(model);
    for (int micro = 0; micro < cfg->grad_accum; micro++) {
        int64_t pos =
            loader_batch_position(r->progress.samples_consumed, micro, comm->rank, comm->world, B);
        /* A failed read leaves token 0 and its error in the loader: the
         * step still runs its collectives, and train.c ends the run after it. */
        loader_read(&r->train_ld, pos, B, r->inputs, r->targets);
        const int last = micro + 1 == cfg->grad_accum;
        if (last) ddp_arm(ddp, model->grads);
        if (micro > 0) gpt2_params_unchanged(model); /* the optimizer runs after the last */
        gpt2_forward_async(model, r->inputs, r->targets, B, T, dloss);
        gpt2_backward(model, last && comm->world > 1 ? buckets_on_ready : NULL, &ddp->buckets);
    }
    ddp_finish_reduction(ddp);
    /* Every step's loss sum, for the non-finite guard; summed over ranks
     * when logged, before the all-gather (queued behind it, the sums would
     * wait for all of it). */
    double *loss_sum = gpt2_loss_sum_async(model);
    if (want_loss && comm->world > 1) comm->ops->sum_in_place(comm, loss_sum);
    optimizer_grad_sum_squares(opt, ddp->shard_grads);
    /* A NaN/Inf loss makes the norm NaN. Folded in before the norm's sum
     * over ranks, or once the loss itself is summed, so that every rank
     * skips alike (zero_stage 0 sums no norm: a NaN loss there shows in the
     * all-reduced gradients anyway). */
    if (want_loss || comm->world == 1 || ddp->zero_stage == 1)
        ops->nonfinite_fold(opt->grad_sum_squares, loss_sum);
    ddp_sum_shards(ddp, opt->grad_sum_squares);
    optimizer_clip(opt, cfg->grad_clip);
    const optimizer_schedule s = {.lr = r->lr, .factor = r->lr / cfg->lr};
    optimizer_step(opt, model->params, ddp->shard_grads, &s);
    ddp_gather_params(ddp, model->params);
}
