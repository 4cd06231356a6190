#!/usr/bin/env bash
# Tries launch/slurm.sbatch on this machine, with no cluster at hand: a
# one-node Slurm (Debian's slurm-wlm and munge: tools/setup.sh --tests
# installs them) is started in a temporary directory, the job submitted
# with RANKS tasks on CPU ranks (GPUs when the machine has them), its log
# followed until it ends, and the daemons stopped and removed again.
# Nothing is installed or configured outside that directory. Needs root
# (slurmd starts the job as its user).
# usage: launch/slurm_local.sh [CONFIG.ini] [key=value ...]
#   env: RANKS (tasks, default 2), BUILD_DIR (default build), OUT_DIR
#        (default checkpoints), JOB_NAME (the run's name, default
#        slurm_local)
set -euo pipefail
caller_dir=$PWD
cd "$(dirname "$0")/.."
if [[ " $* " == *" --help "* || " $* " == *" -h "* ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p'
  exit 0
fi
args=("$@")
if [ $# -gt 0 ] && [[ "$1" != *=* && "$1" != -* && "$1" != /* && -e "$caller_dir/$1" ]]; then
  args[0]=$caller_dir/$1 # a config named from another folder
fi
source launch/slurm_cluster.sh
slurm_start
ranks=${RANKS:-2} name=${JOB_NAME:-slurm_local}
log=$SLURM_DIR/job.out
gpus=0
command -v nvidia-smi >/dev/null && gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU" || true)
job=$(BUILD_DIR=${BUILD_DIR:-build} OUT_DIR=${OUT_DIR:-checkpoints} OMP_NUM_THREADS=1 \
  sbatch --parsable --job-name="$name" --ntasks-per-node="$ranks" --gpus-per-node="$gpus" \
  --cpus-per-task=1 --output="$log" launch/slurm.sbatch "${args[@]}")
echo "slurm_local: job $job submitted (sbatch launch/slurm.sbatch ${args[*]}); its log follows"
touch "$log"
tail -n +1 -f "$log" &
tail_pid=$!
state=$(slurm_wait_job "$job" 86400)
sleep 1; kill "$tail_pid" 2>/dev/null || true
code=$(slurm_job_field "$job" ExitCode)
echo "slurm_local: job $job $state, exit code ${code%%:*}"
[ "$state" = COMPLETED ]
