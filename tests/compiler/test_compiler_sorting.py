"""Native ``sort``, ``top_k`` and cumulative reductions of the CPU compiler
(``backends/cpu/compiler/kernels/sorting.py``): they run inside the native segment (and inside
native loops) instead of as NumPy steps, with results equal to the NumPy tier bit for bit
and to real JAX (exactly for sorts, integers and extrema; to rounding for float sums,
products and logsumexps, whose order XLA chooses differently)."""
from __future__ import annotations

import contextlib
import os
import subprocess

import ml_dtypes
import numpy as np
import pytest

import pyjax
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

import sanitizers

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("ignore:(overflow|invalid value|divide by zero):RuntimeWarning"),
]

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I32, I64, U8, BOOL = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint8), np.dtype(np.bool_)
_MORE_INTS = [pytest.param(np.dtype(t), marks=pytest.mark.slow)
              for t in (np.int8, np.int16, np.uint16, np.uint32, np.uint64)]
SORT_DTYPES = [F32, F64, F16, BF16, I32, U8, BOOL, I64] + _MORE_INTS
CUM_DTYPES = [F32, F64, F16, BF16, I32, U8, I64] + _MORE_INTS
_INT_OF = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _jax():
  try:
    import jax  # noqa: PLC0415
  except ImportError:
    return None
  return jax


@contextlib.contextmanager
def x64(on):
  jax = _jax()
  prev = pyjax.config.jax_enable_x64
  jprev = jax.config.jax_enable_x64 if jax else None
  pyjax.config.update("jax_enable_x64", on)
  if jax:
    jax.config.update("jax_enable_x64", on)
  try:
    yield
  finally:
    pyjax.config.update("jax_enable_x64", prev)
    if jax:
      jax.config.update("jax_enable_x64", jprev)


def leaves(x):
  return [np.asarray(v) for v in pyjax.tree_util.tree_leaves(x)]


def native(f, *args, marker=None, whole_loops=None, module="kernels/sorting.py"):
  """Leaves of ``jit(f)(*args)`` on the native tier; asserts that nothing fell back to a
  NumPy step and that the generated C contains ``marker`` (a kernel of ``module``)."""
  with executable.compile_mode_override("sync"):
    jf = pyjax.jit(lambda *a: f(*a))
    compiled = jf.lower(*args).compile()
    exe = compiled.runtime_executable()
    assert exe.error is None, exe.error
    assert exe.tier == "native"
    assert not exe.native.host_steps, [s.node.prim for s in exe.native.host_steps]
    if marker is not None:
      text = compiled.as_text()
      for m in ([marker] if isinstance(marker, str) else marker):
        assert f"pyjax native {m} ({module})" in text, m
    if whole_loops is not None:
      assert exe.native.whole is not None
      assert exe.native.native_loops == whole_loops
    return leaves(jf(*args))


def jax_ref(f, *args):
  """Leaves of real JAX's ``jit(f)(*args)``."""
  jax = _jax()
  return [np.asarray(v) for v in jax.tree_util.tree_leaves(jax.jit(f)(*args))]


def numpy_tier(f, *args):
  with executable.compile_mode_override("off"):
    return leaves(pyjax.jit(lambda *a: f(*a))(*args))


def bits(a):
  a = np.ascontiguousarray(a)
  return a.view(_INT_OF[a.dtype.itemsize]) if a.dtype.kind in "fV" or a.dtype == BF16 else a


def assert_bits(got, want, nan_payload=True):
  """Equal dtypes, shapes and bits (NaN payloads compared too unless ``nan_payload`` is
  False: then any NaN equals any NaN, but -0.0 still differs from 0.0)."""
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    if not nan_payload and (g.dtype.kind == "f" or g.dtype == BF16):
      gn, wn = np.isnan(g.astype(np.float32)), np.isnan(w.astype(np.float32))
      np.testing.assert_array_equal(gn, wn)
      g, w = np.where(gn, 0, g).astype(g.dtype), np.where(wn, 0, w).astype(w.dtype)
    np.testing.assert_array_equal(bits(g), bits(w))


def special_data(rng, shape, dtype):
  """Values with many ties, NaN (both signs), +-0.0 and +-inf for floats."""
  d = np.dtype(dtype)
  size = int(np.prod(shape))
  if d == BOOL:
    return rng.integers(0, 2, shape).astype(bool)
  if d.kind in "iu":
    info = np.iinfo(d)
    pool = np.array([info.min, info.max, 0, 1, 2, 3, info.max // 2], dtype=d)
    vals = np.where(rng.random(size) < 0.3, rng.choice(pool, size),
                    rng.integers(max(info.min, -50), min(info.max, 50), size).astype(d))
    return vals.astype(d).reshape(shape)
  pool = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5], np.float32)
  vals = np.where(rng.random(size) < 0.4, rng.choice(pool, size),
                  np.round(rng.standard_normal(size) * 4, 1).astype(np.float32))
  x = vals.astype(d).reshape(shape)
  return x


SHAPES = [(0,), (1,), (7,), (40,), (3, 0, 2), (2, 1, 5), (3, 33), (19, 4), (2, 3, 70)]


def _x64_for(*dts):
  return any(np.dtype(d).itemsize == 8 for d in dts)


# --- sort -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", SORT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_sort_single_operand_every_axis(dt):
  rng = np.random.default_rng(1)
  with x64(_x64_for(dt)):
    xs = [special_data(rng, shape, dt) for shape in SHAPES]

    def make(lax):
      def f(*xs):   # one program (one build) sorting every shape along every axis
        return [lax.sort(x, dimension=a) for x in xs for a in range(x.ndim)]
      return f
    got = native(make(lax), *xs, marker="sort")
    assert_bits(got, numpy_tier(make(lax), *xs))
    jax = _jax()
    if jax is not None:
      assert_bits(got, jax_ref(make(jax.lax), *xs))


@pytest.mark.parametrize("kd,vd", [(F32, I32), (BF16, F32), (I32, F16), (BOOL, U8), (F64, F32),
                                   (I64, BOOL),
                                   pytest.param(F16, F64, marks=pytest.mark.slow)],
                         ids=lambda d: np.dtype(d).name)
def test_sort_key_value_stable(kd, vd):
  """Keys with many ties, values an index: the permutation must be the stable one."""
  rng = np.random.default_rng(2)
  with x64(_x64_for(kd, vd)):
    shapes = [(50,), (3, 45), (45, 3), (2, 17, 3), (1, 1), (4, 0), (70, 20)]
    args = []
    for shape in shapes:
      args += [special_data(rng, shape, kd), special_data(rng, shape, vd)]

    def make(lax, stable2=False):
      def f(*args):
        out = []
        for k, v in zip(args[::2], args[1::2]):
          out += [lax.sort((k, v), dimension=a, num_keys=1) for a in range(k.ndim)]
          out += [lax.sort((k, v), dimension=a, num_keys=2, is_stable=stable2)
                  for a in range(k.ndim)]
        return out
      return f
    got = native(make(lax), *args, marker="sort")
    assert_bits(got, numpy_tier(make(lax), *args))
    jax = _jax()
    if jax is not None:   # pyjax always sorts stably; JAX's unstable order is unspecified
      assert_bits(got, jax_ref(make(jax.lax, stable2=True), *args))


def test_sort_stability_explicit():
  k = np.array([2.0, np.nan, -0.0, 1.0, 0.0, -np.nan, 2.0, -0.0, np.nan, 1.0] * 5, np.float32)
  v = np.arange(k.size, dtype=np.int32)
  got = native(lambda k, v: lax.sort((k, v), num_keys=1), k, v, marker="sort")
  order = sorted(range(k.size), key=lambda i: (np.isnan(k[i]), 0.0 if np.isnan(k[i]) else k[i]))
  np.testing.assert_array_equal(got[1], np.array(order, np.int32))
  assert_bits(got, [k[order], v[order]])


def test_sort_many_keys_and_wide_rows():
  """Three keys wider than 64 bits together (lexicographic compare), and a 4-operand sort."""
  rng = np.random.default_rng(3)
  with x64(True):
    a = rng.integers(0, 3, (5, 300)).astype(np.int64)
    b = special_data(rng, (5, 300), F64)
    c = rng.integers(0, 4, (5, 300)).astype(np.int32)
    d = rng.standard_normal((5, 300)).astype(np.float32)

    def f(a, b, c, d):
      return [lax.sort((a, b, c, d), dimension=1, num_keys=3),
              lax.sort((c, a, d), dimension=0, num_keys=2)]
    got = native(f, a, b, c, d, marker="sort")
    assert_bits(got, numpy_tier(f, a, b, c, d))
    jax = _jax()
    if jax is not None:
      ref = [np.asarray(r) for r in jax.lax.sort((a, b, c, d), dimension=1, num_keys=3)] + \
            [np.asarray(r) for r in jax.lax.sort((c, a, d), dimension=0, num_keys=2)]
      assert_bits(got, ref)


@pytest.mark.parametrize("dt", [F32, F16, BF16, I32, U8, BOOL,
                                pytest.param(F64, marks=pytest.mark.slow)],
                         ids=lambda d: np.dtype(d).name)
def test_top_k(dt):
  rng = np.random.default_rng(4)
  with x64(_x64_for(dt)):
    x = special_data(rng, (3, 5, 37), dt)

    def f(x):
      return [lax.top_k(x, 5), lax.top_k(x, 37), lax.top_k(x, 1, axis=0),
              lax.top_k(x, 0, axis=1)]
    got = native(f, x, marker="top_k")
    assert_bits(got, numpy_tier(f, x))
    jax = _jax()
    if jax is not None:
      ref = [np.asarray(r) for kk, ax in [(5, -1), (37, -1), (1, 0), (0, 1)]
             for r in jax.lax.top_k(x, kk, axis=ax)]
      # JAX's top_k orders NaN payloads the same way (IEEE total order on the bits)
      assert_bits(got, ref)


# --- cumulative reductions -------------------------------------------------------------------
def _cum_data(rng, shape, dt):
  d = np.dtype(dt)
  if d.kind in "iu":
    return special_data(rng, shape, d)
  x = (rng.standard_normal(shape) * 1.5).astype(np.float32)
  flat = x.reshape(-1)
  if flat.size > 8:
    flat[rng.choice(flat.size, 6, replace=False)] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan]
  return x.astype(d)


_CUMS = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]


@pytest.mark.parametrize("dt", CUM_DTYPES, ids=lambda d: np.dtype(d).name)
def test_cumulative_every_axis_and_direction(dt):
  rng = np.random.default_rng(5)
  d = np.dtype(dt)
  half = d in (F16, BF16)
  ops = [o for o in _CUMS if d.kind == "f" or d == BF16 or o != "cumlogsumexp"]
  with x64(_x64_for(dt)):
    shapes = [(0,), (1,), (9,), (3, 0), (4, 1, 37), (2, 300), (260, 3), (1, 5, 2)]
    xs = [_cum_data(rng, shape, d) for shape in shapes]
    cases = [(i, o, a, r) for i, x in enumerate(xs) for o in ops for a in range(x.ndim)
             for r in (False, True)]

    def make(lax):
      def f(*xs):   # one program (one build) for every shape, op, axis and direction
        return [getattr(lax, o)(xs[i], axis=a, reverse=r) for i, o, a, r in cases]
      return f
    got = native(make(lax), *xs, marker=ops)
    assert_bits(got, numpy_tier(make(lax), *xs), nan_payload=False)
    jax = _jax()
    if jax is None:
      return
    # JAX compiles cumulative reductions slowly: compare a subset of the shapes with it
    sub = [j for j, c in enumerate(cases) if c[0] in (2, 4)]
    jcases = [cases[j] for j in sub]

    def jf(*xs):
      return [getattr(jax.lax, o)(xs[i], axis=a, reverse=r) for i, o, a, r in jcases]
    for (i, o, a, r), g, ref in zip(jcases, [got[j] for j in sub], jax_ref(jf, *xs)):
      assert ref.dtype == g.dtype and ref.shape == g.shape
      if d.kind in "iu" or o in ("cummax", "cummin"):
        # NaN == NaN, -0.0 == 0.0 here
        np.testing.assert_array_equal(g.astype(np.float64), ref.astype(np.float64))
      else:
        g64, r64 = g.astype(np.float64), ref.astype(np.float64)
        if half:
          # the NumPy tier (and so the native one) accumulates half types in float32 and
          # rounds once, XLA rounds every step: overflow to inf can differ
          keep = np.isfinite(g64) & np.isfinite(r64)
          g64, r64 = g64[keep], r64[keep]
        tol = {F16: 2e-2, BF16: 6e-2, F32: 1e-5, F64: 1e-12}[d]
        scale = max(1.0, float(np.max(np.abs(r64), initial=0.0))) if half else 1.0
        np.testing.assert_allclose(g64, r64, rtol=tol, atol=tol * scale)


def test_cummax_signed_zeros_and_nan_order():
  x = np.array([[-0.0, 0.0, -0.0, np.nan, 1.0, -np.nan],
                [0.0, -0.0, -1.0, -0.0, 0.0, 2.0]], np.float32)
  for dt in (F32, F16, BF16):
    xd = x.astype(dt)

    def f(x):
      return [lax.cummax(x, 1), lax.cummin(x, 1), lax.cummax(x, 1, reverse=True),
              lax.cummin(x, 1, reverse=True)]
    got = native(f, xd, marker=["cummax", "cummin"])
    assert_bits(got, numpy_tier(f, xd), nan_payload=dt != F32)
  assert np.signbit(got[0][0, 0]) and not np.signbit(got[0][0, 1])
  assert np.signbit(got[1][1, 1])


def test_half_sums_round_once():
  """float16 cumsum accumulates in float32 and rounds each output once (the NumPy tier's
  way), which differs from rounding every step."""
  x = np.full(3000, 0.1, np.float16)
  got = native(lambda x: lax.cumsum(x), x, marker="cumsum")[0]
  want = np.cumsum(x.astype(np.float32)).astype(np.float16)
  np.testing.assert_array_equal(bits(got), bits(want))
  stepwise = np.cumsum(x)          # float16 accumulation stalls
  assert not np.array_equal(got, stepwise)


# --- inside native loops ------------------------------------------------------------------
def test_fori_loop_with_sort_is_a_native_loop():
  x = np.random.default_rng(6).standard_normal((4, 33)).astype(np.float32)

  def f(x):
    return lax.fori_loop(0, 5, lambda i, c: lax.sort(1.0 - c * 2.0, dimension=1), x)
  got = native(f, x, marker="sort", whole_loops=1)
  assert_bits(got, numpy_tier(f, x))
  jax = _jax()
  if jax is not None:
    ref = np.asarray(jax.lax.fori_loop(
        0, 5, lambda i, c: jax.lax.sort(1.0 - c * 2.0, dimension=1), x))
    np.testing.assert_allclose(got[0], ref, rtol=1e-6, atol=1e-6)


def test_scan_with_cumsum_and_top_k_is_a_native_loop():
  rng = np.random.default_rng(7)
  c0 = rng.standard_normal((3, 8)).astype(np.float32)
  xs = rng.standard_normal((6, 3, 8)).astype(np.float32)

  def f(c, xs):
    def body(c, x):
      c2 = lax.cumsum(c + x, axis=1) * 0.25
      v, i = lax.top_k(c2, 2)
      return c2, (v, i, lax.cummax(x, 0, reverse=True))
    return lax.scan(body, c, xs)
  got = native(f, c0, xs, marker=["cumsum", "top_k", "cummax"], whole_loops=1)
  assert_bits(got, numpy_tier(f, c0, xs))
  jax = _jax()
  if jax is not None:
    def jbody(c, x):
      c2 = jax.lax.cumsum(c + x, axis=1) * 0.25
      v, i = jax.lax.top_k(c2, 2)
      return c2, (v, i, jax.lax.cummax(x, 0, reverse=True))
    ref = [np.asarray(r) for r in jax.tree_util.tree_leaves(jax.lax.scan(jbody, c0, xs))]
    for g, r in zip(got, ref):
      np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


def test_unsupported_dtypes_stay_numpy_steps():
  """Complex keys are not claimed: the sort stays a NumPy step and is still right."""
  x = (np.arange(6)[::-1] + 1j * np.arange(6)).astype(np.complex64)
  v = np.arange(6, dtype=np.float32)
  f = lambda x, v: lax.sort((x, v), num_keys=1)[1] * 2  # noqa: E731
  with executable.compile_mode_override("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(x, v).compile().runtime_executable()
    got = np.asarray(jf(x, v))
  assert exe.tier == "native"
  assert [s.node.prim for s in exe.native.host_steps] == ["sort"]
  np.testing.assert_array_equal(got, numpy_tier(f, x, v)[0])
  np.testing.assert_array_equal(got, np.arange(6)[::-1] * 2)


# --- kernels called directly: outputs that are input buffers -------------------------------
def _direct_kernel(tmp_path, node):
  """The node's kernel compiled alone (no pool) and loaded: ``run(list of arrays)``."""
  import ctypes  # noqa: PLC0415
  from pyjax._src.backends.cpu.compiler import opaque  # noqa: PLC0415
  from pyjax._src.backends.cpu.compiler.kernels import elementwise
  entry = opaque.lookup(node)
  assert entry is not None
  src = (elementwise.prelude(have_float16=False, mvec=False)
         + "typedef void (*pj_task_t)(void *, int64_t, int64_t);\n"
         + "static void (*pj_parallel_for)(pj_task_t, void *, int64_t, int64_t);\n"
         + entry.kernel_source(node, "k_direct")
         + "void run(void **P) { k_direct(P); }\n")
  _direct_kernel.count = getattr(_direct_kernel, "count", 0) + 1   # a fresh .so per kernel
  c = tmp_path / f"k{_direct_kernel.count}.c"
  so = tmp_path / f"k{_direct_kernel.count}.so"
  c.write_text(src)
  cc = os.environ.get("PYJAX_CC", "cc")
  subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(so), str(c), "-lm"], check=True)
  lib = ctypes.CDLL(str(so))

  def run(arrays):
    ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    lib.run(ptrs)
  return run


def test_kernels_with_outputs_aliasing_inputs(tmp_path):
  """A donated input may be an output's buffer: results are unchanged, including an output
  that is the buffer of a later operand of the same sort."""
  from pyjax._src.backends.cpu.eager import sorting as eager_sort  # noqa: F401,PLC0415
  from pyjax._src.backends.cpu.eager import reductions as eager_reductions
  from pyjax._src.backends.cpu.eager.registry import impls  # noqa: PLC0415
  from pyjax._src.backends.cpu.compiler.ir import Node, Value  # noqa: PLC0415
  rng = np.random.default_rng(8)
  for shape, dim in [((6, 70), 1), ((70, 20), 0), ((5, 9), 1)]:
    k = special_data(rng, shape, F32)
    v = rng.standard_normal(shape).astype(np.float32)
    ins = [Value(shape, F32), Value(shape, F32)]
    node = Node("sort", dict(dimension=dim, is_stable=True, num_keys=1), ins,
                [Value(shape, F32), Value(shape, F32)])
    run = _direct_kernel(tmp_path, node)
    want = impls["sort"](k, v, dimension=dim, is_stable=True, num_keys=1)
    a, b = k.copy(), v.copy()
    run([a, b, b, a])             # out0 is operand 1's buffer, out1 operand 0's
    assert_bits([b, a], want)
    a, b = k.copy(), v.copy()
    run([a, b, a, b])             # each output in place
    assert_bits([a, b], want)
    x = rng.standard_normal(shape).astype(np.float32)
    cnode = Node("cumsum", dict(axis=dim, reverse=True), [Value(shape, F32)], [Value(shape, F32)])
    crun = _direct_kernel(tmp_path, cnode)
    y = x.copy()
    crun([y, y])
    assert_bits([y], [np.asarray(impls["cumsum"](x, axis=dim, reverse=True))])


# --- sanitizers ---------------------------------------------------------------------------
@pytest.mark.slow
def test_sanitizers_sort_cum(tmp_path):
  """This file's tests with the generated code built under AddressSanitizer and
  UndefinedBehaviorSanitizer (real JAX hidden: jaxlib does not run under a preloaded ASan)."""
  sanitizers.run_pytest(tmp_path, __file__, ["-s", "-m", "not slow"])
