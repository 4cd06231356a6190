/* Per-op timing of a kernel table (see ops_profile.h). Each timed op is one
 * wrapper: synchronize, clock, the wrapped op, synchronize, clock; its time
 * goes to an entry keyed by the op's name (matmuls also by shape, since the
 * classifier's and the MLP's GEMMs differ by 10x). Times collect in a pending
 * column and are committed per step, so that the warm-up step and whatever
 * runs after the last step can be left out. */
#include "kernels/ops_profile.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/fail.h"

enum { MAX_ENTRIES = 256, LABEL_LEN = 64 };

typedef struct {
    char label[LABEL_LEN];
    long calls, pending_calls;
    double ms, pending_ms;
} op_entry;

static struct {
    const kernel_ops *inner;
    kernel_ops table;
    op_entry entries[MAX_ENTRIES];
    int n_entries;
    int marks;           /* step ends seen; steps counted = marks - 1 */
    double last_mark_ms; /* clock at the previous step end */
    double step_ms;      /* wall time of the counted steps */
} prof;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static op_entry *entry(const char *label) {
    for (int i = 0; i < prof.n_entries; i++)
        if (strcmp(prof.entries[i].label, label) == 0) return &prof.entries[i];
    CHECK(prof.n_entries < MAX_ENTRIES, "ops profile: more than %d distinct ops", MAX_ENTRIES);
    op_entry *e = &prof.entries[prof.n_entries++];
    snprintf(e->label, sizeof e->label, "%s", label);
    return e;
}

/* The queue is drained first, so the clock then measures this op alone. */
static double op_begin(void) {
    prof.inner->synchronize();
    return now_ms();
}

static void op_end(const char *label, double t0) {
    prof.inner->synchronize();
    op_entry *e = entry(label);
    e->pending_ms += now_ms() - t0;
    e->pending_calls++;
}

#define TIMED(label, call)                                                                         \
    do {                                                                                           \
        const double t0_ = op_begin();                                                             \
        call;                                                                                      \
        op_end(label, t0_);                                                                        \
    } while (0)

/* "matmul_forward 32768x768->2304": rows x input width -> output width. */
static const char *shape_label(char *buf, size_t len, const char *op, int N, int C, int OC) {
    snprintf(buf, len, "%s %dx%d->%d", op, N, C, OC);
    return buf;
}

/* ---- the wrappers, one per timed op, in ops.h's order ---- */

static void p_zero(void *ptr, size_t bytes) { TIMED("zero", prof.inner->zero(ptr, bytes)); }

static void p_upload(void *dst, const void *src_host, size_t bytes) {
    TIMED("upload", prof.inner->upload(dst, src_host, bytes));
}

static void p_download(void *dst_host, const void *src, size_t bytes) {
    TIMED("download", prof.inner->download(dst_host, src, bytes));
}

static void p_upload_f32(void *dst, const float *src_host, size_t n) {
    TIMED("upload_f32", prof.inner->upload_f32(dst, src_host, n));
}

static void p_download_f32(float *dst_host, const void *src, size_t n) {
    TIMED("download_f32", prof.inner->download_f32(dst_host, src, n));
}

static void p_encoder_forward(void *out, const int32_t *inp, const void *wte, const void *wpe,
                              int B, int T, int C) {
    TIMED("encoder_forward", prof.inner->encoder_forward(out, inp, wte, wpe, B, T, C));
}

static void p_encoder_backward(void *dwte, void *dwpe, const void *dout, const int32_t *inp,
                               int B, int T, int C) {
    TIMED("encoder_backward", prof.inner->encoder_backward(dwte, dwpe, dout, inp, B, T, C));
}

static void p_layernorm_forward(void *out, float *mean, float *rstd, const void *inp,
                                const void *weight, const void *bias, int N, int C) {
    TIMED("layernorm_forward",
          prof.inner->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C));
}

static void p_residual_layernorm_forward(void *residual, void *out, float *mean, float *rstd,
                                         const void *a, const void *b, const void *weight,
                                         const void *bias, int N, int C) {
    TIMED("residual_layernorm_forward",
          prof.inner->residual_layernorm_forward(residual, out, mean, rstd, a, b, weight, bias, N,
                                                 C));
}

static void p_layernorm_backward(void *dinp, void *dweight, void *dbias, const void *dout,
                                 const void *inp, const void *weight, const float *mean,
                                 const float *rstd, int N, int C) {
    TIMED("layernorm_backward", prof.inner->layernorm_backward(dinp, dweight, dbias, dout, inp,
                                                               weight, mean, rstd, N, C));
}

static void p_matmul_forward(void *out, const void *inp, const void *weight, const void *bias,
                             int N, int C, int OC) {
    char label[LABEL_LEN];
    TIMED(shape_label(label, sizeof label, "matmul_forward", N, C, OC),
          prof.inner->matmul_forward(out, inp, weight, bias, N, C, OC));
}

static void p_matmul_gelu_forward(void *out, void *pre, const void *inp, const void *weight,
                                  const void *bias, int N, int C, int OC) {
    char label[LABEL_LEN];
    TIMED(shape_label(label, sizeof label, "matmul_gelu_forward", N, C, OC),
          prof.inner->matmul_gelu_forward(out, pre, inp, weight, bias, N, C, OC));
}

static void p_matmul_backward(void *dinp, void *dweight, void *dbias, const void *dout,
                              const void *inp, const void *weight, int N, int C, int OC) {
    char label[LABEL_LEN];
    TIMED(shape_label(label, sizeof label, "matmul_backward", N, C, OC),
          prof.inner->matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC));
}

static void p_matmul_backward_gelu(void *dinp, void *dweight, void *dbias, const void *dout,
                                   const void *inp, const void *weight, const void *pre, int N,
                                   int C, int OC) {
    char label[LABEL_LEN];
    TIMED(shape_label(label, sizeof label, "matmul_backward_gelu", N, C, OC),
          prof.inner->matmul_backward_gelu(dinp, dweight, dbias, dout, inp, weight, pre, N, C,
                                           OC));
}

static void p_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C,
                                int NH) {
    TIMED("attention_forward", prof.inner->attention_forward(out, lse, qkv, B, T, C, NH));
}

static void p_attention_backward(void *dqkv, const void *dout, const void *qkv, const void *out,
                                 const float *lse, int B, int T, int C, int NH) {
    TIMED("attention_backward",
          prof.inner->attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH));
}

static void p_classifier_forward_backward(void *logits, float *losses, const int32_t *targets,
                                          int N, int V, int Vp, float dloss) {
    TIMED("classifier_forward_backward",
          prof.inner->classifier_forward_backward(logits, losses, targets, N, V, Vp, dloss));
}

static void p_loss_accumulate(float *acc, const float *losses, int N) {
    TIMED("loss_accumulate", prof.inner->loss_accumulate(acc, losses, N));
}

static void p_sum_f32(double *sum, const float *x, size_t n) {
    TIMED("sum_f32", prof.inner->sum_f32(sum, x, n));
}

static void p_gelu_forward(void *out, const void *inp, size_t n) {
    TIMED("gelu_forward", prof.inner->gelu_forward(out, inp, n));
}

static void p_grad_sum_squares(double *sum, const void *grad, size_t n) {
    TIMED("grad_sum_squares", prof.inner->grad_sum_squares(sum, grad, n));
}

static void p_clip_scale(float *scale, const double *sum_squares, double max_norm) {
    TIMED("clip_scale", prof.inner->clip_scale(scale, sum_squares, max_norm));
}

static void p_nonfinite_fold(double *sum_squares, const double *value) {
    TIMED("nonfinite_fold", prof.inner->nonfinite_fold(sum_squares, value));
}

static void p_adamw_update(void *params, float *master, const void *grad, float *m, float *v,
                           size_t n, float lr, float beta1, float beta2, float eps,
                           float weight_decay, const float *grad_scale, int t) {
    TIMED("adamw_update", prof.inner->adamw_update(params, master, grad, m, v, n, lr, beta1, beta2,
                                                   eps, weight_decay, grad_scale, t));
}

const kernel_ops *ops_profile_wrap(const kernel_ops *inner) {
    if (prof.inner) {
        CHECK(prof.inner == inner, "ops profile already wraps the %s backend", prof.inner->name);
        return &prof.table;
    }
    prof.inner = inner;
    /* Memory management and synchronize pass through: they are set-up, or
     * the profiler's own tool. */
    prof.table = *inner;
    kernel_ops *t = &prof.table;
    t->zero = p_zero;
    t->upload = p_upload;
    t->download = p_download;
    t->upload_f32 = p_upload_f32;
    t->download_f32 = p_download_f32;
    t->encoder_forward = p_encoder_forward;
    t->encoder_backward = p_encoder_backward;
    t->layernorm_forward = p_layernorm_forward;
    t->residual_layernorm_forward = p_residual_layernorm_forward;
    t->layernorm_backward = p_layernorm_backward;
    t->matmul_forward = p_matmul_forward;
    t->matmul_gelu_forward = p_matmul_gelu_forward;
    t->matmul_backward = p_matmul_backward;
    t->matmul_backward_gelu = p_matmul_backward_gelu;
    t->attention_forward = p_attention_forward;
    t->attention_backward = p_attention_backward;
    t->classifier_forward_backward = p_classifier_forward_backward;
    t->loss_accumulate = p_loss_accumulate;
    t->sum_f32 = p_sum_f32;
    t->gelu_forward = p_gelu_forward;
    t->grad_sum_squares = p_grad_sum_squares;
    t->clip_scale = p_clip_scale;
    t->nonfinite_fold = p_nonfinite_fold;
    t->adamw_update = p_adamw_update;
    return t;
}

void ops_profile_step_done(void) {
    const double now = now_ms();
    const int counted = prof.marks > 0; /* the first step is warm-up */
    for (int i = 0; i < prof.n_entries; i++) {
        op_entry *e = &prof.entries[i];
        if (counted) {
            e->ms += e->pending_ms;
            e->calls += e->pending_calls;
        }
        e->pending_ms = 0.0;
        e->pending_calls = 0;
    }
    if (counted) prof.step_ms += now - prof.last_mark_ms;
    prof.last_mark_ms = now;
    prof.marks++;
}

static int by_ms_desc(const void *a, const void *b) {
    const double x = ((const op_entry *)a)->ms, y = ((const op_entry *)b)->ms;
    return (x < y) - (x > y);
}

void ops_profile_print(FILE *out) {
    const int steps = prof.marks - 1;
    if (steps < 1 || prof.step_ms <= 0.0) return;
    op_entry sorted[MAX_ENTRIES];
    memcpy(sorted, prof.entries, (size_t)prof.n_entries * sizeof(op_entry));
    qsort(sorted, (size_t)prof.n_entries, sizeof(op_entry), by_ms_desc);
    const double step = prof.step_ms / steps;
    fprintf(out, "per-op profile (%s backend): mean of %d step(s) after 1 warm-up step; each op "
                 "timed between two synchronizes\n",
            prof.inner->name, steps);
    fprintf(out, "%-44s %10s %10s %9s\n", "op", "calls/step", "ms/step", "% of step");
    double ops_ms = 0.0, calls = 0.0;
    for (int i = 0; i < prof.n_entries; i++) {
        const op_entry *e = &sorted[i];
        if (e->calls == 0) continue;
        const double ms = e->ms / steps;
        fprintf(out, "%-44s %10.1f %10.3f %9.1f\n", e->label, (double)e->calls / steps, ms,
                100.0 * ms / step);
        ops_ms += ms;
        calls += (double)e->calls / steps;
    }
    fprintf(out, "%-44s %10.1f %10.3f %9.1f\n", "all ops", calls, ops_ms, 100.0 * ops_ms / step);
    fprintf(out, "%-44s %10s %10.3f %9.1f\n", "untimed (host work between ops)", "",
            step - ops_ms, 100.0 * (step - ops_ms) / step);
    fprintf(out, "%-44s %10s %10.3f %9.1f\n", "step (profiled)", "", step, 100.0);
    fflush(out);
}
