# Sourced by the checkpoint tests (ckpt_*.sh): moves to the repository root,
# mpirun settings, helpers.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tests/lib/mpi_env.sh

# An empty work directory.
fresh_dir() { rm -rf "$1"; mkdir -p "$1"; }

# Background jobs run `mpirun --bind-to none` itself, not the mpi_run
# function (which would run in a subshell), so that $! is mpirun's pid.

# The gpt2_ddp ranks that mpirun (pid $1) started.
rank_pids() { pgrep -P "$1" -x gpt2_ddp || true; }

# Waits up to $2 seconds (default 120) until the shell condition $1 holds.
wait_for() {
  local tries=$(( ${2:-120} * 10 ))
  for _ in $(seq 1 "$tries"); do eval "$1" && return 0; sleep 0.1; done
  echo "timed out waiting for: $1"; return 1
}

# fail MESSAGE [LOG]: prints the message (and the log) and exits 1.
fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || cat "$2"; exit 1; }
