#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fa_cl on a CPU device beside PyTorch's CPU attention, alternating, into one CSV.

usage: scripts/cpu_bench.py [--shape "FA_CL_BENCH ARGS"]... [--rounds R] [--reps N] [--threads T]
                            [--python PATH | --no-anchor] [--no-portable] [--out FILE.csv]
                            [--fa-cl-bench PATH] [--device p:d|NAME]

For each shape (default: issue 49's table, bench.py's cpu suite and an f16 row), R rounds
(default 5), each running in turn: fa_cl_bench --no-reference with the device's plan (the cpu
family on a CPU device), fa_cl_bench with the portable kernel (FA_CL_TUNE=cpu:enabled=0: the path
CPUs took before the cpu family), and PyTorch's scaled_dot_product_attention on CPU tensors
(scripts/torch_sdpa_anchor.py --backends default: PyTorch's own dispatch, torch.set_num_threads(T),
T = the CPU's cores by default). Each run's figure is the median of its N calls; the CSV row
holds the median over the rounds, and its note the median of the per-round ratios PyTorch ms /
fa_cl ms (above 1: fa_cl faster), which holds where the machine's speed drifts between rounds.
One row per shape and fa_cl kernel, in docs/perf/results-pocl.csv's columns (PyTorch in `fa2`,
as there). Decode rows (query rows <= 16) also carry a STREAM-like copy bandwidth in their note:
a C copy of two 256 MiB arrays on T threads (cc -O2 -fopenmp, compiled into a temporary
directory; run in every round, beside fa_cl), bytes read + written per second as STREAM's Copy
counts them, beside fa_cl's K/V bytes read per second, and the median of the per-round ratios.
Exit status: 0 every fa_cl run ran, 1 one failed, 2 bad usage.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (scripts/bench.py: fa_cl_bench's rows and the CSV's columns)

SHAPES = bench.SUITES['cpu'] + ['-b 1 -h 8 -q 1024 -d 64 --dtype f16']

STREAM_C = r'''
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void)
{
    const size_t n = (size_t)64 << 20; /* floats: 256 MiB an array */
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    if (!a || !b)
        return 1;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        a[i] = (float)i, b[i] = 0.0f; /* each thread's pages first touched by it */
    double best = 0.0;
    for (int r = 0; r < 7; r++) {
        const double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++)
            b[i] = a[i];
        const double gbs = 2.0 * n * sizeof *a / (omp_get_wtime() - t0) / 1e9;
        best = gbs > best ? gbs : best;
    }
    printf("%.2f\n", best + 0.0 * b[n / 2]);
    return 0;
}
'''


def stream_copy_build(tmp):
    """The STREAM-like copy's executable, or None where cc -fopenmp cannot build it."""
    src, exe = os.path.join(tmp, 'copy.c'), os.path.join(tmp, 'copy')
    with open(src, 'w') as f:
        f.write(STREAM_C)
    built = subprocess.run(['cc', '-O2', '-fopenmp', src, '-o', exe], capture_output=True).returncode == 0
    return exe if built else None


def stream_copy_gbs(exe, threads):
    """STREAM-like copy bandwidth (GB/s, read + write, best of 7), or None."""
    if exe is None:
        return None
    p = subprocess.run([exe], capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    try:
        return float(p.stdout.strip())
    except ValueError:
        return None


def run_torch(python, row, threads, reps, tmp):
    """PyTorch's default SDPA dispatch on the CPU for fa_cl's row: (ms, environment) or (None, why)."""
    path = os.path.join(tmp, 'torch.json')
    if os.path.exists(path):
        os.remove(path)
    a = ['-b', row['B'], '-H', row['Hq'], '--hkv', row['Hkv'], '-q', row['Sq'], '-k', row['Sk'], '-d', row['d'],
         '--dtype', row['dtype'], '--device', 'cpu', '--threads', threads, '--backends', 'default', '--reps',
         max(reps, 10), '--json', path] + (['--causal'] if row['causal'] else [])
    p = subprocess.run([python, os.path.join(bench.ROOT, 'scripts', 'torch_sdpa_anchor.py')] + [str(x) for x in a],
                       capture_output=True, text=True)
    try:
        with open(path) as f:
            doc = json.load(f)
        return doc['rows'][0]['ms'], 'torch %s on CPU (%d threads; the default SDPA dispatch)' % (doc['torch'], threads)
    except (OSError, ValueError, KeyError, IndexError):
        lines = (p.stderr or p.stdout).strip().splitlines()
        return None, 'torch exit %d: %s' % (p.returncode, lines[-1] if lines else 'no output')


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--shape', action='append', default=[], help="a shape as fa_cl_bench's options (repeatable)")
    p.add_argument('--rounds', type=int, default=5, help='alternating rounds (median over them; default 5)')
    p.add_argument('--reps', type=int, default=10, help='timed calls a run (its median; default 10)')
    p.add_argument('--threads', type=int, default=os.cpu_count() or 1, help="PyTorch's and the copy's threads")
    p.add_argument('--python', default=sys.executable, help='the Python that imports torch (default: this one)')
    p.add_argument('--no-anchor', action='store_true', help='fa_cl alone')
    p.add_argument('--no-portable', action='store_true', help='without the portable kernel rows')
    p.add_argument('--out', default='cpu_bench.csv', help='the CSV to write (default cpu_bench.csv)')
    p.add_argument('--fa-cl-bench', default=os.path.join(os.environ.get('FA_CL_BUILD_DIR', 'build'), 'tools',
                                                         'fa_cl_bench'), help='the fa_cl_bench to run')
    p.add_argument('--device', help="fa_cl's device, as fa_cl_bench --device takes it")
    a = p.parse_args()
    if a.rounds < 1 or a.reps < 10:
        p.error('--rounds must be >= 1 and --reps >= 10')
    if not os.access(a.fa_cl_bench, os.X_OK):
        p.error('%s: not an executable (build first, or --fa-cl-bench)' % a.fa_cl_bench)
    anchor = not a.no_anchor
    if anchor and subprocess.run([a.python, '-c', 'import torch'], capture_output=True).returncode != 0:
        print('cpu_bench.py: %s cannot import torch: no PyTorch column' % a.python, file=sys.stderr)
        anchor = False
    variants = [('plan', None)] + ([] if a.no_portable else [('portable', 'cpu:enabled=0')])
    date = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')
    commit = bench.commit_of_checkout()
    rows, failures = [], 0
    with tempfile.TemporaryDirectory(prefix='fa_cl_cpu_bench_') as tmp:
        copy_exe = stream_copy_build(tmp)
        for shape in a.shape or SHAPES:
            opts, _ = bench.bench_options(shape)
            runs = {name: [] for name, _ in variants}
            torch_ms, copies, env, why = [], [], '', ''
            decode = opts.q is not None and opts.q <= bench.DECODE_MAX_ROWS and not opts.varlen
            for _ in range(a.rounds):
                for name, tune in variants:
                    saved = os.environ.get('FA_CL_TUNE')
                    if tune:
                        os.environ['FA_CL_TUNE'] = tune + (',' + saved if saved else '')
                    device, r, err = bench.run_fa_cl(a.fa_cl_bench, shape, opts, a.reps, a.device, tmp)
                    if tune:
                        os.environ.pop('FA_CL_TUNE') if saved is None else os.environ.update(FA_CL_TUNE=saved)
                    if r is None or err:
                        print('cpu_bench.py: %s (%s): %s' % (shape, name, err), file=sys.stderr)
                        failures += 1
                        continue
                    runs[name].append((device, r))
                if decode:
                    copies.append(stream_copy_gbs(copy_exe, a.threads))
                if anchor and runs['plan']:
                    ms, info = run_torch(a.python, runs['plan'][-1][1], a.threads, a.reps, tmp)
                    if ms is None:
                        why = info
                    else:
                        torch_ms.append(ms)
                        env = info
            for name, _ in variants:
                if not runs[name]:
                    continue
                device, r = runs[name][len(runs[name]) // 2]
                ms = [x['fused_ms'] for _, x in runs[name]]
                r = dict(r, fused_ms=statistics.median(ms),
                         fused_tflops=statistics.median(x['fused_tflops'] for _, x in runs[name]),
                         fused_kv_tbps=statistics.median(x['fused_kv_tbps'] for _, x in runs[name]))
                note = ['median of %d alternating rounds of %d calls' % (len(ms), a.reps)]
                if torch_ms and len(torch_ms) == len(ms):
                    ratio = statistics.median(t / f for t, f in zip(torch_ms, ms))
                    note.append('PyTorch ms / fa_cl ms per round, median %.2f' % ratio)
                if decode and copies and None not in copies and len(copies) == len(ms):
                    kv = [x['fused_kv_tbps'] * 1e3 for _, x in runs[name]]
                    note.append('K/V read %.1f GB/s; STREAM-like copy %.1f GB/s (%d threads); per round K/V / copy, '
                                'median %.2f' % (statistics.median(kv), statistics.median(copies), a.threads,
                                                 statistics.median(k / c for k, c in zip(kv, copies))))
                note += [why] if why else []
                anchors = []
                if torch_ms:
                    t = statistics.median(torch_ms)
                    anchors = [{'backend': 'FLASH_ATTENTION', 'ms': t, 'tflops': r['fused_tflops'] * r['fused_ms'] / t}]
                row = bench.csv_row(date, commit, device, opts, r, '; '.join(note), anchors, env)
                rows.append(row)
                print('%-52s %-9s %10s %-7s torch %s  (%s)' % (shape, row.get('kernel', ''), row['fa_cl'], row['unit'],
                                                               row.get('fa2') or '-', '; '.join(note[1:])))
                sys.stdout.flush()
    bench.write_csv(a.out, rows)
    print('cpu_bench.py: %d rows to %s%s' % (len(rows), a.out, ', %d runs failed' % failures if failures else ''))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
