#!/usr/bin/env bash
# The GPU check: on a machine with a GPU, runs the GPU tests, the programs on CUDA and the GPU
# benchmarks from a folder tools/gpu_build.sh prepared elsewhere, and prints one summary table
# (what, pass/fail, seconds, key number). Under 8 minutes on one H200: the whole check keeps a
# time budget (RUCCL_GPU_CHECK_BUDGET_S, default 450 s); a step gets at most what is left, and
# steps past it are reported as skipped.
#
#   tools/gpu_check.sh [CARRY_DIR]       (default build/gpu-carry)
#
# Logs of every step go to CARRY_DIR/logs, the table also to CARRY_DIR/logs/gpu_check.md; with $OUT
# set (the device tool's folder) both come back there (gpu_check.md, gpu_check_logs.tgz), the
# table rewritten after every step so a run cut short still brings back what it did. Exit
# status: 0 when every line passed.
# Libraries the GPU machine keeps elsewhere (NCCL, cuBLAS from Python wheels) are looked up in
# its python3's nvidia/*/lib folders when the loader does not find them.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="$(cd "${1:-$ROOT/build/gpu-carry}" && pwd)" || { echo "gpu_check: no folder ${1:-build/gpu-carry}: run tools/gpu_build.sh first" >&2; exit 2; }
BIN="$CARRY/bin"
LOGS="$CARRY/logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"
logname() { printf '%s' "$1" | tr -c 'A-Za-z0-9_.-' '_'; }
export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The golden data of this copy of the tree (the binaries were built elsewhere, at another path).
export RUCCL_TEST_DATA_DIR="${RUCCL_TEST_DATA_DIR:-$ROOT/tests/data}"
# NCCL's bootstrap on loopback (the machine has no other network), its warnings in the logs.
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}" NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
BUDGET="${RUCCL_GPU_CHECK_BUDGET_S:-450}"
started=$SECONDS

# Missing shared libraries: search the Python wheels' folders (nvidia-nccl-cu13, ...).
missing() { ldd "$BIN/all_reduce" 2>/dev/null | awk '/not found/ {print $1}'; }
if [[ -n "$(missing)" ]]; then
  for dir in $(python3 - <<'PY' 2>/dev/null
import importlib, os
for name in ("nccl", "cublas", "cuda_runtime", "cuda_nvrtc", "nvjitlink", "cu13"):
    try:
        m = importlib.import_module("nvidia." + name)
        for p in m.__path__:
            print(os.path.join(p, "lib"))
    except Exception:
        pass
PY
  ) /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [[ -d "$dir" ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
  done
fi

rows=()
failures=0
# step NAME TIMEOUT_S KEY_FUNCTION COMMAND...: runs COMMAND with a timeout, logs it, adds a row.
# The table so far: to CARRY_DIR/logs/gpu_check.md, and to $OUT when set.
write_table() {
  {
    echo "| what | result | seconds | key number |"
    echo "|---|---|---:|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "$(nvidia-smi -L 2>/dev/null | head -n 1); ${failures} failing line(s)"
  } >"$LOGS/gpu_check.md"
  [[ -n "${OUT:-}" ]] && cp "$LOGS/gpu_check.md" "$OUT/"
  return 0
}
step() {
  local name="$1" limit="$2" key="$3"
  shift 3
  local left=$((BUDGET - (SECONDS - started)))
  if ((left < 20)); then
    rows+=("| $name | fail | 0.0 | skipped: the check's ${BUDGET} s budget is spent |")
    failures=$((failures + 1))
    echo "gpu_check: $name: skipped (budget spent)" >&2
    write_table
    return
  fi
  ((limit > left)) && limit=$left
  local log
  log="$LOGS/$(logname "$name").log"
  local start end seconds rc verdict number
  start=$(date +%s.%N)
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
  number="$("$key" "$log" "$rc")"
  if [[ $rc -eq 0 && "$number" != FAIL* ]]; then
    verdict=pass
  else
    verdict=fail
    failures=$((failures + 1))
    [[ $rc -ge 124 ]] && number="timed out after ${limit} s; $number"
    [[ $rc -ne 0 && $rc -lt 124 ]] && number="exit $rc; $number"
  fi
  number="${number//|//}"
  ((${#number} > 200)) && number="${number:0:197}..."
  rows+=("| $name | $verdict | $seconds | $number |")
  echo "gpu_check: $name: $verdict (${seconds} s) $number" >&2
  write_table
}

catch2_key() {  # "N test cases, M assertions" or the failure count
  local line
  line=$(grep -E "^(All tests passed|test cases:)" "$1" | tail -n 1)
  [[ -n "$line" ]] && echo "$line" || echo "FAIL: no Catch2 summary (see $(basename "$1"))"
}
grep_key() {  # the last line matching $PATTERN
  local line
  line=$(grep -E "$PATTERN" "$1" | tail -n 1)
  [[ -n "$line" ]] && echo "$line" || echo "FAIL: no line matching /$PATTERN/"
}
demo_key() {  # the demo's one-line verdict; anything but OK is a failure
  local line
  line=$(grep -E '^all_reduce: ' "$1" | tail -n 1)
  [[ "$line" == "all_reduce: OK"* ]] && echo "$line" || echo "FAIL: ${line:-no verdict line}"
}
training_key() { PATTERN='^OK: both steps match|^collective_training' grep_key "$@"; }
mlp_key() { PATTERN='^(OK|FAIL): ' grep_key "$@"; }
ok_key() { PATTERN='^(OK|FAIL)' grep_key "$@"; }  # docs/examples programs: "OK: <name>"
bench_key() {  # the benchmark's summary: its last line that is not empty
  local line
  line=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1)
  [[ -n "$line" ]] && echo "$line" || echo "FAIL: no output"
}
fashion_key() {
  local line
  line=$(grep -E '^done: test accuracy' "$1" | tail -n 1)
  [[ -n "$line" ]] && echo "${line#done: }" || echo "FAIL: no accuracy line"
}

echo "gpu_check: $(nvidia-smi -L 2>/dev/null | head -n 1 || echo 'nvidia-smi not found')" >&2

# 1. The GPU tests (what `ctest -L gpu` runs: the executables gpu_build.sh listed).
while read -r exe; do
  case "$exe" in
    "") ;;
    doc_*) step "GPU doc example: $exe" 60 ok_key "$BIN/$exe" ;;
    *) step "GPU tests: $exe" 240 catch2_key "$BIN/$exe" ;;
  esac
done <"$CARRY/gpu_tests.txt"

# 2. The programs on CUDA.
step "all_reduce demo (4 ranks on cuda:0)" 60 demo_key "$BIN/all_reduce" --device cuda
work="$(mktemp -d)"
step "collective_training run --device cuda" 60 training_key \
  "$BIN/collective_training" run "$work/ct" --device cuda
step "collective_training resume --device cuda" 60 training_key \
  "$BIN/collective_training" resume "$work/ct" --device cuda
step "tensor_parallel_mlp --device cuda" 60 mlp_key "$BIN/tensor_parallel_mlp" --device cuda --ranks 4
if [[ -e "$CARRY/data/fashion-mnist/train-images-idx3-ubyte.gz" ]]; then
  step "train_fashion_mnist 1 epoch --device cuda" 150 fashion_key \
    "$BIN/train_fashion_mnist" --epochs 1 --device cuda --data "$CARRY/data/fashion-mnist"
  step "train_fashion_mnist 1 epoch on the CPU (the same run)" 150 fashion_key \
    "$BIN/train_fashion_mnist" --epochs 1 --device cpu --data "$CARRY/data/fashion-mnist"
  # The same accuracy as on the CPU: within half a percentage point (matmul rounding differs).
  gpu_acc=$(grep -oE 'test accuracy [0-9.]+' "$LOGS/$(logname "train_fashion_mnist 1 epoch --device cuda").log" | tail -n 1 | awk '{print $3}')
  cpu_acc=$(grep -oE 'test accuracy [0-9.]+' "$LOGS/$(logname "train_fashion_mnist 1 epoch on the CPU (the same run)").log" | tail -n 1 | awk '{print $3}')
  if [[ -n "$gpu_acc" && -n "$cpu_acc" ]] && awk -v g="$gpu_acc" -v c="$cpu_acc" 'BEGIN {d = g - c; exit !(d <= 0.5 && d >= -0.5)}'; then
    rows+=("| train_fashion_mnist: CUDA accuracy = CPU accuracy +- 0.5 pp | pass | 0.0 | cuda ${gpu_acc}% vs cpu ${cpu_acc}% |")
  else
    failures=$((failures + 1))
    rows+=("| train_fashion_mnist: CUDA accuracy = CPU accuracy +- 0.5 pp | fail | 0.0 | cuda ${gpu_acc:-?}% vs cpu ${cpu_acc:-?}% |")
  fi
fi
rm -rf "$work"

# 3. The GPU benchmarks.
while read -r bench; do
  [[ -n "$bench" ]] && step "bench: $bench" 150 bench_key "$BIN/$bench"
done <"$CARRY/gpu_benches.txt"

write_table
cat "$LOGS/gpu_check.md"
# The device tool brings back at most 8 files from $OUT: the table and one archive of the logs.
[[ -n "${OUT:-}" ]] && tar -C "$CARRY" -czf "$OUT/gpu_check_logs.tgz" logs
exit $((failures > 0))
