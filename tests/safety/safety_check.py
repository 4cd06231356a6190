#!/usr/bin/python3
"""Checks for the run-safety tests (h5py and numpy only).

  safety_check.py same_tensors CKPT_A CKPT_B
      every dataset of model.h5 and of every shard (weights; master, m, v)
      and the optimizer step are bit for bit the same: a skipped step
      changed nothing (the step and data position differ)
  safety_check.py skip_reference CKPT RUN_DIR STEP
      writes RUN_DIR/step_<STEP>: the checkpoint CKPT, as a run that skipped
      the update of every step after CKPT's up to STEP would have it: the
      same tensors and optimizer step, the step counter and data position
      (samples consumed, each rank's loader position) moved on by those
      steps; COMPLETE rewritten for the new sizes; latest points at it
  safety_check.py skip_logged RUN STEP
      metrics.jsonl has a "skip" record for STEP (its loss finite, its
      gradient norm null) and no "step" record for it
"""
import glob
import json
import os
import shutil
import sys

import h5py
import numpy as np


def tensors(path):
    with h5py.File(path, "r") as f:
        out = {}
        f.visititems(lambda n, o: out.__setitem__(n, o[()].tobytes()) if isinstance(o, h5py.Dataset) else None)
        return out, int(f.attrs["optimizer_step"])


def cmd_same_tensors(a, b):
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(a, "*.h5")))
    assert names == sorted(os.path.basename(p) for p in glob.glob(os.path.join(b, "*.h5"))), "different files"
    n = 0
    for name in names:
        (ta, sa), (tb, sb) = tensors(os.path.join(a, name)), tensors(os.path.join(b, name))
        assert ta.keys() == tb.keys(), f"{name}: different datasets"
        diff = [k for k in ta if ta[k] != tb[k]]
        if diff or sa != sb:
            print(f"FAIL {name}: datasets differ {diff[:5]}, optimizer step {sa} vs {sb}")
            return 1
        n += len(ta)
    print(f"same tensors: {len(names)} files, {n} datasets bit for bit, optimizer step {sa}")
    return 0


def cmd_skip_reference(ckpt, run_dir, step):
    step = int(step)
    dst = os.path.join(run_dir, f"step_{step:08d}")
    os.makedirs(run_dir, exist_ok=True)
    shutil.copytree(ckpt, dst)
    with h5py.File(os.path.join(dst, "model.h5"), "r+") as f:
        skipped = step - int(f.attrs["step"])
        samples = skipped * int(f.attrs["total_batch"]) // int(f.attrs["seq_len"])
        f.attrs.modify("step", step)
        f.attrs.modify("samples_consumed", int(f.attrs["samples_consumed"]) + samples)
        f.attrs.modify("loader_position", f.attrs["loader_position"] + samples)
    for shard in glob.glob(os.path.join(dst, "shard_*.h5")):
        with h5py.File(shard, "r+") as f:
            f.attrs.modify("step", step)
    lines = open(os.path.join(dst, "COMPLETE")).read().splitlines()
    out = []
    for line in lines:
        if line.startswith("step "):
            line = f"step {step}"
        elif line.startswith("file "):
            name = line.split()[1]
            line = f"file {name} {os.path.getsize(os.path.join(dst, name))}"
        out.append(line)
    open(os.path.join(dst, "COMPLETE"), "w").write("\n".join(out) + "\n")
    link = os.path.join(run_dir, "latest")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.basename(dst), link)
    print(f"reference: {ckpt} as step {step} ({skipped} step(s) skipped, {samples} samples on)")
    return 0


def cmd_skip_logged(run, step):
    step = int(step)
    records = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
    skips = [r for r in records if r["type"] == "skip" and r["step"] == step]
    steps = [r for r in records if r["type"] == "step" and r["step"] == step]
    assert len(skips) == 1, f"{len(skips)} skip records for step {step}"
    assert not steps, f"step {step} was skipped but also logged as a step"
    r = skips[0]
    assert r["grad_norm"] is None and np.isfinite(r["loss"]), f"skip record {r}"
    print(f"step {step} logged as skipped: {json.dumps(r)}")
    return 0


if __name__ == "__main__":
    sys.exit({"same_tensors": cmd_same_tensors, "skip_reference": cmd_skip_reference,
              "skip_logged": cmd_skip_logged}[sys.argv[1]](*sys.argv[2:]))
