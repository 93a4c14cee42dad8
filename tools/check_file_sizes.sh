#!/usr/bin/env bash
# Fails when a tracked source file is over 1,000 lines, or a file of collective/ over 500; warns
# over 800 (the project's style: aim under 400, look hard at anything over 800, never over 1,000).
# Usage: tools/check_file_sizes.sh [repo-root]   (default: the repository holding this script)
set -euo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
cd "$root"
readonly kFail=1000 kWarn=800 kCollective=500  # collective/: the house issue's bar
status=0
warned=0
checked=0
while IFS= read -r -d '' file; do
  [[ -f "$file" ]] || continue  # deleted in the work tree but still in the index
  checked=$((checked + 1))
  lines=$(wc -l <"$file")
  if [[ $file == collective/* ]] && ((lines > kCollective)); then
    echo "error: $file has $lines lines (collective/'s limit $kCollective): split it" >&2
    status=1
  elif ((lines > kFail)); then
    echo "error: $file has $lines lines (limit $kFail): split it" >&2
    status=1
  elif ((lines > kWarn)); then
    echo "warning: $file has $lines lines (over $kWarn: look hard at it)" >&2
    warned=$((warned + 1))
  fi
done < <(git ls-files -z -- '*.h' '*.hpp' '*.c' '*.cc' '*.cpp' '*.cu' '*.cuh' '*.py' '*.sh' \
           '*.cmake' '*.in' 'CMakeLists.txt' '*/CMakeLists.txt' '.ci/run')
echo "check_file_sizes: $checked files checked, $warned over $kWarn lines, limit $kFail" \
     "($kCollective in collective/):" \
     "$([[ $status == 0 ]] && echo ok || echo FAILED)"
exit $status
