# SPDX-License-Identifier: Apache-2.0
"""The package as a dependency: what `import fa_cl` loads, numpy without pyopencl, the one bounded
plan cache (issue 46)."""
import subprocess
import sys

import numpy as np
import pytest

import fa_cl
from conftest import NO_PYOPENCL
from oracle import assert_close, make, oracle


def test_import_loads_neither_pyopencl_nor_matplotlib():
    """`import fa_cl` and a numpy call import no optional package (pyopencl, matplotlib, fa_cl.plot)."""
    code = ("import sys, numpy as np, fa_cl; q = np.ones((1, 4, 1, 8), np.float32); fa_cl.flash_attn_func(q, q, q); "
            "print(sorted(m for m in ('pyopencl', 'matplotlib', 'fa_cl.plot', 'ml_dtypes') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_numpy_only_environment():
    """In tests/python_package.sh's numpy-only environment pyopencl is really absent, and every numpy
    call works there (this file's and test_fa_cl.py's oracle tests run in it too)."""
    if not NO_PYOPENCL:
        pytest.skip("runs in the numpy-only environment (FA_CL_TEST_NO_PYOPENCL=1)")
    with pytest.raises(ImportError):
        import pyopencl  # noqa: F401
    ctx = fa_cl.default_context()
    assert ctx.device_name
    with pytest.raises(ImportError, match="pyopencl"):
        ctx.queue


def test_decode_loop_plans_stay_bounded():
    """A decode loop through flash_attn_func whose key length grows: 101 lengths, at most
    max_plans (64) plans held; results right before and after evictions."""
    rng = np.random.default_rng(5)
    ctx = fa_cl.Context()
    assert ctx.max_plans == fa_cl.PLAN_CACHE_SIZE == 64
    q = make((1, 1, 4, 16), "f32", rng)
    keys = make((1, 101, 2, 16), "f32", rng)
    for n in range(1, 102):
        o = fa_cl.flash_attn_func(q, keys[:, :n], keys[:, :n], context=ctx)
        assert ctx.plan_count() == min(n, 64)
        if n in (1, 64, 101):
            kn = keys[:, :n].astype(np.float64)
            assert_close(o.astype(np.float64), oracle(q.astype(np.float64), kn, kn)[0], "f32", "decode at %d keys" % n)
    ctx.close()


def test_one_cache_for_forward_and_backward():
    """The backward's plans live in the same least-recently-used cache as the forward's."""
    rng = np.random.default_rng(6)
    ctx = fa_cl.Context(max_plans=2)
    q = make((1, 8, 2, 16), "f32", rng)
    o, lse = fa_cl.flash_attn_func(q, q, q, return_lse=True, context=ctx)
    grads = fa_cl.flash_attn_backward(q, q, q, q, o, lse, context=ctx)
    assert ctx.plan_count() == 2
    fa_cl.flash_attn_func(q, q, q, context=ctx)  # the forward's plan: used again, now the most recent
    fa_cl.flash_attn_func(q, q, q, causal=True, context=ctx)  # a third plan: the backward's goes
    assert ctx.plan_count() == 2
    again = fa_cl.flash_attn_backward(q, q, q, q, o, lse, context=ctx)  # planned again, the same bits
    assert all(np.array_equal(a, b) for a, b in zip(grads, again))
    assert ctx.plan_count() == 2
    ctx.close()


def test_plan_info():
    ctx = fa_cl.Context()
    q = np.zeros((1, 8, 2, 16), np.float32)
    fa_cl.flash_attn_func(q, q, q, context=ctx)
    desc = fa_cl._api._desc(1, 2, 2, 8, 8, 16, 0, None, False, (-1, -1))
    info = ctx.plan_info(desc)
    assert isinstance(info["kernel"], str) and info["kernel"] and info["block_q"] > 0
    ctx.close()


def test_threads_share_a_context_with_evictions():
    """4 threads x 12 numpy calls of 6 shapes on one context holding 2 plans: evictions between calls
    of other threads never release a plan in use; every result right."""
    import threading

    rng = np.random.default_rng(7)
    ctx = fa_cl.Context(max_plans=2)
    q = make((1, 3, 2, 16), "f32", rng)
    keys = make((1, 6, 2, 16), "f32", rng)
    refs = [oracle(q.astype(np.float64), keys[:, :n].astype(np.float64), keys[:, :n].astype(np.float64))[0]
            for n in range(1, 7)]
    errors = []

    def work(t):
        try:
            for i in range(12):
                n = (t + i) % 6 + 1
                o = fa_cl.flash_attn_func(q, keys[:, :n], keys[:, :n], context=ctx)
                assert_close(o.astype(np.float64), refs[n - 1], "f32", "thread %d, %d keys" % (t, n))
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    assert ctx.plan_count() == 2
    ctx.close()
