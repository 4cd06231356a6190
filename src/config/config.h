/* Run configuration: an .ini file plus key=value overrides, validated with
 * errors that name the key, printed once and stored in every checkpoint. */
#ifndef GPT2_CONFIG_CONFIG_H
#define GPT2_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONFIG_STR_MAX 512
/* Keys whose value is a path (keys.c marks them): ${VAR} is expanded there. */
#define CONFIG_PATH_KEYS 8
/* Room for the key table's keys in config.origin (config_load checks it). */
#define CONFIG_KEYS_MAX 96

/* Where a key's value came from, in the order config_load applies them: a
 * later layer overrides an earlier one. Rules that depend on whether the
 * user chose a value (init_from's shape, val_data next to train_data, the
 * warm-up of a shorter run) read it. */
typedef enum { CONFIG_FROM_DEFAULT, CONFIG_FROM_FILE, CONFIG_FROM_COMMAND_LINE } config_origin;

typedef struct {
    /* model */
    int n_layer;           /* transformer blocks */
    int n_embd;            /* width C */
    int n_head;            /* heads; n_embd % n_head == 0 */
    int vocab_size;        /* real vocabulary, 50257 for GPT-2 */
    int padded_vocab_size; /* derived: vocab_size rounded up to a multiple of 128 */
    int block_size;        /* maximum context (rows of wpe) */

    /* batch */
    int micro_batch;     /* B: sequences per rank per micro-step */
    int seq_len;         /* T <= block_size */
    int64_t total_batch; /* tokens per optimizer step over all ranks */
    int grad_accum;      /* derived: total_batch / (micro_batch * seq_len * world) */
    int world;           /* derived: ranks the batch is planned for (dry_run_ranks or launched) */

    /* optimizer and schedule */
    double lr;                /* peak learning rate */
    double min_lr_frac;       /* final lr = lr * min_lr_frac */
    int warmup_steps;         /* linear warm-up from lr/warmup_steps to lr */
    char lr_schedule[16];     /* cosine | linear | constant | wsd (after warm-up) */
    double decay_frac;        /* wsd: the last share of max_steps that decays */
    char optimizer[8];        /* adamw | muon (optim/optimizer.h) */
    double muon_lr;           /* muon: the blocks' 2-D weights' peak lr */
    double muon_momentum;     /* muon: their Nesterov momentum */
    double muon_weight_decay; /* muon: their decoupled weight decay */
    double weight_decay;      /* decoupled, 2-D tensors only */
    double beta1, beta2, eps;
    double grad_clip; /* global-norm clip; 0 disables */
    int max_steps;

    /* intervals (0 disables) */
    int eval_every;
    int eval_batches; /* val micro-batches per evaluation, over all ranks together */
    int log_every;
    int checkpoint_every;     /* also at the last step; a pre-emption signal always saves */
    int keep_last;            /* complete checkpoints kept, older ones removed (0: all) */
    char checkpoint_async[8]; /* auto | true | false: saves written by a background thread */
    int max_bad_steps;        /* consecutive non-finite (skipped) steps that end the run */

    /* what users watch besides the loss (both need the tokenizer) */
    int hellaswag_examples; /* per evaluation: the first N of hellaswag_data (0: all) */
    int sample_every;       /* steps between text samples, plus one at the end (0: none) */
    int sample_tokens;      /* tokens per sample */
    char sample_prompt[CONFIG_STR_MAX];

    /* data, device, output */
    char train_data[CONFIG_STR_MAX]; /* glob pattern of .bin shards */
    char val_data[CONFIG_STR_MAX];
    char hellaswag_data[CONFIG_STR_MAX]; /* hellaswag_val.jsonl, scored at every evaluation */
    char tokenizer_dir[CONFIG_STR_MAX];  /* encoder.json + vocab.bpe (HellaSwag, samples) */
    char device[16];                     /* auto | cpu | cuda */
    uint64_t seed;
    char out_dir[CONFIG_STR_MAX];       /* runs go to out_dir/run_name */
    char run_name[CONFIG_STR_MAX];      /* empty: derived from the config file name */
    char resume[CONFIG_STR_MAX];        /* auto | none | a checkpoint (step or run directory) */
    char allow_changed[CONFIG_STR_MAX]; /* keys a resume may change: "lr,max_steps" */
    char init_from[CONFIG_STR_MAX]; /* weights of a new run: checkpoint, .h5, llm.c .bin, HF dir */
    double time_limit_min; /* wall-clock budget; 0: the Slurm job's end, if any; < 0: none */

    /* distributed */
    int zero_stage; /* 0: all-reduce DDP, 1: ZeRO-1 */
    double bucket_mb;
    bool comm_trace;           /* record bucket post times and the end of backward */
    char grad_reduce_dtype[8]; /* bf16 | fp32: precision of the GPU gradient reduction */
    char comm_transport[16];   /* auto | nccl | copy_engines: what moves ZeRO-1's data */
    double nccl_timeout_s;     /* a pending NCCL collective this old ends the job */
    double mpi_timeout_s;      /* CPU ranks: a rank silent this long while others wait ends it */
    bool dry_run;              /* print the memory report and exit */
    int dry_run_ranks;         /* with dry_run: plan for this many ranks (0: the launched world) */

    /* performance and diagnostics */
    bool recompute_gelu;    /* backward recomputes gelu(fch) instead of keeping it per block */
    bool fp8;               /* the blocks' linear layers in FP8 (device=cuda, compute cap. 8.9+) */
    int fp8_amax_history;   /* fp8: steps of amax history behind each scale */
    int fp8_margin;         /* fp8: binades of headroom under the format's largest value */
    char fp8_fast_accum[8]; /* fp8: none | forward | all: products with fast accumulation */
    bool fp8_attn_proj;     /* fp8: attn.c_proj in FP8 too (false: bf16) */
    bool fp8_lm_head;      /* fp8: the tied lm head's products in FP8 too (training; false: bf16) */
    bool memory_preflight; /* GPUs: refuse a run whose estimate does not fit the free memory */
    bool profile_ops;      /* time every kernel-table op; rank 0 prints a per-op table at the end */
    char profile_ops_timing[8];   /* sync | stream: how profile_ops times an op */
    bool matmul_autotune;         /* device=cuda: GEMM algorithms chosen by timing the candidates */
    bool attention_hopper;        /* device=cuda: wgmma attention where the build and GPU have it */
    bool attention_deterministic; /* device=cuda: dq added in a fixed order (wgmma kernels) */
    bool save_init;               /* write the initial weights to out_dir/run_name/init.h5 */

    /* Not keys: the path keys as written where ${VAR} expansion changed them,
     * in key-table order of the path keys ("" where it did not), printed by
     * config_format as comments. */
    char path_written[CONFIG_PATH_KEYS][CONFIG_STR_MAX]; /* not a key */
    /* Not keys: per key, in key-table order, where its value came from (a
     * config_origin), and what config_load changed on its own, for rank 0
     * to print ("" when nothing). */
    unsigned char origin[CONFIG_KEYS_MAX]; /* not a key */
    char load_note[512];                   /* not a key */
    /* Not a key: run_name was left empty and is the config file's stem. */
    bool run_name_from_stem; /* not a key */
} config;

/* Loads defaults, then the .ini file at path (may be NULL), then each
 * "key=value" in overrides, then expands ${VAR} in the path keys from this
 * rank's environment. Any problem fails every rank with exit code 2 and a
 * message naming the key (an unset variable on any rank too). The config
 * file's stem is stored in run_name when run_name is left empty. Each key's
 * origin is recorded. A warmup_steps longer than a max_steps set after it
 * (the defaults' 700 with --max_steps=10) is shortened to the same fraction
 * of the run it had, and load_note says so. */
void config_load(config *cfg, const char *path, int n_overrides, char *const *overrides);

/* Where key name's value came from; name must be a key. */
config_origin config_key_origin(const config *cfg, const char *name);

/* Checks ranges and consistency and fills in the derived fields, for a job
 * of launched_world ranks (a dry run with dry_run_ranks plans for that many
 * instead); fails with exit code 2 naming the key and value. What a backend
 * can run (device=auto, the head sizes of its attention) is the backend's
 * to check (train/backend.h). */
void config_validate(config *cfg, int launched_world);

/* "key = value" lines for every key, in table order; returns bytes written
 * (like snprintf). The text parses back into the same config: path values
 * are the expanded ones (with '$' escaped where needed), each followed by
 * a "# KEY as written: ..." comment where expansion changed it. */
size_t config_format(const config *cfg, char *buf, size_t len);

/* Every key with its default and meaning, for --help. */
void config_print_help(FILE *out);

/* lr_schedule = wsd: the steps at the end of the run over which the lr
 * decays, decay_frac of max_steps rounded to the nearest step (the
 * schedule, optim/schedule.h, and config_validate's check agree on it). */
int config_wsd_decay_steps(const config *cfg);
#endif
