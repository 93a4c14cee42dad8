# CTest include file (registered per test binary by tests/CMakeLists.txt; runs whenever ctest loads
# the tests): asks the Catch2 binary for its test cases and adds each as exactly one CTest test,
# named "<prefix><case name>", labelled with the layer, and also "slow" when the case is tagged
# [slow] (so `ctest -LE slow` skips them). A case tagged [timing] bounds how soon something happens
# in wall-clock time (an abort waking every rank within 100 ms): it runs alone (RUN_SERIAL), since a
# neighbouring test's ranks on the same two cores would measure the scheduler, not us. It replaces catch_discover_tests, whose CMake list
# handling mangles names with ';' or '[' (Catch2 2.13.10, CMake 3.25: whole groups of cases then
# never ran, and entries gluing several names together matched nothing and passed).
#
# Each test runs `EXE <spec> --warn NoTests`, where <spec> is the case name as a quoted Catch2 test
# spec: inside "..." only '\' (escape), ',' (OR) and '"' are special, so they are escaped; '[', '~',
# ';' and blanks are plain characters there. --warn NoTests makes an entry that matches no case fail
# (and so does Catch2's "No tests ran", printed when a spec is invalid).
# Two things a spec cannot express, which this script turns into a failing entry instead of a wrong
# one: a name that starts or ends with '*' (Catch2 reads it as a wildcard even when escaped) and
# also matches another case, and a name starting with "exclude:" (read as a negation). Names that
# differ only in case match each other (Catch2 compares names case-insensitively): also an error.
#
# Inputs: RUCCL_TEST_EXE (the binary), RUCCL_TEST_PREFIX (e.g. "tensor: "), RUCCL_TEST_LABEL (the
# layer), RUCCL_TEST_WORKING_DIR, RUCCL_TEST_CMAKE (cmake, to run the entries that report errors).

# ctest reads this file with no policies set; include() gives it its own policy scope.
cmake_policy(VERSION 3.25)

# An entry that fails with MESSAGE, so a discovery problem shows up as a failed test.
function(ruccl_discovery_error what message)
  add_test("${RUCCL_TEST_PREFIX}${what}" "${RUCCL_TEST_CMAKE}" -E echo "${message}")
  set_tests_properties("${RUCCL_TEST_PREFIX}${what}" PROPERTIES WILL_FAIL TRUE
                       LABELS "${RUCCL_TEST_LABEL}")
endfunction()

if(NOT EXISTS "${RUCCL_TEST_EXE}")
  # Not built (e.g. a sanitizer run that builds only some binaries; it selects layers by label).
  ruccl_discovery_error("NOT BUILT" "test binary ${RUCCL_TEST_EXE} does not exist: build it")
  return()
endif()

# Sets OUT to the encoded names the binary lists for ARGN (a test spec or nothing: all cases that
# are not hidden). A name is kept in a CMake list encoded ('%' ';' '[' ']' '\' as %25 %3B %5B %5D
# %5C, which list operations leave alone); ruccl_decode gives it back. Sets OK to FALSE (and adds
# an error entry) when the binary does not answer.
function(ruccl_list_names out ok)
  execute_process(COMMAND "${RUCCL_TEST_EXE}" ${ARGN} --list-test-names-only
                  WORKING_DIRECTORY "${RUCCL_TEST_WORKING_DIR}"
                  OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  set(names "")
  set(count 0)
  string(REPLACE "%" "%25" text "${text}")
  string(REPLACE ";" "%3B" text "${text}")
  string(REPLACE "[" "%5B" text "${text}")
  string(REPLACE "]" "%5D" text "${text}")
  string(REPLACE "\\" "%5C" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line MATCHES "^\"(#.*)\"$")  # Catch2 quotes the names that start with '#'
      set(line "${CMAKE_MATCH_1}")
    endif()
    if(NOT line STREQUAL "")
      list(APPEND names "${line}")
      math(EXPR count "${count} + 1")
    endif()
  endforeach()
  # Catch2 exits with the number of cases listed (at most 255); anything else is a failure.
  if(count GREATER 255)
    set(count 255)
  endif()
  if(NOT rc STREQUAL count)
    ruccl_discovery_error("discovery failed"
      "${RUCCL_TEST_EXE} ${ARGN} --list-test-names-only: expected exit code ${count} (the number of names listed), got ${rc}\n${err}")
    set(${ok} FALSE PARENT_SCOPE)
  else()
    set(${ok} TRUE PARENT_SCOPE)
  endif()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

macro(ruccl_decode var)
  string(REPLACE "%3B" ";" ${var} "${${var}}")
  string(REPLACE "%5B" "[" ${var} "${${var}}")
  string(REPLACE "%5D" "]" ${var} "${${var}}")
  string(REPLACE "%5C" "\\" ${var} "${${var}}")
  string(REPLACE "%25" "%" ${var} "${${var}}")
endmacro()

ruccl_list_names(_ruccl_all _ruccl_ok)
if(NOT _ruccl_ok)
  return()
endif()
ruccl_list_names(_ruccl_slow _ruccl_ok "[slow]")
if(NOT _ruccl_ok)
  return()
endif()
ruccl_list_names(_ruccl_timing _ruccl_ok "[timing]")
if(NOT _ruccl_ok)
  return()
endif()
if(_ruccl_all STREQUAL "")
  ruccl_discovery_error("no test cases" "${RUCCL_TEST_EXE} lists no test cases")
  return()
endif()

# Names that Catch2 would not match exactly once with their spec: equal to another but for case
# (Catch2 compares names case-insensitively), starting with "exclude:" (a negation), or starting or
# ending with '*' (a wildcard, even escaped) while also matching another name.
set(_ruccl_lower "")
set(_ruccl_clash "")
foreach(_ruccl_key IN LISTS _ruccl_all)
  string(TOLOWER "${_ruccl_key}" _ruccl_low)
  list(FIND _ruccl_lower "${_ruccl_low}" _ruccl_at)
  if(NOT _ruccl_at EQUAL -1)
    list(APPEND _ruccl_clash "${_ruccl_low}")
  endif()
  list(APPEND _ruccl_lower "${_ruccl_low}")
endforeach()

# Sets OUT to how many listed names the wildcard spec NAME (decoded) matches, as Catch2 does.
function(ruccl_wildcard_matches out name)
  string(TOLOWER "${name}" core)
  string(REGEX REPLACE "^\\*" "" core "${core}")
  string(REGEX REPLACE "\\*$" "" core "${core}")
  string(LENGTH "${core}" core_len)
  set(n 0)
  foreach(other IN LISTS _ruccl_all)
    ruccl_decode(other)
    string(TOLOWER "${other}" other)
    string(FIND "${other}" "${core}" first)
    string(FIND "${other}" "${core}" last REVERSE)
    string(LENGTH "${other}" other_len)
    math(EXPR tail "${other_len} - ${core_len}")
    if(name MATCHES "^\\*.*\\*$")
      set(hit FALSE)
      if(first GREATER -1)
        set(hit TRUE)
      endif()
    elseif(name MATCHES "^\\*")
      set(hit FALSE)
      if(first GREATER -1 AND last EQUAL tail)
        set(hit TRUE)
      endif()
    else()
      set(hit FALSE)
      if(first EQUAL 0)
        set(hit TRUE)
      endif()
    endif()
    if(hit)
      math(EXPR n "${n} + 1")
    endif()
  endforeach()
  set(${out} ${n} PARENT_SCOPE)
endfunction()

foreach(_ruccl_key IN LISTS _ruccl_all)
  set(_ruccl_name "${_ruccl_key}")
  ruccl_decode(_ruccl_name)
  string(TOLOWER "${_ruccl_key}" _ruccl_low)
  set(_ruccl_problem "")
  if(_ruccl_low IN_LIST _ruccl_clash)
    set(_ruccl_problem "another test case has the same name but for case; Catch2 would run both")
  elseif(_ruccl_name MATCHES "^exclude:")
    set(_ruccl_problem "Catch2 reads a name starting with \"exclude:\" as a negation")
  elseif(_ruccl_name MATCHES "^\\*|\\*$")
    ruccl_wildcard_matches(_ruccl_n "${_ruccl_name}")
    if(NOT _ruccl_n EQUAL 1)
      set(_ruccl_problem "Catch2 reads a '*' at either end as a wildcard: it matches ${_ruccl_n} cases")
    endif()
  endif()
  if(NOT _ruccl_problem STREQUAL "")
    ruccl_discovery_error("${_ruccl_name}"
                          "test case \"${_ruccl_name}\" cannot be selected alone: ${_ruccl_problem}; rename it")
    continue()
  endif()
  # The quoted spec: escape '\' first, then ',' and '"'.
  set(_ruccl_spec "${_ruccl_name}")
  string(REPLACE "\\" "\\\\" _ruccl_spec "${_ruccl_spec}")
  string(REPLACE "," "\\," _ruccl_spec "${_ruccl_spec}")
  string(REPLACE "\"" "\\\"" _ruccl_spec "${_ruccl_spec}")
  set(_ruccl_test "${RUCCL_TEST_PREFIX}${_ruccl_name}")
  add_test("${_ruccl_test}" "${RUCCL_TEST_EXE}" "\"${_ruccl_spec}\"" --warn NoTests)
  set(_ruccl_labels "${RUCCL_TEST_LABEL}")
  if(_ruccl_key IN_LIST _ruccl_slow)
    list(APPEND _ruccl_labels slow)
  endif()
  # Catch2 2.13 exits 0 on a spec it cannot parse ("Invalid Filter", then "No tests ran"), even
  # with --warn NoTests: fail on its words too.
  set_tests_properties("${_ruccl_test}" PROPERTIES LABELS "${_ruccl_labels}"
                       WORKING_DIRECTORY "${RUCCL_TEST_WORKING_DIR}"
                       FAIL_REGULAR_EXPRESSION "Invalid Filter: ;No tests ran")
  if(_ruccl_key IN_LIST _ruccl_timing)
    set_tests_properties("${_ruccl_test}" PROPERTIES RUN_SERIAL ON)
  endif()
endforeach()
