#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package as users install it, in two environments, offline: one wheel of python/
# carrying this build's libfa_cl, then its pytest suite (numpy float64 oracle, the struct layout
# probe) and the README's Python example, run outside the source tree, in
#  1. a virtual environment over Debian's python3 and its numpy, pyopencl, pytest (matplotlib where
#     installed): pyopencl arrays and numpy arrays;
#  2. a virtual environment without the system's site packages that sees only numpy and pytest
#     (Debian's, through tests/python_expose.py): numpy arrays with nothing else installed.
#   tests/python_package.sh <source dir> <work dir> <libfa_cl.so>
# FA_CL_TEST_CC / FA_CL_TEST_CFLAGS (CTest sets them): the layout probe's compiler and flags.
set -eu
src=$1 work=$2 lib=$3
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
[ -n "$py" ] || { echo "SKIP: no python3"; exit 77; }
for m in venv ensurepip numpy pyopencl pytest; do
    "$py" -c "import $m" 2>/dev/null || { echo "SKIP: $py has no module $m (scripts/setup.sh deps installs it)"; exit 77; }
done
rm -rf "$work"
# a copy of the sources: pip builds in the tree it is given
mkdir -p "$work/src"
cp -r "$src/python" "$src/include" "$work/src/"
"$py" -m venv --system-site-packages "$work/venv"
FA_CL_LIBRARY=$lib "$work/venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$work/dist" "$work/src/python"
wheel=$(ls "$work"/dist/fa_cl-*.whl)
"$work/venv/bin/pip" install -q --no-index --no-deps "$wheel"
cd "$work"

echo "== 1. Debian's python3 with numpy and pyopencl"
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests"
"$work/venv/bin/python" "$src/examples/python/first_call.py"

echo "== 2. numpy alone (no pyopencl, no matplotlib)"
"$py" -m venv "$work/venv-numpy"
"$py" "$src/tests/python_expose.py" "$work/venv-numpy" numpy pytest
"$work/venv-numpy/bin/pip" install -q --no-index --no-deps "$wheel"
if "$work/venv-numpy/bin/python" -c "import pyopencl" 2>/dev/null; then
    echo "FAIL: pyopencl is importable in the numpy-only environment"
    exit 1
fi
FA_CL_TEST_NO_PYOPENCL=1 "$work/venv-numpy/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests"
"$work/venv-numpy/bin/python" "$src/examples/python/first_call.py"
