#!/usr/bin/env bash
# The README's second command: installs what is missing, builds everything (incrementally) and runs
# the whole test suite with CTest. Arguments are passed to ctest (e.g. -L tensor, -R matmul).
# Tests labelled gpu run only where a GPU answers nvidia-smi; elsewhere they are excluded (they
# would fail loudly by design, see tests/CMakeLists.txt).
set -euo pipefail

TEST_TIMEOUT="${RUCCL_TEST_TIMEOUT:-300}"  # seconds per test (each Catch2 test case is one test)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/tools/install_packages.sh"
BUILD_DIR="${RUCCL_BUILD_DIR:-$ROOT/build/release}"
bash "$ROOT/tools/build_release.sh"

filter=()
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  filter=(-LE gpu)
  echo "test.sh: no GPU answers nvidia-smi: skipping tests labelled gpu"
fi
cd "$BUILD_DIR"
ctest --output-on-failure -j2 --timeout "$TEST_TIMEOUT" "${filter[@]}" "$@"
