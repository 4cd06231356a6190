#!/usr/bin/python3
"""PyTorch parity of the CPU backend. A GPT-2 written here in plain PyTorch
(float64) is loaded with the trainer's weights and must reproduce, at every
step, the trainer's loss and the gradient of every named tensor (also under
gradient accumulation); torch.optim.AdamW with clip_grad_norm_, fed the same
gradients, must reproduce the trainer's parameters after each update.

Why gradients and updates are checked step by step: Adam divides by
sqrt(v), so for elements whose gradient is ~1e-6 of the tensor's largest,
fp32 rounding alone changes their update by a sizeable part of lr; an
end-to-end comparison then measures rounding, not correctness. The
end-to-end float64 run is still made and its loss trajectory compared.

usage: test_torch_parity.py PARITY_DRIVER WORK_DIR
Metrics: loss relative error; per tensor max|ours - ref| / max|ref|."""
import math
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import gpt2_torch  # noqa: E402  (the reference model)
from gpt2_torch import load_h5  # noqa: E402

L, C, NH, B, T, STEPS = 2, 64, 4, 4, 32, 3
V, VP = 50257, 50304
# Parameter updates: both sides fp32; torch computes the clip norm in fp32,
# we in double, so updates differ by a few ulps of the update (measured
# ~2e-6 of max|p| on biases that are themselves ~lr); a wrong formula shows
# at 1e-3 or more.
TOL_LOSS, TOL_GRAD, TOL_PARAM = 1e-5, 1e-4, 1e-5


def forward(P, idx, tgt):
    return gpt2_torch.forward(P, idx, tgt, L, NH, V)


def rel_err(ours, ref):
    scale = ref.abs().max().item()
    return (ours - ref).abs().max().item() / (scale if scale > 0 else 1.0)


def compare_all(ours, ref, tol, what):
    worst = (0.0, "")
    failures = []
    for name, r in ref.items():
        e = rel_err(ours[name], r)
        worst = max(worst, (e, name))
        if e > tol or not math.isfinite(e):
            failures.append(f"{name}: {e:.3e}")
    print(f"{what}: {len(ref)} tensors, worst max-rel error {worst[0]:.3e} ({worst[1]}), tolerance {tol:g}")
    return failures


def main():
    driver, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20240520)
    tokens = rng.integers(0, V, size=(STEPS, B, T + 1), dtype=np.int32)
    tokens_path = os.path.join(work, "tokens.bin")
    tokens.tofile(tokens_path)
    subprocess.run([driver, work, tokens_path, str(STEPS), str(B), str(T), str(L), str(C), str(NH)], check=True)
    losses = {}
    for line in open(os.path.join(work, "results.txt")):
        parts = line.split()
        losses[int(parts[1])] = float(parts[3])
    failures = []

    P0 = load_h5(os.path.join(work, "init.h5"))
    # GPT-2 initialisation: std 0.02, residual projections 0.02/sqrt(2L), LN gains 1, biases 0.
    std_fc = P0["h.0.mlp.c_fc.weight"].std().item()
    std_proj = P0["h.0.mlp.c_proj.weight"].std().item()
    print(f"init std: c_fc {std_fc:.5f} (0.02), c_proj {std_proj:.5f} ({0.02 / math.sqrt(2 * L):.5f})")
    if abs(std_fc - 0.02) > 0.001 or abs(std_proj - 0.02 / math.sqrt(2 * L)) > 0.001:
        failures.append("initialisation std")
    if P0["h.1.ln_2.weight"].ne(1).any() or P0["h.1.attn.c_attn.bias"].ne(0).any():
        failures.append("LayerNorm gains / biases not initialised to 1 / 0")

    def batch(s):
        return (torch.tensor(tokens[s, :, :T], dtype=torch.long), torch.tensor(tokens[s, :, 1:], dtype=torch.long))

    def torch_loss_and_grads(P_float, s):
        P = {k: v.clone().requires_grad_(True) for k, v in P_float.items()}
        loss = forward(P, *batch(s))
        loss.backward()
        return loss.item(), {k: v.grad for k, v in P.items()}

    # Gradients under accumulation: two half batches of batch 0 == the whole batch.
    _, ref0 = torch_loss_and_grads(P0, 0)
    failures += compare_all(load_h5(os.path.join(work, "grads0_accum.h5")), ref0, TOL_GRAD,
                            "gradients, batch 0 as 2 accumulated half batches")

    # Step by step: loss and gradients at the trainer's parameters, then
    # torch's AdamW (float32, as the trainer) applied to the trainer's gradients.
    P32 = {k: v.float().clone() for k, v in P0.items()}
    names = list(P32)
    decay = [P32[k] for k in names if P32[k].dim() == 2]
    no_decay = [P32[k] for k in names if P32[k].dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8, foreach=False)
    P_ours = P0
    for s in range(STEPS):
        loss, ref = torch_loss_and_grads(P_ours, s)
        e = abs(losses[s] - loss) / abs(loss)
        print(f"step {s}: loss ours {losses[s]:.9f} torch(f64) {loss:.9f} rel err {e:.3e} (tolerance {TOL_LOSS:g})")
        if e > TOL_LOSS:
            failures.append(f"step {s} loss rel err {e:.3e}")
        G = load_h5(os.path.join(work, f"grads_step{s}.h5"))
        failures += compare_all(G, ref, TOL_GRAD, f"step {s} gradients")
        for k in names:
            P32[k].grad = G[k].float()
        torch.nn.utils.clip_grad_norm_([P32[k] for k in names], 1.0)
        opt.step()
        P_ours = load_h5(os.path.join(work, f"params_step{s + 1}.h5"))
        failures += compare_all(P_ours, {k: v.double() for k, v in P32.items()}, TOL_PARAM,
                                f"step {s} parameters after AdamW")

    # End to end in float64: the loss trajectory of an independent run.
    P = {k: v.clone().requires_grad_(True) for k, v in P0.items()}
    opt64 = torch.optim.AdamW([{"params": [v for v in P.values() if v.dim() == 2], "weight_decay": 0.1},
                               {"params": [v for v in P.values() if v.dim() < 2], "weight_decay": 0.0}],
                              lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    for s in range(STEPS):
        opt64.zero_grad()
        loss = forward(P, *batch(s))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(P.values()), 1.0)
        opt64.step()
        e = abs(losses[s] - loss.item()) / abs(loss.item())
        print(f"end-to-end float64 run, step {s}: loss {loss.item():.9f} rel err {e:.3e}")
        if e > TOL_LOSS:
            failures.append(f"end-to-end step {s} loss rel err {e:.3e}")

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("PyTorch parity: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
