#!/usr/bin/env bash
# Runs every benchmark of bench/ one after another with its peer from bench/peers/ (when the
# peer's Debian packages are installed, see docs/performance.md) and prints the tables, for
# docs/performance.md. Run it on an idle machine: every figure is a wall-clock time.
# Usage: bash tools/run_benchmarks.sh [BUILD_DIR] [NAME...]   (all twelve by default)
#   BUILD_DIR defaults to $RUCCL_BUILD_DIR, else build/release (the release preset's folder; it is
#   configured first if it does not exist yet). NAME: gemm elementwise autodiff collective
#   diff_collective ddp handoff crc32c tcp_collective (the tables, then its
#   --crossover table) conv model_step sim (simulated times, then --validate). $RUCCL_PEERS_DIR
#   names another folder of peer programs (bench/peers_dir.h).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
all=(gemm elementwise autodiff collective diff_collective ddp handoff crc32c tcp_collective conv model_step sim)
build="${RUCCL_BUILD_DIR:-$root/build/release}"
if (($# > 0)) && [[ " ${all[*]} " != *" $1 "* ]]; then  # a first argument that is no NAME
  build="${1:-$build}"
  shift
fi
names=("$@")
((${#names[@]} > 0)) || names=("${all[@]}")
RUCCL_BUILD_DIR="$build" bash "$root/tools/build_release.sh" "${names[@]/%/_bench}"
peers="${RUCCL_PEERS_DIR:-$root/bench/peers}"
echo "# ruCCL benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD)"
echo "# $(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for name in "${names[@]}"; do
  echo
  echo "### ${name}_bench"
  echo
  case "$name" in
    autodiff) RUCCL_PEERS_DIR="$peers" bash "$root/bench/run_autodiff_bench.sh" "$build" ;;
    gemm | collective) "$build/bench/${name}_bench" --peers "$peers" ;;
    ddp) "$build/bench/ddp_bench" --peer "$peers/ddp_mlp_torch.py" ;;
    conv) "$build/bench/conv_bench" --peer "$peers/conv_torch.py" ;;
    model_step) "$build/bench/model_step_bench" --peer "$peers/model_step_torch.py" ;;
    sim) "$build/bench/sim_bench" --validate ;;
    tcp_collective)
      "$build/bench/tcp_collective_bench" --peers "$peers"
      "$build/bench/tcp_collective_bench" --crossover
      ;;
    *) "$build/bench/${name}_bench" ;;
  esac
done
