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
#
# Every NVIDIA build of an emitted set (fa_cl_info --profile all --emit DIR), one line per build and
# kernel entry, sorted by the build's key, in a form two runs diff:
#   profile case head_dim dtype launch variant entry: registers R, stack S, spill stores T, spill loads L
#
#   scripts/nv_ptxas_report.sh --driver DIR [--profile P] [--cases a,b] [--jobs N] [--report PATH]
#                              [--dry-run]
#     on the GPU host: NVIDIA's own OpenCL compiler through the library's build path (the sm_90a
#     retargeting included, -cl-nv-verbose), the registers the device runs with
#     (build/scripts/fa_cl_nv_build_report; --report names another build of it; --dry-run lists
#     the programs it would build, no device needed). No network needed.
#   scripts/nv_ptxas_report.sh --emitted DIR [--profile P] [--cases a,b]
#     the proxy above (clang's PTX through ptxas) for each distinct build, no GPU needed.
#   --profile: the builds planned for that profile (default nvidia-h100); --cases: only those cases
#   of tools/fa_cl_info_emit.c (all NVIDIA builds: about 250 distinct programs).
#
# Before / after a refactoring (issue 45): scripts/check_kernel_tokens.py BASE_REV leaves BASE's set
# in ~/.cache/fa_cl/kernel_tokens/<commit>/emit (or: fa_cl_info --profile all --emit at BASE); emit
# the working tree's (build/tools/fa_cl_info --profile all --emit DIR), take both to the GPU host,
# and diff the two reports. The sources are read from each DIR, so one build of this tree reports
# on both.
set -euo pipefail
export LC_ALL=C # the reports sort and diff byte-wise
cd "$(dirname "${BASH_SOURCE[0]}")/.."
usage() { sed -n 3,44p "$0" >&2; exit 2; }

# --driver / --emitted: the arguments after the directory
emitted_args() {
    profile=nvidia-h100 cases="" jobs=4 report=build/scripts/fa_cl_nv_build_report dry_run=""
    while [ $# -gt 0 ]; do
        case "$1" in
        --profile) profile=$2; shift 2 ;;
        --cases) cases=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --report) report=$2; shift 2 ;;
        --dry-run) dry_run=--dry-run; shift ;;
        *) echo "nv_ptxas_report.sh: unknown option $1" >&2; usage ;;
        esac
    done
}

# The emitted set's builds of $profile (vendor families: column 13; cases: column 14), as
# "key<TAB>source<TAB>program options<TAB>sm90a", sorted by key.
emitted_builds() {
    local dir=$1
    [ -f "$dir/builds.tsv" ] || { echo "nv_ptxas_report.sh: no $dir/builds.tsv (fa_cl_info --profile all --emit DIR)" >&2; exit 2; }
    head -1 "$dir/builds.tsv" | grep -q $'\tprogram_options\tsm90a$' ||
        { echo "nv_ptxas_report.sh: $dir/builds.tsv predates its program_options column" >&2; exit 2; }
    awk -F'\t' -v p="$profile" -v c=",$cases," 'NR > 1 && $1 == p && $13 == 1 && (c == ",," || index(c, "," $14 ",")) {
        printf "%s %s %s %s %s %s\t%s\t%s\t%s\n", $1, $14, $5, $6, $15, $4, $11, $16, $17 }' "$dir/builds.tsv" |
        sort -t' ' -k1,2 -k3,3n -k4,5
}

if [ "${1:-}" = --driver ]; then
    [ $# -ge 2 ] || usage
    dir=$2; shift 2; emitted_args "$@"
    emitted_builds "$dir" >/dev/null
    [ -x "$report" ] || { echo "nv_ptxas_report.sh: $report is not built (cmake --build build --target fa_cl_nv_build_report)" >&2; exit 2; }
    exec "$report" "$dir" --profile "$profile" ${cases:+--cases "$cases"} --jobs "$jobs" $dry_run
fi
if [ "${1:-}" != --emitted ]; then
    [ $# -eq 2 ] || usage
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

# proxy_build SOURCE OPTIONS SM90A: ptxas -v's lines for the PTX clang writes for SOURCE
proxy_build() {
    local src=$1 opts=$2 sm90a=$3 arch=sm_90 extra=
    if [ "$sm90a" = 1 ]; then arch=sm_90a extra=-DFA_PTX_SM90A=1; fi
    # asm: OpenCL C has no GNU keyword; the built-ins libclc leaves to libdevice map to PTX instructions
    # shellcheck disable=SC2086
    "$CLANG" -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Xclang -finclude-default-header \
        -Xclang -mlink-bitcode-file -Xclang "$LIBCLC" -Wno-linker-warnings -O3 -S -o "$work/k.ptx" \
        -Dasm=__asm__ -Dnative_exp2=__nvvm_ex2_approx_f -Dlog2=__nvvm_lg2_approx_f -Dexp2=__nvvm_ex2_approx_f \
        $opts -DFA_UNROLL -DFA_NATIVE_EXP $extra "$src"
    sed -i 's/^\.target sm_[0-9]*/.target sm_90/; s/^\.version [0-9.]*/.version 8.3/' "$work/k.ptx"
    if [ $arch = sm_90a ]; then
        sed -i 's/^\.target sm_90/.target sm_90a/; s|^\([[:space:]]*\)// @sm90a |\1|' "$work/k.ptx"
        # FA_WG_MAXNREG: the entry's .maxnreg (setmaxnreg needs it), as the library's program.c passes it
        local maxnreg
        maxnreg=$(sed -n 's/.*-DFA_WG_MAXNREG=\([0-9]*\).*/\1/p' <<<"$opts")
        if [ -n "$maxnreg" ]; then
            awk -v n="$maxnreg" '/^\.entry/ { e = 1 } e && /^\{/ { print ".maxnreg " n; e = 0 } { print }' "$work/k.ptx" > "$work/m.ptx"
            mv "$work/m.ptx" "$work/k.ptx"
        fi
    fi
    "$ptxas" -arch=$arch -v "$work/k.ptx" -o "$work/k.cubin" 2>&1
}

if [ "$1" = --emitted ]; then
    [ $# -ge 2 ] || usage
    dir=$2; shift 2; emitted_args "$@"
    declare -A done_builds=()
    while IFS=$'\t' read -r key src opts sm90a; do
        id="$src|$opts|$sm90a"
        if [ -z "${done_builds[$id]:-}" ]; then
            # one report line per entry: the format of fa_cl_nv_build_report
            done_builds[$id]=$(proxy_build "$dir/$src" "$opts" "$sm90a" | awk '
                /Compiling entry function/ { match($0, /\x27[^\x27]*\x27/); e = substr($0, RSTART + 1, RLENGTH - 2); st = sp = ld = -1 }
                /bytes stack frame/ { st = $1; sp = $5; ld = $9 }
                /Used [0-9]+ registers/ && e != "" { match($0, /Used [0-9]+/); printf "%s: registers %d, stack %d, spill stores %d, spill loads %d\n", e, substr($0, RSTART + 5, RLENGTH - 5), st, sp, ld; e = "" }
                /error/ { print "build failed: " $0 }')
            [ -n "${done_builds[$id]}" ] || done_builds[$id]="no report"
        fi
        while IFS= read -r line; do printf '%s %s\n' "$key" "$line"; done <<<"${done_builds[$id]}"
    done < <(emitted_builds "$dir")
    exit 0
fi

registry=$("${FA_CL_INFO:-build/tools/fa_cl_info}" --kernels)
files=$(awk -F'\t' -v k="$1" '$1 == k { print $5 }' <<<"$registry")
if [ -z "$files" ]; then
    echo "nv_ptxas_report.sh: '$1' is not a kernel of the registry: $(cut -f1 <<<"$registry" | tr '\n' ' ')" >&2
    exit 2
fi
for f in $files; do cat "cl/$f"; done > "$work/k.cl"
sm90a=0
if grep -qw fa_nv_wgmma.cl <<<"$files"; then sm90a=1; fi
proxy_build "$work/k.cl" "$2" "$sm90a" | grep -E "fa_forward|registers|spill|error|wgmma" | sed 's/^ptxas info *: //'
