#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The error fp8 K/V add to fa_cl's attention, as FlashAttention-3's paper reports it: the RMSE of O
against a float64 attention on the unquantised inputs, for f16 K/V and for e4m3 / e5m2 K/V with
descale factors per tensor and per (batch, kv head), on random data and on data with outliers.

usage: python3 scripts/fp8_accuracy.py [-b 2] [-H 4] [-n 512] [-d 128] [--markdown]

Data (FlashAttention-3's section 4.3): q, k, v drawn from N(0, 1); "outliers" adds N(0, 10^2) to
0.1% of the entries. fp8 codes by round-to-nearest-even with saturation (OCP FP8, include/fa_cl.h
"fp8 K/V"), after dividing by the descale factor amax / (the format's largest finite value). q and o
in float16; the softmax scale 1/sqrt(d). Each row: the RMSE of O (fa_cl's against float64 on the
unquantised q, k, v), and the same for float64 attention on the dequantised K/V (the quantisation's
share, no kernel rounding). Runs on fa_cl's default device (PoCL here: the kernels there compute
in float32 like the GPU's accumulators)."""
import argparse
import sys

import numpy as np

import fa_cl

FORMATS = {"e4m3": (4, 3, 7), "e5m2": (5, 2, 15)}  # exponent bits, mantissa bits, bias


def fp8_table(name):
    """The values of the 256 codes (NaN where the format has NaN), as float64."""
    e_bits, m_bits, bias = FORMATS[name]
    vals = np.empty(256)
    for c in range(256):
        s, e, m = c >> 7, (c >> m_bits) & ((1 << e_bits) - 1), c & ((1 << m_bits) - 1)
        if name == "e4m3" and e == 15 and m == 7:
            v = np.nan  # e4m3fn: only S.1111.111 is NaN, no infinities
        elif name == "e5m2" and e == 31:
            v = np.inf if m == 0 else np.nan
        elif e == 0:
            v = m / (1 << m_bits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)
        vals[c] = -v if s else v
    return vals


def encode(x, name):
    """float64 x -> uint8 codes, nearest value (ties to the even code), saturating at the largest
    finite value."""
    vals = fp8_table(name)
    pos = [c for c in range(128) if np.isfinite(vals[c])]
    pv = vals[pos]  # ascending with the code
    a = np.minimum(np.abs(x), pv[-1])
    i = np.clip(np.searchsorted(pv, a), 1, len(pv) - 1)
    lo, hi = pv[i - 1], pv[i]
    pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & ((np.array(pos)[i] & 1) == 0))
    code = np.where(pick_hi, np.array(pos)[i], np.array(pos)[i - 1]).astype(np.uint8)
    return np.where(x < 0, code | 0x80, code).astype(np.uint8), vals


def attention64(q, k, v):
    """float64 attention, [B, S, H, d] layout, heads_q == heads_kv"""
    qt, kt, vt = (np.transpose(t.astype(np.float64), (0, 2, 1, 3)) for t in (q, k, v))
    s = qt @ np.swapaxes(kt, -1, -2) / np.sqrt(q.shape[-1])
    s -= s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return np.transpose(p @ vt, (0, 2, 1, 3))


def quantise(t, name, per_head):
    """codes, the descale factor argument (a float or float32 [B, H]) and the dequantised float64"""
    fmax = np.nanmax(np.abs(fp8_table(name)[np.isfinite(fp8_table(name))]))
    if per_head:
        f = np.abs(t).max(axis=(1, 3)) / fmax  # [B, H]
        codes, vals = encode(t / f[:, None, :, None], name)
        return codes, f.astype(np.float32), vals[codes] * f.astype(np.float32)[:, None, :, None]
    f = float(np.abs(t).max() / fmax)
    codes, vals = encode(t / f, name)
    return codes, np.float32(f), vals[codes] * np.float64(np.float32(f))


def rmse(a, b):
    return float(np.sqrt(np.mean((a.astype(np.float64) - b) ** 2)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-b", type=int, default=2)
    p.add_argument("-H", type=int, default=4)
    p.add_argument("-n", type=int, default=512)
    p.add_argument("-d", type=int, default=128)
    p.add_argument("--markdown", action="store_true", help="a table for docs/performance.md")
    a = p.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for data in ("random", "outliers"):
        q, k, v = (rng.standard_normal((a.b, a.n, a.H, a.d)) for _ in range(3))
        if data == "outliers":
            for t in (q, k, v):
                m = rng.random(t.shape) < 1e-3
                t[m] += rng.standard_normal(int(m.sum())) * 10.0
        q16 = q.astype(np.float16)
        ref = attention64(q16, k, v)  # q as the kernels see it; k and v unquantised
        o = fa_cl.flash_attn_func(q16, k.astype(np.float16), v.astype(np.float16))
        rows.append((data, "f16", "-", rmse(o, ref), rmse(attention64(q16, k.astype(np.float16), v.astype(np.float16)),
                                                          ref)))
        for name in ("e4m3", "e5m2"):
            for per_head in (False, True):
                kc, kf, kd = quantise(k, name, per_head)
                vc, vf, vd = quantise(v, name, per_head)
                o = fa_cl.flash_attn_func(q16, kc, vc, kv_dtype=name, k_descale=kf, v_descale=vf)
                rows.append((data, name, "per (b, kv head)" if per_head else "per tensor", rmse(o, ref),
                             rmse(attention64(q16, kd, vd), ref)))
    if a.markdown:
        print("| data | K/V | descale | RMSE of O (fa_cl) | of which quantisation (float64) |")
        print("|---|---|---|---|---|")
        for r in rows:
            print("| %s | %s | %s | %.2e | %.2e |" % r)
    else:
        print("B=%d H=%d N=%d d=%d, q/o f16, on fa_cl's default device" % (a.b, a.H, a.n, a.d))
        for r in rows:
            print("%-9s %-5s %-17s RMSE %.3e  (float64 on the dequantised K/V: %.3e)" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
