# SPDX-License-Identifier: Apache-2.0
# Install the build tree into a fresh prefix (the fixture of the example tests) and check what landed:
# header, versioned shared library and its links, static library, tools, CMake package, pkg-config file.
# Run as: cmake -DBUILD_DIR=<build> -DPREFIX=<dir> -DLIBDIR=<lib> -DBINDIR=<bin> -DINCLUDEDIR=<include>
#               -DCONFIG=<cfg> -DSONAME=<libfa_cl.so.N> -P install_tree.cmake
file(REMOVE_RECURSE "${PREFIX}")
set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${config_args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
set(missing "")
foreach(f "${INCLUDEDIR}/fa_cl.h" "${LIBDIR}/libfa_cl.so" "${LIBDIR}/${SONAME}" "${LIBDIR}/libfa_cl.a"
          "${BINDIR}/fa_cl_info" "${BINDIR}/fa_cl_bench" "${LIBDIR}/cmake/fa_cl/fa_clConfig.cmake"
          "${LIBDIR}/cmake/fa_cl/fa_clConfigVersion.cmake" "${LIBDIR}/pkgconfig/fa_cl.pc")
  if(NOT EXISTS "${PREFIX}/${f}")
    list(APPEND missing "${f}")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "not installed: ${missing}")
endif()
# the development link points at the SONAME link, which points at the real file
file(READ_SYMLINK "${PREFIX}/${LIBDIR}/libfa_cl.so" dev_link)
if(NOT dev_link STREQUAL SONAME)
  message(FATAL_ERROR "libfa_cl.so -> ${dev_link}, expected -> ${SONAME}")
endif()
file(GLOB internal "${PREFIX}/${INCLUDEDIR}/fa_cl_internal.h" "${PREFIX}/${INCLUDEDIR}/planner.h")
if(internal)
  message(FATAL_ERROR "internal headers were installed: ${internal}")
endif()
message("installed into ${PREFIX}: ${LIBDIR}/libfa_cl.so -> ${dev_link}, static library, header, tools, "
        "CMake package, pkg-config file")
