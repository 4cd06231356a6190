/* Standard output that goes away under a run: the reader of a pipe ended
 * (`gpt2_ddp ... | head -3`) or the terminal closed. SIGPIPE is ignored
 * (signals.h), so the writes fail instead of killing the run with no
 * checkpoint; the run goes on without its console, says so once on standard
 * error and writes its output to /dev/null from then on: every record is in
 * metrics.jsonl. */
#ifndef GPT2_TRAIN_SAFETY_STREAMS_H
#define GPT2_TRAIN_SAFETY_STREAMS_H

/* Flushes standard output; the first time that fails, the note (naming
 * run_dir's metrics.jsonl) and the switch to /dev/null. */
void streams_check(const char *run_dir);
#endif
