# SPDX-License-Identifier: Apache-2.0
# The README's complete program is examples/pkg_config/first_call.c, which the install tests build
# and run: the text in the README must be that file's, byte for byte.
#   cmake -DREADME=<README.md> -DEXAMPLE=<first_call.c> -P readme_example.cmake
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(FIND "${readme}" "<!-- examples/pkg_config/first_call.c" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md has no <!-- examples/pkg_config/first_call.c ... --> marker")
endif()
string(SUBSTRING "${readme}" ${at} -1 rest)
string(FIND "${rest}" "```c\n" open)
math(EXPR begin "${open} + 5")
string(SUBSTRING "${rest}" ${begin} -1 rest)
string(FIND "${rest}" "```\n" close)
string(SUBSTRING "${rest}" 0 ${close} block)
if(NOT block STREQUAL example)
  message(FATAL_ERROR "README.md's program differs from ${EXAMPLE}: copy the file into the README")
endif()
message("README.md's program is ${EXAMPLE}")
