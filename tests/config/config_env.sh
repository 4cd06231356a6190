#!/usr/bin/env bash
# ${VAR} in path keys through the real trainer (CPU ranks, tiny config):
#   - out_dir=$WORK/${GPT2_T_JOB} (a Slurm-style job id): the run directory
#     created is $WORK/4242/env, and no directory named '${GPT2_T_JOB}';
#   - init_from=${GPT2_T_DIR}/model.h5 (in the .ini): the run starts from
#     the expanded path;
#   - --print-config shows the expanded value and the text as written as a
#     comment, and its output reads back identically (the comment aside);
#   - $${ is a literal ${ (printed so that it reads back);
#   - an unset variable: exit 2 naming the key, the variable and the fix, on
#     1 rank, and on 2 ranks where only rank 1 lacks it (as on another node
#     without mpirun -x): every rank exits 2, one message, from rank 1.
# usage: config_env.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || cat "$2"; exit 1; }
export GPT2_T_JOB=4242 GPT2_T_DIR="$work/4242/env"
run=(configs/tiny.ini max_steps=1 warmup_steps=0 eval_every=0 log_every=1)

echo "check: out_dir=\$WORK/\${GPT2_T_JOB} creates \$WORK/4242/env"
"$bin" "${run[@]}" "out_dir=$work/\${GPT2_T_JOB}" run_name=env >"$work/env.log" 2>&1 \
  || fail "the run with \${GPT2_T_JOB} in out_dir" "$work/env.log"
[ -s "$work/4242/env/model.h5" ] || fail "no $work/4242/env/model.h5" "$work/env.log"
[ ! -e "$work/\${GPT2_T_JOB}" ] || fail "a directory named literally \${GPT2_T_JOB}" "$work/env.log"
grep -q "run dir $work/4242/env\$" "$work/env.log" || fail "run dir not the expanded path" "$work/env.log"
# The run prints a summary, not the config: --print-config of the same line.
"$bin" --print-config "${run[@]}" "out_dir=$work/\${GPT2_T_JOB}" run_name=env >"$work/env.print" 2>&1 \
  || fail "--print-config of the run with \${GPT2_T_JOB} in out_dir" "$work/env.print"
grep -E "^(out_dir = |# out_dir as written)" "$work/env.print"
grep -q "^out_dir = $work/4242\$" "$work/env.print" || fail "out_dir not expanded" "$work/env.print"
grep -q "^# out_dir as written: $work/\${GPT2_T_JOB}\$" "$work/env.print" || fail "no as-written comment" "$work/env.print"

echo "check: init_from = \${GPT2_T_DIR}/model.h5 in the .ini"
cat >"$work/from.ini" <<'INI'
init_from = ${GPT2_T_DIR}/model.h5   # the weights of the run above
INI
"$bin" --print-config "$work/from.ini" >"$work/from.print" || fail "--print-config" "$work/from.print"
grep -q "^init_from = $work/4242/env/model.h5\$" "$work/from.print" || fail "init_from not expanded" "$work/from.print"
"$bin" "${run[@]}" init_from="\${GPT2_T_DIR}/model.h5" "out_dir=$work" run_name=from >"$work/from.log" 2>&1 \
  || fail "the run from \${GPT2_T_DIR}/model.h5" "$work/from.log"
grep "^initialised from" "$work/from.log"
grep -q "^initialised from $work/4242/env/model.h5\$" "$work/from.log" || fail "not started from the expanded path" "$work/from.log"

echo "check: --print-config reads back; \$\${ stays a literal \${"
"$bin" --print-config "${run[@]}" "out_dir=/scratch/\${GPT2_T_JOB}" 'run_name=r$${HOME}' \
  'train_data=data/$$x/${GPT2_T_JOB}_*.bin' >"$work/first.ini" || fail "--print-config" "$work/first.ini"
grep -E '^(out_dir|run_name|train_data|# .* as written)' "$work/first.ini"
grep -q '^run_name = r\$\${HOME}$' "$work/first.ini" || fail "run_name not escaped" "$work/first.ini"
grep -q '^train_data = data/\$x/4242_\*.bin$' "$work/first.ini" || fail "train_data" "$work/first.ini"
"$bin" --print-config "$work/first.ini" >"$work/second.ini" || fail "reading back" "$work/second.ini"
if ! diff <(grep -v ' as written: ' "$work/first.ini") "$work/second.ini"; then
  fail "the printed config does not read back identically"
fi
"$bin" --print-config "$work/second.ini" run_name=x >/dev/null || fail "second read"

echo "check: an unset variable -> exit 2 naming key and variable"
unset GPT2_T_UNSET
rc=0
"$bin" "${run[@]}" "out_dir=$work/\${GPT2_T_UNSET}" >"$work/unset.log" 2>&1 || rc=$?
cat "$work/unset.log"
[ "$rc" -eq 2 ] || fail "exit code $rc, expected 2" "$work/unset.log"
grep -q "error: out_dir = $work/\${GPT2_T_UNSET}: environment variable GPT2_T_UNSET is not set (set it where the job starts, and under mpirun on other nodes pass it with -x GPT2_T_UNSET" "$work/unset.log" \
  || fail "the message" "$work/unset.log"

echo "check: set on rank 0 only (2 ranks) -> every rank exits 2, rank 1 names it"
rc=0
GPT2_T_HALF=x mpi_run -np 2 sh -c '[ "$OMPI_COMM_WORLD_RANK" = 0 ] || unset GPT2_T_HALF; exec "$@"' sh \
  "$bin" "${run[@]}" "out_dir=$work/half" 'run_name=r${GPT2_T_HALF}' >"$work/half.log" 2>&1 || rc=$?
cat "$work/half.log"
[ "$rc" -eq 2 ] || fail "exit code $rc, expected 2" "$work/half.log"
n=$(grep -c '\[rank 1/2 .*\]: error: run_name = r${GPT2_T_HALF}: environment variable GPT2_T_HALF is not set' "$work/half.log" || true)
[ "$n" -eq 1 ] || fail "$n messages from rank 1, expected 1" "$work/half.log"
[ ! -e "$work/half" ] || fail "rank 0 went on and created its run directory" "$work/half.log"
echo "config_env: OK"
