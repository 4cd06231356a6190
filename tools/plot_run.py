#!/usr/bin/env python3
"""plot_run.py: one PNG of how runs trained, from their metrics.jsonl: train
and val loss, HellaSwag accuracy, learning rate and tokens/s, over steps,
tokens or hours. Several run directories are overlaid (one color each, the
same in every panel) to compare them, and each run's validation loss is
compared with the first's at the evaluation steps both have (printed, and
in --dump): the largest relative difference and the last one.

usage: tools/plot_run.py RUN_DIR [RUN_DIR ...] [-o FILE] [--x step|tokens|time]
           [--smooth W] [--log-y] [--label NAME ...] [--tokens-per-step N]
           [--dump FILE.json]
  (tools/plot_run.py --help lists what each option does)

Restarts: every start of the trainer writes a {"type":"run"} record; a run
segment is that record and the records after it, up to the next one. A
segment resumed from step N supersedes every earlier record after step N
(a resume from an earlier checkpoint rewrites history), so the plot shows
what the final run went through, with a dashed line "resumed at step N".
Files written before run records existed are split where a step record does
not increase. The smoothing (smooth_curve: a line fitted over a window of
steps around each point) stays within a segment. The HellaSwag panel is
drawn only when a run has HellaSwag records; restart labels are stacked so
that they do not overlap.

Exit codes: 0 written, 1 matplotlib not importable or the output not
writable, 2 bad arguments or bad metrics (the data file and line named)."""
import argparse
import bisect
import json
import math
import os
import sys

KINDS = ("step", "eval", "hellaswag")
DEFAULT_WINDOW = 100  # steps of smoothing: tools/view_runs.py starts with the same
NUMBERS = {  # the fields plotted, per record type: each must be a number where present
    "step": ("loss", "lr", "tokens_per_s", "elapsed_s"),
    "eval": ("val_loss", ),
    "hellaswag": ("acc", "acc_norm"),
}


def fail(code, message):
    print(f"plot_run.py: error: {message}", file=sys.stderr)
    sys.exit(code)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class Segment:
    """One start of the trainer: from its run record (or, in an older file,
    from a step that did not increase) to the next start."""

    def __init__(self, start, run, line, first_step=None):
        self.start = start  # the step it continues from: records after it are its own
        self.run = run  # the run record, None in a file from before run records
        self.line = line  # where it begins in metrics.jsonl, for messages
        self.first_step = first_step  # first logged step (segments without a run record)
        self.last_step = None
        self.tokens_per_step = None
        if run is not None:
            tps = run.get("tokens_per_step", run["config"].get("total_batch"))
            if is_number(tps) and tps > 0:
                self.tokens_per_step = tps


def record_problem(record, where):
    """What is wrong with a metrics.jsonl record (the message names where and
    the fix), or None; tools/view_runs.py checks lines with it too."""
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        return (f'{where}: a line without a "type" (every metrics.jsonl line is a JSON object '
                'with "type"); fix or delete that line')
    kind = record["type"]
    if kind == "run":
        if not isinstance(record.get("config"), dict):
            return (f'{where}: a run record without "config" (the resolved config the trainer '
                    'writes at each start); fix or delete that line')
        resumed = record.get("resumed_from_step", 0)
        if not isinstance(resumed, int) or isinstance(resumed, bool) or resumed < 0:
            return (f'{where}: the run record\'s "resumed_from_step" is {json.dumps(resumed)}, '
                    'not a step number (0 for a fresh start); fix or delete that line')
        return None
    if kind not in KINDS:
        return None  # skips, bucket timings, ...: not plotted
    step = record.get("step")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        return (f'{where}: a "{kind}" record without a step number ("step": '
                f'{json.dumps(step)}); fix or delete that line')
    for key in NUMBERS[kind]:
        if key in record and not is_number(record[key]):
            return (f'{where}: "{key}" is {json.dumps(record[key])}, not a number; fix or '
                    'delete that line')
    return None


def check_record(record, path, number):
    problem = record_problem(record, f"{path}:{number}")
    if problem:
        fail(2, problem)


def read_lines(path):
    """(line number, record) of each line; a cut-off last line is skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        fail(2, f"cannot read {path}: {e.strerror}")
    except UnicodeDecodeError:
        fail(2, f"{path}: not a text file (metrics.jsonl holds one JSON object a line)")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as e:
            if number == len(lines) and not line.endswith("\n"):
                print(f"plot_run.py: warning: {path}:{number}: the last line was cut off "
                      "(the run stopped while writing it); it is skipped", file=sys.stderr)
                continue
            fail(2, f"{path}:{number}: not JSON ({e.msg}, column {e.colno}): "
                 f"{line.strip()[:60]!r}; fix or delete that line")
        check_record(record, path, number)
        yield number, record


def load_run(run_dir):
    """The run's final history: {"history": {kind: {step: (record, segment)}},
    "chain": the segments it is made of, in order, "path": metrics.jsonl}."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.isdir(run_dir):
        fail(2, f"{run_dir}: not a directory")
    if not os.path.isfile(path):
        fail(2, f"{run_dir}: no metrics.jsonl (not a gpt2_ddp run directory, or the run "
             "logged nothing)")
    history = {kind: {} for kind in KINDS}
    chain = []

    def begin(segment):
        # Everything after the step it continues from is superseded.
        while chain and chain[-1].start >= segment.start:
            dropped = chain.pop()
            for records in history.values():
                for step in [s for s, (_, seg) in records.items() if seg is dropped]:
                    del records[step]
        for records in history.values():
            for step in [s for s in records if s > segment.start]:
                del records[step]
        chain.append(segment)

    for number, record in read_lines(path):
        kind = record["type"]
        if kind == "run":
            begin(Segment(record.get("resumed_from_step", 0), record, number))
            continue
        if kind not in KINDS:
            continue
        step = record["step"]
        segment = chain[-1] if chain else None
        if kind == "step" and (segment is None or (segment.run is None and segment.last_step
                                                   is not None and step <= segment.last_step)):
            # No run record: a step that does not increase is a restart.
            segment = Segment(0 if segment is None else step - 1, None, number, step)
            begin(segment)
        elif segment is None:
            segment = Segment(0, None, number)
            begin(segment)
        if kind == "step":
            segment.last_step = step
        history[kind][step] = (record, segment)  # a repeated step: the later record wins
    if not history["step"] and not history["eval"]:
        fail(2, f"{path}: no step or eval records to plot")
    used = {id(seg) for records in history.values() for _, seg in records.values()}
    chain = [seg for i, seg in enumerate(chain) if i == 0 or id(seg) in used or seg.run]
    return {"history": history, "chain": chain, "path": path}


def step_range(run, segment):
    steps = [s for records in run["history"].values() for s, (_, seg) in records.items()
             if seg is segment]
    return f"steps {min(steps)}-{max(steps)}" if steps else f"from line {segment.line}"


def x_of_tokens(run, label, fallback_tps):
    """step -> tokens seen, per segment: each counts its own steps at its own
    tokens per step, on top of the tokens before the step it resumed from."""
    at = {}  # id(segment) -> (tokens at its start, its tokens per step)
    prev = None
    for seg in run["chain"]:
        tps = seg.tokens_per_step or fallback_tps
        if tps is None:
            why = ("no run record: written by a gpt2_ddp from before run records"
                   if seg.run is None else "its run record has no tokens_per_step")
            fail(2, f"--x tokens: run {label} ({run['path']}, {step_range(run, seg)}) has no "
                 f"tokens per step ({why}); pass --tokens-per-step N (that run's total_batch) "
                 "or plot over steps (--x step)")
        if prev is None:
            at[id(seg)] = (seg.start * tps, tps)
        else:
            prev_base, prev_tps = at[id(prev)]
            at[id(seg)] = (prev_base + (seg.start - prev.start) * prev_tps, tps)
        prev = seg
    return lambda step, seg: at[id(seg)][0] + (step - seg.start) * at[id(seg)][1]


def x_of_hours(run, label):
    """step -> hours of training, per segment: its own elapsed_s on top of
    the time of the last step kept before it; evals between logged steps
    are placed by linear interpolation."""
    steps = run["history"]["step"]
    hours = {}
    for seg in run["chain"]:
        before = [s for s in hours if s <= seg.start]
        base = hours[max(before)] if before else 0.0
        for step in sorted(s for s, (_, sg) in steps.items() if sg is seg):
            record = steps[step][0]
            if "elapsed_s" not in record:
                fail(2, f"--x time: run {label} ({run['path']}) has a step record without "
                     f"elapsed_s (step {step}); plot over steps or tokens (--x step, --x tokens)")
            hours[step] = base + record["elapsed_s"] / 3600.0
    if not hours:
        fail(2, f"--x time: run {label} ({run['path']}) has no step records to time")
    known = sorted(hours)

    def at(step, seg):
        if step in hours:
            return hours[step]
        i = bisect.bisect_left(known, step)
        if i == 0:
            return hours[known[0]]
        if i == len(known):
            return hours[known[-1]]
        a, b = known[i - 1], known[i]
        return hours[a] + (hours[b] - hours[a]) * (step - a) / (b - a)

    return at


def smooth_curve(steps, values, segments, window):
    """The smoothed curve of a panel, the definition tools/view_runs.js
    shares: at each logged step s, a straight line fitted by least squares
    to the finite values of the same segment within min(window/2, s/4)
    steps of s, read at s. Two-sided, so it does not lag; at the ends of a
    segment the window is one-sided and the line's slope keeps it on the
    data (no pull towards the start, no lag at the last step). The window
    is in steps, not logged points, so log_every does not change it; s/4
    narrows it early in training, where the loss falls fastest and a wide
    window would sit above the curve. A non-finite value is passed through
    without entering any fit; window 0 returns the values as they are."""
    out = list(values)
    if window <= 0:
        return out
    i = 0
    while i < len(values):  # each segment's stretch on its own
        j = i
        while j < len(values) and segments[j] is segments[i]:
            j += 1
        ok = [k for k in range(i, j) if math.isfinite(values[k])]
        xs = [steps[k] for k in ok]
        for k in ok:
            s = steps[k]
            half = min(window / 2, s / 4)
            lo, hi = bisect.bisect_left(xs, s - half), bisect.bisect_right(xs, s + half)
            n = sd = sy = sdd = sdy = 0.0
            for m in ok[lo:hi]:
                d = steps[m] - s
                n += 1
                sd += d
                sy += values[m]
                sdd += d * d
                sdy += d * values[m]
            mean_d, mean_y = sd / n, sy / n
            var = sdd / n - mean_d * mean_d
            # One step, or all at one step: the mean (var is 0 up to rounding).
            if n < 2 or var <= 1e-12 * half * half:
                out[k] = mean_y
            else:
                out[k] = mean_y - (sdy / n - mean_d * mean_y) / var * mean_d
        i = j
    return out


def run_series(run, x_of, window):
    """Per panel: x, raw y and (for noisy ones) the smoothed y."""
    out = {}
    for kind, key, name, smoothed in (("step", "loss", "train_loss", True),
                                      ("eval", "val_loss", "val_loss", False),
                                      ("hellaswag", "acc_norm", "hellaswag_acc_norm", False),
                                      ("hellaswag", "acc", "hellaswag_acc", False),
                                      ("step", "lr", "lr", False),
                                      ("step", "tokens_per_s", "tokens_per_s", True)):
        records = run["history"][kind]
        steps = sorted(s for s, (r, _) in records.items() if key in r)
        chain_index = {id(seg): i for i, seg in enumerate(run["chain"])}
        panel = {
            "step": steps,
            "segment": [chain_index[id(records[s][1])] for s in steps],
            "x": [x_of(s, records[s][1]) for s in steps],
            "y": [records[s][0][key] for s in steps],
        }
        if smoothed:
            panel["smooth"] = smooth_curve(steps, panel["y"], [records[s][1] for s in steps],
                                           window)
        out[name] = panel
    restarts = []
    for seg in run["chain"][1:]:  # a fresh start dropped all before it: never marked
        step = seg.start if seg.run is not None else seg.first_step
        restarts.append({"step": step, "x": x_of(step, seg), "logged": seg.run is None})
    return out, restarts


def val_loss_against(first, other):
    """other's validation loss against first's (their val_loss panels) at
    the evaluation steps both have: relative differences in percent, the
    largest (and its step) and the last; None without a common step."""
    ref = dict(zip(first["step"], first["y"]))
    common = [(s, y) for s, y in zip(other["step"], other["y"]) if s in ref]
    if not common:
        return None
    diffs = [(abs(y - ref[s]) / abs(ref[s]) * 100 if ref[s] else math.inf, s) for s, y in common]
    worst = max(diffs, key=lambda d: d[0])
    return {"common": len(common), "max_pct": worst[0], "max_step": worst[1],
            "last_pct": diffs[-1][0], "last_step": diffs[-1][1]}


def json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def labels_of(args):
    if args.label:
        if len(args.label) != len(args.run_dirs):
            fail(2, f"{len(args.label)} --label for {len(args.run_dirs)} run directories: give "
                 "one --label per RUN_DIR, in the same order, or none")
        return args.label
    names = [os.path.basename(os.path.normpath(d)) for d in args.run_dirs]
    if len(set(names)) < len(names):  # a/tiny and b/tiny: the paths tell them apart
        names = [os.path.normpath(d) for d in args.run_dirs]
    return names


def smoothing(text):
    try:
        w = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of steps")
    if not math.isfinite(w) or w < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a window of steps (0 is off, "
                                         f"{DEFAULT_WINDOW} the default)")
    if 0 < w < 1:  # an EMA weight, as --smooth was before it became a window
        raise argparse.ArgumentTypeError(f"{text} is less than one step: --smooth is a window in "
                                         f"steps (it was an EMA weight before); try "
                                         f"{DEFAULT_WINDOW}, or 0 for off")
    return w


def positive(text):
    try:
        n = float(text)
    except ValueError:
        n = 0
    if not n > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of tokens per step")
    return n


def parse_args():
    ap = argparse.ArgumentParser(
        prog="tools/plot_run.py",
        description="Plot gpt2_ddp runs (their metrics.jsonl) into one PNG: loss, HellaSwag, "
        "learning rate and tokens/s. Exit codes: 0 written, 1 matplotlib not importable or "
        "output not writable, 2 bad arguments or metrics.")
    ap.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                    help="out_dir/run_name of a run (holds metrics.jsonl); several are overlaid")
    ap.add_argument("-o", "--output", metavar="FILE",
                    help="the PNG to write (default: plot.png in the first RUN_DIR)")
    ap.add_argument("--x", choices=("step", "tokens", "time"), default="step",
                    help="the x axis: optimizer steps (default), tokens seen (compares runs of "
                    "different batch sizes) or hours of training")
    ap.add_argument("--smooth", type=smoothing, default=DEFAULT_WINDOW, metavar="W",
                    help="window in steps of the smoothing of train loss and tokens/s (a line "
                    "fitted over W steps around each point, narrower early), drawn over the "
                    f"faint raw curve (default {DEFAULT_WINDOW}; 0 = off)")
    ap.add_argument("--log-y", action="store_true", help="log scale for the loss panel")
    ap.add_argument("--label", action="append", metavar="NAME",
                    help="legend name of a run, once per RUN_DIR in order (default: directory name)")
    ap.add_argument("--tokens-per-step", type=positive, metavar="N", action="append",
                    help="for --x tokens: tokens per step of runs (or parts) without a run record "
                    "(their total_batch); once for all runs or once per RUN_DIR in order")
    ap.add_argument("--dump", metavar="FILE.json",
                    help="also write the plotted series (x, raw y, smoothed y, restarts) as JSON")
    return ap.parse_args()


def tokens_per_step_of(args):
    n = args.tokens_per_step or [None]
    if len(n) == 1:
        return n * len(args.run_dirs)
    if len(n) != len(args.run_dirs):
        fail(2, f"{len(n)} --tokens-per-step for {len(args.run_dirs)} run directories: give one "
             "for all runs or one per RUN_DIR, in the same order")
    return n


def main():
    args = parse_args()
    labels = labels_of(args)
    fallback_tps = tokens_per_step_of(args)
    runs = [load_run(d) for d in args.run_dirs]
    output = args.output or os.path.join(args.run_dirs[0], "plot.png")
    plotted = []
    for label, run, tps in zip(labels, runs, fallback_tps):
        if args.x == "tokens":
            x_of = x_of_tokens(run, label, tps)
        elif args.x == "time":
            x_of = x_of_hours(run, label)
        else:
            x_of = lambda step, seg: step
        series, restarts = run_series(run, x_of, args.smooth)
        plotted.append((label, series, restarts))
        h = run["history"]
        note = "".join(f", {'restarted before' if r['logged'] else 'resumed at'} step {r['step']}"
                       for r in restarts)
        print(f"{label}: {len(h['step'])} steps, {len(h['eval'])} evals, "
              f"{len(h['hellaswag'])} HellaSwag evals{note}")
    against = [None] + [val_loss_against(plotted[0][1]["val_loss"], series["val_loss"])
                        for _, series, _ in plotted[1:]]
    for (label, _, _), a in zip(plotted[1:], against[1:]):
        print(f"val loss of {label} against {plotted[0][0]}: " +
              (f"largest difference {a['max_pct']:.2f}% (step {a['max_step']}), "
               f"{a['last_pct']:.2f}% at step {a['last_step']}, over {a['common']} common "
               "evaluations" if a else "no evaluation step in common"))
    if args.dump:
        dump = {"x": args.x, "smooth": args.smooth, "runs": [
            {"label": label, "dir": d, "panels": series, "restarts": restarts,
             "val_loss_against_first": a}
            for (label, series, restarts), d, a in zip(plotted, args.run_dirs, against)]}
        try:
            with open(args.dump, "w", encoding="utf-8") as f:
                json.dump(json_safe(dump), f)
        except OSError as e:
            fail(1, f"cannot write {args.dump}: {e.strerror}")
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError as e:
        fail(1, f"matplotlib is not importable by {sys.executable}: install it for this "
             f"interpreter ({sys.executable or 'python3'} -m pip install "
             "matplotlib) or run with /usr/bin/python3 (Debian: apt-get install "
             f"python3-matplotlib) [{e}]")
    draw(plt, args, plotted, output)
    print(f"wrote {output}")
    return 0


def pieces(panel, key):
    """(x, y) of each segment's stretch of a panel: lines do not join across
    a restart."""
    out = []
    for x, y, seg in zip(panel["x"], panel[key], panel["segment"]):
        if not out or out[-1][2] != seg:
            out.append(([], [], seg))
        out[-1][0].append(x)
        out[-1][1].append(y)
    return [(x, y) for x, y, _ in out]


def draw(plt, args, plotted, output):
    """Draws and writes the PNG; returns the figure (tests read its labels)."""
    from matplotlib.ticker import FuncFormatter
    any_hellaswag = any(s["hellaswag_acc_norm"]["x"] for _, s, _ in plotted)
    fig = plt.figure(figsize=(12, 8))
    grid = fig.add_gridspec(2, 2)
    if any_hellaswag:
        loss_ax, hella_ax = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    else:  # no empty panel: the loss takes the whole top row
        loss_ax, hella_ax = fig.add_subplot(grid[0, :]), None
    lr_ax, speed_ax = fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    raw_alpha = 0.25 if args.smooth > 0 else 0.9
    labels = []  # (x, text, color) of every restart, labelled once all are known
    for i, (label, s, restarts) in enumerate(plotted):
        c = colors[i % len(colors)]
        for ax, name in ((loss_ax, "train_loss"), (speed_ax, "tokens_per_s")):
            legend = f"{label} train" if name == "train_loss" else label
            for j, (x, y) in enumerate(pieces(s[name], "y")):
                ax.plot(x, y, color=c, lw=1, alpha=raw_alpha,
                        label=legend if j == 0 and args.smooth == 0 else None)
            if args.smooth > 0:
                for j, (x, y) in enumerate(pieces(s[name], "smooth")):
                    ax.plot(x, y, color=c, lw=1.5, label=legend if j == 0 else None)
        v = s["val_loss"]
        if v["x"]:
            loss_ax.plot(v["x"], v["y"], color=c, lw=2, ls="--", marker="o", ms=3,
                         label=f"{label} val")
        if s["hellaswag_acc_norm"]["x"]:
            h = s["hellaswag_acc_norm"]
            hella_ax.plot(h["x"], h["y"], color=c, marker="o", ms=3, label=f"{label} acc_norm")
            h = s["hellaswag_acc"]
            hella_ax.plot(h["x"], h["y"], color=c, ls=":", label=f"{label} acc")
        for j, (x, y) in enumerate(pieces(s["lr"], "y")):
            lr_ax.plot(x, y, color=c, label=label if j == 0 else None)
        marked = [loss_ax, lr_ax, speed_ax] + ([hella_ax] if hella_ax else [])
        for r in restarts:
            for ax in marked:
                ax.axvline(r["x"], color=c, ls="--", lw=0.8, alpha=0.7)
            text = f"restarted before step {r['step']}" if r["logged"] else \
                f"resumed at step {r['step']}"
            labels.append((r["x"], f"{label}: {text}" if len(plotted) > 1 else text, c))
    if hella_ax:
        hella_ax.axhline(0.25, color="gray", lw=0.8, ls="--", label="chance (0.25)")
    xlabel = {"step": "step", "tokens": "tokens", "time": "hours"}[args.x]
    loss_title = "loss" + (f" (train smoothed over {args.smooth:g} steps, raw faint)"
                           if args.smooth > 0 else "")
    for ax, title, ylabel in ((loss_ax, loss_title, "cross-entropy"),
                              (hella_ax, "HellaSwag", "accuracy"),
                              (lr_ax, "learning rate", "lr"),
                              (speed_ax, "throughput", "tokens/s")):
        if ax is None:
            continue
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            # A loss curve falls from the upper left: its lower left is free,
            # and the restart labels keep to the top.
            ax.legend(fontsize=8, loc="lower left" if ax is loss_ax else "best")
    if args.log_y:
        loss_ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _: f"{v:g}")  # 4, 5, 6 rather than 4x10^0
        loss_ax.yaxis.set_major_formatter(plain)
        loss_ax.yaxis.set_minor_formatter(plain)
    fig.suptitle(" vs ".join(label for label, _, _ in plotted))
    fig.tight_layout()
    label_restarts(fig, loss_ax, labels)
    try:
        fig.savefig(output, dpi=80)
    except OSError as e:
        fail(1, f"cannot write {output}: {e.strerror}")
    return fig


def label_restarts(fig, ax, labels):
    """Each restart's label, level, next to its line near the top of the
    loss panel (left of it where it would leave the panel), one row lower
    than any label it would overlap (restarts of several runs at the same
    step, or close together)."""
    renderer = fig.canvas.get_renderer()
    right_edge = ax.get_window_extent(renderer).x1
    placed = []  # (row, left, right) in pixels
    for x, text, color in sorted(labels, key=lambda l: l[0]):
        t = ax.annotate(text, xy=(x, 1), xycoords=("data", "axes fraction"), xytext=(3, -3),
                        textcoords="offset points", va="top", fontsize=7, color=color,
                        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                              "alpha": 0.7})
        box = t.get_window_extent(renderer)
        side = 1
        if box.x1 > right_edge:
            side = -1
            t.set_horizontalalignment("right")
            t.xyann = (-3, -3)
            box = t.get_window_extent(renderer)
        row = 0
        while any(r == row and box.x0 < right + 2 and left < box.x1 + 2
                  for r, left, right in placed):
            row += 1
        t.xyann = (3 * side, -3 - row * (box.height + 2) * 72 / fig.dpi)
        placed.append((row, box.x0, box.x1))


if __name__ == "__main__":
    sys.exit(main())
