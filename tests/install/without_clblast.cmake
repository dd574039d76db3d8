# SPDX-License-Identifier: Apache-2.0
# The FA_CL_WITH_CLBLAST=OFF configuration: configure and build a second tree without CLBlast, check
# that the shared library does not link it, and run that tree's reference test, which expects
# fa_cl_reference_forward to refuse with FA_CL_ERROR_UNSUPPORTED while the fused path works.
# Run as: cmake -DSOURCE_DIR=<src> -DWORK=<dir> -DGENERATOR=<gen> -DC_COMPILER=<cc> -P without_clblast.cmake
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(JOIN " " line ${ARGN})
  message("$ ${line}\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc})")
  endif()
endfunction()

run("configure" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK}" -G "${GENERATOR}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
    -DFA_CL_WITH_CLBLAST=OFF -DFA_CL_BUILD_TOOLS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
run("build" "${CMAKE_COMMAND}" --build "${WORK}" --target fa_cl test_reference)
find_program(READELF readelf)
if(READELF)
  file(GLOB lib "${WORK}/libfa_cl.so")
  execute_process(COMMAND "${READELF}" -d ${lib} OUTPUT_VARIABLE dyn)
  if(dyn MATCHES "clblast")
    message(FATAL_ERROR "libfa_cl.so built with FA_CL_WITH_CLBLAST=OFF still links CLBlast:\n${dyn}")
  endif()
  message("libfa_cl.so without CLBlast: no CLBlast among its NEEDED libraries")
endif()
run("ctest" "${CMAKE_CTEST_COMMAND}" --test-dir "${WORK}" -R "^reference_unsupported$" --output-on-failure
    --no-tests=error)
