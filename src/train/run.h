/* One training run's state, shared by its set-up and teardown (run.c), its
 * step loop and end (train.c) and its optimizer step (step.c). run_plan and
 * run_setup build it in an order that matters (see run.c); run_teardown
 * frees it in reverse. */
#ifndef GPT2_TRAIN_RUN_H
#define GPT2_TRAIN_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "ckpt/ckpt.h"
#include "ckpt/ckpt_async.h"
#include "config/config.h"
#include "data/loader.h"
#include "dist/comm.h"
#include "dist/ddp.h"
#include "dist/dist.h"
#include "io/ckpt_dir.h"
#include "kernels/ops.h"
#include "model/gpt2.h"
#include "optim/optimizer.h"
#include "train/observe/eta.h"
#include "train/observe/metrics.h"
#include "train/observe/watch.h"
#include "train/safety/memory.h"
#include "train/safety/nonfinite.h"
#include "train/safety/run_lock.h"
#include "train/safety/run_stop.h"

/* A file of the run directory: its name fits with the longest run_dir. */
#define RUN_PATH_MAX 1200

typedef struct run_state {
    const config *cfg;
    dist_state *dist;
    /* run_plan: what the run would be, also for a dry run */
    gpt2_layout lay;
    char config_text[16384]; /* the resolved config, printed and stored with the weights */
    char run_dir[1100];
    memory_estimate mem;
    /* run_setup: the backend, the run directory's guards, data, model, ranks */
    const kernel_ops *ops;
    double peak_flops, flops_per_token; /* for the MFU; peak_flops 0: unknown */
    run_watch *watch;
    run_lock lock;
    run_stop stopper;
    ckpt_start_plan plan; /* fresh, resumed, or finished (nothing to do) */
    bool resuming;
    char resume_dir[CKPT_PATH_MAX];
    bool do_eval;     /* validation loss (and HellaSwag) every eval_every steps */
    int eval_batches; /* cfg's, or fewer when val_data holds fewer windows */
    token_dataset train_ds, val_ds;
    data_loader train_ld, val_ld;
    gpt2_model model;
    float *host_params; /* lay.n_elements fp32: the initial weights, then scratch */
    communicator *comm; /* over dist->dp */
    data_parallel ddp;
    optimizer *opt;
    float lr; /* the step's learning rate (the schedule's, as the update applies it) */
    ckpt_ctx ckpt;
    bool async_saves;  /* checkpoint_async: decided before the run directory is claimed */
    ckpt_saver *saver; /* background saves; NULL: saves wait */
    ckpt_progress progress;
    char trace_path[RUN_PATH_MAX]; /* comm_trace's file of this rank */
    metrics_log log;
    int32_t *inputs, *targets; /* one micro-batch */
    nonfinite_guard guard;
    /* the loop */
    eta_clock eta;
    double step_start; /* clock_ms at the end of the previous step (or what followed it) */
    bool preempted, gave_up;
    int stop_reasons; /* STOP_* bits of the stop that ended the run */
} run_state;

/* The layout, the resolved config's text, the run directory's name and the
 * memory estimate; a dry run prints them (run_print_plan) and is done. */
void run_plan(run_state *r, const config *cfg, dist_state *dist);
/* Rank 0 prints the run's header and the memory estimate (itemised for a
 * dry run, one line otherwise). */
void run_print_plan(const run_state *r);
/* Everything else the loop needs, the checkpoint loaded when resuming;
 * false (nothing set up, no file touched) when the run in the run
 * directory is finished. Every check that can refuse the start (the resume
 * decision, data, init_from's weights) runs before the run directory is
 * created; the lock is taken before anything in it is written or moved. */
bool run_setup(run_state *r);
/* Frees what run_plan and run_setup built, releasing the run lock last. */
void run_teardown(run_state *r);
/* A checkpoint saved (waiting or in the background: ckpt_saved_fn): its
 * record in metrics.jsonl, and its time for the time-limit estimate. */
void run_note_save(void *run, const ckpt_save_report *rep);
/* The process exit code: EXIT_NONFINITE, EXIT_PREEMPTED or 0. */
int run_exit_code(const run_state *r);
/* path = run_dir/NAME, NAME from the format. */
void run_path(const run_state *r, char path[RUN_PATH_MAX], const char *name_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Rank 0: host_params as a weights file run_dir/FILE, said as "saved WHAT
 * to PATH". */
void run_save_weights(const run_state *r, const char *file, const char *what);
#endif
