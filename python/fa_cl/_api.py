# SPDX-License-Identifier: Apache-2.0
"""The calls: FlashAttention's and PyTorch's shapes and names over fa_cl's descriptor."""
import ctypes
import math
import os
import threading

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import _lib
from ._lib import lib


class FaClError(RuntimeError):
    """A call fa_cl refused or failed: .status (int), .status_name ("FA_CL_ERROR_...") and the library's message."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = lib.fa_cl_status_string(status).decode()
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))


try:  # bfloat16 as ml_dtypes spells it, where installed; uint16 arrays are bfloat16 bits either way
    import ml_dtypes

    _BF16_TYPES = (np.dtype(ml_dtypes.bfloat16), np.dtype(np.uint16))
except ImportError:
    _BF16_TYPES = (np.dtype(np.uint16),)


def _fa_dtype(dt):
    dt = np.dtype(dt)
    if dt == np.float32:
        return _lib.DTYPE["FA_CL_F32"]
    if dt == np.float16:
        return _lib.DTYPE["FA_CL_F16"]
    if dt in _BF16_TYPES:
        return _lib.DTYPE["FA_CL_BF16"]
    raise TypeError("fa_cl takes float32, float16 and bfloat16 (uint16 bits or ml_dtypes.bfloat16), not %s" % dt)


class Context:
    """One device and queue, and the plans made on it (one per descriptor, kept for reuse).

    Context() takes the default device (FA_CL_DEVICE, else the first GPU, else any device, as the C
    library chooses); Context(queue) wraps a pyopencl CommandQueue, whose arrays the calls then take
    without copies. Calls are enqueued on the queue and return without waiting, as pyopencl's own.
    """

    def __init__(self, queue=None):
        self._ptr = ctypes.c_void_p()
        self._plans = {}
        self._lock = threading.Lock()
        if queue is None:
            st = lib.fa_cl_context_create_default(ctypes.byref(self._ptr))
            if st:
                raise FaClError(st, lib.fa_cl_last_error(None).decode())
            self.queue = cl.CommandQueue.from_int_ptr(lib.fa_cl_context_queue(self._ptr), retain=True)
        else:
            st = lib.fa_cl_context_create(queue.context.int_ptr, queue.device.int_ptr, queue.int_ptr,
                                          ctypes.byref(self._ptr))
            if st:
                raise FaClError(st, lib.fa_cl_last_error(None).decode())
            self.queue = queue

    @property
    def device(self):
        return self.queue.device

    def plan_count(self):
        """Plans this context holds (one per distinct descriptor it has run)."""
        return len(self._plans)

    def plan_info(self, desc):
        """What the plan for desc chose (a dict of fa_cl_plan_info's fields)."""
        info = _lib.PlanInfo()
        st = lib.fa_cl_plan_get_info_sized(self._plan(desc), ctypes.byref(info), ctypes.sizeof(info))
        if st:
            raise FaClError(st, lib.fa_cl_last_error(None).decode())
        out = {}
        for name, _ in info._fields_:
            v = getattr(info, name)
            out[name] = v.decode() if isinstance(v, bytes) else v
        return out

    def _plan(self, desc):
        key = bytes(desc)
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                plan = ctypes.c_void_p()
                st = lib.fa_cl_plan_create(self._ptr, ctypes.byref(desc), ctypes.byref(plan))
                if st:
                    raise FaClError(st, lib.fa_cl_last_error(self._ptr).decode())
                self._plans[key] = plan
            return plan

    def run(self, desc, args):
        args.struct_size = ctypes.sizeof(args)
        st = lib.fa_cl_plan_run(self._plan(desc), ctypes.byref(args))
        if st:
            raise FaClError(st, lib.fa_cl_last_error(self._ptr).decode())

    def run_backward(self, desc, args):
        """The backward through the library's one-shot call (its plan cache holds the plan)."""
        args.struct_size = ctypes.sizeof(args)
        st = lib.fa_cl_attention_backward(self._ptr, ctypes.byref(desc), ctypes.byref(args))
        if st:
            raise FaClError(st, lib.fa_cl_last_error(self._ptr).decode())

    def close(self):
        if self._ptr:
            for plan in self._plans.values():
                lib.fa_cl_plan_release(plan)
            self._plans.clear()
            lib.fa_cl_context_release(self._ptr)
            self._ptr = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


_contexts = {}
_default = None
_contexts_lock = threading.Lock()


def default_context():
    """The Context of numpy calls: created on first use (FA_CL_DEVICE chooses the device)."""
    global _default
    with _contexts_lock:
        if _default is None:
            _default = Context()
        return _default


def _context_for(queue):
    with _contexts_lock:
        ctx = _contexts.get(queue.int_ptr)
        if ctx is None:
            ctx = _contexts[queue.int_ptr] = Context(queue)
        return ctx


class _Call:
    """The arrays of one call: all pyopencl (taken as they are, results on their queue) or all numpy
    (copied to the context's device and the results back)."""

    def __init__(self, arrays, context):
        present = [a for a in arrays if a is not None]
        dev = [isinstance(a, cla.Array) for a in present]
        if any(dev) and not all(dev):
            raise TypeError("fa_cl: pass all arrays as pyopencl arrays or all as numpy arrays, not a mix")
        self.on_device = all(dev) and bool(dev)
        if self.on_device:
            queue = present[0].queue
            for a in present:
                if a.queue is None or a.queue.context != queue.context:
                    raise ValueError("fa_cl: every pyopencl array must belong to one OpenCL context with a queue")
            self.ctx = context or _context_for(queue)
        else:
            self.ctx = context or default_context()

    def device(self, a, name, dtype=None):
        """a as a pyopencl array on the context's queue (numpy: copied; C order)."""
        if a is None:
            return None
        if isinstance(a, cla.Array):
            return a
        a = np.asarray(a)
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return cla.to_device(self.ctx.queue, np.ascontiguousarray(a))

    def result(self, a):
        return a if self.on_device else a.get()


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


def _mem(a):
    return a.base_data.int_ptr


def _check_dim(a, name, ndim):
    if len(a.shape) != ndim:
        raise ValueError("fa_cl: %s has shape %s; expected %d dimensions" % (name, tuple(a.shape), ndim))


def _desc(batch, heads_q, heads_kv, sq, sk, d, dtype, scale, causal, window):
    desc = _lib.AttentionDesc()
    lib.fa_cl_attention_desc_init_sized(ctypes.byref(desc), ctypes.sizeof(desc), batch, heads_q, sq, sk, d, dtype)
    desc.heads_kv = heads_kv
    if scale is not None:
        if not (scale > 0 and math.isfinite(scale)):
            raise ValueError("fa_cl: softmax scale %r must be positive and finite" % (scale,))
        desc.scale = scale
    desc.causal = 1 if causal else 0
    left, right = window
    desc.window_left, desc.window_right = int(left), int(right)
    return desc


def _set_view(desc, which, a, name, order):
    """a's strides, as [batch, head, seq] from its dimensions in `order`, and its offset, into desc."""
    st, off = _element_strides(a, name)
    getattr(desc, which + "_stride")[:] = [st[i] if i is not None else 0 for i in order]
    setattr(desc, which + "_offset", off)


def _prepare(call, desc, q, k, v, order, o_shape, lse_shape, names=("q", "k", "v"), zero_o=False):
    """A new output o (C order) and LSE (None where not asked for); the four views into desc (their
    dimensions in `order` as [batch, head, seq]); the call's args holding the four buffers."""
    queue = call.ctx.queue
    o = (cla.zeros if zero_o else cla.empty)(queue, o_shape, q.dtype)
    for which, a, name in (("q", q, names[0]), ("k", k, names[1]), ("v", v, names[2]), ("o", o, "o")):
        _set_view(desc, which, a, name, order)
    lse = cla.empty(queue, lse_shape, np.float32) if lse_shape else None
    args = _lib.ForwardArgs()
    args.q, args.k, args.v, args.o = _mem(q), _mem(k), _mem(v), _mem(o)
    args.lse = _mem(lse) if lse is not None else None
    return o, lse, args


def _modifiers(call, desc, args, heads_q, softcap, alibi_slopes, sinks, keep):
    """The score modifiers into desc and args: softcap (0 = none), ALiBi slopes and sink logits
    (float32 [Hq] each, None = none); keep holds the device copies until the call is enqueued."""
    if softcap:
        if not (softcap > 0 and math.isfinite(softcap)):
            raise ValueError("fa_cl: softcap %r must be positive and finite (0: none)" % (softcap,))
        desc.softcap = softcap
    for name, a in (("alibi_slopes", alibi_slopes), ("sinks", sinks)):
        if a is None:
            continue
        if tuple(a.shape) != (heads_q,):
            raise ValueError("fa_cl: %s has shape %s; expected (%d,), one per query head" % (name, tuple(a.shape), heads_q))
        d = call.device(a, name, np.float32) if not isinstance(a, cla.Array) else a
        if d.dtype != np.float32 or not d.flags.c_contiguous or d.offset:
            raise ValueError("fa_cl: %s must be a contiguous float32 array from the start of its buffer" % name)
        keep.append(d)
        setattr(desc, "alibi" if name == "alibi_slopes" else "sinks", 1)
        setattr(args, name, _mem(d))


def _finish(call, desc, args, o, lse):
    call.ctx.run(desc, args)
    return (call.result(o), call.result(lse)) if lse is not None else call.result(o)


def _same_dtype(arrays, names):
    dts = {np.dtype(a.dtype) for a in arrays}
    if len(dts) != 1:
        raise TypeError("fa_cl: %s must share one dtype, got %s" % (", ".join(names), ", ".join(str(d) for d in dts)))
    return _fa_dtype(arrays[0].dtype)


def _mask(call, desc, args, mask, b, hq, sq, sk, keep):
    """An attention mask broadcastable to [B, Hq, Sq, Sk] (PyTorch's attn_mask: bool, True = attend, or
    float32 / float16 added to the scores) into desc and args; size-1 and missing leading dimensions
    broadcast (stride 0); the key dimension must be contiguous."""
    if mask is None:
        return
    on_device = isinstance(mask, cla.Array)
    if not on_device:
        mask = np.asarray(mask)
    kind = np.dtype(mask.dtype)
    types = {np.dtype(np.bool_): 3, np.dtype(np.float32): 1, np.dtype(np.float16): 2}
    if kind not in types:
        raise TypeError("fa_cl: attn_mask must be bool, float32 or float16, not %s" % kind)
    shape = tuple(mask.shape)
    if len(shape) > 4 or any(n not in (1, want) for n, want in zip(shape[::-1], (sk, sq, hq, b))):
        raise ValueError("fa_cl: attn_mask of shape %s does not broadcast to [B, Hq, Sq, Sk] = %s"
                         % (shape, (b, hq, sq, sk)))
    if shape[-1:] != (sk,):
        raise ValueError("fa_cl: attn_mask's last dimension must be the keys (%d), not broadcast" % sk)
    if not on_device:
        host = np.ascontiguousarray(mask.view(np.uint8) if kind == np.bool_ else mask)
        mask = cla.to_device(call.ctx.queue, host)
    st, off = _element_strides(mask, "attn_mask")
    full = [1] * (4 - len(shape)) + list(shape)
    st = [0] * (4 - len(shape)) + st
    if st[3] != 1:
        raise ValueError("fa_cl: attn_mask's keys must be contiguous (stride %d elements); pass a copy" % st[3])
    keep.append(mask)
    desc.mask = types[kind]
    desc.mask_stride[:] = [st[i] if full[i] > 1 else 0 for i in range(3)]
    desc.mask_offset = off
    args.mask = _mem(mask)


def _attention_bshd(q, k, v, scale, causal, window, return_lse, context, sk_view=None, softcap=0.0,
                    alibi_slopes=None, sinks=None, attn_mask=None):
    call = _Call([q, k, v, alibi_slopes, sinks, attn_mask], context)
    q, k, v = call.device(q, "q"), call.device(k, "k"), call.device(v, "v")
    for a, n in ((q, "q"), (k, "k"), (v, "v")):
        _check_dim(a, n, 4)
    # q and o in q's dtype; k and v each in its own (include/fa_cl.h "Storage types")
    dtype = _fa_dtype(q.dtype)
    kv_types = [_fa_dtype(k.dtype), _fa_dtype(v.dtype)]
    b, sq, hq, d = q.shape
    _, sk, hkv, _ = k.shape
    if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d:
        raise ValueError("fa_cl: q %s, k %s and v %s disagree: q [B, Sq, Hq, D], k and v [B, Sk, Hkv, D]"
                         % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    if hkv == 0 or hq % hkv:
        raise ValueError("fa_cl: %d query heads do not share %d key/value heads evenly" % (hq, hkv))
    desc = _desc(b, hq, hkv, sq, sk if sk_view is None else sk_view, d, dtype, scale, causal, window)
    # fa_cl_storage is the dtype's value + 1 (0 = the descriptor's dtype)
    desc.k_type, desc.v_type = (t + 1 if t != dtype else 0 for t in kv_types)
    o, lse, args = _prepare(call, desc, q, k, v, (0, 2, 1), (b, sq, hq, d), (b, hq, sq) if return_lse else None)
    keep = []
    _modifiers(call, desc, args, hq, softcap, alibi_slopes, sinks, keep)
    _mask(call, desc, args, attn_mask, b, hq, sq, sk if sk_view is None else sk_view, keep)
    return _finish(call, desc, args, o, lse)


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                    sinks=None, return_lse=False, context=None):
    """FlashAttention's flash_attn_func: q [B, Sq, Hq, D], k and v [B, Sk, Hkv, D] (Hq a multiple of
    Hkv: GQA/MQA), out [B, Sq, Hq, D]; causal is bottom-right aligned (key j visible to query i iff
    j <= i + Sk - Sq); window_size (left, right), -1 unbounded, around the same diagonal;
    softmax_scale defaults to 1/sqrt(D). Score modifiers (include/fa_cl.h): softcap c > 0 (scores
    c tanh(s / c)), alibi_slopes float32 [Hq] (bias -slope |i + Sk - Sq - j|), sinks float32 [Hq]
    (a logit per head in every row's denominator). k and v may each be in another dtype than q (ggml's
    q in float32 with a float16 cache); o is in q's. return_lse adds the natural-log LSE, float32
    [B, Hq, Sq]. Arrays: pyopencl (any strides with a contiguous last dimension; results on their
    queue, not waited for) or numpy (copied; results as numpy)."""
    return _attention_bshd(q, k, v, softmax_scale, causal, window_size, return_lse, context, softcap=softcap,
                           alibi_slopes=alibi_slopes, sinks=sinks)


def flash_attn_backward(dout, q, k, v, out, lse, softmax_scale=None, causal=False, window_size=(-1, -1),
                        context=None):
    """The gradients of flash_attn_func (include/fa_cl.h "Backward"): dout, q, out [B, Sq, Hq, D], k and
    v [B, Sk, Hkv, D], lse float32 [B, Hq, Sq] as flash_attn_func(..., return_lse=True) gave it, with
    the same softmax_scale, causal and window_size. Returns (dq, dk, dv) shaped as q, k, v (with GQA
    dk and dv sum over each kv head's query heads). Deterministic: the same inputs give the same bits.
    One dtype for q, k, v, out and dout (f32, f16, bf16); arrays as flash_attn_func takes them."""
    call = _Call([dout, q, k, v, out, lse], context)
    dout, q, k, v, out = (call.device(a, n) for a, n in ((dout, "dout"), (q, "q"), (k, "k"), (v, "v"), (out, "out")))
    lse = call.device(lse, "lse", np.float32)
    for a, n in ((dout, "dout"), (q, "q"), (k, "k"), (v, "v"), (out, "out")):
        _check_dim(a, n, 4)
    dtype = _same_dtype([q, k, v, out, dout], ["q", "k", "v", "out", "dout"])
    b, sq, hq, d = q.shape
    _, sk, hkv, _ = k.shape
    if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d or out.shape != q.shape or dout.shape != q.shape:
        raise ValueError("fa_cl: q %s, k %s, v %s, out %s, dout %s disagree: q, out, dout [B, Sq, Hq, D], k and v "
                         "[B, Sk, Hkv, D]" % tuple(tuple(a.shape) for a in (q, k, v, out, dout)))
    if hkv == 0 or hq % hkv:
        raise ValueError("fa_cl: %d query heads do not share %d key/value heads evenly" % (hq, hkv))
    if tuple(lse.shape) != (b, hq, sq) or lse.dtype != np.float32 or not lse.flags.c_contiguous or lse.offset:
        raise ValueError("fa_cl: lse must be a contiguous float32 [B, Hq, Sq] = %s array, got %s %s"
                         % ((b, hq, sq), lse.dtype, tuple(lse.shape)))
    desc = _desc(b, hq, hkv, sq, sk, d, dtype, softmax_scale, causal, window_size)
    queue = call.ctx.queue
    dq, dk, dv = (cla.empty(queue, a.shape, a.dtype) for a in (q, k, v))
    order = (0, 2, 1)
    for which, a, name in (("q", q, "q"), ("k", k, "k"), ("v", v, "v"), ("o", out, "out"), ("dout", dout, "dout"),
                           ("dq", dq, "dq"), ("dk", dk, "dk"), ("dv", dv, "dv")):
        _set_view(desc, which, a, name, order)
    args = _lib.BackwardArgs()
    args.q, args.k, args.v, args.o, args.lse, args.dout = (_mem(a) for a in (q, k, v, out, lse, dout))
    args.dq, args.dk, args.dv = _mem(dq), _mem(dk), _mem(dv)
    call.ctx.run_backward(desc, args)
    return call.result(dq), call.result(dk), call.result(dv)


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False,
                                 context=None):
    """PyTorch's F.scaled_dot_product_attention (no dropout): q [B, Hq, Sq, D], k and v [B, Hkv, Sk, D],
    out [B, Hq, Sq, D]. attn_mask as PyTorch's: bool (True = attend) or float32/float16 added to the
    scaled scores, broadcastable to [B, Hq, Sq, Sk] (the key dimension contiguous, not broadcast); a
    row whose keys are all masked gives 0 (PyTorch: NaN). is_causal is PyTorch's top-left mask (key j
    visible to query i iff j <= i), which fa_cl expresses as: Sq <= Sk, its bottom-right causal on
    the first Sq keys (no later key is visible to any row); Sq > Sk, no causal flag and the window
    (-1, Sq - Sk) (the last Sq - Sk + 1 rows see every key); with attn_mask it is refused, as in
    PyTorch. Hq != Hkv needs enable_gqa=True, as in PyTorch."""
    if attn_mask is not None and is_causal:
        raise ValueError("fa_cl: attn_mask and is_causal together are refused, as PyTorch does")
    for a, n in ((q, "q"), (k, "k"), (v, "v")):
        if len(getattr(a, "shape", ())) != 4:
            raise ValueError("fa_cl: %s has shape %s; expected [B, H, S, D]" % (n, tuple(getattr(a, "shape", ()))))
    if q.shape[1] != k.shape[1] and not enable_gqa:
        raise ValueError("fa_cl: %d query heads and %d key/value heads need enable_gqa=True" % (q.shape[1], k.shape[1]))
    # [B, H, S, D] read as [B, S, H, D] views: swap the axes (pyopencl: a view, numpy: on the copy)
    swap = (lambda a: a.transpose((0, 2, 1, 3))) if isinstance(q, cla.Array) else (lambda a: np.asarray(a).transpose(0, 2, 1, 3))
    sq, sk = q.shape[2], k.shape[2]
    causal, window, sk_view = False, (-1, -1), None
    if is_causal and sq <= sk:
        causal, sk_view = True, sq
    elif is_causal:
        window = (-1, sq - sk)
    qs, ks, vs = swap(q), swap(k), swap(v)
    if not isinstance(q, cla.Array):
        qs, ks, vs = (np.ascontiguousarray(a) for a in (qs, ks, vs))
    o = _attention_bshd(qs, ks, vs, scale, causal, window, False, context, sk_view=sk_view, attn_mask=attn_mask)
    return o.transpose((0, 2, 1, 3)) if isinstance(o, cla.Array) else np.ascontiguousarray(o.transpose(0, 2, 1, 3))


def _int32_device(call, a, name, length):
    if a is None:
        return None
    if isinstance(a, (int, np.integer)):
        a = np.full(length, int(a), np.int32)
    d = call.device(a, name, np.int32) if not isinstance(a, cla.Array) else a
    if d.dtype != np.int32:
        raise TypeError("fa_cl: %s must be int32, not %s" % (name, d.dtype))
    if d.size < length:
        raise ValueError("fa_cl: %s has %d entries; %d needed" % (name, d.size, length))
    if not d.flags.c_contiguous or d.offset:
        raise ValueError("fa_cl: %s must be a contiguous array from the start of its buffer" % name)
    return d


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale=None,
                           causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None, sinks=None,
                           return_lse=False, context=None):
    """FlashAttention's flash_attn_varlen_func: sequences packed along the rows, q [total_q, Hq, D],
    k and v [total_k, Hkv, D]; cu_seqlens_q / _k (int32 [B + 1]) where each sequence starts;
    max_seqlen_q / _k the longest (what the plan is made for). Out [total_q, Hq, D]; rows no
    sequence covers are 0. The LSE is float32 [Hq, total_q]. Masks and modifiers as flash_attn_func,
    per sequence."""
    call = _Call([q, k, v, cu_seqlens_q, cu_seqlens_k, alibi_slopes, sinks], context)
    q, k, v = call.device(q, "q"), call.device(k, "k"), call.device(v, "v")
    for a, n in ((q, "q"), (k, "k"), (v, "v")):
        _check_dim(a, n, 3)
    dtype = _same_dtype([q, k, v], ["q", "k", "v"])
    tq, hq, d = q.shape
    tk, hkv, _ = k.shape
    if k.shape != v.shape or k.shape[2] != d or hkv == 0 or hq % hkv:
        raise ValueError("fa_cl: q %s, k %s and v %s disagree: q [total_q, Hq, D], k and v [total_k, Hkv, D]"
                         % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    n = len(cu_seqlens_q) - 1
    if n < 1 or len(cu_seqlens_k) != n + 1:
        raise ValueError("fa_cl: cu_seqlens_q and cu_seqlens_k need the same length B + 1 >= 2")
    cq, ck = _int32_device(call, cu_seqlens_q, "cu_seqlens_q", n + 1), _int32_device(call, cu_seqlens_k, "cu_seqlens_k", n + 1)
    desc = _desc(n, hq, hkv, int(max_seqlen_q), int(max_seqlen_k), d, dtype, softmax_scale, causal, window_size)
    desc.total_q, desc.total_k = tq, tk
    o, lse, args = _prepare(call, desc, q, k, v, (None, 1, 0), (tq, hq, d), (hq, tq) if return_lse else None,
                            zero_o=True)
    args.cu_seqlens_q, args.cu_seqlens_k = _mem(cq), _mem(ck)
    keep = []
    _modifiers(call, desc, args, hq, softcap, alibi_slopes, sinks, keep)
    return _finish(call, desc, args, o, lse)


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, cache_seqlens=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                            sinks=None, return_lse=False, context=None):
    """FlashAttention's flash_attn_with_kvcache: q [B, Sq, Hq, D] against a cache k_cache / v_cache
    [B, capacity, Hkv, D], or with block_table (int32 [B, pages_per_seq]) a paged pool
    [num_pages, page_size, Hkv, D]. cache_seqlens (int32 [B], or one int for all) gives each
    sequence's key count (default: the capacity); masks align to it (bottom-right). k, v
    ([B, seqlen_new, Hkv, D]) are first written into the cache at those positions (in place: with
    numpy caches the arrays given are updated), then attended to; cache_seqlens is not advanced.
    Lengths and table entries outside their ranges are clamped by the kernels (include/fa_cl.h)."""
    call = _Call([q, k_cache, v_cache, k, v, cache_seqlens if not isinstance(cache_seqlens, int) else None,
                  block_table, alibi_slopes, sinks], context)
    numpy_caches = (k_cache, v_cache) if not call.on_device else None
    q, kc, vc = call.device(q, "q"), call.device(k_cache, "k_cache"), call.device(v_cache, "v_cache")
    kn, vn = call.device(k, "k"), call.device(v, "v")
    _check_dim(q, "q", 4)
    _check_dim(kc, "k_cache", 4)
    arrays = [q, kc, vc] + ([kn, vn] if kn is not None else [])
    dtype = _same_dtype(arrays, ["q", "k_cache", "v_cache"] + (["k", "v"] if kn is not None else []))
    b, sq, hq, d = q.shape
    if kc.shape != vc.shape or kc.shape[3] != d or kc.shape[2] == 0 or hq % kc.shape[2]:
        raise ValueError("fa_cl: q %s, k_cache %s and v_cache %s disagree" % (tuple(q.shape), tuple(kc.shape), tuple(vc.shape)))
    hkv = kc.shape[2]
    if (kn is None) != (vn is None):
        raise ValueError("fa_cl: k and v come together")
    paged = block_table is not None
    table = None
    if paged:
        table_shape = tuple(block_table.shape)
        if len(table_shape) != 2 or table_shape[0] != b:
            raise ValueError("fa_cl: block_table has shape %s; expected [B, pages_per_seq]" % (table_shape,))
        table = _int32_device(call, block_table, "block_table", b * table_shape[1])
        num_pages, page_size = kc.shape[0], kc.shape[1]
        capacity = table_shape[1] * page_size
    else:
        if kc.shape[0] != b:
            raise ValueError("fa_cl: k_cache has %d sequences, q %d" % (kc.shape[0], b))
        capacity = kc.shape[1]
    lens = _int32_device(call, cache_seqlens, "cache_seqlens", b)
    if kn is not None and lens is None:
        raise ValueError("fa_cl: appending k and v needs cache_seqlens (where the new rows go)")
    desc = _desc(b, hq, hkv, sq, capacity, d, dtype, softmax_scale, causal, window_size)
    if paged:
        desc.page_size, desc.num_pages, desc.pages_per_seq = page_size, num_pages, table_shape[1]
    if lens is not None:
        desc.kv_seqlens = 1
    if kn is not None:
        if kn.shape != vn.shape or kn.shape[0] != b or kn.shape[2] != hkv or kn.shape[3] != d:
            raise ValueError("fa_cl: k %s and v %s must be [B, seqlen_new, Hkv, D]" % (tuple(kn.shape), tuple(vn.shape)))
        if not (kn.flags.c_contiguous and vn.flags.c_contiguous) or kn.offset or vn.offset:
            raise ValueError("fa_cl: k and v (new rows) must be contiguous from the start of their buffers")
        desc.seqlen_new = kn.shape[1]
    # the cache: [B, S, H, D] -> {batch, head, seq}; a pool [pages, page_size, H, D] -> {page, head, slot}
    o, lse, args = _prepare(call, desc, q, kc, vc, (0, 2, 1), (b, sq, hq, d), (b, hq, sq) if return_lse else None,
                            names=("q", "k_cache", "v_cache"))
    if lens is not None:
        args.cache_seqlens = _mem(lens)
    if table is not None:
        args.block_table = _mem(table)
    if kn is not None:
        args.k_new, args.v_new = _mem(kn), _mem(vn)
    keep = []
    _modifiers(call, desc, args, hq, softcap, alibi_slopes, sinks, keep)
    result = _finish(call, desc, args, o, lse)
    if numpy_caches is not None and kn is not None:
        numpy_caches[0][...] = kc.get()
        numpy_caches[1][...] = vc.get()
    return result
