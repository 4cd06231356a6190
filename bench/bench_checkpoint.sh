#!/usr/bin/env bash
# Checkpoint cost on the GPU machine: the same training run with saves that
# wait for the disk (checkpoint_async=false) and with background saves
# (true), next to the disk's own sequential bandwidth (dd with O_DIRECT, a
# file the size of one rank's shard up to 8 GiB, in the folder the
# checkpoints go to).
# Per mode: the median step time (steps 6 on, the steps right after a save
# left out), each save's stall (the time training waited), its write time
# and bandwidth (metrics.jsonl's checkpoint records); then the resume load of
# the background run's last checkpoint (the page cache dropped first where
# this machine lets us; the line says whether it did). Prints one comparable
# line
#   BENCH checkpoint model=<M> np=<N> every=<K> bytes=<B> step_ms=<ms> sync_stall_s=<s>
#         async_stall_s=<s> async_write_s=<s> write_MBps=<MB/s> disk_write_MBps=<MB/s>
#         load_s=<s> load_MBps=<MB/s> disk_read_MBps=<MB/s> cache_dropped=<yes|no> gpu=<name>
# and a short table. Needs about 2.5 checkpoints of disk in OUT_DIR.
# usage: [MODEL=774M|1558M] [MICRO_BATCH=4] [STEPS=60] [EVERY=20] [NP=<GPUs>]
#        [OUT_DIR=build/bench_checkpoint] bench/bench_checkpoint.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
np=${NP:-$(nvidia-smi -L 2>/dev/null | wc -l)}
[ "$np" -ge 1 ] || { echo "bench_checkpoint: no GPU"; exit 1; }
model=${MODEL:-$([ "$np" -ge 2 ] && echo 1558M || echo 774M)}
micro=${MICRO_BATCH:-4} steps=${STEPS:-60} every=${EVERY:-20}
out=${OUT_DIR:-build/bench_checkpoint}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')
rm -rf "$out" && mkdir -p "$out"

drop_cache() { sync; { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null && echo yes || echo no; }
# dd_mbps ARGS...: dd's own bytes and seconds, as MB/s
dd_mbps() { dd "$@" 2>&1 | awk '/bytes/ { for (i = 1; i <= NF; i++) if ($i == "s,") s = $(i - 1); printf "%.0f", $1 / s / 1e6 }'; }

run() { # NAME KEY=VALUE...
  local name=$1; shift
  mpirun --allow-run-as-root --bind-to none -np "$np" "$build/gpt2_ddp" "configs/$model.ini" \
    micro_batch="$micro" total_batch=$((micro * 1024 * np)) seq_len=1024 max_steps="$steps" \
    checkpoint_every="$every" keep_last=1 eval_every=0 sample_every=0 hellaswag_data= log_every=1 \
    out_dir="$out" run_name="$name" "$@" >"$out/$name.log" 2>&1 \
    || { echo "bench_checkpoint: the $name run failed:"; tail -20 "$out/$name.log"; exit 1; }
}

summary() { # RUN_DIR -> "step_ms bytes stall_s write_s write_MBps"
  python3 - "$1/metrics.jsonl" "$every" <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
every = int(sys.argv[2])
steps = [r for r in recs if r["type"] == "step" and r["step"] > 5 and (r["step"] - 1) % every]
saves = [r for r in recs if r["type"] == "checkpoint"]
med = lambda xs: statistics.median(xs) if xs else 0.0
print(f'{med([r["ms"] for r in steps]):.1f} {saves[0]["bytes"] if saves else 0} '
      f'{med([r["stall_ms"] / 1e3 for r in saves]):.3f} {med([r["write_s"] for r in saves]):.2f} '
      f'{med([r["mb_per_s"] for r in saves]):.0f}')
PY
}

run sync checkpoint_async=false
read -r sync_ms bytes sync_stall sync_write sync_mbps <<<"$(summary "$out/sync")"
rm -rf "$out/sync"
run async checkpoint_async=true
read -r async_ms _ async_stall async_write async_mbps <<<"$(summary "$out/async")"

# The disk: one rank's share of a checkpoint (at most 8 GiB), written and
# read with O_DIRECT.
mb=$((bytes / np / 1048576 + 1))
[ $mb -le 8192 ] || mb=8192
disk_w=$(dd_mbps if=/dev/zero of="$out/dd.bin" bs=64M count=$((mb / 64 + 1)) oflag=direct conv=fsync)
disk_r=$(dd_mbps if="$out/dd.bin" of=/dev/null bs=64M iflag=direct)
rm -f "$out/dd.bin"

dropped=$(drop_cache)
run async checkpoint_async=true max_steps=$((steps + 1)) allow_changed=max_steps
read -r load_mib load_s <<<"$(sed -n 's/^resumed from .* (\([0-9.]*\) MiB, \([0-9.]*\) s)$/\1 \2/p' "$out/async.log")"
load_mbps=$(python3 -c "print(f'{$load_mib * 1048576 / 1e6 / $load_s:.0f}')")

echo "BENCH checkpoint model=$model np=$np every=$every bytes=$bytes step_ms=$async_ms sync_stall_s=$sync_stall" \
  "async_stall_s=$async_stall async_write_s=$async_write write_MBps=$async_mbps disk_write_MBps=$disk_w" \
  "load_s=$load_s load_MBps=$load_mbps disk_read_MBps=$disk_r cache_dropped=$dropped gpu=$gpu"
printf '\n%-28s %12s %12s\n' "$model, $np GPU(s), save every $every" "waits" "background"
printf '%-28s %12s %12s\n' "median step (ms)" "$sync_ms" "$async_ms"
printf '%-28s %12s %12s\n' "training stalled per save (s)" "$sync_stall" "$async_stall"
printf '%-28s %12s %12s\n' "write (s)" "$sync_write" "$async_write"
printf '%-28s %12s %12s\n' "write (MB/s; disk $disk_w)" "$sync_mbps" "$async_mbps"
printf '%-28s %12s\n' "load (s; MB/s, disk $disk_r)" "$load_s; $load_mbps"
