# SPDX-License-Identifier: Apache-2.0
"""The calls: FlashAttention's and PyTorch's shapes and names over fa_cl's descriptor."""
import ctypes

import numpy as np

from . import _checks, _lib
from ._arrays import Call, c_contiguous, fa_dtype, fp8_host, is_bf16, is_device_array, is_fp8_storage, kv_storage, mem
from ._checks import INT32_MAX, INT64_MAX
from ._lib import lib


def _element_strides(a, name):
    item = a.dtype.itemsize
    if any(s < 0 or s % item for s in a.strides):
        raise ValueError("fa_cl: %s has strides %s (bytes): fa_cl takes non-negative multiples of the element size; "
                         "pass a copy" % (name, a.strides))
    st = [s // item for s in a.strides]
    if a.shape[-1] > 1 and st[-1] != 1:
        raise ValueError("fa_cl: %s's last dimension (head_dim) must be contiguous (stride %d elements); pass a "
                         "copy" % (name, st[-1]))
    if a.offset % item:
        raise ValueError("fa_cl: %s starts %d bytes into its buffer, not at an element" % (name, a.offset))
    return st, a.offset // item


def _desc(batch, heads_q, heads_kv, sq, sk, d, dtype, scale, causal, window):
    """A descriptor with the arguments every call shares, each checked (named) before ctypes sees it."""
    window = _checks.window(window)
    causal = _checks.flag(causal, "causal")
    desc = _lib.AttentionDesc()
    lib.fa_cl_attention_desc_init_sized(ctypes.byref(desc), ctypes.sizeof(desc), batch, heads_q, sq, sk, d, dtype)
    desc.heads_kv = heads_kv
    if scale is not None:
        desc.scale = _checks.real(scale, "softmax_scale", positive=True)
    desc.causal = 1 if causal else 0
    desc.window_left, desc.window_right = window
    return desc


def _set_view(desc, which, a, name, order):
    """a's strides, as [batch, head, seq] from its dimensions in `order`, and its offset, into desc."""
    st, off = _element_strides(a, name)
    getattr(desc, which + "_stride")[:] = [st[i] if i is not None else 0 for i in order]
    setattr(desc, which + "_offset", off)


def _prepare(call, desc, q, k, v, order, o_shape, lse_shape, names=("q", "k", "v"), zero_o=False, o_dtype=None):
    """A new output o (C order; in q's dtype unless o_dtype) and LSE (None where not asked for); the
    four views into desc (their dimensions in `order` as [batch, head, seq]); the call's args holding
    the four buffers."""
    o = call.empty(o_shape, q.dtype if o_dtype is None else o_dtype, zero=zero_o)
    for which, a, name in (("q", q, names[0]), ("k", k, names[1]), ("v", v, names[2]), ("o", o, "o")):
        _set_view(desc, which, a, name, order)
    lse = call.empty(lse_shape, np.float32) if lse_shape else None
    args = _lib.ForwardArgs()
    args.q, args.k, args.v, args.o = mem(q), mem(k), mem(v), mem(o)
    args.lse = mem(lse) if lse is not None else None
    return o, lse, args


def _per_head(call, a, name, heads_q):
    """alibi_slopes / sinks: float [Hq] on the device (numpy: any float dtype, taken as float32)."""
    a = call.host(a, name)
    if tuple(a.shape) != (heads_q,):
        raise ValueError("fa_cl: %s has shape %s; expected (%d,), one per query head" % (name, tuple(a.shape), heads_q))
    if is_device_array(a):
        if a.dtype != np.float32 or not a.flags.c_contiguous or a.offset:
            raise ValueError("fa_cl: %s must be a contiguous float32 array from the start of its buffer" % name)
        return a
    if not np.issubdtype(a.dtype, np.floating):
        raise TypeError("fa_cl: %s must hold floats, not %s" % (name, a.dtype))
    return call.device(a.astype(np.float32))


def _modifiers(call, desc, args, heads_q, softcap, alibi_slopes, sinks):
    """The score modifiers into desc and args: softcap (0 = none), ALiBi slopes and sink logits
    (float [Hq] each, None = none)."""
    desc.softcap = 0.0 if softcap is None else _checks.real(softcap, "softcap", positive=False)
    for name, a in (("alibi_slopes", alibi_slopes), ("sinks", sinks)):
        if a is not None:
            setattr(desc, "alibi" if name == "alibi_slopes" else "sinks", 1)
            setattr(args, name, mem(_per_head(call, a, name, heads_q)))


def _mask(call, desc, args, mask, b, hq, sq, sk):
    """An attention mask broadcastable to [B, Hq, Sq, Sk] (PyTorch's attn_mask: bool, True = attend, or
    float32 / float16 added to the scores; bfloat16 where the library's fa_cl_mask_type has it) into
    desc and args; size-1 and missing leading dimensions broadcast (stride 0); the key dimension must
    be contiguous."""
    if mask is None:
        return
    mask = call.host(mask, "attn_mask")
    kind = np.dtype(mask.dtype)
    types = {np.dtype(np.bool_): "FA_CL_MASK_BOOL", np.dtype(np.float32): "FA_CL_MASK_F32",
             np.dtype(np.float16): "FA_CL_MASK_F16"}
    if is_bf16(kind):
        if "FA_CL_MASK_BF16" not in _lib.MASK:
            raise TypeError("fa_cl: attn_mask in bfloat16 (%s) needs a libfa_cl whose fa_cl_mask_type has "
                            "FA_CL_MASK_BF16; fa_cl %s takes bool, float32 and float16 masks" % (kind, _lib.HEADER_VERSION))
        types[kind] = "FA_CL_MASK_BF16"
    if kind not in types:
        raise TypeError("fa_cl: attn_mask must be bool, float32 or float16%s, not %s"
                        % (", or bfloat16" if "FA_CL_MASK_BF16" in _lib.MASK else "", kind))
    shape = tuple(mask.shape)
    if len(shape) > 4 or any(n not in (1, want) for n, want in zip(shape[::-1], (sk, sq, hq, b))):
        raise ValueError("fa_cl: attn_mask of shape %s does not broadcast to [B, Hq, Sq, Sk] = %s"
                         % (shape, (b, hq, sq, sk)))
    if shape[-1:] != (sk,):
        raise ValueError("fa_cl: attn_mask's last dimension must be the keys (%d), not broadcast" % sk)
    if not is_device_array(mask):
        mask = call.device(mask.view(np.uint8) if kind == np.bool_ else mask)
    st, off = _element_strides(mask, "attn_mask")
    full = [1] * (4 - len(shape)) + list(shape)
    st = [0] * (4 - len(shape)) + st
    if st[3] != 1:
        raise ValueError("fa_cl: attn_mask's keys must be contiguous (stride %d elements); pass a copy" % st[3])
    desc.mask = _lib.MASK[types[kind]]
    desc.mask_stride[:] = [st[i] if full[i] > 1 else 0 for i in range(3)]
    desc.mask_offset = off
    args.mask = mem(mask)


def _fp8_inputs(k, v, kv_dtype):
    """k and v with PyTorch float8 tensors as their uint8 codes (fp8_host), and the kv_dtype that
    names them (the caller's, or the tensors' own)."""
    (k, kn), (v, vn) = fp8_host(k), fp8_host(v)
    if kn and vn and kn != vn and kv_dtype is None:
        raise TypeError("fa_cl: k is %s and v %s: one kv_dtype names uint8 codes; pass ml_dtypes arrays to mix "
                        "formats" % (kn, vn))
    return k, v, kv_dtype if kv_dtype is not None else (kn or vn)


def _descales(call, desc, args, k_descale, v_descale, kv_types, b, hkv):
    """fp8 K/V's descale factors (FlashAttention-3's k_descale / v_descale: value = fp8 x factor)
    into desc and args: None (none), one float (per tensor), or float32 [B, Hkv] (per sequence and
    kv head)."""
    for which, f, t in (("k", k_descale, kv_types[0]), ("v", v_descale, kv_types[1])):
        if f is None:
            continue
        if not is_fp8_storage(t):
            raise ValueError("fa_cl: %s_descale scales fp8 (e4m3, e5m2) %s only" % (which, which))
        if not is_device_array(f) and np.ndim(f) == 0:
            a = np.array([_checks.real(f, which + "_descale", positive=False)], np.float32)
        else:
            a = call.host(f, which + "_descale")
        shape = tuple(a.shape)
        if shape not in ((1,), (b, hkv)):
            raise ValueError("fa_cl: %s_descale has shape %s; expected a float, (1,) or [B, Hkv] = (%d, %d)"
                             % (which, shape, b, hkv))
        if is_device_array(a):
            if a.dtype != np.float32 or not a.flags.c_contiguous or a.offset:
                raise ValueError("fa_cl: %s_descale must be a contiguous float32 array from the start of its buffer"
                                 % which)
        elif not np.issubdtype(a.dtype, np.floating):
            raise TypeError("fa_cl: %s_descale must hold floats, not %s" % (which, a.dtype))
        else:
            a = call.device(np.ascontiguousarray(a, np.float32))
        setattr(desc, which + "_descale", _lib.DESCALE["FA_CL_DESCALE_" + ("TENSOR" if shape == (1,) else "HEAD")])
        setattr(args, which + "_descale", mem(a))


def _finish(call, desc, args, o, lse):
    call.ctx.run(desc, args)
    return (call.result(o), call.result(lse)) if lse is not None else call.result(o)


def _value_width(desc, d, dv):
    """v's and o's head_dim where it differs from q's and k's (include/fa_cl.h "Value width")."""
    if dv != d:
        if not hasattr(desc, "head_dim_v"):
            raise ValueError("fa_cl: v's head_dim %d differs from q's and k's %d: that needs a libfa_cl whose "
                             "fa_cl_attention_desc has head_dim_v (fa_cl %s has not)" % (dv, d, _lib.HEADER_VERSION))
        desc.head_dim_v = dv


def _tree(call, desc, args, tree_mask, b, sq):
    """A tree mask over the Sq new tokens (include/fa_cl.h "Tree masks") into desc and args: bool
    [B, Sq, Sq] or [Sq, Sq] (row i, column t: token i sees token t; packed into uint32 words here),
    or the words themselves, uint32 [B, Sq, W] or [Sq, W] with W = ceil(Sq / 32); a 2-D mask is every
    sequence's (sequence stride 0)."""
    if tree_mask is None:
        return
    if not hasattr(desc, "tree_mask"):
        raise ValueError("fa_cl: tree_mask needs a libfa_cl whose fa_cl_attention_desc has tree_mask (fa_cl %s has "
                         "not)" % _lib.HEADER_VERSION)
    t = call.host(tree_mask, "tree_mask")
    words = (sq + 31) // 32
    kind = np.dtype(t.dtype)
    if t.ndim not in (2, 3) or (t.ndim == 3 and t.shape[0] != b):
        raise ValueError("fa_cl: tree_mask has shape %s; expected [B, Sq, Sq] or [Sq, Sq] bools, or [B, Sq, %d] or "
                         "[Sq, %d] uint32 words (B %d, Sq %d)" % (tuple(t.shape), words, words, b, sq))
    if kind == np.bool_:
        if is_device_array(t):
            raise TypeError("fa_cl: a device tree_mask must be uint32 words, [B, Sq, %d] or [Sq, %d]" % (words, words))
        if tuple(t.shape[-2:]) != (sq, sq):
            raise ValueError("fa_cl: tree_mask has shape %s; bools are [B, Sq, Sq] or [Sq, Sq] with Sq %d"
                             % (tuple(t.shape), sq))
        bits = np.zeros(t.shape[:-1] + (words * 32,), np.uint64)
        bits[..., :sq] = t
        t = (bits.reshape(t.shape[:-1] + (words, 32)) << np.arange(32, dtype=np.uint64)).sum(axis=-1).astype(np.uint32)
    elif kind != np.uint32:
        raise TypeError("fa_cl: tree_mask must hold bools or uint32 words, not %s" % kind)
    elif tuple(t.shape[-2:]) != (sq, words):
        raise ValueError("fa_cl: tree_mask has shape %s; uint32 words are [B, Sq, %d] or [Sq, %d] with Sq %d"
                         % (tuple(t.shape), words, words, sq))
    if is_device_array(t):
        st, off = _element_strides(t, "tree_mask")
    else:  # a contiguous copy of the words
        t = np.ascontiguousarray(t)
        st, off = [s // 4 for s in t.strides], 0
    desc.tree_mask = 1
    desc.tree_mask_stride[:] = [st[0], st[1]] if len(t.shape) == 3 else [0, st[0]]
    desc.tree_mask_offset = off
    args.tree_mask = mem(call.device(t))


def _same_dtype(arrays, names):
    dts = {np.dtype(a.dtype) for a in arrays}
    if len(dts) != 1:
        raise TypeError("fa_cl: %s must share one dtype, got %s" % (", ".join(names), ", ".join(str(d) for d in dts)))
    return fa_dtype(arrays[0].dtype, names[0])


def _heads(hq, hkv):
    if hq % hkv:
        raise ValueError("fa_cl: %d query heads do not share %d key/value heads evenly" % (hq, hkv))


def _attention_bshd(call, q, k, v, scale, causal, window, return_lse, sk_view=None, softcap=0.0,
                    alibi_slopes=None, sinks=None, attn_mask=None, kv_dtype=None, k_descale=None, v_descale=None,
                    positions=None):
    """The forward on device arrays q [B, Sq, Hq, D], k [B, Sk, Hkv, D] and v [B, Sk, Hkv, Dv] (each
    checked by call.tensor); out [B, Sq, Hq, Dv]. positions (q_position, k_position, full_seqlen_q,
    full_seqlen_k): a partial result, o in float32."""
    # q and o in q's dtype; k and v each in its own (include/fa_cl.h "Storage types", "fp8 K/V")
    dtype = fa_dtype(q.dtype, "q")
    kv_types = [kv_storage(k.dtype, "k", kv_dtype, dtype), kv_storage(v.dtype, "v", kv_dtype, dtype)]
    b, sq, hq, d = q.shape
    _, sk, hkv, _ = k.shape
    if k.shape[:3] != v.shape[:3] or k.shape[0] != b or k.shape[3] != d:
        raise ValueError("fa_cl: q %s, k %s and v %s disagree: q [B, Sq, Hq, D], k [B, Sk, Hkv, D], v [B, Sk, Hkv, Dv]"
                         % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    dv = v.shape[3]
    _heads(hq, hkv)
    return_lse = _checks.flag(return_lse, "return_lse")
    sk = sk if sk_view is None else sk_view
    desc = _desc(b, hq, hkv, sq, sk, d, dtype, scale, causal, window)
    _value_width(desc, d, dv)
    desc.k_type, desc.v_type = kv_types
    o_dtype = None
    if positions is not None:
        for name, value in zip(("q_position", "k_position", "full_seqlen_q", "full_seqlen_k"), positions):
            setattr(desc, name, _checks.integer(value, name, 0, INT32_MAX // 2))
        desc.o_type = _lib.STORAGE["FA_CL_STORAGE_F32"]
        o_dtype = np.float32
    o, lse, args = _prepare(call, desc, q, k, v, (0, 2, 1), (b, sq, hq, dv), (b, hq, sq) if return_lse else None,
                            o_dtype=o_dtype)
    _descales(call, desc, args, k_descale, v_descale, kv_types, b, hkv)
    _modifiers(call, desc, args, hq, softcap, alibi_slopes, sinks)
    _mask(call, desc, args, attn_mask, b, hq, sq, sk)
    return _finish(call, desc, args, o, lse)


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                    sinks=None, return_lse=False, attn_mask=None, context=None, k_descale=None, v_descale=None,
                    kv_dtype=None):
    """FlashAttention's flash_attn_func: q [B, Sq, Hq, D], k and v [B, Sk, Hkv, D] (Hq a multiple of
    Hkv: GQA/MQA), out [B, Sq, Hq, D]; causal is bottom-right aligned (key j visible to query i iff
    j <= i + Sk - Sq); window_size (left, right), -1 unbounded, around the same diagonal;
    softmax_scale defaults to 1/sqrt(D). Score modifiers (include/fa_cl.h): softcap c > 0 (scores
    c tanh(s / c)), alibi_slopes float32 [Hq] (bias -slope |i + Sk - Sq - j|), sinks float32 [Hq]
    (a logit per head in every row's denominator), attn_mask (PyTorch's: bool, True = attend, or
    float32 / float16 added to the scaled scores after the softcap and ALiBi; broadcastable to
    [B, Hq, Sq, Sk], the key dimension contiguous). Every one combines with every other. k and v may
    each be in another dtype than q (ggml's q in float32 with a float16 cache); o is in q's.
    fp8 k / v (include/fa_cl.h "fp8 K/V"): ml_dtypes float8_e4m3fn / float8_e5m2 arrays, PyTorch
    float8 tensors, or uint8 codes with kv_dtype="e4m3" / "e5m2"; k_descale / v_descale (FlashAttention-3's:
    value = fp8 x factor) a float or float32 [B, Hkv].
    return_lse adds the natural-log LSE, float32 [B, Hq, Sq]. Arrays: pyopencl (any strides with a
    contiguous last dimension; results on their queue, not waited for) or numpy (copied; results as
    numpy)."""
    k, v, kv_dtype = _fp8_inputs(k, v, kv_dtype)
    with Call([q, k, v, alibi_slopes, sinks, attn_mask], context) as call:
        q = call.tensor(q, "q", 4)
        k, v = (call.tensor(a, n, 4, fp8=True) for a, n in ((k, "k"), (v, "v")))
        return _attention_bshd(call, q, k, v, softmax_scale, causal, window_size, return_lse, softcap=softcap,
                               alibi_slopes=alibi_slopes, sinks=sinks, attn_mask=attn_mask, kv_dtype=kv_dtype,
                               k_descale=k_descale, v_descale=v_descale)


def flash_attn_partial(q, k, v, q_position=0, k_position=0, full_seqlen_q=0, full_seqlen_k=0, softmax_scale=None,
                       causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None, sinks=None, context=None):
    """A partial result (include/fa_cl.h "Partial results and their merge"): flash_attn_func over keys
    that are a range of a longer sequence, returned as (out float32 [B, Sq, Hq, D], normalised over
    these keys, and lse float32 [B, Hq, Sq]) for merge_attentions. k_position is where k's first key
    is in the full key sequence, q_position where q's first row is in the full query sequence,
    full_seqlen_k / full_seqlen_q their lengths (0: this call's range ends them); causal masks,
    windows and ALiBi follow the full positions. Give sinks to one part only."""
    with Call([q, k, v, alibi_slopes, sinks], context) as call:
        q, k, v = (call.tensor(a, n, 4) for a, n in ((q, "q"), (k, "k"), (v, "v")))
        return _attention_bshd(call, q, k, v, softmax_scale, causal, window_size, True, softcap=softcap,
                               alibi_slopes=alibi_slopes, sinks=sinks,
                               positions=(q_position, k_position, full_seqlen_q, full_seqlen_k))


def merge_attentions(outs, lses, context=None):
    """Merge partial results (xformers' merge_attentions, FlashAttention-3's flash_attn_combine) with
    fa_cl_merge: outs, a list of n >= 1 arrays [B, Sq, Hq, D] of one shape and dtype (flash_attn_partial's
    float32, or any dtype fa_cl stores), lses their float32 [B, Hq, Sq] LSEs. Returns (out [B, Sq, Hq, D]
    in the parts' dtype, lse float32 [B, Hq, Sq]): out = sum_i out_i exp(lse_i - lse), lse = log sum_i
    exp(lse_i); a row no part saw gets 0 and -inf. Deterministic."""
    outs, lses = list(outs), list(lses)
    if not outs or len(outs) != len(lses):
        raise ValueError("fa_cl: merge_attentions takes one lse per out and at least one of each (got %d outs, %d "
                         "lses)" % (len(outs), len(lses)))
    with Call(outs + lses, context) as call:
        outs = [call.tensor(a, "outs[%d]" % i, 4) for i, a in enumerate(outs)]
        dtype = _same_dtype(outs, ["outs[%d]" % i for i in range(len(outs))])
        b, sq, hq, d = outs[0].shape
        for i, a in enumerate(outs):
            if tuple(a.shape) != (b, sq, hq, d):
                raise ValueError("fa_cl: outs[%d] has shape %s, outs[0] %s: partial results merge over one shape"
                                 % (i, tuple(a.shape), (b, sq, hq, d)))
        dev_lses = []
        for i, a in enumerate(lses):
            a = call.host(a, "lses[%d]" % i)
            if tuple(a.shape) != (b, hq, sq) or np.dtype(a.dtype) != np.float32:
                raise ValueError("fa_cl: lses[%d] must be float32 of shape %s, not %s %s"
                                 % (i, (b, hq, sq), a.dtype, tuple(a.shape)))
            if is_device_array(a) and (not c_contiguous(a) or a.offset):
                raise ValueError("fa_cl: lses[%d] must be contiguous from the start of its buffer" % i)
            dev_lses.append(call.device(np.ascontiguousarray(a) if not is_device_array(a) else a))
        parts = (_lib.AttentionDesc * len(outs))()
        for i, a in enumerate(outs):
            lib.fa_cl_attention_desc_init_sized(ctypes.byref(parts[i]), ctypes.sizeof(parts[i]), b, hq, sq, 1, d, dtype)
            _set_view(parts[i], "o", a, "outs[%d]" % i, (0, 2, 1))
        out = call.empty((b, sq, hq, d), outs[0].dtype)
        lse = call.empty((b, hq, sq), np.float32)
        merged = _lib.AttentionDesc()
        lib.fa_cl_attention_desc_init_sized(ctypes.byref(merged), ctypes.sizeof(merged), b, hq, sq, 1, d, dtype)
        _set_view(merged, "o", out, "out", (0, 2, 1))
        part_desc = (ctypes.c_void_p * len(outs))(*[ctypes.addressof(p) for p in parts])
        part_o = (ctypes.c_void_p * len(outs))(*[mem(a) for a in outs])
        part_lse = (ctypes.c_void_p * len(outs))(*[mem(a) for a in dev_lses])
        args = _lib.MergeArgs()
        args.desc = ctypes.addressof(merged)
        args.num_parts = len(outs)
        args.part_desc, args.part_o, args.part_lse = (ctypes.addressof(x) for x in (part_desc, part_o, part_lse))
        args.o, args.lse = mem(out), mem(lse)
        call.ctx.merge(args)
        return call.result(out), call.result(lse)


def flash_attn_backward(dout, q, k, v, out, lse, softmax_scale=None, causal=False, window_size=(-1, -1),
                        context=None, softcap=0.0, alibi_slopes=None, sinks=None, attn_mask=None):
    """The gradients of flash_attn_func (include/fa_cl.h "Backward"): dout, q, out [B, Sq, Hq, D], k and
    v [B, Sk, Hkv, D], lse float32 [B, Hq, Sq] as flash_attn_func(..., return_lse=True) gave it, with
    the same softmax_scale, causal, window_size and score modifiers (softcap, alibi_slopes, sinks,
    attn_mask as flash_attn_func takes them). Returns (dq, dk, dv) shaped as q, k, v (with GQA dk and
    dv sum over each kv head's query heads), and with sinks a fourth, dsink float32 [Hq], the sinks'
    gradient; the ALiBi slopes and the mask get none. Deterministic: the same inputs give the same
    bits. One dtype for q, k, v, out and dout (f32, f16, bf16); arrays as flash_attn_func takes them."""
    with Call([dout, q, k, v, out, lse, alibi_slopes, sinks, attn_mask], context) as call:
        dout, q, k, v, out = (call.tensor(a, n, 4) for a, n in ((dout, "dout"), (q, "q"), (k, "k"), (v, "v"),
                                                                 (out, "out")))
        dtype = _same_dtype([q, k, v, out, dout], ["q", "k", "v", "out", "dout"])
        b, sq, hq, d = q.shape
        _, sk, hkv, _ = k.shape
        if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d or out.shape != q.shape or dout.shape != q.shape:
            raise ValueError("fa_cl: q %s, k %s, v %s, out %s, dout %s disagree: q, out, dout [B, Sq, Hq, D], k and v "
                             "[B, Sk, Hkv, D]" % tuple(tuple(a.shape) for a in (q, k, v, out, dout)))
        _heads(hq, hkv)
        lse = call.host(lse, "lse")
        if tuple(lse.shape) != (b, hq, sq):
            raise ValueError("fa_cl: lse has shape %s; expected [B, Hq, Sq] = %s" % (tuple(lse.shape), (b, hq, sq)))
        if is_device_array(lse):
            if lse.dtype != np.float32 or not lse.flags.c_contiguous or lse.offset:
                raise ValueError("fa_cl: lse must be a contiguous float32 array from the start of its buffer")
        elif lse.dtype != np.float32:
            raise TypeError("fa_cl: lse must be float32 (as flash_attn_func returns it), not %s" % lse.dtype)
        lse = call.device(lse)
        desc = _desc(b, hq, hkv, sq, sk, d, dtype, softmax_scale, causal, window_size)
        dq, dk, dv = (call.empty(a.shape, a.dtype) for a in (q, k, v))
        order = (0, 2, 1)
        for which, a, name in (("q", q, "q"), ("k", k, "k"), ("v", v, "v"), ("o", out, "out"), ("dout", dout, "dout"),
                               ("dq", dq, "dq"), ("dk", dk, "dk"), ("dv", dv, "dv")):
            _set_view(desc, which, a, name, order)
        args = _lib.BackwardArgs()
        args.q, args.k, args.v, args.o, args.lse, args.dout = (mem(a) for a in (q, k, v, out, lse, dout))
        args.dq, args.dk, args.dv = mem(dq), mem(dk), mem(dv)
        _modifiers(call, desc, args, hq, softcap, alibi_slopes, sinks)
        _mask(call, desc, args, attn_mask, b, hq, sq, sk)
        dsink = None
        if sinks is not None:
            dsink = call.empty((hq,), np.float32)
            args.dsink = mem(dsink)
        call.ctx.run_backward(desc, args)
        grads = (call.result(dq), call.result(dk), call.result(dv))
        return grads if dsink is None else grads + (call.result(dsink),)


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False,
                                 softcap=0.0, alibi_slopes=None, sinks=None, window_size=(-1, -1), context=None):
    """PyTorch's F.scaled_dot_product_attention (no dropout): q [B, Hq, Sq, D], k and v [B, Hkv, Sk, D],
    out [B, Hq, Sq, D]. attn_mask as PyTorch's: bool (True = attend) or float32/float16 added to the
    scaled scores, broadcastable to [B, Hq, Sq, Sk] (the key dimension contiguous, not broadcast); a
    row whose keys are all masked gives 0 (PyTorch: NaN). is_causal is PyTorch's top-left mask (key j
    visible to query i iff j <= i), which fa_cl expresses as: Sq <= Sk, its bottom-right causal on
    the first Sq keys (no later key is visible to any row); Sq > Sk, no causal flag and the window
    (-1, Sq - Sk) (the last Sq - Sk + 1 rows see every key); with attn_mask it is refused, as in
    PyTorch. Hq != Hkv needs enable_gqa=True, as in PyTorch. Beyond PyTorch, fa_cl's modifiers as
    flash_attn_func has them: softcap, alibi_slopes and sinks (float32 [Hq]), window_size (left,
    right) around the bottom-right diagonal i + Sk - Sq; ALiBi and windows measure from that diagonal,
    so with is_causal they need Sq == Sk (where the two diagonals are one)."""
    with Call([q, k, v, alibi_slopes, sinks, attn_mask], context) as call:
        q, k, v = (call.tensor(a, n, 4) for a, n in ((q, "q"), (k, "k"), (v, "v")))
        is_causal = _checks.flag(is_causal, "is_causal")
        window = _checks.window(window_size)
        if attn_mask is not None and is_causal:
            raise ValueError("fa_cl: attn_mask and is_causal together are refused, as PyTorch does")
        if q.shape[1] != k.shape[1] and not _checks.flag(enable_gqa, "enable_gqa"):
            raise ValueError("fa_cl: %d query heads and %d key/value heads need enable_gqa=True"
                             % (q.shape[1], k.shape[1]))
        sq, sk = q.shape[2], k.shape[2]
        if is_causal and sq != sk and (window != (-1, -1) or alibi_slopes is not None):
            raise ValueError("fa_cl: window_size and alibi_slopes measure from the bottom-right diagonal, is_causal "
                             "from the top-left one: together they need Sq == Sk (here %d, %d); use flash_attn_func's "
                             "bottom-right causal" % (sq, sk))
        causal, sk_view = False, None
        if is_causal and sq <= sk:
            causal, sk_view = True, sq
        elif is_causal:
            window = (-1, sq - sk)
        # [B, H, S, D] described as [B, S, H, D] views: the axes swapped, no copy
        qs, ks, vs = (a.transpose((0, 2, 1, 3)) for a in (q, k, v))
        o = _attention_bshd(call, qs, ks, vs, scale, causal, window, False, sk_view=sk_view, softcap=softcap,
                            alibi_slopes=alibi_slopes, sinks=sinks, attn_mask=attn_mask)
        return o.transpose((0, 2, 1, 3)) if call.on_device else np.ascontiguousarray(o.transpose(0, 2, 1, 3))


def _index_array(call, a, name, shape, lo, hi):
    """An int32 index array (cu_seqlens, cache_seqlens, block_table) of the given shape on the device.
    numpy: any integer dtype, every entry in [lo, hi] (returned also on the host, for later checks);
    pyopencl: int32 and contiguous, its entries data the kernels clamp (include/fa_cl.h "Serving")."""
    a = call.host(a, name)
    if tuple(a.shape) != tuple(shape):
        raise ValueError("fa_cl: %s has shape %s; expected %s" % (name, tuple(a.shape), tuple(shape)))
    if is_device_array(a):
        if a.dtype != np.int32:
            raise TypeError("fa_cl: %s must be int32, not %s" % (name, a.dtype))
        if not a.flags.c_contiguous or a.offset:
            raise ValueError("fa_cl: %s must be a contiguous array from the start of its buffer" % name)
        return a, None
    host = _checks.host_integers(a, name, lo, hi)
    return call.device(host), host


def _cu_seqlens(call, a, name, batch, total, max_seqlen, max_name):
    d, host = _index_array(call, a, name, (batch + 1,), 0, total)
    if host is not None:
        lengths = np.diff(host.astype(np.int64))
        if (lengths < 0).any():
            raise ValueError("fa_cl: %s must not decrease (sequence %d ends before it starts)"
                             % (name, int(np.argmax(lengths < 0))))
        if lengths.max() > max_seqlen:
            raise ValueError("fa_cl: %s = %d is less than the longest sequence of %s (%d)"
                             % (max_name, max_seqlen, name, int(lengths.max())))
    return d


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale=None,
                           causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None, sinks=None,
                           return_lse=False, context=None):
    """FlashAttention's flash_attn_varlen_func: sequences packed along the rows, q [total_q, Hq, D],
    k and v [total_k, Hkv, D]; cu_seqlens_q / _k (integers [B + 1], non-decreasing, within [0, total])
    where each sequence starts; max_seqlen_q / _k the longest (what the plan is made for; at least
    each sequence's length). Out [total_q, Hq, D]; rows no sequence covers are 0. The LSE is float32
    [Hq, total_q]. Masks and modifiers as flash_attn_func, per sequence."""
    with Call([q, k, v, cu_seqlens_q, cu_seqlens_k, alibi_slopes, sinks], context) as call:
        q, k, v = (call.tensor(a, n, 3) for a, n in ((q, "q"), (k, "k"), (v, "v")))
        dtype = _same_dtype([q, k, v], ["q", "k", "v"])
        tq, hq, d = q.shape
        tk, hkv, _ = k.shape
        if k.shape != v.shape or k.shape[2] != d:
            raise ValueError("fa_cl: q %s, k %s and v %s disagree: q [total_q, Hq, D], k and v [total_k, Hkv, D]"
                             % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
        _heads(hq, hkv)
        cu_shape = tuple(call.host(cu_seqlens_q, "cu_seqlens_q").shape)
        if len(cu_shape) != 1 or cu_shape[0] < 2:
            raise ValueError("fa_cl: cu_seqlens_q has shape %s; expected [B + 1] with B >= 1" % (cu_shape,))
        n = cu_shape[0] - 1
        max_q = _checks.integer(max_seqlen_q, "max_seqlen_q", 1, INT64_MAX)
        max_k = _checks.integer(max_seqlen_k, "max_seqlen_k", 1, INT64_MAX)
        cq = _cu_seqlens(call, cu_seqlens_q, "cu_seqlens_q", n, tq, max_q, "max_seqlen_q")
        ck = _cu_seqlens(call, cu_seqlens_k, "cu_seqlens_k", n, tk, max_k, "max_seqlen_k")
        return_lse = _checks.flag(return_lse, "return_lse")
        desc = _desc(n, hq, hkv, max_q, max_k, d, dtype, softmax_scale, causal, window_size)
        desc.total_q, desc.total_k = tq, tk
        o, lse, args = _prepare(call, desc, q, k, v, (None, 1, 0), (tq, hq, d), (hq, tq) if return_lse else None,
                                zero_o=True)
        args.cu_seqlens_q, args.cu_seqlens_k = mem(cq), mem(ck)
        _modifiers(call, desc, args, hq, softcap, alibi_slopes, sinks)
        return _finish(call, desc, args, o, lse)


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, cache_seqlens=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                            sinks=None, return_lse=False, attn_mask=None, tree_mask=None, context=None,
                            k_descale=None, v_descale=None, kv_dtype=None):
    """FlashAttention's flash_attn_with_kvcache: q [B, Sq, Hq, D] against a cache k_cache / v_cache
    [B, capacity, Hkv, D], or with block_table (integers [B, pages_per_seq]) a paged pool
    [num_pages, page_size, Hkv, D] (v_cache and v may have their own head_dim Dv: out is then
    [B, Sq, Hq, Dv]). tree_mask (speculative decoding, include/fa_cl.h "Tree masks"): the Sq query rows
    are each sequence's last Sq keys (the new tokens); each sees the cached prefix and the new tokens
    its row allows: bool [B, Sq, Sq] or [Sq, Sq] (tree_mask[b, i, t]: token i sees token t), or uint32
    words [B, Sq, ceil(Sq / 32)] / [Sq, ...] (bit t % 32 of word t // 32). cache_seqlens (integers [B],
    or one int for all, each in [0, capacity]) gives each sequence's key count (default: the capacity);
    masks align to it (bottom-right). k, v ([B, seqlen_new, Hkv, D]) are first written into the cache at
    those positions (in place: with numpy caches the arrays given are updated; a length plus seqlen_new
    must fit the capacity), then attended to; cache_seqlens is not advanced. numpy block tables: the
    entries of pages a sequence reaches must be page numbers (others, e.g. -1 padding, are not read).
    attn_mask as flash_attn_func's, its keys the capacity's. pyopencl lengths and tables are device data
    the kernels clamp (include/fa_cl.h "Serving"). An fp8 cache (ml_dtypes / PyTorch float8, or uint8
    codes with kv_dtype) with k_descale / v_descale as flash_attn_func's; appended rows (k, v in q's
    dtype) are rounded to it (nearest even, saturating: include/fa_cl.h "fp8 K/V")."""
    k_cache, v_cache, kv_dtype = _fp8_inputs(k_cache, v_cache, kv_dtype)
    if (k is None) != (v is None):
        raise ValueError("fa_cl: k and v (new rows to append) come together: %s is None" % ("v" if v is None else "k"))
    scalar_lens = cache_seqlens is not None and not is_device_array(cache_seqlens) and np.ndim(cache_seqlens) == 0
    with Call([q, k_cache, v_cache, k, v, None if scalar_lens else cache_seqlens, block_table, alibi_slopes, sinks,
               attn_mask, tree_mask], context) as call:
        numpy_caches = (k_cache, v_cache) if not call.on_device and k is not None else None
        if numpy_caches and not all(isinstance(c, np.ndarray) and c.flags.writeable for c in numpy_caches):
            raise ValueError("fa_cl: appending k and v updates k_cache and v_cache in place: they must be writable "
                             "numpy arrays")
        q = call.tensor(q, "q", 4)
        kc, vc = (call.tensor(a, n, 4, fp8=True) for a, n in ((k_cache, "k_cache"), (v_cache, "v_cache")))
        if k is not None and call.host(k, "k").shape[1:2] == (0,) and call.host(v, "v").shape[1:2] == (0,):
            k = v = numpy_caches = None  # no new rows: seqlen_new 0 is no append (include/fa_cl.h)
        kn, vn = (call.tensor(a, n, 4) if a is not None else None for a, n in ((k, "k"), (v, "v")))
        dtype = _same_dtype([q] + ([kn, vn] if kn is not None else []), ["q"] + (["k", "v"] if kn is not None else []))
        kv_types = [kv_storage(kc.dtype, "k_cache", kv_dtype, dtype), kv_storage(vc.dtype, "v_cache", kv_dtype, dtype)]
        b, sq, hq, d = q.shape
        if kc.shape[:3] != vc.shape[:3] or kc.shape[3] != d:
            raise ValueError("fa_cl: q %s, k_cache %s and v_cache %s disagree"
                             % (tuple(q.shape), tuple(kc.shape), tuple(vc.shape)))
        dv = vc.shape[3]
        hkv = kc.shape[2]
        _heads(hq, hkv)
        seqlen_new = 0
        if kn is not None:
            if (kn.shape[:3] != vn.shape[:3] or kn.shape[0] != b or kn.shape[2] != hkv or kn.shape[3] != d or
                    vn.shape[3] != dv):
                raise ValueError("fa_cl: k %s and v %s must be [B, seqlen_new, Hkv, D] = [%d, n, %d, %d] and "
                                 "[B, seqlen_new, Hkv, Dv] (Dv %d)" % (tuple(kn.shape), tuple(vn.shape), b, hkv, d, dv))
            if not (c_contiguous(kn) and c_contiguous(vn)) or kn.offset or vn.offset:
                raise ValueError("fa_cl: k and v (new rows) must be contiguous from the start of their buffers")
            seqlen_new = kn.shape[1]
        paged = block_table is not None
        if paged:
            table_shape = tuple(call.host(block_table, "block_table").shape)
            if len(table_shape) != 2 or table_shape[0] != b or table_shape[1] == 0:
                raise ValueError("fa_cl: block_table has shape %s; expected [B, pages_per_seq] = [%d, n > 0]"
                                 % (table_shape, b))
            num_pages, page_size = kc.shape[0], kc.shape[1]
            capacity = table_shape[1] * page_size
        else:
            if kc.shape[0] != b:
                raise ValueError("fa_cl: k_cache has %d sequences, q %d" % (kc.shape[0], b))
            capacity = kc.shape[1]
        if seqlen_new > capacity:
            raise ValueError("fa_cl: k and v hold %d new rows, more than the cache's capacity %d" % (seqlen_new, capacity))
        lens, host_lens = None, None
        if scalar_lens:
            host_lens = np.full(b, _checks.integer(cache_seqlens, "cache_seqlens", 0, capacity - seqlen_new), np.int32)
            lens = call.device(host_lens)
        elif cache_seqlens is not None:
            lens, host_lens = _index_array(call, cache_seqlens, "cache_seqlens", (b,), 0, capacity - seqlen_new)
        if kn is not None and lens is None:
            raise ValueError("fa_cl: appending k and v needs cache_seqlens (where the new rows go)")
        table = None
        if paged:
            table, host_table = _index_array(call, block_table, "block_table", table_shape, -2**31, INT32_MAX)
            if host_table is not None:
                _check_table(host_table, host_lens, seqlen_new, capacity, page_size, num_pages)
        return_lse = _checks.flag(return_lse, "return_lse")
        desc = _desc(b, hq, hkv, sq, capacity, d, dtype, softmax_scale, causal, window_size)
        _value_width(desc, d, dv)
        if paged:
            desc.page_size, desc.num_pages, desc.pages_per_seq = page_size, num_pages, table_shape[1]
        desc.kv_seqlens = 1 if lens is not None else 0
        desc.seqlen_new = seqlen_new
        desc.k_type, desc.v_type = kv_types
        # the cache: [B, S, H, D] -> {batch, head, seq}; a pool [pages, page_size, H, D] -> {page, head, slot}
        o, lse, args = _prepare(call, desc, q, kc, vc, (0, 2, 1), (b, sq, hq, dv), (b, hq, sq) if return_lse else None,
                                names=("q", "k_cache", "v_cache"))
        if lens is not None:
            args.cache_seqlens = mem(lens)
        if table is not None:
            args.block_table = mem(table)
        if kn is not None:
            args.k_new, args.v_new = mem(kn), mem(vn)
        _descales(call, desc, args, k_descale, v_descale, kv_types, b, hkv)
        _modifiers(call, desc, args, hq, softcap, alibi_slopes, sinks)
        _mask(call, desc, args, attn_mask, b, hq, sq, capacity)
        _tree(call, desc, args, tree_mask, b, sq)
        result = _finish(call, desc, args, o, lse)
        if numpy_caches is not None:
            numpy_caches[0][...] = call.result(kc)
            numpy_caches[1][...] = call.result(vc)
        return result


def _check_table(table, lens, seqlen_new, capacity, page_size, num_pages):
    """The entries of the pages each sequence reaches (its length plus the new rows; every column
    without lengths) must be pages of the pool; the others are not read and may hold anything."""
    for b in range(table.shape[0]):
        keys = capacity if lens is None else int(lens[b]) + seqlen_new
        used = table[b, :(keys + page_size - 1) // page_size]
        bad = np.flatnonzero((used < 0) | (used >= num_pages))
        if bad.size:
            raise ValueError("fa_cl: block_table[%d, %d] = %d is not a page of the pool [0, %d) (sequence %d reaches "
                             "%d keys)" % (b, bad[0], used[bad[0]], num_pages, b, keys))
