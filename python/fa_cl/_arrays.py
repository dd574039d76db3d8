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

    def tensor(self, a, name, ndim):
        """A q/k/v-like tensor: ndim dimensions, every one positive (fa_cl_attention_desc takes no empty
        problem), a dtype fa_cl stores; on the device."""
        a = self.host(a, name)
        if len(a.shape) != ndim:
            raise ValueError("fa_cl: %s has shape %s; expected %d dimensions" % (name, tuple(a.shape), ndim))
        if any(n == 0 for n in a.shape):
            raise ValueError("fa_cl: %s has shape %s: fa_cl takes no empty dimension (include/fa_cl.h: all sizes "
                             "must be positive)" % (name, tuple(a.shape)))
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
