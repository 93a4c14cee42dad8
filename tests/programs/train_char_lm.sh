#!/usr/bin/env bash
# train_char_lm, short (docs/models.md, "A small GPT on real text"):
#   train_char_lm.sh TRAIN_CHAR_LM RUCCL_RUN WORKDIR
# 1. 8 steps on 2 rank threads, checkpointing every 4: the validation loss falls;
# 2. the same stopped after step 4, then resumed from its checkpoint: the final parameters (their
#    FNV-1a hash) and the validation loss equal the uninterrupted run's, bit for bit;
# 3. the same 8 steps as 2 processes under ruccl-run: the same parameters again;
# 4. bad command lines are refused with a message.
# Prints "PASS: ..." and exits 0, or says what differed and exits 1.
set -euo pipefail
train=$1 ruccl_run=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
tiny=(--steps 8 --batch 4 --context 16 --embed 16 --heads 2 --layers 1 --eval-every 4
      --eval-batches 2 --warmup 2 --lr 0.01 --threads 1 --sample 40)

fail() { echo "FAIL: $*"; exit 1; }
hash_of() { grep -o "FNV-1a 0x[0-9a-f]*" "$1" || fail "no parameter hash in $1"; }

"$train" "${tiny[@]}" --ranks 2 --checkpoint-dir "$work/whole" --checkpoint-every 4 > "$work/whole.log"
grep -q "(threads)" "$work/whole.log" || fail "the baseline did not run on threads"
first=$(grep -o "validation loss [0-9.]*" "$work/whole.log" | head -1 | cut -d' ' -f3)
final=$(grep -o "^done: validation loss [0-9.]*" "$work/whole.log" | cut -d' ' -f4)
awk -v a="$first" -v b="$final" 'BEGIN { exit !(b < a) }' ||
  fail "validation loss did not fall: $first then $final"
grep -q "^sample:" "$work/whole.log" || fail "no sampled text"

"$train" "${tiny[@]}" --ranks 2 --checkpoint-dir "$work/split" --stop-after 4 > "$work/first.log"
"$train" "${tiny[@]}" --ranks 2 --checkpoint-dir "$work/split" --resume > "$work/resumed.log"
grep -q "resuming after step 4" "$work/resumed.log" || fail "the second half did not resume"
[[ "$(hash_of "$work/whole.log")" == "$(hash_of "$work/resumed.log")" ]] ||
  fail "resumed parameters differ from the uninterrupted run's"
diff <(grep "^done:" "$work/whole.log" | cut -d, -f1) <(grep "^done:" "$work/resumed.log" | cut -d, -f1) ||
  fail "resumed validation loss differs"

"$ruccl_run" --nproc-per-node 2 "$train" "${tiny[@]}" > "$work/processes.log"
grep -q "(processes)" "$work/processes.log" || fail "ruccl-run did not run processes"
[[ "$(hash_of "$work/whole.log")" == "$(hash_of "$work/processes.log")" ]] ||
  fail "2 processes end with other parameters than 2 threads"

if "$train" --resume > "$work/refused.log" 2>&1; then fail "--resume without a directory ran"; fi
grep -q -- "--resume needs --checkpoint-dir" "$work/refused.log" || fail "no --resume refusal"
if "$train" "${tiny[@]}" --data "$work/none" > "$work/nodata.log" 2>&1; then fail "ran without data"; fi
grep -q "apt-get install fortunes" "$work/nodata.log" || fail "no install hint for missing data"
echo "PASS: resumed after step 4 = uninterrupted = 2 processes ($(hash_of "$work/whole.log")), validation loss $first -> $final"
