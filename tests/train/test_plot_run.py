#!/usr/bin/env python3
"""tools/plot_run.py's series on synthetic metrics.jsonl files, checked
against what the test computes on its own: which records survive restarts,
the smoothing (numpy's line fits per segment), the tokens and hours axes, the
restart marks; the PNG (read back by matplotlib), the errors on bad lines
and options (file:line, exit 2) and the message when matplotlib cannot be
imported (exit 1).

Run "alpha" has run records: a fresh start (1,024 tokens per step) logged to
step 31, a resume from step 20 (an earlier checkpoint: its steps 22-40
supersede everything the first start logged after step 20, also the steps
and evals it does not log itself) at 2,048, and a resume from step 40 at
4,096. Run "beta" is in the format from before run records: steps 1-20,
then a restart whose steps 11-30 supersede the first 11-20. The runs'
validation losses against the first's are checked against the kept evals.
usage: test_plot_run.py WORK_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TOOL = os.path.join(ROOT, "tools", "plot_run.py")
rng = np.random.default_rng(24)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}")
    return ok


def close(a, b, what, tol=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        check(False, f"{what}: {a.size} values, expected {b.size}")
        return
    bad = np.flatnonzero(~np.isclose(a, b, rtol=tol, atol=tol))
    check(bad.size == 0, f"{what}: {bad.size} values differ, first at index {bad[:1]}: "
          f"got {a[bad[:1]]}, expected {b[bad[:1]]}")


def write(path, records, tail=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records) + tail)


def step_record(step, elapsed=None):
    r = {"type": "step", "step": step, "loss": float(10 - 0.1 * step + rng.normal(0, 0.3)),
         "lr": float(1e-3 * (1 + 0.01 * step)), "grad_norm": 1.0, "ms": 10.0,
         "tokens_per_s": float(1000 + rng.normal(0, 50))}
    if elapsed is not None:
        r["elapsed_s"] = elapsed
    return r


def make_alpha(d):
    """Returns the records the plot must show: (segment, record) in step order."""
    lines, kept = [], []
    segments = [  # (resumed from, tokens per step, logged steps, evals, kept up to)
        (0, 1024, [1] + list(range(2, 31, 2)) + [31], [10, 20, 25, 31], 20),
        (20, 2048, list(range(22, 41, 2)), [30, 40], 40),
        (40, 4096, list(range(42, 51, 2)), [50], 50),
    ]
    for i, (resumed, tps, steps, evals, keep) in enumerate(segments):
        lines.append({"type": "run", "start_time": "2026-11-24T17:30:00Z", "version": "0.x",
                      "git": "abc1234", "world": 2, "backend": "cpu", "devices": ["cpu"],
                      "resumed_from_step": resumed, "tokens_per_step": tps,
                      "config": {"total_batch": tps, "lr": 1e-3, "max_steps": 50}})
        for s in steps:
            r = step_record(s, elapsed=0.5 * (s - resumed) + 3.0)
            lines.append(r)
            if s <= keep:
                kept.append((i, r))
            if s in evals:
                e = {"type": "eval", "step": s, "val_loss": float(8 - 0.05 * s), "ms": 1.0}
                h = {"type": "hellaswag", "step": s, "acc": 0.2 + s / 500, "acc_norm": 0.25 + s / 400,
                     "n": 100}
                lines += [e, h]
                if s <= keep:
                    kept += [(i, e), (i, h)]
            if s == 12:
                lines.append({"type": "skip", "step": 13, "loss": None, "grad_norm": None,
                              "in_a_row": 1})
    write(os.path.join(d, "metrics.jsonl"), lines)
    return kept, segments


def make_gamma(d):
    """Two fresh starts, then a resume from step 10 that a resume from step 8
    replaces: the plot shows the second start to step 8, then the last."""
    lines, kept = [], []
    for i, (resumed, tps, last, keep) in enumerate(((0, 100, 20, 0), (0, 200, 12, 8),
                                                   (10, 300, 16, 0), (8, 400, 14, 14))):
        lines.append({"type": "run", "resumed_from_step": resumed, "tokens_per_step": tps,
                      "config": {}})
        for s in range(resumed + 1, last + 1):
            r = step_record(s)
            lines.append(r)
            kept += [(i, r)] if s <= keep else []
    write(os.path.join(d, "metrics.jsonl"), lines)
    return kept


def make_beta(d):
    lines, kept = [], []
    for s in range(1, 21):
        r = step_record(s)
        lines.append(r)
        kept += [(0, r)] if s <= 10 else []
        if s in (10, 20):
            e = {"type": "eval", "step": s, "val_loss": 7.5, "ms": 1.0}
            lines.append(e)
            kept += [(0, e)] if s <= 10 else []
    for s in range(11, 31):
        r = step_record(s)
        lines.append(r)
        kept.append((1, r))
        if s in (20, 30):
            e = {"type": "eval", "step": s, "val_loss": 6.0 + s / 40, "ms": 1.0}
            lines.append(e)
            kept.append((1, e))
    write(os.path.join(d, "metrics.jsonl"), lines)
    return kept


def local_line(steps, y, window):
    """The smoothing as docs/training.md defines it, written here with numpy:
    at each step s, the least-squares line through the points within
    min(window/2, s/4) steps of s, read at s (the mean where the window
    holds one step)."""
    steps, y = np.asarray(steps, float), np.asarray(y, float)
    out = []
    for s in steps:
        near = np.abs(steps - s) <= min(window / 2, s / 4)
        if len(np.unique(steps[near])) < 2:
            out.append(y[near].mean())
        else:
            slope, at_zero = np.polyfit(steps[near] - s, y[near], 1)
            out.append(at_zero)
    return np.array(out)


def expected_series(kept, kind, key, x_of, w=None):
    rows = sorted((r["step"], seg, r) for seg, r in kept if r["type"] == kind and key in r)
    out = {"step": [s for s, _, _ in rows], "x": [x_of(seg, r) for s, seg, r in rows],
           "y": [r[key] for _, _, r in rows], "segment": [seg for _, seg, _ in rows]}
    if w is not None:
        smooth = []
        for seg in sorted(set(out["segment"])):
            ys = [y for y, sg in zip(out["y"], out["segment"]) if sg == seg]
            steps = [st for st, sg in zip(out["step"], out["segment"]) if sg == seg]
            smooth += list(local_line(steps, ys, w)) if w > 0 else ys
        out["smooth"] = smooth
    return out


# Prints runSeries of tools/view_runs.js for a metrics.jsonl: argv = js, file, axis, window.
NODE_SERIES = """
const [js, file, axis, window] = process.argv.slice(1);
const {RunHistory, runSeries} = require(js);
const h = new RunHistory();
require("fs").readFileSync(file, "utf8").split("\\n").forEach((line, i) => {
  if (line.trim()) h.add(JSON.parse(line), i + 1);
});
console.log(JSON.stringify(runSeries(h, axis, Number(window))));
"""


def run_tool(args, env=None, python=sys.executable):
    p = subprocess.run([python, TOOL] + args, capture_output=True, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def compare(dump_run, kept, x_of, w, label):
    panels = dump_run["panels"]
    for name, kind, key, smoothed in (("train_loss", "step", "loss", True),
                                      ("val_loss", "eval", "val_loss", False),
                                      ("hellaswag_acc_norm", "hellaswag", "acc_norm", False),
                                      ("hellaswag_acc", "hellaswag", "acc", False),
                                      ("lr", "step", "lr", False),
                                      ("tokens_per_s", "step", "tokens_per_s", True)):
        want = expected_series(kept, kind, key, x_of, w if smoothed else None)
        got = panels[name]
        check(got["step"] == want["step"], f"{label} {name} steps {got['step']} != {want['step']}")
        if got["step"] != want["step"]:
            continue
        close(got["x"], want["x"], f"{label} {name} x")
        close(got["y"], want["y"], f"{label} {name} raw y", tol=0)
        if smoothed:
            close(got["smooth"], want["smooth"], f"{label} {name} smoothed y")


def compare_js(dump_run, run_dir, axis, window, label):
    """tools/view_runs.js (the live view's page, run by node) on the same
    metrics.jsonl: the same history after restarts, x, smoothing and restart
    marks as plot_run.py's --dump."""
    if shutil.which("node") is None:
        print(f"note: no node on PATH: view_runs.js not compared on {label} (tools/setup.sh "
              "installs nodejs)")
        return
    p = subprocess.run(["node", "-e", NODE_SERIES, os.path.join(ROOT, "tools", "view_runs.js"),
                        os.path.join(run_dir, "metrics.jsonl"), axis, str(window)],
                       capture_output=True, text=True)
    if not check(p.returncode == 0, f"view_runs.js on {label}: {p.stderr}"):
        return
    got = json.loads(p.stdout)
    name = f"view_runs.js {label}"
    for panel, want in dump_run["panels"].items():
        mine = got["panels"][panel]
        check(mine["step"] == want["step"] and mine["segment"] == want["segment"],
              f"{name} {panel}: steps or segments differ")
        close(mine["x"], want["x"], f"{name} {panel} x", tol=0)
        close(mine["y"], want["y"], f"{name} {panel} y", tol=0)
        if "smooth" in want:
            close(mine["smooth"], want["smooth"], f"{name} {panel} smoothed", tol=1e-12)
    check(got["restarts"] == dump_run["restarts"], f"{name} restarts {got['restarts']} != "
          f"{dump_run['restarts']}")


def main():
    work = sys.argv[1]
    shutil.rmtree(work, ignore_errors=True)
    alpha, beta = os.path.join(work, "alpha"), os.path.join(work, "beta")
    kept_a, segs_a = make_alpha(alpha)
    kept_b = make_beta(beta)
    dump = os.path.join(work, "dump.json")

    # Over steps, default smoothing, both runs, labels.
    rc, out, err = run_tool([alpha, beta, "-o", os.path.join(work, "steps.png"), "--dump", dump,
                             "--label", "A", "--label", "B"])
    check(rc == 0, f"plot over steps: exit {rc}: {err}")
    print(out, end="")
    check("A: 26 steps, 5 evals, 5 HellaSwag evals, resumed at step 20, resumed at step 40" in out,
          "alpha's summary line")
    check("B: 30 steps, 3 evals, 0 HellaSwag evals, restarted before step 11" in out,
          "beta's summary line")
    d = json.load(open(dump))
    check([r["label"] for r in d["runs"]] == ["A", "B"], "the --label names")
    by_step = lambda seg, r: r["step"]
    compare(d["runs"][0], kept_a, by_step, 100, "alpha/step")
    compare(d["runs"][1], kept_b, by_step, 100, "beta/step")
    compare_js(d["runs"][0], alpha, "step", 100, "alpha/step")
    compare_js(d["runs"][1], beta, "step", 100, "beta/step")
    check([(r["step"], r["x"]) for r in d["runs"][0]["restarts"]] == [(20, 20), (40, 40)],
          f"alpha's restarts {d['runs'][0]['restarts']}")
    check([(r["step"], r["x"]) for r in d["runs"][1]["restarts"]] == [(11, 11)],
          f"beta's restarts {d['runs'][1]['restarts']}")
    # Beta's validation loss against alpha's at the steps both evaluated.
    val_a = {r["step"]: r["val_loss"] for _, r in kept_a if r["type"] == "eval"}
    pct = sorted((r["step"], abs(r["val_loss"] - val_a[r["step"]]) / val_a[r["step"]] * 100)
                 for _, r in kept_b if r["type"] == "eval" and r["step"] in val_a)
    worst = max(pct, key=lambda p: p[1])
    got = d["runs"][1]["val_loss_against_first"]
    check(d["runs"][0]["val_loss_against_first"] is None, "the first run against itself")
    check(got is not None and (got["common"], got["max_step"], got["last_step"]) ==
          (len(pct), worst[0], pct[-1][0]) and worst[0] != pct[-1][0],
          f"beta against alpha: {got}, expected {pct}")
    if got is not None:
        close([got["max_pct"], got["last_pct"]], [worst[1], pct[-1][1]], "beta against alpha, %")
    check(f"val loss of B against A: largest difference {worst[1]:.2f}% (step {worst[0]}), "
          f"{pct[-1][1]:.2f}% at step {pct[-1][0]}, over {len(pct)} common evaluations" in out,
          "the comparison line")

    # Over tokens: each segment at its own tokens per step; beta needs --tokens-per-step.
    rc, out, err = run_tool([alpha, beta, "-o", os.path.join(work, "tokens.png"), "--x", "tokens"])
    check(rc == 2 and re.search(r"--x tokens: run beta \(.*beta/metrics.jsonl, steps 1-10\) has "
                                r"no tokens per step \(no run record.*pass --tokens-per-step N",
                                err) is not None, f"--x tokens without run records: exit {rc}: {err}")
    check(not os.path.exists(os.path.join(work, "tokens.png")), "a refused plot wrote its PNG")
    rc, out, err = run_tool([alpha, beta, "-o", os.path.join(work, "tokens.png"), "--x", "tokens",
                             "--tokens-per-step", "512", "--smooth", "7", "--dump", dump])
    check(rc == 0, f"--x tokens: exit {rc}: {err}")
    d = json.load(open(dump))
    starts, base = {}, 0
    for i, (resumed, tps, _, _, _) in enumerate(segs_a):
        if i:
            prev_resumed, prev_tps = segs_a[i - 1][:2]
            base += (resumed - prev_resumed) * prev_tps
        starts[i] = (base, resumed, tps)
    tokens_a = lambda seg, r: starts[seg][0] + (r["step"] - starts[seg][1]) * starts[seg][2]
    compare(d["runs"][0], kept_a, tokens_a, 7, "alpha/tokens")
    compare_js(d["runs"][0], alpha, "tokens", 7, "alpha/tokens")
    compare(d["runs"][1], kept_b, lambda seg, r: r["step"] * 512, 7, "beta/tokens")
    check([r["x"] for r in d["runs"][0]["restarts"]] == [20 * 1024, 20 * 1024 + 20 * 2048],
          f"alpha's restarts over tokens {d['runs'][0]['restarts']}")

    # One --tokens-per-step per run: used only where a run record has none.
    rc, out, err = run_tool([alpha, beta, "-o", os.path.join(work, "tokens2.png"), "--x", "tokens",
                             "--tokens-per-step", "99", "--tokens-per-step", "768", "--dump", dump])
    check(rc == 0, f"two --tokens-per-step: exit {rc}: {err}")
    d = json.load(open(dump))
    compare(d["runs"][0], kept_a, tokens_a, 100, "alpha/tokens (99 unused)")
    compare(d["runs"][1], kept_b, lambda seg, r: r["step"] * 768, 100, "beta/tokens 768")

    # Fresh starts drop what came before (unmarked); a resume from an earlier
    # step than the last restart's replaces that restart too.
    gamma = os.path.join(work, "gamma")
    kept_g = make_gamma(gamma)
    rc, out, err = run_tool([gamma, alpha, "-o", os.path.join(work, "gamma.png"), "--x",
                             "tokens", "--dump", dump])
    check(rc == 0 and "gamma: 14 steps, 0 evals, 0 HellaSwag evals, resumed at step 8\n" in out,
          f"gamma: exit {rc}: {out} {err}")
    check("val loss of alpha against gamma: no evaluation step in common" in out,
          f"no common evaluation: {out}")
    d = json.load(open(dump))
    tokens_g = lambda seg, r: r["step"] * 200 if seg == 1 else 8 * 200 + (r["step"] - 8) * 400
    compare(d["runs"][0], kept_g, tokens_g, 100, "gamma/tokens")
    compare_js(d["runs"][0], gamma, "tokens", 100, "gamma/tokens")
    check([(r["step"], r["x"]) for r in d["runs"][0]["restarts"]] == [(8, 1600)],
          f"gamma's restarts {d['runs'][0]['restarts']}")

    # Over hours: each segment's elapsed_s on top of the time where it resumed;
    # evals (logged where steps are) at their step's time. Smoothing off.
    rc, out, err = run_tool([alpha, "-o", os.path.join(work, "time.png"), "--x", "time",
                             "--smooth", "0", "--dump", dump])
    check(rc == 0, f"--x time: exit {rc}: {err}")
    d = json.load(open(dump))
    hours, offset = {}, 0.0
    for i, (resumed, _, steps, _, keep) in enumerate(segs_a):
        if i:
            offset = hours[(i - 1, resumed)]
        for s in steps:
            hours[(i, s)] = offset + (0.5 * (s - resumed) + 3.0) / 3600
    compare(d["runs"][0], kept_a, lambda seg, r: hours[(seg, r["step"])], 0.0, "alpha/time")
    rc, out, err = run_tool([beta, "-o", os.path.join(work, "time.png"), "--x", "time"])
    check(rc == 2 and "has a step record without elapsed_s" in err, f"--x time on beta: {rc} {err}")

    # The PNGs: images of the figure's size with more than a background.
    import matplotlib.image
    images = {}
    for name, extra in (("steps.png", []), ("log.png", ["--log-y"])):
        if name == "log.png":
            rc, _, err = run_tool([alpha, beta, "-o", os.path.join(work, name)] + extra)
            check(rc == 0, f"--log-y: exit {rc}: {err}")
        img = matplotlib.image.imread(os.path.join(work, name))
        images[name] = img
        check(img.shape[:2] == (640, 960) and len(np.unique(img.reshape(-1, img.shape[2]), axis=0)) > 50,
              f"{name}: shape {img.shape}, not a drawn figure")
    check(not np.array_equal(images["steps.png"], images["log.png"]), "--log-y changed nothing")
    rc, out, _ = run_tool([alpha])
    check(rc == 0 and os.path.getsize(os.path.join(alpha, "plot.png")) > 10000,
          "the default output RUN_DIR/plot.png")

    # A real run (tests/train/tiny_log_every_10.jsonl: configs/tiny.ini on one
    # CPU rank, log_every=10 eval_every=20): the smoothed train loss sits on
    # the raw one and not above the validation loss (the same text), where a
    # 0.9 EMA per logged point sat 0.39 above the raw and up to 1.07 above val.
    real = os.path.join(work, "tiny_log_every_10")
    os.makedirs(real)
    shutil.copy(os.path.join(ROOT, "tests", "train", "tiny_log_every_10.jsonl"),
                os.path.join(real, "metrics.jsonl"))
    rc, out, err = run_tool([real, "-o", os.path.join(work, "real.png"), "--dump", dump])
    check(rc == 0, f"the real run: exit {rc}: {err}")
    panels = json.load(open(dump))["runs"][0]["panels"]
    loss, val = panels["train_loss"], panels["val_loss"]
    late = [i for i, st in enumerate(loss["step"]) if st >= loss["step"][-1] / 2]
    offset = np.mean([loss["smooth"][i] - loss["y"][i] for i in late])
    spread = np.mean([abs(loss["smooth"][i] - loss["y"][i]) for i in late])
    smooth_at = dict(zip(loss["step"], loss["smooth"]))
    above_val = np.mean([smooth_at[st] - v for st, v in zip(val["step"], val["y"])
                         if st in smooth_at and st >= loss["step"][-1] / 2])
    print(f"real run, last half: smoothed - raw {offset:+.4f} on average, |smoothed - raw| "
          f"{spread:.4f}; smoothed - val {above_val:+.4f}")
    check(abs(offset) < 0.05, f"the smoothed loss is {offset:+.4f} off the raw one")
    check(spread < 0.15, f"the smoothed loss is {spread:.4f} from the raw one on average")
    check(above_val < 0.05, f"the smoothed loss sits {above_val:+.4f} above the val loss")

    # The figure: the HellaSwag panel only where a run has HellaSwag records;
    # restart labels of two runs restarted at the same steps do not overlap.
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import matplotlib
    matplotlib.use("Agg")
    import plot_run
    figures = []
    draw = plot_run.draw
    plot_run.draw = lambda *a: figures.append(draw(*a)) or figures[-1]
    twin = os.path.join(work, "alpha_twin")
    shutil.copytree(alpha, twin)
    for dirs, panels_wanted in (([alpha, twin], 4), ([beta], 3)):
        sys.argv = ["plot_run.py"] + dirs + ["-o", os.path.join(work, "fig.png")]
        check(plot_run.main() == 0, f"plot_run.main() on {dirs}")
        fig = figures[-1]
        check(len(fig.axes) == panels_wanted, f"{dirs}: {len(fig.axes)} panels, expected "
              f"{panels_wanted}")
        renderer = fig.canvas.get_renderer()
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in fig.axes[0].texts]
        check(len(boxes) == (4 if len(dirs) == 2 else 1), f"{dirs}: restart labels {boxes}")
        for i, (ta, a) in enumerate(boxes):
            for tb, b in boxes[i + 1:]:
                check(not a.overlaps(b), f"restart labels overlap: {ta!r} {a} and {tb!r} {b}")
    plot_run.draw = draw

    # matplotlib not importable by this interpreter: its path and both ways out.
    shadow = os.path.join(work, "shadow", "matplotlib")
    os.makedirs(shadow)
    with open(os.path.join(shadow, "__init__.py"), "w") as f:
        f.write('raise ImportError("shadowed by the test")\n')
    env = dict(os.environ, PYTHONPATH=os.path.dirname(shadow))
    rc, _, err = run_tool([alpha, "-o", os.path.join(work, "none.png")], env=env)
    check(rc == 1 and f"matplotlib is not importable by {sys.executable}: install it for this "
          f"interpreter ({sys.executable} -m pip install matplotlib) or run with /usr/bin/python3 "
          "(Debian: apt-get install python3-matplotlib)" in err,
          f"missing matplotlib: exit {rc}: {err}")
    check(not os.path.exists(os.path.join(work, "none.png")), "no PNG without matplotlib")

    # Bad lines and options: exit 2 naming the file and line.
    bad = os.path.join(work, "bad")
    good = json.dumps({"type": "step", "step": 1, "loss": 5.0}) + "\n"
    for content, pattern in (
            (good + "garbage\n", r"bad/metrics.jsonl:2: not JSON"),
            ('{"type":"run","resumed_from_step":0}\n' + good,
             r'bad/metrics.jsonl:1: a run record without "config"'),
            ('{"type":"run","resumed_from_step":-3,"config":{}}\n',
             r'bad/metrics.jsonl:1: the run record\'s "resumed_from_step" is -3'),
            (good + '{"type":"eval","val_loss":5}\n',
             r'bad/metrics.jsonl:2: a "eval" record without a step number'),
            (good + '{"type":"step","step":2,"loss":"low"}\n',
             r'bad/metrics.jsonl:2: "loss" is "low", not a number'),
            (good + '[1, 2]\n', r'bad/metrics.jsonl:2: a line without a "type"'),
            ('{"type":"skip","step":1}\n', r"bad/metrics.jsonl: no step or eval records")):
        write(os.path.join(bad, "metrics.jsonl"), [], content)
        rc, _, err = run_tool([bad, "-o", os.path.join(work, "bad.png")])
        check(rc == 2 and re.search(pattern, err) is not None,
              f"{content!r}: exit {rc}, stderr {err!r}")
    check(not os.path.exists(os.path.join(work, "bad.png")), "a refused plot wrote its PNG")
    write(os.path.join(bad, "metrics.jsonl"), [], good + '{"type":"step","st')
    rc, out, err = run_tool([bad, "-o", os.path.join(work, "cut.png")])
    check(rc == 0 and "bad/metrics.jsonl:2: the last line was cut off" in err
          and "bad: 1 steps" in out, f"a cut-off last line: exit {rc}: {err}")
    for args, pattern in (([alpha, beta, "--label", "one"], "1 --label for 2 run directories"),
                          ([alpha, "--smooth", "0.9"], r"--smooth: 0.9 is less than one step: "
                           r"--smooth is a window in steps \(it was an EMA weight before\)"),
                          ([alpha, "--smooth", "-3"], r"--smooth: -3 is not a window of steps"),
                          ([alpha, "--x", "tokens", "--tokens-per-step", "0"],
                           "not a positive number of tokens per step"),
                          ([alpha, beta, gamma, "--x", "tokens", "--tokens-per-step", "1",
                            "--tokens-per-step", "2"], "2 --tokens-per-step for 3 run directories")):
        rc, _, err = run_tool(args)
        check(rc == 2 and re.search(pattern, err) is not None, f"{args}: exit {rc}: {err}")

    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok: series, axes, restarts, smoothing, PNGs and errors as computed here")
    return 0


if __name__ == "__main__":
    sys.exit(main())
