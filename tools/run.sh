#!/usr/bin/env bash
# The README's first command: installs what is missing, builds (incrementally) and runs the main
# job. Arguments are passed to the program.  Usage: bash tools/run.sh [args...]
set -euo pipefail

# The main job: a program from examples/ (the data-parallel Fashion-MNIST training demo).
MAIN_TARGET="${RUCCL_MAIN_TARGET:-train_fashion_mnist}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/tools/install_packages.sh"
BUILD_DIR="${RUCCL_BUILD_DIR:-$ROOT/build/release}"
bash "$ROOT/tools/build_release.sh" "$MAIN_TARGET"
exec "$BUILD_DIR/examples/$MAIN_TARGET" "$@"
