# SPDX-License-Identifier: Apache-2.0
"""The ctypes layout of every struct fa_cl.h defines against the C compiler's: a probe generated from
the structs the package read from the header, compiled here, prints sizeof of each struct and the
offset and size of each field; every number must be the package's. A field the header gains
(the extension rule: at the end) is in the probe without a change here.

The compiler is FA_CL_TEST_CC (CTest passes CMake's, with FA_CL_TEST_CFLAGS for the OpenCL headers;
then a probe that cannot be built is a failure), else CC or cc (without one the test skips)."""
import ctypes
import os
import re
import shlex
import shutil
import subprocess

import pytest

from fa_cl import _lib


def _compiler():
    cc = os.environ.get("FA_CL_TEST_CC") or os.environ.get("CC") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler (FA_CL_TEST_CC, CC, cc)")
    return shlex.split(cc) + shlex.split(os.environ.get("FA_CL_TEST_CFLAGS", ""))


def _probe_source(structs):
    out = ["#include <stddef.h>", "#include <stdio.h>", '#include "fa_cl.h"', "int main(void)", "{"]
    for name, st in structs.items():
        out.append('    printf("%s %%zu\\n", sizeof(%s));' % (name, name))
        for field, _ in st._fields_:
            out.append('    printf("%s.%s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                       % (name, field, name, field, name, field))
    out += ["    return 0;", "}"]
    return "\n".join(out) + "\n"


def test_every_struct_of_the_header_is_bound():
    """The package binds every struct the header defines (counted here independently of its parser)."""
    with open(_lib.header_path()) as f:
        text = re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)
    assert sorted(_lib.STRUCTS) == sorted(set(re.findall(r"typedef\s+struct\s+(\w+)\s*\{", text)))


def test_struct_layouts_match_the_c_compiler(tmp_path):
    cc = _compiler()
    src = tmp_path / "layout_probe.c"
    src.write_text(_probe_source(_lib.STRUCTS))
    exe = tmp_path / "layout_probe"
    header_dir = os.path.dirname(os.path.abspath(_lib.header_path()))
    r = subprocess.run(cc + ["-I", header_dir, str(src), "-o", str(exe)], capture_output=True, text=True)
    if r.returncode != 0:
        if os.environ.get("FA_CL_TEST_CC"):
            pytest.fail("the layout probe did not build: %s" % r.stderr)
        pytest.skip("the layout probe did not build (no OpenCL headers?): %s" % r.stderr.strip()[-300:])
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    c = {line.split(" ", 1)[0]: tuple(int(x) for x in line.split()[1:]) for line in out if line}
    wrong = []
    for name, st in _lib.STRUCTS.items():
        if c[name] != (ctypes.sizeof(st),):
            wrong.append("sizeof(%s): C %d, ctypes %d" % (name, c[name][0], ctypes.sizeof(st)))
        for field, _ in st._fields_:
            got = (getattr(st, field).offset, getattr(st, field).size)
            if c[name + "." + field] != got:
                wrong.append("%s.%s (offset, size): C %s, ctypes %s" % (name, field, c[name + "." + field], got))
    assert not wrong, "\n".join(wrong)
    assert len(c) == sum(1 + len(st._fields_) for st in _lib.STRUCTS.values())
