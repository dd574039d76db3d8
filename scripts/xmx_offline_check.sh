#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cl/fa_xmx.cl built natively (the real intrinsics, no FA_XMX_EMULATE) by Intel's offline compiler,
# through its check kernel (tests/kernels/fa_xmx_check.cl): dg2 at sub-group 8, pvc at sub-group
# 16, f16 and bf16, M = 1, 2, 4, 8. Prints per build the register file, SIMD width, whether the
# kernel holds DPAS (.ze_info has_dpas) and the spill bytes; fails if a build fails, lacks DPAS or
# spills.
#
#   scripts/xmx_offline_check.sh [--keep DIR]
#
# The packaged ocloc (intel-opencl-icd 22.43 on Debian 12) compiles for dg2 and pvc but does not
# yet report cl_intel_subgroup_matrix_multiply_accumulate to its front end, whose header declares
# the intrinsics only under that macro: the check defines it (-D), as a driver that has the
# extension does itself. Exit: 0 all built with DPAS and no spill; 1 otherwise; 77 no ocloc.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
keep=""
if [ "${1:-}" = "--keep" ] && [ -n "${2:-}" ]; then keep=$2; fi
if ! command -v ocloc >/dev/null 2>&1 || ! command -v readelf >/dev/null 2>&1; then
    echo "SKIP: ocloc (intel-opencl-icd) and readelf (binutils) are needed"
    exit 77
fi
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
cat "$root/cl/fa_xmx.cl" "$root/tests/kernels/fa_xmx_check.cl" >"$work/k.cl"
status=0
printf '| target | sub-group | type | M | result |\n|---|---|---|---|---|\n'
for target in "dg2 8" "pvc 16"; do
    read -r dev sg <<<"$target"
    for bf16 in 0 1; do
        for m in 1 2 4 8; do
            dir="$work/${dev}_${bf16}_$m"
            mkdir -p "$dir"
            type=$([ "$bf16" = 1 ] && echo bf16 || echo f16)
            opts="-cl-std=CL1.2 -Dcl_intel_subgroup_matrix_multiply_accumulate -DFA_XMX_SG=$sg -DFA_XMX_M=$m"
            opts="$opts -DFA_XMX_BF16=$bf16 -DFA_XMX_WG=$((2 * sg))"
            if ! ocloc compile -file "$work/k.cl" -device "$dev" -out_dir "$dir" -output k -output_no_suffix \
                    -internal_options "-cl-intel-allow-zebin" -options "$opts" >"$dir/log.txt" 2>&1 ||
                    [ ! -f "$dir/k" ]; then
                printf '| %s | %s | %s | %s | FAIL (%s) |\n' "$dev" "$sg" "$type" "$m" "$(grep -m1 error "$dir/log.txt" || true)"
                status=1
                continue
            fi
            read -r off size < <(readelf -S -W "$dir/k" | awk '{ for (i = 1; i <= NF; i++) if ($i == ".ze_info") print $(i + 3), $(i + 4) }')
            dd if="$dir/k" of="$dir/ze_info.yaml" bs=1 skip=$((0x$off)) count=$((0x$size)) status=none
            spill=$(sed -n 's/.*spilled around \([0-9]*\).*/\1/p' "$dir/log.txt" | sort -n | tail -1)
            line=$(awk -v spill="${spill:-0}" '
                $1 == "grf_count:" { grf = $2 } $1 == "simd_size:" { simd = $2 } $1 == "has_dpas:" { dpas = $2 }
                END { printf "GRF %d, SIMD%d, DPAS %s, spill %d B", grf, simd, dpas == "true" ? "yes" : "no", spill }' \
                "$dir/ze_info.yaml")
            case "$line" in *"DPAS yes, spill 0 B"*) ;; *) status=1 ;; esac
            printf '| %s | %s | %s | %s | %s |\n' "$dev" "$sg" "$type" "$m" "$line"
        done
    done
done
exit $status
