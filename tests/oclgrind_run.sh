#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run a test binary under Oclgrind's strictest checks (CTest label oclgrind):
#
#   tests/oclgrind_run.sh [--expect-report] [--optimized] -- <test binary> [args...]
#
# Passes when the binary exits 0, ran on the Oclgrind device (its "device:" line says so), and
# Oclgrind reported nothing: no data race, no uninitialised value, no out-of-bounds access, no API
# error. Everything Oclgrind reports goes to a log file (--log), which must stay empty.
#
# Kernels are built with -cl-opt-disable: Oclgrind 21.10's --uninitialized plugin stops with
# "Unsupported instruction: freeze" on LLVM's optimised code. --optimized runs the optimised build
# instead, without --uninitialized (races, out-of-bounds and API checks only).
#
# --expect-report inverts the verdict (the harness's own test): it passes only when Oclgrind reported
# something, whatever the binary's exit code.
#
# No oclgrind installed: exit 77 (CTest: skipped).
set -u
expect_report=0
optimized=0
while [ $# -gt 0 ]; do
    case "$1" in
    --expect-report) expect_report=1; shift ;;
    --optimized) optimized=1; shift ;;
    --) shift; break ;;
    *) break ;;
    esac
done
if ! command -v oclgrind >/dev/null 2>&1; then
    echo "oclgrind is not installed (apt-get install oclgrind): skipped"
    exit 77
fi
log=$(mktemp /tmp/fa_cl_oclgrind.XXXXXX)
out=$(mktemp /tmp/fa_cl_oclgrind_out.XXXXXX)
trap 'rm -f "$log" "$out"' EXIT
flags=(--data-races --check-api --num-threads 1 --log "$log")
if [ "$optimized" = 0 ]; then
    flags+=(--uninitialized --build-options -cl-opt-disable)
fi
echo "oclgrind ${flags[*]} $*"
oclgrind "${flags[@]}" "$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$expect_report" = 1 ]; then
    if [ -s "$log" ]; then
        echo "oclgrind reported (as expected), e.g.:"
        grep -v '^[[:space:]]*$' "$log" | head -8
        exit 0
    fi
    echo "FAIL: oclgrind reported nothing, but this run must be reported"
    exit 1
fi
fail=0
if [ -s "$log" ]; then
    echo "FAIL: oclgrind reported ($(wc -l <"$log") lines; first 60):"
    head -60 "$log"
    fail=1
fi
if [ "$rc" != 0 ]; then
    echo "FAIL: the test exited with $rc under oclgrind"
    fail=1
fi
if ! grep -q "^device: Oclgrind" "$out"; then
    echo "FAIL: the test did not run on the Oclgrind device"
    fail=1
fi
[ "$fail" = 0 ] && echo "oclgrind: no reports"
exit "$fail"
