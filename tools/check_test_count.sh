#!/usr/bin/env bash
# Checks that a CTest run ran every Catch2 test case exactly once:
#   tools/check_test_count.sh [--catch-spec SPEC] BUILD_DIR JUNIT_XML [LAYER...]
# JUNIT_XML is what `ctest --output-junit FILE --test-output-size-passed 1000000
# --test-output-truncation head` wrote in BUILD_DIR (the flags keep the end of every test's output,
# where Catch2 prints how many cases it ran). For each LAYER (default: every ruccl_<layer>_tests
# binary in BUILD_DIR/tests but cuda's), it compares the cases the binary lists
# (`--list-test-names-only`, restricted by SPEC when given, e.g. '~[slow]' for a run with -LE slow)
# with the CTest tests "<layer>: ..." that ran, and requires each of those to have run exactly one
# case ("... in 1 test case)"). Tests of other prefixes (install, example, gpu) are not counted.
# Exit 0 when all agree; 1, with a table and the offending tests, otherwise.
set -euo pipefail

spec=()
if [[ ${1:-} == --catch-spec ]]; then
  spec=("$2")
  shift 2
fi
if (($# < 2)); then
  echo "usage: $0 [--catch-spec SPEC] BUILD_DIR JUNIT_XML [LAYER...]" >&2
  exit 2
fi
build_dir=$1 junit=$2
shift 2
layers=("$@")
if ((${#layers[@]} == 0)); then
  for bin in "$build_dir"/tests/ruccl_*_tests; do
    layer=${bin##*/ruccl_}
    layer=${layer%_tests}
    [[ -x $bin && $layer != cuda ]] && layers+=("$layer")
  done
fi
if [[ ! -f $junit ]]; then
  echo "check_test_count: expected the JUnit file $junit, got none" >&2
  exit 1
fi

# One line per CTest test in the JUnit file: "<cases Catch2 ran or -1 if not said><TAB><name>".
# Names are XML-escaped; the layer prefixes contain nothing to escape.
runs=$(awk '
  /<testcase name="/ {
    name = $0; sub(/.*<testcase name="/, "", name); sub(/" classname=".*/, "", name)
    cases = -1; open = 1
  }
  open {
    line = $0; sub(/.*<system-out>/, "", line)
    if (match(line, /All tests passed \([0-9]+ assertions? in [0-9]+ test cases?\)/)) {
      s = substr(line, RSTART, RLENGTH); sub(/.* in /, "", s); cases = s + 0
    } else if (match(line, /^test cases: *[0-9]+/)) {
      s = substr(line, RSTART, RLENGTH); sub(/^test cases: */, "", s); cases = s + 0
    } else if (line ~ /^No tests ran/) {
      cases = 0
    }
  }
  open && /<\/testcase>/ { printf "%d\t%s\n", cases, name; open = 0 }
' "$junit")

status=0
printf '%-12s %8s %8s\n' layer listed ran
for layer in "${layers[@]}"; do
  bin="$build_dir/tests/ruccl_${layer}_tests"
  # Catch2 exits with the number of cases listed: not an error.
  listed=$("$bin" "${spec[@]}" --list-test-names-only | grep -c . || true)
  mine=$(grep -F -- $'\t'"$layer: " <<<"$runs" || true)
  ran=$(grep -c . <<<"$mine" || true)
  printf '%-12s %8d %8d\n' "$layer" "$listed" "$ran"
  if ((listed != ran)); then
    echo "check_test_count: $layer: the binary lists $listed cases, CTest ran $ran tests" >&2
    status=1
  fi
  not_one=$(awk -F'\t' '$1 != 1' <<<"$mine" | grep . || true)
  if [[ -n $not_one ]]; then
    echo "check_test_count: $layer: CTest tests that did not run exactly one case" \
         "(cases ran, -1: no Catch2 summary):" >&2
    sed 's/^/  /' <<<"$not_one" >&2
    status=1
  fi
done
exit $status
