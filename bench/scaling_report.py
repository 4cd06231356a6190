#!/usr/bin/env python3
"""Numbers and tables for bench/bench_scaling.sh.

  scaling_report.py parse KIND RUN_DIR NP KEY=VALUE...
      one result line from a trainer run: median tokens/s and step ms after
      warm-up (metrics.jsonl), exposed communication and peak GPU memory (the
      run's log, RUN_DIR.log)
  scaling_report.py report RESULTS
      the scaling table (ours and PyTorch DDP) and the memory table
"""
import json
import re
import statistics
import sys


def parse(kind, run_dir, np_, args):
    kv = dict(a.split("=", 1) for a in args)
    rows = [json.loads(l) for l in open(run_dir + "/metrics.jsonl")]
    rows = [r for r in rows if r.get("type") == "step"]
    rows = rows[min(5, len(rows) // 3):] or rows
    tps = statistics.median(r["tokens_per_s"] for r in rows)
    ms = statistics.median(r["ms"] for r in rows)
    log = open(run_dir + ".log").read()
    m = re.search(r"median of \d+ steps: ([0-9.]+) ms per step", log)
    exposed = float(m.group(1)) if m else 0.0
    m = re.search(r"peak GPU memory: ([0-9.]+) GiB on rank 0, ([0-9.]+) GiB the most on any rank "
                  r"\(estimate ([0-9.]+) GiB", log)
    peak, peak_max, est = (float(g) for g in m.groups()) if m else (0.0, 0.0, 0.0)
    cfg = kind[4:] if kind.startswith("mem_") else "124M"
    m = re.search(r"ZeRO-1's data moved by (copy engines|NCCL)", log)
    transport = {"copy engines": "copy_engines", "NCCL": "nccl"}[m.group(1)] if m else "-"
    print(f"ours kind={kind} cfg={cfg} micro={kv.get('micro_batch', '?')} n={np_} z={kv.get('zero_stage', '1')} "
          f"t={transport} tps={tps:.0f} ms={ms:.2f} "
          f"exposed={exposed:.3f} peak={peak:.2f} peak_max={peak_max:.2f} est={est:.2f}")


def load(path):
    machine, ours, torch = "?", [], []
    for line in open(path):
        if line.startswith("machine "):
            machine = line.split(" ", 1)[1].strip()
        elif line.startswith("ours "):
            ours.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
        elif line.startswith("torchddp "):
            torch.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
    return machine, ours, torch


def report(path):
    machine, ours, torch = load(path)
    # One GPU on each GPU (GPU 0's is the first no-accumulation run of one
    # rank): N GPUs step at the pace of the slowest of GPUs 0..N-1.
    single = {int(r["kind"][len("single_gpu"):]): float(r["tps"])
              for r in ours if r["kind"].startswith("single_gpu")}
    gpu0 = next((float(r["tps"]) for r in ours if r["kind"] == "noaccum" and r["n"] == "1"), 0.0)
    if gpu0:
        single[0] = gpu0

    def slowest(n):
        """The slowest of GPUs 0..n-1 against GPU 0 (1.0 where not all were measured)."""
        known = [single[g] for g in range(n) if g in single]
        return min(known) / gpu0 if gpu0 and len(known) == n else 1.0

    print(f"\n=== GPT-2 124M, micro-batch 32, T=1024, bf16 | {machine} ===")
    if len(single) > 1:
        print("one GPU on each GPU, tok/s: " + ", ".join(
            f"GPU {g} {single[g]:.0f} ({100 * (single[g] / gpu0 - 1):+.1f}%)" for g in sorted(single)))
    print(f"{'batch':38} {'GPUs':>4} | {'ours tok/s':>11} {'per GPU':>8} {'scaling':>8} {'slowest':>8} {'step ms':>8} "
          f"{'exposed comm':>17} | {'DDP tok/s':>10} {'per GPU':>8} {'scaling':>8} | {'ours/DDP':>8}")
    for kind, label, accum_of in (("noaccum", "32K x N, no accum", lambda n: 1),
                                  ("accum", "0.5M (accumulation)", lambda n: 16 // n)):
        one_shown = False
        # ZeRO-1 by each transport (the one-GPU run heads the first), then zero_stage 0
        for z, transport in (("1", "copy_engines"), ("1", "nccl"), ("0", None)):
            many = [r for r in ours if r["kind"] == kind and r["z"] == z and r["n"] != "1"
                    and (transport is None or r.get("t", "nccl") == transport)]
            if not many:
                continue
            one = [] if one_shown else [r for r in ours if r["kind"] == kind and r["n"] == "1"]
            one_shown = True
            runs = sorted(one + many, key=lambda r: int(r["n"]))
            base = next((float(r["tps"]) for r in ours if r["kind"] == kind and r["n"] == "1"), 0.0)
            tbase = next((float(t["tok/s"]) for t in torch if t["N"] == "1" and t["accum"] == str(accum_of(1))), 0.0)
            for r in runs:
                n, tps, ms, exp = int(r["n"]), float(r["tps"]), float(r["ms"]), float(r["exposed"])
                eff = tps / (n * base) if base else 0.0
                t = next((t for t in torch if t["N"] == str(n) and t["accum"] == str(accum_of(n))), None) if z == "1" else None
                ttps = float(t["tok/s"]) if t else 0.0
                teff = ttps / (n * tbase) if t and tbase else 0.0
                zl = {"copy_engines": "ZeRO-1, copy engines", "nccl": "ZeRO-1, NCCL"}.get(transport, "zero 0")
                exp_txt = f"{exp:6.2f} ms {100 * exp / ms:4.1f}%" if n > 1 else f"{'-':>17}"
                tt = f"{ttps:10.0f} {ttps / n:8.0f} {100 * teff:7.1f}%" if t else f"{'-':>10} {'-':>8} {'-':>8}"
                ratio = f"{tps / ttps:8.3f}" if t else f"{'-':>8}"
                print(f"{label + ', ' + zl:38} {n:4d} | {tps:11.0f} {tps / n:8.0f} {100 * eff:7.1f}% "
                      f"{100 * eff / slowest(n):7.1f}% {ms:8.2f} "
                      f"{exp_txt:>17} | {tt} | {ratio}")
    mem = [r for r in ours if r["kind"].startswith("mem_") or r["kind"] == "noaccum"]
    if not mem:
        return
    print(f"\n=== peak GPU memory per rank, GiB: measured (cudaMemGetInfo, rank 0 / most of any rank) | estimate (dry run) | {machine} ===")
    print(f"{'config':7} {'micro':>5} {'GPUs':>4} | {'ZeRO-1 measured':>16} {'estimate':>9} | {'zero 0 measured':>16} {'estimate':>9}")
    keys = sorted({(r["cfg"], int(r["n"])) for r in mem}, key=lambda k: (float(k[0][:-1]), k[1]))
    for cfg, n in keys:
        cell = {}
        for z in ("1", "0"):
            r = next((r for r in mem if r["cfg"] == cfg and int(r["n"]) == n and r["z"] == z), None)
            if n == 1 and z == "0":
                r = cell.get("1")
            cell[z] = r
        def fmt(r):
            return f"{float(r['peak']):7.2f} / {float(r['peak_max']):6.2f} {float(r['est']):9.2f}" if r and float(r["peak"]) else f"{'-':>16} {'-':>9}"
        micro = (cell["1"] or cell["0"] or {}).get("micro", "?")
        print(f"{cfg:7} {micro:>5} {n:4d} | {fmt(cell['1'])} | {fmt(cell['0'])}")


if __name__ == "__main__":
    if sys.argv[1] == "parse":
        parse(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        report(sys.argv[2])
