"""Large eager operations on native kernels and threads (``backends/cpu/eager/native.py``)
against the NumPy implementations they replace: bit for bit, over dtypes, odd sizes, 0-d,
strided/transposed/broadcast operands, the size threshold, background builds and the
no-compiler path; ``-m slow`` reruns a slice under AddressSanitizer/UBSan."""
import ml_dtypes
import numpy as np
import pytest

import pyjax.numpy as jnp
from pyjax._src.avals import ShapedArray
from pyjax._src.backends.cpu.eager import native as en
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.eager.registry import impls

import sanitizers

pytestmark = pytest.mark.filterwarnings(
    "ignore:(overflow|invalid value|divide by zero):RuntimeWarning")

BOOL, I8, I32, I64, U8, U32 = (np.dtype(t) for t in (np.bool_, np.int8, np.int32, np.int64,
                                                     np.uint8, np.uint32))
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [F16, BF16, F32, F64]
INTS = [I8, I32, I64, U8, U32]
ALL = [BOOL] + INTS + FLOATS
has_cc = build.toolchain() is not None
needs_cc = pytest.mark.skipif(not has_cc, reason="no C compiler")


@pytest.fixture
def sync_small(monkeypatch):
  """Native kernels for any size, built on the calling thread."""
  monkeypatch.setattr(en, "MIN_ELEMENTS", 0)
  monkeypatch.setattr(en, "CONTIG_MIN_ELEMENTS", 0)
  prev = executable.set_compile_mode("sync")
  yield
  executable.set_compile_mode(prev)


@pytest.fixture
def numpy_impls(monkeypatch):
  """The NumPy functions of the transcendental primitives back in the eager table, as
  without a C compiler or with ``PYJAX_TIER_NATIVE=0`` (``eager/kernel_calls.py``): the
  threads route serves them."""
  for name, fn in list(impls.items()):
    if getattr(fn, "_pyjax_kernel_impl", False):
      monkeypatch.setitem(impls, name, fn.__wrapped__)


def data(dt, n, seed=0):
  """``n`` values of ``dt`` with the special ones (NaN, infinities, signed zeros,
  subnormals, integer extremes) at the front."""
  rng = np.random.default_rng(seed)
  if dt == BOOL:
    return rng.integers(0, 2, n).astype(bool)
  if dt.kind in "iu":
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    small = rng.integers(-3 if dt.kind == "i" else 0, 40, n).astype(dt)
    x = np.where(rng.random(n) < 0.5, small, x)
    special = np.array([0, 1, info.max, info.min, info.max - 1, 2, 3, 31, 32, 33, 63, 64],
                       np.int64).astype(dt)
  else:
    x = (rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))).astype(np.float64)
    x = x.astype(dt)
    fi = ml_dtypes.finfo(dt)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, float(fi.tiny) / 4,
                        -float(fi.tiny), float(fi.max), -float(fi.max), 1.5, -2.5, 0.5,
                        1e30, -1e30, 3e9, -3e9], np.float64).astype(dt)
  k = min(n, special.size)
  x[:k] = special[:k]
  return x


def bits(a):
  a = np.asarray(a)
  if a.dtype == BOOL:
    return a.view(np.uint8)
  return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" or a.dtype == BF16 else a


def assert_bits(got, want, what=""):
  want = np.asarray(want)
  assert got is not None, what
  assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype,
                                                               got.shape, want.shape)
  g, w = bits(got), bits(want)
  bad = g != w
  assert not bad.any(), (what, np.flatnonzero(bad)[:8], got[bad][:8], want[bad][:8])


def reference(name, bufs, params, out_dtype):
  out = impls[name](*bufs, **params)
  return np.asarray(out, dtype=out_dtype)


def check(name, bufs, out_dtype, params=None, expect="native"):
  """Run ``name`` through ``eager_native.run`` and compare with the NumPy implementation;
  ``expect``: the route that must have served it."""
  params = params or {}
  shape = np.broadcast_shapes(*[b.shape for b in bufs])
  before = dict(en.stats)
  got = en.run(name, bufs, params, ShapedArray(shape, out_dtype))
  want = reference(name, bufs, params, out_dtype)
  if got is None and not expect:
    return None            # declined: the caller runs the NumPy implementation
  assert_bits(got, want, (name, [b.dtype.name for b in bufs], shape))
  if expect:
    assert en.stats[expect] == before[expect] + 1, (name, expect, en.stats)
  return got


BINARY = ["add", "sub", "mul", "div", "max", "min", "eq", "ne", "lt", "le", "gt", "ge"]
BITWISE = ["and", "or", "xor"]
SHIFTS = ["shift_left", "shift_right_logical", "shift_right_arithmetic"]


# --- C kernels: every dtype, bit for bit ----------------------------------------------------
@needs_cc
@pytest.mark.parametrize("dt", ALL, ids=str)
def test_binary_all_dtypes(dt, sync_small):
  n = 1009
  a, b = data(dt, n, 1), data(dt, n, 2)
  b[:40] = a[:40]                  # equal pairs (signed zeros, NaN against NaN)
  b[40:60] = a[40:60][::-1]
  ops = BINARY[6:] + (BITWISE if dt.kind in "biu" else []) \
      + ([] if dt == BOOL else BINARY[:6]) + (SHIFTS if dt.kind in "iu" else [])
  for name in ops:
    out_dt = BOOL if name in BINARY[6:] else dt
    check(name, [a, b], out_dt)


@needs_cc
@pytest.mark.parametrize("dt", ALL, ids=str)
def test_unary_all_dtypes(dt, sync_small):
  x = data(dt, 997, 3)
  ops = ["not"] if dt.kind == "b" else []
  if dt.kind in "iu":
    ops += ["neg", "abs", "sign", "square", "not", "population_count"]
  if dt.kind == "f" or dt == BF16:
    ops += ["neg", "abs", "sign", "square", "sqrt", "floor", "ceil", "is_finite"]
  for name in ops:
    # ml_dtypes' bfloat16 square drops a NaN's sign: no C kernel, NumPy serves it
    route = None if name == "square" and dt == BF16 else "native"
    check(name, [x], BOOL if name == "is_finite" else dt, expect=route)


@needs_cc
@pytest.mark.parametrize("src", ALL, ids=str)
def test_convert_all_pairs(src, sync_small):
  x = data(src, 1013, 4)
  if src.kind == "f" or src == BF16:
    x[20:30] = np.array([0.4, 0.6, -0.6, 2.5, -3.5, 127.5, 128, 255.6, -128.7, 65504],
                        np.float64).astype(src)
  for dst in ALL:
    check("convert_element_type", [x], dst, {"new_dtype": dst, "weak_type": False,
                                             "sharding": None})


@needs_cc
@pytest.mark.parametrize("dt", [BOOL, I8, I64, F16, BF16, F32, F64], ids=str)
def test_select_and_clamp(dt, sync_small):
  n = 1031
  a, b, c = data(dt, n, 5), data(dt, n, 6), data(dt, n, 7)
  pred = data(BOOL, n, 8)
  check("select_n", [pred, a, b], dt)
  which = np.random.default_rng(9).integers(-2, 5, n).astype(np.int32)
  check("select_n", [which, a, b, c], dt)
  check("select_n", [which.astype(np.uint8) % 2, a, b], dt)
  if dt != BOOL:
    lo = np.minimum(a, b) if dt.kind in "iu" else a
    check("clamp", [lo, c, b], dt)


# --- layouts and sizes ------------------------------------------------------------------------
@needs_cc
@pytest.mark.parametrize("n", [0, 1, 2, 7, 31, 97, 1021, 16411, 65537])
def test_odd_sizes(n, sync_small):
  a, b = data(F32, n, 1), data(F32, n, 2)
  check("add", [a, b], F32, expect="native" if n else None)
  check("div", [a.astype(F64), b.astype(F64)], F64, expect="native" if n else None)
  check("select_n", [a > b, a, b], F32, expect="native" if n else None)
  check("convert_element_type", [a], I32, {"new_dtype": I32, "weak_type": False,
                                           "sharding": None}, expect="native" if n else None)


@needs_cc
def test_zero_d(sync_small):
  a, b = np.array(1.5, F32), np.array(-0.0, F32)
  check("add", [a, b], F32)
  check("max", [b, np.array(0.0, F32)], F32)
  check("select_n", [np.array(True), a, b], F32)


@needs_cc
def test_layouts(sync_small):
  rng = np.random.default_rng(11)
  m = rng.standard_normal((37, 83)).astype(np.float32)
  big = rng.standard_normal((90, 200)).astype(np.float32)
  row = rng.standard_normal((1, 83)).astype(np.float32)
  col = rng.standard_normal((37, 1)).astype(np.float32)
  cases = [
      [m, m.T.T.copy()],                                   # contiguous
      [m, np.broadcast_to(row, m.shape)],                  # row broadcast (stride 0 outer)
      [m, np.broadcast_to(col, m.shape)],                  # column broadcast (inner stride 0)
      [m, row],                                            # size-1 dimension broadcast
      [col, m],
      [big[::2, ::2][:37, :83], big[1::2, 3::2][:37, :83]],  # strided
      [big[:83, :37].T, big[5:88, 7:44].T],               # transposed
      [m, np.array(2.5, np.float32)],                      # 0-d operand
      [m[:, ::-1], m[::-1]],                               # negative strides
  ]
  for a, b in cases:
    check("sub", [a, b], F32)
    check("gt", [a, b], BOOL)
  # short rows: joined into longer ones (a repeated row tiled), the rows left over as they are
  short = rng.standard_normal((307, 10)).astype(np.float32)
  for b in (short[:1], short[:1, :1], np.array(2.0, F32), short[::-1]):
    check("sub", [short, b], F32)
    check("div", [b, short], F32)
  check("sub", [short, short[:, :1]], F32)                 # a scalar per row: not joined
  # rows shorter than MIN_ROW: no C kernel (the caller runs NumPy), still exact
  tiny = rng.standard_normal((300, 3)).astype(np.float32)
  check("sub", [tiny, tiny[:1]], F32, expect=None)
  t3 = rng.standard_normal((4, 5, 6)).astype(np.float32)
  check("mul", [t3, t3], F32)                              # merges to one dimension
  # three dimensions left after merging: no C kernel (NumPy on threads, or NumPy)
  check("mul", [t3.transpose(1, 0, 2), t3.transpose(1, 0, 2)], F32, expect=None)
  check("mul", [t3[:, ::2, ::3], t3[:, ::2, ::3]], F32, expect=None)


@needs_cc
def test_layout_classes_share_kernels(sync_small):
  """One library per (primitive, dtypes, layout class): new shapes reuse it."""
  a = data(F32, 3001, 1)
  check("add", [a, a], F32)
  builds = en.stats["builds"]
  for n in (5, 77, 1234, 3001):
    check("add", [a[:n], a[-n:]], F32)
    check("add", [a[:n].reshape(1, n), a[-n:].reshape(1, n)], F32)
  assert en.stats["builds"] == builds


@needs_cc
def test_misaligned_operand_falls_back(sync_small):
  raw = np.zeros(4 * 1001 + 1, np.uint8)[1:].view(np.float32)
  assert raw.ctypes.data % 4
  before = en.stats["native"]
  got = en.run("add", [raw, raw], {}, ShapedArray(raw.shape, F32))
  assert en.stats["native"] == before
  if got is not None:
    assert_bits(got, raw + raw)


# --- reductions: full, over leading axes (columns), over trailing axes (rows) -----------------
def check_reduce(name, x, axes, expect="native"):
  out_shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
  before = en.stats["native"]
  got = en.run(name, [x], {"axes": axes}, ShapedArray(out_shape, x.dtype))
  want = np.asarray(impls[name](x, axes=axes))
  if expect is None:
    assert got is None, (name, x.shape, axes)
    return
  assert en.stats["native"] == before + 1, (name, x.dtype, x.shape, axes)
  assert_bits(got, want, (name, x.dtype.name, x.shape, axes))


@needs_cc
@pytest.mark.parametrize("dt", [F32, F64, I32, U8], ids=str)
def test_reductions(dt, sync_small):
  """Bit for bit the NumPy implementation: reductions over leading axes keeping fewer than
  ``COLS_MAX`` elements (float sums: one sequential fold per column; max/min: NaN wins,
  -0 below +0), full float sums (``_tree_sum``'s levels) and float sums of long rows (the
  lanes order), layouts classified ignoring size-1 dimensions; the other reductions
  decline (NumPy is as fast)."""
  n = 70_001   # float sums go native above 65,536 elements only
  x = data(dt, n, 5)
  fin = data(dt, n, 6)
  if dt.kind == "f":
    fin[~np.isfinite(fin)] = 1.0
    fin[:4] = -0.0
  m = fin[:70000]
  cols = [(x[:70000].reshape(7000, 10), (0,)), (m.reshape(7000, 10), (0,)),
          (m.reshape(35000, 2), (0,)), (m.reshape(700, 1, 100), (0, 1)),
          (m.reshape(2, 1750, 20), (0, 1)), (m.reshape(350, 200), (0,))]
  for a, axes in cols:
    for name in ("reduce_sum", "reduce_max", "reduce_min"):
      check_reduce(name, a, axes)
  fsum = "native" if dt.kind == "f" else None
  for a, axes in [(x, (0,)), (fin, (0,)), (fin.reshape(1, n, 1), (1,)), (fin.reshape(1, n), (0, 1)),
                  (m.reshape(70, 1000), (0, 1))]:
    check_reduce("reduce_sum", a, axes, expect=fsum)
  # float sums of long rows: the lanes order (row_lanes), rows in parallel
  for a, axes in [(m.reshape(100, 700), (1,)), (x[:70000].reshape(10, 7, 1000), (2,)),
                  (m.reshape(100, 1, 700), (1, 2)), (m.reshape(10, 70, 100), (1, 2))]:
    check_reduce("reduce_sum", a, axes, expect=fsum)
  for name, a, axes in [("reduce_max", fin, (0,)), ("reduce_sum", m.reshape(70, 1000), (0,)),
                        ("reduce_min", m.reshape(100, 700), (1,)),
                        ("reduce_max", m.reshape(10, 70, 100), (0, 2)),
                        ("reduce_max", m.reshape(700, 100).T, (0,))]:
    check_reduce(name, a, axes, expect=None)
  if dt == F32:   # the tree sum is accurate; -0 sums to +0 (XLA's fold from +0)
    big = data(F32, 1 << 20, 7)
    big[~np.isfinite(big)] = 0.0
    got = en.run("reduce_sum", [big], {"axes": (0,)}, ShapedArray((), F32))
    exact = np.sum(big.astype(np.float64))
    assert abs(float(got) - exact) <= 1e-6 * np.sum(np.abs(big.astype(np.float64)))
    z = np.full(70_000, -0.0, F32)
    assert not np.signbit(en.run("reduce_sum", [z], {"axes": (0,)}, ShapedArray((), F32)))
    zc = en.run("reduce_sum", [z.reshape(7000, 10)], {"axes": (0,)}, ShapedArray((10,), F32))
    assert not np.signbit(zc).any()
    zr = en.run("reduce_sum", [z.reshape(100, 700)], {"axes": (1,)}, ShapedArray((100,), F32))
    assert not np.signbit(zr).any()


# --- transcendental functions: NumPy's own loops on threads -----------------------------------
@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_threaded_transcendentals(dt, monkeypatch, numpy_impls):
  monkeypatch.setattr(en, "MIN_ELEMENTS", 0)
  monkeypatch.setattr(en, "THREAD_MIN_ELEMENTS", 0)
  if en._get_pool().n < 2:
    pytest.skip("one thread")
  x = data(dt, 1201, 12)
  y = data(dt, 1201, 13)
  for name in ["exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos",
               "atan", "erf", "cbrt"]:
    check(name, [x], dt, expect="threads")
  check("atan2", [x, y], dt, expect="threads")
  check("pow", [np.abs(x), y], dt, expect="threads")
  check("exp", [x.reshape(1, 1201)], dt, expect="threads")       # rows along axis 1
  check("exp", [np.broadcast_to(x[:7], (301, 7))], dt, expect="threads")


def test_threaded_one_row_falls_back(monkeypatch, numpy_impls):
  monkeypatch.setattr(en, "MIN_ELEMENTS", 0)
  monkeypatch.setattr(en, "THREAD_MIN_ELEMENTS", 0)
  x = data(F32, 1, 1)
  assert en.run("exp", [x], {}, ShapedArray(x.shape, F32)) is None


# --- through the public API: threshold, async builds, no compiler -----------------------------
def test_threshold_crossing(monkeypatch):
  prev = executable.set_compile_mode("sync")
  try:
    m = en.MIN_ELEMENTS
    x = data(F32, max(m, en.CONTIG_MIN_ELEMENTS), 1)   # contiguous operands: the larger one
    small = jnp.asarray(x[:m - 1])
    big = jnp.asarray(x)
    before = dict(en.stats)
    r_small = small * 2.0 + small
    assert en.stats == before                  # below the threshold: not even looked at
    r_big = big * 2.0 + big
    routes = sum(en.stats[k] - before[k] for k in ("native", "threads"))
    assert routes >= 1 if (has_cc or en._get_pool().n > 1) else routes == 0
    monkeypatch.setattr(en, "ENABLED", False)
    want = np.asarray(big * 2.0 + big)
    assert_bits(np.asarray(r_big), want)
    assert_bits(np.asarray(r_small), want[:m - 1])
  finally:
    executable.set_compile_mode(prev)


@needs_cc
def test_async_build_serves_numpy_first(monkeypatch):
  """A kernel not built yet: the NumPy implementation answers at once (never waits for the
  compiler); once the background build finished, the kernel serves the same key."""
  prev = executable.set_compile_mode("async")
  try:
    monkeypatch.setattr(en, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(en, "CONTIG_MIN_ELEMENTS", 0)
    monkeypatch.setattr(en, "_kernels", {})
    a = data(I64, 4099, 1)
    got = en.run("xor", [a, a[::-1]], {}, ShapedArray(a.shape, I64))
    # no kernel yet: a thread pool answer or None (then the caller runs NumPy)
    if got is not None:
      assert_bits(got, a ^ a[::-1])
    en.wait()
    check("xor", [a, a[::-1]], I64)
  finally:
    executable.set_compile_mode(prev)


def test_off_mode_and_disabled(monkeypatch):
  prev = executable.set_compile_mode("off")
  try:
    monkeypatch.setattr(en, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(en, "_kernels", {})
    a = data(I32, 999, 1)
    before = en.stats["native"]
    got = en.run("add", [a, a], {}, ShapedArray(a.shape, I32))
    assert en.stats["native"] == before and en._kernels == {}
    if got is not None:
      assert_bits(got, a + a)
    monkeypatch.setattr(en, "ENABLED", False)
    assert en.run("add", [a, a], {}, ShapedArray(a.shape, I32)) is None
  finally:
    executable.set_compile_mode(prev)


def test_no_compiler(monkeypatch, numpy_impls):
  prev = executable.set_compile_mode("sync")
  monkeypatch.setenv("PYJAX_CC", "/nonexistent/cc")
  build.reset_toolchain()
  try:
    monkeypatch.setattr(en, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(en, "THREAD_MIN_ELEMENTS", 0)
    monkeypatch.setattr(en, "_kernels", {})
    a = data(F64, 3001, 1)
    before = en.stats["native"]
    got = en.run("mul", [a, a], {}, ShapedArray(a.shape, F64))
    assert en.stats["native"] == before
    if got is not None:
      assert_bits(got, a * a)
    want = np.exp(a)
    got = en.run("exp", [a], {}, ShapedArray(a.shape, F64))
    if en._get_pool().n > 1:
      assert_bits(got, want)
  finally:
    monkeypatch.delenv("PYJAX_CC")
    build.reset_toolchain()
    executable.set_compile_mode(prev)


def test_public_api_large_ops_match_numpy_tier():
  """selu, row normalization, reductions and the benchmark's ops, native vs NumPy, bit
  for bit."""
  import pyjax
  prev = executable.set_compile_mode("sync")
  try:
    x = data(F32, 300_007, 21)
    X = np.random.default_rng(3).standard_normal((10000, 10)).astype(np.float32)

    def progs(xa, Xa):
      with pyjax.disable_jit():
        return [pyjax.nn.selu(xa), (Xa - Xa.mean(0)) / Xa.std(0), jnp.exp(xa), xa + xa,
                jnp.where(xa > 0, xa, 0.5 * xa), xa.astype(jnp.int8),
                jnp.maximum(xa, -xa), jnp.sum(xa), jnp.max(xa), Xa.min(0), Xa.sum(1)]
    got = [np.asarray(r) for r in progs(jnp.asarray(x), jnp.asarray(X))]
    old = en.ENABLED
    en.ENABLED = False
    try:
      want = [np.asarray(r) for r in progs(jnp.asarray(x), jnp.asarray(X))]
    finally:
      en.ENABLED = old
    for g, w in zip(got, want):
      assert_bits(g, w)
  finally:
    executable.set_compile_mode(prev)


# --- sanitizers --------------------------------------------------------------------------
@pytest.mark.slow
@needs_cc
def test_sanitizers_eager_native(tmp_path):
  """This file's kernel tests with the libraries built under AddressSanitizer and
  UndefinedBehaviorSanitizer (out-of-bounds reads or writes abort)."""
  sanitizers.run_pytest(tmp_path, __file__,
                        ["-m", "not slow", "-k", "odd_sizes or layouts or zero_d or select or reductions"])
