#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fa_cl beside PyTorch's attention kernels on the same shapes, in one run, into one CSV.

usage: scripts/bench.py [--suite tiny|gpu|cpu]... [--shape "FA_CL_BENCH ARGS"]... [--out FILE.csv]
                        [--fa-cl-bench PATH] [--python PATH | --no-anchor] [--device p:d|NAME]
                        [--reps N] [--append]

For each shape it runs build/tools/fa_cl_bench (the fused path alone, --json) and then
scripts/torch_sdpa_anchor.py (every PyTorch SDPA backend that takes the shape, --json) on the same
shape, and writes one CSV row: date, commit, device, the shape, fa_cl's figure with its kernel and
tile, and each anchor's figure from this same run (docs/performance.md, "How to reproduce"). Any
device fa_cl_bench runs on works; the anchor runs on the GPU PyTorch sees, else its CPU. Without
PyTorch (or with --no-anchor) the anchor columns stay empty. Figures: TFLOP/s for the forward
(4 * B * Hq * visible pairs * d) and for forward + backward (3.5x the forward's FLOPs), ms for
decoding (query rows <= 16, lower is better).

Shapes are fa_cl_bench's options ("-b 8 -h 16 -q 4096 -d 128 --dtype f16 --causal"; --backward
for forward + backward). Shapes PyTorch cannot express the same way (pages, q8_0 or other K/V types,
softcap, ALiBi, sinks, windows, per-sequence or varlen lengths) get fa_cl's figure alone.
Exit status: 0 every fa_cl row ran, 1 a row failed (the CSV is written all the same), 2 bad usage.
"""
import argparse
import csv
import datetime
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The rows docs/perf/results-<device>.csv hold, by the device they are sized for.
SUITES = {
    # seconds on a 2-core CPU through PoCL: one forward, one forward + backward, one decode row
    'tiny': [
        '-b 1 -h 2 -q 64 -d 32 --dtype f32',
        '-b 1 -h 2 -q 64 -d 32 --dtype f32 --backward',
        '-b 1 -h 4 --heads-kv 2 -q 1 -k 256 -d 32 --dtype f32',
    ],
    # the GPU table of docs/performance.md
    'gpu': [
        '-b 8 -h 16 -q 4096 -d 128 --dtype f16',
        '-b 8 -h 16 -q 4096 -d 128 --dtype bf16',
        '-b 8 -h 16 -q 4096 -d 64 --dtype f16',
        '-b 8 -h 16 -q 4096 -d 128 --dtype f16 --causal',
        '-b 2 -h 16 -q 4096 -d 256 --dtype f16',
        '-b 8 -h 16 -q 4096 -d 96 --dtype f16',
        '-b 64 -h 16 -q 512 -d 128 --dtype f16',
        '-b 1 -h 16 -q 16384 -d 128 --dtype f16',
        '-b 8 -h 16 -q 4096 -d 128 --dtype f32',
        '-b 8 -h 16 -q 4096 -d 128 --dtype f16 --mask f16',
        '-b 8 -h 16 -q 4096 -d 128 --dtype f16 --softcap 30',
        '-b 8 -h 16 -q 4096 -d 128 --dtype f16 --window 256,0',
        '-b 8 -h 16 -q 4096 -d 128 --dtype f16 --backward',
        '-b 8 -h 16 -q 4096 -d 128 --dtype bf16 --backward',
        '-b 8 -h 16 -q 4096 -d 64 --dtype f16 --backward',
        '-b 8 -h 16 -q 4096 -d 128 --dtype f16 --causal --backward',
        '-b 2 -h 16 -q 4096 -d 256 --dtype f16 --backward',
        '-b 2 -h 64 --heads-kv 8 -q 8192 -d 128 --dtype bf16 --backward',
        '-b 16 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f16',
        '-b 16 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f16',
        '-b 1 -h 32 --heads-kv 8 -q 1 -k 131072 -d 128 --dtype f16',
        '-b 16 -h 32 --heads-kv 8 -q 8 -k 32768 -d 128 --dtype f16 --causal',
        '-b 16 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f16 --page-size 16',
        '-b 16 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f16 --kv-dtype q8_0',
        # issue 51's decode target: fp8 K/V at most 0.55x the f16 row, pages of 16 within 1.1x contiguous
        '-b 16 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f16 --kv-dtype e4m3',
        '-b 16 -h 32 --heads-kv 8 -q 1 -k 32768 -d 128 --dtype f16 --kv-dtype e4m3 --page-size 16',
    ],
    # a CPU beside PyTorch's CPU kernels
    'cpu': [
        '-b 1 -h 8 -q 1024 -d 64 --dtype f32',
        '-b 1 -h 8 -q 2048 -d 128 --dtype f32 --causal',
        '-b 1 -h 8 -q 2048 -d 64 --dtype bf16',
        '-b 4 -h 32 --heads-kv 8 -q 1 -k 8192 -d 128 --dtype f32',
    ],
}

COLUMNS = ['date', 'commit', 'device', 'b', 'h', 'hkv', 'sq', 'sk', 'd', 'dtype', 'kv_dtype', 'causal', 'window',
           'mask', 'page_size', 'modifiers', 'direction', 'unit', 'fa_cl', 'fa_cl_ms', 'kv_tbps', 'kernel', 'tile',
           'fa2', 'cudnn', 'mem_efficient', 'math', 'fa4', 'anchor', 'separate_run', 'note']
# torch_sdpa_anchor.py's backends -> columns (FLASH_ATTENTION: FlashAttention-2 on CUDA)
ANCHORS = {'FLASH_ATTENTION': 'fa2', 'CUDNN_ATTENTION': 'cudnn', 'EFFICIENT_ATTENTION': 'mem_efficient',
           'MATH': 'math'}
DECODE_MAX_ROWS = 16


def bench_options(args):
    """fa_cl_bench's shape options, parsed as it parses them (only what a row's columns need)."""
    p = argparse.ArgumentParser(add_help=False, prog='shape')
    for o in ('-b', '-h', '--heads-kv', '-q', '-k', '-d', '--softcap', '--page-size', '--head-dim-v'):
        p.add_argument(o, type=int)
    for o in ('--dtype', '--kv-dtype', '--mask', '--window', '--cache-seqlens', '--varlen', '--varlen-k'):
        p.add_argument(o)
    for o in ('--causal', '--alibi', '--sinks', '--backward', '--tree', '--latent'):
        p.add_argument(o, action='store_true')
    opts, rest = p.parse_known_args(shlex.split(args))
    return opts, rest


def anchor_args(opts, row):
    """torch_sdpa_anchor.py's options for the same computation, or None where PyTorch has no
    equivalent call (fa_cl's row stands alone then)."""
    if (opts.page_size or opts.softcap or opts.alibi or opts.sinks or opts.cache_seqlens or opts.varlen or opts.tree
            or opts.latent
            or (opts.kv_dtype and opts.kv_dtype != row['dtype']) or tuple(row['window']) != (-1, -1)
            or (opts.mask and opts.causal)):
        return None
    a = ['-b', row['B'], '-H', row['Hq'], '--hkv', row['Hkv'], '-q', row['Sq'], '-k', row['Sk'], '-d', row['d'],
         '--dtype', row['dtype']]
    a += ['--causal'] if row['causal'] else []
    a += ['--dv', opts.head_dim_v] if opts.head_dim_v else []
    a += ['--mask', opts.mask] if opts.mask else []
    a += ['--backward'] if opts.backward else []
    return [str(x) for x in a]


def commit_of_checkout():
    try:
        out = subprocess.run(['git', '-C', ROOT, 'describe', '--always', '--dirty', '--abbrev=7'],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def run_fa_cl(cmd, args, opts, reps, device, tmp):
    """fa_cl_bench on one shape: its JSON row, or (None, why)."""
    path = os.path.join(tmp, 'fa_cl.json')
    full = [cmd] + shlex.split(args) + ['--no-reference', '--reps', str(reps), '--json', path]
    full += ['--device', device] if device else []
    p = subprocess.run(full, capture_output=True, text=True)
    try:
        with open(path) as f:
            doc = json.load(f)
        row = doc['rows'][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        lines = (p.stderr or p.stdout).strip().splitlines()
        why = lines[-1] if p.returncode and lines else 'its --json did not parse: %s' % e
        return None, None, 'fa_cl_bench exit %d: %s' % (p.returncode, why)
    failed = row.get('failed') or (opts.backward and row.get('bwd_ms', -1) < 0)
    return doc['device'], row, (row.get('note') or 'failed') if failed else ''


def run_anchor(python, a, reps, tmp):
    """torch_sdpa_anchor.py on the same shape: (its rows, its environment, '') or ([], '', why)."""
    path = os.path.join(tmp, 'anchor.json')
    if os.path.exists(path):
        os.remove(path)
    cmd = [python, os.path.join(ROOT, 'scripts', 'torch_sdpa_anchor.py'), *a, '--reps', str(max(reps, 10)),
           '--json', path]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        lines = (p.stderr or p.stdout).strip().splitlines()
        return [], '', 'anchor exit %d: %s' % (p.returncode, lines[-1] if lines else 'no output')
    env = 'torch %s on %s' % (doc.get('torch', '?'), doc.get('device', '?'))
    return doc['rows'], env + ('' if doc['rows'] else ' (no backend took the shape)'), ''


def fmt(x):
    """6 significant digits: 648.881 TFLOP/s, 0.208312 ms, a CPU's 0.0051 TFLOP/s"""
    return '' if x is None else '%.6g' % x


def csv_row(date, commit, device, opts, r, note, anchors, env):
    """One CSV row of a shape: fa_cl's figure and each anchor's in the same unit."""
    backward = opts.backward
    decode = not backward and not r.get('varlen_q') and r['Sq'] <= DECODE_MAX_ROWS
    direction = 'fwd+bwd' if backward else 'decode' if decode else 'fwd'
    unit = 'ms' if decode else 'TFLOP/s'
    mods = [m for m, on in (('softcap %d' % r['softcap'], r['softcap']), ('alibi', r['alibi']), ('sinks', r['sinks']))
            if on]
    if r.get('varlen_q'):
        mods.append('varlen ' + ','.join(str(x) for x in r['varlen_q']))
    if r.get('cache_seqlens'):
        mods.append('cache_seqlens ' + ','.join(str(x) for x in r['cache_seqlens']))
    if r.get('tree'):
        mods.append('tree')
    if r.get('head_dim_v'):
        mods.append('d_v %d%s' % (r['head_dim_v'], ' latent' if r.get('latent') else ''))
    out = {'date': date, 'commit': commit, 'device': device, 'b': r['B'], 'h': r['Hq'], 'hkv': r['Hkv'],
           'sq': r['Sq'], 'sk': r['Sk'], 'd': r['d'], 'dtype': r['dtype'], 'kv_dtype': r['kv_dtype'],
           'causal': int(bool(r['causal'])), 'window': '%d,%d' % tuple(r['window']), 'mask': r['mask'],
           'page_size': r['page_size'] or '', 'modifiers': '+'.join(mods), 'direction': direction, 'unit': unit,
           'note': note}
    if not (r.get('failed') or (backward and r.get('bwd_ms', -1) < 0)):
        if backward:
            out.update(fa_cl=fmt(r['fwd_bwd_tflops']), fa_cl_ms=fmt(r['fwd_bwd_ms']), kernel=r['bwd_kernel'],
                       tile='%dx%d' % (r['bwd_block'], r.get('bwd_block_kv', r['bwd_block'])))
        else:
            out.update(fa_cl=fmt(r['fused_ms']) if decode else fmt(r['fused_tflops']),
                       fa_cl_ms=fmt(r['fused_ms']), kv_tbps=fmt(r['fused_kv_tbps']), kernel=r['kernel'],
                       tile='%dx%d' % (r['block_q'], r['block_kv']))
    for a in anchors:
        out[ANCHORS[a['backend']]] = fmt(a['ms']) if decode else fmt(a['tflops'])
    out['anchor'] = env
    return out


def write_csv(path, rows, append=False):
    """rows into path in COLUMNS' order (after what it holds where append, else replacing it)."""
    new = append and os.path.exists(path) and os.path.getsize(path) > 0
    with open(path, 'a' if new else 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, restval='', lineterminator='\n')
        if not new:
            w.writeheader()
        w.writerows(rows)


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--suite', action='append', choices=sorted(SUITES), default=[],
                   help='built-in shapes (repeatable): ' + ', '.join(sorted(SUITES)))
    p.add_argument('--shape', action='append', default=[], help="one shape as fa_cl_bench's options (repeatable)")
    p.add_argument('--out', default='bench.csv', help='the CSV to write (default bench.csv)')
    p.add_argument('--append', action='store_true', help='add rows to --out instead of replacing it')
    p.add_argument('--fa-cl-bench', default=os.path.join(os.environ.get('FA_CL_BUILD_DIR', 'build'), 'tools',
                                                         'fa_cl_bench'), help='the fa_cl_bench to run')
    p.add_argument('--python', default=sys.executable, help='the Python that imports torch (default: this one)')
    p.add_argument('--no-anchor', action='store_true', help='fa_cl alone (anchor columns empty)')
    p.add_argument('--device', help="fa_cl's device, as fa_cl_bench --device takes it")
    p.add_argument('--reps', type=int, default=10, help='timed calls per figure (median; default 10)')
    a = p.parse_args()
    shapes = [s for name in a.suite for s in SUITES[name]] + a.shape
    if not shapes:
        p.error('no shapes: give --suite or --shape')
    if not os.access(a.fa_cl_bench, os.X_OK):
        p.error('%s: not an executable (build first: bash scripts/setup.sh build, or --fa-cl-bench)' % a.fa_cl_bench)
    parsed = []
    for s in shapes:
        opts, rest = bench_options(s)
        if rest and any(x.startswith('--suite') or x.startswith('--json') for x in rest):
            p.error('--shape %r: one shape, without --suite or --json' % s)
        parsed.append((s, opts))

    anchor = not a.no_anchor
    if anchor:
        probe = subprocess.run([a.python, '-c', 'import torch'], capture_output=True, text=True)
        if probe.returncode != 0:
            print('bench.py: %s cannot import torch: anchor columns stay empty' % a.python, file=sys.stderr)
            anchor = False

    date = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')
    commit = commit_of_checkout()
    failures = 0
    rows = []
    with tempfile.TemporaryDirectory(prefix='fa_cl_bench_') as tmp:
        for s, opts in parsed:
            device, r, err = run_fa_cl(a.fa_cl_bench, s, opts, a.reps, a.device, tmp)
            if r is None:
                print('bench.py: %s: %s' % (s, err), file=sys.stderr)
                failures += 1
                continue
            failures += bool(err)
            anchors, env, why = [], '', ''
            aa = anchor_args(opts, r) if anchor else None
            if aa is not None:
                anchors, env, why = run_anchor(a.python, aa, a.reps, tmp)
            row = csv_row(date, commit, device, opts, r, '; '.join(x for x in (err, why) if x), anchors, env)
            rows.append(row)
            print('%-60s %10s %-7s %-24s %s' % (s, row.get('fa_cl', '') or 'FAILED', row['unit'],
                                               row.get('kernel', ''),
                                               ' '.join('%s %s' % (c, row[c]) for c in ANCHORS.values() if row.get(c))))
            sys.stdout.flush()

    write_csv(a.out, rows, a.append)
    print('bench.py: %d rows to %s%s' % (len(rows), a.out, ', %d failed' % failures if failures else ''))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
