#!/usr/bin/env bash
# Runs bench/autodiff_bench beside its PyTorch peer (bench/peers/mlp_train_torch.py, which sets the
# fair OpenBLAS core type itself), or alone when Debian's python3-torch is not installed.
# Usage: bash bench/run_autodiff_bench.sh [BUILD_DIR] [--steps N]
#   BUILD_DIR defaults to $RUCCL_BUILD_DIR, else build/release (the release preset's folder);
#   $RUCCL_PEERS_DIR names another folder holding mlp_train_torch.py.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${RUCCL_BUILD_DIR:-$root/build/release}}"
shift || true
bin="$build/bench/autodiff_bench"
[[ -x "$bin" ]] || { echo "autodiff_bench not found in $build/bench (build target autodiff_bench)" >&2; exit 1; }
peer="${RUCCL_PEERS_DIR:-$root/bench/peers}/mlp_train_torch.py"
if [[ -f "$peer" ]] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  exec "$bin" --peer "$peer" "$@"
fi
echo "# PyTorch peer not available (python3-torch, $peer); running ours only" >&2
exec "$bin" "$@"
