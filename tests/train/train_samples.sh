#!/usr/bin/env bash
# Samples during training: the tiny config, 20 steps, a sample every 10
# steps and at the end. The samples must be the same on 1 rank, again on
# 1 rank, and on 2 ranks (CPU backend: deterministic for the seed, for any
# rank count); the last one must be what gpt2_sample writes from the run's
# model.h5 with the same prompt, seed and top-k (one generation code); the
# step lines carry elapsed time and an ETA, also in metrics.jsonl.
# usage: train_samples.sh GPT2_DDP GPT2_SAMPLE WORK_DIR
set -euo pipefail
bin=$1 sample=$2 work=$3
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work" && mkdir -p "$work"
prompt="The meaning of life is"
args=(configs/tiny.ini max_steps=20 warmup_steps=5 eval_every=0 log_every=5 sample_every=10
      sample_tokens=24 "sample_prompt=$prompt" out_dir="$work")
for run in np1 np1_again np2; do
  np=1; [ "$run" = np2 ] && np=2
  mpi_run -np $np "$bin" "${args[@]}" run_name=$run >"$work/$run.log" 2>&1 || { cat "$work/$run.log"; exit 1; }
done
grep -E "^(sample|step )" "$work/np1.log"
expected=$("$sample" --weights "$work/np1/model.h5" --prompt "$prompt" --tokens 24 --seed 1337 --top-k 50)

/usr/bin/python3 - "$work" "$expected" <<'PY'
import json, os, re, sys
work, expected = sys.argv[1], sys.argv[2]
def samples(run):
    return [json.loads(l) for l in open(os.path.join(work, run, "samples.jsonl"))]
ref = samples("np1")
assert [s["step"] for s in ref] == [10, 20], f"sample steps {[s['step'] for s in ref]}, expected 10 and 20"
assert all(s["text"] and s["seed"] == 1337 and s["top_k"] == 50 for s in ref), ref
assert ref[0]["text"] != ref[1]["text"], "the model changed between steps 10 and 20 but the samples did not"
for run in ("np1_again", "np2"):
    other = samples(run)
    assert [s["text"] for s in other] == [s["text"] for s in ref], f"{run}: samples differ from np1's"
    print(f"{run}: the same samples as np1")
final = ref[-1]["prompt"] + ref[-1]["text"]
assert final == expected, f"gpt2_sample wrote {expected!r}, the run's final sample is {final!r}"
print("gpt2_sample on model.h5 gives the run's final sample")
log = open(os.path.join(work, "np1.log")).read()
assert log.rfind("sample    20 | " + final) > log.rfind("step    20/20"), "the run does not end with its sample"
lines = re.findall(r"^step .*\| (\d+:\d\d:\d\d) elapsed, eta (\d+:\d\d:\d\d)$", log, re.M)
assert len(lines) == 5 and lines[-1][1] == "0:00:00", f"step lines without elapsed/ETA: {lines}"
steps = [json.loads(l) for l in open(os.path.join(work, "np1", "metrics.jsonl")) if '"type":"step"' in l]
assert all(s["elapsed_s"] > 0 and s["eta_s"] >= 0 for s in steps) and steps[-1]["eta_s"] == 0, steps
assert steps[0]["eta_s"] > 0 and steps[-1]["elapsed_s"] > steps[0]["elapsed_s"], steps
print("ok: step lines and metrics.jsonl carry elapsed and ETA")
PY
