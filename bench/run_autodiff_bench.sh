#!/bin/bash
# Runs bench/autodiff_bench beside PyTorch (../shared/peers/mlp_train_torch.py, which sets the fair
# OpenBLAS core type itself). Usage: bench/run_autodiff_bench.sh [BUILD_DIR] [--steps N]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
bin="$build/bench/autodiff_bench"
[ -x "$bin" ] || bin="$build/autodiff_bench"
[ -x "$bin" ] || { echo "autodiff_bench not found in $build (build target autodiff_bench)" >&2; exit 1; }
peer="$root/../shared/peers/mlp_train_torch.py"
if [ -f "$peer" ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  exec "$bin" --peer "$peer" "$@"
fi
echo "# PyTorch peer not available; running ours only" >&2
exec "$bin" "$@"
