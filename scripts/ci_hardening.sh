#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI's hardening steps (after `scripts/setup.sh test` and `test-full`, which already ran the oclgrind and leaks
# labels): one clang build of the library, tools and tests with AddressSanitizer + UBSan
# (-DFA_CL_SANITIZE=address,undefined, no recovery: any report fails), whose unit, device and reference labels
# must run clean on PoCL, and a bounded libFuzzer run of the descriptor/buffer fuzz target.
#
#   scripts/ci_hardening.sh            both
#   FA_CL_FUZZ_SECONDS=60            length of the fuzz run (default 60)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${FA_CL_SANITIZE_BUILD_DIR:-build-sanitize}
JOBS=$(nproc 2>/dev/null || echo 2)
PACKAGES="clang libclang-rt-dev"

missing=""
for p in $PACKAGES; do
    # captured, not piped into grep -q: under pipefail that can fail on a match (SIGPIPE)
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "fa_cl: installing:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends $missing >/dev/null
    else
        echo "fa_cl: missing packages:$missing (run: sudo apt-get install -y$missing)" >&2
        exit 1
    fi
fi

t0=$(date +%s)
cmake -S . -B "$BUILD_DIR" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFA_CL_SANITIZE=address,undefined -DFA_CL_FUZZ=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

# PoCL only: another vendor's ICD may dlopen libraries with RTLD_DEEPBIND, which ASan refuses
# (Intel's compute runtime does, for libdxcore), and the sanitizer run is about this library.
icd=/etc/OpenCL/vendors/pocl.icd
if [ -f "$icd" ]; then
    export OCL_ICD_VENDORS="$icd"
fi
# fast_unwind_on_malloc=0: full stacks through the driver's and LLVM's frames, which the
# suppressions in tests/lsan.supp match (PoCL's compiler only; each entry commented there).
export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:detect_stack_use_after_return=1:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$BUILD_DIR" -L "unit|device|reference" -j "$JOBS" --output-on-failure
t1=$(date +%s)
echo "fa_cl: sanitizer build + unit/device/reference labels: $((t1 - t0)) s"

fuzz="$BUILD_DIR/tests/fuzz_desc"
if [ -x "$fuzz" ]; then
    corpus=$(mktemp -d /tmp/fa_cl_fuzz_corpus.XXXXXX)
    trap 'rm -rf "$corpus"' EXIT
    cp tests/fuzz_corpus/* "$corpus"/
    # Fast unwinding and no leak check here: an input with a new (head_dim, dtype, tile) builds a
    # program, and PoCL's LLVM under full-stack malloc unwinding takes ~10x longer (33 s against
    # 3.4 s for one build, measured), past any sane per-input timeout. Leaks are the ctest run's job
    # above, which keeps full stacks for its suppressions.
    # new inputs go to the scratch corpus; tests/fuzz_corpus/ holds the curated seeds
    ASAN_OPTIONS="detect_leaks=0:fast_unwind_on_malloc=1:detect_stack_use_after_return=1:strict_string_checks=1" \
        "$fuzz" -max_total_time="${FA_CL_FUZZ_SECONDS:-60}" -timeout=120 -detect_leaks=0 -rss_limit_mb=4096 \
        -print_final_stats=1 "$corpus" tests/fuzz_corpus
    echo "fa_cl: fuzz run: $(($(date +%s) - t1)) s"
else
    echo "fa_cl: no fuzz target (the compiler does not support -fsanitize=fuzzer)" >&2
    exit 1
fi
