/* Per-op timing of a kernel table (see ops_profile.h). Each timed op is one
 * wrapper: synchronize, clock, the wrapped op, synchronize, clock (or, timed
 * on the stream, a mark before and after it, read once a step); its time
 * goes to an entry keyed by the op's name (matmuls also by shape, since the
 * classifier's and the MLP's GEMMs differ by 10x). Times collect in a pending
 * column and are committed per step, so that the warm-up step and whatever
 * runs after the last step can be left out.
 * Each wrapper also counts what its op must do at the least: floating-point
 * operations of its matrix products, and bytes (every input read once, every
 * output written once, in the backend's storage type). Against the device's
 * measured ceilings they give the op's floor, max(flops / GEMM rate,
 * bytes / copy bandwidth): the table shows how far each op is from it.
 * Products with FP8 operands count their FLOPs apart, against the device's
 * FP8 GEMM rate. */
#include "kernels/ops_profile.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/fail.h"

enum { MAX_ENTRIES = 256, LABEL_LEN = 64 };

typedef struct {
    char label[LABEL_LEN];
    long calls, pending_calls;
    double ms, pending_ms;
    double flops, pending_flops, bytes, pending_bytes; /* the least work, summed */
    double fp8_flops, pending_fp8_flops;               /* FLOPs of FP8 products */
} op_entry;

/* A timed op on the stream: its entry and its first mark (the next is its end). */
typedef struct {
    int entry, mark;
} marked_op;

static struct {
    const kernel_ops *inner;
    kernel_ops table;
    bool on_stream; /* ops timed by the backend's stream marks, not synchronizes */
    op_entry entries[MAX_ENTRIES];
    int n_entries;
    marked_op marked[OPS_MARKS / 2]; /* on_stream: the ops marked since the last read */
    int n_marks;
    double mark_ms[OPS_MARKS];
    int marks;           /* step ends seen; steps counted = marks - 1 */
    double last_mark_ms; /* clock at the previous step end */
    double step_ms;      /* wall time of the counted steps */
} prof;

static op_entry *entry(const char *label) {
    for (int i = 0; i < prof.n_entries; i++)
        if (strcmp(prof.entries[i].label, label) == 0) return &prof.entries[i];
    CHECK(prof.n_entries < MAX_ENTRIES, "ops profile: more than %d distinct ops", MAX_ENTRIES);
    op_entry *e = &prof.entries[prof.n_entries++];
    snprintf(e->label, sizeof e->label, "%s", label);
    return e;
}

/* On the stream: the marks so far are read (waiting for the last one) and
 * each marked op's time goes to its entry's pending column. */
static void read_marks(void) {
    if (prof.n_marks == 0) return;
    prof.inner->marks_read(prof.mark_ms, prof.n_marks);
    for (int i = 0; i < prof.n_marks / 2; i++) {
        const marked_op *m = &prof.marked[i];
        prof.entries[m->entry].pending_ms += prof.mark_ms[m->mark + 1] - prof.mark_ms[m->mark];
    }
    prof.n_marks = 0;
}

/* Synchronized, the queue is drained first, so the clock then measures this
 * op alone; on the stream, the op's first mark (its index). */
static double op_begin(void) {
    if (prof.on_stream) {
        if (prof.n_marks + 2 > OPS_MARKS) read_marks();
        prof.inner->mark_record(prof.n_marks);
        return (double)prof.n_marks++;
    }
    prof.inner->synchronize();
    return clock_ms();
}

static void op_end(const char *label, double t0, double flops, double fp8_flops, double bytes) {
    op_entry *e = entry(label);
    if (prof.on_stream) {
        prof.inner->mark_record(prof.n_marks);
        prof.marked[prof.n_marks / 2] = (marked_op){(int)(e - prof.entries), (int)t0};
        prof.n_marks++;
    } else {
        prof.inner->synchronize();
        e->pending_ms += clock_ms() - t0;
    }
    e->pending_calls++;
    e->pending_flops += flops;
    e->pending_fp8_flops += fp8_flops;
    e->pending_bytes += bytes;
}

/* An op that moves `bytes` at the least and multiplies `flops` in matrix
 * products (0: memory-bound or not a device op). */
#define TIMED_COST(label, flops, bytes, call)                                                      \
    do {                                                                                           \
        const double t0_ = op_begin();                                                             \
        call;                                                                                      \
        op_end(label, t0_, (double)(flops), 0.0, (double)(bytes));                                 \
    } while (0)
/* The same for a product with FP8 operands. */
#define TIMED_COST_FP8(label, fp8_flops, bytes, call)                                              \
    do {                                                                                           \
        const double t0_ = op_begin();                                                             \
        call;                                                                                      \
        op_end(label, t0_, 0.0, (double)(fp8_flops), (double)(bytes));                             \
    } while (0)
#define TIMED(label, call) TIMED_COST(label, 0, 0, call)

/* Bytes of n elements of the backend's storage type. */
static double st(double n) { return n * (double)prof.inner->elem_bytes; }

/* "matmul_forward 32768x768->2304": rows x input width -> output width. */
static const char *shape_label(char *buf, size_t len, const char *op, int N, int C, int OC) {
    snprintf(buf, len, "%s %dx%d->%d", op, N, C, OC);
    return buf;
}

/* dinp = dout W (skipped without dinp) and dW += dout^T inp. */
static double matmul_backward_flops(const void *dinp, int N, int C, int OC) {
    return (dinp ? 4.0 : 2.0) * N * C * OC;
}

/* dout and inp read (W too for dinp, pre for GELU's backward), dinp
 * written, dW (and dbias) read and written. */
static double matmul_backward_bytes(const void *dinp, const void *dbias, const void *pre, int N,
                                    int C, int OC) {
    double n = (double)N * OC + (double)N * C + 2.0 * OC * C;
    if (dinp) n += (double)OC * C + (double)N * C;
    if (pre) n += (double)N * C;
    if (dbias) n += 2.0 * OC;
    return st(n);
}

/* ---- the wrappers, one per timed op, in ops.h's order ---- */

static void p_zero(void *ptr, size_t bytes) {
    TIMED_COST("zero", 0, bytes, prof.inner->zero(ptr, bytes));
}

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
    const double n = (double)B * T;
    TIMED_COST("encoder_forward", 0, 4 * n + st(2 * n * C + (double)T * C),
               prof.inner->encoder_forward(out, inp, wte, wpe, B, T, C));
}

static void p_encoder_backward(void *dwte, void *dwpe, const void *dout, const int32_t *inp, int B,
                               int T, int C, int V) {
    /* dout and tokens read, dwpe updated; the dwte rows it touches depend on
     * the tokens, left out (a lower bound) */
    const double n = (double)B * T;
    TIMED_COST("encoder_backward", 0, 4 * n + st(n * C + 2.0 * T * C),
               prof.inner->encoder_backward(dwte, dwpe, dout, inp, B, T, C, V));
}

static void p_layernorm_forward(void *out, float *mean, float *rstd, const void *inp,
                                const void *weight, const void *bias, int N, int C) {
    TIMED_COST("layernorm_forward", 0, 8.0 * N + st(2.0 * N * C + 2.0 * C),
               prof.inner->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C));
}

static void p_residual_layernorm_forward(void *residual, void *out, float *mean, float *rstd,
                                         const void *a, const void *b, const void *weight,
                                         const void *bias, int N, int C) {
    TIMED_COST("residual_layernorm_forward", 0, 8.0 * N + st(4.0 * N * C + 2.0 * C),
               prof.inner->residual_layernorm_forward(residual, out, mean, rstd, a, b, weight, bias,
                                                      N, C));
}

static void p_layernorm_backward(void *dinp, void *dweight, void *dbias, const void *dout,
                                 const void *inp, const void *weight, const float *mean,
                                 const float *rstd, int N, int C, void *dinp_colsum) {
    /* dout, x and the old dinp read, dinp written (+=), dweight/dbias updated */
    TIMED_COST("layernorm_backward", 0, 8.0 * N + st(4.0 * N * C + 7.0 * C),
               prof.inner->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd,
                                              N, C, dinp_colsum));
}

static void p_matmul_forward(void *out, const void *inp, const void *weight, const void *bias,
                             int N, int C, int OC) {
    char label[LABEL_LEN];
    TIMED_COST(shape_label(label, sizeof label, "matmul_forward", N, C, OC), 2.0 * N * C * OC,
               st((double)N * C + (double)OC * C + (double)N * OC + OC),
               prof.inner->matmul_forward(out, inp, weight, bias, N, C, OC));
}

/* matmul_forward's bytes plus the residual read */
static void p_matmul_residual_forward(void *out, const void *residual, const void *inp,
                                      const void *weight, const void *bias, int N, int C, int OC) {
    char label[LABEL_LEN];
    TIMED_COST(shape_label(label, sizeof label, "matmul_residual_forward", N, C, OC),
               2.0 * N * C * OC, st((double)N * C + (double)OC * C + 2.0 * N * OC + OC),
               prof.inner->matmul_residual_forward(out, residual, inp, weight, bias, N, C, OC));
}

static void p_matmul_gelu_forward(void *out, void *pre, const void *inp, const void *weight,
                                  const void *bias, int N, int C, int OC) {
    char label[LABEL_LEN];
    TIMED_COST(shape_label(label, sizeof label, "matmul_gelu_forward", N, C, OC), 2.0 * N * C * OC,
               st((double)N * C + (double)OC * C + 2.0 * N * OC + OC),
               prof.inner->matmul_gelu_forward(out, pre, inp, weight, bias, N, C, OC));
}

static void p_matmul_backward(void *dinp, void *dweight, void *dbias, const void *dout,
                              const void *inp, const void *weight, int N, int C, int OC) {
    char label[LABEL_LEN];
    TIMED_COST(shape_label(label, sizeof label, "matmul_backward", N, C, OC),
               matmul_backward_flops(dinp, N, C, OC),
               matmul_backward_bytes(dinp, dbias, NULL, N, C, OC),
               prof.inner->matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC));
}

static void p_matmul_backward_gelu(void *dinp, void *dweight, void *dbias, const void *dout,
                                   const void *inp, const void *weight, const void *pre, int N,
                                   int C, int OC, void *dpre_colsum) {
    char label[LABEL_LEN];
    TIMED_COST(shape_label(label, sizeof label, "matmul_backward_gelu", N, C, OC),
               matmul_backward_flops(dinp, N, C, OC),
               matmul_backward_bytes(dinp, dbias, pre, N, C, OC),
               prof.inner->matmul_backward_gelu(dinp, dweight, dbias, dout, inp, weight, pre, N, C,
                                                OC, dpre_colsum));
}

static void p_fp8_cast(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *in,
                       int rows, int cols, const float *scale, fp8_format format) {
    const double n = (double)rows * cols;
    TIMED_COST(out_t ? "fp8_cast (with transpose)" : "fp8_cast", 0, st(n) + (out_t ? 2.0 : 1.0) * n,
               prof.inner->fp8_cast(out, out_t, stats, in, rows, cols, scale, format));
}

static void p_classifier_forward_backward_fp8(void *logits, float *losses, const int32_t *targets,
                                              int N, int V, int Vp, float dloss, uint8_t *out8,
                                              const float *scale) {
    /* the logits read, dlogits written as one byte each */
    TIMED_COST("classifier_forward_backward_fp8", 0, 8.0 * N + st((double)N * Vp) + (double)N * Vp,
               prof.inner->classifier_forward_backward_fp8(logits, losses, targets, N, V, Vp, dloss,
                                                           out8, scale));
}

static void p_fp8_transpose(uint8_t *out_t, const uint8_t *in, int rows, int cols) {
    TIMED_COST("fp8_transpose", 0, 2.0 * rows * cols,
               prof.inner->fp8_transpose(out_t, in, rows, cols));
}

static void p_fp8_cast_batch(const fp8_cast_job *jobs, int n, fp8_format format) {
    double bytes = 0;
    for (int j = 0; j < n; j++) {
        const double e = (double)jobs[j].rows * jobs[j].cols;
        bytes += st(e) + (jobs[j].out_t ? 2.0 : 1.0) * e;
    }
    TIMED_COST("fp8_cast_batch", 0, bytes, prof.inner->fp8_cast_batch(jobs, n, format));
}

static void p_layernorm_forward_fp8(void *residual, uint8_t *out, uint8_t *out_t,
                                    fp8_cast_stats *stats, float *mean, float *rstd, const void *a,
                                    const void *b, const void *weight, const void *bias, int N,
                                    int C, const float *scale, fp8_format format) {
    const double n = (double)N * C;
    TIMED_COST(residual ? "residual_layernorm_forward_fp8" : "layernorm_forward_fp8", 0,
               8.0 * N + st((residual ? 3.0 : 1.0) * n + 2.0 * C) + (out_t ? 2.0 : 1.0) * n,
               prof.inner->layernorm_forward_fp8(residual, out, out_t, stats, mean, rstd, a, b,
                                                 weight, bias, N, C, scale, format));
}

static void p_fp8_gelu_cast(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *pre,
                            int rows, int cols, const float *scale, fp8_format format) {
    const double n = (double)rows * cols;
    TIMED_COST("fp8_gelu_cast", 0, st(n) + (out_t ? 2.0 : 1.0) * n,
               prof.inner->fp8_gelu_cast(out, out_t, stats, pre, rows, cols, scale, format));
}

static void p_fp8_gelu_backward_cast(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                                     void *colsum, const void *d, const void *pre, int rows,
                                     int cols, const float *scale, fp8_format format) {
    const double n = (double)rows * cols;
    TIMED_COST("fp8_gelu_backward_cast", 0, st(2.0 * n) + 2.0 * n,
               prof.inner->fp8_gelu_backward_cast(out, out_t, stats, colsum, d, pre, rows, cols,
                                                  scale, format));
}

static void p_layernorm_backward_fp8(void *dinp, void *dweight, void *dbias, const void *dout,
                                     const void *inp, const void *weight, const float *mean,
                                     const float *rstd, int N, int C, void *dinp_colsum,
                                     uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                                     const float *scale, fp8_format format) {
    /* layernorm_backward's bytes, and the FP8 copy and its transpose written */
    TIMED_COST("layernorm_backward_fp8", 0, 8.0 * N + st(4.0 * N * C + 7.0 * C) + 2.0 * N * C,
               prof.inner->layernorm_backward_fp8(dinp, dweight, dbias, dout, inp, weight, mean,
                                                  rstd, N, C, dinp_colsum, out, out_t, stats, scale,
                                                  format));
}

static void p_attention_forward_fp8(void *out, float *lse, const void *qkv, int B, int T, int C,
                                    int NH, uint8_t *out8, uint8_t *out8_t, fp8_cast_stats *stats,
                                    const float *scale, fp8_format format) {
    /* attention_forward's products and bytes, and the FP8 copy (and its
     * transpose) written */
    TIMED_COST("attention_forward_fp8", 2.0 * B * (double)T * T * C,
               st(4.0 * B * T * C) + 4.0 * B * NH * T + (out8_t ? 2.0 : 1.0) * B * T * C,
               prof.inner->attention_forward_fp8(out, lse, qkv, B, T, C, NH, out8, out8_t, stats,
                                                 scale, format));
}

static void p_attention_backward_fp8(void *dqkv, const void *dout, const void *qkv, const void *out,
                                     const float *lse, int B, int T, int C, int NH,
                                     void *dqkv_colsum, uint8_t *out8, uint8_t *out8_t,
                                     fp8_cast_stats *stats, const float *scale, fp8_format format) {
    /* attention_backward's products and bytes, less dQ's bf16 store, and
     * the FP8 copy and its transpose written */
    TIMED_COST("attention_backward_fp8", 5.0 * B * (double)T * T * C,
               st(7.0 * B * T * C + (dqkv_colsum ? 6.0 * C : 0.0)) + 4.0 * B * NH * T +
                   6.0 * B * T * C,
               prof.inner->attention_backward_fp8(dqkv, dout, qkv, out, lse, B, T, C, NH,
                                                  dqkv_colsum, out8, out8_t, stats, scale, format));
}

static void p_fp8_scaling_update(const fp8_scaling *s, int64_t step) {
    TIMED("fp8_scaling_update", prof.inner->fp8_scaling_update(s, step));
}

/* The FP8 products: their FLOPs (against the FP8 GEMM rate), and the bytes
 * of FP8 operands and bf16 outputs (and residuals). */
static void p_matmul_forward_fp8(void *out, const void *bias, int N, int C, int OC,
                                 const fp8_linear_operands *q) {
    char label[LABEL_LEN];
    TIMED_COST_FP8(shape_label(label, sizeof label, "matmul_forward_fp8", N, C, OC),
                   2.0 * N * C * OC, (double)N * C + (double)OC * C + st((double)N * OC + OC),
                   prof.inner->matmul_forward_fp8(out, bias, N, C, OC, q));
}
static void p_matmul_residual_forward_fp8(void *out, const void *residual, const void *bias, int N,
                                          int C, int OC, const fp8_linear_operands *q) {
    char label[LABEL_LEN];
    TIMED_COST_FP8(shape_label(label, sizeof label, "matmul_residual_forward_fp8", N, C, OC),
                   2.0 * N * C * OC, (double)N * C + (double)OC * C + st(2.0 * N * OC + OC),
                   prof.inner->matmul_residual_forward_fp8(out, residual, bias, N, C, OC, q));
}

static void p_matmul_backward_fp8(void *dinp, void *dweight, void *dbias, const void *dout,
                                  const void *pre, int N, int C, int OC, void *dpre_colsum,
                                  const fp8_linear_operands *q) {
    char label[LABEL_LEN];
    TIMED_COST_FP8(
        shape_label(label, sizeof label, pre ? "matmul_backward_gelu_fp8" : "matmul_backward_fp8",
                    N, C, OC),
        matmul_backward_flops(dinp, N, C, OC), matmul_backward_bytes(dinp, dbias, pre, N, C, OC),
        prof.inner->matmul_backward_fp8(dinp, dweight, dbias, dout, pre, N, C, OC, dpre_colsum, q));
}

static void p_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C,
                                int NH) {
    /* causal: QK^T and PV over half of the T x T scores */
    TIMED_COST("attention_forward", 2.0 * B * (double)T * T * C,
               st(4.0 * B * T * C) + 4.0 * B * NH * T,
               prof.inner->attention_forward(out, lse, qkv, B, T, C, NH));
}

static void p_attention_backward(void *dqkv, const void *dout, const void *qkv, const void *out,
                                 const float *lse, int B, int T, int C, int NH, void *dqkv_colsum) {
    /* five products (scores again, dV, dP, dQ, dK) over half the scores */
    TIMED_COST("attention_backward", 5.0 * B * (double)T * T * C,
               st(8.0 * B * T * C + (dqkv_colsum ? 6.0 * C : 0.0)) + 4.0 * B * NH * T,
               prof.inner->attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH, dqkv_colsum));
}

static void p_classifier_forward_backward(void *logits, float *losses, const int32_t *targets,
                                          int N, int V, int Vp, float dloss) {
    /* logits read, dlogits written over them */
    TIMED_COST("classifier_forward_backward", 0, 8.0 * N + st(2.0 * N * Vp),
               prof.inner->classifier_forward_backward(logits, losses, targets, N, V, Vp, dloss));
}

static void p_loss_accumulate(float *acc, const float *losses, int N) {
    TIMED_COST("loss_accumulate", 0, 12.0 * N, prof.inner->loss_accumulate(acc, losses, N));
}

static void p_sum_f32(double *sum, const float *x, size_t n) {
    TIMED_COST("sum_f32", 0, 4.0 * n, prof.inner->sum_f32(sum, x, n));
}

static void p_gelu_forward(void *out, const void *inp, size_t n) {
    TIMED_COST("gelu_forward", 0, st(2.0 * n), prof.inner->gelu_forward(out, inp, n));
}

static void p_grad_sum_squares(double *sum, const void *grad, size_t n) {
    TIMED_COST("grad_sum_squares", 0, st((double)n), prof.inner->grad_sum_squares(sum, grad, n));
}

static void p_clip_scale(float *scale, const double *sum_squares, double max_norm) {
    TIMED("clip_scale", prof.inner->clip_scale(scale, sum_squares, max_norm));
}

static void p_nonfinite_fold(double *sum_squares, const double *value) {
    TIMED("nonfinite_fold", prof.inner->nonfinite_fold(sum_squares, value));
}

static void p_adamw_update(void *params, float *master, const void *grad, float *m, float *v,
                           size_t n, const uint8_t *decay_chunks, const float *grad_scale,
                           const adamw_hyper *h) {
    /* fp32 master, m, v read and written; gradient read, parameter written */
    TIMED_COST(
        "adamw_update", 0, 24.0 * n + st(2.0 * n),
        prof.inner->adamw_update(params, master, grad, m, v, n, decay_chunks, grad_scale, h));
}

static void p_muon_momentum(void *x, float *buf, const void *grad, const muon_batch *b,
                            const float *grad_scale, float momentum) {
    /* gradient read, buffer read and written, x written */
    const double n = (double)b->rows * b->cols * b->count;
    TIMED_COST("muon_momentum", 0, 8.0 * n + st(2.0 * n),
               prof.inner->muon_momentum(x, buf, grad, b, grad_scale, momentum));
}

static void p_muon_orthogonalize(void *x, int count, int rows, int cols) {
    TIMED_COST("muon_orthogonalize", count * muon_newton_schulz_flops(rows, cols),
               st(2.0 * count * rows * cols), prof.inner->muon_orthogonalize(x, count, rows, cols));
}

static void p_muon_apply(void *params, float *master, const void *x, const muon_batch *b,
                         const float *grad_scale, const muon_hyper *h) {
    /* master read and written, x read, parameter written */
    const double n = (double)b->rows * b->cols * b->count;
    TIMED_COST("muon_apply", 0, 8.0 * n + st(2.0 * n),
               prof.inner->muon_apply(params, master, x, b, grad_scale, h));
}

const kernel_ops *ops_profile_wrap(const kernel_ops *inner, bool on_stream) {
    if (prof.inner) {
        CHECK(prof.inner == inner && prof.on_stream == on_stream,
              "ops profile already wraps the %s backend, timed %s", prof.inner->name,
              prof.on_stream ? "on the stream" : "by synchronizing");
        return &prof.table;
    }
    CHECK(!on_stream || (inner->mark_record && inner->marks_read),
          "the %s backend has no stream to time ops on: profile_ops_timing = sync", inner->name);
    prof.inner = inner;
    prof.on_stream = on_stream;
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
    t->matmul_residual_forward = p_matmul_residual_forward;
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
    t->muon_momentum = p_muon_momentum;
    t->muon_orthogonalize = p_muon_orthogonalize;
    t->muon_apply = p_muon_apply;
    if (inner->fp8_cast) { /* the backend has FP8 */
        t->fp8_cast = p_fp8_cast;
        t->fp8_scaling_update = p_fp8_scaling_update;
        t->fp8_cast_batch = p_fp8_cast_batch;
        t->layernorm_forward_fp8 = p_layernorm_forward_fp8;
        t->fp8_gelu_cast = p_fp8_gelu_cast;
        t->fp8_gelu_backward_cast = p_fp8_gelu_backward_cast;
        if (inner->layernorm_backward_fp8) t->layernorm_backward_fp8 = p_layernorm_backward_fp8;
        if (inner->attention_forward_fp8) t->attention_forward_fp8 = p_attention_forward_fp8;
        if (inner->attention_backward_fp8) t->attention_backward_fp8 = p_attention_backward_fp8;
        t->matmul_forward_fp8 = p_matmul_forward_fp8;
        t->matmul_residual_forward_fp8 = p_matmul_residual_forward_fp8;
        t->matmul_backward_fp8 = p_matmul_backward_fp8;
        if (inner->classifier_forward_backward_fp8)
            t->classifier_forward_backward_fp8 = p_classifier_forward_backward_fp8;
        if (inner->fp8_transpose) t->fp8_transpose = p_fp8_transpose;
    }
    return t;
}

void ops_profile_step_done(void) {
    if (prof.on_stream) read_marks(); /* waits for the step's last op */
    const double now = clock_ms();
    const int counted = prof.marks > 0; /* the first step is warm-up */
    for (int i = 0; i < prof.n_entries; i++) {
        op_entry *e = &prof.entries[i];
        if (counted) {
            e->ms += e->pending_ms;
            e->calls += e->pending_calls;
            e->flops += e->pending_flops;
            e->fp8_flops += e->pending_fp8_flops;
            e->bytes += e->pending_bytes;
        }
        e->pending_ms = 0.0;
        e->pending_calls = 0;
        e->pending_flops = 0.0;
        e->pending_fp8_flops = 0.0;
        e->pending_bytes = 0.0;
    }
    if (counted) prof.step_ms += now - prof.last_mark_ms;
    prof.last_mark_ms = now;
    prof.marks++;
}

static int by_ms_desc(const void *a, const void *b) {
    const double x = ((const op_entry *)a)->ms, y = ((const op_entry *)b)->ms;
    return (x < y) - (x > y);
}

void ops_profile_print(FILE *out, double gemm_flops_per_s, double fp8_flops_per_s,
                       double bytes_per_s) {
    const int steps = prof.marks - 1;
    if (steps < 1 || prof.step_ms <= 0.0) return;
    op_entry sorted[MAX_ENTRIES];
    memcpy(sorted, prof.entries, (size_t)prof.n_entries * sizeof(op_entry));
    qsort(sorted, (size_t)prof.n_entries, sizeof(op_entry), by_ms_desc);
    const double step = prof.step_ms / steps;
    const int floors = gemm_flops_per_s > 0.0 && bytes_per_s > 0.0;
    if (fp8_flops_per_s <= 0.0) fp8_flops_per_s = gemm_flops_per_s; /* not measured */
    fprintf(out, "per-op profile (%s backend): mean of %d step(s) after 1 warm-up step; %s\n",
            prof.inner->name, steps,
            prof.on_stream ? "each op timed on the stream as it ran (marks before and after it, "
                             "no synchronize between ops)"
                           : "each op timed between two synchronizes");
    if (floors)
        fprintf(out,
                "floor = max(matrix FLOPs / %.0f TFLOP/s (FP8 products: / %.0f), least bytes / "
                "%.0f GB/s), this device's measured GEMM and copy ceilings; rate = TFLOP/s of a "
                "matmul, GB/s of the rest\n",
                gemm_flops_per_s * 1e-12, fp8_flops_per_s * 1e-12, bytes_per_s * 1e-9);
    fprintf(out, "%-44s %10s %10s %9s", "op", "calls/step", "ms/step", "% of step");
    if (floors) fprintf(out, " %9s %8s %12s", "floor ms", "x floor", "rate");
    fprintf(out, "\n");
    double ops_ms = 0.0, calls = 0.0, floor_ms = 0.0;
    for (int i = 0; i < prof.n_entries; i++) {
        const op_entry *e = &sorted[i];
        if (e->calls == 0) continue;
        const double ms = e->ms / steps;
        fprintf(out, "%-44s %10.1f %10.3f %9.1f", e->label, (double)e->calls / steps, ms,
                100.0 * ms / step);
        const double flops = e->flops + e->fp8_flops;
        if (floors && (flops > 0.0 || e->bytes > 0.0)) {
            const double f_ms =
                (e->flops / gemm_flops_per_s + e->fp8_flops / fp8_flops_per_s) / steps * 1e3;
            const double b_ms = e->bytes / steps / bytes_per_s * 1e3;
            const double fl = f_ms > b_ms ? f_ms : b_ms;
            floor_ms += fl;
            if (flops > 0.0)
                fprintf(out, " %9.3f %8.2f %7.1f TF/s", fl, ms / fl, flops / steps / ms * 1e-9);
            else
                fprintf(out, " %9.3f %8.2f %7.0f GB/s", fl, ms / fl, e->bytes / steps / ms * 1e-6);
        }
        fprintf(out, "\n");
        ops_ms += ms;
        calls += (double)e->calls / steps;
    }
    fprintf(out, "%-44s %10.1f %10.3f %9.1f", "all ops", calls, ops_ms, 100.0 * ops_ms / step);
    if (floors) fprintf(out, " %9.3f %8.2f", floor_ms, ops_ms / floor_ms);
    fprintf(out, "\n");
    fprintf(out, "%-44s %10s %10.3f %9.1f\n",
            prof.on_stream ? "between ops (waits, idle stream)" : "untimed (host work between ops)",
            "", step - ops_ms, 100.0 * (step - ops_ms) / step);
    fprintf(out, "%-44s %10s %10.3f %9.1f\n", "step (profiled)", "", step, 100.0);
    fflush(out);
}
