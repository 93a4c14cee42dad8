#!/usr/bin/env bash
# The main job over processes (docs/training.md, "Processes and threads"; "Resuming after a kill").
#   train_over_processes.sh CASE TRAIN_FASHION_MNIST RUCCL_RUN WORKDIR
# CASE:
#   ruccl-run    the same short run as 2 threads and as 2 processes under ruccl-run: the final
#                parameters must be byte-identical
#   torchrun     the same with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
#                LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) set by hand for two processes
#   overlap      --overlap (gradient buckets reduced while backward runs; --bucket-mb 0.5 gives
#                4 buckets) as 2 threads and as 2 processes under ruccl-run: both byte-identical
#                to the plain run (docs/training.md, "Overlapped reduction": exact with 2 ranks)
#   accumulate   --accumulate 3 (three micro-batches a step, DataParallel::no_sync) plain, and with
#                --overlap as 2 threads and as 2 processes: byte-identical to each other; refusal
#                of --accumulate 0
#   zero         --zero 1 and --zero 2 (sharded optimizer state; sharded gradients, with --overlap
#                too) as 2 threads, and --zero 2 --overlap as 2 processes over shared memory and
#                over TCP (RUCCL_TCP_SHARED_MEMORY=off), and killed after step 15 and resumed at
#                step 10: byte-identical to the plain run; refusal of --zero 3
#   fsdp         --fsdp (nn::fully_shard per layer) as 2 threads and as 2 processes under ruccl-run:
#                byte-identical to the plain run; refusal of --fsdp with --zero
#   kill-resume  rank 1 SIGKILLs itself after step 15 (a checkpoint step: rank 0 writes step 15,
#                rank 1 never does) under ruccl-run --max-restarts 1; the restarted job must
#                resume at step 10, the newest step BOTH ranks wrote, pass over step 15, and end
#                byte-identical to an uninterrupted run
# Prints "PASS: ..." and exits 0, or says what differed and exits 1.
set -euo pipefail
case_name=$1 train=$2 ruccl_run=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
# A short run of the real job: default model (784-512-512-10, Adam), global batch 128, the real
# data; 2 epochs of 20 batches so that the kill lands mid-epoch and the resume crosses an epoch.
short=(--epochs 2 --max-batches 20 --threads 1)

fail() { echo "FAIL: $*"; exit 1; }
same() {  # same FILE_A FILE_B WHAT
  [[ -s $1 && -s $2 ]] || fail "$3: a parameters file is missing or empty"
  cmp "$1" "$2" || fail "$3: the final parameters differ from the in-process run"
}

"$train" "${short[@]}" --ranks 2 --save-parameters "$work/threads.bin" > "$work/threads.log"
grep -q "(threads)" "$work/threads.log" || fail "the baseline did not run on threads"

case $case_name in
  zero)
    for z in 1 2; do
      "$train" "${short[@]}" --zero $z --ranks 2 --save-parameters "$work/zero$z-threads.bin" \
        > "$work/zero$z-threads.log"
      same "$work/threads.bin" "$work/zero$z-threads.bin" "--zero $z on 2 threads"
    done
    zero2=(--zero 2 --overlap --bucket-mb 0.5)
    "$train" "${short[@]}" "${zero2[@]}" --ranks 2 --save-parameters "$work/zero2o-threads.bin" \
      > "$work/zero2o-threads.log"
    same "$work/threads.bin" "$work/zero2o-threads.bin" "--zero 2 --overlap on 2 threads"
    for shm in auto off; do
      RUCCL_TCP_SHARED_MEMORY=$shm "$ruccl_run" --nproc-per-node 2 "$train" "${short[@]}" \
        "${zero2[@]}" --save-parameters "$work/zero2-processes-$shm.bin" \
        > "$work/zero2-processes-$shm.log"
      grep -q "^\[0\] .*(processes)" "$work/zero2-processes-$shm.log" ||
        fail "ruccl-run did not run processes"
      same "$work/threads.bin" "$work/zero2-processes-$shm.bin" \
        "--zero 2 --overlap on 2 processes (RUCCL_TCP_SHARED_MEMORY=$shm)"
    done
    # Killed after step 15 and resumed from step 10 (each rank's shard of the optimizer state in
    # the step's sharded checkpoint, zero-step10/, read back by load_zero_checkpoint).
    "$ruccl_run" --nproc-per-node 2 --max-restarts 1 "$train" "${short[@]}" "${zero2[@]}" \
      --checkpoint-dir "$work/zero-ckpt" --checkpoint-every 5 --kill-after-step 15 \
      --save-parameters "$work/zero2-resumed.bin" > "$work/zero2-resumed.log" 2>&1 ||
      fail "the restarted --zero 2 job failed: $(tail -5 "$work/zero2-resumed.log")"
    grep -q "^\[0\] resuming at step 10 .*(step 15 passed over: not every rank wrote it)" \
      "$work/zero2-resumed.log" || fail "the --zero 2 job did not resume at step 10, passing over 15"
    same "$work/threads.bin" "$work/zero2-resumed.bin" "--zero 2 --overlap killed and resumed"
    [ -f "$work/zero-ckpt/zero-step40/manifest.shards" ] && [ ! -e "$work/zero-ckpt/zero-step10" ] ||
      fail "the --zero job did not keep its newest sharded checkpoint alone"
    if "$train" --zero 3 > "$work/zero3.log" 2>&1; then fail "--zero 3 was accepted"; fi
    grep -q -- "--zero expects 0, 1 or 2" "$work/zero3.log" || fail "no --zero 3 refusal"
    echo "PASS: --zero 1 and --zero 2 (with --overlap) end with the plain run's parameters, byte for byte, on threads, on processes over shared memory and TCP, and killed and resumed"
    ;;
  fsdp)
    "$train" "${short[@]}" --fsdp --ranks 2 --save-parameters "$work/fsdp-threads.bin" \
      > "$work/fsdp-threads.log"
    same "$work/threads.bin" "$work/fsdp-threads.bin" "--fsdp on 2 threads"
    "$ruccl_run" --nproc-per-node 2 "$train" "${short[@]}" --fsdp \
      --save-parameters "$work/fsdp-processes.bin" > "$work/fsdp-processes.log"
    grep -q "^\[0\] .*(processes)" "$work/fsdp-processes.log" ||
      fail "ruccl-run did not run processes"
    same "$work/threads.bin" "$work/fsdp-processes.bin" "--fsdp on 2 processes"
    if "$train" --fsdp --zero 1 > "$work/fsdp-zero.log" 2>&1; then fail "--fsdp --zero 1 was accepted"; fi
    grep -q -- "expected --fsdp without --zero" "$work/fsdp-zero.log" || fail "no --fsdp --zero refusal"
    echo "PASS: --fsdp ends with the plain run's parameters, byte for byte, on threads and processes"
    ;;
  overlap)
    overlap=(--overlap --bucket-mb 0.5)
    "$train" "${short[@]}" "${overlap[@]}" --ranks 2 --save-parameters "$work/overlap-threads.bin" \
      > "$work/overlap-threads.log"
    same "$work/threads.bin" "$work/overlap-threads.bin" "--overlap on 2 threads"
    "$ruccl_run" --nproc-per-node 2 "$train" "${short[@]}" "${overlap[@]}" \
      --save-parameters "$work/overlap-processes.bin" > "$work/overlap-processes.log"
    grep -q "^\[0\] .*(processes)" "$work/overlap-processes.log" ||
      fail "ruccl-run did not run processes"
    same "$work/threads.bin" "$work/overlap-processes.bin" "--overlap on 2 processes"
    echo "PASS: --overlap ends with the plain run's parameters, byte for byte, on threads and processes"
    ;;
  accumulate)
    # 3 micro-batches a step (no_sync, then one reduction): the plain run's gradients in other
    # sums, so compared with the accumulating run without overlap, which it must equal exactly.
    "$train" "${short[@]}" --accumulate 3 --ranks 2 --save-parameters "$work/acc-threads.bin" \
      > "$work/acc-threads.log"
    cmp -s "$work/threads.bin" "$work/acc-threads.bin" &&
      fail "--accumulate 3 gave the plain run's bytes: were micro-batches cut at all?"
    "$train" "${short[@]}" --accumulate 3 --overlap --bucket-mb 0.5 --ranks 2 \
      --save-parameters "$work/acc-overlap-threads.bin" > "$work/acc-overlap-threads.log"
    same "$work/acc-threads.bin" "$work/acc-overlap-threads.bin" "--accumulate 3 --overlap on 2 threads"
    "$ruccl_run" --nproc-per-node 2 "$train" "${short[@]}" --accumulate 3 --overlap --bucket-mb 0.5 \
      --save-parameters "$work/acc-overlap-processes.bin" > "$work/acc-overlap-processes.log"
    same "$work/acc-threads.bin" "$work/acc-overlap-processes.bin" \
      "--accumulate 3 --overlap on 2 processes"
    # The same training in other sums: the final test accuracy within 1.5 points of the plain run's.
    plain=$(grep -o "test accuracy [0-9.]*" "$work/threads.log" | tail -1 | awk '{print $3}')
    acc=$(grep -o "test accuracy [0-9.]*" "$work/acc-threads.log" | tail -1 | awk '{print $3}')
    [[ -n $plain && -n $acc ]] || fail "no test accuracy line"
    awk -v a="$plain" -v b="$acc" 'BEGIN { d = a - b; exit !(d < 1.5 && d > -1.5) }' ||
      fail "--accumulate 3 reached $acc % against the plain run's $plain %"
    if "$train" --accumulate 0 > "$work/acc0.log" 2>&1; then fail "--accumulate 0 was accepted"; fi
    grep -q -- "--accumulate expects K >= 1" "$work/acc0.log" || fail "no --accumulate 0 refusal"
    echo "PASS: --accumulate 3 with --overlap ends with --accumulate 3's parameters, byte for byte, on threads and processes"
    ;;
  ruccl-run)
    "$ruccl_run" --nproc-per-node 2 "$train" "${short[@]}" \
      --save-parameters "$work/processes.bin" | tee "$work/processes.log"
    grep -q "^\[0\] .*(processes)" "$work/processes.log" || fail "ruccl-run did not run processes"
    same "$work/threads.bin" "$work/processes.bin" "ruccl-run --nproc-per-node 2"
    # The same accuracy line (it follows from the same parameters).
    diff <(grep -o "test accuracy [0-9.]*%" "$work/threads.log") \
         <(grep -o "test accuracy [0-9.]*%" "$work/processes.log") || fail "accuracy differs"
    # Refusals: --ranks that contradicts the launcher; the kill hook on threads.
    if "$ruccl_run" --nproc-per-node 2 "$train" --ranks 3 > "$work/ranks.log" 2>&1; then
      fail "--ranks 3 under 2 processes succeeded"
    fi
    grep -q -- "--ranks 3 but the launcher started 2 ranks" "$work/ranks.log" ||
      fail "no --ranks refusal: $(cat "$work/ranks.log")"
    if "$train" --kill-after-step 3 > "$work/kill.log" 2>&1; then fail "the kill hook ran on threads"; fi
    grep -q -- "--kill-after-step needs ranks that are processes" "$work/kill.log" ||
      fail "no kill-hook refusal"
    echo "PASS: 2 processes under ruccl-run end with the in-process run's parameters, byte for byte"
    ;;
  torchrun)
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    pids=()
    for rank in 0 1; do
      env RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
        MASTER_PORT="$port" TORCHELASTIC_RUN_ID="ruccl-test-$$" \
        timeout 120 "$train" "${short[@]}" --save-parameters "$work/rank$rank.bin" \
        > "$work/rank$rank.log" 2>&1 &
      pids+=($!)
    done
    status=0
    for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
    cat "$work/rank0.log" "$work/rank1.log"
    [[ $status == 0 ]] || fail "a rank exited with status $status"
    grep -q "(processes)" "$work/rank0.log" || fail "torchrun's variables did not give processes"
    [[ ! -s $work/rank1.log ]] || fail "rank 1 printed something (only rank 0 reports)"
    same "$work/threads.bin" "$work/rank0.bin" "torchrun-style variables"
    echo "PASS: 2 processes from torchrun's variables end with the in-process run's parameters"
    ;;
  kill-resume)
    set +e
    "$ruccl_run" --nproc-per-node 2 --max-restarts 1 "$train" "${short[@]}" \
      --checkpoint-dir "$work/ckpt" --checkpoint-every 5 --kill-after-step 15 \
      --save-parameters "$work/resumed.bin" > "$work/resumed.log" 2>&1
    status=$?
    set -e
    cat "$work/resumed.log"
    [[ $status == 0 ]] || fail "the restarted job exited with status $status"
    grep -q "rank 1 (pid [0-9]*) was killed by signal 9" "$work/resumed.log" ||
      fail "rank 1 was not killed by SIGKILL"
    grep -q "restarting the job (restart 1 of 1)" "$work/resumed.log" || fail "no restart"
    grep -q "^\[0\] resuming at step 10 (0 whole epochs) .*(step 15 passed over: not every rank wrote it)" \
      "$work/resumed.log" || fail "the job did not resume at step 10, passing over step 15"
    same "$work/threads.bin" "$work/resumed.bin" "killed and resumed"
    # What is left: the last agreed step of each rank, nothing else.
    left=$(cd "$work/ckpt" && ls | sort | tr '\n' ' ')
    [[ $left == "rank0-step40.ckpt rank1-step40.ckpt " ]] || fail "checkpoints left: $left"
    echo "PASS: killed at step 15, resumed at step 10, byte-identical to the uninterrupted run"
    ;;
  *) fail "unknown case $case_name" ;;
esac
