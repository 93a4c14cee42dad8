#!/usr/bin/env bash
# `collective_training resume DIR` when DIR is not what `run` left (its two ranks are threads):
#   resume_failures.sh COLLECTIVE_TRAINING WORKDIR
# One rank's file missing, rank 0's file damaged (one bit), the two files swapped, DIR missing:
# each must fail with its reason and a non-zero status, promptly (no rank waits for the 300 s
# deadline: CTest's timeout is far below it). Prints "PASS: ..." or "FAIL: ..." and exits 1.
set -euo pipefail
ct=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
fresh() {  # fresh NAME: a DIR as `run` leaves it
  "$ct" run "$work/$1" > "$work/$1.run.log" || fail "run $1: $(cat "$work/$1.run.log")"
}
refused() {  # refused NAME PATTERN...: resume fails and its error contains every PATTERN
  local name=$1 out
  shift
  if out=$("$ct" resume "$work/$name" 2>&1); then fail "resume $name succeeded: $out"; fi
  for pattern in "$@"; do
    grep -qF -- "$pattern" <<< "$out" || fail "resume $name: expected '$pattern' in: $out"
  done
}
fresh missing
rm "$work/missing/rank1.ckpt"
refused missing "rank 1 could not load" "rank1.ckpt"

fresh damaged
file="$work/damaged/rank0.ckpt"
byte=$(od -An -tu1 -j100 -N1 "$file" | tr -d ' ')
printf "$(printf '\\%03o' $((byte ^ 1)))" | dd of="$file" bs=1 seek=100 conv=notrunc status=none
refused damaged "rank0.ckpt" "corrupted"

fresh swapped
mv "$work/swapped/rank0.ckpt" "$work/swapped/tmp.ckpt"
mv "$work/swapped/rank1.ckpt" "$work/swapped/rank0.ckpt"
mv "$work/swapped/tmp.ckpt" "$work/swapped/rank1.ckpt"
refused swapped "expected world size 2 rank " "(the record's), got world size 2 rank "

refused nothing "does not exist"
echo "PASS: resume refuses a missing, damaged or swapped file and a missing DIR"
