#!/usr/bin/env bash
# train_fashion_mnist --model cnn, short (docs/models.md, "A conv net on Fashion-MNIST"):
#   train_fashion_mnist_cnn.sh TRAIN_FASHION_MNIST RUCCL_RUN WORKDIR
# 1. 2 epochs of 4 batches (global batch 64) on 2 rank threads, evaluated on 500 test images: the
#    epoch loss falls and the accuracy is above chance;
# 2. the same stopped after epoch 1, then resumed from its checkpoint: the final parameters are
#    byte-identical to the uninterrupted run's;
# 3. the same as 2 processes under ruccl-run: byte-identical parameters again;
# 4. a bad --model is refused with a message.
# Prints "PASS: ..." and exits 0, or says what differed and exits 1.
set -euo pipefail
train=$1 ruccl_run=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
short=(--model cnn --max-batches 4 --batch 64 --test-limit 500 --threads 1)

fail() { echo "FAIL: $*"; exit 1; }
same() {  # same FILE_A FILE_B WHAT
  [[ -s $1 && -s $2 ]] || fail "$3: a parameters file is missing or empty"
  cmp "$1" "$2" || fail "$3: the final parameters differ from the uninterrupted run's"
}

"$train" "${short[@]}" --epochs 2 --ranks 2 --checkpoint-dir "$work/whole" \
  --save-parameters "$work/whole.bin" > "$work/whole.log"
grep -q "^CNN .*(threads)" "$work/whole.log" || fail "no CNN on rank threads: $(cat "$work/whole.log")"
grep -q "evaluating on the first 500" "$work/whole.log" || fail "--test-limit not applied"
losses=($(grep -o "^epoch  *[0-9]*  step  *[0-9]*  loss [0-9.]*" "$work/whole.log" | awk '{print $6}'))
[[ ${#losses[@]} == 2 ]] || fail "expected 2 epoch lines, got ${#losses[@]}"
awk -v a="${losses[0]}" -v b="${losses[1]}" 'BEGIN { exit !(b < a) }' ||
  fail "the epoch loss did not fall: ${losses[0]} then ${losses[1]}"
accuracy=$(grep -o "^done: test accuracy [0-9.]*" "$work/whole.log" | awk '{print $4}')
awk -v a="$accuracy" 'BEGIN { exit !(a > 30) }' || fail "test accuracy $accuracy% is near chance"

"$train" "${short[@]}" --epochs 1 --ranks 2 --checkpoint-dir "$work/split" > "$work/first.log"
"$train" "${short[@]}" --epochs 2 --ranks 2 --checkpoint-dir "$work/split" --resume \
  --save-parameters "$work/resumed.bin" > "$work/resumed.log"
grep -q "resuming at step 4" "$work/resumed.log" || fail "the second epoch did not resume"
same "$work/whole.bin" "$work/resumed.bin" "stopped after epoch 1 and resumed"

"$ruccl_run" --nproc-per-node 2 "$train" "${short[@]}" --epochs 2 \
  --save-parameters "$work/processes.bin" > "$work/processes.log"
grep -q "(processes)" "$work/processes.log" || fail "ruccl-run did not run processes"
same "$work/whole.bin" "$work/processes.bin" "2 processes under ruccl-run"

if "$train" --model resnet > "$work/refused.log" 2>&1; then fail "--model resnet ran"; fi
grep -q -- "--model expects mlp or cnn, got 'resnet'" "$work/refused.log" || fail "no --model refusal"
echo "PASS: CNN loss ${losses[0]} -> ${losses[1]}, accuracy $accuracy% on 500 test images;" \
  "resumed = uninterrupted = 2 processes ($(grep -o "FNV-1a 0x[0-9a-f]*" "$work/whole.log"))"
