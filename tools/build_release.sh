#!/usr/bin/env bash
# Configures (CMake preset "release") and builds ruCCL incrementally. Run by tools/run.sh and
# tools/test.sh after the packages are in place.
#   RUCCL_BUILD_DIR  build folder (default: build/release, the preset's)
#   extra arguments  targets to build (default: everything)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RUCCL_BUILD_DIR:-$ROOT/build/release}"
export CCACHE_BASEDIR="$ROOT"  # lets build folders share ccache entries

cd "$ROOT"
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake --preset release -B "$BUILD_DIR"
fi
# Ninja re-runs CMake by itself when a CMakeLists.txt or a globbed folder changed.
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" "${targets[@]}"
