"""NumPy-style indexing (x[idx]) and indexed updates (x.at[idx].*), plus jnp.take,
take_along_axis, put_along_axis, place and put: compared with NumPy and with JAX, for many
index forms and dtypes, out-of-bounds behaviour per mode, duplicates and tracing."""
import warnings

import numpy as np
import pytest

import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import core, dtypes, errors
from pyjax._src.avals import ShapedArray

DTYPES = [dtypes.bfloat16, np.float16, np.float32, np.int8, np.uint8, np.int32, np.bool_]


def A(x, dtype=None):
  return jnp.asarray(np.asarray(x) if dtype is None else np.asarray(x, dtype))


def _np(x):
  a = np.asarray(x)
  return a.astype(np.float64) if a.dtype.kind in "fV" or a.dtype == dtypes.bfloat16 else a


def assert_same(got, want, weak=None):
  want = np.asarray(want)
  assert got.shape == want.shape, (got.shape, want.shape)
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  np.testing.assert_array_equal(_np(got), _np(want))
  if weak is not None:
    assert got.weak_type == weak


def _trace(f, *avals):
  return core.trace_to_jaxpr(lambda *a: [f(*a)], list(avals))


def _run_traced(f, *args):
  """Stage ``f`` with every argument abstract, then evaluate the jaxpr on the arguments."""
  avals = [core.get_aval(a) for a in args]
  closed = _trace(f, *avals)
  return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)[0]


# --- random indices ---------------------------------------------------------------------
def random_index(rng, shape, allow_oob=True, allow_bool=True):
  """A random index (as a list of ('kind', value) entries) for an array of ``shape``."""
  entries = []
  axis = 0
  nd = len(shape)
  used_ellipsis = False
  adv_shape = [(), (2,), (3,), (2, 1), (1, 3), (2, 3)][int(rng.integers(0, 6))]
  while axis < nd and rng.random() < 0.85:
    r = rng.random()
    size = shape[axis]
    if r < 0.1:
      entries.append(("none", None))
      continue
    if r < 0.15 and not used_ellipsis:
      used_ellipsis = True
      entries.append(("ellipsis", Ellipsis))
      skip = int(rng.integers(0, nd - axis + 1))
      axis += skip
      continue
    if r < 0.35 and size > 0:
      lo, hi = (-size - 2, size + 2) if allow_oob and rng.random() < 0.3 else (-size, size)
      entries.append(("int", int(rng.integers(lo, hi))))
    elif r < 0.6:
      step = [None, 1, 2, -1, -2, 3][int(rng.integers(0, 6))]
      start = None if rng.random() < 0.3 else int(rng.integers(-size - 2, size + 3))
      stop = None if rng.random() < 0.3 else int(rng.integers(-size - 2, size + 3))
      entries.append(("slice", slice(start, stop, step)))
    elif r < 0.85 and size > 0:
      lo, hi = (-size - 2, size + 2) if allow_oob and rng.random() < 0.2 else (-size, size)
      dt = [np.int32, np.int8, np.int64, np.uint8][int(rng.integers(0, 4))]
      if dt == np.uint8:
        lo = 0
      vals = rng.integers(lo, hi, adv_shape).astype(dt)
      entries.append(("jnp" if rng.random() < 0.5 else "np", vals))
    elif allow_bool and size > 0:
      entries.append(("bool", rng.random(size) < 0.5))
    else:
      entries.append(("slice", slice(None)))
    axis += 1
  if rng.random() < 0.2:
    entries.append(("none", None))
  return entries


def build(entries, mod):
  out = []
  for kind, v in entries:
    if kind == "jnp":
      out.append(mod.asarray(v))
    else:
      out.append(v)
  return tuple(out)


def _result(f):
  try:
    return f(), None
  except Exception as e:  # noqa: BLE001
    return None, e


def _random_shape(rng):
  nd = int(rng.integers(0, 4))
  return tuple(int(rng.integers(0, 5)) if rng.random() < 0.1 else int(rng.integers(1, 5))
               for _ in range(nd))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_getitem_random_vs_numpy(seed):
  rng = np.random.default_rng(seed)
  checked = 0
  for _ in range(150):
    shape = _random_shape(rng)
    x = rng.standard_normal(shape).astype(np.float32)
    entries = random_index(rng, shape, allow_oob=False)
    idx_np = build(entries, np)
    want, werr = _result(lambda: x[idx_np])
    got, gerr = _result(lambda: A(x)[build(entries, jnp)])
    if werr is not None:
      continue  # NumPy rejects it (e.g. broadcasting); JAX comparison covers errors
    assert gerr is None, (shape, entries, gerr)
    assert_same(got, want, weak=False)
    checked += 1
  assert checked > 50


@pytest.mark.parametrize("seed,count", [(0, 25), pytest.param(1, 80, marks=pytest.mark.slow),
                                        pytest.param(2, 80, marks=pytest.mark.slow)])
def test_getitem_random_vs_jax(jax, seed, count):
  import jax.numpy as jjnp
  rng = np.random.default_rng(seed)
  for _ in range(count):
    shape = _random_shape(rng)
    x = rng.standard_normal(shape).astype(np.float32)
    entries = random_index(rng, shape)
    want, werr = _result(lambda: jjnp.asarray(x)[build(entries, jjnp)])
    got, gerr = _result(lambda: A(x)[build(entries, jnp)])
    if werr is not None:
      assert gerr is not None and type(gerr) is type(werr), (shape, entries, werr, gerr)
      assert str(gerr) == str(werr)
      continue
    assert gerr is None, (shape, entries, gerr)
    assert_same(got, np.asarray(want), weak=False)
    for mode in ["fill", "clip"]:
      want = jjnp.asarray(x).at[build(entries, jjnp)].get(mode=mode)
      got = A(x).at[build(entries, jnp)].get(mode=mode)
      assert_same(got, np.asarray(want))


@pytest.mark.parametrize("seed,count", [(0, 6), pytest.param(1, 30, marks=pytest.mark.slow),
                                        pytest.param(2, 30, marks=pytest.mark.slow)])
def test_updates_random_vs_jax(jax, seed, count):
  import jax.numpy as jjnp
  rng = np.random.default_rng(seed)
  n = 0
  while n < count:
    shape = _random_shape(rng)
    x = rng.integers(-4, 5, shape).astype(np.float32)
    entries = random_index(rng, shape)
    view, err = _result(lambda: jjnp.asarray(x)[build(entries, jjnp)])
    if err is not None:
      continue
    n += 1
    y = rng.integers(-4, 5, view.shape).astype(np.float32)
    for meth in ["set", "add", "multiply", "min", "max", "subtract"]:
      for mode in [None, "clip"]:
        want = getattr(jjnp.asarray(x).at[build(entries, jjnp)], meth)(y, mode=mode)
        got = getattr(A(x).at[build(entries, jnp)], meth)(A(y), mode=mode)
        assert_same(got, np.asarray(want))


# --- specific index forms against JAX (values, dtype, weak type, errors) ----------------
_OBJ = object()


def _cases(m):
  return [
      lambda a: a[0], lambda a: a[-1, 1:3], lambda a: a[::-1], lambda a: a[::2, None],
      lambda a: a[..., 1], lambda a: a[:], lambda a: a[10], lambda a: a[-10],
      lambda a: a[m.array(10)], lambda a: a[m.array([10, -10, -1])],
      lambda a: a.at[10].get(mode="fill"), lambda a: a.at[m.array([10, -1, -4])].get(mode="fill"),
      lambda a: a.at[m.array([10, -1, -4])].get(mode="clip"),
      lambda a: a.at[m.array([10, -1, -4])].get(mode="fill", fill_value=-1),
      lambda a: a.at[10].set(1), lambda a: a.at[m.array([10])].set(1),
      lambda a: a.at[m.array([10])].set(1, mode="clip"),
      lambda a: a[[0, 1]], lambda a: a[[0, slice(None)]], lambda a: a[1.0], lambda a: a["a"],
      lambda a: a[np.array([1.0])], lambda a: a[_OBJ], lambda a: a[0, 0, 0],
      lambda a: a[..., ...], lambda a: a[np.array([True, False])], lambda a: a[2:1],
      lambda a: a[m.array([], dtype=m.int32)], lambda a: m.zeros(0)[m.array([], dtype=m.int32)],
      lambda a: m.zeros(0)[0], lambda a: m.zeros((0, 3))[m.array([0])],
      lambda a: a[False], lambda a: a[True], lambda a: a[()],
      lambda a: a[:, m.array([True, False, True, True])], lambda a: a[m.array(1, m.uint8)],
      lambda a: a[np.uint8(1)], lambda a: a[np.int64(-1)], lambda a: a[m.array(True)],
      lambda a: a[None, 1, None], lambda a: a[np.array([0, 2]), 1:], lambda a: a[1::2, ::-2],
      lambda a: a[:, ::2], lambda a: a.at[1, ::2].set(m.array([1., 2.])),
      lambda a: a.at[m.array([[0, 1]]), m.array([1, 2])].mul(2, mode="clip"),
      lambda a: a.at[::-1].subtract(1), lambda a: a.at[1].divide(2.), lambda a: a.at[1].power(2),
      lambda a: a.at[1].min(2), lambda a: a.at[np.array([True, False, True])].max(1),
      lambda a: a.at[-1].get(wrap_negative_indices=False),
      lambda a: a.at[-1].get(wrap_negative_indices=False, mode="fill"),
      lambda a: a.at[m.array([-1, 1])].get(wrap_negative_indices=False, mode="fill"),
      lambda a: a.at[-1].set(0, wrap_negative_indices=False),
      lambda a: a.at[m.array([-1, 1])].add(5, wrap_negative_indices=False),
      lambda a: a[1.5:], lambda a: a[m.array([0, 1]), m.array([0, 1, 2])],
      lambda a: a[0, ..., None], lambda a: a[[[0, 1]]], lambda a: a[([0, 1],)],
      lambda a: a[([True, False, True],)], lambda a: a[np.array([], dtype=bool)],
      lambda a: a[m.zeros((3, 4), bool)], lambda a: a[m.ones((3, 4), bool)], lambda a: a[[]],
      lambda a: a[([],)], lambda a: a[np.int8(-1)], lambda a: a[np.uint32(7)],
      lambda a: a[range(2)], lambda a: a.at[None].get(),
      lambda a: a.at[:, m.array([0, 0, 3])].get(mode="fill", fill_value=7),
      lambda a: a.at[m.array([[0], [2]]), m.array([0, 0, 3])].get(mode="clip"),
      lambda a: a.at[m.array([[0], [2]]), 1:].get(mode="fill"),
      lambda a: a.at[1:, m.array([[0], [2]])].add(1), lambda a: a.at[m.array([0]), :, None].get(),
      lambda a: a.at[0].set(1.5), lambda a: a.at[0].set(m.ones(3)),
      lambda a: a.at[0].set(m.ones((1, 4))), lambda a: a.astype(m.int8).at[0].set(300),
      lambda a: a.astype(m.int32).at[0].set(1.5),
      lambda a: m.zeros(5).at[m.array([0, 0, 1])].set(m.array([1., 2., 3.])),
      lambda a: m.zeros(5).at[m.array([0, 0, 1])].add(m.array([1., 2., 3.])),
      lambda a: m.zeros(5).at[m.array([0, 0, 1])].apply(lambda v: v + 1),
      lambda a: m.array(2.0).at[()].set(3), lambda a: m.array(2.0).at[None].set(3),
      lambda a: m.array(2.0)[None], lambda a: m.array(2.0)[...],
      lambda a: m.zeros(3, m.bool_).at[1].add(True), lambda a: a.at[1].set(2, mode="bogus"),
      lambda a: a.at[m.array([1.])].set(2), lambda a: a[m.array([[True]])],
      lambda a: a.at[True].set(5), lambda a: a.at[False].set(5), lambda a: a.at[True, 0].get(),
      lambda a: a[None, True, ..., None, 1], lambda a: a[1, m.array([0, 2]), None][..., 0],
      lambda a: a[:, None, m.array([0, 2])], lambda a: a[m.array([0, 2]), None, 1],
      lambda a: a[m.array([0, 2]), :, None][:, 1], lambda a: a[-1:-3:-1, -1::-3],
      lambda a: a[100:, 2:1:-1], lambda a: a[::0], lambda a: a[[True, False, True]],
      lambda a: a[(0, 1), 1], lambda a: a[m.array([[0, 1], [2, 0]])],
      lambda a: a.at[m.array([0, 0, 2]), m.array([1, 1, 1])].add(m.array([1., 2., 3.])),
      lambda a: a.at[1:, :2].set(m.array([[7.], [8.]])),
      lambda a: a.at[0].set(m.ones(5)), lambda a: a.at[m.array([0, 1])].set(m.ones((3, 4))),
      lambda a: a.at[..., 0].get(indices_are_sorted=True, unique_indices=True),
      lambda a: a.at[0].get(fill_value=m.array([1., 2.]), mode="fill"),
  ]


@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types")
def test_index_forms_vs_jax(jax):
  import jax.numpy as jjnp
  x = np.arange(12.).reshape(3, 4).astype(np.float32)
  jcases, pcases = _cases(jjnp), _cases(jnp)
  for i, (jc, pc) in enumerate(zip(jcases, pcases)):
    want, werr = _result(lambda: jc(jjnp.asarray(x)))
    got, gerr = _result(lambda: pc(A(x)))
    if werr is not None:
      assert gerr is not None, (i, werr)
      assert type(gerr).__name__ == type(werr).__name__, (i, werr, gerr)
      assert str(gerr) == str(werr), i
      continue
    assert gerr is None, (i, gerr)
    assert_same(got, np.asarray(want), weak=want.weak_type)


def test_list_index_errors():
  x = A(np.arange(6.0, dtype=np.float32))
  with pytest.raises(TypeError, match=r"use `arr\[array\(seq\)\]` instead of `arr\[seq\]`"):
    x[[0, 1]]
  with pytest.raises(TypeError, match=r"use `arr\[tuple\(seq\)\]` instead of `arr\[seq\]`"):
    x[[0, slice(None)]]
  with pytest.raises(TypeError, match="JAX does not support string indexing"):
    x["a"]
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type, got "
                                      "indexer with type float64"):
    x[1.0]
  with pytest.raises(IndexError, match="Too many indices: array is 1-dimensional, but 2 were indexed"):
    x[0, 0]
  with pytest.raises(IndexError, match=r"an index can only have a single ellipsis \('...'\)"):
    x[..., ...]


def test_scatter_cast_warning():
  x = A(np.arange(4, dtype=np.int32))
  with pytest.warns(FutureWarning, match="cannot safely cast value from dtype=float32 to "
                                         "dtype=int32"):
    out = x.at[0].set(1.5)
  assert_same(out, np.array([1, 1, 2, 3], np.int32))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    x.at[0].set(7)  # a Python int is safe
    A(np.zeros(3, np.int8)).at[0].set(300)  # weakly typed: no warning (wraps)


# --- NumPy comparisons for updates with duplicates ---------------------------------------
def test_at_duplicates_vs_numpy():
  rng = np.random.default_rng(0)
  x = rng.integers(-5, 5, (6, 3)).astype(np.float32)
  idx = np.array([0, 2, 2, 5, 0, 0])
  v = rng.integers(-3, 4, (6, 3)).astype(np.float32)
  for meth, uf in [("add", np.add), ("multiply", np.multiply), ("min", np.minimum),
                   ("max", np.maximum), ("subtract", np.subtract)]:
    want = x.copy()
    uf.at(want, idx, v)
    got = getattr(A(x).at[A(idx)], meth)(A(v))
    assert_same(got, want)
  want = x.copy()
  want[idx] = v  # NumPy: the last update wins, as on pyjax's CPU backend
  assert_same(A(x).at[A(idx)].set(A(v)), want)
  want = x.copy()
  np.negative.at(want, idx)
  assert_same(A(x).at[A(idx)].apply(jnp.negative), want)
  assert_same(A(x).at[A(idx)].divide(2.0), x / np.array([8, 1, 4, 1, 1, 2], np.float32)[:, None])


def test_at_modes():
  x = A(np.arange(5, dtype=np.float32))
  i = A(np.array([0, 7, -1, -9], np.int32))
  assert_same(x[i], np.array([0, 4, 4, 0], np.float32))  # gets clamp by default
  assert_same(x.at[i].get(mode="fill"), np.array([0, np.nan, 4, np.nan], np.float32))
  assert_same(x.at[i].get(mode="fill", fill_value=-1), np.array([0, -1, 4, -1], np.float32))
  assert_same(x.at[i].get(mode="clip"), np.array([0, 4, 4, 0], np.float32))
  assert_same(x.at[i].get(mode="promise_in_bounds"), np.array([0, 4, 4, 0], np.float32))
  assert_same(x.at[i].set(9.0), np.array([9, 1, 2, 3, 9], np.float32))  # updates drop
  assert_same(x.at[i].set(9.0, mode="drop"), np.array([9, 1, 2, 3, 9], np.float32))
  assert_same(x.at[i].set(9.0, mode="clip"), np.array([9, 1, 2, 3, 9], np.float32))
  assert_same(x.at[i].add(1.0, mode="clip"), np.array([2, 1, 2, 3, 6], np.float32))
  assert_same(x.at[i].add(1.0, wrap_negative_indices=False),
              np.array([1, 1, 2, 3, 4], np.float32))
  assert_same(x.at[i].get(mode="fill", wrap_negative_indices=False),
              np.array([0, np.nan, np.nan, np.nan], np.float32))
  # a fill get of ints / bools uses the dtype's default fill value
  assert_same(A(np.arange(3, dtype=np.int32)).at[5].get(mode="fill"),
              np.array(np.iinfo(np.int32).min, np.int32))
  assert_same(A(np.arange(3, dtype=np.uint8)).at[5].get(mode="fill"), np.array(255, np.uint8))
  assert_same(A(np.zeros(3, bool)).at[5].get(mode="fill"), np.array(True))


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtypes(dt):
  x = (np.arange(24) % 7).reshape(2, 3, 4).astype(dt)
  a = A(x)
  for idx in [1, (slice(None), 2), (Ellipsis, np.array([0, 3])), (np.array([1, 0]), 0, slice(1, 3)),
              (x.astype(np.float32) > 2,), (None, 1, slice(None, None, -1))]:
    assert_same(a[idx], x[idx], weak=False)
  y = np.ones((), dt)
  want = x.copy()
  want[:, 1] = y
  assert_same(a.at[:, 1].set(A(y)), want)
  if dt is not np.bool_:
    want = x.copy()
    np.add.at(want, (np.array([0, 0]), 1), np.ones((), dt))
    assert_same(a.at[np.array([0, 0]), 1].add(A(y)), want)
    want = x.copy()
    np.maximum.at(want, (0, np.array([2, 2])), np.full((4,), 3, dt))
    assert_same(a.at[0, np.array([2, 2])].max(A(np.full((4,), 3, dt))), want)


def test_zero_and_one_sized():
  for shape in [(0,), (1,), (0, 3), (3, 0), (1, 1)]:
    x = np.zeros(shape, np.float32)
    for idx in [slice(None), slice(1, None), (Ellipsis, None), np.array([], np.int32)]:
      assert_same(A(x)[idx], x[idx])
    assert_same(A(x).at[np.array([], np.int32)].set(1.0), x)
  x = np.arange(3, dtype=np.float32)
  assert_same(A(x)[np.zeros(0, np.int32)], x[np.zeros(0, np.int32)])
  with pytest.raises(IndexError, match="index is out of bounds for axis 0 with size 0"):
    A(np.zeros(0, np.float32))[0]
  one = A(np.array([5.0], np.float32))
  assert_same(one[0], np.float32(5))
  assert_same(one[-1], np.float32(5))
  assert_same(one.at[0].add(1.0), np.array([6.0], np.float32))


def test_weak_types():
  w = jnp.asarray(2.0)  # weakly typed scalar
  assert w.weak_type
  assert w[None].weak_type and w[...].weak_type
  assert w.at[()].set(3).weak_type
  v = lax.broadcast_in_dim(w, (3,), ())
  assert v.weak_type
  assert v[A(np.array([0, 1]))].weak_type and v[1:].weak_type and v[1].weak_type
  assert v.at[1].set(5.0).weak_type
  assert v.at[1].set(A(np.float32(5))).weak_type  # the operand's weak type is kept


def test_immutability():
  x = A(np.zeros(3, np.float32))
  with pytest.raises(TypeError, match="JAX arrays are immutable"):
    x[0] = 1
  y = x.at[0].set(1.0)
  assert float(x[0]) == 0 and float(y[0]) == 1
  assert repr(x.at).startswith("_IndexUpdateHelper(Array(")
  assert repr(x.at[1]).startswith("_IndexUpdateRef(Array(") and repr(x.at[1]).endswith(", 1)")


# --- tracing ----------------------------------------------------------------------------
def test_traced_indices():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  xa = A(x)
  for i in [0, 2, -1, 7, -9]:
    out = _run_traced(lambda x, i: x[i], xa, A(np.int32(i)))
    assert_same(out, x[min(max(i if i >= 0 else i + 3, 0), 2)])
  out = _run_traced(lambda x, i: x[i, 1:3], xa, A(np.int32(1)))
  assert_same(out, x[1, 1:3])
  idx = A(np.array([2, -1, 0], np.int32))
  assert_same(_run_traced(lambda x, i: x[i], xa, idx), x[[2, -1, 0]])
  assert_same(_run_traced(lambda x, i: x[:, i], xa, idx), x[:, [2, -1, 0]])
  assert_same(_run_traced(lambda x, i: x.at[i].add(1.0), xa, idx), _add_rows(x, [2, -1, 0]))
  assert_same(_run_traced(lambda x, v: x.at[1].set(v), xa, A(np.float32(7))),
              np.where(np.arange(3)[:, None] == 1, 7, x).astype(np.float32))


def _add_rows(x, rows):
  out = x.copy()
  np.add.at(out, np.array(rows), 1.0)
  return out


def test_traced_bool_index_raises():
  x = A(np.arange(3, dtype=np.float32))
  with pytest.raises(errors.NonConcreteBooleanIndexError, match="Array boolean indices must be "
                                                                "concrete; got bool\\[3\\]"):
    _run_traced(lambda x, m: x[m], x, A(np.array([True, False, True])))
  with pytest.raises(errors.NonConcreteBooleanIndexError, match="got bool\\[\\]"):
    _run_traced(lambda x, m: x[m], x, A(np.array(True)))
  with pytest.raises(errors.NonConcreteBooleanIndexError):
    _run_traced(lambda x, m: x.at[m].set(0.0), x, A(np.array([True, False, True])))
  # concrete masks are fine while tracing
  out = _run_traced(lambda x: x[np.array([True, False, True])], x)
  assert_same(out, np.array([0, 2], np.float32))


def test_traced_slice_entries_raise():
  x = A(np.arange(3, dtype=np.float32))
  with pytest.raises(IndexError, match="Slice entries must be static integers. Got slice"):
    _run_traced(lambda x, i: x[i:], x, A(np.int32(1)))


def _jax_text(jax, f, *args):
  return str(jax.make_jaxpr(f)(*args))


@pytest.mark.parametrize("name", ["x[0]", "x[-1,1:3]", "x[::-1]", "x[arr]", "x[10]",
                                  "fill get", "x[1,arr(2)]", "set strided", "mul clip",
                                  "sub rev", "divide", "min", "bool max", "x[True]",
                                  "np idx slice", "x[...,1]", "x[:]"])
def test_jaxpr_structure_matches_jax(jax, name):
  import jax.numpy as jjnp
  cases = {
      "x[0]": lambda m: (lambda x: x[0]),
      "x[-1,1:3]": lambda m: (lambda x: x[-1, 1:3]),
      "x[::-1]": lambda m: (lambda x: x[::-1]),
      "x[arr]": lambda m: (lambda x: x[m.array([0, 1])]),
      "x[10]": lambda m: (lambda x: x[10]),
      "fill get": lambda m: (lambda x: x.at[1].get(mode="fill")),
      "x[1,arr(2)]": lambda m: (lambda x: x[1, m.array(2)]),
      "set strided": lambda m: (lambda x: x.at[1, ::2].set(m.array([1., 2.]))),
      "mul clip": lambda m: (lambda x: x.at[m.array([[0, 1]]), m.array([1, 2])].mul(2, mode="clip")),
      "sub rev": lambda m: (lambda x: x.at[::-1].subtract(1)),
      "divide": lambda m: (lambda x: x.at[1].divide(2.)),
      "min": lambda m: (lambda x: x.at[1].min(2)),
      "bool max": lambda m: (lambda x: x.at[np.array([True, False, True])].max(1)),
      "x[True]": lambda m: (lambda x: x[True]),
      "np idx slice": lambda m: (lambda x: x[np.array([0, 2]), 1:]),
      "x[...,1]": lambda m: (lambda x: x[..., 1]),
      "x[:]": lambda m: (lambda x: x[:]),
  }
  mine = _trace(cases[name](jnp), ShapedArray((3, 4), np.dtype("float32")))
  theirs = jax.make_jaxpr(cases[name](jjnp))(np.ones((3, 4), np.float32))
  assert [e.primitive.name for e in mine.eqns] == [e.primitive.name for e in theirs.eqns]
  for a, b in zip(mine.eqns, theirs.eqns):
    assert [v.aval.str_short(short_dtypes=True) for v in a.outvars] == [v.aval.str_short(short_dtypes=True) for v in b.outvars]
    if a.primitive.name in ("gather", "scatter", "scatter-add", "scatter-mul", "scatter-sub",
                            "scatter-min", "scatter-max"):
      for k in ("dimension_numbers", "mode", "indices_are_sorted", "unique_indices"):
        assert str(a.params[k]) == str(b.params[k]), k
      if a.primitive.name == "gather":
        assert a.params["slice_sizes"] == b.params["slice_sizes"]
        assert str(a.params["fill_value"]) == str(b.params["fill_value"])


# --- take / take_along_axis / put_along_axis / place / put -------------------------------
def test_take_vs_numpy():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((3, 4, 5)).astype(np.float32)
  i = np.array([[0, 2], [1, 1]], np.int32)
  for axis in [None, 0, 1, 2, -1]:
    assert_same(jnp.take(A(x), A(i), axis=axis), np.take(x, i, axis=axis))
  assert_same(jnp.take(A(x), A(np.array([-1], np.int32)), axis=1), np.take(x, [-1], axis=1))
  oob = np.array([0, 9, -9], np.int32)
  out = jnp.take(A(x), A(oob), axis=1)
  assert np.isnan(np.asarray(out)[:, 1:]).all()
  assert_same(jnp.take(A(x), A(oob), axis=1, mode="clip"), np.take(x, oob, axis=1, mode="clip"))
  assert_same(jnp.take(A(x), A(oob), axis=1, mode="wrap"), np.take(x, oob, axis=1, mode="wrap"))
  assert_same(jnp.take(A(x), A(oob), axis=1, fill_value=0.5)[:, 1],
              np.full((3, 5), 0.5, np.float32))
  with pytest.raises(ValueError, match="Invalid mode 'bogus' for np.take"):
    jnp.take(A(x), A(i), mode="bogus")
  with pytest.raises(NotImplementedError):
    jnp.take(A(x), A(i), mode="raise")
  assert_same(A(x).take(A(i), axis=0), np.take(x, i, axis=0))


def test_take_along_axis_vs_numpy():
  rng = np.random.default_rng(1)
  x = rng.standard_normal((3, 4, 5)).astype(np.float32)
  for axis in [0, 1, 2, -1]:
    shape = list(x.shape)
    shape[axis] = 2
    idx = rng.integers(0, x.shape[axis], shape).astype(np.int32)
    assert_same(jnp.take_along_axis(A(x), A(idx), axis=axis), np.take_along_axis(x, idx, axis))
    b = list(shape)
    b[(axis + 1) % 3] = 1  # broadcasting index
    idx2 = idx[tuple(slice(0, s) for s in b)]
    assert_same(jnp.take_along_axis(A(x), A(idx2), axis=axis),
                np.take_along_axis(x, idx2, axis))
  idx = np.array([0, 11, 60, -1], np.int32)
  out = jnp.take_along_axis(A(x), A(idx), axis=None)
  want = np.take_along_axis(x.ravel(), np.array([0, 11, 0, -1]), 0)
  want[2] = np.nan
  assert_same(out, want)
  assert_same(jnp.take_along_axis(A(x), A(idx), axis=None, mode="clip"),
              x.ravel()[[0, 11, 59, 59]])
  with pytest.raises(TypeError, match="take_along_axis indices must be of integer type"):
    jnp.take_along_axis(A(x), A(np.zeros((1, 1, 1), np.float32)), axis=0)
  with pytest.raises(ValueError, match="indices and arr must have the same number of dimensions"):
    jnp.take_along_axis(A(x), A(np.zeros((1,), np.int32)), axis=0)


def test_take_along_axis_vs_jax(jax):
  import jax.numpy as jjnp
  rng = np.random.default_rng(2)
  x = rng.standard_normal((2, 3, 4)).astype(np.float32)
  idx = rng.integers(-5, 6, (2, 1, 4)).astype(np.int32)
  for axis in [0, 1, 2]:
    for mode in [None, "clip", "fill", "promise_in_bounds"]:
      want = jjnp.take_along_axis(x, idx, axis=axis, mode=mode)
      got = jnp.take_along_axis(A(x), A(idx), axis=axis, mode=mode)
      assert_same(got, np.asarray(want))


def test_put_along_axis():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  idx = np.array([[1], [0], [3]], np.int32)
  want = x.copy()
  np.put_along_axis(want, idx, 99, axis=1)
  assert_same(jnp.put_along_axis(A(x), A(idx), 99.0, axis=1, inplace=False), want)
  want = x.copy()
  np.put_along_axis(want, np.array([2, 5]), np.array([7, 8], np.float32), axis=None)
  assert_same(jnp.put_along_axis(A(x), A(np.array([2, 5], np.int32)),
                                 A(np.array([7, 8], np.float32)), axis=None, inplace=False), want)
  with pytest.raises(ValueError, match="cannot modify arrays in-place"):
    jnp.put_along_axis(A(x), A(idx), 99.0, axis=1)


def test_place_and_put():
  x = np.zeros((3, 5), np.int32)
  mask = (np.arange(15).reshape(3, 5) % 4) == 0
  want = x.copy()
  np.place(want, mask, [1, 3, 5])
  assert_same(jnp.place(A(x), A(mask), A(np.array([1, 3, 5], np.int32)), inplace=False), want)
  with pytest.raises(ValueError, match="jax.numpy.place cannot modify arrays in-place"):
    jnp.place(A(x), A(mask), 1)
  want = x.copy()
  np.put(want, [0, 7, 14], [10, 20, 30])
  assert_same(jnp.put(A(x), A(np.array([0, 7, 14], np.int32)),
                      A(np.array([10, 20, 30], np.int32)), inplace=False), want)
  want = x.copy()
  np.put(want, [0, 17], [10, 20], mode="clip")
  assert_same(jnp.put(A(x), A(np.array([0, 17], np.int32)), A(np.array([10, 20], np.int32)),
                      mode="clip", inplace=False), want)
  want = x.copy()
  np.put(want, [0, 17], [10, 20], mode="wrap")
  assert_same(jnp.put(A(x), A(np.array([0, 17], np.int32)), A(np.array([10, 20], np.int32)),
                      mode="wrap", inplace=False), want)
  # mode=None: negative indices wrap once, then indices clamp (JAX's unravel_index)
  out = jnp.put(A(x), A(np.array([0, 17, -2], np.int32)), A(np.array([10, 20, 30], np.int32)),
                inplace=False)
  want = x.copy()
  want.flat[0], want.flat[14], want.flat[13] = 10, 20, 30
  assert_same(out, want)
  with pytest.raises(ValueError, match="jax.numpy.put cannot modify arrays in-place"):
    jnp.put(A(x), A(np.array([0], np.int32)), 1)


def test_place_put_vs_jax(jax):
  import jax.numpy as jjnp
  x = np.arange(10, dtype=np.float32)
  mask = np.arange(10) % 3 == 1
  assert_same(jnp.place(A(x), A(mask), A(np.array([-1., -2.], np.float32)), inplace=False),
              np.asarray(jjnp.place(x, mask, np.array([-1., -2.], np.float32), inplace=False)))
  for mode in [None, "clip", "wrap"]:
    ind = np.array([1, -2, 12, 3], np.int32)
    assert_same(jnp.put(A(x), A(ind), A(np.array([5., 6.], np.float32)), mode=mode, inplace=False),
                np.asarray(jjnp.put(x, ind, np.array([5., 6.], np.float32), mode=mode,
                                    inplace=False)))
