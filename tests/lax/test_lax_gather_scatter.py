"""lax.gather / lax.scatter*: shape rules and errors, every out-of-bounds mode, batching
dimensions, duplicates, dtypes and weak types, jaxpr params; compared with NumPy and JAX."""
import numpy as np
import pytest

import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray

GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers
_SCATTERS = ["scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
             "scatter_max"]
ALL_DTYPES = [dtypes.bfloat16, np.float16, np.float32, np.int8, np.uint8, np.int32, np.bool_]


def A(x, dtype=None):
  return jnp.asarray(np.asarray(x) if dtype is None else np.asarray(x, dtype))


def _f(x):
  return np.asarray(x).astype(np.float64) if np.asarray(x).dtype != np.bool_ else np.asarray(x)


# --- random valid dimension numbers (shared with the JAX comparison) ---------------------
def random_gather_case(rng):
  n = int(rng.integers(0, 4))
  shape = tuple(int(rng.integers(1, 5)) if rng.random() > 0.08 else 0 for _ in range(n))
  dims = list(range(n))
  nbatch = int(rng.integers(0, min(n, 2) + 1)) if n else 0
  obd = sorted(rng.choice(dims, nbatch, replace=False).tolist()) if nbatch else []
  rest = [d for d in dims if d not in obd]
  sim = rng.permutation(rest)[:int(rng.integers(0, len(rest) + 1))].tolist()
  collapsed = sorted(d for d in sim if rng.random() < 0.6)
  slice_sizes = []
  for d in dims:
    if d in collapsed:
      slice_sizes.append(1)
    elif d in obd:
      slice_sizes.append(1 if shape[d] else 0)
    else:
      slice_sizes.append(int(rng.integers(0, shape[d] + 1)))
  nb = nbatch + int(rng.integers(0, 3))
  pos = sorted(rng.choice(nb, nbatch, replace=False).tolist()) if nbatch else []
  sibd = [pos[i] for i in rng.permutation(nbatch).tolist()]
  bshape = [int(rng.integers(0, 4)) if rng.random() < 0.1 else int(rng.integers(1, 4))
            for _ in range(nb)]
  for od, sd in zip(obd, sibd):
    bshape[sd] = shape[od]
  ishape = tuple(bshape) + (len(sim),)
  if sim:
    idx = np.stack([rng.integers(-2, shape[d] + 3, size=tuple(bshape)) for d in sim], -1)
  else:
    idx = np.zeros(ishape, np.int64)
  idx = idx.reshape(ishape).astype(np.int32)
  noff = n - len(collapsed) - nbatch
  offset_dims = sorted(rng.choice(noff + nb, noff, replace=False).tolist()) if noff else []
  dn = dict(offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed),
            start_index_map=tuple(sim), operand_batching_dims=tuple(obd),
            start_indices_batching_dims=tuple(sibd))
  return shape, idx, dn, tuple(slice_sizes)


def random_scatter_case(rng):
  shape, idx, gdn, slice_sizes = random_gather_case(rng)
  nb = idx.ndim - 1
  kept = [d for d in range(len(shape)) if d not in gdn["collapsed_slice_dims"]
          and d not in gdn["operand_batching_dims"]]
  bs, ws = iter(idx.shape[:-1]), iter(slice_sizes[d] for d in kept)
  ushape = tuple(next(ws) if o in gdn["offset_dims"] else next(bs)
                 for o in range(nb + len(kept)))
  dn = dict(update_window_dims=gdn["offset_dims"],
            inserted_window_dims=gdn["collapsed_slice_dims"],
            scatter_dims_to_operand_dims=gdn["start_index_map"],
            operand_batching_dims=gdn["operand_batching_dims"],
            scatter_indices_batching_dims=gdn["start_indices_batching_dims"])
  return shape, idx, ushape, dn


# --- a pure NumPy reference (XLA semantics) --------------------------------------------
def ref_gather(x, idx, dn, slice_sizes, mode, fill):
  nb = idx.ndim - 1
  bshape = idx.shape[:-1]
  kept = [d for d in range(x.ndim) if d not in dn["collapsed_slice_dims"]
          and d not in dn["operand_batching_dims"]]
  bs, ws = iter(bshape), iter(slice_sizes[d] for d in kept)
  out_shape = tuple(next(ws) if o in dn["offset_dims"] else next(bs)
                    for o in range(nb + len(kept)))
  out = np.zeros(out_shape, x.dtype)
  for b in np.ndindex(*bshape):
    start = [0] * x.ndim
    ok = True
    for k, d in enumerate(dn["start_index_map"]):
      s = int(idx[b + (k,)])
      hi = x.shape[d] - slice_sizes[d]
      ok &= 0 <= s <= hi
      start[d] = min(max(s, 0), max(hi, 0))
    for od, sd in zip(dn["operand_batching_dims"], dn["start_indices_batching_dims"]):
      start[od] = b[sd]
    for w in np.ndindex(*[slice_sizes[d] for d in kept]):
      full = list(start)
      for d, o in zip(kept, w):
        full[d] += o
      oi, bi, wi = [], iter(b), iter(w)
      for o in range(len(out_shape)):
        oi.append(next(wi) if o in dn["offset_dims"] else next(bi))
      out[tuple(oi)] = x[tuple(full)] if (ok or mode != "fill") else fill
  return out


def ref_scatter(x, idx, u, dn, op, mode):
  out = x.copy()
  nb = idx.ndim - 1
  uwd = dn["update_window_dims"]
  wdims = [d for d in range(x.ndim) if d not in dn["inserted_window_dims"]
           and d not in dn["operand_batching_dims"]]
  window = [1] * x.ndim
  for i, d in enumerate(wdims):
    window[d] = u.shape[uwd[i]]
  combine = {"scatter": lambda a, b: b, "scatter_add": np.add, "scatter_sub": np.subtract,
             "scatter_mul": np.multiply, "scatter_min": np.minimum,
             "scatter_max": np.maximum}[op]
  for b in np.ndindex(*idx.shape[:-1]):
    start = [0] * x.ndim
    ok = True
    for k, d in enumerate(dn["scatter_dims_to_operand_dims"]):
      s = int(idx[b + (k,)])
      hi = x.shape[d] - window[d]
      ok &= 0 <= s <= hi
      start[d] = min(max(s, 0), hi) if mode == "clip" else s
    for od, sd in zip(dn["operand_batching_dims"], dn["scatter_indices_batching_dims"]):
      start[od] = b[sd]
    if not ok and mode != "clip":
      continue
    if any(x.shape[d] < window[d] for d in range(x.ndim)):
      continue
    for w in np.ndindex(*[window[d] for d in wdims]):
      full = list(start)
      for d, o in zip(wdims, w):
        full[d] += o
      ui, bi, wi = [], iter(b), iter(w)
      for o in range(u.ndim):
        ui.append(next(wi) if o in uwd else next(bi))
      out[tuple(full)] = combine(out[tuple(full)], u[tuple(ui)])
  return out


@pytest.mark.parametrize("seed", [0, 1])
def test_scatter_random_vs_reference(seed):
  rng = np.random.default_rng(seed)
  for _ in range(40):
    shape, idx, ushape, dn = random_scatter_case(rng)
    x = rng.integers(-3, 4, shape).astype(np.float32)
    u = rng.integers(-3, 4, ushape).astype(np.float32)
    for op in _SCATTERS:
      for mode in ["clip", "drop"]:
        try:
          got = getattr(lax, op)(A(x), A(idx), A(u), SDN(**dn), mode=mode)
        except TypeError as e:
          assert "out of range" in str(e) or "must not exceed" in str(e) or "bounds" in str(e)
          continue
        want = ref_scatter(x, idx, u, dn, op, mode)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{op} {mode} {dn}")


def test_named_tuples_and_enum():
  d = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
  assert repr(d) == ("GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), "
                     "start_index_map=(0,), operand_batching_dims=(), "
                     "start_indices_batching_dims=())")
  s = SDN((1,), (0,), (0,))
  assert s.operand_batching_dims == () and s.scatter_indices_batching_dims == ()
  assert repr(s).startswith("ScatterDimensionNumbers(update_window_dims=(1,), ")
  M = lax.GatherScatterMode
  assert [m.name for m in M] == ["CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS", "ONE_HOT"]
  assert str(M.FILL_OR_DROP) == "GatherScatterMode.FILL_OR_DROP"
  assert M.from_any("clip") is M.CLIP and M.from_any(None) is M.FILL_OR_DROP
  assert M.from_any("fill") is M.from_any("drop") is M.FILL_OR_DROP
  assert M.from_any("promise_in_bounds") is M.PROMISE_IN_BOUNDS
  assert M.from_any(M.CLIP) is M.CLIP
  with pytest.raises(ValueError, match='Unknown gather mode "bogus"'):
    M.from_any("bogus")


@pytest.mark.parametrize("seed", [0, 1])
def test_gather_random_vs_reference(seed):
  rng = np.random.default_rng(seed)
  for _ in range(60):
    shape, idx, dn, ss = random_gather_case(rng)
    x = rng.standard_normal(shape).astype(np.float32)
    for mode in ["clip", "fill", "promise_in_bounds"]:
      try:
        got = lax.gather(A(x), A(idx), GDN(**dn), ss, mode=mode)
      except TypeError as e:  # an invalid random case (slice size > operand size)
        assert "out of range" in str(e)
        continue
      want = ref_gather(x, idx, dn, ss, "fill" if mode == "fill" else "clip", np.nan)
      assert got.shape == want.shape and got.dtype == np.float32
      np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("seed,n", [(0, 25), pytest.param(1, 60, marks=pytest.mark.slow),
                                    pytest.param(2, 60, marks=pytest.mark.slow)])
def test_gather_random_vs_jax(jax, seed, n):
  from jax import lax as jl
  rng = np.random.default_rng(seed)
  for _ in range(n):
    shape, idx, dn, ss = random_gather_case(rng)
    x = rng.standard_normal(shape).astype(np.float32)
    for mode in ["clip", "fill", "promise_in_bounds", None]:
      try:
        want = jl.gather(x, idx, jl.GatherDimensionNumbers(**dn), ss, mode=mode)
      except TypeError as e:
        with pytest.raises(TypeError) as got:
          lax.gather(A(x), A(idx), GDN(**dn), ss, mode=mode)
        assert str(got.value) == str(e)
        continue
      got = lax.gather(A(x), A(idx), GDN(**dn), ss, mode=mode)
      assert got.shape == want.shape
      np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("seed,count,modes", [
    (3, 5, ["clip", "drop"]),
    pytest.param(0, 25, ["clip", "drop", "promise_in_bounds"], marks=pytest.mark.slow),
    pytest.param(1, 25, ["clip", "drop", "promise_in_bounds"], marks=pytest.mark.slow)])
def test_scatter_random_vs_jax(jax, seed, count, modes):
  from jax import lax as jl
  rng = np.random.default_rng(seed)
  n = 0
  while n < count:
    shape, idx, ushape, dn = random_scatter_case(rng)
    if idx.shape[-1] == 0 and int(np.prod(idx.shape[:-1])) > 1:
      continue  # XLA applies only one update when the index vector is empty
    n += 1
    x = rng.integers(-3, 4, shape).astype(np.float32)
    u = rng.integers(-3, 4, ushape).astype(np.float32)
    for op in _SCATTERS:
      for mode in modes:
        try:
          want = np.asarray(getattr(jl, op)(x, idx, u, jl.ScatterDimensionNumbers(**dn),
                                            mode=mode))
        except TypeError as e:
          with pytest.raises(TypeError) as got:
            getattr(lax, op)(A(x), A(idx), A(u), SDN(**dn), mode=mode)
          assert str(got.value) == str(e)
          continue
        except Exception:  # XLA fails on some degenerate shapes
          continue
        got = getattr(lax, op)(A(x), A(idx), A(u), SDN(**dn), mode=mode)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{op} {mode} {dn}")


def test_gather_modes_and_fill_values():
  y = A(np.arange(5, dtype=np.float32))
  dn = GDN(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
  idx = A(np.array([[4], [-1], [3], [0]], np.int32))
  clip = [[3, 4], [0, 1], [3, 4], [0, 1]]
  np.testing.assert_array_equal(lax.gather(y, idx, dn, (2,), mode="clip"), clip)
  np.testing.assert_array_equal(lax.gather(y, idx, dn, (2,)), clip)  # promise: clamps
  np.testing.assert_array_equal(lax.gather(y, idx, dn, (2,), mode="fill"),
                                [[np.nan] * 2, [np.nan] * 2, [3, 4], [0, 1]])
  np.testing.assert_array_equal(lax.gather(y, idx, dn, (2,), mode="fill", fill_value=-1),
                                [[-1, -1], [-1, -1], [3, 4], [0, 1]])
  fills = {np.int8: -128, np.uint8: 255, np.int32: np.iinfo(np.int32).min, np.bool_: True,
           np.float16: np.nan, dtypes.bfloat16: np.nan}
  for dt, fv in fills.items():
    out = lax.gather(A(np.zeros(5, dt)), A(np.array([[4]], np.int32)), dn, (2,), mode="fill")
    assert out.dtype == np.dtype(dt)
    np.testing.assert_array_equal(_f(out), _f(np.full((1, 2), fv, dt)))


def test_scatter_modes_and_duplicates():
  x = A(np.zeros(5, np.float32))
  dn = SDN(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))
  idx = A(np.array([[4], [-1], [3], [0]], np.int32))
  u = A(np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.float32))
  np.testing.assert_array_equal(lax.scatter_add(x, idx, u, dn, mode="clip"), [10, 12, 0, 6, 8])
  for mode in ["drop", "fill", "promise_in_bounds", None]:
    np.testing.assert_array_equal(lax.scatter_add(x, idx, u, dn, mode=mode), [7, 8, 0, 5, 6])
  # duplicates accumulate; a plain scatter keeps the last update
  dn1 = SDN((), (0,), (0,))
  i = A(np.array([[0], [0], [2], [0]], np.int32))
  v = A(np.array([1, 2, 3, 4], np.float32))
  base = A(np.array([1, 1, 1, 1], np.float32))
  np.testing.assert_array_equal(lax.scatter(base, i, v, dn1), [4, 1, 3, 1])
  np.testing.assert_array_equal(lax.scatter_add(base, i, v, dn1), [8, 1, 4, 1])
  np.testing.assert_array_equal(lax.scatter_sub(base, i, v, dn1), [-6, 1, -2, 1])
  np.testing.assert_array_equal(lax.scatter_mul(base, i, v, dn1), [8, 1, 3, 1])
  np.testing.assert_array_equal(lax.scatter_min(base, i, v, dn1), [1, 1, 1, 1])
  np.testing.assert_array_equal(lax.scatter_max(base, i, v, dn1), [4, 1, 3, 1])


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtypes(dt):
  x = A(np.zeros(4, dt))
  u = A(np.ones(3, dt))
  i = A(np.array([[0], [0], [2]], np.int32))
  dn = SDN((), (0,), (0,))
  out = lax.scatter(x, i, u, dn)
  assert out.dtype == np.dtype(dt) and not out.weak_type
  np.testing.assert_array_equal(_f(out), _f(np.array([1, 0, 1, 0], dt)))
  np.testing.assert_array_equal(_f(lax.scatter_max(x, i, u, dn)), _f(np.array([1, 0, 1, 0], dt)))
  np.testing.assert_array_equal(_f(lax.scatter_min(x, i, u, dn)), _f(np.zeros(4, dt)))
  if dt is not np.bool_:
    np.testing.assert_array_equal(_f(lax.scatter_add(x, i, u, dn)), [2, 0, 1, 0])
  else:
    with pytest.raises(TypeError, match="add does not accept dtype bool at position 0"):
      lax.scatter_add(x, i, u, dn)
  g = lax.gather(A(np.arange(4).astype(dt)), i, GDN((), (0,), (0,)), (1,))
  assert g.dtype == np.dtype(dt)
  np.testing.assert_array_equal(_f(g), _f(np.arange(4).astype(dt)[[0, 0, 2]]))


def test_index_dtypes():
  x = A(np.arange(6, dtype=np.float32))
  dn = GDN((), (0,), (0,))
  for it in [np.int8, np.uint8, np.int16, np.uint32, np.int32]:
    out = lax.gather(x, A(np.array([[1], [5]], it)), dn, (1,))
    np.testing.assert_array_equal(out, [1, 5])
  with pytest.raises(ValueError, match="indices must have an integer type"):
    lax.gather(x, A(np.array([[1.0]], np.float32)), dn, (1,))
  with pytest.raises(ValueError, match="indices must have an integer type"):
    lax.scatter(x, A(np.array([[1.0]], np.float32)), A(np.ones(1, np.float32)), SDN((), (0,), (0,)))


def test_weak_type_follows_operand():
  from pyjax._src.lax.elementwise import _convert_element_type
  weak = _convert_element_type(jnp.asarray(np.zeros(3, np.float32)), np.float32, True)
  assert weak.weak_type
  i = A(np.array([[1]], np.int32))
  g = lax.gather(weak, i, GDN((), (0,), (0,)), (1,))
  assert g.weak_type
  s = lax.scatter_add(weak, i, weak[:1], SDN((), (0,), (0,)))
  assert s.weak_type


def test_scatter_dtype_mismatch():
  with pytest.raises(TypeError, match=r"lax.scatter requires arguments to have the same dtypes, "
                                      r"got float32, int32."):
    lax.scatter_add(A(np.zeros(3, np.float32)), A(np.array([[0]], np.int32)),
                    A(np.array([1], np.int32)), SDN((), (0,), (0,)))


_GATHER_ERRORS = [
    # (operand shape, indices shape, dnums, slice_sizes)
    ((3, 4), (2, 1), dict(offset_dims=(1, 0), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 4)),
    ((3, 4), (2, 1), dict(offset_dims=(5,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 4)),
    ((3, 4), (2, 2), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 4)),
    ((3, 4), (2, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(2,)), (1, 4)),
    ((3, 4), (2, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1,)),
    ((3, 4), (2, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 5)),
    ((3, 4), (2, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (2, 4)),
    ((3, 4), (2, 1), dict(offset_dims=(1,), collapsed_slice_dims=(1, 0), start_index_map=(0,)), (1, 1)),
    ((3, 4), (2, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0, 0), start_index_map=(0,)), (1, 4)),
    ((3, 4), (2, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 4, 1)),
    ((3, 4), (2, 2), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 0)), (1, 4)),
    ((3, 4), (3, 1), dict(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(1,),
                          operand_batching_dims=(0,), start_indices_batching_dims=(0,)), (2, 4)),
    ((3, 4), (2, 1), dict(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(1,),
                          operand_batching_dims=(0,), start_indices_batching_dims=(0,)), (1, 4)),
    ((3, 4), (3, 1), dict(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(1,),
                          operand_batching_dims=(0,), start_indices_batching_dims=(1,)), (1, 4)),
    ((3, 4), (3, 1), dict(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,),
                          operand_batching_dims=(0,), start_indices_batching_dims=(0,)), (1, 4)),
    ((3, 4), (3, 1), dict(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(1,),
                          operand_batching_dims=(0,), start_indices_batching_dims=()), (1, 4)),
]


@pytest.mark.parametrize("case", range(len(_GATHER_ERRORS)))
def test_gather_shape_errors_match_jax(jax, case):
  from jax import lax as jl
  oshape, ishape, dn, ss = _GATHER_ERRORS[case]
  x = np.zeros(oshape, np.float32)
  i = np.zeros(ishape, np.int32)
  with pytest.raises(TypeError) as want:
    jax.eval_shape(lambda x, i: jl.gather(x, i, jl.GatherDimensionNumbers(**dn), ss), x, i)
  with pytest.raises(TypeError) as got:
    lax.gather(A(x), A(i), GDN(**dn), ss)
  assert str(got.value) == str(want.value)


_SCATTER_ERRORS = [
    # (operand shape, indices shape, updates shape, dnums)
    ((3, 4), (2, 1), (2, 4, 1), dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))),
    ((3, 4), (2, 1), (2, 4), dict(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))),
    ((3, 4), (2, 1), (2, 5), dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))),
    ((3, 4), (2, 1), (3, 4), dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))),
    ((3, 4), (2, 2), (2, 4), dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))),
    ((3, 4), (2, 1), (2, 4), dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(3,))),
    ((3, 4), (2, 1), (2, 4), dict(update_window_dims=(1,), inserted_window_dims=(2,), scatter_dims_to_operand_dims=(0,))),
    ((3, 4), (3, 1), (3,), dict(update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
                                 operand_batching_dims=(0,), scatter_indices_batching_dims=(1,))),
    ((3, 4), (2, 1), (2,), dict(update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
                                 operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))),
    ((3, 4), (3, 1), (3,), dict(update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
                                 operand_batching_dims=(0,), scatter_indices_batching_dims=())),
]


@pytest.mark.parametrize("case", range(len(_SCATTER_ERRORS)))
def test_scatter_shape_errors_match_jax(jax, case):
  from jax import lax as jl
  oshape, ishape, ushape, dn = _SCATTER_ERRORS[case]
  x, i, u = np.zeros(oshape, np.float32), np.zeros(ishape, np.int32), np.zeros(ushape, np.float32)
  with pytest.raises(TypeError) as want:
    jax.eval_shape(lambda x, i, u: jl.scatter_add(x, i, u, jl.ScatterDimensionNumbers(**dn)), x, i, u)
  with pytest.raises(TypeError) as got:
    lax.scatter_add(A(x), A(i), A(u), SDN(**dn))
  assert str(got.value) == str(want.value)


def test_empty_cases():
  x = A(np.zeros((0, 3), np.float32))
  out = lax.gather(x, A(np.zeros((0, 1), np.int32)), GDN((1,), (0,), (0,)), (1, 3))
  assert out.shape == (0, 3)
  y = A(np.arange(3, dtype=np.float32))
  out = lax.gather(y, A(np.zeros((2, 0), np.int32)), GDN((1,), (), ()), (3,))
  np.testing.assert_array_equal(out, [[0, 1, 2], [0, 1, 2]])
  s = lax.scatter_add(y, A(np.zeros((0, 1), np.int32)), A(np.zeros((0,), np.float32)),
                      SDN((), (0,), (0,)))
  np.testing.assert_array_equal(s, [0, 1, 2])
  # 0-d operand
  z = A(np.float32(5))
  g = lax.gather(z, A(np.zeros((0,), np.int32)), GDN((), (), ()), ())
  assert g.shape == () and float(g) == 5
  s = lax.scatter_add(z, A(np.zeros((0,), np.int32)), A(np.float32(2)), SDN((), (), ()))
  assert float(s) == 7


def test_batching_dims():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((3, 5, 2)).astype(np.float32)
  idx = rng.integers(0, 5, (3, 4, 1)).astype(np.int32)
  dn = GDN(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,),
           operand_batching_dims=(0,), start_indices_batching_dims=(0,))
  out = lax.gather(A(x), A(idx), dn, (1, 1, 2))
  want = np.take_along_axis(x, np.broadcast_to(idx, (3, 4, 1))[..., None].repeat(2, -1)[:, :, 0], 1)
  np.testing.assert_array_equal(out, want)
  sdn = SDN(update_window_dims=(2,), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
            operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))
  s = lax.scatter_add(A(np.zeros_like(x)), A(idx), A(np.ones((3, 4, 2), np.float32)), sdn)
  want = np.zeros_like(x)
  for b in range(3):
    np.add.at(want[b], idx[b, :, 0], 1)
  np.testing.assert_array_equal(s, want)


def test_scatter_apply():
  x = A(np.array([1, 2, 3, 4], np.float32))
  i = A(np.array([[0], [0], [2]], np.int32))
  out = lax.scatter_apply(x, i, lambda v: v * 2, SDN((), (0,), (0,)), update_shape=(3,))
  np.testing.assert_array_equal(out, [4, 2, 6, 4])  # index 0 doubled twice
  out = lax.scatter_apply(x, i, lambda v: v * 2, SDN((), (0,), (0,)), update_shape=(3,),
                          mode="clip")
  np.testing.assert_array_equal(out, [4, 2, 6, 4])


def test_index_take():
  x = A(np.arange(12, dtype=np.float32).reshape(3, 4))
  out = lax.index_take(x, (A(np.array([0, 2, -1], np.int32)), A(np.array([1, 5, 3], np.int32))), (0, 1))
  np.testing.assert_array_equal(out, [1, 9, 11])


def _trace(f, *avals):
  return core.trace_to_jaxpr(lambda *a: [f(*a)], list(avals))


def test_jaxpr_params():
  f32 = np.dtype("float32")
  dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
  j = _trace(lambda x, i: lax.gather(x, i, dn, (1, 4), mode="fill"),
             ShapedArray((3, 4), f32), ShapedArray((2, 1), np.dtype("int32")))
  eqn = j.eqns[0]
  assert eqn.primitive is lax.gather_p and eqn.primitive.name == "gather"
  assert eqn.params["mode"] is lax.GatherScatterMode.FILL_OR_DROP
  assert np.isnan(eqn.params["fill_value"]) and eqn.params["slice_sizes"] == (1, 4)
  assert eqn.params["unique_indices"] is False and eqn.params["indices_are_sorted"] is False
  hash(tuple(sorted(eqn.params.items())))  # params are hashable (jit keys on them)
  text = str(j)
  assert "dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), " \
         "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())" in text
  assert "mode=GatherScatterMode.FILL_OR_DROP" in text and "fill_value=nan" in text
  sdn = SDN((1,), (0,), (0,))
  for fn, name, comb in [(lax.scatter, "scatter", None), (lax.scatter_add, "scatter-add", "add"),
                         (lax.scatter_sub, "scatter-sub", "sub"), (lax.scatter_mul, "scatter-mul", "mul"),
                         (lax.scatter_min, "scatter-min", "min"), (lax.scatter_max, "scatter-max", "max")]:
    j = _trace(lambda x, i, u: fn(x, i, u, sdn), ShapedArray((3, 4), f32),
               ShapedArray((2, 1), np.dtype("int32")), ShapedArray((2, 4), f32))
    eqn = j.eqns[0]
    assert eqn.primitive.name == name
    assert set(eqn.params) == {"dimension_numbers", "indices_are_sorted", "mode",
                               "unique_indices", "update_consts", "update_jaxpr"}
    assert eqn.params["mode"] is lax.GatherScatterMode.FILL_OR_DROP
    assert eqn.params["update_consts"] == ()
    hash(tuple(sorted(eqn.params.items())))
    uj = eqn.params["update_jaxpr"]
    if comb is None:
      assert uj is None
    else:
      assert [e.primitive.name for e in uj.eqns] == [comb]
      assert [str(v.aval) for v in uj.invars] == ["float32[]", "float32[]"]
  assert lax.scatter_add_p.name == "scatter-add" and lax.scatter_p.name == "scatter"


def test_public_names():
  for n in ["gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
            "scatter_max", "scatter_apply", "GatherDimensionNumbers", "ScatterDimensionNumbers",
            "GatherScatterMode", "gather_p", "scatter_p", "scatter_add_p", "index_take"]:
    assert hasattr(lax, n), n
