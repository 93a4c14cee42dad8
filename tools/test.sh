#!/usr/bin/env bash
# The README's second command: installs what is missing, builds everything (incrementally) and runs
# the whole test suite with CTest. Arguments are passed to ctest (e.g. -L tensor, -R matmul).
# Tests labelled gpu run only where a GPU answers nvidia-smi; elsewhere they are excluded (they
# would fail loudly by design, see tests/CMakeLists.txt). Run without arguments, it then checks that
# CTest ran every Catch2 test case of every binary exactly once (tools/check_test_count.sh).
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
# The JUnit file keeps the end of every test's output, where Catch2 says how many cases it ran.
junit="$BUILD_DIR/Testing/ctest-junit.xml"
ctest --output-on-failure -j2 --timeout "$TEST_TIMEOUT" "${filter[@]}" --output-junit "$junit" \
      --test-output-size-passed 1000000 --test-output-truncation head "$@"
# The whole suite: every case each binary lists ran, each as exactly one CTest test.
if (($# == 0)); then
  bash "$ROOT/tools/check_test_count.sh" "$BUILD_DIR" "$junit"
else
  echo "test.sh: a subset was asked for ($*): not checking that every test case ran"
fi
