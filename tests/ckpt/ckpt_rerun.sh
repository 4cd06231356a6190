#!/usr/bin/env bash
# Honest re-runs (CPU ranks, tiny config, a few steps each):
#  (1) every start writes a run record first (python json reads it: world,
#      backend, devices, resumed_from_step, config);
#  (2) a finished run started again exits 0 and touches no file (paths,
#      sizes, mtimes of everything, directories included, before and after);
#  (3) a resume with another lr is refused (exit 2, both values named) and
#      accepted with allow_changed=lr: the change printed, the logged lr
#      follows the new schedule (computed here, as nanoGPT's get_lr does);
#  (4) raising max_steps needs allow_changed=max_steps, then continues;
#      seq_len never changes, even when listed;
#  (5) a finished run without checkpoints (checkpoint_every = 0, as
#      configs/tiny.ini) started again: exit 0 untouched; with another lr
#      or resume=none: exit 2, model.h5 unchanged;
#  (6) refused starts (bad init_from, missing val_data, a typo in
#      allow_changed) leave no run directory;
#  (7) two ranks: the run record says world 2, a finished run is left alone.
# usage: ckpt_rerun.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
out=$work/out # the run directories; logs and listings stay outside
mkdir "$out"
run=(configs/tiny.ini max_steps=6 warmup_steps=2 eval_every=3 eval_batches=2 log_every=1
     checkpoint_every=3 out_dir="$out")
py=/usr/bin/python3

# Every path under $1 with its type, size and mtime (ns), sorted.
snapshot() { find "$1" -printf '%p %y %s %T@\n' | LC_ALL=C sort; }
# expect RC LOG CMD...: runs CMD, its output into LOG, and checks the exit code.
expect() {
  local want=$1 log=$2; shift 2
  set +e; "$@" >"$log" 2>&1; local rc=$?; set -e
  [ "$rc" -eq "$want" ] || fail "$* exited $rc, expected $want" "$log"
}
has() { grep -qF -- "$2" "$1" || fail "$1 lacks: $2" "$1"; }
untouched() { snapshot "$1" >"$work/after"; diff "$2" "$work/after" || fail "$3 changed $1"; }

# (1) the run record of a fresh start
expect 0 "$work/a1.log" "$bin" "${run[@]}" run_name=a
$py - "$out/a/metrics.jsonl" <<'PY'
import json, re, sys
records = [json.loads(l) for l in open(sys.argv[1])]
run = records[0]
assert run["type"] == "run", f"first record is {run['type']}, not the run record"
assert [r["type"] for r in records].count("run") == 1
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", run["start_time"]), run["start_time"]
assert isinstance(run["git"], str) and run["git"] and isinstance(run["version"], str)
assert (run["world"], run["backend"], run["devices"]) == (1, "cpu", ["cpu"]), run
assert run["resumed_from_step"] == 0 and run["tokens_per_step"] == 1024, run
c = run["config"]
assert c["lr"] == 0.003 and c["max_steps"] == 6 and c["n_layer"] == 2, c
assert c["lr_schedule"] == "cosine" and c["zero_stage"] == 1 and c["seed"] == 1337, c
assert c["save_init"] is False and c["allow_changed"] == "", c
steps = [r["step"] for r in records if r["type"] == "step"]
assert steps == list(range(1, 7)), steps
print("run record: first, one, with world 1, cpu, resumed_from_step 0, the config")
PY

# (2) a finished run started again
snapshot "$out" >"$work/before"
expect 0 "$work/a2.log" "$bin" "${run[@]}" run_name=a log_every=2
has "$work/a2.log" "$out/a finished at step 6 of max_steps = 6: nothing to do (to train further, raise max_steps and add allow_changed=max_steps)"
untouched "$out" "$work/before" "a finished run started again"
echo "finished run started again: exit 0, no file touched"

# (3) another lr on a resume (back to step 3 of the same run)
back=(resume="$out/a/step_00000003" lr=1e-3)
expect 2 "$work/a3.log" "$bin" "${run[@]}" run_name=a "${back[@]}"
has "$work/a3.log" "lr: 0.003 in the checkpoint, 0.001 now"
has "$work/a3.log" "add allow_changed=lr"
untouched "$out" "$work/before" "a refused resume"
expect 0 "$work/a4.log" "$bin" "${run[@]}" run_name=a "${back[@]}" allow_changed=lr
has "$work/a4.log" "resume: lr 0.003 -> 0.001 (allowed by allow_changed)"
has "$work/a4.log" "resume: the lr of step 4 is"
$py - "$out/a/metrics.jsonl" <<'PY'
import json, math, sys
records = [json.loads(l) for l in open(sys.argv[1])]
starts = [i for i, r in enumerate(records) if r["type"] == "run"]
assert len(starts) == 2, f"{len(starts)} run records, expected 2"
run = records[starts[1]]
assert run["resumed_from_step"] == 3 and run["config"]["lr"] == 0.001, run
def lr(step, peak=1e-3, warmup=2, max_steps=6, frac=0.1):  # step 0-based
    if step < warmup: return peak * (step + 1) / warmup
    ratio = (step - warmup) / (max_steps - warmup)
    return peak * frac + 0.5 * (1 + math.cos(math.pi * ratio)) * (peak - peak * frac)
seg = [r for r in records[starts[1]:] if r["type"] == "step"]
assert [r["step"] for r in seg] == [4, 5, 6], [r["step"] for r in seg]
for r in seg:
    want = lr(r["step"] - 1)
    assert abs(r["lr"] - want) <= 1e-6 * want, (r["step"], r["lr"], want)
print("resume with allow_changed=lr: run record resumed_from_step 3, lr of steps 4-6 =", [r["lr"] for r in seg])
PY

# (4) more steps, and a key that never changes
expect 2 "$work/a5.log" "$bin" "${run[@]}" run_name=a lr=1e-3 max_steps=8
has "$work/a5.log" "max_steps: 6 in the checkpoint, 8 now"
expect 0 "$work/a6.log" "$bin" "${run[@]}" run_name=a lr=1e-3 max_steps=8 allow_changed=max_steps
has "$work/a6.log" "resume: max_steps 6 -> 8 (allowed by allow_changed)"
has "$work/a6.log" "resume: the lr of step 7 is"
grep -q '"type":"step","step":8,' "$out/a/metrics.jsonl" || fail "no step 8 after raising max_steps"
snapshot "$out" >"$work/before"
expect 2 "$work/a7.log" "$bin" "${run[@]}" run_name=a lr=1e-3 max_steps=8 seq_len=32 \
  allow_changed=seq_len
has "$work/a7.log" "seq_len: 64 in the checkpoint, 32 now (never changes on a resume)"
has "$work/a7.log" "init_from=$out/a/step_00000008"
untouched "$out" "$work/before" "a resume with another seq_len"
echo "max_steps raised with allow_changed: continued to step 8; seq_len refused even when allowed"

# (5) a finished run without checkpoints
nock=("${run[@]}" checkpoint_every=0 max_steps=4 run_name=b)
expect 0 "$work/b1.log" "$bin" "${nock[@]}"
sum=$(md5sum <"$out/b/model.h5")
snapshot "$out" >"$work/before"
expect 0 "$work/b2.log" "$bin" "${nock[@]}"
has "$work/b2.log" "$out/b finished at step 4 of max_steps = 4: nothing to do"
expect 2 "$work/b3.log" "$bin" "${nock[@]}" lr=1e-3
has "$work/b3.log" "holds the final weights (model.h5) of another run"
has "$work/b3.log" "lr: 0.003 there, 0.001 now"
has "$work/b3.log" "mv $out/b $out/b.old"
expect 2 "$work/b4.log" "$bin" "${nock[@]}" resume=none
has "$work/b4.log" "resume = none, but $out/b holds the final weights"
untouched "$out" "$work/before" "re-runs of a finished run without checkpoints"
[ "$(md5sum <"$out/b/model.h5")" = "$sum" ] || fail "model.h5 changed"
echo "finished run without checkpoints: exit 0 untouched; another lr or resume=none: exit 2, model.h5 unchanged"

# (6) refused starts leave no run directory
expect 2 "$work/c1.log" "$bin" "${run[@]}" run_name=c init_from="$work/no_such_model.h5"
[ ! -e "$out/c" ] || fail "a bad init_from left $out/c"
set +e; "$bin" "${run[@]}" run_name=d val_data="$work/none_*.bin" >"$work/d1.log" 2>&1; rc=$?; set -e
[ $rc -ne 0 ] && [ ! -e "$out/d" ] || fail "missing val_data: exit $rc, or $out/d left" "$work/d1.log"
expect 2 "$work/e1.log" "$bin" "${run[@]}" run_name=e allow_changed=lr,max_step
has "$work/e1.log" "'max_step' is not a key (did you mean 'max_steps'?)"
[ ! -e "$out/e" ] || fail "a bad allow_changed left $out/e"
echo "refused starts (init_from, val_data, allow_changed): no run directory"

# (7) two ranks
expect 0 "$work/f1.log" mpi_run -np 2 "$bin" "${run[@]}" run_name=f max_steps=3 eval_every=0
snapshot "$out" >"$work/before"
expect 0 "$work/f2.log" mpi_run -np 2 "$bin" "${run[@]}" run_name=f max_steps=3 eval_every=0
has "$work/f2.log" "finished at step 3 of max_steps = 3"
expect 2 "$work/f3.log" mpi_run -np 2 "$bin" "${run[@]}" run_name=f max_steps=3 eval_every=0 lr=1e-3
untouched "$out" "$work/before" "two ranks re-running a finished run"
$py - "$out/f/metrics.jsonl" <<'PY'
import json, sys
run = json.loads(open(sys.argv[1]).readline())
assert run["type"] == "run" and run["world"] == 2 and run["devices"] == ["cpu"], run
print("two ranks: run record with world 2; finished run left alone, another lr refused")
PY
echo "ok"
