"""Row kernels: float sums/products in XLA's order through the vectorized 1-D helper
(``tree_c.TREE1_SOURCE``), bit for bit against the NumPy tier, and the kernel counts of
row-normalizing programs."""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("ignore:(overflow|invalid value|divide by zero):RuntimeWarning"),
    pytest.mark.filterwarnings("error:pyjax:RuntimeWarning"),
]

compile_mode = executable.compile_mode_override


def native(f, *args):
  with compile_mode("sync"):
    jf = pyjax.jit(lambda *a: f(*a))
    exe = jf.lower(*args).compile().runtime_executable()
    assert exe.error is None, exe.error
    assert exe.tier == "native"
    assert not exe.native.host_steps
    return jf(*args), exe


def numpy_path(f, *args):
  with compile_mode("off"):
    return pyjax.jit(lambda *a: f(*a))(*args)


def same_bits(a, b, what=""):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype and a.shape == b.shape, what
  ok = (a == b) | (np.isnan(a) & np.isnan(b))
  assert ok.all() and (np.signbit(a) == np.signbit(b))[a == b].all(), (what, a[~ok], b[~ok])


# row lengths around the helper's cases: one window, a partial first/last window, blocks of
# 8 / 32 windows (4 for float64) and what is left over, a second level of windows
_LENGTHS = [1, 31, 32, 33, 64, 100, 255, 256, 257, 287, 1000, 1023, 1024, 1025, 1100, 2100]


def _rows(n, dt, seed, special=False):
  rng = np.random.default_rng(seed)
  rows = max(1, min(4, 4095 // n))   # under 4,096 elements: XLA's order (row_lanes)
  x = (rng.standard_normal((rows, n)) * 4).astype(dt)
  if special and n > 40:
    x[0, 5] = np.nan
    x[1 % rows, n - 3] = np.inf
    x[2 % rows, 17] = -np.inf
    x[2 % rows, n - 1] = np.inf            # inf + -inf: NaN
    x[3 % rows, :] = -0.0                  # an all -0.0 row sums to +0.0
  return x


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_row_sums_and_products_match_numpy_tier(dt):
  """One program per dtype (one build): sums, products, sums of squares of an input row
  (``pj_tree1sq_*``: squared as loaded, no row buffer; ``x * x`` and ``x ** 2``) and sums
  of a computed operand (through a row buffer) of rows of every length in _LENGTHS."""
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", dt == np.float64 or prev)
  try:
    xs = [_rows(n, dt, i, special=(i % 2 == 0)) for i, n in enumerate(_LENGTHS)]
    # products: factors near 1 so that long rows neither overflow nor vanish
    ps = [(1 + x / 64).astype(dt) for x in xs]

    def f(xs, ps):
      out = []
      for x, p in zip(xs, ps):
        out += [x.sum(axis=1), (x * x).sum(axis=1), lax.reduce_prod(p, (1,)),
                (x * x).sum(axis=1, keepdims=True) + x, (x ** 2).sum(axis=1),
                (x * 3 + 1).sum(axis=1)]
      return out
    got, exe = native(f, xs, ps)
    text = exe.as_text()
    sfx = "f" if dt == np.float32 else "d"
    assert f"= pj_tree1sq_sum_{sfx}((" in text and f"= pj_tree1_sum_{sfx}(row" in text
    want = numpy_path(f, xs, ps)
  finally:
    pyjax.config.update("jax_enable_x64", prev)
  names = [f"{k} n={n}" for n in _LENGTHS
           for k in ("sum", "sumsq", "prod", "phase2", "pow2", "computed")]
  assert len(got) == len(names)
  for name, g, w in zip(names, got, want):
    same_bits(g, w, name)


def test_row_sums_match_jax():
  """XLA's order is JAX's: these float32 row sums agree bit for bit (JAX 0.10's CPU
  backend reduces some other shapes, e.g. rows of 1024, in another order)."""
  jax = pytest.importorskip("jax")
  rng = np.random.default_rng(3)
  for n in (33, 257, 777, 1000):
    x = (rng.standard_normal((4, n)) * 10).astype(np.float32)
    got, _ = native(lambda x: x.sum(axis=1), x)
    ref = np.asarray(jax.jit(lambda x: x.sum(axis=1))(x))
    same_bits(got, ref, n)


def _lanes_reference(x, axes, lanes):
  """The lanes order by its definition: lane j sums elements j, j + lanes, ... of each row
  one at a time from +0, then the lanes fold by halves."""
  kept = tuple(n for i, n in enumerate(x.shape) if i not in axes)
  r = x.reshape(int(np.prod(kept)), -1)
  acc = np.zeros((r.shape[0], lanes), x.dtype)
  for i in range(r.shape[1]):
    acc[:, i % lanes] += r[:, i]
  while acc.shape[1] > 1:
    acc = acc[:, :acc.shape[1] // 2] + acc[:, acc.shape[1] // 2:]
  return acc[:, 0].reshape(kept)


# (shape, axes, lanes order?): rows of more than 64 elements, at least two rows, at least
# 4,096 elements, the reduced dimensions (ignoring size-1 ones) trailing
_LANES_CASES = [((64, 65), (1,), True), ((64, 64), (1,), False), ((4, 1024), (1,), True),
                ((4, 1023), (1,), False), ((33, 129), (1,), True), ((7, 1000), (1,), True),
                ((2, 4097), (1,), True), ((3, 5, 40, 30), (2, 3), True),
                ((10, 1, 500, 1), (2, 3), True), ((1, 8192), (1,), False),
                ((40, 30, 5), (1,), False), ((2,) * 12, tuple(range(3, 12)), True)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_lanes_order_rows(dt):
  """Float sums of long rows in large operands (``row_lanes``) follow the lanes order on
  every tier: the native helpers (``pj_lanes_*``, ``pj_lanessq_*``), jit's NumPy tier and
  eager operations give the definition's bits (NaN, infinities, an all -0 row included),
  and other reductions keep XLA's order; JAX (which reduces these shapes with YNNPACK, in
  an order of its own) agrees to rounding."""
  prev = _with_x64(dt)
  try:
    rng = np.random.default_rng(5)
    xs = []
    for shape, axes, _ in _LANES_CASES:
      x = (rng.standard_normal(shape) * 4).astype(dt)
      if x.size > 100:
        flat = x.reshape(-1)
        flat[7], flat[x.size // 2] = np.nan, np.inf
        flat[-1] = -np.inf
        d = int(np.prod([shape[a] for a in axes]))
        flat[d:2 * d] = -0.0                    # an all -0 row sums to +0
      xs.append(x)

    def f(xs):
      return [(x.sum(axis=axes), (x * x).sum(axis=axes), (x * 3 + 1).sum(axis=axes))
              for x, (_, axes, _) in zip(xs, _LANES_CASES)]
    got, exe = native(f, xs)
    want = numpy_path(f, xs)
    eager = f([jnp.asarray(x) for x in xs])
    text = exe.as_text()
  finally:
    pyjax.config.update("jax_enable_x64", prev)
  sfx = "f" if dt == np.float32 else "d"
  lanes = 64 if dt == np.float32 else 32
  assert f"pj_lanes_sum_{sfx}(" in text and f"pj_lanessq_sum_{sfx}(" in text
  for (shape, axes, is_lanes), x, g, w, e in zip(_LANES_CASES, xs, got, want, eager):
    from pyjax._src.backends.cpu.compiler.kernels.reductions import row_lanes
    assert bool(row_lanes("reduce_sum", shape, axes, dt)) == is_lanes, shape
    for k in range(3):
      same_bits(g[k], w[k], (shape, k, "numpy tier"))
      same_bits(g[k], e[k], (shape, k, "eager"))
    if is_lanes:
      same_bits(g[0], _lanes_reference(x, axes, lanes), (shape, "definition"))
      same_bits(g[1], _lanes_reference(x * x, axes, lanes), (shape, "definition sq"))
  # a sum in the lanes order and a product in XLA's, over 9 dimensions, in one kernel
  x9 = (1 + rng.standard_normal((2,) * 12) / 16).astype(dt)
  a9 = tuple(range(3, 12))
  prev = _with_x64(dt)
  try:
    g = native(lambda x: (x.sum(axis=a9), lax.reduce_prod(x, a9)), x9)[0]
    w = numpy_path(lambda x: (x.sum(axis=a9), lax.reduce_prod(x, a9)), x9)
  finally:
    pyjax.config.update("jax_enable_x64", prev)
  same_bits(g[0], w[0], "9-d sum")
  same_bits(g[1], w[1], "9-d product")
  same_bits(g[0], _lanes_reference(x9, a9, lanes), "9-d sum, definition")
  jax = pytest.importorskip("jax")
  x = xs[6]
  np.testing.assert_allclose(np.asarray(got[6][0]), np.asarray(jax.jit(lambda x: x.sum(axis=1))(x)),
                             rtol=1e-5 if dt == np.float32 else 1e-12)


def _row_normalize(x):
  return x / jnp.sqrt((x * x).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("rows,helper", [(4, "pj_tree1sq_sum_f"), (40, "pj_lanessq_sum_f")])
def test_row_normalize_is_one_kernel(rows, helper):
  """x / sqrt(sum(x*x, rows)) is one row kernel (the reduction phase, then the full-size
  output phase over the same row), bit-identical to the NumPy tier; the squares are summed
  as they are loaded (no row buffer), in XLA's order below 4,096 elements, in the lanes
  order from there (``row_lanes``)."""
  x = np.random.default_rng(0).standard_normal((rows, 1000)).astype(np.float32)
  out, exe = native(_row_normalize, x)
  assert exe.native.n_kernels == 1
  assert f"= {helper}((p0 + " in exe.as_text()
  same_bits(out, numpy_path(_row_normalize, x))
  jax = pytest.importorskip("jax")
  # JAX computes x * rsqrt(s): equal within rounding
  ref = np.asarray(jax.jit(lambda x: x / jax.numpy.sqrt((x * x).sum(axis=1, keepdims=True)))(x))
  np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-6, atol=1e-7)



def _with_x64(dt):
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", dt == np.float64 or prev)
  return prev


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_multi_dim_sums_match_numpy_tier(dt):
  """Sums and products over several dimensions (the last longer than a window) run through
  the vectorized ``pj_treen_*`` helper: tiles of 32 per dimension in lanes, bit for bit the
  NumPy tier's XLA order (sizes up to 65,536 elements, where the NumPy tier emulates it),
  incl. NaN, infinities and -0.0; 0-size dimensions give the identity (they used to divide
  by zero in the scalar helper: SIGFPE)."""
  prev = _with_x64(dt)
  try:
    rng = np.random.default_rng(7)
    shapes = [(40, 50), (33, 40), (7, 300), (2, 33, 40), (64, 64), (3, 5, 70), (70, 1, 65),
              (31, 33, 60), (1, 33), (0, 40), (5, 0, 40)]
    xs = []
    for i, s in enumerate(shapes):
      x = (rng.standard_normal(s) * 3).astype(dt)
      if x.size and i % 3 == 0:
        x.reshape(-1)[[5, -3]] = [np.nan, np.inf]
      if x.size and i % 3 == 1:
        x[...] = -0.0
      xs.append(x)

    def f(xs):
      return [r for x in xs for r in (x.sum(), lax.reduce_prod(1 + x / 64, tuple(range(x.ndim))),
                                      x.sum(axis=tuple(range(1, x.ndim))), (x * x).mean())]
    got, exe = native(f, xs)
    assert "pj_treen_sum_f" in exe.as_text() or dt != np.float32
    want = numpy_path(f, xs)
  finally:
    pyjax.config.update("jax_enable_x64", prev)
  for i, (g, w) in enumerate(zip(got, want)):
    same_bits(g, w, (shapes[i // 4], i % 4))


@pytest.mark.parametrize("shape", [(65537,), (1000003,), (300, 1000), (2, 40, 1000)])
def test_long_single_rows_reduce_in_parallel_bit_identically(shape, monkeypatch):
  """A single row of >= 65,536 elements sums its windows in parallel (``<kernel>_win``:
  window sums over one dimension, row buffers over several), bit-identical to the one-pass
  code (the scalar helpers; the NumPy tier sums such sizes in NumPy's pairwise order)."""
  from pyjax._src.backends.cpu.compiler import codegen_c
  x = (np.random.default_rng(1).standard_normal(shape) * 3).astype(np.float32)
  x.reshape(-1)[-7] = -0.0

  def f(x):
    return x.sum(), (jnp.tanh(x) * x).sum(), jnp.prod(1 + x * 1e-6), (x * x).mean() + 1
  got, exe = native(f, x)
  assert "_win(void" in exe.as_text()
  monkeypatch.setattr(codegen_c, "SPLIT_ROW_MIN", 1 << 62)
  monkeypatch.setattr(codegen_c, "_tree1_helper", lambda prim, d: None)
  want, exe2 = native(f, x)
  assert "_win(void" not in exe2.as_text() and "pj_tree1_" not in exe2.as_text()
  for g, w in zip(got, want):
    same_bits(g, w, shape)


def test_long_full_max_min():
  """Order-free full reductions of a long row (vector lanes with integer keys): NaN wins,
  -0.0 < +0.0, equal to NumPy's answers."""
  rng = np.random.default_rng(2)
  x = rng.standard_normal(1_000_003).astype(np.float32)
  z = np.zeros(70_001, np.float32)
  z[::2] = -0.0
  y = x.copy()
  y[123_456] = np.nan
  got, _ = native(lambda x, y, z: (x.max(), x.min(), y.max(), y.min(), z.max(), (-z).min(),
                                   jnp.argmax(x), (x > 1).sum()), x, y, z)
  want = [x.max(), x.min(), np.nan, np.nan, np.float32(0.0), np.float32(-0.0),
          np.argmax(x), (x > 1).sum()]
  for g, w in zip(got, want):
    g = np.asarray(g)
    assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (g, w)


@pytest.mark.slow
def test_sanitizers_rows(tmp_path):
  """This file's tests with the generated C under AddressSanitizer/UBSan: the tile and
  window helpers, split rows and row buffers stay in bounds."""
  import sanitizers
  sanitizers.run_pytest(tmp_path, __file__, ["-m", "not slow"])
