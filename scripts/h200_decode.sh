#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on the NVIDIA GPU host for nvidia-mma's decode forms (key blocks shared by FA_KV_WARPS
# warps, the FA_STAGES copy pipeline, page sizes as build constants): decode shapes across warps,
# splits and tiles, paged K/V, PyTorch's SDPA on the same shapes, prefill rows against a build of
# an earlier commit (BASE), the driver's register report; with "tests", then the CTest suite.
# Run from the repo root with .gpu/ (../shared/gpu), BUILD (default build-gpu) and BASE (default
# build-base). Logs go to $OUT.
#   scripts/h200_decode.sh [tests | l2 | regs | final]   (l2, regs: the cp.async L2-prefetch and register-cap rows;
#   final: the defaults, three rounds of decode rows beside PyTorch, checks, then CTest)
. scripts/h200_common.sh
DEC=("-b 16 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16"
     "-b 16 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f16"
     "-b 1 -h 32 --heads-kv 8 -q 1 -k 131072 -d 128 --dtype f16")
if [ "${1:-}" != l2 ] && [ "${1:-}" != regs ] && [ "${1:-}" != final ]; then
{
for r in "${DEC[@]}"; do
    bench "default" -- $r --no-reference
    for w in 1 2 4; do
        for s in 1 2 3 4 6 8; do bench "kv_warps $w splits $s" FA_CL_MMA_KV_WARPS=$w FA_CL_SPLITS=$s -- $r --no-reference; done
        bench "kv_warps $w stages 3" FA_CL_MMA_KV_WARPS=$w FA_CL_MMA_STAGES=3 -- $r --no-reference
    done
    bench "kv_warps 4 tile 16x128" FA_CL_MMA_KV_WARPS=4 FA_CL_TILE=16x128x16 -- $r --no-reference
    bench "kv_warps 2 tile 16x32" FA_CL_MMA_KV_WARPS=2 FA_CL_TILE=16x32x16 -- $r --no-reference
    bench "tile 32x64 (before)" FA_CL_TILE=32x64x16 -- $r --no-reference
    for p in 16 256; do
        bench "page $p" -- $r --no-reference --page-size $p
        bench "page $p kv_warps 2" FA_CL_MMA_KV_WARPS=2 -- $r --no-reference --page-size $p
    done
    bench "ragged lens" -- $r --no-reference --cache-seqlens 1,4096,8192,777
done
for r in "-b 16 -h 32 --heads-kv 8 -q 4 -k 8192 -d 128 --dtype f16 --causal" \
         "-b 16 -h 32 --heads-kv 8 -q 16 -k 8192 -d 128 --dtype f16 --causal"; do
    bench "default" -- $r --no-reference
    bench "kv_warps 2" FA_CL_MMA_KV_WARPS=2 -- $r --no-reference
    bench "tile 32x64 (before)" FA_CL_TILE=32x64x16 -- $r --no-reference
done
bench "varlen" -- --varlen 512,4096,1000,2048,3000,77,4096,1500 -h 32 --heads-kv 8 -d 128 --dtype f16 --causal --no-reference
bench "chunked prefill" -- --varlen 256,256,256,256 --varlen-k 8192,4096,2048,1024 -h 32 --heads-kv 8 -d 128 --dtype f16 --causal --page-size 16 --no-reference
bench "check" -- -b 4 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16 --check
bench "check paged 16" -- -b 4 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16 --check --page-size 16
bench "check bf16 q4 causal" -- -b 4 -h 32 --heads-kv 8 -q 4 -k 3000 -d 128 --dtype bf16 --causal --check
bench "check d64 paged 256" -- -b 2 -h 16 --heads-kv 2 -q 2 -k 5000 -d 64 --dtype f16 --check --page-size 256
for r in "-b 8 -h 16 -q 4096 -d 128 --dtype f16" "-b 8 -h 16 -q 4096 -d 64 --dtype f16" \
         "-b 8 -h 16 -q 4096 -d 128 --dtype f16 --causal" "-b 2 -h 16 -q 4096 -d 256 --dtype f16"; do
    bench "prefill new" -- $r --no-reference
    base -- $r --no-reference
done
} 2>&1 | tee "$OUT/decode.txt"
# the driver's register report for the decode builds
for p in 0 16; do
    FA_CL_CACHE_DIR=off FA_CL_DEBUG_BUILD_LOG=1 FA_CL_BUILD_OPTIONS=-cl-nv-verbose "$B" -b 16 -h 32 --heads-kv 8 -q 1 -k 8192 \
        -d 128 --dtype f16 --no-reference --page-size $p 2>&1 | grep -iE "registers|spill|lmem|smem" | head -8
done 2>&1 | tee "$OUT/ptxas.txt"
for r in "-b 16 -H 32 --hkv 8 -q 1 -k 8192" "-b 16 -H 32 --hkv 8 -q 1 -k 32768" "-b 1 -H 32 --hkv 8 -q 1 -k 131072" \
         "-b 16 -H 32 --hkv 8 -q 4 -k 8192 --causal" "-b 16 -H 32 --hkv 8 -q 16 -k 8192 --causal"; do
    python3 scripts/torch_sdpa_anchor.py $r -d 128 --dtype f16 2>&1 | grep -v -i warn
done 2>&1 | tee "$OUT/torch.txt"
fi
if [ "${1:-}" = tests ]; then
    t0=$(date +%s)
    (timeout 300 ctest --test-dir "$BUILD" -LE "install|offline|oclgrind|leaks" -j4 --output-on-failure 2>&1) > "$OUT/ctest.txt"
    echo "ctest wall time: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/ctest.txt"
    grep -E "tests passed|tests failed|\*\*\*|Not Run|Skipped|\(Failed\)" "$OUT/ctest.txt" | tail -30
fi
if [ "${1:-}" = l2 ]; then # cp.async's L2 prefetch size (FA_CP_L2, through FA_CL_BUILD_OPTIONS)
    {
    for r in "${DEC[@]}" "-b 16 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16 --page-size 16" \
             "-b 8 -h 16 -q 4096 -d 128 --dtype f16" "-b 8 -h 16 -q 4096 -d 64 --dtype f16" \
             "-b 8 -h 16 -q 4096 -d 128 --dtype f16 --causal" "-b 2 -h 16 -q 4096 -d 256 --dtype f16"; do
        for rep in 1 2; do
            bench "L2 default ($rep)" -- $r --no-reference
            for l in 128 256; do bench "L2::${l}B ($rep)" FA_CL_BUILD_OPTIONS=-DFA_CP_L2=$l -- $r --no-reference; done
        done
    done
    } 2>&1 | tee "$OUT/l2.txt"
    for r in "-b 16 -H 32 --hkv 8 -q 1 -k 8192" "-b 16 -H 32 --hkv 8 -q 1 -k 32768" "-b 1 -H 32 --hkv 8 -q 1 -k 131072"; do
        python3 scripts/torch_sdpa_anchor.py $r -d 128 --dtype f16 2>&1 | grep -E "^#|FLASH|CUDNN"
    done 2>&1 | tee "$OUT/torch.txt"
fi
if [ "${1:-}" = regs ]; then # register caps (decode with 4 key-slice warps is register-bound to 2 work-groups an SM)
    {
    for r in "${DEC[@]}"; do
        for c in none 168 128; do
            o=; [ $c = none ] || o=-cl-nv-maxrregcount=$c
            for s in 2 3 4; do bench "maxrreg $c splits $s" FA_CL_BUILD_OPTIONS=$o FA_CL_SPLITS=$s -- $r --no-reference; done
        done
        bench "default" -- $r --no-reference
    done
    for c in 168 128; do
        FA_CL_CACHE_DIR=off FA_CL_DEBUG_BUILD_LOG=1 FA_CL_BUILD_OPTIONS="-cl-nv-verbose -cl-nv-maxrregcount=$c" "$B" -b 16 -h 32 \
            --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16 --no-reference 2>&1 | grep -iE "registers|spill" | head -4
    done
    } 2>&1 | tee "$OUT/regs.txt"
    for r in "-b 16 -H 32 --hkv 8 -q 1 -k 8192" "-b 16 -H 32 --hkv 8 -q 1 -k 32768" "-b 1 -H 32 --hkv 8 -q 1 -k 131072"; do
        python3 scripts/torch_sdpa_anchor.py $r -d 128 --dtype f16 2>&1 | grep -E "^#|FLASH|CUDNN"
    done 2>&1 | tee "$OUT/torch.txt"
fi
if [ "${1:-}" = final ]; then # the defaults, three rounds of each decode row beside PyTorch, checks, CTest
    {
    for round in 1 2 3; do
        for r in "${DEC[@]}"; do bench "round $round" -- $r --no-reference; done
        for r in "-b 16 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16" "-b 16 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f16" \
                 "-b 1 -h 32 --heads-kv 8 -q 1 -k 131072 -d 128 --dtype f16"; do
            for p in 16 256; do bench "round $round page $p" -- $r --no-reference --page-size $p; done
        done
        for r in "-b 16 -H 32 --hkv 8 -q 1 -k 8192" "-b 16 -H 32 --hkv 8 -q 1 -k 32768" "-b 1 -H 32 --hkv 8 -q 1 -k 131072"; do
            python3 scripts/torch_sdpa_anchor.py $r -d 128 --dtype f16 2>&1 | grep -E "^#|FLASH|CUDNN"
        done
    done
    for r in "-b 16 -h 32 --heads-kv 8 -q 4 -k 8192 -d 128 --dtype f16 --causal" \
             "-b 16 -h 32 --heads-kv 8 -q 16 -k 8192 -d 128 --dtype f16 --causal"; do bench "spec" -- $r --no-reference; done
    bench "check" -- -b 4 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16 --check
    bench "check bf16 q4 causal" -- -b 4 -h 32 --heads-kv 8 -q 4 -k 3000 -d 128 --dtype bf16 --causal --check
    bench "check d64 q2 window" -- -b 2 -h 16 --heads-kv 2 -q 2 -k 5000 -d 64 --dtype f16 --window 1000,0 --check
    bench "check d256 q1" -- -b 2 -h 8 --heads-kv 2 -q 1 -k 3000 -d 256 --dtype f16 --check
    for r in "-b 8 -h 16 -q 4096 -d 128 --dtype f16" "-b 8 -h 16 -q 4096 -d 64 --dtype f16" \
             "-b 8 -h 16 -q 4096 -d 128 --dtype f16 --causal" "-b 8 -h 16 -q 4096 -d 128 --dtype f32"; do
        bench "prefill" -- $r --no-reference
    done
    } 2>&1 | tee "$OUT/final.txt"
    t0=$(date +%s)
    (timeout 300 ctest --test-dir "$BUILD" -LE "install|offline|oclgrind|leaks" -j4 --output-on-failure 2>&1) > "$OUT/ctest.txt"
    echo "ctest wall time: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/ctest.txt"
    grep -E "tests passed|tests failed|\(Failed\)" "$OUT/ctest.txt" | tail -30
fi
