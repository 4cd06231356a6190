#!/usr/bin/python3
"""HellaSwag scoring against PyTorch. A small file in the official format
(tests/lib/hellaswag_data.py: 40 examples from nlp-corpus sentences,
one with non-ASCII text, one with a context longer than seq_len) is scored

  - during training: gpt2_ddp trains the tiny config for 30 steps with
    hellaswag_data set (cpu: 2 MPI ranks, each a disjoint share; cuda: one
    GPU) and logs HellaSwag at steps 0 and 30;
  - by gpt2_eval on the run's model.h5 with the trainer's micro_batch and
    seq_len, which writes every example's tokens and per-ending losses;

and the reference recomputes each ending's loss with the GPT-2 of
gpt2_torch.py in float64 from the same weights, as build-nanogpt does:
rows = encode(ctx) + encode(" " + ending), cross-entropy over the ending's
tokens only, acc = argmin of the sum, acc_norm = argmin of the mean; rows
longer than seq_len lose context tokens from the front (the rule of
src/eval/hellaswag.h, written again here). Tokens are checked against the
npm gpt-3-encoder where node is available.

Checks: per example and ending, |ours - ref| of the mean loss per token
<= TOL (cpu 1e-5: fp32 against float64; cuda: bf16 activations, 2% of the
loss), the same scored token counts and cut flags; ours chooses the
reference's ending wherever the reference's margin exceeds twice the
tolerance; the trainer's final counts equal gpt2_eval's; gpt2_eval's val
loss equals the trainer's final one.

usage: test_hellaswag_parity.py GPT2_DDP GPT2_EVAL WORK_DIR [--device cpu|cuda]
Exit 0 pass, 1 fail, 77 skipped (cuda without a GPU or CUDA build)."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the GPU machines' python3 has torch; CI's Debian python3 must
    print("SKIP: no torch" if "cuda" in sys.argv else "FAIL: no torch (python3-torch)")
    sys.exit(77 if "cuda" in sys.argv else 1)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import gpt2_torch  # noqa: E402  (the reference model)
import hellaswag_data  # noqa: E402

N_EXAMPLES, STEPS, B, T = 40, 30, 8, 64  # tiny.ini: micro_batch 8, seq_len 64
TOL = {"cpu": 1e-5, "cuda": 2e-2}  # cpu absolute; cuda relative to the mean loss


def run(cmd, log):
    print("+", " ".join(cmd), flush=True)
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    if rc != 0:
        sys.stdout.write(open(log).read())
        raise SystemExit(f"FAIL: exit code {rc}")
    return open(log).read()


def train(args, hs_path):
    """The trainer with hellaswag_data; returns its metrics records."""
    cmd = [args.gpt2_ddp, "configs/tiny.ini", f"max_steps={STEPS}", "warmup_steps=5",
           f"eval_every={STEPS}", "eval_batches=4", "log_every=10", f"hellaswag_data={hs_path}",
           f"out_dir={args.work}", "run_name=train", f"device={args.device}"]
    if args.device == "cpu":
        cmd = ["mpirun", "--bind-to", "none", "--oversubscribe", "-np", "2"] + cmd
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = run(cmd, os.path.join(args.work, "train.log"))
    print("\n".join(l for l in out.splitlines() if l.startswith(("hella", "eval", "HellaSwag"))))
    return [json.loads(l) for l in open(os.path.join(args.work, "train", "metrics.jsonl"))]


def evaluate(args, hs_path, scores_path):
    out = run([args.gpt2_eval, "--weights", os.path.join(args.work, "train", "model.h5"),
               "--hellaswag", hs_path, "--scores", scores_path, "--batch", str(B),
               "--seq-len", str(T), "--val", "data/nlp-corpus/nlp_val_*.bin",
               "--val-batches", "4", "--device", args.device], os.path.join(args.work, "eval.log"))
    print(out.strip())
    val = float(re.search(r"^val loss (\S+)", out, re.M).group(1))
    return val, [json.loads(l) for l in open(scores_path)]


def reference_rows(ctx, endings):
    """The four (inputs, targets, first scored target, cut) rows of one
    example for a model of T positions, as documented in hellaswag.h."""
    longest = max(len(e) for e in endings)
    skip = min(max(0, len(ctx) + longest - 1 - T), len(ctx) - 1)
    rows, cut = [], skip > 0
    for end in endings:
        full = (ctx + end)[skip:]
        n_in = len(full) - 1
        if n_in > T:
            n_in, cut = T, True
        rows.append((full[:n_in], full[1:n_in + 1], len(ctx) - skip - 1))
    return rows, cut


def reference_losses(P, n_layer, n_head, ctx, endings):
    """(loss sums, scored token counts, cut) of one example, float64."""
    rows, cut = reference_rows(ctx, endings)
    sums, counts = [], []
    for inp, tgt, first in rows:
        logits = gpt2_torch.logits(P, torch.tensor([inp]), n_layer, n_head)[0]
        losses = F.cross_entropy(logits, torch.tensor(tgt), reduction="none")
        sums.append(losses[first:].sum().item())
        counts.append(len(tgt) - first)
    return sums, counts, cut


def check_tokens(examples, scores):
    """Our tokens against the npm gpt-3-encoder (the tokenizer's oracle)."""
    package = os.path.join(ROOT, "data", "npm", "gpt-3-encoder")
    if not shutil.which("node") or not os.path.isdir(package):
        print("tokens: node or data/npm/gpt-3-encoder missing here: not checked against npm")
        return []
    texts = []
    for e in examples:
        texts += [e["ctx"]] + [" " + end for end in e["endings"]]
    script = ("const {encode} = require(process.argv[1]);"
              "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(texts.map(t => encode(t))));")
    oracle = json.loads(subprocess.run(["node", "-e", script, package], input=json.dumps(texts),
                                       capture_output=True, text=True, check=True).stdout)
    failures = []
    for i, s in enumerate(scores):
        ours = [s["ctx_tokens"]] + s["ending_tokens"]
        if ours != oracle[5 * i:5 * i + 5]:
            failures.append(f"example {i}: tokens differ from gpt-3-encoder")
    print(f"tokens: {len(scores)} examples x 5 texts equal to npm gpt-3-encoder's: {not failures}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gpt2_ddp")
    ap.add_argument("gpt2_eval")
    ap.add_argument("work")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    if args.device == "cuda":
        version = subprocess.run([args.gpt2_ddp, "--version"], capture_output=True, text=True).stdout
        if "cuda (" not in version or ", 0 GPU(s)" in version:
            print("SKIP: no CUDA backend or no GPU visible")
            return 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    hs_path = os.path.join(args.work, "hellaswag_val.jsonl")
    examples = hellaswag_data.make_examples(ROOT, N_EXAMPLES, long_context_words=90)
    hellaswag_data.write_jsonl(hs_path, examples)

    records = train(args, hs_path)
    hella = {r["step"]: r for r in records if r["type"] == "hellaswag"}
    val_trainer = [r["val_loss"] for r in records if r["type"] == "eval" and r["step"] == STEPS][-1]
    failures = []
    if sorted(hella) != [0, STEPS] or any(h["n"] != N_EXAMPLES for h in hella.values()):
        failures.append(f"trainer: HellaSwag records {sorted(hella)}, expected steps 0 and {STEPS} over {N_EXAMPLES} examples")

    val_eval, scores = evaluate(args, hs_path, os.path.join(args.work, "scores.jsonl"))
    # eval_batches counts the job's batches, whatever the rank count: the trainer's
    # 4 (over 2 ranks on cpu, 1 GPU) are gpt2_eval's 4. On a GPU the two processes
    # may time different GEMM algorithms as fastest, hence the wider tolerance.
    rel = 1e-6 if args.device == "cpu" else 1e-3
    if abs(val_eval - val_trainer) > rel * val_trainer:
        failures.append(f"val loss: gpt2_eval {val_eval} vs trainer {val_trainer}")
    failures += check_tokens(examples, scores)

    P = gpt2_torch.load_h5(os.path.join(args.work, "train", "model.h5"))
    n_layer = sum(1 for k in P if k.endswith(".ln_1.weight"))
    n_head = 1  # tiny.ini
    tol = TOL[args.device]
    worst_abs = worst_rel = 0.0
    ref_correct = ref_correct_norm = 0
    for s in scores:
        sums, counts, cut = reference_losses(P, n_layer, n_head, s["ctx_tokens"], s["ending_tokens"])
        if counts != s["n_tokens"] or cut != s["cut"]:
            failures.append(f"example {s['index']}: scored tokens {s['n_tokens']} cut {s['cut']}, "
                            f"reference {counts} cut {cut}")
            continue
        ours_mean = [a / n for a, n in zip(s["loss_sum"], counts)]
        ref_mean = [a / n for a, n in zip(sums, counts)]
        for o, r in zip(ours_mean, ref_mean):
            worst_abs = max(worst_abs, abs(o - r))
            worst_rel = max(worst_rel, abs(o - r) / abs(r))
        bound = [tol if args.device == "cpu" else tol * abs(r) for r in ref_mean]
        if any(abs(o - r) > b for o, r, b in zip(ours_mean, ref_mean, bound)):
            failures.append(f"example {s['index']}: mean losses {ours_mean} vs reference {ref_mean}")
        for key, ref_values in (("pred", sums), ("pred_norm", ref_mean)):
            ref_choice = min(range(4), key=lambda j: ref_values[j])
            margin = sorted(ref_values)[1] - sorted(ref_values)[0]
            scale = max(counts) if key == "pred" else 1
            if s[key] != ref_choice and margin > 2 * max(bound) * scale:
                failures.append(f"example {s['index']}: {key} {s[key]}, reference {ref_choice} (margin {margin:.3g})")
            if key == "pred":
                ref_correct += ref_choice == s["label"]
            else:
                ref_correct_norm += ref_choice == s["label"]
    ours_correct = sum(s["pred"] == s["label"] for s in scores)
    ours_correct_norm = sum(s["pred_norm"] == s["label"] for s in scores)
    print(f"per-ending mean loss per token vs PyTorch float64: max |diff| {worst_abs:.3e}, "
          f"max rel {worst_rel:.3e} (tolerance {tol:g}{'' if args.device == 'cpu' else ' relative'})")
    print(f"acc_norm: ours {ours_correct_norm}/{len(scores)}, reference {ref_correct_norm}; "
          f"acc: ours {ours_correct}, reference {ref_correct}; "
          f"examples cut to fit: {sum(s['cut'] for s in scores)}")
    final = hella.get(STEPS)
    if final:
        # Same weights, same forwards: equal on the CPU; the GPU may break a near-tie either way.
        slack = 0 if args.device == "cpu" else 1
        if (abs(final["correct_norm"] - ours_correct_norm) > slack
                or abs(final["correct"] - ours_correct) > slack):
            failures.append(f"trainer's final HellaSwag {final['correct_norm']}/{final['correct']} "
                            f"vs gpt2_eval {ours_correct_norm}/{ours_correct}")
    if sum(s["cut"] for s in scores) != 1:
        failures.append("expected exactly one example cut to fit seq_len (the long one)")
    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
