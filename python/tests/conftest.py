# SPDX-License-Identifier: Apache-2.0
"""Fixtures of fa_cl's Python tests. Tests of pyopencl arrays take the `cla` fixture: where
FA_CL_TEST_NO_PYOPENCL=1 (tests/python_package.sh's numpy-only environment) pyopencl must be
absent and they skip; anywhere else pyopencl must import (a failure, not a skip)."""
import os

import pytest

import fa_cl

NO_PYOPENCL = os.environ.get("FA_CL_TEST_NO_PYOPENCL") == "1"


@pytest.fixture(scope="session")
def cla():
    if NO_PYOPENCL:
        pytest.skip("pyopencl absent (FA_CL_TEST_NO_PYOPENCL=1)")
    import pyopencl.array

    return pyopencl.array


@pytest.fixture(scope="session")
def queue(cla):
    return fa_cl.default_context().queue
