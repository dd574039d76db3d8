#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on the NVIDIA GPU host (../shared/gpu/README.md): the CTest suite through NVIDIA's OpenCL,
# the rows of docs/performance.md with the planner's defaults beside the previous defaults and a
# build of an earlier commit (BASE), long-row costs, and PyTorch's SDPA kernels on the same shapes.
# Run from the repo root with .gpu/ (a copy of ../shared/gpu), a build made on the Debian machine
# (BUILD, default build-gpu) and optionally BASE (default build-base). Logs go to $OUT.
#   scripts/h200_check.sh [all|tests|tests-long|tests-rest|rows|long|final|torch]
# The long portable-kernel tests (tests-long: chunks, wide head dims, tile 8, portable
# serving/types) and the rest (tests-rest) can run apart or side by side (session 10: 197-256 s
# for both at once, -j6 and -j8, after the head_dim 384-512 programs stopped being unrolled).
. scripts/h200_common.sh
what=${1:-all}
LONG='chunks_portable|forward_wide|tiled_wide|backward_tile8|serving_.*portable|types_portable'

if [ "$what" = all ] || [ "$what" = tests ] || [ "$what" = tests-long ] || [ "$what" = tests-rest ]; then
    t0=$(date +%s)
    sel=()
    [ "$what" = tests-long ] && sel=(-R "$LONG")
    [ "$what" = tests-rest ] && sel=(-E "$LONG")
    (cd /work/main && ctest --test-dir "$BUILD" -LE "install|offline|oclgrind|leaks" "${sel[@]}" -j8 --output-on-failure 2>&1) \
        > "$OUT/ctest.txt"
    echo "ctest wall time: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/ctest.txt"
    grep -E "tests passed|tests failed|\*\*\*|Not Run|Skipped" "$OUT/ctest.txt" | tail -30
    "$BUILD/tools/fa_cl_info" > "$OUT/info.txt" 2>&1
fi

ROWS=("-b 8 -h 16 -q 4096 -d 128 --dtype f16" "-b 8 -h 16 -q 4096 -d 64 --dtype f16"
      "-b 8 -h 16 -q 4096 -d 128 --dtype bf16" "-b 8 -h 16 -q 4096 -d 128 --dtype f16 --causal"
      "-b 8 -h 16 -q 4096 -d 64 --dtype f16 --causal" "-b 2 -h 16 -q 4096 -d 256 --dtype f16"
      "-b 64 -h 16 -q 512 -d 128 --dtype f16" "-b 8 -h 16 -q 4096 -d 128 --dtype f32"
      "-b 8 -h 16 -q 4096 -d 64 --dtype f32")
if [ "$what" = all ] || [ "$what" = rows ]; then
    {
    for r in "${ROWS[@]}"; do
        B="$BUILD/tools/fa_cl_bench"
        bench "new default" -- $r --no-reference
        if [ -x "$BASE/tools/fa_cl_bench" ]; then B="$BASE/tools/fa_cl_bench"; bench "base $(cat "$BASE/commit" 2>/dev/null)" -- $r --no-reference; fi
        B="$BUILD/tools/fa_cl_bench"
        case "$r" in
        *f32*) bench "new, FA_CL_NV_TF32=0" FA_CL_NV_TF32=0 -- $r --no-reference ;;
        *"-d 256"*) ;;
        *"-d 128"*) bench "new, FA_CL_WGMMA=0 (nvidia-mma)" FA_CL_WGMMA=0 -- $r --no-reference ;;
        *) bench "new, FA_CL_TILE=64x64x16 (old)" FA_CL_TILE=64x64x16 -- $r --no-reference ;;
        esac
    done
    # the defaults checked against the reference
    B="$BUILD/tools/fa_cl_bench"
    for r in "-b 2 -h 8 -q 2048 -d 128 --dtype f16" "-b 2 -h 8 -q 2048 -d 64 --dtype bf16 --causal" \
             "-b 2 -h 8 -q 2048 -d 128 --dtype f32" "-b 2 -h 8 -q 1000 -k 1500 -d 64 --dtype f32 --causal"; do
        bench "check" -- $r --check
    done
    # long rows: the two-level accumulation (f32 above 2^16 keys, f16 above 2^21) against the base build
    for r in "-b 1 -h 16 -q 2048 -k 262144 -d 128 --dtype f32" "-b 4 -h 32 --heads-kv 8 -q 16 -k 4194304 -d 128 --dtype f16"; do
        B="$BUILD/tools/fa_cl_bench"; bench "long rows new" -- $r --no-reference --reps 10 --warmup 1
        if [ -x "$BASE/tools/fa_cl_bench" ]; then B="$BASE/tools/fa_cl_bench"; bench "long rows base" -- $r --no-reference --reps 10 --warmup 1; fi
    done
    # sweep around the new defaults
    B="$BUILD/tools/fa_cl_bench"
    for t in 128x64x32 256x64x32 128x128x32 128x32x32; do
        bench "FA_CL_TILE=$t" FA_CL_TILE=$t -- -b 8 -h 16 -q 4096 -d 128 --dtype f16 --no-reference
        bench "FA_CL_TILE=$t" FA_CL_TILE=$t -- -b 8 -h 16 -q 4096 -d 64 --dtype f16 --no-reference
    done
    for t in 128x32 64x32 256x32; do
        bench "FA_CL_TILE=$t (tf32)" FA_CL_TILE=$t -- -b 8 -h 16 -q 4096 -d 128 --dtype f32 --no-reference
    done
    } 2>&1 | tee "$OUT/rows.txt"
fi

if [ "$what" = all ] || [ "$what" = long ]; then
    # long rows (issue 44): chunks of at most 2^11 keys (f32), 2^16 (f16), 2^19 (bf16), merged in
    # compensated sums, against BASE (59e27f2: chunks of 65536 keys only past 2^16 f32, 2^21 f16,
    # 2^24 bf16 keys, plain merges) on the same rows. The comments give the plans on 132 compute
    # units, new / base: launches of chunks where the grid fills the GPU, else split-KV chunks.
    LONG_ROWS=(
        "-b 8 -h 16 -q 4096 -d 128 --dtype f32"              # 2 launches / 1: the f32 table row
        "-b 8 -h 16 -q 4096 -d 64 --dtype f32"               # 2 / 1
        "-b 1 -h 16 -q 4096 -k 2048 -d 128 --dtype f32"      # 1 / 1 (control)
        "-b 1 -h 16 -q 4096 -k 16384 -d 128 --dtype f32"     # 8 / 1
        "-b 1 -h 16 -q 4096 -k 65600 -d 128 --dtype f32"     # 33 / 2
        "-b 1 -h 32 -q 8192 -k 65536 -d 128 --dtype f16"     # 1 / 1 (control)
        "-b 1 -h 32 -q 8192 -k 131072 -d 128 --dtype f16"    # 2 / 1
        "-b 1 -h 32 -q 8192 -k 1048576 -d 128 --dtype f16"   # 16 / 1
        "-b 1 -h 32 -q 8192 -k 1048576 -d 128 --dtype bf16"  # 2 / 1
        "-b 1 -h 16 -q 1024 -k 2097216 -d 128 --dtype f16"   # 33 splits / 33: the compensated combine alone
        "-b 32 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f32"   # decode: 16 launches / 1
        "-b 1 -h 32 --heads-kv 8 -q 1 -k 131072 -d 128 --dtype f32"   # decode: 64 splits / the heuristic's 29
        "-b 1 -h 32 --heads-kv 8 -q 1 -k 131072 -d 128 --dtype f16"   # decode: the heuristic's splits both
        "-b 4 -h 32 --heads-kv 8 -q 16 -k 4194304 -d 128 --dtype f16" # 64 splits / 64 (docs/performance.md's row)
    )
    {
    for r in "${LONG_ROWS[@]}"; do
        B="$BUILD/tools/fa_cl_bench"; bench "long rows new" -- $r --no-reference --warmup 1
        case "$r" in
        *"-q 1 "*) ;;
        *f32*) bench "long rows new, FA_CL_NV_TF32=0" FA_CL_NV_TF32=0 -- $r --no-reference --warmup 1 ;;
        *) bench "long rows new, FA_CL_WGMMA=0" FA_CL_WGMMA=0 -- $r --no-reference --warmup 1 ;;
        esac
        if [ -x "$BASE/tools/fa_cl_bench" ]; then
            B="$BASE/tools/fa_cl_bench"; bench "long rows base" -- $r --no-reference --warmup 1
            case "$r" in
            *"-q 1 "*) ;;
            *f32*) bench "long rows base, FA_CL_NV_TF32=0" FA_CL_NV_TF32=0 -- $r --no-reference --warmup 1 ;;
            *) bench "long rows base, FA_CL_WGMMA=0" FA_CL_WGMMA=0 -- $r --no-reference --warmup 1 ;;
            esac
        fi
    done
    # accuracy on the native kernels (nvidia-tf32x3, nvidia-mma, nvidia-wgmma) at 2^16..2^24 keys,
    # split and chunked, then chunk lengths above the defaults (do the tensor cores allow longer?)
    B="$BUILD/tools/fa_cl_bench"
    (cd /work/main && ctest --test-dir "$BUILD" -R long_values --output-on-failure -V 2>&1) | grep -E "^[0-9]+: \[|tests passed"
    for e in "FA_CL_WGMMA=0" "FA_CL_NV_TF32=0"; do
        env $e FA_CL_SPLITS=1 "$BUILD/tests/test_edges" long_values 16 20 24 2>&1 | grep -E "^\[" | sed "s/^/$e: /"
    done
    for c in 4096 8192 131072 262144; do
        env FA_CL_SPLITS=1 FA_CL_KV_CHUNK=$c "$BUILD/tests/test_edges" long_values 20 2>&1 | grep -E "^\[" | sed "s/^/chunk $c: /"
    done
    } 2>&1 | tee "$OUT/long.txt"
fi

if [ "$what" = final ]; then
    # the defaults' rows alone (the table of docs/performance.md), then why chunked plans cost more:
    # NVIDIA's register report for chunked and one-launch builds, and a chunked build run as one launch
    B="$BUILD/tools/fa_cl_bench"
    for r in "${ROWS[@]}"; do bench "default" -- $r --no-reference; done 2>&1 | tee "$OUT/rows.txt"
    {
    for r in "-b 1 -h 16 -q 4096 -k 65536 -d 128 --dtype f32" "-b 1 -h 16 -q 1024 -k 65536 -d 128 --dtype f16"; do
        for e in "FA_CL_NV_TF32=0" "FA_CL_NV_TF32=0 FA_CL_KV_CHUNK=1073741824" "FA_CL_NV_TF32=0 FA_CL_KV_CHUNK=32768"; do
            echo "$e $r :: $(env $e FA_CL_DEBUG_BUILD_LOG=1 FA_CL_BUILD_OPTIONS=-cl-nv-verbose $B $r --no-reference 2>&1 | grep -oE "Used [0-9]+ registers|[0-9]+ bytes spill stores|[0-9]+ bytes stack frame" | sort -u | tr '\n' ' ') :: $(env $e $B $r --no-reference 2>&1 | tail -1 | cut -c60-140)"
        done
    done
    } 2>&1 | tee "$OUT/chunks.txt"
fi

if [ "$what" = all ] || [ "$what" = torch ] || [ "$what" = final ]; then
    for r in "${ROWS[@]}"; do
        args=$(echo "$r" | sed 's/-h /-H /; s/-q /-n /')
        python3 scripts/torch_sdpa_anchor.py $args 2>&1 | grep -v -i warn
    done 2>&1 | tee "$OUT/torch.txt"
fi
