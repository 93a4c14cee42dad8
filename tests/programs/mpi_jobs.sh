#!/usr/bin/env bash
# The main jobs as MPI jobs: every rank a process of `mpirun -np 2` (Communicator::from_env picks
# the MPI engine from mpirun's variables).
#   mpi_jobs.sh CASE MPIRUN PROGRAM WORKDIR
# CASE:
#   train                 train_fashion_mnist: a short run as 2 threads and as 2 MPI processes
#                         must end with byte-identical parameters
#   train_overlap         the same as 3 threads (plain reduce) and as 3 MPI processes with
#                         --overlap --bucket-mb 0.5 (4 buckets, each folded in its fold window):
#                         byte-identical
#   collective_training   `run DIR` then `resume DIR` print the exact values of docs/training.md
#                         on both ranks; `run` on an existing DIR is refused by both
# Prints "PASS: ..." and exits 0, or says what differed and exits 1.
set -euo pipefail
case_name=$1 mpirun=$2 program=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
mpi=("$mpirun" --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1
     --mca btl self,vader --tag-output -np)
fail() { echo "FAIL: $*"; exit 1; }
# has LOG RANK TEXT: rank RANK printed the line TEXT (mpirun --tag-output: "[1,R]<stdout>:TEXT").
has() { grep -qxF "$3" <(sed -n "s/^\[[0-9]*,$2\]<stdout>://p" "$1"); }

case $case_name in
  train)
    short=(--epochs 1 --max-batches 20 --threads 1)
    "$program" "${short[@]}" --ranks 2 --save-parameters "$work/threads.bin" > "$work/threads.log"
    "${mpi[@]}" 2 "$program" "${short[@]}" --save-parameters "$work/mpi.bin" | tee "$work/mpi.log"
    grep -q "over 2 data-parallel rank(s) (processes)" "$work/mpi.log" ||
      fail "mpirun did not run 2 processes"
    [[ -s $work/threads.bin && -s $work/mpi.bin ]] || fail "a parameters file is missing"
    cmp "$work/threads.bin" "$work/mpi.bin" || fail "MPI's final parameters differ from threads'"
    echo "PASS: 2 MPI processes end with the in-process run's parameters, byte for byte"
    ;;
  train_overlap)
    short=(--epochs 1 --max-batches 12 --threads 1)
    "$program" "${short[@]}" --ranks 3 --save-parameters "$work/threads.bin" > "$work/threads.log"
    "${mpi[@]}" 3 "$program" "${short[@]}" --overlap --bucket-mb 0.5 \
      --save-parameters "$work/mpi.bin" | tee "$work/mpi.log"
    grep -q "over 3 data-parallel rank(s) (processes)" "$work/mpi.log" ||
      fail "mpirun did not run 3 processes"
    [[ -s $work/threads.bin && -s $work/mpi.bin ]] || fail "a parameters file is missing"
    cmp "$work/threads.bin" "$work/mpi.bin" ||
      fail "3 MPI processes with --overlap differ from 3 threads' plain reduce"
    echo "PASS: 3 MPI processes with --overlap end with the plain in-process run's parameters"
    ;;
  collective_training)
    for mode in run resume; do
      "${mpi[@]}" 2 "$program" "$mode" "$work/dir" | tee "$work/$mode.log"
      what=$([[ $mode == run ]] && echo saved || echo restored)
      for r in 0 1; do
        has "$work/$mode.log" $r "rank $r after step 1: [0.53125, 0.0, 0.40625] ($what)" ||
          fail "$mode: rank $r's step 1 is not [0.53125, 0.0, 0.40625] ($what)"
        has "$work/$mode.log" $r "rank $r after step 2: [0.5390625, 0.15625, 0.5078125]" ||
          fail "$mode: rank $r's step 2 is not [0.5390625, 0.15625, 0.5078125]"
        grep -q "^\[[0-9]*,$r\]<stdout>:OK: both steps match" "$work/$mode.log" ||
          fail "$mode: rank $r did not print OK"
      done
    done
    if "${mpi[@]}" 2 "$program" run "$work/dir" > "$work/again.log" 2>&1; then
      fail "run on an existing DIR succeeded"
    fi
    grep -q "already exists; \`run\` needs a new directory" "$work/again.log" || fail "no refusal"
    echo "PASS: run and resume as two MPI processes give the exact values on both ranks"
    ;;
  *)
    fail "unknown case $case_name (expected train, train_overlap or collective_training)"
    ;;
esac
