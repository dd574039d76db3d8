# SPDX-License-Identifier: Apache-2.0
# The README's complete programs are examples/pkg_config/first_call.c and
# examples/python/first_call.py, which the tests build and run: the text in the README after the
# marker naming the file must be that file's, byte for byte.
#   cmake -DREADME=<README.md> -DEXAMPLE=<file> [-DFENCE=python] -P readme_example.cmake
if(NOT FENCE)
  set(FENCE c)
endif()
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(REGEX REPLACE ".*/(examples/[^/]+/[^/]+)$" "\\1" name "${EXAMPLE}")
string(FIND "${readme}" "<!-- ${name}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md has no <!-- ${name} ... --> marker")
endif()
string(SUBSTRING "${readme}" ${at} -1 rest)
string(FIND "${rest}" "```${FENCE}\n" open)
string(LENGTH "```${FENCE}\n" fence_len)
math(EXPR begin "${open} + ${fence_len}")
string(SUBSTRING "${rest}" ${begin} -1 rest)
string(FIND "${rest}" "```\n" close)
string(SUBSTRING "${rest}" 0 ${close} block)
if(NOT block STREQUAL example)
  message(FATAL_ERROR "README.md's program differs from ${EXAMPLE}: copy the file into the README")
endif()
message("README.md's program is ${EXAMPLE}")
