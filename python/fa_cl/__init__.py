# SPDX-License-Identifier: Apache-2.0
"""fa_cl from Python: FlashAttention on any OpenCL device, called as flash_attn_func and PyTorch's SDPA.

    import numpy as np, fa_cl
    q = np.random.randn(1, 512, 8, 64).astype(np.float16)   # [B, S, H, D]
    o = fa_cl.flash_attn_func(q, q, q, causal=True)          # numpy in: copied to the device and back

numpy arrays need nothing but numpy: they are copied into buffers of the library's own OpenCL
context (through ctypes) and the results read back. pyopencl arrays, where the caller uses pyopencl,
are taken as they are (no copies; the result is a pyopencl array on the same queue, enqueued, not
waited for); `import fa_cl` imports neither pyopencl nor matplotlib (`python -m fa_cl.plot` needs
the `plot` extra). Dtypes: float32, float16, and bfloat16 as uint16 arrays of its bits (or
ml_dtypes.bfloat16). Each Context keeps one bounded plan cache (Context.max_plans, default 64,
least recently used dropped) for the forward and the backward. Errors the library reports raise
FaClError (its status and message); shapes, dtypes and values that disagree raise ValueError /
TypeError naming the argument before any call.
"""
from ._api import (flash_attn_backward, flash_attn_func, flash_attn_partial, flash_attn_varlen_func,
                   flash_attn_with_kvcache, merge_attentions, scaled_dot_product_attention)
from ._context import PLAN_CACHE_SIZE, Context, default_context
from ._lib import HEADER_VERSION, LIBRARY_VERSION, FaClError

__version__ = HEADER_VERSION
__all__ = ["Context", "FaClError", "default_context", "flash_attn_backward", "flash_attn_func", "flash_attn_partial",
           "flash_attn_varlen_func", "flash_attn_with_kvcache", "merge_attentions", "scaled_dot_product_attention",
           "LIBRARY_VERSION", "PLAN_CACHE_SIZE"]
