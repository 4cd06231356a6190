#!/usr/bin/env python3
"""plot_run.py: one PNG of how runs trained, from their metrics.jsonl: train
and val loss, HellaSwag accuracy, learning rate and tokens/s over steps.
Several run directories are overlaid (one color each) to compare them.

usage: tools/plot_run.py RUN_DIR [RUN_DIR ...] [-o FILE]
  RUN_DIR   out_dir/run_name of a run (holds metrics.jsonl)
  -o FILE   the PNG to write (default: plot.png in the first RUN_DIR)

A resumed run appends to its metrics.jsonl; where a step is logged twice,
the later record wins. Needs matplotlib (Debian: python3-matplotlib, which
tools/setup.sh installs). Exit codes: 0 written, 1 missing matplotlib or
unwritable output, 2 a directory without metrics."""
import argparse
import json
import os
import sys


def fail(code, message):
    print(f"plot_run.py: error: {message}", file=sys.stderr)
    sys.exit(code)


def load_run(run_dir):
    """{"step": {step: record}, "eval": ..., "hellaswag": ...} of one run."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.isdir(run_dir):
        fail(2, f"{run_dir}: not a directory")
    if not os.path.isfile(path):
        fail(2, f"{run_dir}: no metrics.jsonl (not a gpt2_ddp run directory, or the run logged nothing)")
    kinds = {"step": {}, "eval": {}, "hellaswag": {}}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                kind = record["type"]
                step = None if kind == "run" else record["step"]  # run records: no step
            except (ValueError, KeyError, TypeError):
                fail(2, f"{path}:{number}: not a metrics record")
            if kind in kinds:
                kinds[kind][step] = record  # a resumed run's later record wins
    if not kinds["step"] and not kinds["eval"]:
        fail(2, f"{path}: no step or eval records to plot")
    return kinds


def series(records, key):
    steps = sorted(s for s, r in records.items() if key in r)
    return steps, [records[s][key] for s in steps]


def main():
    ap = argparse.ArgumentParser(description="Plot gpt2_ddp runs (metrics.jsonl) into one PNG.")
    ap.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    ap.add_argument("-o", "--output", metavar="FILE")
    args = ap.parse_args()
    runs = [(os.path.basename(os.path.normpath(d)), load_run(d)) for d in args.run_dirs]
    output = args.output or os.path.join(args.run_dirs[0], "plot.png")
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError:
        fail(1, "needs matplotlib: apt-get install python3-matplotlib (tools/setup.sh installs it)")

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    loss_ax, hella_ax, lr_ax, speed_ax = axes.flat
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    any_hellaswag = False
    for i, (name, run) in enumerate(runs):
        c = colors[i % len(colors)]
        steps, loss = series(run["step"], "loss")
        loss_ax.plot(steps, loss, color=c, lw=1, alpha=0.8, label=f"{name} train")
        steps, val = series(run["eval"], "val_loss")
        loss_ax.plot(steps, val, color=c, lw=2, ls="--", marker="o", ms=3, label=f"{name} val")
        steps, acc_norm = series(run["hellaswag"], "acc_norm")
        if steps:
            any_hellaswag = True
            hella_ax.plot(steps, acc_norm, color=c, marker="o", ms=3, label=f"{name} acc_norm")
            steps, acc = series(run["hellaswag"], "acc")
            hella_ax.plot(steps, acc, color=c, ls=":", label=f"{name} acc")
        steps, lr = series(run["step"], "lr")
        lr_ax.plot(steps, lr, color=c, label=name)
        steps, tps = series(run["step"], "tokens_per_s")
        speed_ax.plot(steps, tps, color=c, lw=1, label=name)
        print(f"{name}: {len(run['step'])} steps, {len(run['eval'])} evals, "
              f"{len(run['hellaswag'])} HellaSwag evals")
    if any_hellaswag:
        hella_ax.axhline(0.25, color="gray", lw=0.8, ls="--", label="chance (0.25)")
    else:
        hella_ax.text(0.5, 0.5, "no HellaSwag records\n(set hellaswag_data)", ha="center",
                      va="center", transform=hella_ax.transAxes, color="gray")
    for ax, title, ylabel in ((loss_ax, "loss", "cross-entropy"),
                              (hella_ax, "HellaSwag", "accuracy"),
                              (lr_ax, "learning rate", "lr"),
                              (speed_ax, "throughput", "tokens/s")):
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.suptitle(" vs ".join(name for name, _ in runs))
    fig.tight_layout()
    try:
        fig.savefig(output, dpi=80)
    except OSError as e:
        fail(1, f"cannot write {output}: {e.strerror}")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
