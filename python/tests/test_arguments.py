# SPDX-License-Identifier: Apache-2.0
"""Arguments the package must refuse with TypeError / ValueError naming them, before any call: no
integer wrapped or truncated on its way into an int32 or int64 field, no float taken as an integer,
no empty problem (include/fa_cl.h: all sizes must be positive), no error from deep inside (issue 44,
items 8 and 9). Each case also runs the call it guards where the value is valid."""
import numpy as np
import pytest

import fa_cl
from oracle import assert_close, make, oracle

F32 = np.zeros((1, 8, 2, 16), np.float32)


def kvcache(**kw):
    """A dense cache call: q [2, 1, 2, 16] against a cache of capacity 32 (paged: 2 pages of 16 of 5)."""
    rng = np.random.default_rng(1)
    paged = "block_table" in kw
    shape = (5, 16, 2, 16) if paged else (2, 32, 2, 16)
    args = dict(q=make((2, 1, 2, 16), "f32", rng), k_cache=make(shape, "f32", rng), v_cache=make(shape, "f32", rng))
    args.update(kw)
    return fa_cl.flash_attn_with_kvcache(**args)


def varlen(**kw):
    """Two sequences of 3 and 5 rows, of keys alike."""
    rng = np.random.default_rng(2)
    q, k = make((8, 2, 16), "f32", rng), make((8, 2, 16), "f32", rng)
    args = dict(q=q, k=k, v=k, cu_seqlens_q=np.array([0, 3, 8]), cu_seqlens_k=np.array([0, 3, 8]), max_seqlen_q=5,
                max_seqlen_k=5)
    args.update(kw)
    return fa_cl.flash_attn_varlen_func(**args)


# ---- issue 44 item 8: integers range-checked, floats refused where integers are meant ----

@pytest.mark.parametrize("call,error,match", [
    (lambda: kvcache(cache_seqlens=2**40), ValueError, "cache_seqlens"),
    (lambda: kvcache(cache_seqlens=np.array([2**32 + 3, 1], np.int64)), ValueError, "cache_seqlens"),
    (lambda: kvcache(cache_seqlens=np.array([-1, 1])), ValueError, "cache_seqlens"),
    (lambda: kvcache(cache_seqlens=np.array([33, 1])), ValueError, "cache_seqlens"),  # beyond the capacity 32
    (lambda: kvcache(cache_seqlens=np.array([2.0, 1.0])), TypeError, "cache_seqlens"),
    (lambda: kvcache(cache_seqlens=5.0), TypeError, "cache_seqlens"),
    (lambda: kvcache(cache_seqlens=True), TypeError, "cache_seqlens"),
    (lambda: kvcache(cache_seqlens=[2**70, 1]), ValueError, "cache_seqlens"),
    (lambda: kvcache(block_table=np.array([[0, 2**32 + 1], [2, 3]], np.int64), cache_seqlens=np.array([20, 3])),
     ValueError, "block_table"),
    (lambda: kvcache(block_table=np.array([[0, 5], [2, 3]]), cache_seqlens=np.array([20, 3])), ValueError,
     r"block_table\[0, 1\]"),
    (lambda: kvcache(block_table=np.array([[0, 1.0], [2, 3]])), TypeError, "block_table"),
    (lambda: varlen(cu_seqlens_q=np.array([0, 2**32 + 3, 8], np.int64)), ValueError, "cu_seqlens_q"),
    (lambda: varlen(cu_seqlens_k=np.array([0, 3.0, 8.0])), TypeError, "cu_seqlens_k"),
    (lambda: varlen(cu_seqlens_q=np.array([0, 5, 3])), ValueError, "cu_seqlens_q"),  # decreasing
    (lambda: varlen(cu_seqlens_q=np.array([0, 3, 9])), ValueError, "cu_seqlens_q"),  # past total_q 8
    (lambda: varlen(max_seqlen_q=2**64 + 6), ValueError, "max_seqlen_q"),
    (lambda: varlen(max_seqlen_k=4), ValueError, "max_seqlen_k"),  # below the longest sequence, 5
    (lambda: varlen(max_seqlen_q=5.0), TypeError, "max_seqlen_q"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, window_size=(2**70, 0)), ValueError, r"window_size\[0\]"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, window_size=(0, -2)), ValueError, r"window_size\[1\]"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, window_size=(1.5, 0)), TypeError, r"window_size\[0\]"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, softmax_scale=1e-50), ValueError, "softmax_scale"),  # 0 in float32
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, softmax_scale=1e39), ValueError, "softmax_scale"),  # inf in float32
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, softcap=-1.0), ValueError, "softcap"),
], ids=lambda x: x if isinstance(x, str) else None)
def test_integers_and_ranges(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_valid_neighbours_of_the_refused_values():
    """The values next to the refused ones run: lengths 0 and the capacity, padding entries (-1) in
    table columns no sequence reaches, max_seqlen above the longest sequence, int64 arrays in range."""
    o = kvcache(cache_seqlens=np.array([0, 32], np.int64))
    assert np.all(o[0] == 0)  # a sequence with no key: 0
    kvcache(block_table=np.array([[0, -1], [2, 3]], np.int64), cache_seqlens=np.array([16, 20]))
    kvcache(cache_seqlens=np.uint8(7))
    varlen(max_seqlen_q=7, cu_seqlens_q=np.array([0, 3, 8], np.uint64))


# ---- issue 44 item 9: shapes and types ----

@pytest.mark.parametrize("call,error,match", [
    (lambda: fa_cl.flash_attn_func(F32[:0], F32[:0], F32[:0]), ValueError, "q has shape .0, 8, 2, 16.: .*empty"),
    (lambda: fa_cl.flash_attn_func(F32[:, :0], F32, F32), ValueError, "q has shape .*empty"),
    (lambda: fa_cl.flash_attn_func(F32, F32[:, :0], F32[:, :0]), ValueError, "k has shape .*empty"),
    (lambda: fa_cl.flash_attn_func(F32[:, :, :0], F32, F32), ValueError, "q has shape .*empty"),
    (lambda: fa_cl.flash_attn_func(F32[..., :0], F32[..., :0], F32[..., :0]), ValueError, "q has shape .*empty"),
    (lambda: fa_cl.scaled_dot_product_attention(F32[:0], F32[:0], F32[:0]), ValueError, "q has shape .*empty"),
    (lambda: varlen(q=np.zeros((0, 2, 16), np.float32), cu_seqlens_q=np.array([0, 0, 0])), ValueError,
     "q has shape .*empty"),
    (lambda: kvcache(q=np.zeros((0, 1, 2, 16), np.float32)), ValueError, "q has shape .*empty"),
    (lambda: fa_cl.flash_attn_backward(F32[:0], F32[:0], F32[:0], F32[:0], F32[:0], np.zeros((0, 2, 8), np.float32)),
     ValueError, "dout has shape .*empty"),
    (lambda: fa_cl.flash_attn_func(F32.astype(object), F32, F32), TypeError, "q has dtype object"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32.astype(np.int32)), TypeError, "v has dtype int32"),
    (lambda: fa_cl.flash_attn_func(None, F32, F32), TypeError, "q is required"),
    (lambda: fa_cl.flash_attn_func("q", F32, F32), ValueError, "q has shape"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, softmax_scale="0.5"), TypeError, "softmax_scale"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, softcap="1"), TypeError, "softcap"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, window_size=(None, None)), TypeError, r"window_size\[0\]"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, window_size=(1, 2, 3)), TypeError, "window_size"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, window_size=4), TypeError, "window_size"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, causal="yes"), TypeError, "causal"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, return_lse=2), TypeError, "return_lse"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, sinks=np.zeros(2, np.int64)), TypeError, "sinks"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, alibi_slopes=np.zeros(3, np.float32)), ValueError, "alibi_slopes"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, attn_mask=np.zeros((8, 8), np.int64)), TypeError, "attn_mask"),
    (lambda: fa_cl.flash_attn_func(F32, F32, F32, context=42), TypeError, "context"),
    (lambda: fa_cl.scaled_dot_product_attention(F32, F32, F32, is_causal="no"), TypeError, "is_causal"),
    (lambda: kvcache(k=np.zeros((2, 1, 2, 16), np.float32), cache_seqlens=3), ValueError, "k and v"),
    (lambda: kvcache(v=np.zeros((2, 1, 2, 16), np.float32), cache_seqlens=3), ValueError, "k and v"),
    (lambda: kvcache(k=np.zeros((2, 1, 2, 16), np.float32), v=np.zeros((2, 1, 2, 16), np.float32),
                     cache_seqlens=32), ValueError, "cache_seqlens"),  # the new row would not fit
    (lambda: varlen(cu_seqlens_q=np.array([0])), ValueError, "cu_seqlens_q"),
    (lambda: varlen(cu_seqlens_k=np.array([0, 8])), ValueError, "cu_seqlens_k"),
    (lambda: fa_cl.flash_attn_backward(F32, F32, F32, F32, F32, np.zeros((1, 2, 8), np.float64)), TypeError, "lse"),
    (lambda: fa_cl.Context(42), TypeError, "Context"),
    (lambda: fa_cl.Context(max_plans=0), ValueError, "max_plans"),
], ids=lambda x: x if isinstance(x, str) else None)
def test_shapes_and_types(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_empty_append_is_no_append():
    """k and v with 0 new rows: seqlen_new 0, which the C API defines as no append; the cache is unchanged."""
    rng = np.random.default_rng(3)
    q = make((2, 1, 2, 16), "f32", rng)
    kc, vc = make((2, 32, 2, 16), "f32", rng), make((2, 32, 2, 16), "f32", rng)
    before = kc.copy()
    empty = np.zeros((2, 0, 2, 16), np.float32)
    o = fa_cl.flash_attn_with_kvcache(q, kc, vc, k=empty, v=empty, cache_seqlens=np.array([5, 9]))
    assert np.array_equal(kc, before)
    ref, _ = oracle(q.astype(np.float64), kc.astype(np.float64), vc.astype(np.float64), lens=[5, 9])
    assert_close(o.astype(np.float64), ref, "f32", "empty append")


def test_empty_sequences_inside_a_batch_are_valid():
    """An empty sequence inside a varlen batch or a cache is defined (o = 0), unlike an empty problem."""
    rng = np.random.default_rng(4)
    q, k = make((5, 2, 16), "f32", rng), make((5, 2, 16), "f32", rng)
    o = fa_cl.flash_attn_varlen_func(q, k, k, np.array([0, 0, 5]), np.array([0, 0, 5]), 5, 5)
    ref, _ = oracle(q[None].astype(np.float64), k[None].astype(np.float64), k[None].astype(np.float64))
    assert_close(o.astype(np.float64), ref[0], "f32", "varlen after an empty sequence")
