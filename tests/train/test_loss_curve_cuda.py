#!/usr/bin/env python3
"""Loss curve of the trainer against PyTorch, step by step: gpt2_ddp trains a
small GPT-2 on the nlp-corpus shards; PyTorch trains the same model
(tests/lib/gpt2_torch.py) from the trainer's own initial weights
(save_init=1 -> init.h5) on the same batches with the same AdamW, learning-rate
schedule and clipping, and the two losses must agree at every step.

Batches: the trainer logs none, so this file rebuilds its sample order from
src/data/loader.c (splitmix64-seeded Fisher-Yates per epoch over the samples
of the strcmp-sorted shards; step s reads global positions [s*S, (s+1)*S)).
The cpu mode checks that reimplementation: an fp32 trainer against float64
PyTorch agrees to 1e-4 only on the very same batches (a different batch
changes the loss by ~1e-2 after a few steps).

Modes:
  cuda: the bf16 CUDA backend against PyTorch with float32 weights and bf16
        autocast, 4 layers x 256 wide (heads of 64, as our flash attention
        needs), B=8, T=256, 200 steps: max |ours - torch| / torch < 1%.
  cuda-fp8: the same with fp8=1 (the blocks' linear layers in FP8, docs/fp8.md)
        against the same bf16 PyTorch: < 2% (FP8's coarser operands).
  cpu:  the fp32 CPU backend against float64 PyTorch, 2 layers x 64, B=2,
        T=32, gradient accumulation 2, 10 steps: < 1e-4.

usage: test_loss_curve_cuda.py GPT2_DDP WORK_DIR [--device cuda|cuda-fp8|cpu]
Exit 0 pass, 1 fail, 77 skipped (no GPU for cuda mode)."""
import argparse
import contextlib
import glob
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import gpt2_torch  # noqa: E402  (the reference model)

MODES = {
    "cuda": dict(n_layer=4, n_embd=256, n_head=4, micro_batch=8, seq_len=256, grad_accum=1,
                 max_steps=200, warmup_steps=20, lr=1e-3, tol=1e-2),
    "cuda-fp8": dict(n_layer=4, n_embd=256, n_head=4, micro_batch=8, seq_len=256, grad_accum=1,
                     max_steps=200, warmup_steps=20, lr=1e-3, tol=2e-2, extra=["fp8=1"]),
    "cpu": dict(n_layer=2, n_embd=64, n_head=2, micro_batch=2, seq_len=32, grad_accum=2,
                max_steps=10, warmup_steps=2, lr=3e-3, tol=1e-4),
}
OPT = dict(min_lr_frac=0.1, weight_decay=0.1, beta1=0.9, beta2=0.95, eps=1e-8, grad_clip=1.0,
           seed=1337)
TRAIN_GLOB = os.path.join(ROOT, "data", "nlp-corpus", "nlp_train_*.bin")

# ---- the trainer's sample order (src/data/loader.c) ----
M64 = (1 << 64) - 1


def splitmix64_mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class SplitMix64:
    def __init__(self, state):
        self.state = state

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        return splitmix64_mix(self.state)


def rng_below(rng, bound):
    """Uniform in [0, bound) without modulo bias (Lemire), as rng_below."""
    m = (rng.next() >> 32) * bound
    if (m & 0xFFFFFFFF) < bound:
        threshold = ((1 << 32) - bound) % bound
        while (m & 0xFFFFFFFF) < threshold:
            m = (rng.next() >> 32) * bound
    return m >> 32


def permutation(n, seed, epoch):
    rng = SplitMix64(splitmix64_mix(splitmix64_mix(seed) ^ epoch))
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng_below(rng, i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


class Samples:
    """Windows of T + 1 tokens of the shards, in the trainer's shuffled order."""

    def __init__(self, pattern, T, seed):
        self.T, self.seed = T, seed
        self.shards = []
        for path in sorted(glob.glob(pattern), key=lambda p: p.encode()):  # strcmp order
            header = np.fromfile(path, dtype=np.int32, count=256)
            tokens = np.fromfile(path, dtype=np.uint16, offset=256 * 4, count=int(header[2]))
            self.shards += [tokens[i * T:i * T + T + 1] for i in range((len(tokens) - 1) // T)]
        self.epoch, self.perm = None, None

    def at(self, position):
        epoch, index = divmod(position, len(self.shards))
        if epoch != self.epoch:
            self.epoch, self.perm = epoch, permutation(len(self.shards), self.seed, epoch)
        return self.shards[self.perm[index]]

    def batch(self, first, count):
        rows = np.stack([self.at(first + k) for k in range(count)]).astype(np.int64)
        return torch.from_numpy(rows[:, :-1]), torch.from_numpy(rows[:, 1:])


# ---- the trainer's schedule (src/train/schedule.c), cosine ----
def schedule_lr(step, lr, warmup, max_steps, min_frac):
    if step < warmup:
        return lr * (step + 1) / warmup
    ratio = min(1.0, (step - warmup) / (max_steps - warmup)) if max_steps > warmup else 1.0
    lr_min = lr * min_frac
    return lr_min + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - lr_min)


def run_trainer(binary, work, device, m):
    total_batch = m["micro_batch"] * m["seq_len"] * m["grad_accum"]
    args = [binary, os.path.join(ROOT, "configs", "tiny.ini"), f"device={torch_device(device)}",
            f"train_data={TRAIN_GLOB}", "eval_every=0", "log_every=1", "checkpoint_every=0",
            "save_init=1", "resume=none", "lr_schedule=cosine", f"out_dir={work}", "run_name=ours",
            f"total_batch={total_batch}", f"block_size={m['seq_len']}"]
    args += [f"{k}={m[k]}" for k in ("n_layer", "n_embd", "n_head", "micro_batch", "seq_len",
                                     "max_steps", "warmup_steps", "lr")]
    args += [f"{k}={v}" for k, v in OPT.items()] + m.get("extra", [])
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    run_dir = os.path.join(work, "ours")
    rows = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    losses = {r["step"]: r["loss"] for r in rows if r.get("type") == "step"}
    return [losses[s] for s in range(1, m["max_steps"] + 1)], os.path.join(run_dir, "init.h5")


def torch_device(mode):
    """The device a mode runs on: cuda-fp8 is cuda."""
    return "cpu" if mode == "cpu" else "cuda"


def run_torch(init_path, device, m):
    torch.set_num_threads(os.cpu_count() or 1)
    dtype = torch.float32 if device == "cuda" else torch.float64
    P = {k: v.to(device).requires_grad_() for k, v in gpt2_torch.load_h5(init_path, dtype).items()}
    groups = [{"params": [p for p in P.values() if p.dim() == 2], "weight_decay": OPT["weight_decay"]},
              {"params": [p for p in P.values() if p.dim() != 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=m["lr"], betas=(OPT["beta1"], OPT["beta2"]), eps=OPT["eps"])
    samples = Samples(TRAIN_GLOB, m["seq_len"], OPT["seed"])
    per_step = m["micro_batch"] * m["grad_accum"]
    # (built once: an old torch checks bf16 support even for a disabled autocast)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device == "cuda" else contextlib.nullcontext()
    losses = []
    for step in range(m["max_steps"]):
        idx, tgt = (t.to(device) for t in samples.batch(step * per_step, per_step))
        with autocast:
            loss = gpt2_torch.forward(P, idx, tgt, m["n_layer"], m["n_head"])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(P.values()), OPT["grad_clip"])
        for g in opt.param_groups:
            g["lr"] = schedule_lr(step, m["lr"], m["warmup_steps"], m["max_steps"], OPT["min_lr_frac"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("work")
    ap.add_argument("--device", choices=MODES, default="cuda")
    a = ap.parse_args()
    if torch_device(a.device) == "cuda" and not torch.cuda.is_available():
        print("SKIP: torch sees no GPU")
        return 77
    m = MODES[a.device]
    os.makedirs(a.work, exist_ok=True)
    ours, init_path = run_trainer(a.binary, a.work, a.device, m)
    ref = run_torch(init_path, torch_device(a.device), m)
    rel = [abs(o - r) / abs(r) for o, r in zip(ours, ref)]
    worst = max(range(len(rel)), key=rel.__getitem__)
    print(f"{'step':>5} {'ours':>10} {'torch':>10} {'rel diff':>10}")
    for s in sorted({0, worst, len(rel) - 1} | set(range(0, len(rel), max(1, len(rel) // 10)))):
        print(f"{s + 1:5d} {ours[s]:10.5f} {ref[s]:10.5f} {rel[s]:10.2e}")
    print(f"loss curve {a.device}: {len(rel)} steps, max rel diff {rel[worst]:.3e} at step "
          f"{worst + 1}, mean {sum(rel) / len(rel):.3e}, tolerance {m['tol']:g}; loss "
          f"{ref[0]:.4f} -> {ref[-1]:.4f} (torch)")
    ok = all(math.isfinite(x) for x in ours) and rel[worst] < m["tol"]
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
