# SPDX-License-Identifier: Apache-2.0
"""The package carries the repository's include/fa_cl.h (its structs are read from it) and, when
one is found, the libfa_cl.so built from the same sources: FA_CL_LIBRARY, else the repository's
build/ (scripts/setup.sh builds there). Without one it binds an installed libfa_cl at import."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def built_library():
    lib = os.environ.get("FA_CL_LIBRARY")
    if lib:
        if not os.path.isabs(lib):
            raise SystemExit("fa_cl: FA_CL_LIBRARY=%s must be an absolute path (pip builds in another directory)" % lib)
        if not os.path.exists(lib):
            raise SystemExit("fa_cl: FA_CL_LIBRARY=%s does not exist" % lib)
        return lib
    built = os.path.join(REPO, "build", "libfa_cl.so")  # the link to this build's SONAME
    return built if os.path.exists(built) else None


class build_with_library(build_py):
    def run(self):
        super().run()
        dst = os.path.join(self.build_lib, "fa_cl")
        header = os.path.join(REPO, "include", "fa_cl.h")
        if not os.path.exists(header):
            raise SystemExit("fa_cl: %s is missing: build the package from the fa_cl repository (pip install ./python)"
                             % header)
        shutil.copy(header, os.path.join(dst, "fa_cl.h"))
        lib = built_library()
        if lib:
            shutil.copy(os.path.realpath(lib), os.path.join(dst, "libfa_cl.so"))
            print("fa_cl: packaging %s" % os.path.realpath(lib))
        else:
            print("fa_cl: no built libfa_cl (FA_CL_LIBRARY, build/); the package will load an installed one")


class BinaryDistribution(Distribution):
    """A wheel for this platform: it may hold libfa_cl.so."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": build_with_library}, distclass=BinaryDistribution)
