# SPDX-License-Identifier: Apache-2.0
"""fa_cl from Python: FlashAttention on any OpenCL device, called as flash_attn_func and PyTorch's SDPA.

    import numpy as np, fa_cl
    q = np.random.randn(1, 512, 8, 64).astype(np.float16)   # [B, S, H, D]
    o = fa_cl.flash_attn_func(q, q, q, causal=True)          # numpy in: copied to the device and back

pyopencl arrays are taken as they are (no copies; the result is a pyopencl array on the same queue,
enqueued, not waited for). Dtypes: float32, float16, and bfloat16 as uint16 arrays of its bits (or
ml_dtypes.bfloat16 where installed). Errors the library reports raise FaClError (its status and
message); shapes and dtypes that disagree raise ValueError / TypeError before any call.
"""
from ._api import (Context, FaClError, default_context, flash_attn_backward, flash_attn_func, flash_attn_varlen_func,
                   flash_attn_with_kvcache, scaled_dot_product_attention)
from ._lib import HEADER_VERSION, LIBRARY_VERSION

__version__ = HEADER_VERSION
__all__ = ["Context", "FaClError", "default_context", "flash_attn_backward", "flash_attn_func", "flash_attn_varlen_func",
           "flash_attn_with_kvcache", "scaled_dot_product_attention", "LIBRARY_VERSION"]
