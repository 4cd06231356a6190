# A real Slurm cluster on this machine, for launch/slurm_local.sh and the
# tests (sourced by them):
# munged, slurmctld and slurmd (Debian's munge and slurm-wlm) run in the
# foreground of the test, with their config, keys, sockets, state and logs in
# a temporary directory; no systemd, nothing installed or configured outside.
#   slurm_start      one node: this machine, on 127.0.0.1
#   slurm_start N    N nodes node-1..node-N, each a network namespace (its own
#                    address on a bridge, 10.77.0.2...), hostname and /tmp, so
#                    that Slurm, PMIx and MPI see N hosts that talk over TCP
# SLURM_CONF is then exported, so sbatch/srun/squeue talk to this cluster.
# slurm_stop, run at exit, cancels what is left, stops the daemons by their
# process ids and removes the namespaces, the bridge and the directory.
# Needs root (slurmd starts jobs as their users; namespaces).
# shellcheck shell=bash

SLURM_DIR='' SLURM_PIDS=() SLURM_WATCHDOG='' SLURM_NETNS=() SLURM_BRIDGE=''
SLURM_SUBNET=10.77.0

slurm_skip_unless_available() { # nodes
  local missing=()
  for c in munged slurmctld slurmd sbatch srun scontrol; do command -v "$c" >/dev/null || missing+=("$c"); done
  if ((${#missing[@]})); then
    echo "SKIP: ${missing[*]} not found (apt-get install slurm-wlm munge, or tools/setup.sh)"; exit 77
  fi
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: the test Slurm cluster needs root (slurmd)"; exit 77; }
  if [ "$1" -gt 1 ]; then
    for c in ip nsenter unshare; do command -v "$c" >/dev/null || { echo "SKIP: $c not found"; exit 77; }; done
    if ip -o addr | grep -q " $SLURM_SUBNET\."; then echo "SKIP: $SLURM_SUBNET.0/24 is in use here"; exit 77; fi
  fi
}

slurm_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}

# A bridge with one veth per node namespace; false when this kernel (or
# sandbox) cannot make them.
slurm_make_network() { # nodes
  local i ns
  SLURM_BRIDGE=g2br$$
  ip link add "$SLURM_BRIDGE" type bridge || return 1
  ip addr add "$SLURM_SUBNET.1/24" dev "$SLURM_BRIDGE" && ip link set "$SLURM_BRIDGE" up || return 1
  for ((i = 1; i <= $1; i++)); do
    ns=gpt2-$$-$i
    ip netns add "$ns" || return 1
    SLURM_NETNS+=("$ns")
    ip link add "g2$$-${i}h" type veth peer name "g2$$-${i}n" &&
      ip link set "g2$$-${i}n" netns "$ns" &&
      ip link set "g2$$-${i}h" master "$SLURM_BRIDGE" && ip link set "g2$$-${i}h" up &&
      ip -n "$ns" addr add "$SLURM_SUBNET.$((i + 1))/24" dev "g2$$-${i}n" &&
      ip -n "$ns" link set "g2$$-${i}n" up && ip -n "$ns" link set lo up &&
      ip -n "$ns" route add default via "$SLURM_SUBNET.1" || return 1
  done
}

# A node's private /tmp hides whatever the job needs from the real /tmp (a
# checkout or build dir under /tmp, as in a CI clone): those top-level /tmp
# entries stay shared, as a cluster's shared filesystem would be.
SLURM_TMP_SHARES=()
slurm_share_tmp_entries() {
  local dir entry
  SLURM_TMP_SHARES=()
  for dir in "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)" "$(pwd -P)"; do
    case "$dir" in
      /tmp/*) entry=${dir#/tmp/}; entry=${entry%%/*}
              [[ " ${SLURM_TMP_SHARES[*]} " == *" $entry "* ]] || SLURM_TMP_SHARES+=("$entry") ;;
    esac
  done
}
# The shell command that gives node $2 its own /tmp (directory $1/tmp-node-$2)
# with the shared entries bound into it.
slurm_private_tmp_cmd() {
  local d=$1 i=$2 cmd="" entry
  for entry in "${SLURM_TMP_SHARES[@]}"; do
    mkdir -p "$d/tmp-node-$i/$entry"
    cmd+="mount --bind '/tmp/$entry' '$d/tmp-node-$i/$entry' && "
  done
  echo "${cmd}mount --rbind '$d/tmp-node-$i' /tmp"  # --rbind: keeps the shared entries
}

slurm_start() { # [nodes]
  local nodes=${1:-1}
  slurm_skip_unless_available "$nodes"
  # Not under /tmp: with several nodes, each has a /tmp of its own.
  SLURM_DIR=$(mktemp -d /var/tmp/gpt2-slurm.XXXXXX)
  chmod 755 "$SLURM_DIR" # munged wants every directory above its socket reachable
  trap slurm_stop EXIT
  local d=$SLURM_DIR host cpus ctld_port slurmd_port ctld_addr i
  host=$(hostname -s)
  cpus=$(nproc); [ "$cpus" -ge 2 ] || cpus=2 # 2 tasks even on one core (config_overrides)
  ctld_port=$(slurm_free_port); slurmd_port=$(slurm_free_port)
  mkdir -p "$d/state" "$d/munge"
  chmod 700 "$d/munge"
  head -c 1024 /dev/urandom >"$d/munge/munge.key"
  chmod 600 "$d/munge/munge.key"
  local node_lines=() names=()
  if [ "$nodes" -eq 1 ]; then
    ctld_addr=127.0.0.1 names=("$host")
    node_lines=("NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN")
  else
    slurm_make_network "$nodes" || { echo "SKIP: cannot create network namespaces, veth or a bridge here"; exit 77; }
    ctld_addr=$SLURM_SUBNET.1
    for ((i = 1; i <= nodes; i++)); do
      names+=("node-$i")
      # The nodes share the machine's cores: each gets its share, at least one.
      node_lines+=("NodeName=node-$i NodeAddr=$SLURM_SUBNET.$((i + 1)) CPUs=$(((cpus + nodes - 1) / nodes)) State=UNKNOWN")
      mkdir -p "$d/tmp-node-$i"; chmod 1777 "$d/tmp-node-$i"
    done
    slurm_share_tmp_entries "$d"
    nsenter --net="/run/netns/${SLURM_NETNS[0]}" unshare --uts --mount bash -c \
      "$(slurm_private_tmp_cmd "$d" 1) && hostname node-1" ||
      { echo "SKIP: cannot give a namespace its own hostname and /tmp here"; exit 77; }
  fi
  for n in "${names[@]}"; do mkdir -p "$d/spool/$n"; done
  local node_list
  node_list=$(IFS=,; echo "${names[*]}")
  cat >"$d/slurm.conf" <<EOF
# Written by launch/slurm_cluster.sh: a cluster on this machine.
ClusterName=gpt2test
SlurmctldHost=$host($ctld_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: a requeued job waits this long before it may start again (default 120 s).
AuthInfo=socket=$d/munge.sock,cred_expire=10
MpiDefault=none
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
# Start pending jobs (a requeued one past its begin time) within a second, not 60.
SchedulerParameters=sched_interval=1
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# Finished jobs stay visible to scontrol (state, exit code, restarts) for the test.
MinJobAge=600
KillWait=15
InactiveLimit=0
$(printf '%s\n' "${node_lines[@]}")
PartitionName=test Nodes=$node_list Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$d/slurm.conf
  munged -F --socket="$d/munge.sock" --key-file="$d/munge/munge.key" --pid-file="$d/munged.pid" \
    --seed-file="$d/munge/seed" --log-file="$d/munged.log" >"$d/munged.out" 2>&1 &
  SLURM_PIDS+=($!)
  for _ in $(seq 50); do [ -S "$d/munge.sock" ] && break; sleep 0.1; done
  [ -S "$d/munge.sock" ] || { cat "$d/munged.out"; echo "munged did not start"; return 1; }
  slurmctld -D -i >"$d/slurmctld.out" 2>&1 &
  SLURM_PIDS+=($!)
  if [ "$nodes" -eq 1 ]; then
    slurmd -D -N "$host" >"$d/slurmd.out" 2>&1 &
    SLURM_PIDS+=($!)
  else
    # nsenter (not `ip netns exec`, which remounts /sys and hides the cgroup
    # tree slurmd reads); unshare: a hostname and, over /tmp, a directory of
    # the node's own (PMIx and Open MPI keep per-node files there).
    for ((i = 1; i <= nodes; i++)); do
      nsenter --net="/run/netns/${SLURM_NETNS[i - 1]}" unshare --uts --mount bash -c \
        "$(slurm_private_tmp_cmd "$d" "$i") && hostname node-$i && exec slurmd -D" \
        >"$d/slurmd-node-$i.out" 2>&1 &
      SLURM_PIDS+=($!)
    done
  fi
  local state='' want
  want=$(printf 'idle%.0s' "${names[@]}")
  for _ in $(seq 150); do
    state=$(sinfo -h -N -o %t 2>/dev/null | tr -d '\n' || true)
    [ "$state" = "$want" ] && break
    sleep 0.2
  done
  if [ "$state" != "$want" ]; then
    echo "slurm did not come up (node states '$state')"; tail -n 20 "$d"/*.out "$d"/*.log; return 1
  fi
  # Should this shell be killed outright (SIGKILL: no EXIT trap), a watchdog
  # stops the daemons and removes what slurm_start made once it is gone.
  local test_pid=$$ daemons="${SLURM_PIDS[*]}" netns="${SLURM_NETNS[*]}" bridge=$SLURM_BRIDGE
  (
    while kill -0 "$test_pid" 2>/dev/null; do sleep 1; done
    kill -TERM $daemons; sleep 5; kill -KILL $daemons
    for ns in $netns; do ip netns del "$ns"; done
    [ -z "$bridge" ] || ip link del "$bridge"
    rm -rf "$d"
  ) >/dev/null 2>&1 &
  SLURM_WATCHDOG=$!
  echo "slurm: $nodes node(s) up (${names[*]}, slurmctld $ctld_addr:$ctld_port) in $d; pids ${SLURM_PIDS[*]}"
}

# Waits until job $1 has left the queue for good (not pending, running,
# requeued or completing), at most $2 seconds; prints its final state.
slurm_wait_job() {
  local job=$1 limit=$2 state='' start=$SECONDS
  while ((SECONDS - start < limit)); do
    state=$(scontrol -o show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true)
    case "$state" in
      PENDING | RUNNING | REQUEUED | COMPLETING | CONFIGURING | SUSPENDED | REQUEUE_HOLD | REQUEUE_FED | RESIZING | "") sleep 0.5 ;;
      *) echo "$state"; return 0 ;;
    esac
  done
  echo "TIMEOUT($state)"
}

# A field of `scontrol show job` (ExitCode, Restarts, ...).
slurm_job_field() { scontrol -o show job "$1" | grep -o " $2=[^ ]*" | cut -d= -f2-; }

slurm_stop() {
  local rc=$?
  set +e # stop everything even if a step fails (a closed stdout, ...)
  [ -n "$SLURM_DIR" ] || return $rc
  [ -z "$SLURM_WATCHDOG" ] || kill "$SLURM_WATCHDOG" 2>/dev/null
  # Jobs still queued or running would outlive slurmd in their slurmstepd.
  local jobs
  mapfile -t jobs < <(squeue -h -o %i 2>/dev/null)
  if ((${#jobs[@]})); then
    scancel --full "${jobs[@]}" 2>/dev/null
    for _ in $(seq 60); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  local pid i
  for ((i = ${#SLURM_PIDS[@]} - 1; i >= 0; i--)); do # slurmd(s), slurmctld, then munged
    pid=${SLURM_PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [ "$rc" -ne 0 ]; then
    echo "---- slurm daemon logs (last lines) ----"
    tail -n 15 "$SLURM_DIR"/slurmctld.log "$SLURM_DIR"/slurmd-*.log 2>/dev/null
  fi
  for ns in "${SLURM_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null; done
  [ -z "$SLURM_BRIDGE" ] || ip link del "$SLURM_BRIDGE" 2>/dev/null
  rm -rf "$SLURM_DIR"
  echo "slurm: daemons stopped (pids ${SLURM_PIDS[*]})"
  SLURM_DIR='' SLURM_NETNS=() SLURM_BRIDGE=''
  return $rc
}
