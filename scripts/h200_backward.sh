#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One call on the NVIDIA GPU host for the backward (issue 15): fa_cl_bench --backward on the
# issue's rows (B=8, H=16, N=4096), PyTorch's forward + backward on the same shapes, then the
# backward's CTest tests (or all of them). Run from the repo root with .gpu/ (../shared/gpu) and
# BUILD (default build-gpu); logs go to $OUT.
#   scripts/h200_backward.sh [rows | torch | tests | ctest | all]   (default all: rows, torch, tests)
. scripts/h200_common.sh
what=${1:-all}
R="-b 8 -h 16 -q 4096 -k 4096"
rows() {
    for args in "-d 128 --dtype f16" "-d 64 --dtype f16" "-d 128 --dtype f16 --causal" "-d 128 --dtype bf16" \
                "-d 128 --dtype f32" "-d 64 --dtype f32"; do
        echo "== fa_cl_bench $R $args --backward"
        "$B" $R $args --backward --no-reference --reps 10 --warmup 2 2>&1 | tail -2
    done
    echo "== checked against the reference backward"
    "$B" -b 2 -h 8 -q 1024 -k 1024 -d 128 --dtype f16 --backward --check 2>&1 | tail -2
    "$B" -b 2 -h 8 --heads-kv 2 -q 777 -k 1029 -d 64 --dtype f32 --causal --backward --check 2>&1 | tail -2
}
torch() {
    for args in "-d 128 --dtype f16" "-d 64 --dtype f16" "-d 128 --dtype f16 --causal" "-d 128 --dtype bf16" \
                "-d 128 --dtype f32" "-d 64 --dtype f32"; do
        echo "== torch_sdpa_anchor.py -b 8 -H 16 -n 4096 $args --backward"
        python3 .gpu/torch_sdpa_anchor.py -b 8 -H 16 -n 4096 $args --backward 2>&1 | tail -6
    done
}
case "$what" in
rows) rows > "$OUT/rows.txt" 2>&1; cat "$OUT/rows.txt" ;;
torch) torch > "$OUT/torch.txt" 2>&1; cat "$OUT/torch.txt" ;;
esac
if [ "$what" = all ]; then
    rows > "$OUT/rows.txt" 2>&1
    torch > "$OUT/torch.txt" 2>&1
    cut -c1-400 "$OUT/rows.txt"; cat "$OUT/torch.txt"
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
    (timeout 200 ctest --test-dir "$BUILD" -R "backward" -j4 --output-on-failure 2>&1) > "$OUT/ctest-backward.txt"
    grep -E "tests passed|\(Failed\)|\[FAIL\]" "$OUT/ctest-backward.txt" | head -20
fi
if [ "$what" = ctest ]; then
    t0=$(date +%s)
    (timeout 290 ctest --test-dir "$BUILD" -LE "install|offline|oclgrind|leaks" -j4 --output-on-failure 2>&1) > "$OUT/ctest.txt"
    echo "ctest wall time: $(( $(date +%s) - t0 )) s" >> "$OUT/ctest.txt"
    grep -E "tests passed|\(Failed\)|wall time" "$OUT/ctest.txt"
fi
