# A tool's command-line contract: run it, then check its exit status and what it printed.
#   cmake -DRC=<n> [-DMATCH=<regex>] [-DNO_MATCH=<regex>] [-DSECONDS=<s>] [-DNEEDS_DEVICE=1]
#         -P tool_exit.cmake -- <tool> [args...]
# RC: the exit status wanted. MATCH must be found in stdout+stderr, NO_MATCH must not (e.g. the
# table header, to prove that no row ran). SECONDS: a limit on the run (default 120).
# NEEDS_DEVICE: with no OpenCL device the tool fails for that reason, not for the one under test:
# print "SKIP: " (the tests' skip marker) instead of passing or failing on it.
set(cmd "")
set(seen_dashes FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(seen_dashes)
    list(APPEND cmd "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(seen_dashes TRUE)
  endif()
endforeach()
if(NOT cmd OR NOT DEFINED RC)
  message(FATAL_ERROR "usage: cmake -DRC=n [-DMATCH=re] [-DNO_MATCH=re] [-DSECONDS=s] -P tool_exit.cmake -- tool args")
endif()
if(NOT SECONDS)
  set(SECONDS 120)
endif()

execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${SECONDS})
set(all "${out}${err}")
string(REPLACE ";" " " shown "${cmd}")
message("$ ${shown}\n${all}(exit status: ${rc})")

if(NEEDS_DEVICE AND all MATCHES "no OpenCL platform found|they list no devices")
  message("SKIP: no OpenCL device")
  return()
endif()
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "exit status ${rc}, wanted ${RC}")
endif()
if(DEFINED MATCH AND NOT all MATCHES "${MATCH}")
  message(FATAL_ERROR "the output lacks /${MATCH}/")
endif()
if(DEFINED NO_MATCH AND all MATCHES "${NO_MATCH}")
  message(FATAL_ERROR "the output has /${NO_MATCH}/")
endif()
