#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 1 and 2's H200 command lists, kept because docs/performance.md's older rows cite them;
# scripts/h200_check.sh is the current one. Some modes use tile names and variants of that time.
# Runs on the NVIDIA GPU host (see ../shared/gpu/README.md) from the repo root, with the checkout's
# .gpu/ folder and a build made on the Debian machine (BUILD, default build-gpu). Writes logs under $OUT.
#   scripts/h200_session.sh explore   correctness smoke, baseline rows, tile sweep, ptxas reports, PyTorch anchors
#   scripts/h200_session.sh explore2  the tiled kernel: plans, sweeps, local-memory probe
#   scripts/h200_session.sh mma       the tensor-core variant: build report, checks vs the reference, speed; CTest
#   scripts/h200_session.sh tests     the CTest suite on the GPU
#   scripts/h200_session.sh final     the CTest suite, the rows docs/performance.md quotes and PyTorch's kernels
#   scripts/h200_session.sh validate  the merged code: CTest, the quoted rows with --check, PyTorch, plan cache
#   scripts/h200_session.sh cache     cold vs warm plan creation (program cache) for docs/performance.md
set -u
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-/tmp/fa_cl_out}
mkdir -p "$OUT"
. .gpu/nvidia-opencl-env.sh
BENCH="$BUILD/tools/fa_cl_bench"
anchor() { python3 .gpu/torch_sdpa_anchor.py "$@" 2>&1 | grep -v Warning; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv | tee "$OUT/gpu.txt"

case "${1:-explore}" in
explore)
    [ -x "$BUILD/tools/fa_cl_info" ] && "$BUILD/tools/fa_cl_info" > "$OUT/info.txt" 2>&1
    for args in "100 130 64 0" "130 100 40 1" "1000 1000 128 1" "17 1 1 1" "64 700 256 0"; do
        echo "smoke $args: $($BUILD/smoke $args | tr '\n' ' ')"
    done 2>&1 | tee "$OUT/smoke.txt"
    {
    # the log names registers and spills per variant
    FA_CL_DEBUG_BUILD_LOG=1 FA_CL_BUILD_OPTIONS=-cl-nv-verbose $BENCH -b 1 -h 1 -q 256 -d 128 --no-reference --reps 10 2>&1 | grep -iE "registers|spill|stack|smem|warn" | head -20
    FA_CL_DEBUG_BUILD_LOG=1 FA_CL_BUILD_OPTIONS=-cl-nv-verbose $BENCH -b 1 -h 1 -q 256 -d 64 --no-reference --reps 10 2>&1 | grep -iE "registers|spill|stack|smem|warn" | head -20
    } > "$OUT/ptxas.txt" 2>&1
    cat "$OUT/ptxas.txt"
    {
    for row in "-d 128 --dtype f32" "-d 64 --dtype f32" "-d 128 --dtype f16" "-d 64 --dtype f16" "-d 128 --dtype f32 --causal" "-d 128 --dtype bf16"; do
        $BENCH -b 8 -h 16 -q 4096 $row --no-reference | tail -1
    done
    for t in 64x32 32x32 64x16 48x48 32x64 80x16 64x32x2 32x32x2; do
        echo "FA_CL_TILE=$t d=128: $(FA_CL_TILE=$t $BENCH -b 8 -h 16 -q 4096 -d 128 --no-reference | tail -1)"
    done
    for t in 128x32x2 128x32 64x64 128x64 96x96 64x32 160x32x2 128x16x2; do
        echo "FA_CL_TILE=$t d=64: $(FA_CL_TILE=$t $BENCH -b 8 -h 16 -q 4096 -d 64 --no-reference | tail -1)"
    done
    } 2>&1 | tee "$OUT/bench.txt"
    {
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f32
    anchor -b 8 -H 16 -n 4096 -d 64 --dtype f32
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f16
    } 2>&1 | tee "$OUT/anchor.txt"
    ;;
explore2)
    "$BUILD/scripts/fa_cl_probe_local" 2>&1 | tee "$OUT/probe_local.txt"
    for args in "100 130 64 0" "130 100 40 1" "1000 1000 128 1" "17 1 1 1" "64 700 256 0" "333 4000 128 1"; do
        echo "smoke $args: $($BUILD/smoke $args | tr '\n' ' ')"
    done 2>&1 | tee "$OUT/smoke.txt"
    {
    for d in 128 64; do
        FA_CL_DEBUG_BUILD_LOG=1 FA_CL_BUILD_OPTIONS=-cl-nv-verbose $BENCH -b 1 -h 1 -q 256 -d $d --no-reference 2>&1 | grep -iE "registers|spill|stack" | head -6
    done
    } > "$OUT/ptxas.txt" 2>&1
    cat "$OUT/ptxas.txt"
    row() { echo "$1 :: $(env $1 $BENCH -b 8 -h 16 -q 4096 $2 --no-reference 2>&1 | tail -1 | cut -c1-200)"; }
    {
    for r in "-d 128 --dtype f32" "-d 64 --dtype f32" "-d 128 --dtype f16" "-d 64 --dtype f16" "-d 128 --dtype f32 --causal" "-d 64 --dtype f32 --causal" "-d 128 --dtype bf16"; do
        row "X=default" "$r"
    done
    for t in 16x32 32x16 32x32x2 32x32x8 16x32x8 32x16x8; do row "FA_CL_TILE=$t" "-d 128"; done
    for t in 64x32 128x32 64x64 128x64 64x32x8 128x32x8 64x64x8 128x16; do row "FA_CL_LOCAL_MEM_OVERRIDE=200000 FA_CL_TILE=$t" "-d 128"; done
    for t in 64x32 64x32x8 32x32 64x16 32x32x8; do row "FA_CL_TILE=$t" "-d 64"; done
    for t in 128x32 128x64 64x64 128x32x8 128x64x8; do row "FA_CL_LOCAL_MEM_OVERRIDE=200000 FA_CL_TILE=$t" "-d 64"; done
    } 2>&1 | tee "$OUT/bench.txt"
    ;;
sweep)
    # one line per (env, shape): ptxas registers/spills of the variant, then the bench row
    sweep_row() {
        local log; log=$(env $1 FA_CL_DEBUG_BUILD_LOG=1 FA_CL_BUILD_OPTIONS="-cl-nv-verbose $2" $BENCH -b 8 -h 16 -q 4096 $3 --no-reference 2>&1)
        echo "$1 $2 $3 :: $(echo "$log" | grep -oE "Used [0-9]+ registers|[0-9]+ bytes spill stores" | tail -2 | tr '\n' ' ') :: $(echo "$log" | tail -1 | cut -c60-200)"
    }
    O="FA_CL_LOCAL_MEM_OVERRIDE=200000"
    {
    for t in 64x32x4x4 64x64x8x8 64x64x4x8 128x64x8x8 64x32x8x4 64x32x4x8 32x32x4x8 128x32x8x4 96x32x4x4; do sweep_row "$O FA_CL_TILE=$t" "" "-d 128"; done
    for u in "-DFA_QK_UNROLL=4" "-DFA_QK_UNROLL=16" "-DFA_QK_UNROLL=32" "-DFA_PV_UNROLL=2" "-DFA_PV_UNROLL=8"; do sweep_row "$O FA_CL_TILE=64x32x4x4" "$u" "-d 128"; done
    for t in 64x32x4x4 64x32x8x4 128x64x8x8 64x64x8x8 128x32x8x4 128x64x4x8 128x32x4x4; do sweep_row "$O FA_CL_TILE=$t" "" "-d 64"; done
    } 2>&1 | tee "$OUT/sweep.txt"
    ;;
mma)
    FA_CL_DEBUG_BUILD_LOG=1 FA_CL_BUILD_OPTIONS=-cl-nv-verbose $BENCH -b 1 -h 1 -q 128 -d 128 --dtype f16 --no-reference 2>&1 | grep -iE "registers|spill|error|warn|FAILED" | head -8 | tee "$OUT/mma_ptxas.txt"
    {
    # correctness against the CLBlast reference: tails, causal, windows, GQA, bf16, d=64 and padded d
    for r in "-b 2 -h 4 -q 1000 -d 128 --dtype f16" "-b 2 -h 4 -q 1000 -d 128 --dtype f16 --causal" "-b 1 -h 8 --heads-kv 2 -q 333 -k 777 -d 64 --dtype bf16" \
             "-b 1 -h 4 -q 777 -k 333 -d 128 --dtype f16 --causal" "-b 1 -h 4 -q 500 -d 40 --dtype f16 --window 64,8" "-b 2 -h 2 -q 64 -d 96 --dtype bf16"; do
        echo "check $r :: $($BENCH $r --check 2>&1 | tail -1 | cut -c60-240)"
    done
    for r in "-d 128 --dtype f16" "-d 64 --dtype f16" "-d 128 --dtype bf16" "-d 128 --dtype f16 --causal" "-d 64 --dtype f16 --causal" "-d 64 --dtype f32" "-d 64 --dtype f32 --causal"; do
        echo "perf $r :: $($BENCH -b 8 -h 16 -q 4096 $r --no-reference 2>&1 | tail -1 | cut -c60-240)"
    done
    echo "perf portable f16 d=128 :: $(FA_CL_VENDOR_PATH=0 $BENCH -b 8 -h 16 -q 4096 -d 128 --dtype f16 --no-reference 2>&1 | tail -1 | cut -c60-240)"
    } 2>&1 | tee "$OUT/mma.txt"
    here=$(pwd); [ -e /work/main ] || { mkdir -p /work && ln -s "$here" /work/main; }
    (cd /work/main && ctest --test-dir "$BUILD" --output-on-failure -j4 2>&1) > "$OUT/ctest.txt"; grep -E "tests passed|\*\*\*Failed|FAIL" "$OUT/ctest.txt" | head -30
    ;;
mma2)
    {
    for r in "-b 2 -h 4 -q 1000 -d 128 --dtype f16 --causal" "-b 1 -h 8 --heads-kv 2 -q 333 -k 777 -d 64 --dtype bf16" "-b 1 -h 4 -q 500 -d 40 --dtype f16 --window 64,8" \
             "-b 2 -h 3 -q 300 -k 901 -d 36 --dtype f16 --causal" "-b 1 -h 2 -q 2000 -d 128 --dtype bf16 --window 100,-1" "-b 2 -h 4 -q 1000 -d 64 --dtype f16"; do
        echo "check $r :: $($BENCH $r --check 2>&1 | tail -1 | cut -c60-240)"
    done
    for r in "-d 128 --dtype f16" "-d 64 --dtype f16" "-d 128 --dtype bf16" "-d 128 --dtype f16 --causal" "-d 64 --dtype f16 --causal"; do
        echo "default $r :: $($BENCH -b 8 -h 16 -q 4096 $r --no-reference 2>&1 | tail -1 | cut -c60-240)"
    done
    for t in 64x64 128x64 64x16 128x32; do
        for r in "-d 128 --dtype f16" "-d 64 --dtype f16"; do
            echo "FA_CL_TILE=$t $r :: $(FA_CL_TILE=$t $BENCH -b 8 -h 16 -q 4096 $r --no-reference 2>&1 | tail -1 | cut -c60-240)"
        done
    done
    for t in 64x32; do FA_CL_DEBUG_BUILD_LOG=1 FA_CL_TILE=$t FA_CL_BUILD_OPTIONS=-cl-nv-verbose $BENCH -b 1 -h 1 -q 128 -d 128 --dtype f16 --no-reference 2>&1 | grep -E "registers|spill"; done
    } 2>&1 | tee "$OUT/mma2.txt"
    ;;
mma3)
    # the generalised tensor-core kernel (16 or 32 rows per warp, unmasked full blocks, Q staged in
    # the K/V space, head_dim up to 256): per tile, checks against the reference, then ptxas'
    # registers/spills and speed; PyTorch beside it. Then the CTest suite on the GPU.
    sweep_row() { # $1: env assignments, $2: bench shape
        local log; log=$(env $1 FA_CL_DEBUG_BUILD_LOG=1 FA_CL_BUILD_OPTIONS="-cl-nv-verbose ${XOPT:-}" $BENCH -b 8 -h 16 -q 4096 $2 --no-reference 2>&1)
        echo "$1 ${XOPT:-} $2 :: $(echo "$log" | grep -oE "Used [0-9]+ registers|[0-9]+ bytes spill stores" | tail -2 | tr '\n' ' ') :: $(echo "$log" | tail -1 | cut -c60-250)"
    }
    {
    for t in 64x64x16 64x32x16 128x64x16 128x64x32 128x32x32 64x64x32 64x32x32; do
        for d in 128 64; do
            for r in "-b 1 -h 4 --heads-kv 2 -q 333 -k 777 -d $d --dtype f16 --causal" "-b 2 -h 2 -q 1000 -d $d --dtype bf16 --window 64,8" "-b 1 -h 2 -q 517 -d $d --dtype f16"; do
                echo "check FA_CL_TILE=$t $r :: $(FA_CL_TILE=$t $BENCH $r --check 2>&1 | tail -1 | cut -c60-250)"
            done
        done
    done
    # the fp32 tensor-core kernel (3xTF32, FA_CL_NV_TF32=1): fp32 accuracy against the reference
    for r in "-b 1 -h 4 --heads-kv 2 -q 333 -k 777 -d 128 --dtype f32 --causal" "-b 2 -h 2 -q 1000 -d 64 --dtype f32 --window 64,8" \
             "-b 1 -h 2 -q 517 -d 40 --dtype f32" "-b 2 -h 2 -q 300 -d 37 --dtype f32 --causal"; do
        echo "check FA_CL_NV_TF32=1 $r :: $(FA_CL_NV_TF32=1 $BENCH $r --check 2>&1 | tail -1 | cut -c60-250)"
    done
    for r in "-b 1 -h 4 --heads-kv 2 -q 333 -k 777 -d 256 --dtype f16 --causal" "-b 2 -h 2 -q 1000 -d 160 --dtype bf16 --window 64,8" \
             "-b 1 -h 2 -q 517 -d 200 --dtype f16" "-b 1 -h 2 -q 517 -k 300 -d 256 --dtype f32 --causal"; do
        echo "check default $r :: $($BENCH $r --check 2>&1 | tail -1 | cut -c60-250)"
    done
    } 2>&1 | tee "$OUT/mma3_check.txt" | grep -vE "ok|PASS" | head -40
    {
    for t in 64x64x16 64x32x16 128x64x16 128x64x32 128x32x32 64x64x32 64x32x32 256x64x32; do
        sweep_row "FA_CL_TILE=$t" "-d 128 --dtype f16"
    done
    XOPT=-cl-nv-maxrregcount=168 sweep_row "FA_CL_TILE=64x64x16" "-d 128 --dtype f16"
    XOPT=-cl-nv-maxrregcount=128 sweep_row "FA_CL_TILE=64x32x16" "-d 128 --dtype f16"
    for t in 64x64x16 64x32x16 128x64x16 128x64x32 128x32x32 64x64x32 256x64x32 128x128x32; do
        sweep_row "FA_CL_TILE=$t" "-d 64 --dtype f16"
    done
    XOPT=-cl-nv-maxrregcount=128 sweep_row "FA_CL_TILE=64x64x16" "-d 64 --dtype f16"
    # head_dim above 128: the tensor-core kernel (f16) and the tiled kernel with 2 rows (f32)
    for r in "-d 256 --dtype f16" "-d 192 --dtype bf16" "-d 256 --dtype f16 --causal" "-d 256 --dtype f32"; do sweep_row "X=default" "$r"; done
    sweep_row "FA_CL_TILE=64x16x16" "-d 256 --dtype f16"
    sweep_row "FA_CL_KERNEL_VARIANT=portable" "-d 256 --dtype f32"
    sweep_row "FA_CL_VENDOR_PATH=0" "-d 256 --dtype f16"
    # fp32 on tensor cores (3xTF32) against the portable kernels (PyTorch's fp32 anchors below)
    for t in 64x32 64x64 128x32 32x32 64x16; do
        sweep_row "FA_CL_NV_TF32=1 FA_CL_TILE=$t" "-d 128 --dtype f32"
        sweep_row "FA_CL_NV_TF32=1 FA_CL_TILE=$t" "-d 64 --dtype f32"
    done
    for r in "-d 128 --dtype f32" "-d 64 --dtype f32" "-d 128 --dtype f32 --causal" "-d 64 --dtype f32 --causal"; do
        sweep_row "FA_CL_NV_TF32=1" "$r"
        sweep_row "X=portable" "$r"
    done
    for t in 64x64x16 128x64x32 128x32x32; do
        sweep_row "FA_CL_TILE=$t" "-d 128 --dtype f16 --causal"
        sweep_row "FA_CL_TILE=$t" "-d 64 --dtype f16 --causal"
        sweep_row "FA_CL_TILE=$t" "-d 128 --dtype bf16"
    done
    } 2>&1 | tee "$OUT/mma3_sweep.txt"
    {
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f16
    anchor -b 8 -H 16 -n 4096 -d 64 --dtype f16
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f16 --causal
    anchor -b 8 -H 16 -n 4096 -d 64 --dtype f16 --causal
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f32
    anchor -b 8 -H 16 -n 4096 -d 64 --dtype f32
    } 2>&1 | grep -vE "lambda|^ *$" | tee "$OUT/anchor.txt"
    here=$(pwd); [ -e /work/main ] || { mkdir -p /work && ln -s "$here" /work/main; }
    (cd /work/main && ctest --test-dir "$BUILD" --output-on-failure -j4 -LE "install|offline|oclgrind|leaks" 2>&1) > "$OUT/ctest.txt"

    grep -E "tests passed|\*\*\*Failed|Not Run" "$OUT/ctest.txt" | head -20
    ;;
validate)
    # the merged code on the GPU: CTest (not the labels that need host tools: compilers, oclgrind,
    # valgrind), the quoted rows with --check, PyTorch's kernels beside them, cold vs warm plans
    here=$(pwd); [ -e /work/main ] || { mkdir -p /work && ln -s "$here" /work/main; }
    (cd /work/main && ctest --test-dir "$BUILD" --output-on-failure -j4 -LE "install|offline|oclgrind|leaks" 2>&1) > "$OUT/ctest.txt"
    grep -E "tests passed|\*\*\*Failed|Not Run" "$OUT/ctest.txt" | head -20
    "$BUILD/tools/fa_cl_info" > "$OUT/info.txt" 2>&1
    {
    for r in "-d 128 --dtype f32" "-d 64 --dtype f32" "-d 128 --dtype f32 --causal" "-d 64 --dtype f32 --causal" \
             "-d 128 --dtype f16" "-d 64 --dtype f16" "-d 128 --dtype bf16" "-d 64 --dtype bf16" "-d 128 --dtype f16 --causal" "-d 64 --dtype f16 --causal"; do
        $BENCH -b 8 -h 16 -q 4096 $r --check | tail -1
    done
    echo "portable f16 d=128 (FA_CL_VENDOR_PATH=0): $(FA_CL_VENDOR_PATH=0 $BENCH -b 8 -h 16 -q 4096 -d 128 --dtype f16 --check | tail -1)"
    } 2>&1 | tee "$OUT/validate_bench.txt"
    {
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f16
    anchor -b 8 -H 16 -n 4096 -d 64 --dtype f16
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype bf16
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f16 --causal
    anchor -b 8 -H 16 -n 4096 -d 64 --dtype f16 --causal
    anchor -b 8 -H 16 -n 4096 -d 64 --dtype f32
    } 2>&1 | grep -vE "lambda|^ *$" | tee "$OUT/anchor.txt"
    ROUNDS=2 FA_CL_BUILD_DIR="$BUILD" bash scripts/plan_cache_timing.sh > "$OUT/plan_cache.txt" 2>&1; tail -8 "$OUT/plan_cache.txt"
    ;;
recheck)
    here=$(pwd); [ -e /work/main ] || { mkdir -p /work && ln -s "$here" /work/main; }
    (cd /work/main && ctest --test-dir "$BUILD" --output-on-failure -j4 -R "edges|forward|threads|invalid" 2>&1) > "$OUT/ctest.txt"
    grep -E "tests passed|\*\*\*Failed|\[FAIL\]" "$OUT/ctest.txt" | head -12
    for r in "-d 128 --dtype f32" "-d 64 --dtype f32" "-d 128 --dtype f16" "-d 64 --dtype bf16 --causal"; do
        $BENCH -b 8 -h 16 -q 4096 $r --check | tail -1
    done 2>&1 | tee "$OUT/recheck_bench.txt"
    ;;
tests)
    # CTest files hold the Debian machine's absolute paths: make them resolve here. Install tests
    # configure and compile consumer projects (a host toolchain matter): they run on the Debian machine
    here=$(pwd); [ -e /work/main ] || { mkdir -p /work && ln -s "$here" /work/main; }
    (cd /work/main && ctest --test-dir "$BUILD" --output-on-failure -j4 -LE install 2>&1) | tee "$OUT/ctest.txt" | tail -25
    ;;
final)
    here=$(pwd); [ -e /work/main ] || { mkdir -p /work && ln -s "$here" /work/main; }
    (cd /work/main && ctest --test-dir "$BUILD" -j4 2>&1) > "$OUT/ctest.txt"; tail -12 "$OUT/ctest.txt"
    "$BUILD/tools/fa_cl_info" > "$OUT/info.txt" 2>&1
    {
    for r in "-d 128 --dtype f32" "-d 64 --dtype f32" "-d 128 --dtype f16" "-d 64 --dtype f16" "-d 128 --dtype bf16" \
             "-d 128 --dtype f32 --causal" "-d 64 --dtype f32 --causal" "-d 128 --dtype f16 --causal"; do
        $BENCH -b 8 -h 16 -q 4096 $r --check --json "$OUT/row.json" | tail -1
    done
    # the gap to the reference as N grows (B*H*N constant)
    for n in 1024 2048 4096 8192 16384; do
        $BENCH -b $((8 * 4096 / n > 1 ? 8 * 4096 / n : 1)) -h 16 -q $n -d 128 --check | tail -1
    done
    # memory: the reference cannot allocate its N x N scratch, the fused path runs
    $BENCH -b 1 -h 8 -q 131072 -d 128 --reps 10 --warmup 1 | tail -1
    } 2>&1 | tee "$OUT/final_bench.txt"
    {
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f32
    anchor -b 8 -H 16 -n 4096 -d 64 --dtype f32
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f16
    anchor -b 8 -H 16 -n 4096 -d 64 --dtype f16
    anchor -b 8 -H 16 -n 4096 -d 128 --dtype f32 --causal
    } 2>&1 | grep -vE "lambda|^ *$" | tee "$OUT/anchor.txt"
    ;;
cache)
    FA_CL_BUILD_DIR="$BUILD" bash scripts/plan_cache_timing.sh 2>&1 | tee "$OUT/plan_cache.txt"
    ;;
*)
    echo "usage: $0 explore|explore2|sweep|mma|mma2|mma3|final|validate|recheck|cache|tests" >&2
    exit 2
    ;;
esac
