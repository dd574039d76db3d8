#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tensor-core forward's tile sweep (issue 14) on the NVIDIA GPU host: for each of the issue's
# rows, fa_cl_bench at the planner's default and at each tile of the sweep (FA_CL_TILE=BrxBcxW),
# one table row per shape with TFLOP/s per tile and the best marked, so the planner's constants
# (src/kernels/nvidia_mma.c) can be checked against it; PyTorch's SDPA on the same shapes after it,
# in the same call. Run from the repo root with .gpu/ (../shared/gpu) and BUILD (default
# build-gpu); the table and the raw rows go to $OUT.
#   scripts/h200_mma_sweep.sh [--no-torch]
. scripts/h200_common.sh
TILES=(128x32x32 128x64x32 128x128x32 64x64x16 64x32x16 128x64x16 128x32x16)
SHAPES=("-b 8 -h 16 -q 4096 -k 4096 -d 128 --dtype f16" "-b 8 -h 16 -q 4096 -k 4096 -d 128 --dtype bf16"
        "-b 8 -h 16 -q 4096 -k 4096 -d 64 --dtype f16" "-b 8 -h 16 -q 4096 -k 4096 -d 128 --dtype f16 --causal"
        "-b 8 -h 16 -q 4096 -k 4096 -d 64 --dtype f16 --causal" "-b 2 -h 16 -q 4096 -k 4096 -d 256 --dtype f16"
        "-b 64 -h 16 -q 512 -k 512 -d 128 --dtype f16")
# TFLOP/s of one fa_cl_bench row (the third figure after the first '|'), or '-' if it failed
tflops() { env "$@" 2>/dev/null | tail -1 | awk -F'|' 'NF > 2 { split($2, f, " "); print f[3]; ok = 1 } END { if (!ok) print "-" }'; }
{
    printf '| shape | default (plan) |'
    printf ' %s |' "${TILES[@]}"
    printf '\n|---|---|'
    printf '%s' "${TILES[@]/*/---|}"
    printf '\n'
    for s in "${SHAPES[@]}"; do
        # shellcheck disable=SC2086
        row=$("$B" $s --no-reference 2>/dev/null | tail -1)
        plan=$(awk -F'|' '{ print $NF }' <<<"$row" | cut -d, -f1 | tr -d ' ')
        def=$(awk -F'|' 'NF > 2 { split($2, f, " "); print f[3] }' <<<"$row")
        best=$def best_t=default vals=()
        for t in "${TILES[@]}"; do
            # shellcheck disable=SC2086
            v=$(tflops FA_CL_TILE="$t" "$B" $s --no-reference)
            vals+=("$v")
            if [ "$v" != - ] && awk -v a="$v" -v b="${best:-0}" 'BEGIN { exit !(a > b) }'; then best=$v best_t=$t; fi
        done
        printf '| %s | %s (%s) |' "$s" "${def:--}" "${plan:--}"
        for i in "${!TILES[@]}"; do
            if [ "${TILES[$i]}" = "$best_t" ]; then printf ' **%s** |' "${vals[$i]}"; else printf ' %s |' "${vals[$i]}"; fi
        done
        printf '\n'
    done
} | tee "$OUT/mma_sweep.md"
if [ "${1:-}" != --no-torch ]; then
    for s in "${SHAPES[@]}"; do
        read -r _ b _ h _ q _ _ _ d _ dt rest <<<"$s"
        echo "== torch_sdpa_anchor.py -b $b -H $h -n $q -d $d --dtype $dt $rest"
        # shellcheck disable=SC2086
        python3 .gpu/torch_sdpa_anchor.py -b "$b" -H "$h" -n "$q" -d "$d" --dtype "$dt" $rest 2>&1 | grep -E "FLASH|CUDNN"
    done | tee "$OUT/mma_sweep_torch.txt"
fi
