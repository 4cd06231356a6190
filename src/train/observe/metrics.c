/* Step and eval logging on rank 0 (see metrics.h). */
#include "train/observe/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/fail.h"
#include "base/files.h"
#include "train/observe/eta.h"

/* A crash while a record was written leaves a last line without its end;
 * records appended to it would make one line no reader can parse. The
 * cut record is dropped (it is not JSON), what comes before it kept. */
static void drop_cut_record(const char *path) {
    char why[4400];
    FILE *f = fopen_regular(path, "r+b", OPEN_NO_LINK, why, sizeof why);
    if (!f && errno == ENOENT) return; /* a new run: nothing to mend */
    if (!f) FAIL("%s", why);
    char buf[4096];
    off_t end = fseeko(f, 0, SEEK_END) == 0 ? ftello(f) : -1, keep = -1;
    for (off_t pos = end; pos > 0 && keep < 0;) {
        const size_t n = pos < (off_t)sizeof buf ? (size_t)pos : sizeof buf;
        pos -= (off_t)n;
        if (fseeko(f, pos, SEEK_SET) != 0 || fread(buf, 1, n, f) != n) break;
        if (pos + (off_t)n == end && buf[n - 1] == '\n') keep = end; /* whole: nothing cut */
        for (size_t i = n; i-- > 0 && keep < 0;)
            if (buf[i] == '\n') keep = pos + (off_t)i + 1;
        if (keep < 0 && pos == 0) keep = 0;
    }
    if (keep >= 0 && keep < end) {
        if (ftruncate(fileno(f), keep) != 0)
            FAIL("cannot drop the cut last record of %s: %s", path, strerror(errno));
        printf("note: %s ended in a cut record (%lld bytes, a crash while writing): dropped, "
               "the %lld bytes before it kept\n",
               path, (long long)(end - keep), (long long)keep);
    }
    fclose(f);
}

void metrics_open(metrics_log *log, const char *run_dir, int rank, int max_steps) {
    log->jsonl = NULL;
    log->max_steps = max_steps;
    if (rank != 0) return;
    snprintf(log->path, sizeof log->path, "%s/metrics.jsonl", run_dir);
    drop_cut_record(log->path);
    char why[4400];
    log->jsonl = fopen_regular(log->path, "a", OPEN_NO_LINK, why, sizeof why);
    if (!log->jsonl) FAIL("%s", why);
}

/* Each record reaches the file when it is logged, or the run stops: a log
 * that silently lost its lines (disk full) would be worse than none. */
static void flush_record(metrics_log *log) {
    if (fflush(log->jsonl) != 0 || ferror(log->jsonl))
        FAIL("cannot write %s: %s", log->path, strerror(errno));
}

void metrics_close(metrics_log *log) {
    if (log->jsonl && fclose(log->jsonl) != 0)
        FAIL("cannot write %s: %s", log->path, strerror(errno));
    log->jsonl = NULL;
}

void metrics_record(metrics_log *log, const char *fmt, ...) {
    if (!log->jsonl) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(log->jsonl, fmt, ap);
    va_end(ap);
    fputc('\n', log->jsonl);
    flush_record(log);
}

void metrics_step(metrics_log *log, const step_record *r) {
    if (!log->jsonl) return;
    char mfu_text[32] = "";
    if (r->mfu >= 0) snprintf(mfu_text, sizeof mfu_text, " | mfu %5.1f%%", 100.0 * r->mfu);
    char elapsed[32], eta[32];
    eta_format(r->elapsed_s, elapsed, sizeof elapsed);
    eta_format(r->eta_s, eta, sizeof eta);
    printf("step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %8.1f ms | %9.0f tok/s%s | %s "
           "elapsed, eta %s\n",
           r->step, log->max_steps, r->loss, r->lr, r->grad_norm, r->ms, r->tokens_per_s, mfu_text,
           elapsed, eta);
    fflush(stdout);
    /* Losses with 17 digits: they read back as the exact double, so runs
     * can be compared bit for bit (resume, rank counts). */
    fprintf(log->jsonl,
            "{\"type\":\"step\",\"step\":%d,\"loss\":%.17g,\"lr\":%.9g,\"grad_norm\":%.9g,"
            "\"ms\":%.3f,\"tokens_per_s\":%.1f",
            r->step, r->loss, r->lr, r->grad_norm, r->ms, r->tokens_per_s);
    if (r->mfu >= 0) fprintf(log->jsonl, ",\"mfu\":%.5f", r->mfu);
    fprintf(log->jsonl, ",\"elapsed_s\":%.3f", r->elapsed_s);
    if (r->eta_s >= 0) fprintf(log->jsonl, ",\"eta_s\":%.3f", r->eta_s);
    fprintf(log->jsonl, "}\n");
    flush_record(log);
}

void metrics_eval(metrics_log *log, int step, double val_loss, double ms) {
    if (!log->jsonl) return;
    printf("eval  %5d | val loss %.6f | %8.1f ms\n", step, val_loss, ms);
    fflush(stdout);
    fprintf(log->jsonl, "{\"type\":\"eval\",\"step\":%d,\"val_loss\":%.17g,\"ms\":%.3f}\n", step,
            val_loss, ms);
    flush_record(log);
}

/* JSON has no NaN or Inf: those values are written as null. */
static void json_number(char *buf, size_t len, double v) {
    if (isfinite(v))
        snprintf(buf, len, "%.17g", v);
    else
        snprintf(buf, len, "null");
}

void metrics_skip(metrics_log *log, int step, double loss, double grad_norm, int in_a_row,
                  int max_in_a_row, int total) {
    if (!log->jsonl) return;
    printf("step %5d/%d | skipped: non-finite loss or gradient norm (loss %g, norm %g), nothing "
           "updated | %d in a row (max_bad_steps %d), %d skipped in this run\n",
           step, log->max_steps, loss, grad_norm, in_a_row, max_in_a_row, total);
    fflush(stdout);
    char loss_text[32], norm_text[32];
    json_number(loss_text, sizeof loss_text, loss);
    json_number(norm_text, sizeof norm_text, grad_norm);
    fprintf(log->jsonl,
            "{\"type\":\"skip\",\"step\":%d,\"loss\":%s,\"grad_norm\":%s,\"in_a_row\":%d,"
            "\"skipped\":%d}\n",
            step, loss_text, norm_text, in_a_row, total);
    flush_record(log);
}

void metrics_hellaswag(metrics_log *log, int step, double n, double correct, double correct_norm,
                       double cut, double ms) {
    if (!log->jsonl) return;
    const double acc = n > 0 ? correct / n : 0.0, acc_norm = n > 0 ? correct_norm / n : 0.0;
    char cut_text[64] = "";
    if (cut > 0) snprintf(cut_text, sizeof cut_text, " | %.0f cut to fit seq_len", cut);
    printf("hella %5d | acc_norm %.4f (%.0f/%.0f) | acc %.4f | %8.1f ms%s\n", step, acc_norm,
           correct_norm, n, acc, ms, cut_text);
    fflush(stdout);
    fprintf(log->jsonl,
            "{\"type\":\"hellaswag\",\"step\":%d,\"acc\":%.9g,\"acc_norm\":%.9g,\"n\":%.0f,"
            "\"correct\":%.0f,\"correct_norm\":%.0f,\"cut\":%.0f,\"ms\":%.3f}\n",
            step, acc, acc_norm, n, correct, correct_norm, cut, ms);
    fflush(log->jsonl);
}
