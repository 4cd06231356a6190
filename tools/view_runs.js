// view_runs.js: the page of tools/view_runs.py, inlined into it with uPlot.
// It reads runs' metrics.jsonl records (polled from the server by byte
// offset, or from a snapshot written into the page), keeps each run's
// history as tools/plot_run.py does (a resume supersedes the records after
// its step), draws the panels with uPlot and keeps a table of the latest
// values, whose cells carry the exact numbers in data-value for the test.
// The history, the tokens axis and the smoothing are plain functions that
// also load under node (module.exports at the end): tests/train/test_plot_run.py
// checks them against tools/plot_run.py's --dump.
"use strict";

const KINDS = ["step", "eval", "hellaswag"]; // as plot_run.py; checkpoints kept apart

// One start of the trainer: plot_run.py's Segment.
class Segment {
  constructor(start, run, line, firstStep = null) {
    this.start = start;
    this.run = run;
    this.line = line;
    this.firstStep = firstStep;
    this.lastStep = null;
    this.tokensPerStep = null;
    if (run) {
      const tps = "tokens_per_step" in run ? run.tokens_per_step : run.config.total_batch;
      if (typeof tps === "number" && tps > 0) this.tokensPerStep = tps;
    }
  }
}

// A run's final history, fed one record at a time in file order: plot_run.py's load_run.
class RunHistory {
  constructor() {
    this.chain = [];
    this.history = {step: new Map(), eval: new Map(), hellaswag: new Map(), checkpoint: new Map()};
    this.runRecord = null; // the latest start's
  }

  begin(segment) {
    // Everything after the step it continues from is superseded.
    while (this.chain.length && this.chain[this.chain.length - 1].start >= segment.start) {
      const dropped = this.chain.pop();
      for (const records of Object.values(this.history))
        for (const [step, entry] of records) if (entry.seg === dropped) records.delete(step);
    }
    for (const records of Object.values(this.history))
      for (const step of records.keys()) if (step > segment.start) records.delete(step);
    this.chain.push(segment);
  }

  add(record, line) {
    const kind = record.type;
    if (kind === "run") {
      this.begin(new Segment(record.resumed_from_step ?? 0, record, line));
      this.runRecord = record;
      return;
    }
    let seg = this.chain.length ? this.chain[this.chain.length - 1] : null;
    if (kind === "checkpoint") { // a mark on the segment that wrote it; starts none
      if (seg && Number.isInteger(record.step)) this.history.checkpoint.set(record.step, {r: record, seg});
      return;
    }
    if (!KINDS.includes(kind)) return;
    const step = record.step;
    if (kind === "step" && (seg === null || (seg.run === null && seg.lastStep !== null && step <= seg.lastStep))) {
      // No run record: a step that does not increase is a restart.
      seg = new Segment(seg === null ? 0 : step - 1, null, line, step);
      this.begin(seg);
    } else if (seg === null) {
      seg = new Segment(0, null, line);
      this.begin(seg);
    }
    if (kind === "step") seg.lastStep = step;
    this.history[kind].set(step, {r: record, seg}); // a repeated step: the later record wins
  }

  // The segments drawn: the first, those with records, those with a run record.
  drawnChain() {
    const used = new Set();
    for (const kind of KINDS) for (const {seg} of this.history[kind].values()) used.add(seg);
    return this.chain.filter((seg, i) => i === 0 || used.has(seg) || seg.run);
  }
}

function sortedSteps(records, key) {
  const steps = [];
  for (const [step, {r}] of records) if (key === null || key in r) steps.push(step);
  return steps.sort((a, b) => a - b);
}

// step -> tokens seen, per segment (plot_run.py's x_of_tokens); null where a
// segment has no tokens per step (a file from before run records).
function tokensOf(chain) {
  const at = new Map();
  let prev = null;
  for (const seg of chain) {
    const tps = seg.tokensPerStep;
    if (tps === null) return null;
    if (prev === null) at.set(seg, [seg.start * tps, tps]);
    else {
      const [prevBase, prevTps] = at.get(prev);
      at.set(seg, [prevBase + (seg.start - prev.start) * prevTps, tps]);
    }
    prev = seg;
  }
  return (step, seg) => at.get(seg)[0] + (step - seg.start) * at.get(seg)[1];
}

function lowerBound(xs, v) {
  let lo = 0, hi = xs.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (xs[mid] < v) lo = mid + 1; else hi = mid; }
  return lo;
}

function upperBound(xs, v) {
  let lo = 0, hi = xs.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (xs[mid] <= v) lo = mid + 1; else hi = mid; }
  return lo;
}

// The smoothing, as plot_run.py's smooth_curve (the same operations in the
// same order, so the two give the same numbers): at each logged step s, a
// least-squares line through the finite values of the same segment within
// min(window/2, s/4) steps of s, read at s.
function smoothCurve(steps, values, segments, window) {
  const out = values.slice();
  if (!(window > 0)) return out;
  let i = 0;
  while (i < values.length) {
    let j = i;
    while (j < values.length && segments[j] === segments[i]) j++;
    const ok = [];
    for (let k = i; k < j; k++) if (Number.isFinite(values[k])) ok.push(k);
    const xs = ok.map(k => steps[k]);
    for (const k of ok) {
      const s = steps[k];
      const half = Math.min(window / 2, s / 4);
      const lo = lowerBound(xs, s - half), hi = upperBound(xs, s + half);
      let n = 0, sd = 0, sy = 0, sdd = 0, sdy = 0;
      for (let q = lo; q < hi; q++) {
        const m = ok[q], d = steps[m] - s;
        n += 1;
        sd += d;
        sy += values[m];
        sdd += d * d;
        sdy += d * values[m];
      }
      const meanD = sd / n, meanY = sy / n;
      const variance = sdd / n - meanD * meanD;
      if (n < 2 || variance <= 1e-12 * half * half) out[k] = meanY;
      else out[k] = meanY - (sdy / n - meanD * meanY) / variance * meanD;
    }
    i = j;
  }
  return out;
}

const PANELS = [ // name, record kind, key, smoothed: plot_run.py's run_series
  ["train_loss", "step", "loss", true],
  ["val_loss", "eval", "val_loss", false],
  ["hellaswag_acc_norm", "hellaswag", "acc_norm", false],
  ["hellaswag_acc", "hellaswag", "acc", false],
  ["lr", "step", "lr", false],
  ["tokens_per_s", "step", "tokens_per_s", true],
];

// What a run's panels show over axis "step" or "tokens": {panels, restarts,
// checkpoints}, or {error} where the axis cannot be drawn.
function runSeries(h, axis, window) {
  const chain = h.drawnChain();
  let xOf = step => step;
  if (axis === "tokens") {
    const tokens = tokensOf(chain);
    if (tokens === null)
      return {error: "no tokens per step (written by a gpt2_ddp from before run records): drawn over steps only"};
    xOf = tokens;
  }
  const index = new Map(chain.map((seg, i) => [seg, i]));
  const panels = {};
  for (const [name, kind, key, smoothed] of PANELS) {
    const records = h.history[kind];
    const steps = sortedSteps(records, key);
    const segs = steps.map(s => records.get(s).seg);
    const panel = {
      step: steps,
      segment: segs.map(seg => index.get(seg)),
      x: steps.map((s, i) => xOf(s, segs[i])),
      y: steps.map(s => records.get(s).r[key]),
    };
    if (smoothed) panel.smooth = smoothCurve(steps, panel.y, segs, window);
    panels[name] = panel;
  }
  const restarts = chain.slice(1).map(seg => {
    const step = seg.run !== null ? seg.start : seg.firstStep;
    return {step, x: xOf(step, seg), logged: seg.run === null};
  });
  const ckpt = h.history.checkpoint;
  const checkpoints = sortedSteps(ckpt, null).filter(s => index.has(ckpt.get(s).seg))
    .map(s => ({step: s, x: xOf(s, ckpt.get(s).seg)}));
  return {panels, restarts, checkpoints};
}

if (typeof module !== "undefined") module.exports = {RunHistory, smoothCurve, runSeries};

// ---- the page (browser only) ----

const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#17becf"]; // matplotlib's, as in plot_run.py's PNGs

function fmtSI(v) {
  const a = Math.abs(v);
  for (const [d, u] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]])
    if (a >= d) return +(v / d).toPrecision(4) + u;
  return String(+v.toPrecision(4));
}

function fmtHMS(seconds) {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
  return `${h}:${String(m).padStart(2, "0")}:${String(r).padStart(2, "0")}`;
}

function alpha(color, a) {
  const n = parseInt(color.slice(1), 16);
  return `rgba(${n >> 16},${(n >> 8) & 255},${n & 255},${a})`;
}

class Page {
  constructor(config) {
    this.config = config;
    this.runs = new Map(); // id -> {id, name, dir, color, hist, offset, line, file, ...}
    this.charts = new Map(); // panel -> {u, key}
    this.polls = 0;
    this.zoomed = false; // the x range of every panel narrowed by the reader
    this.syncing = false; // while the page itself sets the panels' x ranges
    this.axis = "step";
    this.window = config.smooth;
    this.logY = false;
    this.readState();
    const q = id => document.getElementById(id);
    q("axis").value = this.axis;
    q("window").value = String(this.window);
    q("logy").checked = this.logY;
    q("axis").onchange = e => { this.axis = e.target.value; this.changed(true, true); };
    q("window").onchange = e => {
      const w = Number(e.target.value);
      if (Number.isFinite(w) && w >= 0) { this.window = w; this.changed(true, true); }
    };
    q("logy").onchange = e => { this.logY = e.target.checked; this.changed(true); };
    window.addEventListener("resize", () => this.resize());
  }

  // The controls live in the address (#x=tokens&w=50&log=1): a reload keeps them.
  readState() {
    const p = new URLSearchParams(location.hash.slice(1));
    if (p.get("x") === "tokens") this.axis = "tokens";
    if (p.has("w") && Number(p.get("w")) >= 0) this.window = Number(p.get("w"));
    this.logY = p.get("log") === "1";
  }

  writeState() {
    const p = new URLSearchParams({x: this.axis, w: String(this.window), log: this.logY ? "1" : "0"});
    history.replaceState(null, "", "#" + p.toString());
  }

  runOf(info) {
    let run = this.runs.get(info.id);
    if (!run) {
      run = {id: info.id, name: info.name, dir: info.dir, color: COLORS[this.runs.size % COLORS.length],
             hist: new RunHistory(), offset: 0, line: 1, file: null, fetches: 0, shown: true,
             latest: {}, error: null, age: null, series: null, stale: true};
      this.runs.set(info.id, run);
    }
    run.name = info.name;
    return run;
  }

  // Records of one run, in file order; remembers the latest of each kind for the table.
  ingest(run, records, firstLine) {
    run.stale = true;
    records.forEach((r, i) => {
      run.hist.add(r, firstLine + i);
      if (r.type === "step" || r.type === "eval" || r.type === "hellaswag" || r.type === "checkpoint")
        run.latest[r.type] = r;
    });
  }

  reset(run) {
    run.hist = new RunHistory();
    run.latest = {};
    run.stale = true;
  }

  loadSnapshot(snapshot) {
    for (const info of snapshot.runs) {
      const run = this.runOf(info);
      this.ingest(run, info.records, 1);
      run.offset = info.offset;
      run.fetches = 1;
    }
    document.getElementById("status").textContent =
      `snapshot written ${snapshot.written} (tools/view_runs.py --html): not refreshing`;
    this.changed(true, true);
    document.body.dataset.state = "ready";
  }

  async poll() {
    const known = {};
    for (const run of this.runs.values()) known[run.id] = {offset: run.offset, line: run.line, file: run.file};
    let more = false;
    try {
      const response = await fetch("api/poll", {method: "POST", body: JSON.stringify({known})});
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const data = await response.json();
      let changed = false;
      for (const info of data.runs) {
        const run = this.runOf(info);
        if (info.reset) { this.reset(run); changed = true; }
        if (info.records.length) { this.ingest(run, info.records, info.first_line); run.fetches++; changed = true; }
        run.offset = info.offset;
        run.line = info.line;
        run.file = info.file;
        run.error = info.error;
        run.age = info.age_s;
        more = more || info.more;
      }
      this.polls++;
      document.body.dataset.polls = String(this.polls);
      document.getElementById("status").textContent = data.runs.length ? `${data.runs.length} run(s), ` +
        `refreshing every ${this.config.poll_s} s` : `no runs yet under ${this.config.paths.join(", ")}: waiting for a metrics.jsonl`;
      this.changed(changed);
      if (!more) document.body.dataset.state = "ready";
    } catch (e) {
      document.getElementById("status").textContent = `the server does not answer (${e.message}): retrying`;
    }
    setTimeout(() => this.poll(), more ? 0 : this.config.poll_s * 1000);
  }

  // Series are computed again for runs with new records, or for all when the
  // axis or the window changed (a long run's smoothing is the costly part).
  changed(redraw, all = false) {
    this.writeState();
    if (redraw) {
      for (const run of this.runs.values())
        if (all || run.stale) {
          run.series = runSeries(run.hist, this.axis, this.window);
          run.stale = false;
        }
      this.draw();
    }
    this.table();
  }

  visible() {
    return [...this.runs.values()].filter(r => r.shown && r.series && !r.series.error);
  }

  // The panels drawn: HellaSwag only where a run has it.
  panelList(runs) {
    const list = [["loss", "loss", "cross-entropy"]];
    if (runs.some(r => r.series.panels.hellaswag_acc_norm.x.length)) list.push(["hellaswag", "HellaSwag (acc_norm solid, acc dotted)", "accuracy"]);
    list.push(["lr", "learning rate", "lr"], ["speed", "throughput", "tokens/s"]);
    return list;
  }

  // uPlot's tables per panel: [x, y...] per run and series kind, joined on x.
  panelData(panel, runs) {
    const tables = [], series = [];
    const raw = this.window > 0 ? 0.3 : 1;
    const add = (run, p, label, style, smooth) => {
      const cols = [p.x, p.y];
      series.push(Object.assign({label: `${run.name}${label}`, stroke: alpha(run.color, smooth ? raw : 1),
                                 width: 1, points: {show: false}}, style));
      if (smooth && this.window > 0) {
        cols.push(p.smooth);
        series.push({label: `${run.name}${label} smoothed`, stroke: run.color, width: 1.5, points: {show: false}});
      }
      tables.push(cols);
    };
    for (const run of runs) {
      const p = run.series.panels;
      if (panel === "loss") {
        add(run, p.train_loss, "", {}, true);
        if (p.val_loss.x.length) add(run, p.val_loss, " val", {dash: [6, 3], width: 2, points: {show: true, size: 5}});
      } else if (panel === "hellaswag") {
        if (!p.hellaswag_acc_norm.x.length) continue;
        add(run, p.hellaswag_acc_norm, " acc_norm", {width: 1.5, points: {show: true, size: 5}});
        add(run, p.hellaswag_acc, " acc", {dash: [2, 3]});
      } else if (panel === "lr") add(run, p.lr, "", {width: 1.5});
      else add(run, p.tokens_per_s, "", {}, true);
    }
    if (!tables.length) return null;
    tables.push([this.extent(runs)]); // every panel over the same steps (no series)
    return {data: uPlot.join(tables), series};
  }

  // The steps (or tokens) all panels span: from the first record of any run to the last.
  extent(runs) {
    let lo = Infinity, hi = -Infinity;
    for (const run of runs)
      for (const p of Object.values(run.series.panels))
        if (p.x.length) { lo = Math.min(lo, p.x[0]); hi = Math.max(hi, p.x[p.x.length - 1]); }
    return lo <= hi ? [lo, hi] : [];
  }

  draw() {
    this.syncing = true; // the panels' own scale changes are not the reader's zoom
    try {
      this.drawPanels();
    } finally {
      this.syncing = false;
    }
  }

  drawPanels() {
    const runs = this.visible();
    const holder = document.getElementById("charts");
    const panels = runs.length ? this.panelList(runs) : [];
    const names = new Set(panels.map(p => p[0]));
    for (const [name, chart] of this.charts)
      if (!names.has(name)) { chart.u.destroy(); chart.el.remove(); this.charts.delete(name); }
    const width = Math.max(300, holder.clientWidth - 10);
    for (const [name, title, ylabel] of panels) {
      const pd = this.panelData(name, runs);
      if (!pd) continue;
      const key = JSON.stringify([pd.series.map(s => s.label), this.axis, this.logY, runs.map(r => r.color)]);
      let chart = this.charts.get(name);
      if (chart && chart.key === key) {
        chart.u.setData(pd.data, !this.zoomed);
        continue;
      }
      if (chart) chart.u.destroy();
      else {
        chart = {el: document.createElement("div")};
        chart.el.className = "panel";
        chart.el.id = "panel-" + name;
        holder.appendChild(chart.el);
      }
      chart.key = key;
      const xlabel = this.axis === "tokens" ? "tokens" : "step";
      const opts = {
        title: name === "loss" ? `loss (train smoothed over ${this.window} steps, raw faint; ▼ checkpoint, dashed line: restart)` : title,
        width, height: name === "loss" ? 320 : 220,
        scales: {x: {time: false}, y: name === "loss" && this.logY ? {distr: 3} : {}},
        axes: [{label: xlabel, values: (u, splits) => splits.map(fmtSI)},
               {label: ylabel, size: 70, values: (u, splits) => splits.map(v => v === null ? "" : name === "lr" ? v.toExponential(1) : fmtSI(v))}],
        series: [{label: xlabel, value: (u, v) => v === null ? "-" : fmtSI(v)}].concat(pd.series),
        cursor: {sync: {key: "runs"}},
        legend: {live: true},
        hooks: {
          draw: [u => this.marks(u, name)],
          setScale: [(u, scale) => this.zoom(u, scale)],
        },
      };
      chart.u = new uPlot(opts, pd.data, chart.el);
      const other = [...this.charts.values()].find(c => c !== chart);
      if (this.zoomed && other) chart.u.setScale("x", {min: other.u.scales.x.min, max: other.u.scales.x.max});
      this.charts.set(name, chart);
    }
    const notes = [];
    for (const run of this.runs.values())
      if (run.series && run.series.error && run.shown) notes.push(`${run.name}: ${run.series.error}`);
    document.getElementById("notes").textContent = notes.join("\n");
    holder.dataset.panels = [...this.charts.keys()].join(" ");
  }

  // A zoom (drag) or its undoing (double click) in one panel, in all of them.
  zoom(u, scale) {
    if (scale !== "x" || this.syncing || !u.data[0].length) return;
    const {min, max} = u.scales.x, xs = u.data[0];
    this.zoomed = min > xs[0] || max < xs[xs.length - 1];
    this.syncing = true;
    for (const chart of this.charts.values())
      if (chart.u !== u && (chart.u.scales.x.min !== min || chart.u.scales.x.max !== max))
        chart.u.setScale("x", {min, max});
    this.syncing = false;
  }

  resize() {
    const width = Math.max(300, document.getElementById("charts").clientWidth - 10);
    for (const chart of this.charts.values()) chart.u.setSize({width, height: chart.u.height});
  }

  // Restarts as dashed lines in every panel; on the loss panel their labels,
  // in rows so that none overlaps another, and checkpoints as triangles.
  marks(u, name) {
    const ctx = u.ctx, px = uPlot.pxRatio;
    const {left, top, width, height} = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    const labels = [];
    const runs = this.visible();
    for (const run of runs) {
      ctx.strokeStyle = run.color;
      ctx.lineWidth = px;
      ctx.setLineDash([5 * px, 4 * px]);
      for (const r of run.series.restarts) {
        const X = Math.round(u.valToPos(r.x, "x", true)) + 0.5;
        if (X < left || X > left + width) continue;
        ctx.beginPath();
        ctx.moveTo(X, top);
        ctx.lineTo(X, top + height);
        ctx.stroke();
        const text = (runs.length > 1 ? run.name + ": " : "") +
          (r.logged ? `restarted before step ${r.step}` : `resumed at step ${r.step}`);
        labels.push({X, text, color: run.color});
      }
      if (name === "loss") {
        ctx.setLineDash([]);
        ctx.fillStyle = run.color;
        for (const c of run.series.checkpoints) {
          const X = u.valToPos(c.x, "x", true), Y = top + height - 2 * px;
          ctx.beginPath();
          ctx.moveTo(X - 5 * px, Y - 8 * px);
          ctx.lineTo(X + 5 * px, Y - 8 * px);
          ctx.lineTo(X, Y);
          ctx.closePath();
          ctx.fill();
        }
      }
    }
    const placed = [];
    if (name === "loss") {
      ctx.setLineDash([]);
      ctx.font = `${11 * px}px sans-serif`;
      ctx.textAlign = "left"; // uPlot leaves its axes' alignment set
      ctx.textBaseline = "top";
      const rowHeight = 14 * px, gap = 4 * px;
      labels.sort((a, b) => a.X - b.X);
      for (const l of labels) {
        const w = ctx.measureText(l.text).width;
        let x0 = l.X + 3 * px;
        if (x0 + w > left + width) x0 = l.X - 3 * px - w; // left of its line at the right edge
        let row = 0;
        while (placed.some(p => p.row === row && x0 < p.x1 + gap && p.x0 < x0 + w + gap)) row++;
        const y = top + 3 * px + row * rowHeight;
        ctx.fillStyle = "rgba(255,255,255,0.8)";
        ctx.fillRect(x0 - px, y - px, w + 2 * px, rowHeight - 2 * px);
        ctx.fillStyle = l.color;
        ctx.fillText(l.text, x0, y);
        placed.push({row, x0, x1: x0 + w, text: l.text});
      }
      // Where the labels went, in CSS pixels, for the test's overlap check.
      u.root.dataset.labels = JSON.stringify(placed.map(p => ({text: p.text, row: p.row,
        x0: +(p.x0 / px).toFixed(1), x1: +(p.x1 / px).toFixed(1)})));
    }
    ctx.restore();
  }

  // The latest values of each run; every number also in data-value, exactly.
  table() {
    const body = document.getElementById("runs-body");
    const anyHella = [...this.runs.values()].some(r => r.latest.hellaswag);
    document.getElementById("runs").classList.toggle("no-hellaswag", !anyHella);
    for (const run of this.runs.values()) {
      let tr = body.querySelector(`tr[data-run="${CSS.escape(run.id)}"]`);
      if (!tr) {
        tr = document.createElement("tr");
        tr.dataset.run = run.id;
        body.appendChild(tr);
      }
      const step = run.latest.step, ev = run.latest.eval, hs = run.latest.hellaswag, ck = run.latest.checkpoint;
      const cfg = run.hist.runRecord ? run.hist.runRecord.config : {};
      const loss = run.series && !run.series.error ? run.series.panels.train_loss : null;
      const cells = [
        ["step", step && step.step, v => cfg.max_steps ? `${v} / ${cfg.max_steps}` : String(v)],
        ["loss", step && step.loss, v => v.toFixed(4)],
        ["loss_smooth", loss && loss.smooth.length ? loss.smooth[loss.smooth.length - 1] : undefined, v => v.toFixed(4)],
        ["val_loss", ev && ev.val_loss, v => `${v.toFixed(4)} @${ev.step}`],
        ["acc_norm", hs && hs.acc_norm, v => `${v.toFixed(4)} @${hs.step}`],
        ["lr", step && step.lr, v => v.toExponential(3)],
        ["tokens_per_s", step && step.tokens_per_s, v => v.toFixed(0)],
        ["eta_s", step && step.eta_s, v => cfg.max_steps && step.step >= cfg.max_steps ? "done" : fmtHMS(v)],
        ["checkpoint", ck && ck.step, v => String(v)],
        ["restarts", run.series && !run.series.error ? run.series.restarts.length : undefined, v => String(v)],
      ];
      tr.innerHTML = "";
      const name = document.createElement("td");
      name.className = "name";
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = run.shown;
      box.title = "show or hide this run";
      box.onchange = () => { run.shown = box.checked; this.draw(); };
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = run.color;
      name.append(box, swatch, run.name);
      name.title = run.dir;
      tr.appendChild(name);
      for (const [field, value, fmt] of cells) {
        const td = document.createElement("td");
        td.dataset.field = field;
        if (typeof value === "number") {
          td.dataset.value = String(value);
          td.textContent = fmt(value);
        } else td.textContent = "–";
        tr.appendChild(td);
      }
      const st = document.createElement("td");
      st.dataset.field = "status";
      st.textContent = run.error ? run.error : run.age === null ? "" : run.age < 60 ? `written ${Math.round(run.age)} s ago` : `idle ${fmtHMS(run.age)}`;
      if (run.error) st.className = "error";
      tr.appendChild(st);
      tr.dataset.offset = String(run.offset);
      tr.dataset.fetches = String(run.fetches);
    }
  }
}

if (typeof document !== "undefined") {
  window.addEventListener("load", () => {
    const config = JSON.parse(document.getElementById("config").textContent);
    const page = new Page(config);
    const snapshot = document.getElementById("snapshot");
    if (snapshot) page.loadSnapshot(JSON.parse(snapshot.textContent));
    else page.poll();
  });
}
