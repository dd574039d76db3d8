#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A tool's command-line contract: run it, then check its exit status and what it printed.
#   tool_exit.sh RC SECONDS NEEDS_DEVICE MATCH NO_MATCH -- <tool> [args...]
# RC: the exit status wanted. MATCH (an extended regex, "-" for none) must be found in
# stdout+stderr, NO_MATCH ("-" for none) must not (e.g. the table header, to prove that no row
# ran). SECONDS: a limit on the run. NEEDS_DEVICE=1: with no OpenCL device the tool fails for that
# reason, not for the one under test: print "SKIP: " (the tests' skip marker) instead. Plain bash,
# so that the suite runs where only the build's binaries are (the GPU host has no cmake).
set -u
[ $# -ge 7 ] && [ "$6" = "--" ] || { echo "usage: tool_exit.sh RC SECONDS NEEDS_DEVICE MATCH NO_MATCH -- tool args" >&2; exit 2; }
want=$1 seconds=$2 needs_device=$3 match=$4 no_match=$5
shift 6
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
timeout "$seconds" "$@" > "$tmp" 2>&1
rc=$?
all=$(cat "$tmp"; echo .) # the output exactly, its last newline included
all=${all%.}
printf '$ %s\n%s\n(exit status: %s)\n' "$*" "$all" "$rc"
if [ "$needs_device" = 1 ] && [[ $all =~ no\ OpenCL\ platform\ found|they\ list\ no\ devices ]]; then
    echo "SKIP: no OpenCL device"
    exit 0
fi
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" = "$want" ] || fail "exit status $rc, wanted $want"
if [ "$match" != - ] && ! [[ $all =~ $match ]]; then fail "the output lacks /$match/"; fi
if [ "$no_match" != - ] && [[ $all =~ $no_match ]]; then fail "the output has /$no_match/"; fi
exit 0
