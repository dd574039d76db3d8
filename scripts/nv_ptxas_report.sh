#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Registers, spills and shared memory of a kernel for an NVIDIA GPU without one: clang's NVPTX
# back end (with libclc's OpenCL built-ins) writes PTX, and ptxas from NVIDIA's PyPI wheel
# (nvidia-cuda-nvcc-cu12) assembles it for sm_90 with -v. A proxy, not NVIDIA's OpenCL compiler:
# on the tiled kernel 64x32x4x4 at d=128 it gives 188 registers (the H200's driver: 168). Tuning
# without the H200; the H200 has the last word. Standalone ptxas refuses
# static shared memory above 48 KiB ("uses too much shared data") where NVIDIA's OpenCL driver
# accepted up to 200 KB (scripts/probe_local.c on an H200); the register report comes all the same.
#
#   scripts/nv_ptxas_report.sh KERNEL "-D options"
#     KERNEL: a name of the kernel registry (build/tools/fa_cl_info --kernels lists them, with their
#     files); options as fa_cl's planner writes them (fa_cl_info --emit shows them), e.g.
#     scripts/nv_ptxas_report.sh nvidia-mma "-DFA_DTYPE=1 -DHEAD_DIM=128 -DD_PAD=128 -DBLOCK_Q=64
#     -DBLOCK_KV=64 -DWARP_ROWS=16 -DFA_ALIGNED16"  (FA_UNROLL, FA_NATIVE_EXP added as on GPUs)
#     FA_CL_INFO: the fa_cl_info to ask (default build/tools/fa_cl_info)
#     A kernel built with cl/fa_nv_wgmma.cl (nvidia-wgmma) goes through the library's sm_90a step as
#     a proxy: -DFA_PTX_SM90A=1, `.target sm_90a`, its `// @sm90a` lines un-commented (what
#     src/program/ptx_retarget.c does, without its checks), ptxas -arch=sm_90a; the report then says
#     whether ptxas serialises wgmma.
#
# Needs clang-15 and libclc-15 (apt-get install clang-15 libclc-15), and downloads the wheel once
# into ${FA_CL_PTXAS_DIR:-$HOME/.cache/fa_cl/ptxas} (pip download; about 40 MB).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ $# -eq 2 ] || { sed -n 3,17p "$0" >&2; exit 2; }
registry=$("${FA_CL_INFO:-build/tools/fa_cl_info}" --kernels)
files=$(awk -F'\t' -v k="$1" '$1 == k { print $5 }' <<<"$registry")
if [ -z "$files" ]; then
    echo "nv_ptxas_report.sh: '$1' is not a kernel of the registry: $(cut -f1 <<<"$registry" | tr '\n' ' ')" >&2
    exit 2
fi
CLANG=${CLANG:-clang-15}
LIBCLC=${LIBCLC:-/usr/lib/clc/nvptx64--nvidiacl.bc}
for need in "$CLANG" "$LIBCLC"; do
    command -v "$need" >/dev/null 2>&1 || [ -f "$need" ] || { echo "nv_ptxas_report.sh: $need missing (apt-get install clang-15 libclc-15)" >&2; exit 1; }
done
dir=${FA_CL_PTXAS_DIR:-$HOME/.cache/fa_cl/ptxas}
ptxas=$(find "$dir" -name ptxas -type f 2>/dev/null | head -1 || true)
if [ -z "$ptxas" ]; then
    mkdir -p "$dir"
    python3 -m pip download nvidia-cuda-nvcc-cu12 --no-deps -q -d "$dir"
    (cd "$dir" && python3 -m zipfile -e nvidia_cuda_nvcc_cu12-*.whl x)
    ptxas=$(find "$dir" -name ptxas -type f | head -1)
    chmod +x "$ptxas"
fi
work=$(mktemp -d /tmp/fa_cl_ptxas.XXXXXX)
trap 'rm -rf "$work"' EXIT
for f in $files; do cat "cl/$f"; done > "$work/k.cl"
arch=sm_90 extra=
if grep -qw fa_nv_wgmma.cl <<<"$files"; then arch=sm_90a extra=-DFA_PTX_SM90A=1; fi
# asm: OpenCL C has no GNU keyword; the built-ins libclc leaves to libdevice map to PTX instructions
# shellcheck disable=SC2086
"$CLANG" -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Xclang -finclude-default-header \
    -Xclang -mlink-bitcode-file -Xclang "$LIBCLC" -Wno-linker-warnings -O3 -S -o "$work/k.ptx" \
    -Dasm=__asm__ -Dnative_exp2=__nvvm_ex2_approx_f -Dlog2=__nvvm_lg2_approx_f -Dexp2=__nvvm_ex2_approx_f \
    $2 -DFA_UNROLL -DFA_NATIVE_EXP $extra "$work/k.cl"
sed -i 's/^\.target sm_[0-9]*/.target sm_90/; s/^\.version [0-9.]*/.version 8.3/' "$work/k.ptx"
if [ $arch = sm_90a ]; then
    sed -i 's/^\.target sm_90/.target sm_90a/; s|^\([[:space:]]*\)// @sm90a |\1|' "$work/k.ptx"
    # FA_WG_MAXNREG: the entry's .maxnreg (setmaxnreg needs it), as the library's program.c passes it
    maxnreg=$(sed -n 's/.*-DFA_WG_MAXNREG=\([0-9]*\).*/\1/p' <<<"$2")
    if [ -n "$maxnreg" ]; then
        awk -v n="$maxnreg" '/^\.entry/ { e = 1 } e && /^\{/ { print ".maxnreg " n; e = 0 } { print }' "$work/k.ptx" > "$work/m.ptx"
        mv "$work/m.ptx" "$work/k.ptx"
    fi
fi
"$ptxas" -arch=$arch -v "$work/k.ptx" -o "$work/k.cubin" 2>&1 | grep -E "fa_forward|registers|spill|error|wgmma" |
    sed 's/^ptxas info *: //'
