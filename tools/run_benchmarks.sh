#!/usr/bin/env bash
# Runs every benchmark of bench/ one after another with its peer (when installed) and prints the
# tables, for docs/performance.md. Run it on an idle machine: every figure is a wall-clock time.
# Usage: bash tools/run_benchmarks.sh [BUILD_DIR] [NAME...]   (default build/release, all six)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build/release}"
shift || true
names=("$@")
((${#names[@]} > 0)) || names=(gemm elementwise autodiff collective diff_collective ddp)
cmake --build "$build" --target "${names[@]/%/_bench}"
peers="$root/../shared/peers"
echo "# ruCCL benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD)"
echo "# $(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for name in "${names[@]}"; do
  echo
  echo "### ${name}_bench"
  echo
  case "$name" in
    autodiff) bash "$root/bench/run_autodiff_bench.sh" "$build" ;;
    gemm | collective) "$build/bench/${name}_bench" --peers "$peers" ;;
    ddp) "$build/bench/ddp_bench" --peer "$peers/ddp_mlp_torch.py" ;;
    *) "$build/bench/${name}_bench" ;;
  esac
done
