#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cold vs warm plan creation with the on-disk program cache: for each shape, fa_cl_bench --plan-timing
# runs twice in two processes on a fresh cache directory; the first compiles and stores (cold), the
# second loads the stored binary (warm). For comparison, a third process compiles with the cache off
# (what every process paid before the cache; the cold run adds storing the binary to that).
# ROUNDS rounds per shape; medians are printed.
#   scripts/plan_cache_timing.sh                 d 64 and 128, f32 and f16, on the default device
#   ROUNDS=5 scripts/plan_cache_timing.sh        more rounds
# The drivers' own caches would hide the compile in the cold run: PoCL gets a fresh POCL_CACHE_DIR
# per round, and NVIDIA's JIT cache is switched off (CUDA_CACHE_DISABLE=1) for both runs, so the warm
# number is what fa_cl's cache alone gives.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BENCH=${FA_CL_BUILD_DIR:-build}/tools/fa_cl_bench
ROUNDS=${ROUNDS:-3}
# the shape of the GPU rows of docs/performance.md (fa_cl_bench's default is smaller)
SHAPE=(-b 8 -h 16 -q 4096)
[ -x "$BENCH" ] || { echo "no $BENCH: build first (bash scripts/setup.sh build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUDA_CACHE_DISABLE=1

plan_ms() { # the bench's "plan creation: X ms (source; ...)" line -> "X source"
    sed -n 's/.*plan creation: *\([0-9.]*\) ms (\([a-z -]*\);.*/\1 \2/p'
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

FA_CL_CACHE_DIR=off "$BENCH" --plan-timing "${SHAPE[@]}" -d 64 --dtype f32 | sed -n "1s/--plan-timing //p"
echo "# $ROUNDS rounds per shape; each round: a fresh FA_CL_CACHE_DIR and POCL_CACHE_DIR, then two processes"
printf '%-6s %-5s %14s %12s %12s %9s\n' "d" "dtype" "cache off ms" "cold ms" "warm ms" "cold/warm"
for d in 64 128; do
    for dtype in f32 f16; do
        : >"$work/off"
        : >"$work/cold"
        : >"$work/warm"
        for r in $(seq "$ROUNDS"); do
            read -r off src0 < <(FA_CL_CACHE_DIR=off POCL_CACHE_DIR="$work/pocl-off.$d.$dtype.$r" \
                "$BENCH" --plan-timing "${SHAPE[@]}" -d "$d" --dtype "$dtype" | plan_ms)
            echo "$off" >>"$work/off"
            export FA_CL_CACHE_DIR="$work/fa_cl.$d.$dtype.$r" POCL_CACHE_DIR="$work/pocl.$d.$dtype.$r"
            read -r cold src1 < <("$BENCH" --plan-timing "${SHAPE[@]}" -d "$d" --dtype "$dtype" | plan_ms)
            read -r warm src2 < <("$BENCH" --plan-timing "${SHAPE[@]}" -d "$d" --dtype "$dtype" | plan_ms)
            if [ "$src1" != compiled ] || [ "$src2" != "disk cache" ]; then
                echo "round $r, d=$d $dtype: expected compiled then disk cache, got '$src1' then '$src2'" >&2
                exit 1
            fi
            echo "$cold" >>"$work/cold"
            echo "$warm" >>"$work/warm"
        done
        o=$(median <"$work/off")
        c=$(median <"$work/cold")
        w=$(median <"$work/warm")
        printf '%-6s %-5s %14.1f %12.1f %12.2f %8.0fx\n' "$d" "$dtype" "$o" "$c" "$w" \
            "$(awk -v c="$c" -v w="$w" 'BEGIN {print c / w}')"
    done
done
