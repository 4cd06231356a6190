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
  cuda-fp8: the same with fp8=1 (the blocks' linear layers and the tied lm
        head in FP8, docs/fp8.md) against the same bf16 PyTorch: < 2% (FP8's
        coarser operands).
  cuda-fp8-bf16-head: the same with the lm head in bf16 (fp8_lm_head=0): < 2%.
  cuda-fp8-accum: cuda-fp8 in two micro-steps of B=4 a step (the same
        tokens a step), so that the second holds the first's FP8 copies
        of the weights (docs/fp8.md): < 2%.
  cpu:  the fp32 CPU backend against float64 PyTorch, 2 layers x 64, B=2,
        T=32, gradient accumulation 2, 10 steps: < 1e-4.
  cpu-muon: optimizer=muon, the fp32 CPU backend against float64 PyTorch
        with the Muon oracle of tests/lib/muon_torch.py (AdamW for the rest),
        2 layers x 64, 20 steps: losses < 1e-4, and after the 20th step
        every parameter of Muon's matrices within 1e-4 of the largest of its
        tensor (AdamW's within 2e-3: see compare_params).
  cuda-muon: optimizer=muon on GPT-2 124M (12 x 768), B=8, T=1024, 300
        steps, against PyTorch (bf16 autocast, Newton-Schulz in bf16 as
        published): < 3% (BF16 noise over a longer, larger run).

usage: test_loss_curve_cuda.py GPT2_DDP WORK_DIR [--device MODE] (MODE: one of those above)
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
import muon_torch  # noqa: E402  (the Muon oracle)

MODES = {
    "cuda": dict(n_layer=4, n_embd=256, n_head=4, micro_batch=8, seq_len=256, grad_accum=1,
                 max_steps=200, warmup_steps=20, lr=1e-3, tol=1e-2),
    "cuda-fp8": dict(n_layer=4, n_embd=256, n_head=4, micro_batch=8, seq_len=256, grad_accum=1,
                     max_steps=200, warmup_steps=20, lr=1e-3, tol=2e-2, extra=["fp8=1"]),
    "cuda-fp8-bf16-head": dict(n_layer=4, n_embd=256, n_head=4, micro_batch=8, seq_len=256,
                               grad_accum=1, max_steps=200, warmup_steps=20, lr=1e-3, tol=2e-2,
                               extra=["fp8=1", "fp8_lm_head=0"]),
    "cuda-fp8-accum": dict(n_layer=4, n_embd=256, n_head=4, micro_batch=4, seq_len=256,
                           grad_accum=2, max_steps=200, warmup_steps=20, lr=1e-3, tol=2e-2,
                           extra=["fp8=1"]),
    "cpu": dict(n_layer=2, n_embd=64, n_head=2, micro_batch=2, seq_len=32, grad_accum=2,
                max_steps=10, warmup_steps=2, lr=3e-3, tol=1e-4),
    "cpu-muon": dict(n_layer=2, n_embd=64, n_head=2, micro_batch=2, seq_len=32, grad_accum=2,
                     max_steps=20, warmup_steps=2, lr=3e-3, tol=1e-4, muon=True, param_tol=1e-4,
                     adamw_param_tol=2e-3),
    "cuda-muon": dict(n_layer=12, n_embd=768, n_head=12, micro_batch=8, seq_len=1024,
                      grad_accum=1, max_steps=300, warmup_steps=30, lr=1.8e-3, tol=3e-2,
                      muon=True),
}
MUON = dict(muon_lr=0.02, muon_momentum=0.95, muon_weight_decay=0.01)
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
    if m.get("muon"):
        args += ["optimizer=muon"] + [f"{k}={v}" for k, v in MUON.items()]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    run_dir = os.path.join(work, "ours")
    rows = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    losses = {r["step"]: r["loss"] for r in rows if r.get("type") == "step"}
    return [losses[s] for s in range(1, m["max_steps"] + 1)], run_dir


def torch_device(mode):
    """The device a mode runs on: the cuda-fp8 modes and cuda-muon are cuda."""
    return "cpu" if mode.startswith("cpu") else "cuda"


def run_torch(init_path, device, m):
    """The reference run's losses, and its parameters after the last step."""
    torch.set_num_threads(os.cpu_count() or 1)
    dtype = torch.float32 if device == "cuda" else torch.float64
    P = {k: v.to(device).requires_grad_() for k, v in gpt2_torch.load_h5(init_path, dtype).items()}
    muon = None
    if m.get("muon"):
        muon = muon_torch.Muon({n: p for n, p in P.items() if muon_torch.is_muon(n, p)},
                               MUON["muon_momentum"], MUON["muon_weight_decay"],
                               torch.bfloat16 if device == "cuda" else dtype)
    rest = {n: p for n, p in P.items() if not (muon and n in muon.params)}
    groups = [{"params": [p for p in rest.values() if p.dim() == 2], "weight_decay": OPT["weight_decay"]},
              {"params": [p for p in rest.values() if p.dim() != 2], "weight_decay": 0.0}]
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
        lr = schedule_lr(step, m["lr"], m["warmup_steps"], m["max_steps"], OPT["min_lr_frac"])
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        if muon:
            muon.step(MUON["muon_lr"] * lr / m["lr"])
        for p in P.values():
            p.grad = None
        losses.append(loss.item())
    return losses, {n: p.detach() for n, p in P.items()}


def compare_params(run_dir, ref, tol, adamw_tol):
    """Our parameters after the last step (the final model.h5) against the
    reference's: per tensor max |ours - ref| / max |ref|, Muon's tensors
    within tol. AdamW's get adamw_tol: Adam divides by sqrt(v), so where a
    gradient element is ~1e-6 of its tensor's largest, fp32 rounding alone
    moves its update by a sizeable part of lr (test_torch_parity.py checks
    AdamW step by step for that reason); small tensors that moved little
    from zero (the biases) show it most."""
    ours = gpt2_torch.load_h5(os.path.join(run_dir, "model.h5"), torch.float64)
    ok = True
    for group, limit in (("Muon", tol), ("AdamW", adamw_tol)):
        worst, bad, n = (0.0, ""), [], 0
        for name, r in ref.items():
            if muon_torch.is_muon(name, r) != (group == "Muon"):
                continue
            n += 1
            r = r.to("cpu", torch.float64)
            e = (ours[name][:r.shape[0]] - r).abs().max().item() / max(r.abs().max().item(), 1e-30)
            worst = max(worst, (e, name))
            if not e < limit:
                bad.append(f"{name}: {e:.3e}")
        print(f"parameters after the last step, {group}'s: {n} tensors, worst max-rel error "
              f"{worst[0]:.3e} ({worst[1]}), tolerance {limit:g}")
        for line in bad:
            print(f"  over tolerance: {line}")
        ok = ok and n > 0 and not bad
    return ok


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
    ours, run_dir = run_trainer(a.binary, a.work, a.device, m)
    ref, ref_params = run_torch(os.path.join(run_dir, "init.h5"), torch_device(a.device), m)
    rel = [abs(o - r) / abs(r) for o, r in zip(ours, ref)]
    worst = max(range(len(rel)), key=rel.__getitem__)
    print(f"{'step':>5} {'ours':>10} {'torch':>10} {'rel diff':>10}")
    for s in sorted({0, worst, len(rel) - 1} | set(range(0, len(rel), max(1, len(rel) // 10)))):
        print(f"{s + 1:5d} {ours[s]:10.5f} {ref[s]:10.5f} {rel[s]:10.2e}")
    print(f"loss curve {a.device}: {len(rel)} steps, max rel diff {rel[worst]:.3e} at step "
          f"{worst + 1}, mean {sum(rel) / len(rel):.3e}, tolerance {m['tol']:g}; loss "
          f"{ref[0]:.4f} -> {ref[-1]:.4f} (torch)")
    ok = all(math.isfinite(x) for x in ours) and rel[worst] < m["tol"]
    if "param_tol" in m:
        ok = compare_params(run_dir, ref_params, m["param_tol"], m["adamw_param_tol"]) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
