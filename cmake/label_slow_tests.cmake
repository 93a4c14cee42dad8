# CTest include file (registered per test binary by tests/CMakeLists.txt; runs whenever ctest loads
# the tests): adds the label "slow" to every test case the binary tags [slow], so `ctest -LE slow`
# skips them. Catch2's discovery gives each case only its layer label.
# Inputs: RUCCL_TEST_EXE (the binary), RUCCL_TEST_PREFIX (catch_discover_tests' TEST_PREFIX),
# RUCCL_TEST_LABELS (the labels to set, the layer's plus slow).
if(NOT EXISTS "${RUCCL_TEST_EXE}")
  return()  # not built (e.g. a sanitizer run that builds only some binaries)
endif()
execute_process(COMMAND "${RUCCL_TEST_EXE}" "[slow]" --list-test-names-only
                OUTPUT_VARIABLE _ruccl_slow_out RESULT_VARIABLE _ruccl_slow_rc)
if(_ruccl_slow_rc LESS 0)
  return()
endif()
# The prefix reaches Catch2's discovery script through a command line that drops trailing blanks.
string(STRIP "${RUCCL_TEST_PREFIX}" _ruccl_prefix)
# Walk the output line by line without CMake lists: a '[' in a test name would stop a list split.
set(_ruccl_rest "${_ruccl_slow_out}")
while(NOT _ruccl_rest STREQUAL "")
  string(FIND "${_ruccl_rest}" "\n" _ruccl_nl)
  if(_ruccl_nl EQUAL -1)
    set(_ruccl_name "${_ruccl_rest}")
    set(_ruccl_rest "")
  else()
    string(SUBSTRING "${_ruccl_rest}" 0 ${_ruccl_nl} _ruccl_name)
    math(EXPR _ruccl_nl "${_ruccl_nl} + 1")
    string(SUBSTRING "${_ruccl_rest}" ${_ruccl_nl} -1 _ruccl_rest)
  endif()
  string(STRIP "${_ruccl_name}" _ruccl_name)
  if(NOT _ruccl_name STREQUAL "")
    set_tests_properties("${_ruccl_prefix}${_ruccl_name}" PROPERTIES LABELS "${RUCCL_TEST_LABELS}")
  endif()
endwhile()
