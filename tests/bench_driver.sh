#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/bench.py on its tiny suite: fa_cl's rows on the device in one CSV (no PyTorch: the anchor
# columns empty); then again with a stand-in interpreter for PyTorch's anchor (it writes the
# anchor's JSON), whose figures must land in the same rows, in each row's unit.
#   tests/bench_driver.sh PYTHON FA_CL_BENCH WORKDIR
set -euo pipefail
py=$1 bench=$2 work=$3
# the configured interpreter, or (a build carried to another machine) the one on PATH
[ -x "$py" ] || py=$(command -v python3)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rm -rf "$work" && mkdir -p "$work"

"$py" "$src/scripts/bench.py" --suite tiny --fa-cl-bench "$bench" --no-anchor --out "$work/plain.csv"

# the stand-in: `-c 'import torch'` succeeds; a run writes two backends' figures to its --json
cat >"$work/fake_python" <<'EOF'
#!/usr/bin/env bash
[ "$1" = -c ] && exit 0
while [ $# -gt 0 ]; do [ "$1" = --json ] && out=$2; shift; done
printf '{"device": "stand-in", "torch": "0-test", "rows": [{"backend": "FLASH_ATTENTION", "ms": 0.5, "tflops": 2.5},
 {"backend": "MATH", "ms": 4.0, "tflops": 0.25}]}\n' >"$out"
EOF
chmod +x "$work/fake_python"
"$py" "$src/scripts/bench.py" --suite tiny --fa-cl-bench "$bench" --python "$work/fake_python" \
    --out "$work/anchored.csv"

"$py" - "$work/plain.csv" "$work/anchored.csv" <<'EOF'
import csv, sys
bad = []
def check(cond, what):
    if not cond:
        bad.append(what)
for path, anchored in ((sys.argv[1], False), (sys.argv[2], True)):
    rows = list(csv.DictReader(open(path)))
    check([r['direction'] for r in rows] == ['fwd', 'fwd+bwd', 'decode'], f'{path}: directions {[r["direction"] for r in rows]}')
    for r in rows:
        tag = f"{path} {r['direction']}"
        for col in ('date', 'commit', 'device', 'kernel', 'tile', 'fa_cl', 'fa_cl_ms'):
            check(r[col] != '', f'{tag}: {col} empty')
        check(float(r['fa_cl'] or 0) > 0, f"{tag}: fa_cl {r['fa_cl']!r}")
        check(r['unit'] == ('ms' if r['direction'] == 'decode' else 'TFLOP/s'), f"{tag}: unit {r['unit']}")
        if r['direction'] == 'decode':
            check(r['fa_cl'] == r['fa_cl_ms'], f'{tag}: decode figure is not its time')
        want = ((0.5, 4.0) if r['direction'] == 'decode' else (2.5, 0.25)) if anchored else None
        got = (float(r['fa2']), float(r['math'])) if r['fa2'] and r['math'] else None
        check(got == want, f"{tag}: anchors {r['fa2']!r} {r['math']!r}, want {want}")
        check(r['cudnn'] == '' and r['mem_efficient'] == '', f'{tag}: anchors the run did not give')
        check((r['anchor'] == 'torch 0-test on stand-in') == anchored, f"{tag}: anchor {r['anchor']!r}")
print('\n'.join(bad) or 'bench.py: every row and column as expected')
sys.exit(1 if bad else 0)
EOF
