#!/usr/bin/env bash
# A failure on one rank ends every rank with that rank's message and a
# non-zero exit, within a bounded time: (1) rank 1 alone reads a corrupt
# shard (its train_data expands ${OMPI_COMM_WORLD_RANK}); (2) one rank is
# killed with SIGKILL in the middle of training. usage: ddp_abort.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work"; mkdir -p "$work"/{0,1,2}
good=$PWD/data/nlp-corpus/nlp_train_000000.bin
for r in 0 1 2; do ln -s "$good" "$work/$r/train_000.bin"; done
rm "$work/1/train_000.bin"
python3 -c "import sys; d=bytearray(open(sys.argv[1],'rb').read()); d[0:4]=(12345).to_bytes(4,'little'); open(sys.argv[2],'wb').write(d)" "$good" "$work/1/train_000.bin"

start=$(date +%s)
set +e
timeout 60 mpirun --bind-to none -np 3 "$bin" configs/tiny.ini total_batch=1536 max_steps=5 warmup_steps=1 eval_every=0 \
  train_data="$work/\${OMPI_COMM_WORLD_RANK}/train_*.bin" out_dir="$work/out" >"$work/corrupt.log" 2>&1
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
echo "corrupt shard on rank 1: exit $rc after ${elapsed}s"
grep -E "error" "$work/corrupt.log" | head -3
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "expected a non-zero exit before the timeout"; cat "$work/corrupt.log"; exit 1; }
grep -q "rank 1/3.*$work/1/train_000.bin.*bad magic" "$work/corrupt.log" || { echo "message does not name rank 1's file and the problem"; exit 1; }

start=$(date +%s)
mpirun --bind-to none -np 2 "$bin" configs/tiny.ini max_steps=100000 eval_every=0 log_every=1 \
  out_dir="$work/out" run_name=killed >"$work/kill.log" 2>&1 &
launcher=$!
for _ in $(seq 1 100); do grep -q "^step" "$work/kill.log" && break; sleep 0.3; done
victim=$(pgrep -f "run_name=killed" | grep -v "^$launcher$" | while read p; do
  [ "$(cat /proc/$p/comm)" = gpt2_ddp ] && echo $p; done | tail -1)
kill -9 "$victim"
set +e
timeout 60 tail --pid=$launcher -f /dev/null
wait $launcher; rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
echo "SIGKILL of rank pid $victim: launcher exit $rc, all ranks ended after ${elapsed}s"
[ $rc -ne 0 ] || { echo "expected a non-zero exit"; exit 1; }
if pgrep -f "run_name=killed" >/dev/null; then echo "ranks still running"; pkill -9 -f "run_name=killed"; exit 1; fi
echo "abort: OK"
