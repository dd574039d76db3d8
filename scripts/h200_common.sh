# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts/h200_*.sh calls on the NVIDIA GPU host (../shared/gpu/README.md), from the
# repo root: BUILD (default build-gpu) and BASE (default build-base, a build of an earlier commit
# with its hash in BASE/commit), OUT for the logs; NVIDIA's OpenCL registered (.gpu/); and
#   bench LABEL [VAR=value ...] -- fa_cl_bench args   one line: the label, the args, the row
#   base  [VAR=value ...] -- fa_cl_bench args         the same through BASE's fa_cl_bench
set -u
BUILD=${BUILD:-build-gpu}
BASE=${BASE:-build-base}
OUT=${OUT:-/tmp/fa_cl_out}
mkdir -p "$OUT"
. .gpu/nvidia-opencl-env.sh
# CTest files and rpaths hold the Debian machine's absolute paths (/work/main/...): make them resolve
here=$(pwd)
[ -e /work/main ] || { mkdir -p /work && ln -s "$here" /work/main; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv | tee "$OUT/gpu.txt"
B="$BUILD/tools/fa_cl_bench"
bench() {
    local label=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    printf '%-34s %s :: %s\n' "$label" "$*" "$(env "${envs[@]}" "$B" "$@" 2>&1 | tail -1 | cut -c1-330)"
}
base() { local b=$B; B="$BASE/tools/fa_cl_bench"; bench "base $(cat "$BASE/commit")" "$@"; B=$b; }
