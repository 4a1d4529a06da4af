"""Native ``dynamic_slice``, ``dynamic_update_slice``, ``concatenate``, ``stack`` and
``split`` kernels of the CPU compiler (``backends/cpu/compiler/kernels/shapes.py``): results
equal the NumPy tier bit for bit and JAX's values, for every storable dtype, start indices
of several integer dtypes in bounds, out of bounds and negative (clamped, as XLA does),
ranks 0-4 with 0- and 1-sized dimensions; the generated C contains the kernels, so a node
that fell back to a NumPy step fails the tests.  Loops reading ``x[i]`` and writing
``acc.at[i].set(...)`` run as C loops."""
from __future__ import annotations

import os
import re

import ml_dtypes
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu.compiler.native import build

import sanitizers

from test_compiler import compile_mode, leaves, numpy_path
from test_compiler_gather_scatter import _bits

try:   # the oracle; the sanitizer run hides it and compares with the NumPy tier only
  import jax
  import jax.numpy as jjnp
  from jax import lax as jlax
except ImportError:
  jax = jjnp = jlax = None

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")

BF16 = np.dtype(ml_dtypes.bfloat16)
_OURS = {"dynamic_slice", "dynamic_update_slice", "concatenate", "stack", "split"}
_FUZZ = int(os.environ.get("PYJAX_FUZZ_EXAMPLES", "0") or 0)




def assert_bits(got, want):
  got, want = leaves(got), leaves(want)
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_array_equal(_bits(g), _bits(w))   # NaN payloads and -0.0 included


def assert_jax(got, want):
  got = leaves(got)
  want = [np.asarray(v) for v in jax.tree_util.tree_leaves(want)]
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    np.testing.assert_array_equal(_bits(g), _bits(w))


def check(f, arg_sets, jf=None, kernels=(), x64=False):
  """``f`` compiled once natively (``kernels`` in its C, none of this module's primitives
  a NumPy step), called on every tuple of ``arg_sets``: bits == the NumPy tier, values ==
  ``jax.jit(jf)``.  Returns the executable."""
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", x64)
  jprev = jax.config.jax_enable_x64 if jax is not None else None
  if jax is not None:
    jax.config.update("jax_enable_x64", x64)
  try:
    with compile_mode("sync"):
      jfn = pyjax.jit(f)
      exe = jfn.lower(*arg_sets[0]).compile().runtime_executable()
      assert exe.error is None, exe.error
      assert exe.tier == "native"
      assert not [s.node.prim for s in exe.native.host_steps if s.node.prim in _OURS]
      text = exe.as_text()
      for k in kernels:
        assert f"/* native {k}" in text, k
      jj = jax.jit(jf) if (jf is not None and jax is not None) else None
      for args in arg_sets:
        got = jfn(*args)
        assert_bits(got, numpy_path(f, *args))
        if jj is not None:
          assert_jax(got, jj(*args))
    return exe
  finally:
    pyjax.config.update("jax_enable_x64", prev)
    if jax is not None:
      jax.config.update("jax_enable_x64", jprev)


def _data(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind in "iu":
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
  a = rng.standard_normal(shape).astype(np.float32)
  if a.size > 2:
    a.reshape(-1)[:3] = [np.nan, -0.0, np.inf]
  return a.astype(dtype)


def _starts(ndim, values, idt):
  """Tuples of ``ndim`` start indices of dtype ``idt`` drawn from ``values`` (cyclic)."""
  info = np.iinfo(idt)
  vals = [v for v in values if info.min <= v <= info.max]
  return [tuple(np.array(vals[(j + k) % len(vals)], idt) for k in range(ndim))
          for j in range(len(vals))]


_IDX_VALUES = [0, 1, 2, -1, -3, 3, 7, 100, -128, 127, 255, 2**31 - 1, -2**31, 2**40]


def _both(fn):
  """(pyjax version, JAX version) of ``fn(lax_module, np_module, *args)``."""
  pj = lambda *a: fn(lax, jnp, *a)  # noqa: E731
  jx = (lambda *a: fn(jlax, jjnp, *a)) if jax is not None else None  # noqa: E731
  return pj, jx


# --- dynamic_slice / dynamic_update_slice -------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int32, np.uint8, np.bool_])
def test_dynamic_slice_update_dtypes(dtype):
  x = _data((5, 4, 3), dtype)
  u = _data((2, 4, 1), dtype, 1)

  def fn(L, N, x, u, i, j, k):
    return (L.dynamic_slice(x, (i, j, k), (2, 4, 1)),
            L.dynamic_slice(x, (i, j, k), (1, 1, 1)),
            L.dynamic_slice(x, (i, j, k), (5, 2, 3)),
            L.dynamic_update_slice(x, u, (i, j, k)),
            L.dynamic_update_slice(x, u[:1, :1], (k, i, j)))
  f, jf = _both(fn)
  sets = [(x, u) + s for s in _starts(3, _IDX_VALUES, np.int32)]
  check(f, sets, jf, kernels=("dynamic_slice", "dynamic_update_slice"))


@pytest.mark.parametrize("idt", [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.int32])
def test_index_dtypes(idt):
  x = _data((6, 5), np.float32)
  u = _data((3, 2), np.float32, 2)

  def fn(L, N, x, u, i, j):
    return (L.dynamic_slice(x, (i, j), (3, 2)), L.dynamic_update_slice(x, u, (j, i)))
  f, jf = _both(fn)
  sets = [(x, u) + s for s in _starts(2, _IDX_VALUES, idt)]
  check(f, sets, jf, kernels=("dynamic_slice", "dynamic_update_slice"))


def test_x64_dtypes():
  x = _data((4, 7), np.float64)
  xi = _data((4, 7), np.int64, 3)
  u = _data((2, 3), np.float64, 4)

  def fn(L, N, x, xi, u, i, j):
    return (L.dynamic_slice(x, (i, j), (2, 3)), L.dynamic_slice(xi, (j, i), (4, 1)),
            L.dynamic_update_slice(x, u, (i, j)),
            L.dynamic_update_slice(xi, u.astype(N.int64), (j, i)),
            N.concatenate([x, u[:, :1].repeat(7, 1)]), N.stack([xi, xi * 2], 1))
  f, jf = _both(fn)
  vals = _IDX_VALUES + [2**62, -2**62, 2**63 - 1, -2**63]
  for idt in (np.int64, np.uint64):
    sets = [(x, xi, u) + s for s in _starts(2, vals + [2**64 - 1, 2**63], idt)]
    check(f, sets, jf, kernels=("dynamic_slice", "dynamic_update_slice", "concatenate", "stack"),
          x64=True)


@pytest.mark.parametrize("shape,sizes", [
    ((), ()), ((0,), (0,)), ((1,), (1,)), ((3,), (0,)), ((7,), (3,)),
    ((4, 0), (2, 0)), ((1, 1), (1, 1)), ((3, 5), (3, 1)),
    ((2, 3, 4), (1, 3, 2)), ((0, 3, 4), (0, 2, 2)),
    ((2, 1, 3, 4), (1, 1, 2, 4)), ((3, 2, 1, 5), (2, 2, 1, 0))])
def test_ranks_and_sizes(shape, sizes):
  x = _data(shape, np.float32)
  u = _data(sizes, np.float32, 5)

  def fn(L, N, x, u, *idx):
    return L.dynamic_slice(x, idx, sizes), L.dynamic_update_slice(x, u, idx)
  f, jf = _both(fn)
  sets = [(x, u) + s for s in _starts(len(shape), [0, 1, -1, 2, 5, -7, 1000], np.int32)][
      :1 if not shape else None]
  check(f, sets, jf)


# --- concatenate / stack / split ----------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int32, np.uint8, np.bool_])
def test_concatenate_stack_split(dtype):
  a = _data((2, 3, 4), dtype)
  b = _data((2, 1, 4), dtype, 1)
  c = _data((2, 0, 4), dtype, 2)
  v = _data((5,), dtype, 3)

  def fn(L, N, a, b, c, v):
    return (N.concatenate([a, b, c, a], 1), N.concatenate([a, a], 0), N.concatenate([a, a], 2),
            N.concatenate([v, v[:2]]), N.stack([a, a, a], 0), N.stack([a, a], 3),
            N.stack([v, v], 1), *N.split(a, [1, 3], 2), *N.split(v, [2], 0))
  f, jf = _both(fn)
  exe = check(f, [(a, b, c, v)], jf, kernels=("concatenate", "stack", "split"))
  assert not exe.native.host_steps


def test_concatenate_stack_ranks():
  def fn(L, N, s, t, m):
    return (N.stack([s, t]), N.stack([s]), N.concatenate([m, m[:0]], 0), N.concatenate([m], 1),
            N.stack([m, m], 2), N.concatenate([m[:, None, :, None]] * 3, 3))
  f, jf = _both(fn)
  s, t = np.float32(1.5), np.float32(-0.0)
  m = _data((3, 2), np.float32)
  check(f, [(s, t, m)], jf, kernels=("concatenate", "stack"))


# --- pad ----------------------------------------------------------------------------------
_PADS = [
    ((5,), [(2, 3, 0)]), ((5,), [(-2, 1, 0)]), ((5,), [(1, -3, 2)]), ((5,), [(-7, 0, 1)]),
    ((5,), [(-4, -4, 1)]), ((0,), [(2, 1, 3)]), ((1,), [(0, 0, 5)]), ((), []),
    ((3, 4), [(1, 0, 1), (-1, 2, 0)]), ((3, 4), [(0, 0, 0), (0, 0, 0)]),
    ((2, 0, 3), [(1, 1, 0), (2, 0, 1), (-1, -1, 0)]),
    ((2, 3, 1, 4), [(0, 1, 1), (-1, 0, 2), (3, -1, 0), (2, -3, 1)]),
    # high padding only: the copied elements start at 0 but do not cover the output
    ((5,), [(0, 3, 0)]), ((1,), [(0, 3, 0)]), ((3, 4), [(0, 0, 0), (0, 2, 0)]),
    ((3, 4), [(0, 1, 0), (0, 0, 0)]), ((2, 3), [(0, 0, 1), (0, 0, 0)])]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int32, np.uint8, np.bool_])
def test_pad(dtype):
  xs = [_data(shape, dtype, k) for k, (shape, _) in enumerate(_PADS)]
  v = _data((3,), dtype, 9)[1]

  def fn(L, N, v, *xs):
    return [L.pad(x, v, cfg) for x, (_, cfg) in zip(xs, _PADS)]
  f, jf = _both(fn)
  check(f, [(v, *xs)], jf, kernels=("pad",))


def test_pad_literal_value():
  # grad of ``x[0]`` pads the cotangent with a literal 0.0 at the high end only
  x = _data((2, 3), np.float32, 4)

  def fn(L, N, x):
    return [L.pad(x, np.float32(7.0), cfg) for _, cfg in _PADS[-5:] if len(cfg) == 2]
  f, jf = _both(fn)
  check(f, [(x,)], jf, kernels=("pad",))


# --- loops --------------------------------------------------------------------------------
def test_fori_reads_and_writes_run_as_c_loop():
  x = _data((100,), np.float32)

  def fn(L, N, x):
    def body(i, acc):
      return acc.at[i].set(x[i] * 2 + acc[(i + 99) % 100])
    return L.fori_loop(0, 100, body, N.zeros_like(x))
  f, jf = _both(fn)
  exe = check(f, [(x,)], jf, kernels=("dynamic_slice",))
  assert exe.native.whole is not None
  assert exe.native.native_loops == 1

  def fn2(L, N, m, n, j):
    def body(i, c):
      acc, tot = c
      row = L.dynamic_slice(m, (i, j), (1, 4))
      acc = L.dynamic_update_slice(acc, row * 2, (n - i, i))
      return acc, tot + L.dynamic_slice(m, (i, i), (1, 1)).sum() + row.sum()
    return L.fori_loop(0, n, body, (N.zeros((7, 9), m.dtype), N.zeros((), m.dtype)))
  f, jf = _both(fn2)
  m = _data((7, 4), np.float32, 1)
  exe = check(f, [(m, np.int32(n), np.int32(0)) for n in (0, 3, 7)], jf)
  assert exe.native.native_loops == 1   # the loop (its own C unit here) runs in C


def test_literal_start_indices():
  """``m[i]`` of a matrix is ``dynamic_slice(m, i, 0)``: a literal start index."""
  m = _data((6, 5), np.float32, 3)

  def fn(L, N, m):
    def body(i, acc):
      return acc.at[i, :].set(m[i - 1] * 0.5 + acc[i, 2]) + m[:, i % 5].sum()
    return (L.fori_loop(1, 6, body, N.zeros_like(m)), L.dynamic_slice(m, (2, 7), (2, 2)),
            L.dynamic_slice(m, (-1, 1), (3, 1)), L.dynamic_update_slice(m, m[:2, :2], (9, -4)),
            N.pad(m, 2), L.pad(m, 1.5, [(1, -2, 1), (0, 3, 0)]))
  f, jf = _both(fn)
  exe = check(f, [(m,)], jf, kernels=("dynamic_slice", "dynamic_update_slice", "pad"))
  assert exe.native.whole is not None and exe.native.native_loops == 1


def test_scan_over_index_sequence():
  x = _data((50,), np.float32)

  def fn(L, N, x, idx):
    def body(c, i):
      r = L.dynamic_slice(x, (i,), (3,))
      return c + r, N.concatenate([r, c])
    return L.scan(body, N.zeros(3, x.dtype), idx)
  f, jf = _both(fn)
  idx = np.array([0, 5, 49, -1, 60, -100, 7], np.int32)
  exe = check(f, [(x, idx)], jf, kernels=("dynamic_slice", "concatenate"))
  assert exe.native.native_loops == 1


# --- fuzz ---------------------------------------------------------------------------------
_FUZZ_DTYPES = [np.float32, np.float16, BF16, np.int32, np.int8, np.uint8, np.bool_]


def test_fuzz():
  rng = np.random.default_rng(1234)
  for case in range(max(_FUZZ, 10)):
    r = int(rng.integers(0, 5))
    shape = tuple(int(d) for d in rng.integers(0, 5, r))
    sizes = tuple(int(rng.integers(0, d + 1)) for d in shape)
    dtype = _FUZZ_DTYPES[case % len(_FUZZ_DTYPES)]
    idt = [np.int32, np.int8, np.uint16, np.int16][case % 4]
    x = _data(shape, dtype, case)
    u = _data(sizes, dtype, case + 1)
    ax = int(rng.integers(0, r)) if r else 0
    cfg = [(int(rng.integers(-d - 1, 3)), int(rng.integers(-d - 1, 3)), int(rng.integers(0, 3)))
           for d in shape]
    cfg = [(lo, hi, i) for (lo, hi, i), d in zip(cfg, shape)
           if lo + hi + max(d + (d - 1) * i, 0) >= 0]
    if len(cfg) != r:
      cfg = [(1, 0, 0)] * r

    def fn(L, N, x, u, *idx, ax=ax, r=r, cfg=cfg):
      out = [L.dynamic_slice(x, idx, sizes), L.dynamic_update_slice(x, u, idx),
             L.pad(x, x.reshape(-1)[0] if x.size else N.zeros((), x.dtype), cfg)]
      if r:
        out += [N.concatenate([x, x, x], ax), N.stack([x, x], ax)]
        if x.shape[ax] >= 1:
          out += N.split(x, [0, 1], ax)
      return out
    f, jf = _both(fn)
    vals = [int(v) for v in rng.integers(-10, 10, 6)] + [0, 127]
    sets = [(x, u) + s for s in _starts(r, vals, idt)][:4]
    check(f, sets, jf)


@pytest.mark.slow
def test_sanitizers(tmp_path):
  """This file's tests with the generated code built under AddressSanitizer and
  UndefinedBehaviorSanitizer: no out-of-bounds access whatever the indices."""
  r = sanitizers.run_pytest(tmp_path, __file__, ["-k", "not sanitizers"],
                            {"PYJAX_FUZZ_EXAMPLES": str(max(_FUZZ, 20))})
  m = re.search(r"(\d+) passed", r.stdout)
  assert m and int(m.group(1)) >= 20, r.stdout[-2000:]
