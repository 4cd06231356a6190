/* The run record: at every start, fresh or resumed, rank 0 appends one
 * {"type":"run", ...} line to metrics.jsonl before any other record of that
 * start, so that a reader (tools/plot_run.py) can split the file into the
 * segments of each start and knows what each one ran:
 *   {"type":"run","start_time":"2026-11-24T17:30:00Z","version":"0.1.0",
 *    "git":"1a2b3c4","world":2,"backend":"cpu","devices":["cpu"],
 *    "resumed_from_step":100,"tokens_per_step":1024,"config":{...}}
 * devices: each rank's GPU name in rank order with backend cuda, ["cpu"]
 * with backend cpu. config: every resolved key (config/json.h). A resumed
 * segment's steps supersede the earlier records of the same steps. */
#ifndef GPT2_TRAIN_OBSERVE_RUN_RECORD_H
#define GPT2_TRAIN_OBSERVE_RUN_RECORD_H

#include "config/config.h"
#include "dist/dist.h"
#include "train/observe/metrics.h"

/* The source revision (short git hash, or "unknown"), generated at build
 * time by cmake/git_rev.cmake. */
extern const char gpt2_git_rev[];

/* Collective (the device names are gathered to rank 0); rank 0 writes the
 * record to log. cfg->device is the resolved one (cpu or cuda). */
void run_record_write(metrics_log *log, const config *cfg, const dist_state *dist,
                      int resumed_from_step);
#endif
