# SPDX-License-Identifier: Apache-2.0
# The README's Python example: FlashAttention's call on the default device, numpy in and out.
import numpy as np

import fa_cl

rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((2, 256, 8, 64)).astype(np.float16) for _ in range(3))  # [B, S, H, D]
o, lse = fa_cl.flash_attn_func(q, k, v, causal=True, return_lse=True)

# one head against numpy in float64
s = q[0, :, 0].astype(np.float64) @ k[0, :, 0].astype(np.float64).T / np.sqrt(64)
s[np.triu_indices(256, 1)] = -np.inf
p = np.exp(s - s.max(axis=1, keepdims=True))
ref = (p / p.sum(axis=1, keepdims=True)) @ v[0, :, 0].astype(np.float64)
err = np.abs(o[0, :, 0] - ref).max()
print(f"{fa_cl.default_context().device_name}: o {o.shape} {o.dtype}, lse {lse.shape}, max error {err:.1e}")
assert err < 1e-2
