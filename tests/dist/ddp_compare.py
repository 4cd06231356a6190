#!/usr/bin/python3
"""Compares runs against the first one: the loss at every step and the final
parameters (model.h5). usage: ddp_compare.py WORK_DIR REF_RUN RUN...

Why runs differ at all: with N ranks the gradient of a weight is summed over
the global batch in another order (per-rank partial sums, then across ranks),
and fp32 addition is not associative. That rounding (~1e-7 relative per
step) is amplified a little by training; nothing else may differ.
Adam amplifies it most where the true gradient is zero: the key part of
attn.c_attn.bias (softmax ignores a shift of a whole score row) gets pure
rounding noise as gradient, which Adam turns into updates of about lr.
Tolerances: loss 2e-5 relative at every step; parameters norm-wise,
||ours - ref|| / ||ref||, 1e-5 over the whole model and 1e-3 per tensor.
Measured (2 cores, 2026-12-06, the 1536-token batch): losses within
1.3e-8, whole model 4.8e-7, worst tensor 1.6e-4 (h.1.attn.c_attn.bias)."""
import json
import os
import sys

import h5py
import numpy as np

TOL_LOSS, TOL_MODEL, TOL_TENSOR = 2e-5, 1e-5, 1e-3


def losses(run_dir):
    records = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
    return [r["loss"] for r in records if r["type"] == "step"]


def main():
    work, ref, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
    ref_losses = losses(os.path.join(work, ref))
    ref_params = h5py.File(os.path.join(work, ref, "model.h5"), "r")
    failed = False
    print(f"{'run':10} {'steps':>5} {'max loss rel diff':>18} {'model rel diff':>15} {'worst tensor':>13}")
    for run in runs:
        l = losses(os.path.join(work, run))
        assert len(l) == len(ref_losses), f"{run}: {len(l)} steps logged, expected {len(ref_losses)}"
        loss_diff = max(abs(a - b) / abs(b) for a, b in zip(l, ref_losses))
        p = h5py.File(os.path.join(work, run, "model.h5"), "r")
        num = den = worst = 0.0
        worst_name = ""
        for name in ref_params:
            r = np.array(ref_params[name], dtype=np.float64)
            o = np.array(p[name], dtype=np.float64)
            num += ((o - r) ** 2).sum()
            den += (r ** 2).sum()
            t = float(np.linalg.norm(o - r) / max(np.linalg.norm(r), 1e-12))
            if t >= worst:
                worst, worst_name = t, name
        model_diff = float(np.sqrt(num / den))
        ok = loss_diff <= TOL_LOSS and model_diff <= TOL_MODEL and worst <= TOL_TENSOR
        failed |= not ok
        print(f"{run:10} {len(l):5d} {loss_diff:18.3e} {model_diff:15.3e} {worst:13.3e} {'ok' if ok else 'FAIL'} ({worst_name})")
    print(f"tolerances: loss {TOL_LOSS:g}, model {TOL_MODEL:g}, tensor {TOL_TENSOR:g}; final loss {ref_losses[-1]:.6f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
