#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The data of the README's picture, on the NVIDIA GPU host: fa_cl_bench's full suite (d 64/128,
# N 512..16384 at B*H*N = 8*16*4096, causal on/off, f32/f16, fused and the CLBlast reference) as
# JSON, and PyTorch's SDPA backends on the f16 shapes (scripts/torch_sdpa_anchor.py --json), in the
# same call. Then, anywhere: python -m fa_cl.plot $OUT/bench.json $OUT/torch_*.json -o bench.png
#   OUT=... scripts/h200_plot.sh   (BUILD: default build-gpu)
set -u
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-/tmp/fa_cl_out}
mkdir -p "$OUT"
. .gpu/nvidia-opencl-env.sh
"$BUILD/tools/fa_cl_bench" --suite full --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt" | tail -3
for d in 64 128; do
    for n in 512 1024 2048 4096 8192 16384; do
        b=$(( 8 * 16 * 4096 / n / 16 ))
        for c in "" --causal; do
            python3 scripts/torch_sdpa_anchor.py -b $b -H 16 -n $n -d $d --dtype f16 $c \
                --json "$OUT/torch_f16_d${d}_n${n}${c:+_causal}.json" 2>&1 | grep -E "^#|FLASH|CUDNN"
        done
    done
done 2>&1 | tee "$OUT/torch.txt"
