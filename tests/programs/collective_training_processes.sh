#!/usr/bin/env bash
# collective_training with its two ranks as two processes (ruccl-run --nproc-per-node 2):
#   collective_training_processes.sh COLLECTIVE_TRAINING RUCCL_RUN WORKDIR
# `run` then `resume` over processes must print the exact values of docs/training.md on both
# ranks; a checkpoint written by processes resumes on threads (the same files); `run` on an
# existing DIR is refused by both ranks; a world of 3 is refused. Prints "PASS: ..." or exits 1.
set -euo pipefail
ct=$1 ruccl_run=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
exact() {  # exact LOG MODE: both ranks printed the exact values of both steps
  local log=$1 mode=$2
  for r in 0 1; do
    grep -qx "\[$r\] rank $r after step 1: \[0.53125, 0.0, 0.40625\] ($mode)" "$log" ||
      fail "$log: rank $r's step 1 is not [0.53125, 0.0, 0.40625] ($mode)"
    grep -qx "\[$r\] rank $r after step 2: \[0.5390625, 0.15625, 0.5078125\]" "$log" ||
      fail "$log: rank $r's step 2 is not [0.5390625, 0.15625, 0.5078125]"
    grep -q "^\[$r\] OK: both steps match" "$log" || fail "$log: rank $r did not print OK"
  done
}
"$ruccl_run" --nproc-per-node 2 "$ct" run "$work/dir" | tee "$work/run.log"
exact "$work/run.log" saved
[[ -s $work/dir/rank0.ckpt && -s $work/dir/rank1.ckpt ]] || fail "run did not write both files"
"$ruccl_run" --nproc-per-node 2 "$ct" resume "$work/dir" | tee "$work/resume.log"
exact "$work/resume.log" restored
# Files written by processes resume on threads: the same records.
"$ct" resume "$work/dir" | grep -q "^OK: both steps match" || fail "threads could not resume"
# Refusals, by every rank and with a non-zero status.
if "$ruccl_run" --nproc-per-node 2 "$ct" run "$work/dir" > "$work/again.log" 2>&1; then
  fail "run on an existing DIR succeeded"
fi
grep -q "already exists; \`run\` needs a new directory" "$work/again.log" || fail "no refusal"
if "$ruccl_run" --nproc-per-node 3 "$ct" run "$work/dir3" > "$work/three.log" 2>&1; then
  fail "a world of 3 succeeded"
fi
grep -q "expected 2 ranks, got a world of 3" "$work/three.log" || fail "no world-size refusal"
[[ ! -e $work/dir3 ]] || fail "a refused run made its DIR"
echo "PASS: run and resume as two processes give the exact values on both ranks"
