#!/usr/bin/env bash
# GPT-2 124M training throughput on one GPU, ours against the PyTorch peer
# (bench/torch_peer.py: torch.compile, fused AdamW, bf16 autocast, vocab
# 50304) in the same run, no gradient accumulation. The peer runs in up to
# three configurations (PEERS): SDPA pinned to cuDNN (PyTorch's fastest
# attention on Hopper), SDPA's default choice, and cuDNN's SDPA under
# torch.compile(mode="max-autotune") (Inductor times Triton and cuBLAS
# choices for every product and captures CUDA graphs: several minutes of
# compilation per shape); our ratio is against the fastest that ran.
# Shapes are T:B pairs (default T=1024 at B=16, 32, 64 and T=4096 at B=8).
# Prints, per shape, one comparable line
#   BENCH gpt2_124M T=<T> B=<B> ours=<tok/s> cudnn=<tok/s> default=<tok/s> autotune=<tok/s> ratio=<ours/fastest> gpu=<name>
# (0 for a peer that did not run) and at the end a table; before that
# (PROFILE_B > 0) the per-op table of a short profiled run at T=1024
# (profile_ops=1, with each op's floor).
# Our tokens/s are medians of steps 6-30 as the trainer logs them: a step's
# time includes the loop's host work. The peer's are medians of steps 6-25.
# FP8=1 adds columns: ours again with fp8=1 (docs/fp8.md), its ratio to
# our BF16 run (fp8_ratio) and to the fastest peer (fp8_peer_ratio, the
# FP8 target's measure); ratio stays BF16's.
# Beside each run, the GPU's SM clock and power draw (nvidia-smi every
# 250 ms, medians of the samples with the GPU at least 90% busy) and the
# share of those samples in which the driver held the clock down for the
# power limit ("capped"): a GPU held at its power limit lowers its clock,
# so two machines, or ours and the peer, may run at different clocks
# (docs/benchmarks.md).
# usage: [PROFILE_B=32] [PEER=1] [PEERS="cudnn default autotune"] [FP8=0] [OURS_ARGS="key=value ..."]
#        bench/bench_gpt2_gpu.sh BUILD_DIR [T:B ...]
#        (needs data/nlp-corpus shards: the trainer opens them, the timed batches are real text)
set -uo pipefail
build=${1:-build}; shift || true
shapes=${*:-1024:16 1024:32 1024:64 4096:8}
profile_b=${PROFILE_B:-32} # micro-batch of the per-op table; 0 skips it
peer=${PEER:-1}            # 0: ours only
peers=${PEERS:-cudnn default autotune}
ours_args=${OURS_ARGS:-}
fp8=${FP8:-0}              # 1: our run once more with fp8=1
cd "$(dirname "$0")/.." || exit 1
out=$(mktemp -d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')
declare -A ours peer_cudnn peer_default peer_autotune ours_ms ours_mfu ours_fp8 ours_clock
gpu_index=${CUDA_VISIBLE_DEVICES:-0}
gpu_index=${gpu_index%%,*}

clocks_pid=""
# the power-cap clock reason's field: its name before the drivers of 2023
# was clocks_throttle_reasons.*
cap_field=clocks_event_reasons.sw_power_cap
nvidia-smi --query-gpu=$cap_field --format=csv >/dev/null 2>&1 || cap_field=clocks_throttle_reasons.sw_power_cap
clocks_start() { # FILE: samples "utilization %, SM MHz, W, power cap" into it until clocks_stop
  command -v nvidia-smi >/dev/null || return 0
  nvidia-smi -i "$gpu_index" --query-gpu=utilization.gpu,clocks.sm,power.draw,$cap_field \
    --format=csv,noheader,nounits -lms 250 >"$1" 2>/dev/null &
  clocks_pid=$!
}
clocks_stop() { # stops the sampler (in this shell, so that it is reaped)
  if [ -n "$clocks_pid" ]; then kill "$clocks_pid" 2>/dev/null; wait "$clocks_pid" 2>/dev/null; fi
  clocks_pid=""
}
clocks_median() { # FILE -> "<MHz> MHz <W> W capped <%>", medians of the busy samples ("n/a" without)
  /usr/bin/env python3 - "$1" <<'PY'
import statistics, sys
busy = []
try:
    for line in open(sys.argv[1]):
        f = [x.strip() for x in line.split(",")]
        try:
            if len(f) == 4 and float(f[0]) >= 90:
                busy.append((float(f[1]), float(f[2]), f[3] == "Active"))
        except ValueError:
            pass
except OSError:
    pass
if busy:
    print(f"{statistics.median(b[0] for b in busy):.0f} MHz {statistics.median(b[1] for b in busy):.0f} W"
          f" capped {100 * sum(b[2] for b in busy) / len(busy):.0f}%")
else:
    print("n/a")
PY
}

median_of_run() { # metrics.jsonl -> "ms tok/s mfu%"
  /usr/bin/env python3 - "$1" <<'PY'
import json, statistics, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "step"][5:]
ms = statistics.median(r["ms"] for r in rows)
tps = statistics.median(r["tokens_per_s"] for r in rows)
mfu = statistics.median(r.get("mfu", 0) for r in rows)
print(f"{ms:.2f} {tps:.0f} {mfu * 100:.1f}")
PY
}

# ours_run NAME T B [KEY=VALUE ...]: one timed run of ours as $out/NAME,
# sampled for its clock (run_clock); ms, tps and mfu its medians; false
# (its log's tail printed) where it failed
ours_run() {
  local name=$1 t=$2 b=$3 rc
  shift 3
  clocks_start "$out/$name.clocks"
  # shellcheck disable=SC2086
  "$build/gpt2_ddp" configs/124M.ini device=cuda micro_batch="$b" seq_len="$t" block_size="$t" \
    total_batch=$((b * t)) max_steps=30 warmup_steps=10 eval_every=0 log_every=1 \
    checkpoint_every=0 out_dir="$out" run_name="$name" "$@" $ours_args >"$out/$name.log" 2>&1
  rc=$?
  clocks_stop
  run_clock=$(clocks_median "$out/$name.clocks")
  [ $rc = 0 ] || { tail -5 "$out/$name.log"; return 1; }
  read -r ms tps mfu < <(median_of_run "$out/$name/metrics.jsonl")
}

for shape in $shapes; do
  t=${shape%%:*} b=${shape##*:}
  ours_run "t${t}b$b" "$t" "$b"
  rc=$?
  ours_clock[$shape]=$run_clock
  [ $rc = 0 ] || continue
  ours[$shape]=$tps ours_ms[$shape]=$ms ours_mfu[$shape]=$mfu
  echo "ours T=$t B=$b: $ms ms/step, $tps tok/s, MFU $mfu%, GPU at $run_clock"
  [ "$fp8" = 1 ] || continue
  ours_run "t${t}b${b}fp8" "$t" "$b" fp8=1 || continue
  ours_fp8[$shape]=$tps
  echo "ours fp8 T=$t B=$b: $ms ms/step, $tps tok/s, GPU at $run_clock"
done

if [ "$peer" = 1 ] && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  for name in $peers; do
    case $name in
      cudnn) peer_args="--sdpa cudnn" ;;
      default) peer_args="--sdpa default" ;;
      autotune) peer_args="--sdpa cudnn --compile-mode max-autotune" ;;
      *) echo "bench_gpt2_gpu.sh: unknown peer '$name' in PEERS (cudnn, default, autotune)" >&2; exit 2 ;;
    esac
    for t in $(for s in $shapes; do echo "${s%%:*}"; done | sort -un); do
      bs=$(for s in $shapes; do [ "${s%%:*}" = "$t" ] && echo "${s##*:}"; done)
      clocks_start "$out/peer_$name$t.clocks"
      # shellcheck disable=SC2086
      while read -r line; do
        echo "$line"
        b=$(sed -E 's/.* B=([0-9]+) .*/\1/' <<<"$line")
        tps=$(sed -E 's/.*tok\/s=([0-9]+).*/\1/' <<<"$line")
        case $name in
          cudnn) peer_cudnn[$t:$b]=$tps ;;
          default) peer_default[$t:$b]=$tps ;;
          autotune) peer_autotune[$t:$b]=$tps ;;
        esac
      done < <(python3 bench/torch_peer.py $peer_args --seq-len "$t" $bs 2>&1 | tee -a "$out/peer.log" | grep '^peer')
      clocks_stop
      echo "peer $name T=$t (every B, compilation included): GPU at $(clocks_median "$out/peer_$name$t.clocks")"
    done
  done
fi

# The per-op table: a separate short run with profile_ops=1 (every op
# between two synchronizes, so its steps are slower than the runs above).
if [ "$profile_b" -gt 0 ]; then
  # shellcheck disable=SC2086
  "$build/gpt2_ddp" configs/124M.ini device=cuda micro_batch=$profile_b \
    total_batch=$((profile_b * 1024)) max_steps=6 warmup_steps=2 eval_every=0 log_every=0 \
    checkpoint_every=0 profile_ops=1 out_dir="$out" run_name=profile $ours_args \
    >"$out/profile.log" 2>&1 || tail -5 "$out/profile.log"
  echo
  sed -n '/^per-op profile/,/^step (profiled)/p' "$out/profile.log"
  echo
  sed -n '/^GEMM algorithms by measurement/,/^$/p' "$out/profile.log"
fi

# ours over the fastest peer that ran
ratio_of() { python3 -c "f = max($2, $3, $4); print(f'{$1 / f:.3f}' if f and $1 else 'n/a')"; }

echo
for shape in $shapes; do
  t=${shape%%:*} b=${shape##*:}
  o=${ours[$shape]:-0} c=${peer_cudnn[$shape]:-0} d=${peer_default[$shape]:-0} a=${peer_autotune[$shape]:-0}
  extra=""
  if [ "$fp8" = 1 ]; then
    f8=${ours_fp8[$shape]:-0}
    extra=" fp8=$f8 fp8_ratio=$(python3 -c "print(f'{$f8 / $o:.3f}' if $o and $f8 else 'n/a')")"
    extra+=" fp8_peer_ratio=$(ratio_of "$f8" "$c" "$d" "$a")"
  fi
  echo "BENCH gpt2_124M T=$t B=$b ours=$o cudnn=$c default=$d autotune=$a ratio=$(ratio_of "$o" "$c" "$d" "$a")$extra gpu=${gpu:-unknown}"
done
echo
printf "%-5s %-3s %9s %12s %6s %15s %12s %13s %14s %7s %10s %10s\n" T B "ours ms" "ours tok/s" MFU \
  "ours GPU" "peer cudnn" "peer default" "peer autotune" "ratio" \
  "$([ "$fp8" = 1 ] && echo 'fp8 tok/s')" "$([ "$fp8" = 1 ] && echo 'fp8 ratio')"
for shape in $shapes; do
  t=${shape%%:*} b=${shape##*:}
  o=${ours[$shape]:-0} c=${peer_cudnn[$shape]:-0} d=${peer_default[$shape]:-0} a=${peer_autotune[$shape]:-0}
  printf "%-5s %-3s %9s %12s %6s %15s %12s %13s %14s %7s %10s %10s\n" "$t" "$b" \
    "${ours_ms[$shape]:-fail}" "$o" "${ours_mfu[$shape]:-}%" "${ours_clock[$shape]:-n/a}" "$c" "$d" \
    "$a" "$(ratio_of "$o" "$c" "$d" "$a")" "$([ "$fp8" = 1 ] && echo "${ours_fp8[$shape]:-fail}")" \
    "$([ "$fp8" = 1 ] && ratio_of "${ours_fp8[$shape]:-0}" "$c" "$d" "$a")"
done
rm -rf "$out"
