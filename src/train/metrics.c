/* Step and eval logging on rank 0 (see metrics.h). */
#include "train/metrics.h"

#include <errno.h>
#include <string.h>

#include "dist/fail.h"
#include "train/eta.h"

void metrics_open(metrics_log *log, const char *run_dir, int rank, int max_steps) {
    log->jsonl = NULL;
    log->max_steps = max_steps;
    if (rank != 0) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
    log->jsonl = fopen(path, "a");
    if (!log->jsonl) FAIL("cannot open %s: %s", path, strerror(errno));
}

void metrics_close(metrics_log *log) {
    if (log->jsonl) fclose(log->jsonl);
    log->jsonl = NULL;
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
           r->step, log->max_steps, r->loss, r->lr, r->grad_norm, r->ms, r->tokens_per_s,
           mfu_text, elapsed, eta);
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
    fflush(log->jsonl);
}

void metrics_eval(metrics_log *log, int step, double val_loss, double ms) {
    if (!log->jsonl) return;
    printf("eval  %5d | val loss %.6f | %8.1f ms\n", step, val_loss, ms);
    fflush(stdout);
    fprintf(log->jsonl, "{\"type\":\"eval\",\"step\":%d,\"val_loss\":%.17g,\"ms\":%.3f}\n", step,
            val_loss, ms);
    fflush(log->jsonl);
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
