# SPDX-License-Identifier: Apache-2.0
"""The arrays of one call: all pyopencl (taken as they are, results on their queue) or all numpy
(copied into buffers of the context's OpenCL context through ctypes, results read back). pyopencl
is never imported here: an array is a pyopencl array only if the caller has imported pyopencl.array."""
import sys

import numpy as np

from . import _lib, _opencl
from ._context import Context, context_for, default_context


def _pyopencl_array():
    return sys.modules.get("pyopencl.array")


def is_device_array(a):
    cla = _pyopencl_array()
    return cla is not None and isinstance(a, cla.Array)


def _bf16_dtypes():
    """bfloat16 as numpy arrays spell it: uint16 bits, or ml_dtypes.bfloat16 where the caller uses it."""
    ml = sys.modules.get("ml_dtypes")
    return (np.dtype(np.uint16),) + ((np.dtype(ml.bfloat16),) if ml is not None else ())


def fa_dtype(dt, name):
    """The fa_cl_dtype of an array's dtype; TypeError naming the array otherwise."""
    dt = np.dtype(dt)
    if dt == np.float32:
        return _lib.DTYPE["FA_CL_F32"]
    if dt == np.float16:
        return _lib.DTYPE["FA_CL_F16"]
    if dt in _bf16_dtypes():
        return _lib.DTYPE["FA_CL_BF16"]
    raise TypeError("fa_cl: %s has dtype %s; fa_cl takes float32, float16 and bfloat16 (uint16 bits or "
                    "ml_dtypes.bfloat16)" % (name, dt))


# fp8 K/V (include/fa_cl.h "fp8 K/V"): the fa_cl_storage names of e4m3 and e5m2, as PyTorch's,
# ml_dtypes' and a caller's kv_dtype spell them
_FP8_NAMES = {"e4m3": "FA_CL_STORAGE_E4M3", "float8_e4m3fn": "FA_CL_STORAGE_E4M3",
              "e5m2": "FA_CL_STORAGE_E5M2", "float8_e5m2": "FA_CL_STORAGE_E5M2"}


def fp8_host(a):
    """A PyTorch float8_e4m3fn / float8_e5m2 tensor as its uint8 codes in numpy (numpy has no fp8)
    and the format's name; anything else as it is, with None."""
    name = str(getattr(a, "dtype", "")).replace("torch.", "")
    if type(a).__module__.startswith("torch") and name in ("float8_e4m3fn", "float8_e5m2"):
        import torch  # only when the caller passed a torch tensor
        return a.detach().view(torch.uint8).cpu().numpy(), name
    return a, None


def kv_storage(dt, name, kv_dtype, dtype):
    """The fa_cl_storage of a K or V array (0: the descriptor's dtype): an ml_dtypes float8_e4m3fn /
    float8_e5m2 array, uint8 codes with kv_dtype ("e4m3" / "e5m2", or PyTorch's names), or a
    float dtype fa_cl stores."""
    dt = np.dtype(dt)
    fp8 = dt.name if dt.name in ("float8_e4m3fn", "float8_e5m2") else None
    if dt == np.uint8 and kv_dtype is not None:
        fp8 = kv_dtype
    elif fp8 is None and kv_dtype is not None:
        raise TypeError("fa_cl: kv_dtype=%r takes %s as uint8 codes, not %s" % (kv_dtype, name, dt))
    if fp8 is not None:
        if fp8 not in _FP8_NAMES:
            raise ValueError("fa_cl: kv_dtype %r is not an fp8 format: e4m3 (float8_e4m3fn) or e5m2 (float8_e5m2)"
                             % (fp8,))
        return _lib.STORAGE[_FP8_NAMES[fp8]]
    if dt == np.uint8:
        raise TypeError("fa_cl: %s is uint8: fp8 codes need kv_dtype='e4m3' or 'e5m2'" % name)
    t = fa_dtype(dt, name)
    return t + 1 if t != dtype else 0  # fa_cl_storage is the dtype's value + 1


def is_fp8_storage(storage):
    return storage in (_lib.STORAGE["FA_CL_STORAGE_E4M3"], _lib.STORAGE["FA_CL_STORAGE_E5M2"])


def is_bf16(dt):
    return np.dtype(dt) in _bf16_dtypes()


def mem(a):
    """The cl_mem address of a call's device array."""
    return a.mem if isinstance(a, _opencl.Buffer) else a.base_data.int_ptr


def c_contiguous(a):
    return a.c_contiguous if isinstance(a, _opencl.Buffer) else a.flags.c_contiguous


class Call:
    """Use as `with Call(arrays, context) as call:`; the buffers it made are released at the end
    (OpenCL keeps them alive until the work enqueued on them completes)."""

    def __init__(self, arrays, context):
        if context is not None and not isinstance(context, Context):
            raise TypeError("fa_cl: context must be a fa_cl.Context or None, not %s" % type(context).__name__)
        present = [a for a in arrays if a is not None]
        dev = [is_device_array(a) for a in present]
        if any(dev) and not all(dev):
            raise TypeError("fa_cl: pass all arrays as pyopencl arrays or all as numpy arrays, not a mix")
        self.on_device = bool(dev) and all(dev)
        self._buffers = []
        if self.on_device:
            self.queue = present[0].queue
            for a in present:
                if a.queue is None or a.queue.context != self.queue.context:
                    raise ValueError("fa_cl: every pyopencl array must belong to one OpenCL context with a queue")
            self.ctx = context or context_for(self.queue)
        else:
            self.ctx = context or default_context()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for b in self._buffers:
            b.release()
        self._buffers.clear()

    def host(self, a, name):
        """a as the call will look at it: a pyopencl array as it is, anything else as numpy."""
        if a is None:
            raise TypeError("fa_cl: %s is required (an array), not None" % name)
        return a if self.on_device else np.asarray(a)

    def tensor(self, a, name, ndim, fp8=False):
        """A q/k/v-like tensor: ndim dimensions, every one positive (fa_cl_attention_desc takes no empty
        problem), a dtype fa_cl stores (fp8: also K/V codes, checked by kv_storage); on the device."""
        a = self.host(a, name)
        if len(a.shape) != ndim:
            raise ValueError("fa_cl: %s has shape %s; expected %d dimensions" % (name, tuple(a.shape), ndim))
        if any(n == 0 for n in a.shape):
            raise ValueError("fa_cl: %s has shape %s: fa_cl takes no empty dimension (include/fa_cl.h: all sizes "
                             "must be positive)" % (name, tuple(a.shape)))
        if not (fp8 and (np.dtype(a.dtype) == np.uint8 or np.dtype(a.dtype).name.startswith("float8"))):
            fa_dtype(a.dtype, name)
        return self.device(a)

    def device(self, a):
        """A host array copied into a new buffer (the call releases it); a pyopencl array as it is."""
        if is_device_array(a):
            return a
        if self.on_device:  # small host arrays of a pyopencl call (a length given as one int)
            return _pyopencl_array().to_device(self.queue, np.ascontiguousarray(a))
        b = _opencl.Buffer.create(self.ctx.cl_context, host=np.asarray(a))
        self._buffers.append(b)
        return b

    def empty(self, shape, dtype, zero=False):
        """A new output array of the call's kind."""
        if self.on_device:
            cla = _pyopencl_array()
            return (cla.zeros if zero else cla.empty)(self.queue, shape, dtype)
        b = _opencl.Buffer.create(self.ctx.cl_context, host=np.zeros(shape, dtype) if zero else None, shape=shape,
                                  dtype=dtype)
        self._buffers.append(b)
        return b

    def result(self, a):
        return a if self.on_device else a.read(self.ctx.cl_queue)
