#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Offline compile checks: every kernel build the planner picks for the device profiles
# (fa_cl_info --profile all --emit), compiled with exactly the library's build options by the
# vendors' own offline compilers, and by clang's generic OpenCL C 1.2 front end (SPIR).
#
#   scripts/offline_compile.sh [--fa-cl-info PATH] [--compilers intel,amd,spir] [--jobs N]
#                            [--clang CLANG] [--markdown FILE] [--keep DIR] [--cases LIST|all]
#
# --cases: the cases of fa_cl_info --emit (tools/fa_cl_info_emit.c) to compile, comma-separated;
# default dense,serving-paged,serving-varlen (every family's plain build and the serving builds
# with every option at once); all: every case (about ten times the builds).
# Intel: ocloc (Debian: intel-opencl-icd), -device dg2 / pvc / tgllp.
# AMD:   the newest clang (clang-19 on Debian 12) -target amdgcn-amd-amdhsa -mcpu=gfx1100 / gfx90a, -O3, with ROCm's device
#        libraries (Debian: rocm-device-libs), as ROCm's OpenCL compiles (--clang picks another).
# SPIR:  clang -target spir / spir64 with every extension switched off (-cl-ext=-all), -Werror.
# Builds: head_dim 64, 128, 256 x f32, f16, bf16; causal masks and windows are kernel arguments,
# not build options, so one build serves both (fa_cl__tile_request has no mask field). Identical
# builds (same target, source and options) are compiled once.
#
# Spills: Intel, the bytes IGC reports spilled per hardware thread ("spilled around N"); AMD, the
# scratch bytes per work-item (the kernels keep no private arrays once unrolled). A spill fails the
# run unless scripts/offline_spills.txt allows that target, variant and head_dim (with the reason,
# which docs/portability.md explains).
#
# Exit: 0 all compiled without unexplained spills; 1 a compile failed, a kernel needs more local
# memory than its budget, or a spill is not allowed, or FA_CL_REQUIRE_OFFLINE=1 and a requested
# compiler is not installed; 2 usage; 77 none of the requested compilers is installed (CTest reports a
# skip). .ci/run sets FA_CL_REQUIRE_OFFLINE=1 where the distribution packages them all (Debian 12).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

info="$root/build/tools/fa_cl_info"
CLANG=${CLANG:-} # the environment passes it on to the parallel jobs
want="intel,amd,spir"
jobs=1
markdown=""
keep=""
cases="dense,serving-paged,serving-varlen"
while [ $# -gt 0 ]; do
    case "$1" in
    --fa-cl-info) info=$2; shift 2 ;;
    --compilers) want=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --markdown) markdown=$2; shift 2 ;;
    --clang) CLANG=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --job) break ;; # internal: one build, run by xargs
    -h|--help) sed -n '3,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "offline_compile.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

# ---- compilers ---------------------------------------------------------------------------------

# The newest clang first: ROCm 6's compiler is LLVM 17..19 based, and LLVM 15 spills where it does not.
find_clang() {
    local c
    for c in clang-21 clang-20 clang-19 clang-18 clang-17 clang-16 clang-15 clang; do
        if command -v "$c" >/dev/null 2>&1; then echo "$c"; return 0; fi
    done
    return 1
}

# ROCm's device library directory (opencl.bc, ocml.bc, ockl.bc, oclc_*.bc).
find_rocm_bitcode() {
    local d
    for d in "${ROCM_DEVICE_LIB_PATH:-}" /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /usr/lib/amdgcn/bitcode \
             /opt/rocm/amdgcn/bitcode /opt/rocm/lib/llvm/lib/clang/*/lib/amdgcn/bitcode; do
        if [ -n "$d" ] && [ -f "$d/ocml.bc" ] && [ -f "$d/opencl.bc" ]; then echo "$d"; return 0; fi
    done
    return 1
}

# ---- one build (run in parallel by xargs) -------------------------------------------------------

# field <line> <n>: the n-th tab-separated field
field() { printf '%s\n' "$1" | cut -f"$2"; }

# Intel: ocloc with the library's options; -internal_options only selects the zebin container, whose
# .ze_info section states the register file, SIMD width, SLM and scratch (spill) sizes per kernel.
job_intel() {
    local dir=$1 target=$2 src=$3 opts=$4
    local log="$dir/log.txt" bin="$dir/k"
    # the XMX intrinsics (cl/fa_xmx.cl): the packaged ocloc 22.43 compiles them for dg2 and pvc but
    # does not define the extension's macro, which a driver that reports it does
    # (scripts/xmx_offline_check.sh, docs/portability.md)
    case " $opts " in *" -DFA_XMX_SG="*) opts="$opts -Dcl_intel_subgroup_matrix_multiply_accumulate" ;; esac
    if ! ocloc compile -file "$src" -device "$target" -out_dir "$dir" -output k -output_no_suffix \
            -internal_options "-cl-intel-allow-zebin" -options "$opts" >"$log" 2>&1 || [ ! -f "$bin" ]; then
        echo "FAIL"
        return
    fi
    local spill off size
    # a program of several kernels (the backward's three): the most any of them spills
    spill=$(sed -n 's/.*spilled around \([0-9]*\).*/\1/p' "$log" | sort -n | tail -1)
    read -r off size < <(readelf -S -W "$bin" | awk '{ for (i = 1; i <= NF; i++) if ($i == ".ze_info") print $(i + 3), $(i + 4) }')
    dd if="$bin" of="$dir/ze_info.yaml" bs=1 skip=$((0x$off)) count=$((0x$size)) status=none
    # an XMX build without the matrix instruction would be the scalar emulation of nothing: a failure
    if [[ " $opts " == *" -DFA_XMX_SG="* ]] && ! grep -q 'has_dpas: *true' "$dir/ze_info.yaml"; then
        echo "an XMX build (FA_XMX_SG) without DPAS" >>"$log"
        echo "FAIL"
        return
    fi
    awk -v spill="${spill:-0}" '
        /^kernels_misc_info:/ { ink = 0 }
        /^  - name:/ { ink = ($3 ~ /^fa_/) } # every kernel of the program: the largest of each
        ink && $1 == "grf_count:" && $2 > grf { grf = $2 }
        ink && $1 == "simd_size:" { simd = $2 }
        ink && $1 == "has_dpas:" && $2 == "true" { dpas = ", DPAS" }
        ink && $1 == "slm_size:" && $2 > slm { slm = $2 }
        ink && $1 == "usage:" { usage = $2 }
        ink && $1 == "size:" && usage != "" { if ($2 > buf[usage]) buf[usage] = $2; usage = "" }
        END {
            printf "OK\tGRF %d, SIMD%d%s\t%d\t%d\t%d\tper SIMD%d thread; private %d B\n", grf, simd, dpas, spill,
                   buf["spill_fill_space"] + 0, slm, simd, buf["private_space"] + 0
        }' "$dir/ze_info.yaml"
}

# AMD: clang as ROCm's OpenCL runs it (device libraries linked, -O3); the assembly's metadata
# states registers, spills, scratch and LDS per kernel.
job_amd() {
    local dir=$1 target=$2 src=$3 opts=$4
    local log="$dir/log.txt" s="$dir/k.s"
    # shellcheck disable=SC2086 # the options are a word list, as clBuildProgram splits them
    if ! "$CLANG" -x cl $opts -target amdgcn-amd-amdhsa -mcpu="$target" -O3 -S -o "$s" \
            --rocm-device-lib-path="$AMD_BITCODE" "$src" >"$log" 2>&1; then
        echo "FAIL"
        return
    fi
    # the code-object metadata and the assembler comments; a program of several kernels (the
    # backward's three): the largest of each, the lowest occupancy
    awk '
        $1 == ".vgpr_count:" && $2 > v { v = $2 }
        $1 == ".sgpr_count:" && $2 > sg { sg = $2 }
        $1 == ".agpr_count:" && $2 > ag { ag = $2 }
        $1 == ".vgpr_spill_count:" && $2 > vs { vs = $2 }
        $1 == ".sgpr_spill_count:" && $2 > ss { ss = $2 }
        $1 == ".private_segment_fixed_size:" && $2 > priv { priv = $2 }
        $1 == ".group_segment_fixed_size:" && $2 > lds { lds = $2 }
        $1 == ".wavefront_size:" { wave = $2 }
        /; Occupancy:/ && (occ == "" || $3 < occ) { occ = $3 }
        END {
            regs = sprintf("VGPR %d, SGPR %d", v, sg)
            if (ag != "") regs = regs sprintf(", AGPR %d", ag)
            # the kernels keep no private arrays once unrolled: any scratch is spill
            printf "OK\t%s\t%d\t%d\t%d\tper work-item; wave%d, occupancy %s, %d VGPR / %d SGPR spill slots\n",
                   regs, priv, priv, lds, wave, occ, vs, ss
        }' "$s"
}

# SPIR: the generic front end with every extension off, warnings are errors.
job_spir() {
    local dir=$1 target=$2 src=$3 opts=$4
    local log="$dir/log.txt"
    # shellcheck disable=SC2086
    if ! "$CLANG" -x cl $opts -target "$target" -Xclang -finclude-default-header -Xclang -cl-ext=-all \
            -Werror -Wall -Wextra -pedantic -emit-llvm -c -o "$dir/k.bc" "$src" >"$log" 2>&1; then
        echo "FAIL"
        return
    fi
    echo "OK	-	0	0	0	front end only, no extensions"
}

# No vendor identifier anywhere in a kernel source, every #if branch included (comments stripped,
# macros not expanded): clang accepts some vendor attributes without a word.
vendor_lint() {
    local src=$1
    cpp -fpreprocessed -dD -P "$src" 2>/dev/null | grep -v '^#line' |
        grep -nEi 'intel|amd|nvidia|_nv_|sub_?group|cl_khr|cl_ext|__opencl_c_|__attribute__ *\(\((vec_type_hint|work_group_size_hint|opencl_unroll_hint|intel|amdgpu|nv)' || true
}

run_job() {
    local id=$1 line dir
    line=$(sed -n "$((id + 1))p" "$WORK/jobs.tsv")
    dir="$WORK/job$id"
    mkdir -p "$dir"
    local kind target src opts result
    kind=$(field "$line" 2); target=$(field "$line" 3); src="$WORK/$(field "$line" 4)"; opts=$(field "$line" 5)
    result=$("job_$kind" "$dir" "$target" "$src" "$opts" 2>>"$dir/log.txt" || echo "FAIL")
    printf '%s\t%s\n' "$id" "$result" >"$dir/result.tsv"
}

if [ "${1:-}" = "--job" ]; then
    run_job "$2"
    exit 0
fi

# ---- the run ------------------------------------------------------------------------------------

if [ ! -x "$info" ]; then
    echo "offline_compile.sh: $info is not built (cmake --build build, or --fa-cl-info PATH)" >&2
    exit 2
fi

have=""
missing=""
CLANG=${CLANG:-$(find_clang || true)}
if [ -n "$CLANG" ] && ! command -v "$CLANG" >/dev/null 2>&1; then
    echo "offline_compile.sh: $CLANG not found"
    CLANG=""
fi
AMD_BITCODE=""
for c in ${want//,/ }; do
    case "$c" in
    intel)
        if command -v ocloc >/dev/null 2>&1 && command -v readelf >/dev/null 2>&1; then have="$have intel"
        else missing="$missing intel(ocloc from intel-opencl-icd, readelf from binutils)"; fi ;;
    amd)
        AMD_BITCODE=$(find_rocm_bitcode || true)
        if [ -n "$CLANG" ] && [ -n "$AMD_BITCODE" ]; then have="$have amd"
        else missing="$missing amd(clang-15 or newer, and rocm-device-libs)"; fi ;;
    spir)
        if [ -n "$CLANG" ]; then have="$have spir"; else missing="$missing spir(clang-15 or newer)"; fi ;;
    *) echo "offline_compile.sh: unknown compiler family '$c' (intel, amd, spir)" >&2; exit 2 ;;
    esac
done
if [ -n "$missing" ]; then
    if [ "${FA_CL_REQUIRE_OFFLINE:-}" = 1 ]; then
        echo "offline_compile.sh: FAILED: not installed:$missing"
        echo "FA_CL_REQUIRE_OFFLINE=1: this distribution packages them (scripts/setup.sh test-full installs them as root)"
        exit 1
    fi
    echo "offline_compile.sh: not installed, skipped:$missing"
fi
if [ -z "$have" ]; then
    echo "offline_compile.sh: SKIP: none of the requested compilers ($want) is installed"
    exit 77
fi

if [ -n "$keep" ]; then
    # a new or empty directory, or one of an earlier --keep (never wipe anything else)
    if [ -e "$keep" ] && [ -n "$(ls -A "$keep" 2>/dev/null)" ] && [ ! -f "$keep/builds.tsv" ]; then
        echo "offline_compile.sh: --keep $keep: not empty and not an earlier run's directory" >&2
        exit 2
    fi
    WORK=$keep
    rm -rf "$WORK"
    mkdir -p "$WORK"
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/fa_cl_offline.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi
export WORK CLANG AMD_BITCODE
"$info" --profile all --emit "$WORK" >/dev/null
# the sources of vendor-only families (the registry's vendor flag, column 13), of every case: the lint skips them
awk -F'\t' 'NR > 1 && $13 == 1 { print $11 }' "$WORK/builds.tsv" | sort -u >"$WORK/vendor_sources.txt"
if [ "$cases" != all ]; then # builds.tsv's column 14: the case of each build
    awk -F'\t' -v want=",$cases," 'NR == 1 || index(want, "," $14 ",")' "$WORK/builds.tsv" >"$WORK/builds.sel"
    mv "$WORK/builds.sel" "$WORK/builds.tsv"
fi

# ROCm device libraries come per target; 5.2 predates gfx1100: give clang the one-constant
# oclc_isa_version library that later ROCm releases ship for it (ISA version 11.0.0).
if [[ " $have " == *" amd "* ]]; then
    overlay="$WORK/amdgcn-bitcode"
    mkdir -p "$overlay"
    ln -s "$AMD_BITCODE"/*.bc "$overlay"/
    for t in $(awk -F'\t' 'NR > 1 && $2 == "amdgcn" {print $3}' "$WORK/builds.tsv" | sort -u); do
        v=${t#gfx}
        if [ ! -f "$overlay/oclc_isa_version_$v.bc" ]; then
            major=${v:0:${#v}-2}; minor=${v: -2:1}; step=${v: -1}
            printf 'target triple = "amdgcn-amd-amdhsa"\n@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 %d, align 4\n' \
                "$((major * 1000 + minor * 100 + 16#$step))" >"$WORK/isa_$v.ll"
            "$CLANG" -target amdgcn-amd-amdhsa -nogpulib -c -emit-llvm -x ir "$WORK/isa_$v.ll" \
                -o "$overlay/oclc_isa_version_$v.bc"
        fi
    done
    AMD_BITCODE=$overlay
fi

# Jobs: one per distinct (family, target, source, options). Lines: id family target source options.
# builds.tsv: profile compiler target variant head_dim dtype causal work_group local_bytes local_budget
# source options vendor_only (the registry's vendor flag) case launch
awk -F'\t' -v have=" $have " '
    NR == 1 { next }
    {
        fam = ($2 == "ocloc") ? "intel" : ($2 == "amdgcn") ? "amd" : ""
        if (fam != "" && index(have, " " fam " ")) add(fam, $3, $11, $12)
        # the generic front end checks the portable kernels; vendor-only ones (the vendor flag of the
        # registry, column 13: inline PTX) are not meant for it
        if (index(have, " spir ") && $13 != 1) { add("spir", "spir", $11, $12); add("spir", "spir64", $11, $12) }
    }
    function add(f, t, s, o,   key) {
        key = f SUBSEP t SUBSEP s SUBSEP o
        if (!(key in seen)) { seen[key] = n; printf "%d\t%s\t%s\t%s\t%s\n", n, f, t, s, o; n++ }
    }' "$WORK/builds.tsv" >"$WORK/jobs.tsv"
njobs=$(wc -l <"$WORK/jobs.tsv")
echo "offline_compile.sh: $njobs distinct builds for:$have (jobs: $jobs)"
if [[ " $have " == *" intel "* ]]; then
    echo "  intel: ocloc $(dpkg-query -W -f='${Version}' intel-opencl-icd 2>/dev/null || echo '(version unknown)')"
fi
if [[ " $have " == *" amd "* || " $have " == *" spir "* ]]; then
    echo "  clang: $("$CLANG" --version | head -1)"
fi
if [[ " $have " == *" amd "* ]]; then
    echo "  ROCm device libraries: $AMD_BITCODE ($(dpkg-query -W -f='rocm-device-libs ${Version}' rocm-device-libs 2>/dev/null || echo 'version unknown'))"
fi
start=$(date +%s)
seq 0 $((njobs - 1)) | xargs -P "$jobs" -I{} bash "${BASH_SOURCE[0]}" --job {}
cat "$WORK"/job*/result.tsv | sort -n >"$WORK/results.tsv"
echo "offline_compile.sh: compiled in $(($(date +%s) - start)) s"

lint_rc=0
if [[ " $have " == *" spir "* ]]; then
    vendor_only=$(cat "$WORK/vendor_sources.txt")
    for src in "$WORK"/*.cl; do
        # vendor-only by design (the registry's vendor flag): planned for that vendor alone
        [[ $'\n'$vendor_only$'\n' == *$'\n'"$(basename "$src")"$'\n'* ]] && continue
        found=$(vendor_lint "$src")
        if [ -n "$found" ]; then
            echo "offline_compile.sh: vendor-specific identifiers in $(basename "$src"):"
            echo "$found"
            lint_rc=1
        fi
    done
    [ $lint_rc = 0 ] && echo "offline_compile.sh: no vendor identifier in the kernel sources (every #if branch)"
    # OpenCL C 1.2 has no variadic macros: NVIDIA's compiler refuses them, and its builds (vendor-only,
    # inline PTX) are compiled by no offline compiler here; the text of every source, every branch
    for src in "$WORK"/*.cl; do
        if grep -nE '^[[:space:]]*#[[:space:]]*define[[:space:]]+[A-Za-z_0-9]+\([^)]*\.\.\.' "$src"; then
            echo "offline_compile.sh: a variadic macro in $(basename "$src") (not OpenCL C 1.2)"
            lint_rc=1
        fi
    done
fi

# ---- the table ----------------------------------------------------------------------------------

# One row per job, with the plans (profile, head_dim, dtype) that share it.
awk -F'\t' -v md="$WORK/table.md" -v out="$WORK/table.txt" '
    FILENAME ~ /jobs.tsv$/ { fam[$1] = $2; tgt[$1] = $3; src[$1] = $4; opt[$1] = $5; next }
    FILENAME ~ /results.tsv$/ {
        st[$1] = $2; regs[$1] = $3; spill[$1] = $4; scratch[$1] = $5; lds[$1] = $6; note[$1] = $7; next
    }
    FNR == 1 { next }
    {   # builds.tsv: the plan rows, matched to jobs by source and options
        for (id in fam) {
            if (src[id] != $11 || opt[id] != $12) continue
            if (fam[id] == "intel" && $2 != "ocloc") continue
            if (fam[id] == "amd" && $2 != "amdgcn") continue
            if ((fam[id] == "intel" || fam[id] == "amd") && tgt[id] != $3) continue
            if (fam[id] == "spir") { if (!(id in prof)) { prof[id] = $1 } else if (index(prof[id], $1) == 0) prof[id] = prof[id] "," $1 }
            else prof[id] = $1
            variant[id] = $4; hd[id] = $5; dt[id] = $6; causal[id] = $7; plan_local[id] = $9
        }
    }
    END {
        hdr = sprintf("%-9s %-15s %-5s %-5s %-7s %-30s %-18s %-18s %s", "target", "variant", "dim", "dtype",
                      "causal", "registers", "spill B / scratch B", "local B (compiler)", "notes")
        print hdr > out
        print "| target | variant | head_dim | dtype | causal | registers | spill bytes / scratch bytes | local bytes (compiler / planned) | notes |" > md
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- |" > md
        for (i = 0; i in fam; i++) {
            t = tgt[i]
            if (st[i] != "OK") {
                printf "%-9s %-15s %-5s %-5s %-7s COMPILE FAILED (log: job%d/log.txt)\n", t, variant[i], hd[i], dt[i], causal[i], i > out
                printf "| %s | %s | %s | %s | %s | **compile failed** | | | |\n", t, variant[i], hd[i], dt[i], causal[i] > md
                continue
            }
            if (fam[i] == "spir") { spir_ok[t]++; continue }   # summarised below
            sp = spill[i] " / " scratch[i]
            lc = lds[i] " / " plan_local[i]
            nt = note[i]
            printf "%-9s %-15s %-5s %-5s %-7s %-30s %-18s %-18s %s\n", t, variant[i], hd[i], dt[i], causal[i],
                   regs[i], sp, lc, nt > out
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", t, variant[i], hd[i], dt[i], causal[i],
                   regs[i], sp, lc, nt > md
        }
        for (t in spir_ok) {
            printf "%-9s %d builds (every plan of every profile): compiled by the generic front end, no extension, no warning\n", t, spir_ok[t] > out
            printf "| %s | all | | | | | | | %d builds (every plan of every profile): generic front end, no extension, no warning |\n", t, spir_ok[t] > md
        }
    }' "$WORK/jobs.tsv" "$WORK/results.tsv" "$WORK/builds.tsv"
cat "$WORK/table.txt"
if [ -n "$markdown" ]; then
    cp "$WORK/table.md" "$markdown"
fi

# ---- verdict ------------------------------------------------------------------------------------

rc=$lint_rc
failed=$(awk -F'\t' '$2 != "OK" {print $1}' "$WORK/results.tsv")
shown=0
for id in $failed; do
    rc=1
    shown=$((shown + 1))
    if [ $shown -gt 3 ]; then
        echo "offline_compile.sh: ... and $(($(echo "$failed" | wc -w) - 3)) more failed builds (--keep DIR keeps the logs)"
        break
    fi
    echo
    echo "offline_compile.sh: FAILED: $(sed -n "$((id + 1))p" "$WORK/jobs.tsv" | cut -f2-4) with options:"
    sed -n "$((id + 1))p" "$WORK/jobs.tsv" | cut -f5
    sed -n '1,60s/^/  | /p' "$WORK/job$id/log.txt" # not `| head`: under pipefail sed's SIGPIPE would exit
done
# a kernel that needs more local memory than the plan's budget would not launch as planned
over=$(awk -F'\t' '
    FILENAME ~ /jobs.tsv$/ { key[$1] = $3 SUBSEP $4 SUBSEP $5; next }
    FILENAME ~ /results.tsv$/ { if ($2 == "OK") lds[key[$1]] = $6; next }
    FNR > 1 && ($3 SUBSEP $11 SUBSEP $12) in lds && lds[$3 SUBSEP $11 SUBSEP $12] + 0 > $10 + 0 {
        printf "%s %s head_dim %s: the compiler reports %d local bytes, the budget is %d\n", $1, $4, $5,
               lds[$3 SUBSEP $11 SUBSEP $12], $10
    }' "$WORK/jobs.tsv" "$WORK/results.tsv" "$WORK/builds.tsv")
if [ -n "$over" ]; then
    echo "offline_compile.sh: local memory above the budget:"
    echo "$over"
    rc=1
fi
# spills beyond what scripts/offline_spills.txt allows (and explains)
bad_spills=$(awk -F'\t' '
    FILENAME ~ /offline_spills.txt$/ {
        if ($0 !~ /^#/ && NF) {
            n = split($0, f, /[ \t]+/)
            if (n >= 5) { nt++; tk[nt] = f[1] SUBSEP f[2] SUBSEP f[3]; tb[nt] = f[4]; tt[nt] = f[5] }
            else allow[f[1] SUBSEP f[2] SUBSEP f[3]] = f[4]
        }
        next
    }
    FILENAME ~ /jobs.tsv$/ { fam[$1] = $2; tgt[$1] = $3; src[$1] = $4; opt[$1] = $5; next }
    FILENAME ~ /results.tsv$/ { if ($2 == "OK" && $4 + 0 > 0) spill[$1] = $4; next }
    FNR > 1 {
        for (id in spill) {
            if (src[id] != $11 || opt[id] != $12 || tgt[id] != $3) continue
            k = tgt[id] SUBSEP $4 SUBSEP $5
            # an entry with a fifth field allows only builds whose options contain it
            ok = 0
            for (i = 1; i <= nt; i++)
                if (tk[i] == k && index(opt[id], tt[i]) > 0 && spill[id] + 0 <= tb[i] + 0) ok = 1
            if (ok) { delete spill[id]; continue }
            if (!(k in allow) || spill[id] + 0 > allow[k] + 0)
                printf "%s (%s) %s head_dim %s %s: %d bytes spilled%s\n", tgt[id], $1, $4, $5, $6, spill[id],
                       (k in allow) ? sprintf(" (allowed: %d)", allow[k]) : ""
            delete spill[id]
        }
    }' "$here/offline_spills.txt" "$WORK/jobs.tsv" "$WORK/results.tsv" "$WORK/builds.tsv")
if [ -n "$bad_spills" ]; then
    echo "offline_compile.sh: spills that scripts/offline_spills.txt does not allow (fix the plan, or explain them"
    echo "in docs/portability.md and allow them there):"
    echo "$bad_spills"
    rc=1
fi
[ $rc = 0 ] && echo "offline_compile.sh: all $njobs builds compiled, no unexplained spill"
exit $rc
