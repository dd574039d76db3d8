#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A rank killed mid-call (tests/test_cp.c "die"): under a 60 s watchdog, every other rank must
# report FA_CL_ERROR_COMMUNICATION ("survivor rank R: FA_CL_ERROR_COMMUNICATION after N ms").
#   tests/cp_die.sh <ranks> <mpirun and its options...> <test_cp>
set -u
np=$1
shift
exe=${!#}
launcher=("${@:1:$#-1}")
# --enable-recovery: Open MPI keeps the job running when a process dies (the survivors' own error
# paths are what is tested); without it mpirun would kill them first
out=$(timeout --kill-after=5 60 "${launcher[@]}" --enable-recovery -np "$np" "$exe" ring die 2>&1)
rc=$?
echo "$out"
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "FAIL: the watchdog ended the run (a hang)"
    exit 1
fi
want=$((np - 1))
got=$(echo "$out" | grep -c "^survivor rank [0-9]*: FA_CL_ERROR_COMMUNICATION")
if [ "$got" -ne "$want" ]; then
    echo "FAIL: $got of $want surviving ranks reported FA_CL_ERROR_COMMUNICATION"
    exit 1
fi
echo "PASS: $got surviving ranks returned FA_CL_ERROR_COMMUNICATION (mpirun exit $rc)"
