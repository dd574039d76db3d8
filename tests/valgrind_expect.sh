#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The valgrind tests' control (label leaks): runs valgrind, with the options and suppressions of the
# other valgrind tests, on `test_leaks planted`, which leaks a context of the library's and reads one
# it released. Passes only if valgrind fails the run and reports both: an option lost or a
# suppression wide enough to hide the library's own errors fails this test instead of going unseen.
#
#   valgrind_expect.sh VALGRIND [OPTIONS...] TEST_LEAKS planted
#
# Exit: 0 both reported; 1 not; 77 no OpenCL device (the program skipped, valgrind saw nothing).
set -uo pipefail

log=$(mktemp "${TMPDIR:-/tmp}/fa_cl_valgrind_expect.XXXXXX")
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?

# valgrind's reports are blocks of "==PID== " lines ended by an empty one. Both blocks must show the
# library's allocation (fa_cl_context_create); the release ends in a tail call to free, which leaves
# no frame of fa_cl_context_release.
found=$(awk '
    /^==[0-9]+== *$/ { check(); next }
    /^==[0-9]+== / { block = block "\n" $0 }
    function check() {
        if (block ~ /Invalid read of size/ && block ~ /free.d/ && block ~ /fa_cl_context_create/) read_freed = 1
        if (block ~ /definitely lost in loss record/ && block ~ /fa_cl_context_create/) leaked = 1
        block = ""
    }
    END { check(); printf "%s %s\n", read_freed ? "read" : "-", leaked ? "leak" : "-" }' "$log")

if [ "$found" = "read leak" ] && [ "$rc" != 0 ]; then
    echo "valgrind_expect.sh: valgrind reported the planted read of freed memory and the planted leak (exit $rc)"
    exit 0
fi
if [ "$rc" = 77 ] && [ "$found" = "- -" ]; then
    cat "$log"
    exit 77
fi
cat "$log"
echo "valgrind_expect.sh: FAILED: valgrind exited $rc and found '$found' (want an error exit and 'read leak'):"
echo "the valgrind tests' options or suppressions would hide the library's own errors"
exit 1
