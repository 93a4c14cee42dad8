# CTest driver for the install test (cmake -P): installs the ruCCL build RUCCL_BUILD_DIR into
# RUCCL_WORK_DIR/prefix, checks the install tree, then configures, builds and runs the consumer
# project RUCCL_CONSUMER_DIR against it with find_package(ruccl CONFIG).
foreach(var RUCCL_BUILD_DIR RUCCL_CONSUMER_DIR RUCCL_WORK_DIR RUCCL_GENERATOR RUCCL_LIBDIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: expected -D${var}=..., got nothing")
  endif()
endforeach()
set(prefix ${RUCCL_WORK_DIR}/prefix)
set(consumer_build ${RUCCL_WORK_DIR}/consumer)
file(REMOVE_RECURSE ${RUCCL_WORK_DIR})

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message(STATUS "${what}:\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (exit ${rc})")
  endif()
endfunction()

run_step("install into ${prefix}" ${CMAKE_COMMAND} --install ${RUCCL_BUILD_DIR} --prefix ${prefix})

set(libdir ${RUCCL_LIBDIR})  # CMAKE_INSTALL_LIBDIR of the ruCCL build (lib or lib64)
foreach(path include/ruccl/ruccl/config.h include/ruccl/tensor/tensor.h
             include/ruccl/tensor/core/tensor.h
             ${libdir}/cmake/ruccl/ruccl-config.cmake
             ${libdir}/cmake/ruccl/ruccl-config-version.cmake
             ${libdir}/cmake/ruccl/ruccl-targets.cmake bin/ruccl-run bin/ruccl-merge-traces
             bin/ruccl-plot-trace)
  if(NOT EXISTS ${prefix}/${path})
    message(FATAL_ERROR "install test: expected ${prefix}/${path} in the install tree, got none")
  endif()
endforeach()

# The installed trace tools run from the install tree (no file of the source tree needed).
find_program(python3 python3)
if(python3)
  run_step("ruccl-merge-traces --help" ${python3} ${prefix}/bin/ruccl-merge-traces --help)
  run_step("ruccl-plot-trace --help" ${python3} ${prefix}/bin/ruccl-plot-trace --help)
endif()

set(configure_args -S ${RUCCL_CONSUMER_DIR} -B ${consumer_build} -G ${RUCCL_GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
if(RUCCL_CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${RUCCL_CXX_COMPILER})
endif()
find_program(ccache ccache)
if(ccache)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${ccache})
endif()
run_step("configure the consumer" ${CMAKE_COMMAND} ${configure_args})
run_step("build the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
run_step("run the consumer" ${consumer_build}/ruccl_consumer)
