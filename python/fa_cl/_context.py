# SPDX-License-Identifier: Apache-2.0
"""Context: one device and queue, and the one plan cache of every call made through it."""
import collections
import ctypes
import sys
import threading

from . import _lib, _opencl
from ._lib import check, lib

PLAN_CACHE_SIZE = 64


class Context:
    """One device and queue, and the plans made on it: one bounded cache for the forward and the
    backward alike, keyed by the whole descriptor (shapes, views, masks, modifiers).

    Context() takes the default device (FA_CL_DEVICE, else the first GPU, else any device, as the C
    library chooses); Context(queue) wraps a pyopencl CommandQueue, whose arrays the calls then take
    without copies. Calls are enqueued on the queue and return without waiting, as pyopencl's own
    (numpy results are read back, which waits).

    The plan cache keeps the max_plans (default 64, as the C library's one-shot cache) most recently
    used plans and releases the least recently used one beyond that, so a loop over ever new shapes
    (a decode loop whose key length grows) holds at most max_plans plans.
    """

    def __init__(self, queue=None, max_plans=PLAN_CACHE_SIZE):
        if isinstance(max_plans, bool) or not isinstance(max_plans, int) or max_plans < 1:
            raise ValueError("fa_cl: Context(max_plans=%r): a positive int" % (max_plans,))
        self._ptr = ctypes.c_void_p()
        self._plans = collections.OrderedDict()
        self._max_plans = max_plans
        self._lock = threading.Lock()
        self._queue = None
        if queue is None:
            check(lib.fa_cl_context_create_default(ctypes.byref(self._ptr)))
        else:
            try:
                handles = queue.context.int_ptr, queue.device.int_ptr, queue.int_ptr
            except AttributeError:
                raise TypeError("fa_cl: Context(queue): queue is a pyopencl CommandQueue (or None for the default "
                                "device), not %s" % type(queue).__name__) from None
            check(lib.fa_cl_context_create(*handles, ctypes.byref(self._ptr)))
            self._queue = queue
        self.cl_context = lib.fa_cl_context_cl_context(self._ptr)
        self.cl_queue = lib.fa_cl_context_queue(self._ptr)

    @property
    def queue(self):
        """The queue as a pyopencl CommandQueue (needs pyopencl; numpy calls do not)."""
        if self._queue is None:
            try:
                import pyopencl as cl
            except ImportError as e:
                raise ImportError("fa_cl: Context.queue is a pyopencl CommandQueue: install pyopencl "
                                  "(pip install fa_cl[pyopencl]); numpy calls need none") from e
            self._queue = cl.CommandQueue.from_int_ptr(self.cl_queue, retain=True)
        return self._queue

    @property
    def device(self):
        """The device as a pyopencl Device (needs pyopencl; device_name does not)."""
        return self.queue.device

    @property
    def device_name(self):
        """The device's name (CL_DEVICE_NAME)."""
        return _opencl.device_name(lib.fa_cl_context_device(self._ptr))

    @property
    def max_plans(self):
        return self._max_plans

    def plan_count(self):
        """Plans this context holds now, forward and backward (at most max_plans)."""
        with self._lock:
            return len(self._plans)

    def plan_info(self, desc, backward=False):
        """What the plan for desc chose (a dict of fa_cl_plan_info's fields)."""
        info = _lib.PlanInfo()
        get = lib.fa_cl_backward_plan_get_info_sized if backward else lib.fa_cl_plan_get_info_sized
        with self._lock:
            check(get(self._plan(desc, backward), ctypes.byref(info), ctypes.sizeof(info)))
        out = {}
        for name, _ in info._fields_:
            v = getattr(info, name)
            out[name] = v.decode() if isinstance(v, bytes) else v
        return out

    def _plan(self, desc, backward):
        """The plan for desc, most recently used now (under self._lock)."""
        key = (backward, bytes(desc))
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
            return plan
        plan = ctypes.c_void_p()
        create = lib.fa_cl_backward_plan_create if backward else lib.fa_cl_plan_create
        check(create(self._ptr, ctypes.byref(desc), ctypes.byref(plan)), self._ptr)
        self._plans[key] = plan
        while len(self._plans) > self._max_plans:
            (old_backward, _), old = self._plans.popitem(last=False)
            _release(old, old_backward)
        return plan

    def run(self, desc, args):
        """The forward for desc with args (fa_cl_forward_args), through the plan cache."""
        args.struct_size = ctypes.sizeof(args)
        with self._lock:  # an evicted plan is released only when no call is using it
            check(lib.fa_cl_plan_run(self._plan(desc, False), ctypes.byref(args)), self._ptr)

    def run_backward(self, desc, args):
        """The backward for desc with args (fa_cl_backward_args), through the same plan cache."""
        args.struct_size = ctypes.sizeof(args)
        with self._lock:
            check(lib.fa_cl_backward_plan_run(self._plan(desc, True), ctypes.byref(args)), self._ptr)

    def merge(self, args):
        """fa_cl_merge with args (fa_cl_merge_args): no plan, the combine kernel from the library's caches."""
        args.struct_size = ctypes.sizeof(args)
        with self._lock:
            check(lib.fa_cl_merge(self._ptr, ctypes.byref(args)), self._ptr)

    def close(self):
        """Release the plans and the context (work already enqueued completes)."""
        with self._lock:
            if self._ptr:
                for (backward, _), plan in self._plans.items():
                    _release(plan, backward)
                self._plans.clear()
                lib.fa_cl_context_release(self._ptr)
                self._ptr = ctypes.c_void_p()

    def __del__(self):
        if sys is not None and not sys.is_finalizing():
            try:
                self.close()
            except Exception:
                pass


def _release(plan, backward):
    (lib.fa_cl_backward_plan_release if backward else lib.fa_cl_plan_release)(plan)


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


def context_for(queue):
    """The Context of pyopencl arrays on queue: the default one if it is that context's queue."""
    with _contexts_lock:
        if _default is not None and queue.int_ptr == _default.cl_queue:
            return _default
        ctx = _contexts.get(queue.int_ptr)
        if ctx is None:
            ctx = _contexts[queue.int_ptr] = Context(queue)
        return ctx
