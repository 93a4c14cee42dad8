#!/usr/bin/env bash
# ruCCL jobs under a real Slurm (tests/slurm/CMakeLists.txt makes each CASE a CTest test; the
# cluster is the fixture "start"/"stop": tools/slurm_cluster.sh, one for the whole group).
#   slurm_jobs.sh CASE CLUSTER_DIR WORK_DIR [PROGRAM] [ENGINE]
# CASE:
#   start         start the single-host cluster in CLUSTER_DIR (the fixture's setup)
#   stop          stop it (the fixture's cleanup; also after a failed start)
#   collectives   srun -n 2 (and -n 3 --overcommit) PROGRAM=launched_worker with RUCCL_ENGINE=ENGINE,
#                 rendezvous from Slurm's variables: every collective's values exact on every rank;
#                 and -n 2 without RUCCL_ENGINE, where from_env must choose ENGINE itself
#   collectives-pmix  the same with srun --mpi=pmix
#   script-errors tools/slurm_cluster.sh refuses a second start of the running cluster; a start
#                 whose slurmd fails says so with its log tail and leaves no daemon
#   fail-rank     srun -n 2 PROGRAM=launched_worker, rank 1 SIGKILLs itself during a loop of
#                 all_reduces: rank 0 fails naming it promptly, srun exits non-zero
#   fail-rank-pmix  the same under srun --mpi=pmix with RUCCL_ENGINE=ENGINE: over MPI the step is
#                 ended (PMIx tells slurmd of the death), promptly and non-zero, without a hang
#   train         srun -n 2 PROGRAM=train_fashion_mnist (one short epoch) with RUCCL_ENGINE=ENGINE:
#                 the same parameters, byte for byte, and the same accuracy as the in-process run
#                 of 2 ranks; rank 0's "launch:" line names Slurm's variables and the engine
#   train-pmix    the same, launched with srun --mpi=pmix (slurmd's PMIx server: what an MPI
#                 engine initialises from); ENGINE is mpi when ruCCL is built with MPI
# Prints "PASS: ..." and exits 0; "FAIL: ..." and exits 1; exits 77 (CTest: skipped) with the
# reason when Slurm is not installed.
set -euo pipefail
case_name=$1 cluster=$2 work=$3 program=${4:-} engine=${5:-tcp}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster_sh=$root/tools/slurm_cluster.sh

fail() { echo "FAIL: $*"; exit 1; }
# What Communicator::engine_name says for the engine RUCCL_ENGINE asks for.
case $engine in
  tcp) engine_re="algorithms" ;;
  mpi) engine_re="mpi.*" ;;
  *) fail "unknown engine '$engine' (expected tcp or mpi)" ;;
esac

# Under AddressSanitizer (the asan test preset sets ASAN_OPTIONS), OpenMPI's own allocations
# of MPI_Init that MPI_Finalize never frees (libmpi, libopen-pal, PMIx, and MCA plugins already
# unloaded, whose frames no suppression can name) would fail every MPI rank at exit: an MPI job
# runs with leak detection off; every other ASan and UBSan check stays on, and TCP jobs keep it.
if [[ $engine == mpi && -n ${ASAN_OPTIONS:-} ]]; then
  export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
  echo "note: leak detection off for the MPI engine's ranks (OpenMPI's allocations)"
fi

if ((EUID != 0)); then
  echo "SKIP: the private Slurm cluster runs its slurmd as root (CI runs as root)"
  exit 77
fi
for tool in srun slurmctld slurmd; do
  if ! PATH="$PATH:/usr/sbin" command -v "$tool" > /dev/null; then
    echo "SKIP: Slurm is not installed ($tool not found): apt-get install slurmctld slurmd" \
         "slurm-client (tools/install_packages.sh installs them)"
    exit 77
  fi
done

case $case_name in
  start)
    # A cluster an interrupted earlier run left in this build folder is stopped first.
    if [[ -f $cluster/slurm.conf ]] && bash "$cluster_sh" status "$cluster" > /dev/null 2>&1; then
      echo "stopping the cluster an earlier run left in $cluster"
      bash "$cluster_sh" stop "$cluster"
    fi
    exec bash "$cluster_sh" start "$cluster"
    ;;
  stop)
    [[ -f $cluster/slurm.conf ]] || { echo "no cluster in $cluster: nothing to stop"; exit 0; }
    exec bash "$cluster_sh" stop "$cluster"
    ;;
esac

[[ -f $cluster/slurm.conf ]] || fail "no cluster in $cluster (the fixture's start did not run)"
# Nothing of an outer job or launcher (the tests themselves run inside an sbatch job, say) may
# reach srun or the ranks: srun would use the outer allocation, a rank the outer job's variables.
for name in $(compgen -e); do
  [[ $name =~ ^(SLURM_|SBATCH_|SALLOC_|OMPI_|PMIX_|RUCCL_RANK|RUCCL_WORLD_SIZE|RUCCL_LOCAL_|RUCCL_NODE_RANK$|RUCCL_NUM_NODES$|RUCCL_MASTER_|MASTER_ADDR$|MASTER_PORT$|RANK$|WORLD_SIZE$|LOCAL_RANK$|LOCAL_WORLD_SIZE$) ]] &&
    unset "$name"
done
export SLURM_CONF=$cluster/slurm.conf
rm -rf "$work" && mkdir -p "$work"
# run_srun LOG SRUN_ARGS...: srun with a job time limit and a wall-clock bound, output to LOG
# (each line prefixed with its task, "0: "); returns srun's status.
run_srun() {
  local log=$1 status=0
  shift
  timeout --kill-after=5 120 srun --time=2 --kill-on-bad-exit=0 --label "$@" > "$log" 2>&1 ||
    status=$?
  return "$status"
}

case $case_name in
  collectives | collectives-pmix)
    mpi=()
    [[ $case_name == collectives-pmix ]] && mpi=(--mpi=pmix)
    # -n 2 and -n 3 with RUCCL_ENGINE=ENGINE; then -n 2 with RUCCL_ENGINE unset, where from_env
    # must choose the same engine by itself (MPI under --mpi=pmix in a build with MPI, else TCP).
    for run in "2 asked" "3 asked" "2 default"; do
      read -r n how <<< "$run"
      extra=()
      ((n > $(nproc))) && extra=(--overcommit)
      log=$work/n$n-$how.log status=0
      (
        if [[ $how == default ]]; then unset RUCCL_ENGINE; else export RUCCL_ENGINE=$engine; fi
        run_srun "$log" -n "$n" "${extra[@]}" "${mpi[@]}" "$program" collectives 100003
      ) || status=$?
      cat "$log"
      [[ $status == 0 ]] || fail "srun -n $n ${mpi[*]} ($how engine) exited with status $status"
      for ((r = 0; r < n; ++r)); do
        grep -q "^$r: job rank $r of $n (local rank $r of $n, node 0 of 1), rendezvous at .*, from slurm's variables$" \
          "$log" || fail "task $r did not read rank $r of $n from Slurm's variables"
        grep -q "^$r: ok rank $r of $n: 10 collectives exact (engine $engine_re)$" "$log" ||
          fail "task $r of $n ($how engine) did not finish its collectives exactly over the $engine engine"
      done
    done
    echo "PASS: srun -n 2 and -n 3${mpi[*]:+ ${mpi[*]}} ran 10 collectives over engine $engine (asked for," \
         "and chosen by from_env when not), every value exact on every rank"
    ;;
  script-errors)
    # A second start of the running cluster is refused and leaves it running.
    status=0
    bash "$cluster_sh" start "$cluster" > "$work/again.log" 2>&1 || status=$?
    cat "$work/again.log"
    [[ $status == 1 ]] || fail "a second start exited $status, expected 1"
    grep -q "a cluster of $cluster is already running" "$work/again.log" ||
      fail "a second start did not say the cluster runs"
    bash "$cluster_sh" status "$cluster" > /dev/null || fail "the second start stopped the cluster"
    # A daemon that cannot start: its status and log tail, and nothing left running.
    status=0
    RUCCL_SLURM_EXTRA_CONF=TaskPlugin=task/no_such_plugin \
      bash "$cluster_sh" start "$work/broken" > "$work/broken.log" 2>&1 || status=$?
    cat "$work/broken.log"
    [[ $status == 1 ]] || fail "a start whose slurmd cannot load its task plugin exited $status"
    grep -q "slurmd exited with status 1 while the cluster was starting" "$work/broken.log" ||
      fail "the failed start did not name slurmd"
    grep -q "task/no_such_plugin" "$work/broken.log" || fail "the failed start showed no log tail"
    if bash "$cluster_sh" status "$work/broken" > /dev/null 2>&1; then
      fail "a daemon of the failed start still runs"
    fi
    echo "PASS: a second start is refused, a failed one names the daemon, shows its log, leaves nothing"
    ;;
  fail-rank)
    status=0
    SECONDS=0
    RUCCL_ENGINE=tcp run_srun "$work/fail.log" -n 2 "$program" fail-rank 1 || status=$?
    took=$SECONDS
    cat "$work/fail.log"
    [[ $status != 0 ]] || fail "srun exited 0 although rank 1 was killed"
    died=$(sed -n 's/^1: dying rank 1 \([0-9]*\)$/\1/p' "$work/fail.log")
    # PeerLost inside a call; Aborted carrying the loss when the loss came between two calls.
    line=$(grep -E "^0: error (PeerLost|Aborted) [0-9]+ .*lost rank 1" "$work/fail.log") ||
      fail "rank 0 did not fail with PeerLost (or Aborted carrying the loss) naming rank 1"
    [[ -n $died ]] || fail "rank 1 did not reach its death"
    failed=$(awk '{print $4}' <<< "$line")
    ms=$(((failed - died) / 1000000))
    # The bound is the ruCCL failure's, far below the 30 s deadline the worker sets; srun itself
    # must end soon after (it waits for every task).
    ((ms < ${RUCCL_SLURM_LOSS_BOUND_MS:-2000})) || fail "rank 0 failed $ms ms after rank 1 died"
    ((took < 20)) || fail "srun took $took s to end"
    echo "PASS: rank 1 killed: rank 0 failed with $(awk '{print $3}' <<< "$line") naming it $ms ms later;" \
         "srun exited $status after $took s"
    ;;
  fail-rank-pmix)
    # Over MPI a lost rank ends the job the MPI way: PMIx reports the death to slurmd, which
    # cancels the step; the survivor must not hold the step up (no hang in a wait, no report of
    # success) and srun must end promptly, non-zero.
    status=0
    SECONDS=0
    RUCCL_ENGINE=$engine run_srun "$work/fail.log" -n 2 --mpi=pmix "$program" fail-rank 1 ||
      status=$?
    took=$SECONDS
    cat "$work/fail.log"
    [[ $status != 0 ]] || fail "srun exited 0 although rank 1 was killed"
    grep -q "^1: dying rank 1 [0-9]*$" "$work/fail.log" || fail "rank 1 did not reach its death"
    if grep -q "^0: wrong" "$work/fail.log"; then fail "rank 0 reported a result after the loss"; fi
    ((took < 20)) || fail "srun took $took s to end (the worker's deadline is 30 s)"
    echo "PASS: rank 1 killed under --mpi=pmix over engine $engine: the step ended after $took s," \
         "srun exited $status"
    ;;
  train | train-pmix)
    # The short run of tests/programs/train_over_processes.sh: the real data, 20 batches.
    short=(--epochs 1 --max-batches 20 --threads 1)
    "$program" "${short[@]}" --ranks 2 --save-parameters "$work/threads.bin" > "$work/threads.log"
    grep -q "(threads)" "$work/threads.log" || fail "the baseline did not run on threads"
    # Under --mpi=pmix each task first says which PMIx rank slurmd's PMIx server gave it.
    launch=(-n 2 "$program") how="srun -n 2"
    [[ $case_name == train-pmix ]] && how="srun -n 2 --mpi=pmix" &&
      launch=(-n 2 --mpi=pmix /bin/sh -c 'echo "pmix rank ${PMIX_RANK:-none}"; exec "$0" "$@"' "$program")
    status=0
    RUCCL_ENGINE=$engine run_srun "$work/srun.log" "${launch[@]}" "${short[@]}" \
      --save-parameters "$work/srun.bin" || status=$?
    cat "$work/srun.log"
    [[ $status == 0 ]] || fail "$how exited with status $status"
    if [[ $case_name == train-pmix ]]; then
      for r in 0 1; do
        grep -q "^$r: pmix rank $r$" "$work/srun.log" || fail "task $r has no PMIx rank $r"
      done
    fi
    # An MPI job takes its ranks from MPI ("from MPI's variables"), a TCP one from Slurm's.
    source_re="slurm"
    [[ $engine == mpi ]] && source_re="(slurm|MPI)"
    grep -Eq "^0: launch: rank 0 of 2 .*, from $source_re's variables; engine $engine_re$" \
      "$work/srun.log" ||
      fail "expected rank 0 to report $source_re's variables and the $engine engine ($engine_re)"
    grep -q "^0: .*over 2 data-parallel rank(s) (processes)" "$work/srun.log" ||
      fail "srun did not run 2 processes"
    [[ -s $work/srun.bin ]] || fail "rank 0 wrote no parameters"
    cmp "$work/threads.bin" "$work/srun.bin" ||
      fail "the final parameters differ from the in-process run's"
    diff <(grep -o "test accuracy [0-9.]*%" "$work/threads.log") \
         <(grep -o "test accuracy [0-9.]*%" "$work/srun.log") || fail "the accuracy differs"
    echo "PASS: $how over engine $engine ends with the in-process run's" \
         "parameters, byte for byte"
    ;;
  *) fail "unknown case $case_name" ;;
esac
