#!/usr/bin/env bash
# One entry point for a fresh Debian/Ubuntu machine:
#   tools/setup.sh deps   install what is missing (apt-get when root; otherwise print the command)
#   tools/setup.sh build  deps + configure + build into ./build (or $FA_CL_BUILD_DIR)
#   tools/setup.sh demo   build, then fa_cl_info and a timed forward pass checked against the reference
#   tools/setup.sh test   build, then the whole CTest suite
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${FA_CL_BUILD_DIR:-build}
JOBS=$(nproc 2>/dev/null || echo 2)
PACKAGES="cmake make gcc pkg-config ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd clinfo oclgrind valgrind"

deps() {
    local missing=""
    for p in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" = 0 ]; then
        echo "fa_cl: installing:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends $missing >/dev/null
    else
        echo "fa_cl: missing packages:$missing" >&2
        echo "run: sudo apt-get install -y$missing" >&2
        exit 1
    fi
}

build() {
    deps
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${FA_CL_CMAKE_ARGS:-} >/dev/null
    cmake --build "$BUILD_DIR" -j "$JOBS"
}

case "${1:-}" in
deps) deps ;;
build) build ;;
demo)
    build
    "$BUILD_DIR"/tools/fa_cl_info
    echo
    # a forward pass on the default device, timed, and checked against the CLBlast reference
    "$BUILD_DIR"/tools/fa_cl_bench -b 1 -h 8 -q 1024 -k 1024 -d 64 --dtype f32 --check
    ;;
test)
    build
    ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure ${FA_CL_CTEST_ARGS:-}
    ;;
*)
    echo "usage: tools/setup.sh deps|build|demo|test" >&2
    exit 2
    ;;
esac
