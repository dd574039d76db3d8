# SPDX-License-Identifier: Apache-2.0
# Build one of examples/ against the installed tree (install_tree.cmake's prefix) the way a consumer
# would, and run what it built. An example exits 77 when there is no OpenCL device: printed as SKIP.
# Run as: cmake -DKIND=find_package|pkg_config -DSRC=<examples/x> -DWORK=<dir> -DPREFIX=<prefix>
#               -DLIBDIR=<lib> -P run_example.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  string(JOIN " " line ${ARGN})
  message("$ ${line}\n${out}")
  if(rc EQUAL 77)
    message("SKIP: ${what}: no OpenCL device")
  elseif(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc})")
  endif()
endfunction()

if(KIND STREQUAL "find_package")
  # only the install prefix: the build tree must not be what find_package finds
  run("configure" "${CMAKE_COMMAND}" -S "${SRC}" -B "${WORK}" "-DCMAKE_PREFIX_PATH=${PREFIX}"
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release)
  file(STRINGS "${WORK}/CMakeCache.txt" found REGEX "^fa_cl_DIR:")
  string(FIND "${found}" "${PREFIX}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "find_package(fa_cl) did not find the installed package: ${found}")
  endif()
  run("build" "${CMAKE_COMMAND}" --build "${WORK}")
  foreach(exe app_context app_context_static)
    if(NOT EXISTS "${WORK}/${exe}")
      message(FATAL_ERROR "${exe} was not built")
    endif()
    run("${exe}" "${WORK}/${exe}")
  endforeach()
elseif(KIND STREQUAL "pkg_config")
  set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig")
  run("pkg-config" pkg-config --cflags --libs fa_cl)
  run("make" make -f "${SRC}/Makefile" "EXAMPLE_DIR=${SRC}")
  set(ENV{LD_LIBRARY_PATH} "${PREFIX}/${LIBDIR}") # a non-system prefix, as the Makefile says
  run("first_call" "${WORK}/first_call") # the README's example
  run("default_context" "${WORK}/default_context")
  run("decode_paged" "${WORK}/decode_paged") # docs/usage.md's serving example
  run("shared_prefix" "${WORK}/shared_prefix") # partial results and their merge
else()
  message(FATAL_ERROR "KIND must be find_package or pkg_config")
endif()
