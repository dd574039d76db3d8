# SPDX-License-Identifier: Apache-2.0
"""Checks of the calls' scalar and integer arguments: each refusal names the argument, and nothing
is wrapped, truncated or rounded to a value other than the one given (ctypes would wrap 2**40 into
an int32 and truncate 5.9 into 5 silently)."""
import math
import numbers

import numpy as np

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def is_int(value):
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def integer(value, name, lo, hi):
    """value as a Python int in [lo, hi]: TypeError for a non-integer (bool and float included),
    ValueError out of range."""
    if not is_int(value):
        raise TypeError("fa_cl: %s must be an integer, not %s %r" % (name, type(value).__name__, value))
    value = int(value)
    if not lo <= value <= hi:
        raise ValueError("fa_cl: %s = %d is out of range [%d, %d]" % (name, value, lo, hi))
    return value


def flag(value, name):
    """A bool argument (bool, numpy bool, or the ints 0 and 1)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if is_int(value) and int(value) in (0, 1):
        return bool(value)
    raise TypeError("fa_cl: %s must be a bool, not %s %r" % (name, type(value).__name__, value))


def real(value, name, positive):
    """A finite real number that stays the same kind of value in float32 (the descriptor's type):
    > 0 (positive) or >= 0, TypeError for strings and the like, ValueError for NaN, Inf, negatives,
    or magnitudes float32 rounds to 0 or Inf."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise TypeError("fa_cl: %s must be a real number, not %s %r" % (name, type(value).__name__, value))
    v = float(value)
    f32 = float(np.float32(v)) if math.isfinite(v) and abs(v) < 3.5e38 else math.inf
    if not math.isfinite(v) or not math.isfinite(f32) or v < 0 or (positive and v == 0) or (v > 0 and f32 == 0):
        raise ValueError("fa_cl: %s = %r must be finite, %s, and representable in float32"
                         % (name, value, "> 0" if positive else ">= 0"))
    return v


def window(value, name="window_size"):
    """(left, right), each -1 (unbounded) or a key count >= 0."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise TypeError("fa_cl: %s must be a pair (left, right), not %r" % (name, value))
    return tuple(integer(v, "%s[%d]" % (name, i), -1, INT64_MAX) for i, v in enumerate(value))


def host_integers(a, name, lo, hi):
    """A host array of integers (numpy or a sequence) as int32, every entry in [lo, hi] (hi at most
    INT32_MAX): TypeError for floats, bools and other kinds, ValueError for an entry out of range."""
    arr = np.asarray(a)
    if arr.dtype == object:  # Python ints beyond int64: compare them as they are
        values = arr.ravel().tolist()
        bad = [v for v in values if not is_int(v)]
        if bad:
            raise TypeError("fa_cl: %s must hold integers, not %s %r" % (name, type(bad[0]).__name__, bad[0]))
        out = [v for v in values if not lo <= int(v) <= hi]
        if out:
            raise ValueError("fa_cl: %s holds %d, out of range [%d, %d]" % (name, int(out[0]), lo, hi))
        return np.array(values, np.int32).reshape(arr.shape)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError("fa_cl: %s must hold integers, not %s" % (name, arr.dtype))
    if arr.size:
        low, high = int(arr.min()), int(arr.max())
        if low < lo or high > hi:
            raise ValueError("fa_cl: %s holds %d, out of range [%d, %d]" % (name, low if low < lo else high, lo, hi))
    return arr.astype(np.int32)
