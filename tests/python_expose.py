# SPDX-License-Identifier: Apache-2.0
"""Make a few of this interpreter's installed distributions, and those they require, importable in a
virtual environment made without the system's site packages, and nothing else: links to their
top-level modules (and metadata) in one directory, which a .pth file in the environment names.

    python3 tests/python_expose.py <venv> numpy pytest

tests/python_package.sh uses it to test the package with numpy alone (no pyopencl, no matplotlib)
offline, from Debian's python3-numpy and python3-pytest: no package index is needed."""
import importlib.metadata as md
import os
import re
import subprocess
import sys


def closure(names):
    """The distributions named and, transitively, those they require unconditionally (extras left out;
    a requirement this interpreter does not have installed, such as one for another Python version,
    is skipped)."""
    todo, found = list(names), {}
    while todo:
        name = todo.pop()
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            if name in names:
                raise SystemExit("python_expose: %s is not installed for %s" % (name, sys.executable))
            continue
        key = dist.metadata["Name"].lower()
        if key in found:
            continue
        found[key] = dist
        for req in dist.requires or []:
            if not re.search(r"\bextra\s*==", req):
                todo.append(re.match(r"[A-Za-z0-9_.\-]+", req).group(0))
    return found.values()


def top_level(dist):
    """The top-level module names of a distribution: top_level.txt, else the first parts of its files."""
    text = dist.read_text("top_level.txt")
    if text:
        return {line.strip() for line in text.splitlines() if line.strip()}
    names = set()
    for f in dist.files or []:
        part = f.parts[0]
        if part in ("..", "__pycache__") or part.endswith((".dist-info", ".egg-info")):
            continue
        names.add(part[:-3] if part.endswith(".py") else part.split(".")[0])
    return names


def main():
    venv, names = sys.argv[1], sys.argv[2:]
    links = os.path.join(venv, "exposed")
    os.makedirs(links)
    for dist in closure(names):
        site = str(dist.locate_file(""))
        meta = getattr(dist, "_path", None)  # the .dist-info / .egg-info directory, for importlib.metadata
        entries = [os.path.basename(str(meta))] if meta is not None else []
        for name in top_level(dist):
            entries += [e for e in os.listdir(site) if e == name or e == name + ".py" or
                        (e.startswith(name + ".") and e.endswith(".so"))]
        for e in entries:
            if not os.path.exists(os.path.join(links, e)):
                os.symlink(os.path.join(site, e), os.path.join(links, e))
    purelib = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(purelib, "exposed.pth"), "w") as f:
        f.write(os.path.abspath(links) + "\n")


if __name__ == "__main__":
    main()
