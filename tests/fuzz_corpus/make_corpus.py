#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz_desc.c into this directory (run it after changing the
input format there). Each seed is one descriptor (and, for accepted small ones, one buffer setup)
encoded the way LLVMFuzzerTestOneInput decodes it."""
import os, struct

I32 = 2**31 - 1
I64 = 2**63 - 1

def pick(v):
    if v == 0: return b'\x00'
    if v == 1: return b'\x01'
    if v == -1: return b'\x02'
    if 1 <= v <= 24: return bytes([3, v - 1])
    if 1 <= v <= 256: return bytes([6, v - 1])
    if v == I32: return b'\x07'
    if v == I32 + 1: return b'\x08'
    if v == I64: return bytes([10, 0])
    if v == -2**63: return bytes([11])
    if v > 0 and v & (v - 1) == 0 and v < 2**63: return bytes([12, v.bit_length() - 1])
    if -257 <= v <= -2: return bytes([13, -2 - v])
    return bytes([15]) + struct.pack('<q', v)

def seed(B, Hq, Hkv, Sq, Sk, D, dtype=0, scale=0, causal=0, wl=-1, wr=-1, strides=None, offsets=(0, 0, 0, 0),
         msg=1, device=None):
    s = b''.join(pick(x) for x in (B, Hq, Hkv, Sq, Sk, D))
    # scale: a selector byte of pick_scale (0: default, 6: 1e30, ...), or a float given as raw bits
    scale_bytes = bytes([scale]) if isinstance(scale, int) else bytes([7]) + struct.pack('<f', scale) + bytes(4)
    s += bytes([dtype + 1]) + scale_bytes + bytes([causal, 0]) + pick(wl) + pick(wr)
    for t in range(4):
        if strides and strides[t]:
            s += b'\x01' + b''.join(pick(x) for x in strides[t])
        else:
            s += b'\x00'
    for o in offsets:
        s += b'\x00' if o == 0 else (bytes([1, o]) if o < 64 else b'\x02' + pick(o))
    s += bytes([msg])
    if device is not None:  # (mode, lse, oneshot, deltas[5] as selector bytes, extra bytes)
        mode, lse, oneshot, deltas, extra = device
        s += bytes([mode, lse, oneshot]) + bytes(deltas) + bytes(extra)
    return s

EXACT = [3, 3, 3, 3, 3]
seeds = {
    # huge scales (uniform inputs: every output 0.25): 2^(fma(s, c, -m c)) once gave 2^(+-2^76)
    'scale_1e30_f32': seed(1, 1, 1, 4, 4, 8, scale=6, device=(0, 1, 0, EXACT, [])),
    'scale_1e30_bf16_causal': seed(1, 1, 1, 4, 4, 12, dtype=2, scale=6, causal=1, device=(0, 0, 0, EXACT, [])),
    'scale_3e38_f16': seed(1, 2, 1, 5, 9, 16, dtype=1, scale=3.0e38, device=(0, 1, 1, EXACT, [])),
    'scale_1e-44_f32_causal': seed(1, 1, 1, 6, 6, 4, scale=1e-44, causal=1, device=(0, 1, 0, EXACT, [])),
    'valid_f32_causal_gqa': seed(1, 2, 1, 13, 21, 8, causal=1, device=(0, 1, 0, EXACT, [])),
    'valid_f16_window_bshd_offsets': seed(2, 2, 2, 9, 19, 5, dtype=1, wl=3, wr=2,
                                          strides=[(2 * 9 * 5, 5, 10), (2 * 19 * 5, 5, 10), None, (2 * 9 * 5, 5, 10)],
                                          offsets=(3, 1, 0, 7), device=(0, 1, 1, EXACT, [])),
    'valid_bf16_oneshot': seed(1, 4, 2, 17, 9, 12, dtype=2, causal=1, device=(0, 0, 1, EXACT, [])),
    'o_in_q_buffer_disjoint': seed(1, 1, 1, 8, 8, 4, offsets=(0, 0, 0, 32), device=(1, 0, 0, EXACT, [])),
    'o_in_q_buffer_overlapping': seed(1, 1, 1, 8, 8, 4, offsets=(0, 0, 0, 16), device=(1, 0, 0, EXACT, [])),
    'o_subbuffer_of_k_overlapping': seed(1, 1, 1, 8, 64, 4, device=(2, 0, 0, EXACT, [0])),
    'o_subbuffer_of_k_after': seed(1, 1, 1, 8, 8, 4, device=(2, 0, 0, EXACT, [2])),
    'v_from_another_context': seed(1, 1, 1, 4, 4, 4, device=(3, 0, 0, EXACT, [])),
    'q_write_only': seed(1, 1, 1, 4, 4, 4, device=(4, 0, 1, EXACT, [])),
    'o_read_only': seed(1, 1, 1, 4, 4, 4, device=(5, 0, 0, EXACT, [])),
    'k_one_element_short': seed(1, 2, 2, 5, 7, 3, device=(0, 1, 0, [3, 0, 3, 3, 3], [])),
    'lse_tiny': seed(1, 2, 2, 5, 7, 3, device=(0, 1, 0, [3, 3, 3, 3, 1], [])),
    'o_tiny': seed(1, 2, 2, 5, 7, 3, device=(0, 1, 1, [3, 3, 3, 1, 3], [])),
    'broadcast_kv_stride0': seed(3, 2, 1, 6, 6, 4, strides=[None, (0, 0, 4), (0, 0, 4), None],
                                 device=(0, 1, 0, EXACT, [])),
    'overflow_batch_strides': seed(2**62, 4, 4, 33, 47, 64, strides=[(2**20, 2**12, 64), None, None, None]),
    'overflow_contiguous_products': seed(1, 2**40, 1, 2**20, 2**20, 64),
    'overflow_offset': seed(1, 1, 1, 1, 1, 1, offsets=(0, 2**62, 0, 0)),
    'overflow_offset_i64max': seed(1, 1, 1, 1, 1, 1, offsets=(I64, 0, 0, 0)),
    'overflow_stride_i64max': seed(2, 1, 1, 1, 1, 1, strides=[None, None, (I64, 1, 1), None]),
    'heads_q_over_int32': seed(1, I32 + 1, 1, 1, 1, 1),
    'heads_q_int32_max': seed(1, I32, 1, 1, 1, 1),
    'seqlen_int32_max': seed(1, 1, 1, I32, 1, 1),
    'head_dim_512': seed(1, 1, 1, 1, 1, 512),  # the backward's largest: accepted
    'head_dim_513': seed(1, 1, 1, 1, 1, 513),  # past the backward's, the forward takes it
    'head_dim_576': seed(1, 1, 1, 1, 1, 576),  # the forward's largest (MLA): accepted
    'head_dim_577': seed(1, 1, 1, 1, 1, 577),  # one past it: UNSUPPORTED
    'negative_sizes': seed(-1, -2, 0, -1, 0, -3),
    'int64_min': seed(-2**63, 1, 1, 1, 1, 1),
    'bad_dtype_nan_scale': seed(1, 1, 1, 1, 1, 1, dtype=3, scale=4),
    'heads_not_divisible': seed(1, 6, 4, 8, 8, 8),
    'window_minus_two': seed(1, 1, 1, 8, 8, 8, wl=-2),
    'o_rows_overlap': seed(1, 2, 2, 8, 8, 8, strides=[None, None, None, (0, 0, 4)]),
    'msg_size_zero': seed(0, 1, 1, 1, 1, 1, msg=0),
    'msg_size_one': seed(0, 1, 1, 1, 1, 1, msg=4),
    'msg_size_three': seed(0, 1, 1, 1, 1, 1, msg=12),
}
here = os.path.dirname(os.path.abspath(__file__))
for name, data in seeds.items():
    with open(os.path.join(here, name), 'wb') as f:
        f.write(data)
print(len(seeds), 'seeds written')
