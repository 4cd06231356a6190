#!/usr/bin/env bash
# What a run prints before its first step: a few lines (environment,
# version and run dir, model, batch, schedule, memory), naming the run dir
# and the parameter count GPT-2's formula gives for configs/tiny.ini; not
# the resolved config (that is --print-config). Then a 2-rank run with
# checkpoints, evaluations and samples whose every line of stdout and
# stderr comes from rank 0 (mpirun --output-filename splits them by rank).
# usage: messages_startup.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || { echo "---- $2"; cat "$2"; }; exit 1; }
common=(max_steps=4 warmup_steps=1 eval_every=2 log_every=1)

# (1) one rank: the summary
"$bin" configs/tiny.ini "${common[@]}" out_dir="$work/one" >"$work/one.log" 2>&1 ||
  fail "the 1-rank run exited $?" "$work/one.log"
# GPT-2's parameter count (wte, wpe, per block 12 C^2 + 13 C, final LayerNorm)
# from the sizes in tiny.ini, read by Python's own INI parser.
params=$(/usr/bin/python3 - <<'PY'
import configparser
c = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
c.read("configs/tiny.ini")
m = c["model"]
L, C, V, T = (int(m[k]) for k in ("n_layer", "n_embd", "vocab_size", "block_size"))
print(V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C)
PY
)
head=$(sed -n '/^\(step\|eval\) /q;p' "$work/one.log" | grep -v '^note:' || true)
n=$(printf '%s\n' "$head" | wc -l)
echo "start-up output, $n lines:"; printf '%s\n' "$head"
[ "$n" -le 10 ] || fail "$n lines before the first step or eval line (at most 10)" "$work/one.log"
grep -qF "run dir $work/one/tiny" <<<"$head" || fail "the run dir is not named" "$work/one.log"
grep -qE "(^|[^0-9])$params parameters" <<<"$head" ||
  fail "the parameter count $params (GPT-2's formula) is not named" "$work/one.log"
! grep -qE '^\[model\]|^n_layer = |resolved config' <<<"$head" ||
  fail "the resolved config is still printed" "$work/one.log"
grep -q '^step     4/4 ' "$work/one.log" || fail "the run did not log its steps" "$work/one.log"
# A dry run still itemises the memory estimate.
"$bin" configs/tiny.ini dry_run=true out_dir="$work/dry" >"$work/dry.log" 2>&1 ||
  fail "the dry run exited $?" "$work/dry.log"
for item in "optimizer state" activations total; do
  grep -q "^  $item " "$work/dry.log" || fail "dry_run does not itemise '$item'" "$work/dry.log"
done

# (2) two ranks: nothing from rank 1
mpi_run -np 2 --output-filename "$work/split" "$bin" configs/tiny.ini "${common[@]}" \
  checkpoint_every=2 sample_every=4 sample_tokens=4 out_dir="$work/two" >"$work/two.log" 2>&1 ||
  fail "the 2-rank run exited $?" "$work/two.log"
r0=$(find "$work/split" -path '*rank.0*' -name stdout) r1=$(find "$work/split" -path '*rank.1*' -type f)
[ -n "$r0" ] || fail "mpirun --output-filename wrote no file for rank 0" "$work/two.log"
for pattern in "run dir $work/two/tiny" "step     4/4 " "checkpoint: step 4 saved" "sample     4 |" \
               "saved weights to" "param checksum rank 1: "; do
  grep -qF "$pattern" "$r0" || fail "rank 0 did not print '$pattern'" "$r0"
done
for f in $r1; do
  [ ! -s "$f" ] || fail "rank 1 printed $(wc -l <"$f") line(s) to $(basename "$f")" "$f"
done
echo "ok: $n start-up lines; rank 1 printed nothing ($(echo $r1 | wc -w) file(s), all empty)"
