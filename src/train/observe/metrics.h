/* Rank 0's step log: one human line per step on stdout and the same record
 * as a JSON line in <run_dir>/metrics.jsonl. */
#ifndef GPT2_TRAIN_OBSERVE_METRICS_H
#define GPT2_TRAIN_OBSERVE_METRICS_H

#include <stdio.h>

typedef struct {
    FILE *jsonl; /* NULL on ranks other than 0 */
    int max_steps;
    char path[1024];
} metrics_log;

typedef struct {
    int step; /* 1-based: optimizer steps completed */
    double loss, lr, grad_norm, ms, tokens_per_s;
    double mfu;              /* fraction of peak, < 0 when unknown (CPU) */
    double elapsed_s, eta_s; /* since training started; time left (< 0: unknown) */
} step_record;

/* Opens run_dir/metrics.jsonl for appending (rank 0 only). A record that
 * cannot be written (a full disk) ends the job with exit 1 naming the file. */
void metrics_open(metrics_log *log, const char *run_dir, int rank, int max_steps);
void metrics_close(metrics_log *log);
/* One record, a JSON object given as printf format, appended as a line
 * (rank 0 only: nothing elsewhere). */
__attribute__((format(printf, 2, 3))) void metrics_record(metrics_log *log, const char *fmt, ...);
void metrics_step(metrics_log *log, const step_record *r);
void metrics_eval(metrics_log *log, int step, double val_loss, double ms);
/* HellaSwag counts over all ranks: n examples, correct by total and by mean
 * loss per token, cut (examples shortened to fit seq_len). */
void metrics_hellaswag(metrics_log *log, int step, double n, double correct, double correct_norm,
                       double cut, double ms);
/* A step that updated nothing (non-finite loss or gradient norm): logged
 * whatever log_every says, as {"type":"skip", ...}; a NaN/Inf is null in
 * the JSON. in_a_row and total count the skipped steps. */
void metrics_skip(metrics_log *log, int step, double loss, double grad_norm, int in_a_row,
                  int max_in_a_row, int total);
#endif
