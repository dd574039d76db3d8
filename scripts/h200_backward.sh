#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The backward (issue 15) on the NVIDIA GPU host: fa_cl_bench --backward on the rows (B=8,
# H=16, N=4096; the small-N row), PyTorch's forward + backward on the same shapes in the same call,
# checks against the reference, and CTest. Run from the repo root with .gpu/ (../shared/gpu) and BUILD (default
# build-gpu); logs go to $OUT.
#   scripts/h200_backward.sh [rows | ctest]   (default rows: fa_cl, PyTorch, the checks)
. scripts/h200_common.sh
what=${1:-rows}
R="-b 8 -h 16 -q 4096 -k 4096"
SHAPES=("-d 128 --dtype f16" "-d 64 --dtype f16" "-d 128 --dtype f16 --causal" "-d 64 --dtype f16 --causal"
        "-d 128 --dtype bf16" "-d 128 --dtype f32" "-d 64 --dtype f32")
if [ "$what" = rows ]; then
{
for args in "${SHAPES[@]}"; do
    echo "== fa_cl_bench $R $args --backward"
    "$B" $R $args --backward --no-reference 2>&1 | tail -2
done
echo "== fa_cl_bench -b 64 -h 16 -q 512 -k 512 -d 128 --dtype f16 --backward"
"$B" -b 64 -h 16 -q 512 -k 512 -d 128 --dtype f16 --backward --no-reference 2>&1 | tail -2
echo "== checked against the reference backward"
"$B" -b 2 -h 8 -q 1024 -k 1024 -d 128 --dtype f16 --backward --check 2>&1 | tail -1
"$B" -b 2 -h 8 --heads-kv 2 -q 777 -k 1029 -d 64 --dtype bf16 --causal --backward --check 2>&1 | tail -1
"$B" -b 1 -h 4 -q 1000 -k 1000 -d 80 --dtype f16 --window 100,20 --backward --check 2>&1 | tail -1
"$B" -b 2 -h 8 --heads-kv 2 -q 777 -k 1029 -d 64 --dtype f32 --causal --backward --check 2>&1 | tail -1
} > "$OUT/rows.txt" 2>&1
{
for args in "${SHAPES[@]}"; do
    echo "== torch_sdpa_anchor.py -b 8 -H 16 -n 4096 $args --backward"
    python3 .gpu/torch_sdpa_anchor.py -b 8 -H 16 -n 4096 $args --backward 2>&1 | tail -5
done
echo "== torch_sdpa_anchor.py -b 64 -H 16 -n 512 -d 128 --dtype f16 --backward"
python3 .gpu/torch_sdpa_anchor.py -b 64 -H 16 -n 512 -d 128 --dtype f16 --backward 2>&1 | tail -5
} > "$OUT/torch.txt" 2>&1
cut -c1-300 "$OUT/rows.txt"; grep -E "^==|FLASH|CUDNN|EFFICIENT" "$OUT/torch.txt"
fi
if [ "$what" = ctest ]; then
    t0=$(date +%s)
    (timeout 420 ctest --test-dir "$BUILD" -LE "install|offline|oclgrind|leaks" -j4 --output-on-failure 2>&1) > "$OUT/ctest.txt"
    echo "ctest wall time: $(( $(date +%s) - t0 )) s" >> "$OUT/ctest.txt"
    grep -E "tests passed|\(Failed\)|wall time" "$OUT/ctest.txt"
fi
