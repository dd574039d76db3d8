#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Kernel token check: a change must not change what any device compiles.

For every build `fa_cl_info --profile all --emit` lists (each device profile x each case of
tools/fa_cl_info_emit.c x head_dim x dtype x launch), the kernel source as the library passes it to
clCreateProgramWithSource, preprocessed with the build's exact options (clang -E, OpenCL C), must
give the same token stream at BASE_REV and in the working tree: whitespace, comments, line
markers and the split of string literals do not count; the order of everything else does. The two
build sets must have the same keys, and each build the same kernel family, options, work-group
size and local memory; the plans the library refuses (unplanned.tsv) must be the same too.

  scripts/check_kernel_tokens.py BASE_REV        compare BASE_REV with the working tree
  scripts/check_kernel_tokens.py --base-dir DIR  compare an emitted directory (fa_cl_info --emit DIR)
  scripts/check_kernel_tokens.py --coverage      the working tree alone: every build preprocesses
                                                 cleanly, and every macro the kernels test is set
                                                 by some build (tests/kernel_builds/
                                                 diagnostic_macros.txt lists the exceptions)
  scripts/check_kernel_tokens.py --ctest         BASE_REV from $FA_CL_TOKENS_BASE where it is set
                                                 (--quiet), else --coverage: CTest's kernel_tokens
Options:
  --work-info PATH   the working tree's fa_cl_info (default: build it, in --work-build)
  --work-build DIR   the working tree's build directory (default: build, configured if missing)
  --jobs N           preprocessors at once (default: the CPU count)
  --clang CLANG      the preprocessor (default: clang-15, else clang)
  --quiet            print differing builds only (and the summary)
  --context N        tokens of context shown around a difference (default 12)
  --keep DIR         keep the emitted sets and preprocessed sources of differing builds in DIR

BASE_REV is built once (git archive into the cache, fa_cl_info alone) and its emitted set cached
under ${FA_CL_TOKENS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/fa_cl/kernel_tokens}/<commit>/.
Exit status: 0 every build the same (or --coverage clean); 1 a difference, a build on one side
only, a build that does not preprocess, an uncovered macro; 2 usage or a build of fa_cl_info failed;
77 no clang (CTest: skipped).
"""

import argparse
import concurrent.futures
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY_FIELDS = ("profile", "case", "head_dim", "dtype", "launch")
# builds.tsv's columns compared besides the tokens: what the device runs
PLAN_FIELDS = ("variant", "options", "work_group", "local_bytes", "local_budget", "vendor_only")
DIAGNOSTIC_MACROS = os.path.join(ROOT, "tests", "kernel_builds", "diagnostic_macros.txt")

TOKEN = re.compile(
    r'"(?:\\.|[^"\\])*"'            # string literal
    r"|'(?:\\.|[^'\\])*'"           # character constant
    r"|\.?\d(?:[\w.]|[eEpP][+-])*"  # pp-number
    r"|[A-Za-z_]\w*"                # identifier
    r"|>>=|<<=|\.\.\.|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[*/%+\-&^|]=|##"
    r"|\S")
LINEMARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"([^"]*)"')
DEFINE = re.compile(r"^#\s*define\s+([A-Za-z_]\w*)")


def die(msg, code=2):
    print(f"check_kernel_tokens: {msg}", file=sys.stderr)
    sys.exit(code)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


# ---- fa_cl_info at a revision and in the working tree ---------------------------------------------

def cache_root():
    base = os.environ.get("FA_CL_TOKENS_CACHE")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "fa_cl", "kernel_tokens")
    return base


def build_info(src, build, jobs, configure_args=()):
    """Configure (if needed) and build the fa_cl_info target; its path."""
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", *configure_args],
            stdout=subprocess.DEVNULL)
    run(["cmake", "--build", build, "--target", "fa_cl_info", "-j", str(jobs)], stdout=subprocess.DEVNULL)
    info = os.path.join(build, "tools", "fa_cl_info")
    if not os.access(info, os.X_OK):
        die(f"{info} was not built")
    return info


def emit(info, out):
    os.makedirs(out, exist_ok=True)
    run([info, "--profile", "all", "--emit", out], stdout=subprocess.DEVNULL)


def base_emission(rev, jobs):
    """The emitted set of commit rev, built once and cached by its commit id."""
    try:
        sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", f"{rev}^{{commit}}"], check=True,
                             capture_output=True, text=True).stdout.strip()
    except subprocess.CalledProcessError:
        die(f"'{rev}' is not a commit of {ROOT}")
    entry = os.path.join(cache_root(), sha)
    out = os.path.join(entry, "emit")
    if os.path.isfile(os.path.join(out, "builds.tsv")):
        print(f"check_kernel_tokens: {rev} = {sha[:12]}: emitted set from the cache ({out})")
        return out, sha
    print(f"check_kernel_tokens: {rev} = {sha[:12]}: building fa_cl_info there (once; cached in {entry})")
    os.makedirs(entry, exist_ok=True)
    src, build = os.path.join(entry, "src"), os.path.join(entry, "build")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    # an archive, not a worktree: nothing to prune in the repository if this is interrupted
    archive = subprocess.Popen(["git", "-C", ROOT, "archive", "--format=tar", sha], stdout=subprocess.PIPE)
    run(["tar", "-x", "-C", src], stdin=archive.stdout)
    archive.stdout.close()
    if archive.wait() != 0:
        die(f"git archive {sha} failed")
    try:
        info = build_info(src, build, jobs, ("-DFA_CL_BUILD_TESTS=OFF", "-DFA_CL_WITH_CLBLAST=OFF"))
        emit(info, out + ".tmp")
    except subprocess.CalledProcessError as e:
        die(f"building or running fa_cl_info at {rev} failed: {e}")
    os.replace(out + ".tmp", out)
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(build, ignore_errors=True)
    return out, sha


def work_emission(args, tmp):
    info = args.work_info
    if not info:
        build = args.work_build or os.path.join(ROOT, "build")
        try:
            info = build_info(ROOT, build, args.jobs)
        except subprocess.CalledProcessError as e:
            die(f"building fa_cl_info in {build} failed: {e}")
    out = os.path.join(tmp, "work")
    try:
        emit(info, out)
    except subprocess.CalledProcessError as e:
        die(f"{info} --profile all --emit failed: {e}")
    return out


# ---- the emitted sets ----------------------------------------------------------------------------

def read_set(d, what):
    """builds.tsv as {key: row}; the source texts each row names; unplanned.tsv as {key: reason}."""
    path = os.path.join(d, "builds.tsv")
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        missing = [c for c in KEY_FIELDS + PLAN_FIELDS + ("source",) if c not in header]
        if missing:
            die(f"{what}: {path} has no column {', '.join(missing)}: its fa_cl_info predates the case-based "
                "--emit (tools/fa_cl_info_emit.c); compare against a revision that has it")
        builds = {}
        for n, line in enumerate(f, 2):
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            key = tuple(row[c] for c in KEY_FIELDS)
            if key in builds:
                die(f"{what}: {path}:{n}: the key {' '.join(key)} appears twice", 1)
            builds[key] = row
    unplanned = {}
    upath = os.path.join(d, "unplanned.tsv")
    if os.path.isfile(upath):
        with open(upath, encoding="utf-8") as f:
            header = f.readline().rstrip("\n").split("\t")
            for line in f:
                row = dict(zip(header, line.rstrip("\n").split("\t")))
                unplanned[tuple(row[c] for c in KEY_FIELDS)] = row.get("reason", "")
    texts = {}
    for row in builds.values():
        name = row["source"]
        if name not in texts:
            with open(os.path.join(d, name), "rb") as f:
                texts[name] = f.read()
    return builds, unplanned, texts


# ---- preprocessing and tokens --------------------------------------------------------------------

def find_clang(name):
    for c in ([name] if name else ["clang-15", "clang"]):
        if shutil.which(c):
            return c
    print(f"check_kernel_tokens: SKIP: no {name or 'clang-15 or clang'} on PATH (the preprocessor)")
    sys.exit(77)


def preprocess(clang, text, options):
    """(tokens, token locations, defined macros, error): the build's source through clang -E with
    its options (OpenCL C; spir64 so that no host's macros enter), -dD for the macros it defines."""
    cmd = [clang, "-E", "-dD", "-x", "cl", "-target", "spir64", *shlex.split(options), "-"]
    if "-DFA_XMX_SG=" in options:
        # the XMX builds' extension, which the Intel drivers that plan them define (cl/fa_xmx.cl)
        cmd.insert(-1, "-Dcl_intel_subgroup_matrix_multiply_accumulate")
    p = subprocess.run(cmd, input=text, capture_output=True)
    stdout, stderr = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if p.returncode != 0 or "#error" in stderr:
        return None, None, None, (stderr.strip() or f"exit status {p.returncode}")
    tokens, where, defined = [], [], set()
    file, line = "?", 0
    for raw in stdout.split("\n"):
        m = LINEMARKER.match(raw)
        if m:
            line, file = int(m.group(1)), m.group(2)
            continue
        line += 1
        if raw.startswith("#"):
            d = DEFINE.match(raw)
            if d:
                defined.add(d.group(1))
                continue
            if re.match(r"^#\s*undef\b", raw):
                continue
        for tok in TOKEN.findall(raw):
            # adjacent string literals are one (translation phase 6): re-wrapping a PTX string is no change
            if tok.startswith('"') and tokens and tokens[-1].startswith('"'):
                tokens[-1] = tokens[-1][:-1] + tok[1:]
                continue
            tokens.append(tok)
            where.append((file, line - 1))
    return tokens, where, defined, None


class Preprocessor:
    """Each distinct (source text, options) preprocessed once, in parallel."""

    def __init__(self, clang, jobs):
        self.clang, self.jobs = clang, jobs
        self.results = {}

    def run_all(self, items):
        todo = {}
        for text, options in items:
            k = (hashlib.sha1(text).hexdigest(), options)
            if k not in self.results and k not in todo:
                todo[k] = (text, options)
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs) as ex:
            futures = {ex.submit(preprocess, self.clang, t, o): k for k, (t, o) in todo.items()}
            for fut in concurrent.futures.as_completed(futures):
                self.results[futures[fut]] = fut.result()

    def get(self, text, options):
        return self.results[(hashlib.sha1(text).hexdigest(), options)]


def first_difference(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def show_difference(key, before, after, context):
    ta, wa = before[0], before[1]
    tb, wb = after[0], after[1]
    i = first_difference(ta, tb)
    lo = max(0, i - context)

    def around(toks, where):
        if i >= len(toks):
            return f"(ends after {len(toks)} tokens)", ""
        s = " ".join(toks[lo:i]) + " >>>" + toks[i] + "<<< " + " ".join(toks[i + 1:i + 1 + context])
        f, ln = where[i]
        return s, f"{f}:{ln}"

    sa, la = around(ta, wa)
    sb, lb = around(tb, wb)
    print(f"    first difference at token {i} of {len(ta)} / {len(tb)}")
    print(f"    before ({la}): {sa}")
    print(f"    after  ({lb}): {sb}")


# ---- the comparison ------------------------------------------------------------------------------

def key_text(key):
    return " ".join(key)


def compare(args, base_dir, work_dir, clang):
    base, base_unplanned, base_texts = read_set(base_dir, "BASE")
    work, work_unplanned, work_texts = read_set(work_dir, "working tree")
    failures = 0
    only_base = sorted(set(base) - set(work))
    only_work = sorted(set(work) - set(base))
    for k in only_base:
        print(f"MISSING  {key_text(k)}: built at BASE ({base[k]['variant']}), not in the working tree")
    for k in only_work:
        print(f"NEW      {key_text(k)}: built in the working tree ({work[k]['variant']}), not at BASE")
    failures += len(only_base) + len(only_work)
    for k in sorted(set(base_unplanned) | set(work_unplanned)):
        a, b = base_unplanned.get(k), work_unplanned.get(k)
        if a != b:
            failures += 1
            print(f"UNPLANNED {key_text(k)}: BASE {a!r}, working tree {b!r}")

    common = sorted(set(base) & set(work))
    # only builds whose source text or options differ between the sides need the preprocessor
    need = []
    for k in common:
        a, b = base[k], work[k]
        ta, tb = base_texts[a["source"]], work_texts[b["source"]]
        if ta != tb or a["options"] != b["options"]:
            need += [(ta, a["options"]), (tb, b["options"])]
    pp = Preprocessor(clang, args.jobs)
    pp.run_all(need)
    same = 0
    for k in common:
        a, b = base[k], work[k]
        diffs = [f for f in PLAN_FIELDS if a.get(f) != b.get(f)]
        ta, tb = base_texts[a["source"]], work_texts[b["source"]]
        text_same = ta == tb and a["options"] == b["options"]
        ra = rb = None
        if not text_same:
            ra, rb = pp.get(ta, a["options"]), pp.get(tb, b["options"])
            for side, r in (("BASE", ra), ("working tree", rb)):
                if r[3] is not None:
                    diffs.append(f"preprocessing at {side} failed: {r[3].splitlines()[0]}")
        tokens_same = text_same or (ra[3] is None and rb[3] is None and ra[0] == rb[0])
        if not diffs and tokens_same:
            same += 1
            if not args.quiet:
                print(f"same       {key_text(k)} ({b['variant']})")
            continue
        failures += 1
        print(f"DIFFERENT  {key_text(k)} ({a['variant']} -> {b['variant']})")
        for f in diffs:
            if f == "options":  # the words one side has and the other not
                wa, wb = a[f].split(), b[f].split()
                print(f"    options: {' '.join(w for w in wa if w not in wb) or '(none)'} -> "
                      f"{' '.join(w for w in wb if w not in wa) or '(none)'}"
                      f"{'' if set(wa) != set(wb) else ' (the same words in another order)'}")
            elif f in PLAN_FIELDS:
                print(f"    {f}: {a.get(f)!r} -> {b.get(f)!r}")
            else:
                print(f"    {f}")
        if not tokens_same and ra[3] is None and rb[3] is None:
            show_difference(k, ra, rb, args.context)
            if args.keep:
                keep_pair(args.keep, k, ra[0], rb[0])
    print(f"check_kernel_tokens: {len(common)} builds on both sides, {same} the same, {failures} failures "
          f"({len(only_base)} at BASE only, {len(only_work)} in the working tree only)")
    return failures


def keep_pair(keep, key, ta, tb):
    os.makedirs(keep, exist_ok=True)
    name = "_".join(key)
    for side, toks in (("base", ta), ("work", tb)):
        with open(os.path.join(keep, f"{name}.{side}.tokens"), "w", encoding="utf-8") as f:
            f.write("\n".join(toks) + "\n")


# ---- coverage ------------------------------------------------------------------------------------

def kernel_macros():
    """Macros the kernels test with defined() / #ifdef / #ifndef, and the files testing each."""
    tested = {}
    pat = re.compile(r"defined\s*\(?\s*([A-Z_][A-Z0-9_]*)|#\s*ifn?def\s+([A-Z_][A-Z0-9_]*)")
    cl = os.path.join(ROOT, "cl")
    for name in sorted(os.listdir(cl)):
        if name.endswith(".cl"):
            with open(os.path.join(cl, name), encoding="utf-8") as f:
                for m in pat.finditer(f.read()):
                    tested.setdefault(m.group(1) or m.group(2), set()).add(name)
    return tested


def diagnostic_macros():
    allowed = {}
    if os.path.isfile(DIAGNOSTIC_MACROS):
        with open(DIAGNOSTIC_MACROS, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    name, _, why = line.partition(" ")
                    allowed[name] = why.strip()
    return allowed


def option_macros(options):
    """{name: value} of the -D options of a build ("" for a bare -DNAME)."""
    out, words = {}, shlex.split(options)
    for i, w in enumerate(words):
        arg = w[2:] if w.startswith("-D") and len(w) > 2 else words[i + 1] if w == "-D" and i + 1 < len(words) else None
        if arg:
            name, _, value = arg.partition("=")
            out[name] = value
    return out


def coverage(args, work_dir, clang):
    """Every build preprocesses; every macro the kernels test is set by some build's options, or
    (one the kernels derive themselves) defined in some build and not in another that tests it."""
    builds, _, texts = read_set(work_dir, "working tree")
    if not builds:
        print("check_kernel_tokens: the emitted set is empty")
        return 1
    failures = 0
    tested, allowed = kernel_macros(), diagnostic_macros()
    pp = Preprocessor(clang, args.jobs)
    pp.run_all((texts[r["source"]], r["options"]) for r in builds.values())
    by_host, values, defined_in, undefined_in, mentions = {}, {}, {}, {}, {}
    for k, r in sorted(builds.items()):
        toks, _, defined, err = pp.get(texts[r["source"]], r["options"])
        if err is not None or not toks:
            failures += 1
            print(f"FAILED     {key_text(k)} ({r['variant']}): {err or 'no tokens'}")
            continue
        for name, value in option_macros(r["options"]).items():
            by_host[name] = by_host.get(name, 0) + 1
            values.setdefault(name, set()).add(value)
        if r["source"] not in mentions:
            words = set(re.findall(r"[A-Za-z_]\w*", texts[r["source"]].decode("utf-8", "replace")))
            mentions[r["source"]] = [m for m in tested if m in words]
        for m in mentions[r["source"]]:
            if m in defined:
                defined_in[m] = defined_in.get(m, 0) + 1
            else:
                undefined_in[m] = undefined_in.get(m, 0) + 1
    print(f"check_kernel_tokens: {len(builds)} builds ({len(pp.results)} distinct sources and options) preprocess "
          f"{'cleanly' if failures == 0 else f'with {failures} failures'}")
    print(f"check_kernel_tokens: the {len(tested)} macros the kernels test (defined() / #ifdef / #ifndef): "
          "builds whose options set it (values), or that define it / leave it undefined")
    for m in sorted(tested):
        host, dfn, undef = by_host.get(m, 0), defined_in.get(m, 0), undefined_in.get(m, 0)
        vals = sorted(v for v in values.get(m, set()) if v)
        shown = f" = {', '.join(vals[:8])}{' ...' if len(vals) > 8 else ''}" if vals else ""
        if host:
            print(f"  {m:24} set by {host} builds{shown}")
        elif dfn and undef:
            print(f"  {m:24} derived: defined in {dfn} builds, not in {undef}")
        elif m in allowed:
            print(f"  {m:24} never set: diagnostic only ({allowed[m]})")
        else:
            failures += 1
            state = f"defined in every build that tests it ({dfn})" if dfn else "never defined"
            print(f"  {m:24} NOT COVERED: {state} (tested in {', '.join(sorted(tested[m]))}): add a case to "
                  "tools/fa_cl_info_emit.c, or list it in tests/kernel_builds/diagnostic_macros.txt")
    for m in sorted(set(allowed) - set(tested)):
        print(f"  {m:24} listed as diagnostic but no kernel tests it: remove it from the list")
        failures += 1
    return failures


# ---- main ----------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], usage="%(prog)s [BASE_REV | --base-dir DIR "
                                 "| --coverage] [options]  (--help: the whole text)")
    ap.add_argument("base_rev", nargs="?")
    ap.add_argument("--base-dir")
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("--ctest", action="store_true")
    ap.add_argument("--work-info")
    ap.add_argument("--work-build")
    ap.add_argument("--work-dir", help=argparse.SUPPRESS)  # an already emitted working-tree set (tests)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--clang")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--context", type=int, default=12)
    ap.add_argument("--keep")
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        return 0
    args = ap.parse_args()
    modes = (args.base_rev is not None) + (args.base_dir is not None) + args.coverage + args.ctest
    if modes != 1:
        ap.print_usage(sys.stderr)
        die("give one of BASE_REV, --base-dir DIR, --coverage or --ctest")
    if args.ctest:
        args.base_rev = os.environ.get("FA_CL_TOKENS_BASE") or None
        args.coverage, args.quiet = args.base_rev is None, True
        print(f"check_kernel_tokens: {'against ' + args.base_rev if args.base_rev else 'coverage'} "
              "(FA_CL_TOKENS_BASE=REV compares with REV)")
    clang = find_clang(args.clang)
    with tempfile.TemporaryDirectory(prefix="fa_cl_tokens_emit.") as tmp:
        work_dir = args.work_dir or work_emission(args, tmp)
        if args.keep:
            shutil.copytree(work_dir, os.path.join(args.keep, "work_emit"), dirs_exist_ok=True)
        if args.coverage:
            return 1 if coverage(args, work_dir, clang) else 0
        base_dir = args.base_dir or base_emission(args.base_rev, args.jobs)[0]
        return 1 if compare(args, base_dir, work_dir, clang) else 0


if __name__ == "__main__":
    sys.exit(main())
