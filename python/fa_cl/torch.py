# SPDX-License-Identifier: Apache-2.0
"""fa_cl's attention as a PyTorch autograd function (needs torch; `import fa_cl` does not import it).

    import torch
    from fa_cl.torch import flash_attn_func
    q = torch.randn(2, 128, 8, 64, requires_grad=True)            # [B, S, H, D], CPU tensors
    o = flash_attn_func(q, q, q, causal=True)
    o.sum().backward()                                            # q.grad by fa_cl's backward

The forward calls fa_cl.flash_attn_func (return_lse=True) and the backward fa_cl.flash_attn_backward
with the forward's o and LSE (include/fa_cl.h "Backward"). Tensors go through numpy: CPU tensors
are copied into fa_cl's OpenCL buffers and the results copied back (no zero-copy route: a CUDA or
other device tensor is refused, move it to the CPU first). Dtypes: float32, float16, bfloat16
(stored as themselves), and float64, which fa_cl computes in float32 (inputs rounded to float32,
results returned in float64: for torch.autograd.gradcheck, with tolerances for float32 arithmetic).
Gradients: q, k, v, and the sinks (float32 [Hq]; fa_cl's dsink); the ALiBi slopes and the
attention mask get none (fa_cl computes none: they are treated as constants).
"""
import numpy as np
import torch

from . import _api

__all__ = ["FlashAttnFunction", "flash_attn_func"]


def _to_numpy(t, name, mask=False):
    """A CPU tensor as a numpy array fa_cl takes (a copy where its dtype needs one; mask: bool too)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("fa_cl.torch: %s must be a torch.Tensor, not %s" % (name, type(t).__name__))
    if t.device.type != "cpu":
        raise ValueError("fa_cl.torch: %s is on %s; fa_cl takes CPU tensors (through numpy)" % (name, t.device))
    t = t.detach().contiguous()
    if t.dtype == torch.float64:
        return t.to(torch.float32).numpy()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)  # fa_cl's bfloat16: uint16 of its bits
    if t.dtype in (torch.float32, torch.float16) or (mask and t.dtype == torch.bool):
        return t.numpy()
    raise TypeError("fa_cl.torch: %s has dtype %s; fa_cl takes float32, float16, bfloat16 (and float64, computed "
                    "in float32)" % (name, t.dtype))


def _to_torch(a, like):
    """fa_cl's result as a tensor of like's dtype."""
    if like == torch.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a)).to(like)


def _optional(t, name, mask=False):
    return None if t is None else _to_numpy(t, name, mask)


class FlashAttnFunction(torch.autograd.Function):
    """fa_cl.flash_attn_func with fa_cl's backward: q [B, Sq, Hq, D], k and v [B, Sk, Hkv, D]; see
    flash_attn_func below for the arguments."""

    @staticmethod
    def forward(ctx, q, k, v, softmax_scale, causal, window_size, softcap, alibi_slopes, sinks, attn_mask, context):
        same = {q.dtype, k.dtype, v.dtype}
        if len(same) != 1:
            raise TypeError("fa_cl.torch: q, k, v in one dtype (here %s)" % sorted(str(d) for d in same))
        qn, kn, vn = _to_numpy(q, "q"), _to_numpy(k, "k"), _to_numpy(v, "v")
        mods = dict(softcap=softcap, alibi_slopes=_optional(alibi_slopes, "alibi_slopes"),
                    sinks=_optional(sinks, "sinks"), attn_mask=_optional(attn_mask, "attn_mask", mask=True))
        out, lse = _api.flash_attn_func(qn, kn, vn, softmax_scale=softmax_scale, causal=causal,
                                        window_size=window_size, return_lse=True, context=context, **mods)
        ctx.fa = (qn, kn, vn, out, lse, softmax_scale, causal, window_size, mods, context, q.dtype,
                  None if sinks is None else sinks.dtype)
        return _to_torch(out, q.dtype)

    @staticmethod
    def backward(ctx, dout):
        qn, kn, vn, out, lse, scale, causal, window, mods, context, dtype, sink_dtype = ctx.fa
        grads = _api.flash_attn_backward(_to_numpy(dout, "dout"), qn, kn, vn, out, lse, softmax_scale=scale,
                                         causal=causal, window_size=window, context=context, **mods)
        dq, dk, dv = (_to_torch(g, dtype) for g in grads[:3])
        dsink = _to_torch(grads[3], sink_dtype) if sink_dtype is not None else None
        # q, k, v, softmax_scale, causal, window_size, softcap, alibi_slopes, sinks, attn_mask, context
        return dq, dk, dv, None, None, None, None, None, dsink, None, None


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                    sinks=None, attn_mask=None, context=None):
    """fa_cl.flash_attn_func on CPU tensors, differentiable (q, k, v and sinks): q [B, Sq, Hq, D], k and v
    [B, Sk, Hkv, D] (GQA/MQA: Hq a multiple of Hkv), out [B, Sq, Hq, D]; causal bottom-right aligned,
    window_size around the same diagonal, softmax_scale 1/sqrt(D) by default; softcap, alibi_slopes
    (float [Hq], no gradient), sinks (float [Hq], with its gradient), attn_mask (bool, True = attend,
    or float added to the scores; no gradient) as fa_cl.flash_attn_func takes them. The tensors are
    copied through numpy (module docstring)."""
    return FlashAttnFunction.apply(q, k, v, softmax_scale, causal, tuple(window_size), softcap, alibi_slopes, sinks,
                                   attn_mask, context)
