#!/usr/bin/python3
"""Checks that runs are identical to a reference run, bit for bit: the loss
of every step and every validation loss in metrics.jsonl (written with 17
digits, so equal text is the equal double), and every tensor of the final
model.h5. Used for runs that must not differ at all: the same rank count
under srun and mpirun, and a run pre-empted, requeued and resumed against
an uninterrupted one.
usage: compare_runs.py REF_RUN_DIR RUN_DIR..."""
import json
import os
import sys

import h5py
import numpy as np


def records(run_dir):
    """{step: loss} and {step: val_loss}; a step logged twice must agree."""
    steps, evals = {}, {}
    for line in open(os.path.join(run_dir, "metrics.jsonl")):
        r = json.loads(line)
        table, key = (steps, "loss") if r["type"] == "step" else (evals, "val_loss")
        if key not in r:
            continue
        if r["step"] in table and table[r["step"]] != r[key]:
            sys.exit(f"{run_dir}: step {r['step']} logged twice with different {key}")
        table[r["step"]] = r[key]
    return steps, evals


def main():
    ref = sys.argv[1]
    ref_steps, ref_evals = records(ref)
    ref_model = h5py.File(os.path.join(ref, "model.h5"), "r")
    failed = False
    for run in sys.argv[2:]:
        steps, evals = records(run)
        problems = []
        if sorted(steps) != sorted(ref_steps):
            problems.append(f"steps logged {min(steps)}..{max(steps)} ({len(steps)}), "
                            f"reference {min(ref_steps)}..{max(ref_steps)} ({len(ref_steps)})")
        problems += [f"step {s}: loss {steps[s]!r} != {ref_steps[s]!r}"
                     for s in sorted(ref_steps) if s in steps and steps[s] != ref_steps[s]]
        if sorted(evals) != sorted(ref_evals):
            problems.append(f"evals at {sorted(evals)}, reference at {sorted(ref_evals)}")
        problems += [f"eval {s}: val loss {evals[s]!r} != {ref_evals[s]!r}"
                     for s in sorted(ref_evals) if s in evals and evals[s] != ref_evals[s]]
        model = h5py.File(os.path.join(run, "model.h5"), "r")
        names = []
        ref_model.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        differing = [n for n in names if not np.array_equal(ref_model[n][()], model[n][()])]
        if differing:
            problems.append(f"{len(differing)} of {len(names)} tensors differ, e.g. {differing[0]}")
        last = max(ref_steps)
        print(f"{run}: {len(steps)} steps, {len(evals)} evals, {len(names)} tensors: "
              f"{'identical' if not problems else 'DIFFERENT'} "
              f"(final loss {steps.get(last)!r}, reference {ref_steps[last]!r})")
        for p in problems[:10]:
            print("  " + p)
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
