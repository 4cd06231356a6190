#!/usr/bin/env bash
# GPUs per node of a Slurm job, from its environment: sourced by slurm.sbatch.
#
# Sites ask for GPUs in different ways (--gpus-per-node, --gres=gpu:N,
# --gpus), and Slurm sets different variables for each, so no single
# variable is always there. gpus_per_node sets
#   GPUS     the count (0: none found)
#   GPUS_BY  which variable it came from, with its value, for the log
# trying, most trusted first:
#   SLURM_GPUS_ON_NODE          what Slurm bound to this node: "8"
#   SLURM_GPUS_PER_NODE         the --gpus-per-node request: "8", "h100:8"
#   SLURM_JOB_GRES, SLURM_GRES  a --gres request: "gpu:8", "gpu:h100:8,shard:2"
#   scontrol's TresPerNode      the --gres request as the controller kept it
#   SLURM_JOB_GPUS              GPU indices given to the job: "0,1,2,3"
#   CUDA_VISIBLE_DEVICES        what the CUDA runtime will show: "0,1" or UUIDs
# A count of 0 from the first two is an answer (--gpus-per-node=0 asks for
# CPU ranks); the others holding no GPU (empty, "NoDevFiles", "0") are passed
# over: the next one may know better.

# A count: "8" -> 8, "h100:8" -> 8, "a100:2,h100:4" -> 6; else nothing.
gpus_typed_count() {
  local item n total=0 found=
  local IFS=,
  for item in $1; do
    n=${item##*:}
    [[ "$n" =~ ^[0-9]+$ ]] || return 0
    total=$((total + 10#$n)) found=1
  done
  [ -z "$found" ] || echo "$total"
}

# GPUs in a gres string: "gpu:8" -> 8, "gres/gpu:h100:8" -> 8, "gpu" -> 1;
# other resources ("shard:2", "mps:100") are not GPUs.
gpus_gres_count() {
  local item n total=0 found=
  local IFS=,
  for item in $1; do
    item=${item%%(*} # "gpu:8(S:0-1)" -> "gpu:8"
    item=${item#gres:} item=${item#gres/}
    [[ "$item" == gpu || "$item" == gpu:* ]] || continue
    n=${item##*:}
    [[ "$n" =~ ^[0-9]+$ ]] || n=1 # "gpu" or "gpu:h100": one
    total=$((total + 10#$n)) found=1
  done
  [ -z "$found" ] || echo "$total"
}

# Entries of a comma list of GPUs: "0,1,2" -> 3; "NoDevFiles" or "-1": none.
gpus_list_count() {
  local item total=0
  local IFS=,
  for item in $1; do
    case $item in "" | NoDevFiles | -1) ;; *) total=$((total + 1)) ;; esac
  done
  [ "$total" -eq 0 ] || echo "$total"
}

gpus_per_node() {
  local var n
  GPUS=0 GPUS_BY="no GPU in SLURM_GPUS_ON_NODE, SLURM_GPUS_PER_NODE, the --gres request, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES"
  for var in SLURM_GPUS_ON_NODE SLURM_GPUS_PER_NODE; do
    n=$(gpus_typed_count "${!var:-}")
    if [ -n "$n" ]; then GPUS=$n GPUS_BY="$var=${!var}" && return 0; fi
  done
  for var in SLURM_JOB_GRES SLURM_GRES; do
    n=$(gpus_gres_count "${!var:-}")
    if [ -n "$n" ] && [ "$n" -gt 0 ]; then GPUS=$n GPUS_BY="$var=${!var}" && return 0; fi
  done
  # A job that asked --gres=gpu:N may have no variable for it: ask the controller.
  if [ -n "${SLURM_JOB_ID:-}" ] && command -v scontrol >/dev/null 2>&1; then
    local tres
    tres=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | tr ' ' '\n' | sed -n 's/^TresPerNode=//p' | head -n 1 || true)
    n=$(gpus_gres_count "$tres")
    if [ -n "$n" ] && [ "$n" -gt 0 ]; then GPUS=$n GPUS_BY="scontrol show job: TresPerNode=$tres" && return 0; fi
  fi
  for var in SLURM_JOB_GPUS CUDA_VISIBLE_DEVICES; do
    n=$(gpus_list_count "${!var:-}")
    if [ -n "$n" ]; then GPUS=$n GPUS_BY="$var=${!var}" && return 0; fi
  done
  return 0
}

# Run directly (launch/gpus.sh): print what a job with this environment gets.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  gpus_per_node
  echo "$GPUS GPU(s) per node, from $GPUS_BY"
fi
