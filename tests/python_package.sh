#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package as a user installs it: a virtual environment over Debian's python3 (its numpy,
# pyopencl, pytest, matplotlib), `pip install ./python` carrying this build's libfa_cl, then its
# pytest suite (numpy float64 oracle) and the README's Python example, run outside the source tree.
#   tests/python_package.sh <source dir> <work dir> <libfa_cl.so>
set -eu
src=$1 work=$2 lib=$3
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
[ -n "$py" ] || { echo "SKIP: no python3"; exit 77; }
for m in venv numpy pyopencl pytest matplotlib; do
    "$py" -c "import $m" 2>/dev/null || { echo "SKIP: $py has no module $m (scripts/setup.sh deps installs it)"; exit 77; }
done
rm -rf "$work"
"$py" -m venv --system-site-packages "$work/venv"
# a copy of the sources: pip builds in the tree it is given
mkdir -p "$work/src"
cp -r "$src/python" "$src/include" "$work/src/"
FA_CL_LIBRARY=$lib "$work/venv/bin/pip" install -q --no-build-isolation --no-deps "$work/src/python"
cd "$work"
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests"
"$work/venv/bin/python" "$src/examples/python/first_call.py"
