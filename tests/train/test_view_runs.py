#!/usr/bin/env python3
"""tools/view_runs.py in a real headless browser (Debian's chromium) on real
tiny runs: "a" (HellaSwag, checkpoints at 10 and 20; 20 steps) and "b"
(another lr, 10 steps). The served page must draw (its panels, canvases,
pixels of each run's colour in a screenshot) and its table must hold
exactly the numbers of metrics.jsonl (each cell's data-value: the latest
step's loss, lr, tokens/s and ETA, the latest val loss, HellaSwag acc_norm
and checkpoint, the restarts), the smoothed loss the one tools/plot_run.py
--dump computes. Then, with the same server still running, "a" is resumed
from its step-10 checkpoint to step 30 and a run "c" appears (a copy of
a's file): a new load shows all three, the restarts labelled (two labels
at one step, which must not overlap). In one page load, records appended
to "b" between two polls (one cut in the middle, finished a poll later)
are picked up by byte offset. The --html snapshot shows the same numbers
from a file:// page. Last, the errors: a line that is not JSON, a missing
directory, a folder without runs, a port in use, no uPlot (exit 2 or 1,
the file or the fix named, no traceback). Exits 77 (skipped) without
chromium.
usage: test_view_runs.py GPT2_DDP WORK_DIR"""
import html.parser
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TOOL = os.path.join(ROOT, "tools", "view_runs.py")
PYTHON = "/usr/bin/python3"
COLORS = {"a": (0x1f, 0x77, 0xb4), "b": (0xff, 0x7f, 0x0e)}  # the page's first two
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}")
    return ok


def chromium(url, budget_ms, *mode, keep=None):
    """The page after budget_ms of the browser's virtual time (timers run
    fast; network waits count as none): --dump-dom's text (also written to
    keep, for a failure's inspection), or a screenshot."""
    args = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--window-size=1200,1500", f"--virtual-time-budget={budget_ms}", *mode, url]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(p.stderr[-2000:])
    if keep:
        with open(keep, "w") as f:
            f.write(p.stdout)
    return p.stdout


class Dom(html.parser.HTMLParser):
    """What the test reads of the page: body attributes, the table's rows
    (data-run, data-fetches, data-offset, each cell's data-field/value and
    text), the panels, canvases and the restart labels' placement."""

    def __init__(self, text):
        super().__init__()
        self.body, self.rows, self.canvases, self.panels, self.labels = {}, {}, 0, None, None
        self.row = self.cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "tr" and "data-run" in a:
            self.row = self.rows.setdefault(a["data-run"], {"attrs": a, "cells": {}, "name": ""})
        elif tag == "td" and self.row is not None:
            self.cell = a.get("data-field")
            if self.cell:
                self.row["cells"][self.cell] = a.get("data-value")
        elif tag == "canvas":
            self.canvases += 1
        elif a.get("id") == "charts":
            self.panels = a.get("data-panels")
        if "data-labels" in a:
            self.labels = json.loads(a["data-labels"])

    def handle_endtag(self, tag):
        if tag == "tr":
            self.row = None
        if tag == "td":
            self.cell = None

    def handle_data(self, data):
        if self.row is not None and self.cell is None and not self.row["cells"]:
            self.row["name"] += data.strip()


def records(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.endswith("\n") and line.strip()]


def expected(run_dir):
    """The table's numbers, read here from metrics.jsonl: each kind's last record."""
    last = {}
    for r in records(run_dir):
        last[r["type"]] = r
    restarts = sum(1 for r in records(run_dir) if r["type"] == "run" and r["resumed_from_step"] > 0)
    s = last["step"]
    want = {"step": s["step"], "loss": s["loss"], "lr": s["lr"], "tokens_per_s": s["tokens_per_s"],
            "eta_s": s.get("eta_s"), "val_loss": last["eval"]["val_loss"], "restarts": restarts,
            "acc_norm": last["hellaswag"]["acc_norm"] if "hellaswag" in last else None,
            "checkpoint": last["checkpoint"]["step"] if "checkpoint" in last else None}
    return want


def smoothed_last(run_dirs, work):
    """plot_run.py's last smoothed train loss of each run (default window)."""
    dump = os.path.join(work, "dump.json")
    subprocess.run([PYTHON, os.path.join(ROOT, "tools", "plot_run.py"), *run_dirs, "-o",
                    os.path.join(work, "plot.png"), "--dump", dump], check=True,
                   capture_output=True)
    return {r["dir"]: r["panels"]["train_loss"]["smooth"][-1] for r in json.load(open(dump))["runs"]}


def check_table(dom, run_dirs, work, what):
    smooth = smoothed_last(run_dirs, work)
    check(dom.body.get("data-state") == "ready", f"{what}: the page is {dom.body.get('data-state')}")
    for d in run_dirs:
        row = dom.rows.get(os.path.normpath(d))
        if not check(row is not None, f"{what}: run {d} not listed (rows: {list(dom.rows)})"):
            continue
        check(row["name"] == os.path.basename(d), f"{what}: {d} named {row['name']!r}")
        want = expected(d)
        want["loss_smooth"] = smooth[d]
        for field, value in want.items():
            got = row["cells"].get(field)
            if value is None:
                check(got is None, f"{what}: {d} {field} shows {got}, the file has none")
            elif field == "loss_smooth":
                check(got is not None and abs(float(got) - value) <= 1e-12 * abs(value),
                      f"{what}: {d} smoothed loss {got}, plot_run.py's {value!r}")
            else:
                check(got is not None and float(got) == value,
                      f"{what}: {d} {field} shows {got}, metrics.jsonl has {value!r}")


def check_labels(dom, want, what):
    labels = dom.labels or []
    check(sorted(l["text"] for l in labels) == sorted(want), f"{what}: restart labels {labels}")
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            check(a["row"] != b["row"] or a["x1"] <= b["x0"] or b["x1"] <= a["x0"],
                  f"{what}: restart labels overlap: {a} {b}")


def check_pixels(png, what):
    import matplotlib.image
    img = matplotlib.image.imread(png)[:, :, :3]
    rgb = (img * 255).round().astype(int)
    for run, color in COLORS.items():
        n = int(((abs(rgb - color) <= 8).all(axis=2)).sum())
        check(n > 300, f"{what}: {n} pixels of run {run}'s colour: not drawn")
    print(f"{what}: {img.shape[1]}x{img.shape[0]} screenshot, both runs' colours drawn")


def train(bin_, work, name, *extra, steps=20):
    start = time.monotonic()
    log = os.path.join(work, f"{name}.log")
    with open(log, "w") as f:
        p = subprocess.run([bin_, "configs/tiny.ini", "device=cpu", f"max_steps={steps}", "log_every=1",
                            "eval_every=10", "eval_batches=1", "checkpoint_every=10",
                            f"out_dir={work}/runs", f"run_name={name}", *extra],
                           stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
    if p.returncode != 0:
        print(open(log).read())
        sys.exit(f"training {name} failed")
    print(f"trained {name} to step {steps} in {time.monotonic() - start:.0f} s")


def serve(work, *extra):
    """view_runs.py on a free port: (process, URL)."""
    p = subprocess.Popen([PYTHON, TOOL, f"{work}/runs", "--port", "0", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
    if not m:
        p.kill()
        sys.exit(f"view_runs.py did not start: {line}{p.stderr.read()}")
    return p, m.group(1)


def live_appends(work, runs):
    """One page load while records are appended to b between its polls:
    the server (in this process) appends after answering polls 1 and 2."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import view_runs
    path = os.path.join(runs, "b", "metrics.jsonl")
    last = [r for r in records(os.path.join(runs, "b")) if r["type"] == "step"][-1]
    new = [dict(last, step=last["step"] + i, loss=7.0 + i / 8, lr=1e-4 * i) for i in (1, 2, 3, 4)]
    lines = [json.dumps(r) + "\n" for r in new]
    cut = len(lines[3]) // 2
    appends = {1: "".join(lines[:3]) + lines[3][:cut], 2: lines[3][cut:]}
    answer, polls = view_runs.answer, []

    def answer_then_append(dirs, known):
        text = answer(dirs, known)
        polls.append(known.get(os.path.normpath(os.path.join(runs, "b")), {}).get("offset"))
        if len(polls) in appends:
            with open(path, "a") as f:
                f.write(appends[len(polls)])
        return text

    view_runs.answer = answer_then_append
    config = {"paths": [runs], "smooth": 100, "poll_s": view_runs.POLL_S}
    server = view_runs.make_server([runs], "127.0.0.1", 0, config)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        dom = Dom(chromium(f"http://127.0.0.1:{server.server_address[1]}/", 9000, "--dump-dom",
                           keep=os.path.join(work, "live.html")))
    finally:
        server.shutdown()
        server.server_close()
        view_runs.answer = answer
    row = dom.rows.get(os.path.normpath(os.path.join(runs, "b")), {"attrs": {}, "cells": {}})
    size = os.path.getsize(path)
    check(len(polls) >= 4, f"live: the page polled {len(polls)} times in 9 s of its time")
    check(row["cells"].get("step") == str(new[3]["step"]) and row["cells"].get("loss") == str(new[3]["loss"]),
          f"live: b shows step {row['cells'].get('step')} loss {row['cells'].get('loss')}, "
          f"appended {new[3]['step']} {new[3]['loss']}")
    # Three answers with records (all, then three lines, then the finished cut one),
    # each from the offset the last one ended at.
    check(row["attrs"].get("data-fetches") == "3" and row["attrs"].get("data-offset") == str(size),
          f"live: b read in {row['attrs'].get('data-fetches')} answers to byte "
          f"{row['attrs'].get('data-offset')} of {size}; polls from offsets {polls}")
    check(polls[1] is not None and 0 < polls[1] < polls[2] < polls[3] == size,
          f"live: the page asked from offsets {polls} (file {size} bytes)")
    print(f"live: b's appended records picked up, polls from byte offsets {polls}")


def errors(work):
    bad = os.path.join(work, "bad")
    os.makedirs(os.path.join(bad, "r"))
    with open(os.path.join(bad, "r", "metrics.jsonl"), "w") as f:
        f.write('{"type":"step","step":1,"loss":5}\ngarbage\n')
    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    busy = sock.getsockname()[1]
    runs = os.path.join(work, "runs")
    cases = (([bad], 2, r"bad/r/metrics.jsonl:2: not JSON \(Expecting value, column 1\): 'garbage'; "
              "fix or delete that line"),
             ([bad, "--html", os.path.join(work, "bad.html")], 2, r"bad/r/metrics.jsonl:2: not JSON"),
             ([os.path.join(work, "nowhere")], 2, r"nowhere: not a directory"),
             ([empty, "--html", os.path.join(work, "none.html")], 2,
              r"no run directories \(holding metrics.jsonl\) under"),
             ([runs, "--port", str(busy)], 1, rf"port {busy} on 127.0.0.1 is in use .*pass --port N"),
             ([runs, "--port", "70000"], 2, r"is not a port number"),
             ([runs, "--smooth", "0.9"], 2, r"--smooth is a window in steps"),
             ([runs, "--uplot", os.path.join(work, "nowhere")], 1,
              r"uPlot \(the chart library\) is not at .*run tools/prepare_data.sh"))
    for args, code, pattern in cases:
        p = subprocess.run([PYTHON, TOOL, *args], capture_output=True, text=True, timeout=60)
        check(p.returncode == code and re.search(pattern, p.stderr) and "Traceback" not in p.stderr,
              f"view_runs.py {' '.join(args)}: exit {p.returncode} (expected {code}): {p.stderr}")
    sock.close()
    check(not os.path.exists(os.path.join(work, "bad.html")), "a refused --html wrote its file")
    print("errors: bad line, missing directory, no runs, port in use, bad options, no uPlot")


def main():
    bin_, work = sys.argv[1], os.path.abspath(sys.argv[2])
    if shutil.which("chromium") is None:
        print("SKIP: no chromium on PATH (Debian: apt-get install chromium; tools/setup.sh --tests "
              "installs it)")
        return 77
    if not os.path.isfile(os.path.join(ROOT, "data", "npm", "uplot", "dist", "uPlot.iife.min.js")):
        print("FAIL: no data/npm/uplot/dist/uPlot.iife.min.js: run tools/prepare_data.sh")
        return 1
    start = time.monotonic()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    runs = os.path.join(work, "runs")
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
    import hellaswag_data
    hellaswag_data.write_jsonl(os.path.join(work, "hellaswag.jsonl"),
                               hellaswag_data.make_examples(ROOT, 8))
    train(bin_, work, "a", f"hellaswag_data={work}/hellaswag.jsonl")
    train(bin_, work, "b", "lr=1e-3", steps=10)
    a, b, c = (os.path.join(runs, n) for n in "abc")

    server, url = serve(work)
    try:
        dom = Dom(chromium(url, 3000, "--dump-dom", keep=os.path.join(work, "served.html")))
        check(dom.panels == "loss hellaswag lr speed" and dom.canvases == 4,
              f"served: panels {dom.panels!r}, {dom.canvases} canvases")
        check_table(dom, [a, b], work, "served")
        check_labels(dom, [], "served")
        png = os.path.join(work, "page.png")
        chromium(url, 3000, f"--screenshot={png}")
        check_pixels(png, "served")
        # The same server while "a" trains on (resumed from step 10 to 30) and
        # a run "c" appears.
        train(bin_, work, "a", f"hellaswag_data={work}/hellaswag.jsonl", f"resume={a}/step_00000010",
              "allow_changed=max_steps", steps=30)
        os.makedirs(c)  # restarted at the same step as a: their labels must not overlap
        shutil.copy(os.path.join(a, "metrics.jsonl"), c)
        check(server.poll() is None, "the server stopped")
        dom = Dom(chromium(url, 3000, "--dump-dom", keep=os.path.join(work, "resumed.html")))
        check_table(dom, [a, b, c], work, "served, a resumed")
        check(dom.rows.get(a, {}).get("cells", {}).get("step") == "30", "a's step 30 not shown")
        check_labels(dom, ["a: resumed at step 10", "c: resumed at step 10"], "served, a resumed")
    finally:
        server.terminate()
        server.wait(timeout=30)
    err = server.stderr.read()
    check("Traceback" not in err, f"the server's stderr: {err}")
    print("served: runs listed, table equal to metrics.jsonl, panels drawn, restart labelled")

    shutil.rmtree(c)
    live_appends(work, runs)

    snap = os.path.join(work, "snapshot.html")
    p = subprocess.run([PYTHON, TOOL, runs, "--html", snap], capture_output=True, text=True)
    check(p.returncode == 0, f"--html: exit {p.returncode}: {p.stderr}")
    dom = Dom(chromium("file://" + snap, 2000, "--dump-dom", keep=os.path.join(work, "snapshot.dom.html")))
    check(dom.panels == "loss hellaswag lr speed" and dom.canvases == 4,
          f"snapshot: panels {dom.panels!r}, {dom.canvases} canvases")
    check_table(dom, [a, b], work, "snapshot")
    print(f"snapshot: {p.stdout.strip()}; table equal to metrics.jsonl")

    errors(work)
    print(f"{time.monotonic() - start:.0f} s in all")
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok: the live view draws, shows the files' numbers, follows appends, and refuses bad input")
    return 0


if __name__ == "__main__":
    sys.exit(main())
