# Installs the libraries, headers and a package config so find_package(ruccl CONFIG) works.
include(CMakePackageConfigHelpers)
install(TARGETS ${RUCCL_TARGETS} EXPORT ruccl-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set(_ruccl_header_dirs tensor collective autodiff optim)
if(RUCCL_WITH_CUDA)
  list(APPEND _ruccl_header_dirs cuda)  # *.h only: the *.cuh kernel headers are internal
endif()
set(_ruccl_header_excludes)
if(NOT RUCCL_WITH_MPI)
  # headers of a part not built
  set(_ruccl_header_excludes PATTERN "collective/mpi" EXCLUDE PATTERN "mpi_group.h" EXCLUDE)
endif()
foreach(layer ${_ruccl_header_dirs})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ruccl
          FILES_MATCHING PATTERN "*.h" ${_ruccl_header_excludes})
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/generated/ruccl/config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ruccl/ruccl)
# The trace tools (docs/observability.md), beside ruccl-run: Python 3 standard library only.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/merge_traces.py DESTINATION ${CMAKE_INSTALL_BINDIR}
        RENAME ruccl-merge-traces)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/plot_trace.py DESTINATION ${CMAKE_INSTALL_BINDIR}
        RENAME ruccl-plot-trace)
install(EXPORT ruccl-targets NAMESPACE ruccl:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ruccl)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ruccl-config.cmake.in
                              ${PROJECT_BINARY_DIR}/ruccl-config.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ruccl)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ruccl-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ruccl-config.cmake ${PROJECT_BINARY_DIR}/ruccl-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ruccl)
