#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on the NVIDIA GPU host for the engine semantics (issue 17): prefill with an attention
# mask (each type, the planner's 32-key blocks against 128 x 64), decoding against a q8_0 K/V
# cache beside f16 K/V, then the CTest suite. Run from the repo root with .gpu/ (../shared/gpu)
# and BUILD (default build-gpu); logs go to $OUT.
#   scripts/h200_engine.sh [rows | tests | all]   (default all)
. scripts/h200_common.sh
what=${1:-all}
R="-b 8 -h 16 -q 4096 -k 4096 -d 128 --dtype f16"
if [ "$what" != tests ]; then
{
bench "plain" -- $R --no-reference
for m in f16 bool f32; do bench "mask $m" -- $R --mask $m --no-reference; done
bench "mask bool 128x64 (before)" FA_CL_TILE=128x64x32 -- $R --mask bool --no-reference
bench "plain causal" -- $R --causal --no-reference
bench "mask f16 causal" -- $R --causal --mask f16 --no-reference
bench "mask f16 causal 128x64 (before)" FA_CL_TILE=128x64x32 -- $R --causal --mask f16 --no-reference
bench "mask f16 check" -- -b 2 -h 16 -q 1024 -k 1024 -d 128 --dtype f16 --mask f16 --check
D="-b 16 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f16"
bench "decode f16 kv" -- $D --no-reference
bench "decode q8_0 kv" -- $D --kv-dtype q8_0 --no-reference
bench "decode q8_0 check" -- -b 4 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16 --kv-dtype q8_0 --check
} > "$OUT/rows.txt" 2>&1
cut -c1-44,185-300 "$OUT/rows.txt"
fi
if [ "$what" != rows ]; then
    t0=$(date +%s)
    (timeout 290 ctest --test-dir "$BUILD" -LE "install|offline|oclgrind|leaks" -j4 --output-on-failure 2>&1) > "$OUT/ctest.txt"
    echo "ctest wall time: $(( $(date +%s) - t0 )) s" >> "$OUT/ctest.txt"
    grep -E "tests passed|\(Failed\)|wall time" "$OUT/ctest.txt"
fi
