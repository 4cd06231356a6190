#!/usr/bin/env python3
"""The report of bench/bench_recipe.sh: each recipe's validation curve (from
its metrics.jsonl), the steps it needs to reach the first recipe's final
validation loss (linear between evaluations; none if it never does), one
comparable BENCH line, recipe.json, and recipe.png where matplotlib is
importable.

usage: recipe_report.py OUT_DIR CONFIG BATCH STEPS GPU NAME..."""
import json
import os
import sys


def curve(run_dir):
    """[(step, val_loss)] of a run, a resumed step counted once."""
    evals = {}
    for line in open(os.path.join(run_dir, "metrics.jsonl")):
        r = json.loads(line)
        if r.get("type") == "eval":
            evals[r["step"]] = r["val_loss"]
    return sorted(evals.items())


def steps_to(points, target):
    """The first step where the curve reaches target, linear between
    evaluations; None if it never does."""
    for (s0, l0), (s1, l1) in zip(points, points[1:]):
        if l1 <= target:
            return s1 if l0 == l1 else s0 + (s1 - s0) * (l0 - target) / (l0 - l1)
    return None


def main():
    out, config, batch, steps, gpu, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6:]
    curves = {n: curve(os.path.join(out, n)) for n in names}
    ref = names[0]
    ref_final = curves[ref][-1][1]
    with open(os.path.join(out, names[0], "metrics.jsonl")) as f:
        cfg = json.loads(f.readline())["config"]
    model = f"{cfg['n_layer']}x{cfg['n_embd']}"
    steps_all = sorted({s for c in curves.values() for s, _ in c})
    print(f"{'step':>6} " + " ".join(f"{n:>12}" for n in names))
    for s in steps_all:
        row = [dict(curves[n]).get(s) for n in names]
        print(f"{s:6d} " + " ".join(f"{v:12.4f}" if v is not None else f"{'':>12}" for v in row))
    parts, result = [], {"model": model, "batch": batch, "steps": steps, "gpu": gpu, "ref": ref,
                         "ref_final": ref_final, "recipes": {}}
    for n in names:
        reach = steps_to(curves[n], ref_final)
        share = f"{100 * reach / steps:.0f}%" if reach is not None else "never"
        parts.append(f"{n}={'%.0f' % reach if reach is not None else '-'}({share})")
        result["recipes"][n] = {"curve": curves[n], "steps_to_ref": reach, "final": curves[n][-1][1]}
    # After warm-up, never worse than the reference at equal steps (the
    # issue's second target): the largest excess over the reference.
    warm = max(1, steps // 20)
    for n in names[1:]:
        ref_at = dict(curves[ref])
        excess = max((l - ref_at[s] for s, l in curves[n] if s >= warm and s in ref_at), default=0.0)
        result["recipes"][n]["max_excess_over_ref"] = excess
        parts.append(f"{n}_worst_vs_ref={excess:+.4f}")
    print(f"BENCH recipe model={model} batch={batch} steps={steps} ref={ref} "
          f"ref_final={ref_final:.4f} " + " ".join(parts) + f" gpu={gpu}")
    json.dump(result, open(os.path.join(out, "recipe.json"), "w"), indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return 0
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n in names:
        s, l = zip(*curves[n][1:]) if len(curves[n]) > 1 else zip(*curves[n])
        ax.plot(s, l, marker="o", ms=3, label=n)
    ax.axhline(ref_final, color="gray", ls="--", lw=0.8, label=f"{ref}'s final ({ref_final:.3f})")
    ax.set_xlabel("step")
    ax.set_ylabel("validation loss")
    ax.set_title(f"GPT-2 {model}, {batch} tokens/step, bench corpus ({gpu})")
    lo = min(l for c in curves.values() for _, l in c)
    top = max(l for c in curves.values() for s, l in c if s > 0)  # the first evaluation's, not step 0's
    ax.set_ylim(lo - 0.1, min(top, lo + 4.0) + 0.1)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "recipe.png"), dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
