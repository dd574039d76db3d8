# SPDX-License-Identifier: Apache-2.0
"""The float64 oracle of fa_cl's Python tests and its tolerances (tests/tolerance.h): |got - ref| <=
abs + rel * |ref| per element, with the reference computed in float64 from the values the device
holds (inputs rounded to the dtype)."""
import numpy as np

TOL = {"f32": (1e-5, 1e-4), "f16": (1e-3, 2e-3), "bf16": (8e-3, 1.6e-2)}
LSE_REL = 1e-4


def bf16_bits(x):
    """float -> bfloat16 bits (uint16), rounding to nearest even."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def make(shape, dtype, rng, scale=1.0):
    x = rng.standard_normal(shape).astype(np.float32) * scale
    if dtype == "f32":
        return x
    if dtype == "f16":
        return x.astype(np.float16)
    return bf16_bits(x)


def value(a, dtype):
    a = a.get() if hasattr(a, "get") else a  # a pyopencl array: its contents
    return bf16_value(a).astype(np.float64) if dtype == "bf16" else np.asarray(a, np.float64)


def visible(sq, sk, causal, window):
    """[Sq, Sk] bool: the keys each row sees, bottom-right aligned (key j, row i: diagonal i + Sk - Sq)."""
    diag = np.arange(sq)[:, None] + sk - sq
    j = np.arange(sk)[None, :]
    vis = np.ones((sq, sk), bool)
    if causal:
        vis &= j <= diag
    if window[0] >= 0:
        vis &= j >= diag - window[0]
    if window[1] >= 0:
        vis &= j <= diag + window[1]
    return vis


def oracle(q, k, v, scale=None, causal=False, window=(-1, -1), lens=None, softcap=0.0, slopes=None, sinks=None,
           mask=None):
    """float64 attention on [B, Sq, Hq, D] / [B, Sk, Hkv, D] (v [B, Sk, Hkv, Dv], o its Dv); bottom-right masks
    (per-sequence lens), score modifiers (include/fa_cl.h): softcap, then ALiBi, then the attention mask
    (broadcastable to [B, Hq, Sq, Sk]; bool: False masks the key, float: added). Returns (o, lse
    [B, Hq, Sq]); rows that see no key give 0 and -inf (with a sink: 0 and the sink)."""
    b, sq, hq, d = q.shape
    sk, hkv, dv = k.shape[1], k.shape[2], v.shape[3]  # v and o rows: their own head_dim (head_dim_v)
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    if mask is not None:
        mask = np.asarray(mask)
        add = np.where(mask, 0.0, -np.inf) if mask.dtype == np.bool_ else mask.astype(np.float64)
        add = np.broadcast_to(add, (b, hq, sq, sk))
    o = np.zeros((b, sq, hq, dv))
    lse = np.full((b, hq, sq), -np.inf)
    for bi in range(b):
        n = sk if lens is None else int(np.clip(lens[bi], 0, sk))
        for h in range(hq):
            kh = h // (hq // hkv)
            s = (q[bi, :, h, :] @ k[bi, :n, kh, :].T) * scale
            i = np.arange(sq)[:, None]
            j = np.arange(n)[None, :]
            diag = i + n - sq
            if softcap:
                s = softcap * np.tanh(s / softcap)
            if slopes is not None:
                s = s - float(slopes[h]) * np.abs(diag - j)
            if mask is not None:
                s = s + add[bi, h, :, :n]
            s = np.where(visible(sq, n, causal, window), s, -np.inf)
            m = s.max(axis=1, initial=-np.inf)
            sink = -np.inf if sinks is None else float(sinks[h])
            m = np.maximum(m, sink)
            ok = np.isfinite(m)
            p = np.where(ok[:, None], np.exp(s - np.where(ok, m, 0)[:, None]), 0.0)
            l = p.sum(axis=1) + (np.exp(sink - np.where(ok, m, 0)) if sinks is not None else 0.0)
            o[bi, :, h, :] = np.where(ok[:, None], (p @ v[bi, :n, kh, :]) / np.where(ok, l, 1)[:, None], 0.0)
            lse[bi, h, :] = np.where(ok, m + np.log(np.where(ok, l, 1)), -np.inf)
    return o, lse


def assert_close(got, ref, dtype, what=""):
    a, r = TOL[dtype]
    err = np.abs(got - ref) - (a + r * np.abs(ref))
    worst = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= 0, "%s: |got - ref| over the %s tolerance at %s: got %r, ref %r" % (
        what, dtype, worst, got[worst], ref[worst])


def assert_lse(got, ref):
    fin = np.isfinite(ref)
    assert np.array_equal(np.isfinite(got), fin), "LSE: -inf rows differ"
    bound = LSE_REL * np.maximum(np.abs(ref[fin]), 1.0)
    assert np.all(np.abs(got[fin] - ref[fin]) <= bound), "LSE outside %g relative" % LSE_REL


def backward_oracle(q, k, v, dout, scale=None, causal=False, window=(-1, -1)):
    """float64 gradients of flash_attn_func on [B, S, H, D] arrays: P from the softmax, D = rowsum(dO o O),
    dS = P (dP - D); GQA: dk, dv summed over each kv head's query heads."""
    b, sq, hq, d = q.shape
    sk, hkv, dv = k.shape[1], k.shape[2], v.shape[3]  # v and o rows: their own head_dim (head_dim_v)
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    vis = visible(sq, sk, causal, window)
    for bi in range(b):
        for h in range(hq):
            kh = h // (hq // hkv)
            s = np.where(vis, (q[bi, :, h] @ k[bi, :, kh].T) * scale, -np.inf)
            m = s.max(axis=1, keepdims=True)
            p = np.where(vis, np.exp(s - np.where(np.isfinite(m), m, 0)), 0.0)
            den = p.sum(axis=1, keepdims=True)
            p = np.divide(p, den, out=np.zeros_like(p), where=den > 0)
            o = p @ v[bi, :, kh]
            dd = (dout[bi, :, h] * o).sum(axis=1, keepdims=True)
            dp = dout[bi, :, h] @ v[bi, :, kh].T
            ds = p * (dp - dd)
            dq[bi, :, h] = scale * ds @ k[bi, :, kh]
            dk[bi, :, kh] += scale * ds.T @ q[bi, :, h]
            dv[bi, :, kh] += p.T @ dout[bi, :, h]
    return dq, dk, dv

