#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# AMD's matrix instructions built natively (clang's AMDGPU builtins, no FA_AMD_MATRIX_EMULATE) by
# clang with ROCm's device libraries, as scripts/offline_compile.sh builds for AMD:
#   1. cl/fa_amd_matrix.cl through its check kernel (tests/kernels/fa_amd_matrix_check.cl): WMMA
#      16x16x16 for gfx1100 (wave32), MFMA 32x32x8 and 16x16x16 for gfx90a and gfx942, f16 and bf16;
#   2. every amd-wmma / amd-mfma build the planner makes for the AMD profiles (fa_cl_info --profile
#      all --emit) in the cases offline_compile.sh builds by default, or (--cases all) in every case
#      of tools/fa_cl_info_emit.c (about 200 builds, minutes).
# Prints per build the instructions the assembly holds (v_wmma_* / v_mfma_*), its registers and its
# scratch; fails if a build fails, holds none of its instruction, or uses scratch (a spill).
#
#   scripts/amd_matrix_offline_check.sh [--fa-cl-info PATH] [--keep DIR] [--cases LIST|all]
#
# Exit: 0 all built with their instructions and no scratch; 1 otherwise; 77 no clang or device libraries.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
info="$root/build/tools/fa_cl_info"
keep=""
cases="dense,serving-paged,serving-varlen"
while [ $# -gt 0 ]; do
    case "$1" in
    --fa-cl-info) info=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    *) echo "usage: $0 [--fa-cl-info PATH] [--keep DIR] [--cases LIST|all]" >&2; exit 2 ;;
    esac
done
CLANG=""
for c in clang-19 clang-18 clang-17 clang; do
    if command -v "$c" >/dev/null 2>&1; then CLANG=$c; break; fi
done
bitcode=""
for d in "${ROCM_DEVICE_LIB_PATH:-}" /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /usr/lib/amdgcn/bitcode /opt/rocm/amdgcn/bitcode; do
    if [ -n "$d" ] && [ -f "$d/ocml.bc" ]; then bitcode=$d; break; fi
done
if [ -z "$CLANG" ] || [ -z "$bitcode" ] || [ ! -x "$info" ]; then
    echo "SKIP: clang (15 or newer), rocm-device-libs and fa_cl_info are needed"
    exit 77
fi
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
# the device libraries, with the ISA-version bitcode older packages lack (as offline_compile.sh)
overlay="$work/bitcode"
mkdir -p "$overlay"
ln -sf "$bitcode"/*.bc "$overlay"/
for v in 1100 90a 942; do
    if [ ! -f "$overlay/oclc_isa_version_$v.bc" ]; then
        major=${v:0:${#v}-2}; minor=${v: -2:1}; step=${v: -1}
        printf 'target triple = "amdgcn-amd-amdhsa"\n@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 %d, align 4\n' \
            "$((major * 1000 + minor * 100 + 16#$step))" >"$work/isa_$v.ll"
        "$CLANG" -target amdgcn-amd-amdhsa -nogpulib -c -emit-llvm -x ir "$work/isa_$v.ll" -o "$overlay/oclc_isa_version_$v.bc"
    fi
done
status=0
# build <name> <target> <source> <options> <instruction pattern>: one line of the table
build() {
    local name=$1 target=$2 src=$3 opts=$4 want=$5 s="$work/$1.s"
    # shellcheck disable=SC2086 # the options are a word list
    if ! "$CLANG" -x cl $opts -target amdgcn-amd-amdhsa -mcpu="$target" -O3 -S -o "$s" \
            --rocm-device-lib-path="$overlay" "$src" >"$work/$name.log" 2>&1; then
        printf '| %s | %s | FAIL (%s) |\n' "$name" "$target" "$(grep -m1 error "$work/$name.log" || true)"
        status=1
        return
    fi
    local n line
    n=$(grep -cE "^\s*$want" "$s" || true)
    line=$(awk -v n="$n" '
        $1 == ".vgpr_count:" && $2 > v { v = $2 } $1 == ".agpr_count:" && $2 > a { a = $2 }
        $1 == ".private_segment_fixed_size:" && $2 > p { p = $2 }
        END { printf "%d matrix instructions, VGPR %d, AGPR %d, scratch %d B", n, v, a, p }' "$s")
    case "$line" in 0\ *|*"scratch "[1-9]*) status=1 ;; esac
    printf '| %s | %s | %s |\n' "$name" "$target" "$line"
}
printf '| build | target | result |\n|---|---|---|\n'
cat "$root/cl/fa_amd_matrix.cl" "$root/tests/kernels/fa_amd_matrix_check.cl" >"$work/check.cl"
for cfg in "1 gfx1100 v_wmma_f32_16x16x16_" "2 gfx90a v_mfma_f32_32x32x8" "3 gfx90a v_mfma_f32_16x16x16" \
           "2 gfx942 v_mfma_f32_32x32x8" "3 gfx942 v_mfma_f32_16x16x16"; do
    read -r kind target want <<<"$cfg"
    for bf16 in 0 1; do
        wave=$([ "$kind" = 1 ] && echo 32 || echo 64)
        build "check_${kind}_${target}_$bf16" "$target" "$work/check.cl" \
            "-cl-std=CL1.2 -DFA_AMD_MATRIX=$kind -DFA_AMD_BF16=$bf16 -DFA_AMD_WG=$((2 * wave))" "$want"
    done
done
mkdir -p "$work/emit"
"$info" --profile all --emit "$work/emit" >/dev/null
# builds.tsv: profile compiler target variant ... source (11) options (12) ... case (14); one build
# per distinct line
awk -F'\t' -v want=",$cases," 'NR > 1 && $2 == "amdgcn" && ($4 == "amd-wmma" || $4 == "amd-mfma") &&
        (want == ",all," || index(want, "," $14 ",")) { print $3 "\t" $4 "\t" $11 "\t" $12 }' \
    "$work/emit/builds.tsv" | sort -u >"$work/amd_builds.tsv"
i=0
while IFS=$'\t' read -r target variant src opts; do
    want=$([ "$variant" = amd-wmma ] && echo v_wmma_f32_16x16x16_ || echo v_mfma_f32_32x32x8)
    build "plan${i}_${variant}" "$target" "$work/emit/$src" "$opts" "$want"
    i=$((i + 1))
done <"$work/amd_builds.tsv"
[ "$i" -gt 0 ] || { echo "no amd-wmma / amd-mfma build planned for the AMD profiles"; status=1; }
exit $status
