# SPDX-License-Identifier: Apache-2.0
"""fa_cl's Python calls against a numpy float64 oracle (PoCL in CI; any OpenCL device); tolerances
and the oracle in oracle.py."""
import json
import subprocess
import sys

import numpy as np
import pytest

import fa_cl
from oracle import TOL, assert_close, assert_lse, backward_oracle, bf16_bits, bf16_value, make, oracle, value

@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("causal,window", [(False, (-1, -1)), (True, (-1, -1)), (False, (5, 3))])
def test_flash_attn_func_numpy(dtype, causal, window):
    rng = np.random.default_rng(1)
    q, k, v = make((2, 19, 4, 40), dtype, rng), make((2, 33, 2, 40), dtype, rng), make((2, 33, 2, 40), dtype, rng)
    o, lse = fa_cl.flash_attn_func(q, k, v, causal=causal, window_size=window, return_lse=True)
    assert isinstance(o, np.ndarray) and o.shape == q.shape and o.dtype == q.dtype
    ref, ref_lse = oracle(value(q, dtype), value(k, dtype), value(v, dtype), causal=causal, window=window)
    assert_close(value(o, dtype), ref, dtype, "flash_attn_func %s causal=%s window=%s" % (dtype, causal, window))
    assert lse.shape == (2, 4, 19) and lse.dtype == np.float32
    assert_lse(lse.astype(np.float64), ref_lse)


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_score_modifiers(dtype):
    """softcap, ALiBi slopes and sinks together, causal with GQA (rows of a window see no key: the sink's LSE)"""
    rng = np.random.default_rng(8)
    q, k, v = make((2, 21, 4, 32), dtype, rng, 2.0), make((2, 40, 2, 32), dtype, rng, 2.0), make((2, 40, 2, 32), dtype, rng)
    slopes = (2.0 ** (-8.0 * np.arange(1, 5) / 4)).astype(np.float32)
    sinks = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    o, lse = fa_cl.flash_attn_func(q, k, v, causal=True, softcap=5.0, alibi_slopes=slopes, sinks=sinks, return_lse=True)
    ref, ref_lse = oracle(value(q, dtype), value(k, dtype), value(v, dtype), causal=True, softcap=5.0, slopes=slopes,
                          sinks=sinks)
    assert_close(value(o, dtype), ref, dtype, "score modifiers %s" % dtype)
    assert_lse(lse.astype(np.float64), ref_lse)
    with pytest.raises(ValueError, match="one per query head"):
        fa_cl.flash_attn_func(q, k, v, sinks=sinks[:3])
    with pytest.raises(ValueError, match="softcap"):
        fa_cl.flash_attn_func(q, k, v, softcap=-1.0)


def test_pyopencl_arrays_in_and_out_without_copies(cla, queue):
    rng = np.random.default_rng(2)
    qn, kn, vn = (make((1, 64, 8, 64), "f16", rng) for _ in range(3))
    q, k, v = (cla.to_device(queue, a) for a in (qn, kn, vn))
    o = fa_cl.flash_attn_func(q, k, v, causal=True, softmax_scale=0.07)
    assert isinstance(o, cla.Array) and o.queue == queue and o.shape == q.shape
    ref, _ = oracle(value(qn, "f16"), value(kn, "f16"), value(vn, "f16"), scale=0.07, causal=True)
    assert_close(value(o, "f16"), ref, "f16", "pyopencl in/out")


def test_strided_views_of_one_buffer(cla, queue):
    """q, k and v as views into one packed qkv tensor [B, S, 3, H, D] (no copies)."""
    rng = np.random.default_rng(3)
    qkv_n = make((2, 30, 3, 4, 32), "f32", rng)
    qkv = cla.to_device(queue, qkv_n)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    o = fa_cl.flash_attn_func(q, k, v)
    ref, _ = oracle(qkv_n[:, :, 0].astype(np.float64), qkv_n[:, :, 1].astype(np.float64), qkv_n[:, :, 2].astype(np.float64))
    assert_close(o.get().astype(np.float64), ref, "f32", "qkv views")


@pytest.mark.parametrize("sq,sk", [(16, 16), (7, 29), (29, 7)])
def test_sdpa_top_left_causal_and_gqa(sq, sk):
    rng = np.random.default_rng(4)
    q, k, v = make((2, 4, sq, 32), "f32", rng), make((2, 2, sk, 32), "f32", rng), make((2, 2, sk, 32), "f32", rng)
    o = fa_cl.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert o.shape == (2, 4, sq, 32)
    # PyTorch's top-left mask, computed directly
    qd, kd, vd = (a.astype(np.float64) for a in (q, k, v))
    ref = np.zeros_like(o, dtype=np.float64)
    for b in range(2):
        for h in range(4):
            s = qd[b, h] @ kd[b, h // 2].T / np.sqrt(32)
            s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None], s, -np.inf)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            ref[b, h] = (p / p.sum(axis=1, keepdims=True)) @ vd[b, h // 2]
    assert_close(o.astype(np.float64), ref, "f32", "sdpa top-left causal %dx%d" % (sq, sk))


@pytest.mark.parametrize("kind,shape", [("bool", (1, 1, 9, 21)), ("f32", (2, 1, 9, 21)), ("f16", (9, 21)),
                                        ("f32", (2, 4, 1, 21))])
def test_sdpa_attn_mask(kind, shape):
    rng = np.random.default_rng(8)
    q, k, v = make((2, 4, 9, 16), "f32", rng), make((2, 2, 21, 16), "f32", rng), make((2, 2, 21, 16), "f32", rng)
    if kind == "bool":
        mask = rng.random(shape) > 0.3
        mask[..., 0, :] = False  # a row with no key: 0 (PyTorch gives NaN)
        add = np.where(mask, 0.0, -np.inf)
    else:
        mask = (rng.standard_normal(shape) * 0.5).astype(np.float16 if kind == "f16" else np.float32)
        mask[..., 3] = -np.inf
        add = mask.astype(np.float64)
    o = fa_cl.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    qd, kd, vd = (a.astype(np.float64) for a in (q, k, v))
    add = np.broadcast_to(add, (2, 4, 9, 21))
    ref = np.zeros((2, 4, 9, 16))
    for b in range(2):
        for h in range(4):
            s = qd[b, h] @ kd[b, h // 2].T / np.sqrt(16) + add[b, h]
            m = s.max(axis=1, keepdims=True)
            p = np.where(np.isfinite(m), np.exp(s - np.where(np.isfinite(m), m, 0)), 0.0)
            l = p.sum(axis=1, keepdims=True)
            ref[b, h] = np.where(l > 0, p @ vd[b, h // 2] / np.where(l > 0, l, 1), 0.0)
    assert_close(o.astype(np.float64), ref, "f32", "sdpa attn_mask %s %s" % (kind, shape))


def test_kv_in_another_dtype():
    rng = np.random.default_rng(9)
    q = make((2, 17, 4, 32), "f32", rng)
    k, v = make((2, 23, 2, 32), "f16", rng), make((2, 23, 2, 32), "bf16", rng)
    o = fa_cl.flash_attn_func(q, k, v, causal=True)
    assert o.dtype == np.float32
    ref, _ = oracle(value(q, "f32"), value(k, "f16"), value(v, "bf16"), causal=True)
    assert_close(o.astype(np.float64), ref, "f32", "q f32, k f16, v bf16")


def test_sdpa_attn_mask_bad():
    q = np.zeros((1, 2, 8, 16), np.float32)
    with pytest.raises(ValueError, match="broadcast"):
        fa_cl.scaled_dot_product_attention(q, q, q, attn_mask=np.zeros((3, 8, 8), np.float32))
    with pytest.raises(ValueError, match="is_causal"):
        fa_cl.scaled_dot_product_attention(q, q, q, attn_mask=np.zeros((8, 8), np.float32), is_causal=True)
    with pytest.raises(TypeError, match="attn_mask"):
        fa_cl.scaled_dot_product_attention(q, q, q, attn_mask=np.zeros((8, 8), np.int64))


def test_sdpa_gqa_needs_enable_gqa():
    q = np.zeros((1, 4, 8, 16), np.float32)
    k = np.zeros((1, 2, 8, 16), np.float32)
    with pytest.raises(ValueError, match="enable_gqa"):
        fa_cl.scaled_dot_product_attention(q, k, k)


def test_varlen_with_an_empty_sequence():
    rng = np.random.default_rng(5)
    lq, lk = [5, 0, 12], [9, 4, 12]
    cq, ck = np.cumsum([0] + lq).astype(np.int32), np.cumsum([0] + lk).astype(np.int32)
    q, k, v = make((sum(lq), 4, 32), "f16", rng), make((sum(lk), 2, 32), "f16", rng), make((sum(lk), 2, 32), "f16", rng)
    o, lse = fa_cl.flash_attn_varlen_func(q, k, v, cq, ck, max(lq), max(lk), causal=True, return_lse=True)
    assert o.shape == q.shape and lse.shape == (4, sum(lq))
    for b in range(3):
        if lq[b] == 0:
            continue
        qs, ks = slice(cq[b], cq[b + 1]), slice(ck[b], ck[b + 1])
        ref, ref_lse = oracle(value(q[qs], "f16")[None], value(k[ks], "f16")[None], value(v[ks], "f16")[None], causal=True)
        assert_close(value(o[qs], "f16"), ref[0], "f16", "varlen sequence %d" % b)
        assert_lse(lse[:, qs].astype(np.float64), ref_lse[0])


def test_kvcache_paged_with_lengths_and_append():
    rng = np.random.default_rng(6)
    b, hq, hkv, d, page, pages_per_seq = 3, 4, 2, 32, 16, 4
    cap = page * pages_per_seq
    num_pages = b * pages_per_seq + 2
    table = rng.permutation(num_pages)[: b * pages_per_seq].reshape(b, pages_per_seq).astype(np.int32)
    kpool, vpool = make((num_pages, page, hkv, d), "f32", rng), make((num_pages, page, hkv, d), "f32", rng)
    lens = np.array([0, 30, 60], np.int32)
    q = make((b, 2, hq, d), "f32", rng)
    kn, vn = make((b, 2, hkv, d), "f32", rng), make((b, 2, hkv, d), "f32", rng)
    k_before, v_before = kpool.copy(), vpool.copy()
    o = fa_cl.flash_attn_with_kvcache(q, kpool, vpool, k=kn, v=vn, cache_seqlens=lens, block_table=table, causal=True)
    # the new rows landed in the pool (numpy caches are updated in place) and nothing else changed
    kc, vc = k_before.copy(), v_before.copy()
    for bi in range(b):
        for i in range(2):
            pos = lens[bi] + i
            if pos < cap:
                kc[table[bi, pos // page], pos % page] = kn[bi, i]
                vc[table[bi, pos // page], pos % page] = vn[bi, i]
    assert np.array_equal(kpool, kc) and np.array_equal(vpool, vc)
    # contiguous [B, cap, H, D] view of each sequence's pages for the oracle
    kseq = np.stack([np.concatenate([kc[p] for p in table[bi]]) for bi in range(b)]).astype(np.float64)
    vseq = np.stack([np.concatenate([vc[p] for p in table[bi]]) for bi in range(b)]).astype(np.float64)
    ref, _ = oracle(q.astype(np.float64), kseq, vseq, causal=True, lens=np.minimum(lens + 2, cap))
    assert_close(o.astype(np.float64), ref, "f32", "paged kvcache with append")


def test_errors_are_exceptions():
    f32 = np.zeros((1, 8, 2, 16), np.float32)
    with pytest.raises(TypeError, match="float32, float16 and bfloat16"):
        f64 = f32.astype(np.float64)
        fa_cl.flash_attn_func(f64, f64, f64)
    with pytest.raises(TypeError, match="float32, float16 and bfloat16"):  # k in its own dtype, not this one
        fa_cl.flash_attn_func(f32, f32.astype(np.float64), f32)
    with pytest.raises(ValueError, match="disagree"):
        fa_cl.flash_attn_func(f32, np.zeros((1, 8, 2, 8), np.float32), f32)
    with pytest.raises(ValueError, match="evenly"):
        fa_cl.flash_attn_func(np.zeros((1, 8, 3, 16), np.float32), f32, f32)
    with pytest.raises(ValueError, match="expected 4 dimensions"):
        fa_cl.flash_attn_func(f32[0], f32, f32)
    with pytest.raises(ValueError, match="softmax_scale"):
        fa_cl.flash_attn_func(f32, f32, f32, softmax_scale=float("nan"))
    # the library's own refusals carry its status and message
    big = np.zeros((1, 8, 1, 577), np.float32)  # head_dim above the largest (576)
    with pytest.raises(fa_cl.FaClError) as e:
        fa_cl.flash_attn_func(big, big, big)
    assert e.value.status_name == "FA_CL_ERROR_UNSUPPORTED" and "head_dim" in e.value.message
    wide_v = np.zeros((1, 8, 2, 577), np.float32)  # v's head_dim above the largest
    with pytest.raises(fa_cl.FaClError) as e:
        fa_cl.flash_attn_func(f32, f32, wide_v)
    assert e.value.status_name == "FA_CL_ERROR_UNSUPPORTED" and "head_dim_v" in e.value.message


def test_mixed_and_non_contiguous_device_arrays(cla, queue):
    a = cla.to_device(queue, np.zeros((1, 8, 2, 16), np.float32))
    with pytest.raises(TypeError, match="not a mix"):
        fa_cl.flash_attn_func(a, np.zeros((1, 8, 2, 16), np.float32), a)
    t = a.transpose((0, 1, 3, 2))  # head_dim no longer contiguous
    with pytest.raises(ValueError, match="last dimension"):
        fa_cl.flash_attn_func(t, t, t)


def test_plot_writes_a_png(tmp_path):
    """python -m fa_cl.plot draws with matplotlib (the plot extra); without it, it says how to get it."""
    bench = {"device": "test device", "rows": [
        {"dtype": "f16", "d": 64, "causal": False, "Sq": n, "Sk": n, "failed": False, "page_size": 0,
         "cache_seqlens": None, "varlen_q": None, "fused_tflops": 10.0 * i + 1, "ref_tflops": 1.0 + i}
        for i, n in enumerate((512, 1024, 2048))]}
    anchor = {"B": 8, "H": 16, "Hkv": 16, "Sq": 1024, "Sk": 1024, "d": 64, "dtype": "f16", "causal": False,
              "backward": False, "rows": [{"backend": "FLASH_ATTENTION", "ms": 1.0, "tflops": 30.0, "kv_gbps": 1.0}]}
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    (tmp_path / "torch.json").write_text(json.dumps(anchor))
    out = tmp_path / "bench.png"
    r = subprocess.run([sys.executable, "-m", "fa_cl.plot", str(tmp_path / "bench.json"), str(tmp_path / "torch.json"),
                        "-o", str(out)], capture_output=True, text=True)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert r.returncode != 0 and "pip install fa_cl[plot]" in r.stderr, r.stderr
        pytest.skip("matplotlib absent: the message checked, no picture")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("dtype,causal,window,hkv", [("f32", False, (-1, -1), 4), ("f16", True, (-1, -1), 2),
                                                      ("bf16", False, (8, 3), 1)])
def test_flash_attn_backward(dtype, causal, window, hkv):
    rng = np.random.default_rng(11)
    b, sq, sk, hq, d = 2, 37, 45, 4, 32
    q, k, v = make((b, sq, hq, d), dtype, rng), make((b, sk, hkv, d), dtype, rng), make((b, sk, hkv, d), dtype, rng)
    dout = make((b, sq, hq, d), dtype, rng)
    o, lse = fa_cl.flash_attn_func(q, k, v, causal=causal, window_size=window, return_lse=True)
    dq, dk, dv = fa_cl.flash_attn_backward(dout, q, k, v, o, lse, causal=causal, window_size=window)
    ref = backward_oracle(value(q, dtype), value(k, dtype), value(v, dtype), value(dout, dtype), causal=causal,
                          window=window)
    a, r = TOL[dtype]
    for name, got, want in zip(("dq", "dk", "dv"), (dq, dk, dv), ref):
        got = value(got, dtype)
        # the C tests' bar for gradients (tests/tolerance.h, fa_cl_tolerance_grad_ok): abs scaled by the tensor
        bar = a * max(1.0, np.abs(want).max()) + r * np.abs(want)
        assert got.shape == want.shape and np.all(np.abs(got - want) <= bar), \
            "%s: max error %g" % (name, np.abs(got - want).max())
    again = fa_cl.flash_attn_backward(dout, q, k, v, o, lse, causal=causal, window_size=window)
    assert all(np.array_equal(x, y) for x, y in zip((dq, dk, dv), again)), "not bitwise reproducible"


def test_flash_attn_backward_bad_lse():
    rng = np.random.default_rng(3)
    q = make((1, 8, 2, 16), "f32", rng)
    o, lse = fa_cl.flash_attn_func(q, q, q, return_lse=True)
    with pytest.raises(ValueError):
        fa_cl.flash_attn_backward(q, q, q, q, o, lse[:, :1])



def test_flash_attn_backward_modifiers():
    """The backward with softcap, ALiBi, sinks (and their gradient dsink) and a boolean mask, causal, GQA:
    directional derivatives of L = sum(dout * o) against central differences of the float64 oracle
    (f32 data; the step 1e-4 leaves a difference error near 1e-8, float32 gradients err near 1e-6)."""
    rng = np.random.default_rng(31)
    b, sq, sk, hq, hkv, d = 2, 11, 19, 4, 2, 16
    q, k, v, dout = (make(s, "f32", rng) for s in ((b, sq, hq, d), (b, sk, hkv, d), (b, sk, hkv, d), (b, sq, hq, d)))
    slopes = (2.0 ** (-8.0 * np.arange(1, hq + 1) / hq)).astype(np.float32)
    sinks = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    mask = rng.random((b, 1, sq, sk)) > 0.3
    mask[0, 0, 2, :] = False  # a row the mask hides entirely: its sink takes the whole softmax
    mods = dict(softcap=4.0, alibi_slopes=slopes, attn_mask=mask)
    o, lse = fa_cl.flash_attn_func(q, k, v, causal=True, sinks=sinks, return_lse=True, **mods)
    dq, dk, dv, dsink = fa_cl.flash_attn_backward(dout, q, k, v, o, lse, causal=True, sinks=sinks, **mods)
    assert dsink.shape == (hq,) and dsink.dtype == np.float32

    def loss(x):
        ref, _ = oracle(x[0], x[1], x[2], causal=True, softcap=4.0, slopes=slopes, sinks=x[3], mask=mask)
        return float(np.sum(ref * dout))

    x = [a.astype(np.float64) for a in (q, k, v, sinks)]
    for i, g in enumerate((dq, dk, dv, dsink)):
        direction = rng.standard_normal(x[i].shape)
        h = 1e-4
        xp, xm = list(x), list(x)
        xp[i], xm[i] = x[i] + h * direction, x[i] - h * direction
        numeric = (loss(xp) - loss(xm)) / (2 * h)
        analytic = float(np.sum(g.astype(np.float64) * direction))
        assert abs(analytic - numeric) <= 1e-4 * max(1.0, abs(numeric)), \
            "gradient %d: %g against the differences' %g" % (i, analytic, numeric)


@pytest.mark.parametrize("dtype,kind", [("f32", "f32"), ("f16", "bool"), ("bf16", "f16")])
def test_mask_with_softcap_sinks_alibi(dtype, kind):
    """flash_attn_func takes everything the C API does in one call: an attention mask with softcap,
    sinks, ALiBi, a causal window, GQA, a scale and the LSE (issue 46), against the float64 oracle."""
    rng = np.random.default_rng(21)
    b, sq, sk, hq, hkv, d = 2, 13, 29, 4, 2, 32
    q, k, v = make((b, sq, hq, d), dtype, rng, 2.0), make((b, sk, hkv, d), dtype, rng, 2.0), make((b, sk, hkv, d), dtype, rng)
    slopes = (2.0 ** (-8.0 * np.arange(1, hq + 1) / hq)).astype(np.float32)
    sinks = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    if kind == "bool":
        mask = rng.random((b, 1, sq, sk)) > 0.3
        mask[0, 0, 2, :] = False  # a row the mask hides entirely: o = 0, LSE = the sink
    else:
        mask = (rng.standard_normal((1, hq, sq, sk)) * 0.5).astype(np.float16 if kind == "f16" else np.float32)
        mask[..., 5] = -np.inf
    o, lse = fa_cl.flash_attn_func(q, k, v, softmax_scale=0.2, causal=True, window_size=(20, -1), softcap=5.0,
                                   alibi_slopes=slopes, sinks=sinks, attn_mask=mask, return_lse=True)
    ref, ref_lse = oracle(value(q, dtype), value(k, dtype), value(v, dtype), scale=0.2, causal=True, window=(20, -1),
                          softcap=5.0, slopes=slopes, sinks=sinks, mask=mask)
    assert_close(value(o, dtype), ref, dtype, "mask %s with softcap, sinks, ALiBi (%s)" % (kind, dtype))
    assert_lse(lse.astype(np.float64), ref_lse)


def test_sdpa_with_modifiers():
    """scaled_dot_product_attention with a mask, softcap, sinks, ALiBi and a window (bottom-right), GQA."""
    rng = np.random.default_rng(22)
    b, hq, hkv, sq, sk, d = 2, 4, 2, 11, 23, 16
    q, k, v = make((b, hq, sq, d), "f32", rng, 2.0), make((b, hkv, sk, d), "f32", rng, 2.0), make((b, hkv, sk, d), "f32", rng)
    slopes = np.array([0.5, 0.25, 0.125, 0.0625], np.float32)
    sinks = np.array([1.0, 0.0, -2.0, 3.0], np.float32)
    mask = (rng.standard_normal((sq, sk)) * 0.3).astype(np.float32)
    o = fa_cl.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True, softcap=4.0, alibi_slopes=slopes,
                                           sinks=sinks, window_size=(6, 2))
    bshd = lambda a: a.transpose(0, 2, 1, 3).astype(np.float64)  # noqa: E731
    ref, _ = oracle(bshd(q), bshd(k), bshd(v), window=(6, 2), softcap=4.0, slopes=slopes, sinks=sinks,
                    mask=mask)
    assert_close(o.astype(np.float64), ref.transpose(0, 2, 1, 3), "f32", "sdpa with modifiers")
    with pytest.raises(ValueError, match="Sq == Sk"):
        fa_cl.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True, alibi_slopes=slopes)


def test_kvcache_with_mask():
    """A padding mask over the cache's capacity with per-sequence lengths (bottom-right at each length)."""
    rng = np.random.default_rng(23)
    b, sq, hq, hkv, cap, d = 2, 3, 4, 1, 40, 16
    q = make((b, sq, hq, d), "f32", rng)
    kc, vc = make((b, cap, hkv, d), "f32", rng), make((b, cap, hkv, d), "f32", rng)
    lens = np.array([17, 40], np.int32)
    mask = np.ones((b, 1, 1, cap), bool)
    mask[0, ..., :4] = False  # left padding of sequence 0
    o = fa_cl.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens, causal=True, attn_mask=mask)
    ref, _ = oracle(q.astype(np.float64), kc.astype(np.float64), vc.astype(np.float64), causal=True, lens=lens,
                    mask=mask)
    assert_close(o.astype(np.float64), ref, "f32", "kvcache with a padding mask")


def test_bf16_mask():
    """bfloat16 masks (uint16 bits) go to the library where its header has FA_CL_MASK_BF16; until then
    they are refused with a message saying what is missing."""
    rng = np.random.default_rng(24)
    q = make((1, 9, 2, 16), "f32", rng)
    mask = bf16_bits(rng.standard_normal((9, 9)).astype(np.float32))
    if "FA_CL_MASK_BF16" not in fa_cl._lib.MASK:
        with pytest.raises(TypeError, match="attn_mask in bfloat16 .*FA_CL_MASK_BF16"):
            fa_cl.flash_attn_func(q, q, q, attn_mask=mask)
        return
    o = fa_cl.flash_attn_func(q, q, q, attn_mask=mask)
    ref, _ = oracle(q.astype(np.float64), q.astype(np.float64), q.astype(np.float64), mask=bf16_value(mask))
    assert_close(o.astype(np.float64), ref, "f32", "bf16 mask")


def test_pyopencl_kvcache_append_with_one_length(cla, queue):
    """pyopencl caches appended in place on their queue; one int as every sequence's length (copied to the device)."""
    rng = np.random.default_rng(25)
    b, hq, hkv, d, cap = 2, 4, 2, 16, 24
    qn, kcn, vcn = make((b, 1, hq, d), "f16", rng), make((b, cap, hkv, d), "f16", rng), make((b, cap, hkv, d), "f16", rng)
    knew, vnew = make((b, 1, hkv, d), "f16", rng), make((b, 1, hkv, d), "f16", rng)
    q, kc, vc, kn, vn = (cla.to_device(queue, a) for a in (qn, kcn, vcn, knew, vnew))
    o = fa_cl.flash_attn_with_kvcache(q, kc, vc, k=kn, v=vn, cache_seqlens=9, causal=True)
    assert isinstance(o, cla.Array)
    kcn[:, 9:10], vcn[:, 9:10] = knew, vnew
    assert np.array_equal(kc.get(), kcn) and np.array_equal(vc.get(), vcn)
    ref, _ = oracle(value(qn, "f16"), value(kcn, "f16"), value(vcn, "f16"), causal=True, lens=[10, 10])
    assert_close(value(o, "f16"), ref, "f16", "pyopencl kvcache append")


def fp8_values(fmt):
    """The 256 codes of an OCP FP8 format as float64, from its definition (NaN codes NaN)."""
    m_bits, bias = (3, 7) if fmt == "e4m3" else (2, 15)
    c = np.arange(256)
    e, m = (c >> m_bits) & ((1 << (7 - m_bits)) - 1), c & ((1 << m_bits) - 1)
    mag = np.where(e == 0, np.ldexp(m.astype(np.float64), 1 - bias - m_bits),
                   np.ldexp(((1 << m_bits) + m).astype(np.float64), e - bias - m_bits))
    if fmt == "e4m3":
        mag[(c & 0x7F) == 0x7F] = np.nan
    else:
        mag[(e == 31) & (m == 0)] = np.inf
        mag[(e == 31) & (m != 0)] = np.nan
    return np.where(c & 0x80, -mag, mag)


def fp8_codes(shape, fmt, rng):
    """Random finite codes of fmt, over its whole range."""
    top = 0x7E if fmt == "e4m3" else 0x7B
    return (rng.integers(0, top + 1, shape) | (rng.integers(0, 2, shape) << 7)).astype(np.uint8)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_kv_with_descale(fmt):
    rng = np.random.default_rng(51)
    b, sq, sk, hq, hkv, d = 2, 9, 37, 4, 2, 32
    q = make((b, sq, hq, d), "f16", rng)
    k, v = fp8_codes((b, sk, hkv, d), fmt, rng), fp8_codes((b, sk, hkv, d), fmt, rng)
    top = fp8_values(fmt)[0x7E if fmt == "e4m3" else 0x7B]
    vf = (rng.uniform(0.5, 1.5, (b, hkv)) / top).astype(np.float32)  # per (batch, kv head)
    kf = np.float32(0.8 / top)  # one for the tensor
    o = fa_cl.flash_attn_func(q, k, v, causal=True, kv_dtype=fmt, k_descale=kf, v_descale=vf)
    table = fp8_values(fmt)
    kx = (table[k].astype(np.float32) * kf).astype(np.float64)
    vx = (table[v].astype(np.float32) * vf[:, None, :, None]).astype(np.float64)
    ref, _ = oracle(value(q, "f16"), kx, vx, causal=True)
    assert_close(o.astype(np.float64), ref, "f16", "fp8 %s k and v with descale factors" % fmt)


def test_fp8_kvcache_paged_append():
    rng = np.random.default_rng(52)
    b, hq, hkv, d, page, per_seq = 2, 4, 2, 32, 16, 3
    num_pages = b * per_seq + 1
    table = rng.permutation(num_pages)[: b * per_seq].reshape(b, per_seq).astype(np.int32)
    kpool, vpool = fp8_codes((num_pages, page, hkv, d), "e5m2", rng), fp8_codes((num_pages, page, hkv, d), "e5m2", rng)
    kpool &= 0xBF  # small values: the new rows' products below stay in range
    vpool &= 0xBF
    lens = np.array([5, 30], np.int32)
    values = fp8_values("e5m2")
    # new rows whose value / factor is a code (factor 0.5, exact): appending must store exactly it
    new_k, new_v = fp8_codes((b, 1, hkv, d), "e5m2", rng) & 0xBF, fp8_codes((b, 1, hkv, d), "e5m2", rng) & 0xBF
    kn, vn = (values[new_k] * 0.5).astype(np.float32), (values[new_v] * 0.5).astype(np.float32)
    q = make((b, 1, hq, d), "f32", rng)
    o = fa_cl.flash_attn_with_kvcache(q, kpool, vpool, k=kn, v=vn, cache_seqlens=lens, block_table=table,
                                      kv_dtype="e5m2", k_descale=0.5, v_descale=np.full((1,), 0.5, np.float32))
    for bi in range(b):
        p, s = table[bi, lens[bi] // page], lens[bi] % page
        assert np.array_equal(kpool[p, s], new_k[bi, 0]) and np.array_equal(vpool[p, s], new_v[bi, 0])
    kseq = np.stack([np.concatenate([kpool[p] for p in table[bi]]) for bi in range(b)])
    vseq = np.stack([np.concatenate([vpool[p] for p in table[bi]]) for bi in range(b)])
    ref, _ = oracle(q.astype(np.float64), values[kseq] * 0.5, values[vseq] * 0.5, lens=lens + 1)
    assert_close(o.astype(np.float64), ref, "f32", "paged e5m2 cache with an append")


def test_fp8_bad_arguments():
    rng = np.random.default_rng(53)
    q = make((1, 4, 2, 16), "f32", rng)
    k = fp8_codes((1, 8, 2, 16), "e4m3", rng)
    with pytest.raises(TypeError, match="kv_dtype"):
        fa_cl.flash_attn_func(q, k, k)  # uint8 codes without their format
    with pytest.raises(ValueError, match="not an fp8 format"):
        fa_cl.flash_attn_func(q, k, k, kv_dtype="e3m4")
    with pytest.raises(ValueError, match="k_descale"):
        fa_cl.flash_attn_func(q, q, q, k_descale=2.0)  # f32 k has no factor
    with pytest.raises(ValueError, match=r"v_descale has shape"):
        fa_cl.flash_attn_func(q, k, k, kv_dtype="e4m3", v_descale=np.ones((2, 2), np.float32))


def test_fp8_ml_dtypes_arrays():
    ml = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(54)
    q = make((1, 3, 2, 16), "f32", rng)
    k = rng.standard_normal((1, 10, 2, 16)).astype(ml.float8_e4m3fn)
    v = rng.standard_normal((1, 10, 2, 16)).astype(ml.float8_e5m2)
    o = fa_cl.flash_attn_func(q, k, v, v_descale=0.25)
    ref, _ = oracle(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64) * 0.25)
    assert_close(o.astype(np.float64), ref, "f32", "ml_dtypes float8 k and v")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_partial_results_and_merge(dtype):
    """keys in three uneven chunks and rows in two ranges (flash_attn_partial with positions), each range's
    chunks merged (merge_attentions): the whole causal problem with ALiBi and GQA"""
    rng = np.random.default_rng(11)
    q, k, v = make((2, 30, 4, 32), dtype, rng), make((2, 30, 2, 32), dtype, rng), make((2, 30, 2, 32), dtype, rng)
    slopes = (2.0 ** (-8.0 * np.arange(1, 5) / 4)).astype(np.float32)
    ref, ref_lse = oracle(value(q, dtype), value(k, dtype), value(v, dtype), causal=True, slopes=slopes)
    for q0, q1 in ((0, 12), (12, 30)):
        outs, lses = [], []
        for k0, k1 in ((0, 7), (7, 20), (20, 30)):
            o, lse = fa_cl.flash_attn_partial(q[:, q0:q1], k[:, k0:k1], v[:, k0:k1], q_position=q0, k_position=k0,
                                              full_seqlen_q=30, full_seqlen_k=30, causal=True, alibi_slopes=slopes)
            assert o.dtype == np.float32 and lse.shape == (2, 4, q1 - q0)
            outs.append(o), lses.append(lse)
        o, lse = fa_cl.merge_attentions(outs, lses)
        assert o.dtype == np.float32 and o.shape == (2, q1 - q0, 4, 32)
        assert_close(o.astype(np.float64), ref[:, q0:q1], dtype, "merged rows %d..%d" % (q0, q1))
        assert_lse(lse.astype(np.float64), ref_lse[:, :, q0:q1])
    with pytest.raises(ValueError, match="merge over one shape"):
        fa_cl.merge_attentions([outs[0], outs[1][:, :3]], lses[:2])
    with pytest.raises(fa_cl.FaClError, match="past desc.full_seqlen_k"):
        fa_cl.flash_attn_partial(q, k, v, k_position=5, full_seqlen_k=30)


def test_value_width_and_mla_latent():
    """v and o rows of their own head_dim (include/fa_cl.h "Value width"): 192 / 128 prefill, and MLA's
    latent cache, v the first Dv columns of k's rows (a numpy view, no copy)."""
    rng = np.random.default_rng(40)
    q, k, v = make((2, 9, 4, 48), "f16", rng), make((2, 13, 2, 48), "f16", rng), make((2, 13, 2, 32), "f16", rng)
    o = fa_cl.flash_attn_func(q, k, v, causal=True)
    assert o.shape == (2, 9, 4, 32)
    ref, _ = oracle(value(q, "f16"), value(k, "f16"), value(v, "f16"), causal=True)
    assert_close(value(o, "f16"), ref, "f16", "d_qk 48 / d_v 32")
    # the absorbed MLA decode: 8 heads on one latent head of 72 columns, V its first 64, cache lengths
    latent = make((2, 20, 1, 72), "f32", rng)
    qd = make((2, 1, 8, 72), "f32", rng)
    lens = np.array([20, 7], np.int32)
    o = fa_cl.flash_attn_with_kvcache(qd, latent, latent[..., :64], cache_seqlens=lens)
    assert o.shape == (2, 1, 8, 64)
    ref, _ = oracle(qd.astype(np.float64), latent.astype(np.float64), latent[..., :64].astype(np.float64), lens=lens)
    assert_close(o, ref, "f32", "MLA latent")


def _tree_bools(rng, b, n):
    """Random trees over n new tokens: [B, n, n], token i sees itself and its ancestors."""
    t = np.zeros((b, n, n), bool)
    for bi in range(b):
        parent = [int(rng.integers(-1, i)) for i in range(n)]
        for i in range(n):
            a = i
            while a >= 0:
                t[bi, i, a] = True
                a = parent[a]
    return t


def test_kvcache_tree_mask():
    """Draft tokens appended to a paged cache and attended through a tree (include/fa_cl.h "Tree
    masks"): the prefix always seen, the new tokens as the tree allows; bools and packed words; the
    chain tree is the causal mask."""
    rng = np.random.default_rng(41)
    b, n, hq, hkv, d, page, pps = 2, 5, 4, 2, 16, 3, 10
    cap = page * pps
    table = rng.permutation(b * pps).reshape(b, pps).astype(np.int32)
    kpool, vpool = make((b * pps, page, hkv, d), "f32", rng), make((b * pps, page, hkv, d), "f32", rng)
    lens = np.array([3, 20], np.int32)
    q, kn, vn = make((b, n, hq, d), "f32", rng), make((b, n, hkv, d), "f32", rng), make((b, n, hkv, d), "f32", rng)
    tree = _tree_bools(rng, b, n)
    o = fa_cl.flash_attn_with_kvcache(q, kpool, vpool, k=kn, v=vn, cache_seqlens=lens, block_table=table,
                                      tree_mask=tree)
    kseq = np.stack([np.concatenate([kpool[p] for p in table[bi]]) for bi in range(b)]).astype(np.float64)
    vseq = np.stack([np.concatenate([vpool[p] for p in table[bi]]) for bi in range(b)]).astype(np.float64)
    total = lens + n
    mask = np.ones((b, 1, n, cap), bool)
    for bi in range(b):
        mask[bi, 0, :, total[bi] - n:total[bi]] = tree[bi]
    ref, _ = oracle(q.astype(np.float64), kseq, vseq, lens=total, mask=mask)
    assert_close(o, ref, "f32", "tree over the appended draft tokens")
    # the same as packed words (one word a row), and the chain as bools shared by every sequence
    words = (tree.astype(np.uint32) << np.arange(n, dtype=np.uint32)).sum(axis=-1, dtype=np.uint32)[..., None]
    o2 = fa_cl.flash_attn_with_kvcache(q, kpool, vpool, cache_seqlens=total, block_table=table, tree_mask=words)
    assert_close(o2, ref, "f32", "tree as words")
    chain = np.tril(np.ones((n, n), bool))
    o3 = fa_cl.flash_attn_with_kvcache(q, kpool, vpool, cache_seqlens=total, block_table=table, tree_mask=chain)
    ref3, _ = oracle(q.astype(np.float64), kseq, vseq, lens=total, causal=True)
    assert_close(o3, ref3, "f32", "the chain tree is causal")
    with pytest.raises(ValueError, match="tree_mask has shape"):
        fa_cl.flash_attn_with_kvcache(q, kpool, vpool, cache_seqlens=total, block_table=table,
                                      tree_mask=np.ones((n, n + 1), bool))
    with pytest.raises(TypeError, match="bools or uint32"):
        fa_cl.flash_attn_with_kvcache(q, kpool, vpool, cache_seqlens=total, block_table=table,
                                      tree_mask=np.ones((n, 1), np.int64))


def test_pyopencl_mla_latent_view(cla, queue):
    """MLA's shared latent on the device: v_cache is a view of the latent's first Dv columns (the same
    buffer, k's strides: no copy), 8 query heads on the one latent head."""
    rng = np.random.default_rng(42)
    latent_n, qn = make((2, 20, 1, 72), "f16", rng), make((2, 1, 8, 72), "f16", rng)
    latent, q = cla.to_device(queue, latent_n), cla.to_device(queue, qn)
    v_view = latent[..., :64]
    assert v_view.base_data is latent.base_data
    lens = cla.to_device(queue, np.array([20, 5], np.int32))
    o = fa_cl.flash_attn_with_kvcache(q, latent, v_view, cache_seqlens=lens)
    assert o.shape == (2, 1, 8, 64)
    lat = value(latent_n, "f16")
    ref, _ = oracle(value(qn, "f16"), lat, lat[..., :64], lens=[20, 5])
    assert_close(value(o, "f16"), ref, "f16", "pyopencl MLA latent view")
