#!/usr/bin/env bash
# Overlap is real: with comm_trace=1 each rank records when each bucket's
# reduction was posted and when backward ended. The first bucket must be
# posted before backward ends, and the bucket count must follow bucket_mb.
# usage: ddp_overlap.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work"
for z in 1 0; do
  mpi_run -np 2 "$bin" configs/tiny.ini max_steps=3 warmup_steps=1 eval_every=0 zero_stage=$z bucket_mb=1 \
    comm_trace=1 out_dir="$work" run_name=z$z >"$work.z$z.log" 2>&1 || { cat "$work.z$z.log"; exit 1; }
done
/usr/bin/python3 - "$work" <<'PY'
import json, math, os, sys
work = sys.argv[1]
# The tiny model's flat buffer, from the tensor table (layout.c): 1 MiB
# buckets of fp32 are 262144 elements.
for z in (1, 0):
    for rank in (0, 1):
        events = [json.loads(l) for l in open(os.path.join(work, f"z{z}", f"trace_rank{rank}.jsonl"))]
        for step in (1, 2, 3):
            posted = [e for e in events if e["type"] == "bucket_posted" and e["step"] == step]
            end = [e for e in events if e["type"] == "backward_end" and e["step"] == step][0]
            n_elements = posted[-1]["end"]
            expected = math.ceil(n_elements / 262144)
            first = min(e["ms"] for e in posted)
            print(f"zero_stage {z} rank {rank} step {step}: {len(posted)} buckets (expected {expected}), "
                  f"first posted at {first:.2f} ms, backward ended at {end['ms']:.2f} ms")
            assert len(posted) == expected == end["n_buckets"], "bucket count does not follow bucket_mb"
            assert all(b["end"] - b["begin"] <= 262144 for b in posted)
            assert first < end["ms"], "the first bucket was not posted before backward ended"
            # Posted in buffer order (the order backward finishes them), each once.
            assert [e["bucket"] for e in posted] == list(range(len(posted)))
            assert all(a["ms"] <= b["ms"] and a["end"] == b["begin"] for a, b in zip(posted, posted[1:]))
print("overlap: OK")
PY
