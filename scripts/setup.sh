#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One entry point for a fresh Debian/Ubuntu machine:
#   scripts/setup.sh deps   install what is missing (apt-get when root; otherwise print the command)
#   scripts/setup.sh mpi-deps  the same for Open MPI (optional: context parallelism; build runs it too)
#   scripts/setup.sh build  deps + configure + build into ./build (or $FA_CL_BUILD_DIR)
#   scripts/setup.sh demo   build, then fa_cl_info and a timed forward pass checked against the reference
#   scripts/setup.sh test   build, then the quick tier of the CTest suite (`ctest -L quick`: every
#                           kernel family, the API, the oracle checks, Oclgrind on tiny shapes)
#   scripts/setup.sh test-full  build, then the whole CTest suite (installing the offline compilers too)
#   FA_CL_CTEST_ARGS adds ctest options to either (.ci/run: test, then test-full with -LE quick)
#   scripts/setup.sh offline-packaged   exit 0 when this distribution packages every offline compiler
#                         (.ci/run then requires their tests to run: FA_CL_REQUIRE_OFFLINE=1)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${FA_CL_BUILD_DIR:-build}
JOBS=$(nproc 2>/dev/null || echo 2)
PACKAGES="cmake make gcc pkg-config ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd clinfo oclgrind valgrind"
# the Python package (python/): Debian's interpreter with its numpy, pyopencl, pytest and matplotlib,
# seen from a virtual environment (Debian's pip refuses system-wide installs: PEP 668)
PY_PACKAGES="python3 python3-venv python3-pip python3-setuptools python3-numpy python3-pyopencl python3-pytest python3-matplotlib"
PACKAGES="$PACKAGES $PY_PACKAGES"
PYTHON=/usr/bin/python3
# `ctest -L offline` (test only): Intel's offline compiler (ocloc), ROCm's device libraries and the
# newest clang for AMD GPUs and the generic SPIR check, readelf. Where the distribution lacks one,
# that offline test is skipped (with the reason), never failed for it, unless FA_CL_REQUIRE_OFFLINE=1.
OFFLINE_PACKAGES="intel-opencl-icd rocm-device-libs binutils"
# context parallelism (libfa_cl_cp, include/fa_cl_cp.h; the cp_* tests): Open MPI. Optional: installed
# when root, otherwise the command is printed; without it the MPI part is not built and its tests are
# not registered, nothing fails
MPI_PACKAGES="openmpi-bin libopenmpi-dev"
OFFLINE_CLANGS="clang-19 clang-18 clang-17 clang-16 clang-15"
APT_UPDATED=0

# Each answer from captured output, never from `cmd | grep -q`: under pipefail grep's early exit
# kills the writer (SIGPIPE) and turns a match into a failure, at random.
installed() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [ "$status" = "install ok installed" ]
}
# a candidate version (Debian versions start with a digit; "(none)" when nothing is packaged)
available() {
    local policy
    policy=$(apt-cache policy "$1" 2>/dev/null) || return 1
    [[ $policy == *"Candidate: "[0-9]* ]]
}

apt_update() {
    export DEBIAN_FRONTEND=noninteractive
    if [ $APT_UPDATED = 0 ]; then
        apt-get update -qq
        APT_UPDATED=1
    fi
}

apt_install() {
    apt_update
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

deps() {
    local missing=""
    for p in $PACKAGES; do
        installed "$p" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" = 0 ]; then
        echo "fa_cl: installing:$missing"
        apt_install $missing
    else
        echo "fa_cl: missing packages:$missing" >&2
        echo "run: sudo apt-get install -y$missing" >&2
        exit 1
    fi
}

mpi_deps() {
    local missing="" p
    for p in $MPI_PACKAGES; do
        installed "$p" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "fa_cl: for context parallelism over MPI (optional): sudo apt-get install$missing" >&2
        return 0
    fi
    echo "fa_cl: installing (context parallelism over MPI):$missing"
    apt_install $missing || echo "fa_cl: could not install$missing: libfa_cl_cp and its tests are skipped"
}

offline_deps() {
    local missing="" have_clang="" newest=${OFFLINE_CLANGS%% *} p c
    for p in $OFFLINE_PACKAGES; do
        installed "$p" || missing="$missing $p"
    done
    for c in $OFFLINE_CLANGS; do
        if installed "$c"; then have_clang=$c; break; fi
    done
    [ -z "$missing" ] && [ "$have_clang" = "$newest" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        [ "$have_clang" = "$newest" ] || missing="$missing $newest"
        echo "fa_cl: for ctest -L offline: sudo apt-get install$missing" >&2
        return 0
    fi
    apt_update
    local want=""
    for p in $missing; do
        if available "$p"; then want="$want $p"; else echo "fa_cl: $p is not packaged here: its offline test will skip"; fi
    done
    # The newest packaged clang, even where an older one is installed (PoCL pulls in clang-15 on
    # Debian 12): the AMD spill figures are those of ROCm 6's LLVM 17-19, and LLVM 15 spills more.
    for c in $OFFLINE_CLANGS; do
        [ "$c" = "$have_clang" ] && break
        if available "$c"; then want="$want $c"; break; fi
    done
    [ -z "$want" ] && return 0
    echo "fa_cl: installing (offline compile checks):$want"
    apt_install $want || echo "fa_cl: could not install$want: the offline tests that need them will skip" \
        "(fail, with FA_CL_REQUIRE_OFFLINE=1)"
}

# Whether every offline compiler has a candidate here. A fresh image may have no package lists
# yet, which would read as "not packaged": fetch them first when root.
offline_packaged() {
    if [ "$(id -u)" = 0 ] && ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
        apt_update
    fi
    local p c clang="" none=""
    for p in $OFFLINE_PACKAGES; do
        available "$p" || none="$none $p"
    done
    for c in $OFFLINE_CLANGS; do
        if available "$c"; then clang=$c; break; fi
    done
    [ -n "$clang" ] || none="$none clang(${OFFLINE_CLANGS// /|})"
    if [ -n "$none" ]; then
        echo "fa_cl: not packaged here:$none: the offline tests that need them may skip"
        return 1
    fi
    echo "fa_cl: packaged here: $OFFLINE_PACKAGES $clang: the offline tests must run"
}

build() {
    deps
    mpi_deps
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${FA_CL_CMAKE_ARGS:-} >/dev/null
    cmake --build "$BUILD_DIR" -j "$JOBS"
    python_package
}

# The Python package into $BUILD_DIR/venv (system site packages visible), carrying this build's
# libfa_cl; offline: no build isolation, no dependency downloads (Debian's packages provide them).
python_package() {
    [ -d "$BUILD_DIR/venv" ] || "$PYTHON" -m venv --system-site-packages "$BUILD_DIR/venv"
    local lib
    lib=$(cd "$BUILD_DIR" && pwd)/libfa_cl.so # absolute: pip builds in another directory
    FA_CL_LIBRARY="$lib" "$BUILD_DIR/venv/bin/pip" install -q --no-build-isolation --no-deps --force-reinstall ./python
    rm -rf python/build python/fa_cl.egg-info
}

case "${1:-}" in
deps) deps ;;
mpi-deps) mpi_deps ;;
build) build ;;
demo)
    build
    "$BUILD_DIR"/tools/fa_cl_info
    echo
    # a forward pass on the default device, timed, and checked against the CLBlast reference
    "$BUILD_DIR"/tools/fa_cl_bench -b 1 -h 8 -q 1024 -k 1024 -d 64 --dtype f32 --check
    echo
    # the README's Python example, through the package in $BUILD_DIR/venv
    "$BUILD_DIR/venv/bin/python" examples/python/first_call.py
    ;;
offline-packaged) offline_packaged ;;
test)
    build
    ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure -L quick ${FA_CL_CTEST_ARGS:-}
    ;;
test-full)
    offline_deps
    build
    ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure ${FA_CL_CTEST_ARGS:-}
    ;;
*)
    echo "usage: scripts/setup.sh deps|mpi-deps|build|demo|test|test-full|offline-packaged" >&2
    exit 2
    ;;
esac
