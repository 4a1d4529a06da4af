"""Native windowed reductions of the CPU compiler (``backends/cpu/compiler/kernels/windowed.py``):
``reduce_window_sum/max/min``, ``select_and_scatter_add`` and ``select_and_gather_add`` run
inside the native segment (and native loops) with results equal to the NumPy tier bit for
bit, and to real JAX (exactly for extrema and selections, to rounding for float sums)."""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.lax import elementwise as ew
from pyjax._src.lax import windowed

import sanitizers
from test_compiler_sorting import (BF16, BOOL, F16, F32, F64, I32, I64, U8, _direct_kernel,
                                        _jax, _x64_for, assert_bits, numpy_tier,
                                        special_data, x64)
from test_compiler_sorting import native as _native

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("ignore:(overflow|invalid value|divide by zero):RuntimeWarning"),
]

_MORE_INTS = [pytest.param(np.dtype(t), marks=pytest.mark.slow)
              for t in (np.int8, np.int16, np.uint16, np.uint32, np.uint64)]
DTYPES = [F32, F64, I32, F16, BF16, U8, I64] + _MORE_INTS
_SELECTS = [ew.ge_p, ew.le_p, ew.gt_p, ew.lt_p]


def native(f, *args, marker=None, whole_loops=None):
  """Leaves of ``jit(f)(*args)`` on the native tier (nothing left as a NumPy step); the
  generated C contains each kernel of kernels/windowed.py named in ``marker``."""
  return _native(f, *args, marker=marker, whole_loops=whole_loops, module="kernels/windowed.py")


# (operand shape, window, strides, padding, base dilation, window dilation); None: ones
CASES = [
    ((), (), (), (), None, None),
    ((7,), (3,), (1,), ((0, 0),), None, None),
    ((40,), (5,), (2,), ((2, 3),), None, None),
    ((0,), (2,), (1,), ((1, 1),), None, None),             # empty operand, non-empty output
    ((1,), (3,), (2,), ((0, 0),), None, None),             # window larger than the operand
    ((5,), (2,), (7,), ((4, 6),), None, None),             # stride > window, large padding
    ((9,), (3,), (2,), ((1, 1),), (2,), (2,)),             # base and window dilation
    ((8,), (2,), (3,), ((0, 0),), (3,), (1,)),             # base dilation with stride 3
    ((6, 8), (2, 2), (2, 2), ((0, 0), (0, 0)), None, None),
    ((7, 9), (3, 3), (2, 2), ((1, 1), (1, 1)), None, None),
    ((5, 6), (2, 3), (1, 2), ((0, 1), (2, 0)), (2, 1), (1, 2)),
    ((3, 0), (2, 1), (1, 1), ((0, 0), (0, 0)), None, None),
    ((4, 5), (3, 2), (3, 1), ((-1, 2), (1, -1)), None, None),   # negative padding crops
    ((2, 7, 9, 3), (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0)), None, None),
    ((2, 3, 8, 8), (1, 1, 2, 2), (1, 1, 2, 2), ((0, 0),) * 4, None, None),
    ((3, 4, 5), (2, 2, 2), (1, 2, 1), ((1, 0), (0, 1), (1, 1)), (1, 2, 1), (2, 1, 1)),
    ((2, 0, 3, 2), (1, 2, 2, 1), (1, 1, 1, 1), ((0, 0), (1, 1), (0, 0), (0, 0)), None, None),
    ((12, 11), (9, 9), (1, 2), ((2, 2), (0, 1)), None, None),   # 81 elements
]


def _params(case):
  shape, wd, ws, pads, bd, wdil = case
  nd = len(shape)
  return dict(window_dimensions=wd, window_strides=ws, padding=pads,
              base_dilation=bd or (1,) * nd, window_dilation=wdil or (1,) * nd)


def _plain(case):
  return case[4] in (None, (1,) * len(case[0])) and case[5] in (None, (1,) * len(case[0]))


def _big(case):
  return int(np.prod(case[1], dtype=np.int64)) > 64


def _sweep(d):
  """(f(*operands) computing every windowed primitive the dtype supports over CASES, and
  per output whether its NaNs must match bit for bit).  NaN sign and payload are exact for
  selections (max/min over at most 64 elements, gathers); a float sum of two NaNs keeps
  either one's (NumPy's own loops differ: the C compiler orders the operands of ``+``),
  and the NumPy tier's max/min over larger windows reduce in NumPy's order."""
  d = np.dtype(d)
  floating = d.kind == "f" or d == BF16
  plan = []
  for i, case in enumerate(CASES):
    if d != BOOL and not (floating and _big(case)):
      plan.append((i, "sum", False))
    plan += [(i, "max", not _big(case)), (i, "min", not _big(case))]
    if d != BOOL:
      plan.append((i, "gather", True))
      if _plain(case):
        plan.append((i, "scatter", False))

  def f(*xs):
    out = []
    for i, kind, _ in plan:
      x, p = xs[i], _params(CASES[i])
      sel = _SELECTS[i % 4]
      if kind in ("sum", "max", "min"):
        out.append(getattr(windowed, f"_reduce_window_{kind}")(x, **p))
      elif kind == "gather":
        t = x * 2 if d.kind != "u" else x // 2
        out.append(windowed._select_and_gather_add(t, x, sel, **p))
      else:
        src = windowed._reduce_window_max(x, **p)   # any source of the output's shape
        out.append(windowed._select_and_scatter_add(src, x, sel, p["window_dimensions"],
                                             p["window_strides"], p["padding"]))
    return out
  return f, [strict for _, _, strict in plan]


def _check_sweep(got, want, strict):
  for g, w, s in zip(got, want, strict):
    assert_bits([g], [w], nan_payload=s)
  assert len(got) == len(want) == len(strict)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_sweep_bit_identical_to_numpy_tier(dt):
  rng = np.random.default_rng(1)
  with x64(_x64_for(dt)):
    xs = [special_data(rng, c[0], dt) for c in CASES]
    f, strict = _sweep(dt)
    got = native(f, *xs, marker=["reduce_window_sum", "reduce_window_max", "reduce_window_min",
                                 "select_and_gather_add", "select_and_scatter_add"])
    _check_sweep(got, numpy_tier(f, *xs), strict)


def test_sweep_bool():
  rng = np.random.default_rng(2)
  xs = [special_data(rng, c[0], BOOL) for c in CASES]
  f, strict = _sweep(BOOL)
  got = native(f, *xs, marker=["reduce_window_max", "reduce_window_min"])
  _check_sweep(got, numpy_tier(f, *xs), strict)


def test_signed_zeros_nan_and_ties():
  """max/min: -0 < +0, the first NaN propagates; sums never give -0; selection ties pick
  the first element in visit order; a NaN candidate always replaces the selection."""
  x = np.array([[-0.0, 0.0, -0.0, -0.0], [np.nan, 1.0, -np.nan, 1.0],
                [2.0, 2.0, -1.0, -0.0], [-0.0, -0.0, 3.0, np.inf]], np.float32)
  t = np.arange(16, dtype=np.float32).reshape(4, 4) + 1
  pads = ((0, 0), (1, 0))
  p = dict(window_dimensions=(1, 2), window_strides=(1, 1), padding=pads,
           base_dilation=(1, 1), window_dilation=(1, 1))

  def f(x, t):
    return [windowed._reduce_window_max(x, **p), windowed._reduce_window_min(x, **p),
            windowed._reduce_window_sum(x, **p),
            windowed._select_and_gather_add(t, x, ew.ge_p, **p),
            windowed._select_and_scatter_add(t, x, ew.ge_p, (1, 2), (1, 1), pads)]
  got = native(f, x, t, marker=["reduce_window_max", "select_and_scatter_add"])
  assert_bits(got, numpy_tier(f, x, t))
  mx, mn, s, g, sc = got
  assert np.signbit(mx[0, 0]) and np.signbit(mn[0, 0])          # {pad, -0}
  assert not np.signbit(mx[0, 1]) and np.signbit(mn[0, 1])      # {-0, 0}
  assert not np.signbit(s[0, 3])                                 # -0 + -0 sums to +0
  assert np.isnan(mx[1, 1]) and np.isnan(mn[1, 2]) and np.signbit(mn[1, 2])   # {1, -nan}
  assert g[2, 1] == t[2, 0] and g[1, 2] == t[1, 2]   # tie: the first; NaN replaces 1
  np.testing.assert_array_equal(sc[2], [t[2, 0] + t[2, 1], t[2, 2], 0, t[2, 3]])


@pytest.mark.parametrize("dt", [F32, F64, F16, BF16], ids=lambda d: np.dtype(d).name)
def test_max_min_every_pair_of_special_values(dt):
  """Windows of two holding every ordered pair of specials (both NaN signs, +-0, +-inf)."""
  pool = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.5], np.float32)
  a, b = np.meshgrid(pool, pool, indexing="ij")
  x = np.stack([a.ravel(), b.ravel()], 1).ravel().astype(dt)
  p = dict(window_dimensions=(2,), window_strides=(2,), padding=((0, 0),),
           base_dilation=(1,), window_dilation=(1,))
  t = np.arange(x.size).astype(dt)

  def f(x, t):
    return [windowed._reduce_window_max(x, **p), windowed._reduce_window_min(x, **p)] + [
        windowed._select_and_gather_add(t, x, s, **p) for s in _SELECTS]
  with x64(dt == F64):
    got = native(f, x, t, marker=["reduce_window_max", "reduce_window_min"])
    assert_bits(got, numpy_tier(f, x, t))


def test_large_float_sums_stay_numpy_steps():
  """A float sum over more than 64 elements reduces in NumPy's order in the NumPy tier: it
  is not claimed (stays a NumPy step, still right); an int32 one is native."""
  x = np.random.default_rng(3).standard_normal((20, 20)).astype(np.float32)
  p = dict(window_dimensions=(9, 9), window_strides=(1, 1), padding=((0, 0), (0, 0)),
           base_dilation=(1, 1), window_dilation=(1, 1))
  f = lambda x: windowed._reduce_window_sum(x, **p) * 2  # noqa: E731
  with executable.compile_mode_override("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(x).compile().runtime_executable()
    got = np.asarray(jf(x))
  assert exe.tier == "native"
  assert [s.node.prim for s in exe.native.host_steps] == ["reduce_window_sum"]
  assert_bits([got], numpy_tier(f, x))
  xi = (x * 100).astype(np.int32)
  assert_bits(native(f, xi, marker="reduce_window_sum"), numpy_tier(f, xi))


# --- what users write ---------------------------------------------------------------------
def _max_pool(lax_, x, window=(1, 3, 3, 1), strides=(1, 2, 2, 1), padding="SAME"):
  return lax_.reduce_window(x, -np.inf, lax_.max, window, strides, padding)


def _avg_pool(lax_, x, window=(1, 2, 2, 1), strides=(1, 2, 2, 1), padding="VALID"):
  return lax_.reduce_window(x, 0.0, lax_.add, window, strides, padding) / 4.0


def _cnn_loss(jax_, x, w):
  """max pool -> avg pool -> weighted sum, as a user would write it."""
  y = _max_pool(jax_.lax, x * w)
  z = _avg_pool(jax_.lax, jax_.numpy.tanh(y))
  return jax_.numpy.sum(z * z)


def test_pooling_and_its_gradient_under_jit():
  rng = np.random.default_rng(4)
  x = rng.standard_normal((2, 9, 10, 4)).astype(np.float32)
  w = rng.standard_normal((4,)).astype(np.float32)

  def f(x, w):
    loss, (gx, gw) = pyjax.value_and_grad(lambda x, w: _cnn_loss(pyjax, x, w),
                                          argnums=(0, 1))(x, w)
    return [loss, gx, gw, _max_pool(lax, x), _avg_pool(lax, x)]
  got = native(f, x, w, marker=["reduce_window_max", "reduce_window_sum",
                                "select_and_scatter_add"])
  want = numpy_tier(f, x, w)
  # no contraction into fused multiply-adds, tanh on both tiers from kernels/vmath.py, the NumPy
  # tier's convolutions the native kernels (numpy_tier/native.py): all bit for bit
  assert_bits(got, want)

  c = rng.standard_normal((2, 5, 5, 4)).astype(np.float32)

  def pool_grads(x, c):   # cotangents that reach the kernels with no arithmetic in between
    return [pyjax.grad(lambda x: (_max_pool(lax, x) * c).sum())(x),
            pyjax.grad(lambda x: (_avg_pool(lax, x, padding="SAME") * c).sum())(x),
            pyjax.grad(lambda x: (lax.reduce_window(x, np.inf, lax.min, (1, 2, 3, 1),
                                                    (1, 2, 2, 1), "SAME") * c).sum())(x)]
  pgot = native(pool_grads, x, c, marker=["select_and_scatter_add", "reduce_window_sum"])
  assert_bits(pgot, numpy_tier(pool_grads, x, c))
  jax = _jax()
  if jax is None:
    return
  loss, (gx, gw) = jax.jit(jax.value_and_grad(lambda x, w: _cnn_loss(jax, x, w),
                                              argnums=(0, 1)))(x, w)
  ref = [loss, gx, gw, _max_pool(jax.lax, x), _avg_pool(jax.lax, x)]
  np.testing.assert_array_equal(got[3], np.asarray(ref[3]))
  for g, r in zip(got, ref):
    np.testing.assert_allclose(g, np.asarray(r), rtol=2e-5, atol=1e-6)
  jgot = jax.jit(lambda x, c: [jax.grad(lambda x: (_max_pool(jax.lax, x) * c).sum())(x)])(x, c)
  # XLA adds a position's contributions in its own order: equal to rounding
  np.testing.assert_allclose(pgot[0], np.asarray(jgot[0]), rtol=1e-6, atol=1e-7)
  assert np.array_equal(pgot[0] != 0, np.asarray(jgot[0]) != 0)   # the same selections


def test_max_pool_jvp_uses_gather():
  """forward-mode through max pooling: select_and_gather_add (padding in H and W: the
  last padded dimension is visited outermost)."""
  rng = np.random.default_rng(5)
  x = np.round(rng.standard_normal((1, 6, 7, 2)), 1).astype(np.float32)   # many ties
  t = rng.standard_normal(x.shape).astype(np.float32)

  def f(x, t):
    return list(pyjax.jvp(lambda x: _max_pool(lax, x), (x,), (t,)))
  got = native(f, x, t, marker="select_and_gather_add")
  assert_bits(got, numpy_tier(f, x, t))
  jax = _jax()
  if jax is not None:
    ref = jax.jit(lambda x, t: jax.jvp(lambda x: _max_pool(jax.lax, x), (x,), (t,)))(x, t)
    for g, r in zip(got, ref):
      np.testing.assert_array_equal(g, np.asarray(r))


def test_compare_with_jax():
  jax = _jax()
  if jax is None:
    pytest.skip("jax not installed")
  rng = np.random.default_rng(6)
  with x64(True):
    for dt in (F32, F64, I32):
      for case in CASES:
        shape, wd, ws, pads, bd, wdil = case
        if not shape or any(lo < 0 or hi < 0 for lo, hi in pads):
          continue
        x = special_data(rng, shape, dt)
        if dt.kind == "f":
          x = np.where(np.isnan(x), 1.5, x).astype(dt)   # NaN payloads: not compared here
        kw = dict(base_dilation=bd, window_dilation=wdil)
        ops = [(lax.max, jax.lax.max, -np.inf if dt.kind == "f" else np.iinfo(dt).min),
               (lax.min, jax.lax.min, np.inf if dt.kind == "f" else np.iinfo(dt).max)]
        if not (dt.kind == "f" and _big(case)):
          ops.append((lax.add, jax.lax.add, 0))

        def f(x, L, ops):
          return [L.reduce_window(x, np.array(init, dt), op, wd, ws, pads, **kw)
                  for op, init in ops]
        got = native(lambda x: f(x, lax, [(o, i) for o, _, i in ops]), x)
        ref = jax.jit(lambda x: f(x, jax.lax, [(o, i) for _, o, i in ops]))(x)
        for g, r, (o, _, _) in zip(got, ref, ops):
          r = np.asarray(r)
          assert g.dtype == r.dtype and g.shape == r.shape
          if o is lax.add and dt.kind == "f":
            np.testing.assert_allclose(g, r, rtol=1e-6 if dt == F32 else 1e-14, atol=1e-5)
          else:
            assert_bits([g], [r])


# --- inside native loops ------------------------------------------------------------------
def test_fori_loop_with_pooling_is_a_native_loop():
  x = np.random.default_rng(7).standard_normal((8, 8)).astype(np.float32)

  def f(x):
    def body(i, c):
      m = lax.reduce_window(c, -np.inf, lax.max, (3, 3), (1, 1), "SAME")
      s = lax.reduce_window(c, 0.0, lax.add, (2, 2), (1, 1), ((0, 1), (1, 0)))
      return m * 0.5 - s * 0.25 + x
    return lax.fori_loop(0, 6, body, x)
  got = native(f, x, marker=["reduce_window_max", "reduce_window_sum"], whole_loops=1)
  assert_bits(got, numpy_tier(f, x))
  jax = _jax()
  if jax is not None:
    def jbody(i, c):
      m = jax.lax.reduce_window(c, -np.inf, jax.lax.max, (3, 3), (1, 1), "SAME")
      s = jax.lax.reduce_window(c, 0.0, jax.lax.add, (2, 2), (1, 1), ((0, 1), (1, 0)))
      return m * 0.5 - s * 0.25 + x
    ref = jax.jit(lambda x: jax.lax.fori_loop(0, 6, jbody, x))(x)
    np.testing.assert_allclose(got[0], np.asarray(ref), rtol=1e-5, atol=1e-5)


def test_scan_with_pooling_gradient_is_a_native_loop():
  rng = np.random.default_rng(8)
  c0 = rng.standard_normal((1, 6, 6, 2)).astype(np.float32)
  xs = rng.standard_normal((4, 1, 6, 6, 2)).astype(np.float32)

  def f(c, xs):
    def body(c, x):   # (no multiply feeding an add: the tiers would round differently)
      y = c + x
      g = pyjax.grad(lambda y: _max_pool(lax, y).sum())(y)
      return y - g, _avg_pool(lax, c)
    return lax.scan(body, c, xs)
  got = native(f, c0, xs, marker=["select_and_scatter_add", "reduce_window_sum"],
               whole_loops=1)
  assert_bits(got, numpy_tier(f, c0, xs))


# --- kernels called directly: the output is the operand's buffer --------------------------
def test_kernels_with_output_aliasing_input(tmp_path):
  from pyjax._src.backends.cpu.eager import reductions as eager_reductions  # noqa: F401,PLC0415
  from pyjax._src.backends.cpu.eager.registry import impls  # noqa: PLC0415
  from pyjax._src.backends.cpu.compiler.ir import Node, Value  # noqa: PLC0415
  rng = np.random.default_rng(9)
  x = rng.standard_normal((5, 6)).astype(np.float32)
  p = dict(window_dimensions=(3, 3), window_strides=(1, 1), padding=((1, 1), (1, 1)),
           base_dilation=(1, 1), window_dilation=(1, 1))
  for prim in ("reduce_window_sum", "reduce_window_max"):
    run = _direct_kernel(tmp_path, Node(prim, p, [Value(x.shape, F32)], [Value(x.shape, F32)]))
    y = x.copy()
    run([y, y])
    assert_bits([y], [np.asarray(impls[prim](x, **p))])
  sp = dict(select_prim=ew.ge_p, window_dimensions=(3, 3), window_strides=(1, 1),
            padding=((1, 1), (1, 1)))
  node = Node("select_and_scatter_add", sp, [Value(x.shape, F32), Value(x.shape, F32)],
              [Value(x.shape, F32)])
  run = _direct_kernel(tmp_path, node)
  s = rng.standard_normal(x.shape).astype(np.float32)
  want = np.asarray(impls["select_and_scatter_add"](s, x, **sp))
  a, b = s.copy(), x.copy()
  run([a, b, b])                 # the output is the operand's buffer
  assert_bits([b], [want])
  a, b = s.copy(), x.copy()
  run([a, b, a])                 # the output is the source's buffer
  assert_bits([a], [want])


# --- sanitizers ---------------------------------------------------------------------------
@pytest.mark.slow
def test_sanitizers_window(tmp_path):
  """A slice of this file with the generated code built under AddressSanitizer and
  UndefinedBehaviorSanitizer (real JAX hidden)."""
  sanitizers.run_pytest(tmp_path, __file__,
                        ["-s", "-m", "not slow", "-k",
                         "sweep or signed_zeros or fori_loop or scan or aliasing"])
