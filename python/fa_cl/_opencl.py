# SPDX-License-Identifier: Apache-2.0
"""The few OpenCL calls numpy arrays need, through ctypes on the OpenCL loader libfa_cl itself uses.

numpy in, numpy out needs no pyopencl: a call copies its inputs into buffers of the fa_cl context's
own OpenCL context (clCreateBuffer with CL_MEM_COPY_HOST_PTR), enqueues on its queue, reads the
results back with blocking reads (which, on the in-order queue, also wait for the kernels), and
releases the buffers. Four functions of OpenCL 1.2's stable C ABI do it; the library needs no host
copy API of its own for this.
"""
import ctypes
import ctypes.util

import numpy as np

from ._lib import STATUS, FaClError

_CL_MEM_READ_WRITE = 1 << 0
_CL_MEM_COPY_HOST_PTR = 1 << 5
_CL_DEVICE_NAME = 0x102B
_CL_ERRORS = {-4: "CL_MEM_OBJECT_ALLOCATION_FAILURE", -5: "CL_OUT_OF_RESOURCES", -6: "CL_OUT_OF_HOST_MEMORY",
              -14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST", -30: "CL_INVALID_VALUE",
              -34: "CL_INVALID_CONTEXT", -36: "CL_INVALID_COMMAND_QUEUE", -38: "CL_INVALID_MEM_OBJECT",
              -61: "CL_INVALID_BUFFER_SIZE"}
_cl = None


def _opencl():
    """libOpenCL with the signatures used here (loaded on first use; libfa_cl has loaded it already)."""
    global _cl
    if _cl is None:
        tried = []
        for name in ("libOpenCL.so.1", ctypes.util.find_library("OpenCL"), "libOpenCL.so"):
            if not name:
                continue
            try:
                cl = ctypes.CDLL(name)
                break
            except OSError as e:
                tried.append("%s (%s)" % (name, e))
        else:
            raise FaClError(STATUS["FA_CL_ERROR_OPENCL"], "the OpenCL loader was not found (tried: %s)" % ", ".join(tried))
        p, size, cl_int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32
        cl.clCreateBuffer.restype, cl.clCreateBuffer.argtypes = p, [p, ctypes.c_uint64, size, p, ctypes.POINTER(cl_int)]
        cl.clEnqueueReadBuffer.restype = cl_int
        cl.clEnqueueReadBuffer.argtypes = [p, p, ctypes.c_uint32, size, size, p, ctypes.c_uint32, p, p]
        cl.clReleaseMemObject.restype, cl.clReleaseMemObject.argtypes = cl_int, [p]
        cl.clGetDeviceInfo.restype = cl_int
        cl.clGetDeviceInfo.argtypes = [p, ctypes.c_uint32, size, p, ctypes.POINTER(size)]
        _cl = cl
    return _cl


def _fail(what, err):
    status = "FA_CL_ERROR_OUT_OF_MEMORY" if err in (-4, -6) else "FA_CL_ERROR_OPENCL"
    raise FaClError(STATUS[status], "%s failed: %s (%d)" % (what, _CL_ERRORS.get(err, "an OpenCL error"), err))


def device_name(device):
    """CL_DEVICE_NAME of a cl_device_id (an int address)."""
    cl = _opencl()
    n = ctypes.c_size_t()
    err = cl.clGetDeviceInfo(device, _CL_DEVICE_NAME, 0, None, ctypes.byref(n))
    if err:
        _fail("clGetDeviceInfo(CL_DEVICE_NAME)", err)
    buf = ctypes.create_string_buffer(n.value)
    err = cl.clGetDeviceInfo(device, _CL_DEVICE_NAME, n.value, buf, None)
    if err:
        _fail("clGetDeviceInfo(CL_DEVICE_NAME)", err)
    return buf.value.decode(errors="replace").strip()


class Buffer:
    """A cl_mem holding a C-ordered array (shape, dtype), or a strided view of one (transpose): what
    numpy calls hand the library in place of pyopencl arrays. Views share the memory of the buffer
    they come from, which alone releases it."""

    def __init__(self, mem, shape, dtype, strides, owner=None):
        self.mem, self.shape, self.dtype, self.strides = mem, tuple(shape), np.dtype(dtype), tuple(strides)
        self.offset = 0  # bytes, as pyopencl's
        self._owner = owner

    @classmethod
    def create(cls, cl_context, host=None, shape=None, dtype=None):
        """A new buffer: a copy of the numpy array host (made C-contiguous), or an uninitialised one
        of shape and dtype."""
        if host is not None:
            host = np.ascontiguousarray(host)
            shape, dtype = host.shape, host.dtype
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        err = ctypes.c_int32()
        flags = _CL_MEM_READ_WRITE | (_CL_MEM_COPY_HOST_PTR if host is not None else 0)
        mem = _opencl().clCreateBuffer(cl_context, flags, max(nbytes, 1),
                                       host.ctypes.data if host is not None else None, ctypes.byref(err))
        if err.value or not mem:
            _fail("clCreateBuffer of %d bytes" % nbytes, err.value)
        return cls(mem, shape, dtype, _c_strides(shape, dtype.itemsize))

    @property
    def c_contiguous(self):
        return self.strides == _c_strides(self.shape, self.dtype.itemsize)

    def transpose(self, axes):
        return Buffer(self.mem, [self.shape[a] for a in axes], self.dtype, [self.strides[a] for a in axes],
                      owner=self._owner or self)

    def read(self, queue):
        """The contents as a new numpy array (a blocking read: earlier work on the in-order queue finishes first)."""
        if not self.c_contiguous:
            raise ValueError("fa_cl: only whole buffers are read back")
        out = np.empty(self.shape, self.dtype)
        err = _opencl().clEnqueueReadBuffer(queue, self.mem, 1, 0, out.nbytes, out.ctypes.data, 0, None, None)
        if err:
            _fail("clEnqueueReadBuffer", err)
        return out

    def release(self):
        if self._owner is None and self.mem:
            _opencl().clReleaseMemObject(self.mem)
        self.mem = None


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))
