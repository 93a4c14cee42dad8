#!/usr/bin/env bash
# A private single-host Slurm cluster for tests and for trying srun by hand: Debian 12's
# slurmctld and slurmd (22.05) run in the foreground (-D) in the background of this machine, with
# no munge (AuthType=auth/none, CredType=cred/none), no cgroups (proctrack/linuxproc, task/none),
# free private ports, and every state, spool, pid and log file under DIR.
#
#   tools/slurm_cluster.sh start DIR   writes DIR/slurm.conf, starts both daemons, waits (at most
#                                      RUCCL_SLURM_START_SECONDS, default 30) until the node is
#                                      idle, prints the line to eval: export SLURM_CONF=DIR/slurm.conf
#   tools/slurm_cluster.sh stop DIR    cancels what still runs, stops both daemons by their PIDs
#                                      and waits until they are gone (then SIGKILL after 10 s)
#   tools/slurm_cluster.sh status DIR  prints the daemons' PIDs and sinfo; exits 1 when not up
#
#   eval "$(tools/slurm_cluster.sh start /tmp/slurm)"
#   srun -n 2 build/release/examples/train_fashion_mnist --epochs 1
#   tools/slurm_cluster.sh stop /tmp/slurm
#
# Exit status: 0 done, 1 a failure (the message says what, with the daemon's log tail), 2 usage,
# 77 the Slurm binaries are missing (install slurmctld slurmd slurm-client: tools/install_packages.sh).
# The node is this machine (slurmd -C: its CPUs and memory) under its host name, at 127.0.0.1; it
# runs jobs as root, the user the daemons run as. Ports come from [10000, 20000), which is below
# both Linux's ephemeral range and the ports ruCCL derives from SLURM_JOB_ID ([20000, 30000)).
set -euo pipefail

die() { echo "slurm_cluster: $*" >&2; exit 1; }
usage() { echo "usage: slurm_cluster.sh start|stop|status DIR" >&2; exit 2; }

(($# == 2)) || usage
action=$1
[[ $action == start ]] && mkdir -p "$2"
[[ -d $2 ]] || die "no directory $2"
dir=$(cd "$2" && pwd)
conf=$dir/slurm.conf

find_binaries() {
  local missing=() name
  for name in slurmctld slurmd srun sinfo scontrol squeue scancel; do
    local path
    path=$(PATH="$PATH:/usr/sbin:/sbin" command -v "$name" || true)
    if [[ -z $path ]]; then missing+=("$name"); else printf -v "bin_$name" %s "$path"; fi
  done
  if ((${#missing[@]})); then
    echo "slurm_cluster: Slurm is not installed: ${missing[*]} not found (apt-get install" \
         "slurmctld slurmd slurm-client, or run tools/install_packages.sh)" >&2
    exit 77
  fi
}

# This network namespace's TCP sockets, one a line: "sl local_address(hex ip:hex port) remote
# state ...". Read whole (cat): bash's read on a /proc file takes one byte per system call.
tcp_sockets() { cat /proc/net/tcp /proc/net/tcp6 2> /dev/null || true; }

# free_port VAR: sets VAR to a TCP port in [10000, 20000) that no socket of this machine's
# network namespace is bound to (/proc/net/tcp and tcp6: local address, hex port) and that no
# earlier call gave.
taken=" "
free_port() {
  local -A used=()
  local sl local_address rest port
  while read -r sl local_address rest; do
    [[ $local_address == *:* ]] && used[$((16#${local_address##*:}))]=1
  done <<< "$(tcp_sockets)"
  for _ in $(seq 200); do
    port=$((10000 + RANDOM % 10000))
    [[ -n ${used[$port]:-} || $taken == *" $port "* ]] && continue
    taken+="$port "
    printf -v "$1" %s "$port"
    return
  done
  die "no free port in [10000, 20000) after 200 tries"
}

# Whether something listens on TCP port $1 (state 0A in /proc/net/tcp or tcp6).
listening() {
  local sl local_address remote state rest
  while read -r sl local_address remote state rest; do
    [[ $state == 0A && $local_address == *:* && $((16#${local_address##*:})) == "$1" ]] && return 0
  done <<< "$(tcp_sockets)"
  return 1
}

# The PID recorded in DIR/NAME.pid when that process is still our daemon (its command line names
# our slurm.conf), else nothing: a stale file or a reused PID is never signalled.
live_pid() {
  local file=$dir/$1.pid pid
  [[ -s $file ]] || return 0
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 0
  if tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$1 -D -f $conf"; then echo "$pid"; fi
}

log_tail() {  # log_tail NAME: the last lines of a daemon's log, else of its stderr
  local f=$dir/$1.log
  [[ -s $f ]] || f=$dir/$1.out
  [[ -s $f ]] && { echo "---- last lines of $f:"; tail -n 15 "$f"; }
  return 0
}

write_conf() {
  local node=$1 ctld_port=$2 slurmd_port=$3 spool=$4 hw first_job_id
  first_job_id=$((1 + RANDOM * 4))
  # slurmd -C: "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1
  # RealMemory=24105"; the node is declared with this machine's real layout.
  hw=$("$bin_slurmd" -C 2>/dev/null | head -n 1) || true
  [[ $hw == NodeName=* ]] || die "slurmd -C did not describe this machine (expected NodeName=..., got '$hw')"
  hw=${hw#NodeName=* }
  cat > "$conf" <<EOF
# Written by tools/slurm_cluster.sh: a private single-host cluster, everything under $dir.
ClusterName=ruccl
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# A random first job id: ruCCL derives its rendezvous port from SLURM_JOB_ID, and two clusters
# started side by side (two builds' tests) should not hand out the same ids.
FirstJobId=$first_job_id
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=30
MessageTimeout=10
SlurmdTimeout=60
StateSaveLocation=$dir/state
SlurmdSpoolDir=$spool
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/slurmctld.daemon.pid
SlurmdPidFile=$dir/slurmd.daemon.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$node NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  find_binaries
  [[ -z $(live_pid slurmctld)$(live_pid slurmd) ]] ||
    die "a cluster of $dir is already running (slurm_cluster.sh stop $dir first)"
  remove_spool
  rm -rf "$dir/state" "$dir/spool" "$dir/tmp" "$dir"/*.log "$dir"/*.out "$dir"/*.pid
  mkdir -p "$dir/state" "$dir/tmp"
  local node ctld_port slurmd_port deadline seconds=${RUCCL_SLURM_START_SECONDS:-30}
  node=$(hostname -s)
  # slurmd and its PMIx server put Unix sockets in the spool, "<node>_<job>.<step>" and
  # "stepd.slurm.pmix.<job>.<step>", and a socket's path has at most 107 bytes: a DIR too deep
  # for them gets its spool in /tmp instead (removed by stop).
  local spool=$dir/spool suffix=$((${#node} + 16))
  ((suffix > 34)) || suffix=34
  if ((${#spool} + suffix > 107)); then
    spool=$(mktemp -d /tmp/ruccl-slurm-spool.XXXXXX)
    echo "$spool" > "$dir/spool.path"
  else
    mkdir -p "$spool"
  fi
  free_port ctld_port
  free_port slurmd_port
  write_conf "$node" "$ctld_port" "$slurmd_port" "$spool"
  # stdin and stdout away from the caller: a test runner waits for its pipes to close.
  setsid "$bin_slurmctld" -D -f "$conf" -i < /dev/null > "$dir/slurmctld.out" 2>&1 &
  echo $! > "$dir/slurmctld.pid"
  setsid "$bin_slurmd" -D -f "$conf" -N "$node" < /dev/null > "$dir/slurmd.out" 2>&1 &
  echo $! > "$dir/slurmd.pid"
  local -A pid=([slurmctld]=$(<"$dir/slurmctld.pid") [slurmd]=$(<"$dir/slurmd.pid"))
  deadline=$((SECONDS + seconds))
  local state=""
  while :; do
    local name
    for name in slurmctld slurmd; do
      if ! running "${pid[$name]}"; then
        local code=""
        wait "${pid[$name]}" 2> /dev/null || code=$?
        log_tail "$name" >&2
        stop_daemons "${pid[slurmctld]}" "${pid[slurmd]}"
        die "$name exited${code:+ with status $code} while the cluster was starting (its log:" \
            "$dir/$name.log)"
      fi
    done
    # sinfo only once slurmctld listens: before, a client backs off and retries for seconds.
    state=""
    if listening "$ctld_port"; then
      state=$(SLURM_CONF=$conf "$bin_sinfo" -h -n "$node" -o %T 2> /dev/null || true)
    fi
    [[ $state == idle ]] && break
    if ((SECONDS >= deadline)); then
      log_tail slurmctld >&2; log_tail slurmd >&2
      stop_daemons "${pid[slurmctld]}" "${pid[slurmd]}"
      die "expected node $node to be idle within $seconds s, got state '${state:-no answer from slurmctld}'"
    fi
    sleep 0.1
  done
  if ! getent hosts "$node" > /dev/null; then
    echo "# slurm_cluster: warning: the node name $node does not resolve here; ruCCL ranks meet at" \
         "the first host of SLURM_STEP_NODELIST, so set RUCCL_MASTER_ADDR=127.0.0.1 for jobs" >&2
  fi
  echo "# slurm_cluster: node $node idle (slurmctld pid $(<"$dir/slurmctld.pid"), port" \
       "$ctld_port; slurmd pid $(<"$dir/slurmd.pid"), port $slurmd_port)" >&2
  echo "export SLURM_CONF=$conf"
}

# Whether process PID runs (a zombie, a child of ours not yet reaped, does not).
running() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2> /dev/null) && [[ -n $state && $state != Z ]]
}

# SIGTERM, wait up to 10 s, then SIGKILL, and wait until gone. The PIDs given (start's own
# children), else the daemons of DIR that still run (live_pid: never a stale or reused PID).
stop_daemons() {
  local name pid pids=("$@")
  if ((${#pids[@]} == 0)); then
    for name in slurmd slurmctld; do
      pid=$(live_pid "$name")
      [[ -n $pid ]] && pids+=("$pid")
    done
  fi
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
  local until=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while running "$pid" && ((SECONDS < until)); do sleep 0.05; done
    if running "$pid"; then
      echo "slurm_cluster: pid $pid still running 10 s after SIGTERM: SIGKILL" >&2
      kill -KILL "$pid" 2> /dev/null || true
      while running "$pid"; do sleep 0.05; done
    fi
  done
  rm -f "$dir/slurmctld.pid" "$dir/slurmd.pid"
  remove_spool
}

remove_spool() {  # the spool start made in /tmp for a deep DIR, if any
  if [[ -s $dir/spool.path ]]; then
    local spool
    spool=$(<"$dir/spool.path")
    [[ $spool == /tmp/ruccl-slurm-spool.* ]] && rm -rf "$spool"
    rm -f "$dir/spool.path"
  fi
}

stop() {
  [[ -f $conf ]] || die "no cluster in $dir (no slurm.conf)"
  if [[ -n $(live_pid slurmctld) ]]; then
    find_binaries
    # Jobs first, so that no slurmstepd outlives its slurmd.
    SLURM_CONF=$conf "$bin_scancel" --full --quiet --user=root 2>/dev/null || true
    local until=$((SECONDS + 10))
    while [[ -n $(SLURM_CONF=$conf "$bin_squeue" -h -o %i 2>/dev/null) ]] && ((SECONDS < until)); do
      sleep 0.1
    done
  fi
  stop_daemons
  echo "slurm_cluster: stopped the cluster of $dir" >&2
}

status() {
  local ctld slurmd
  ctld=$(live_pid slurmctld); slurmd=$(live_pid slurmd)
  echo "slurmctld: ${ctld:-not running}; slurmd: ${slurmd:-not running}"
  [[ -n $ctld && -n $slurmd ]] || exit 1
  find_binaries
  SLURM_CONF=$conf "$bin_sinfo"
}

case $action in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) usage ;;
esac
