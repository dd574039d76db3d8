#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on the NVIDIA GPU host for issue 13 (serving): decode shapes with the planner's split-KV
# and GQA packing beside forced variants, paged K/V, PyTorch's SDPA on the same shapes, prefill rows
# against a build of the previous commit (BASE: the kernels changed), then the CTest suite.
# Run from the repo root with .gpu/ (../shared/gpu), BUILD (default build-gpu) and BASE (default
# build-base). Logs go to $OUT.
#   scripts/h200_serving.sh [perf|tests|all]
. scripts/h200_common.sh
what=${1:-all}
DEC=("-b 16 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16"
     "-b 16 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f16"
     "-b 1 -h 32 --heads-kv 8 -q 1 -k 131072 -d 128 --dtype f16")
if [ "$what" = all ] || [ "$what" = perf ]; then
    {
    "$B" --suite decode --no-reference 2>&1 | tail -7
    for r in "${DEC[@]}"; do
        bench "default" -- $r --no-reference
        for s in 1 2 4 8 16 32; do bench "FA_CL_SPLITS=$s" FA_CL_SPLITS=$s -- $r --no-reference; done
        bench "FA_CL_GQA_PACK=0" FA_CL_GQA_PACK=0 -- $r --no-reference
        for t in 16x64x16 32x64x16 64x32x16 16x128x16; do bench "FA_CL_TILE=$t" FA_CL_TILE=$t -- $r --no-reference; done
        bench "page 16" -- $r --no-reference --page-size 16
        bench "page 256" -- $r --no-reference --page-size 256
        bench "ragged lens" -- $r --no-reference --cache-seqlens 1,4096,8192,777
        B="$BASE/tools/fa_cl_bench"; bench "base $(cat "$BASE/commit")" -- $r --no-reference; B="$BUILD/tools/fa_cl_bench"
    done
    # speculative decoding rows (Sq 4, 16, causal) and the check against the reference
    for r in "-b 16 -h 32 --heads-kv 8 -q 4 -k 8192 -d 128 --dtype f16 --causal" \
             "-b 16 -h 32 --heads-kv 8 -q 16 -k 8192 -d 128 --dtype f16 --causal"; do
        bench "default" -- $r --no-reference
        B="$BASE/tools/fa_cl_bench"; bench "base $(cat "$BASE/commit")" -- $r --no-reference; B="$BUILD/tools/fa_cl_bench"
    done
    # varlen prefill and chunked prefill (varlen q against a paged cache)
    bench "varlen" -- --varlen 512,4096,1000,2048,3000,77,4096,1500 -h 32 --heads-kv 8 -d 128 --dtype f16 --causal --no-reference
    bench "chunked prefill" -- --varlen 256,256,256,256 --varlen-k 8192,4096,2048,1024 -h 32 --heads-kv 8 -d 128 --dtype f16 --causal --page-size 16 --no-reference
    bench "check" -- -b 4 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16 --check
    bench "check f32" -- -b 4 -h 32 --heads-kv 8 -q 4 -k 4000 -d 128 --dtype f32 --causal --check
    # prefill: the kernels changed (row maps, split and paged builds): new against base
    for r in "-b 8 -h 16 -q 4096 -d 128 --dtype f16" "-b 8 -h 16 -q 4096 -d 64 --dtype f16" \
             "-b 8 -h 16 -q 4096 -d 128 --dtype f16 --causal" "-b 8 -h 16 -q 4096 -d 128 --dtype f32" \
             "-b 2 -h 16 -q 4096 -d 256 --dtype f16"; do
        bench "prefill new" -- $r --no-reference
        B="$BASE/tools/fa_cl_bench"; bench "prefill base $(cat "$BASE/commit")" -- $r --no-reference; B="$BUILD/tools/fa_cl_bench"
    done
    } 2>&1 | tee "$OUT/serving.txt"
    for r in "-b 16 -H 32 --hkv 8 -q 1 -k 8192" "-b 16 -H 32 --hkv 8 -q 1 -k 32768" "-b 1 -H 32 --hkv 8 -q 1 -k 131072" \
             "-b 16 -H 32 --hkv 8 -q 4 -k 8192 --causal" "-b 16 -H 32 --hkv 8 -q 16 -k 8192 --causal"; do
        python3 scripts/torch_sdpa_anchor.py $r -d 128 --dtype f16 2>&1 | grep -v -i warn
    done 2>&1 | tee "$OUT/torch.txt"
fi
if [ "$what" = all ] || [ "$what" = tests ]; then
    t0=$(date +%s)
    (cd /work/main && timeout 330 ctest --test-dir "$BUILD" -LE "install|offline|oclgrind|leaks" -j4 --output-on-failure 2>&1) \
        > "$OUT/ctest.txt"
    echo "ctest wall time: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/ctest.txt"
    grep -E "tests passed|tests failed|\*\*\*|Not Run|Skipped" "$OUT/ctest.txt" | tail -30
fi
