"""Property-based differential tests (hypothesis) for jnp reductions against real JAX:
sum/prod/max/min/mean/var/std/all/any/ptp/count_nonzero/argmax/argmin, the nan-variants,
cumulative reductions, median -- with None/int/tuple/negative axes, keepdims, dtype=,
where=, initial=, empty and 1-sized dimensions, every dtype (x64 on and off), NaN/inf
values and Python scalars; grads of the differentiable ones."""
import numpy as np
import pytest
from hypothesis import strategies as st

import hypothesis_strategies as hs
from hypothesis_strategies import check, check_grad, draw_array, prop, x64_mode

jax = pytest.importorskip("jax")


def _atol(x, scale=1.0):
  """An absolute tolerance for sums: the rounding of the inputs' magnitudes."""
  x = np.asarray(x)
  if x.dtype.kind not in "fcV" and x.dtype != hs.bf16:
    return None
  mags = np.abs(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
  total = float(np.sum(mags[np.isfinite(mags)])) if mags.size else 0.0
  return hs._tol(x.dtype, None) * scale * (total + 1.0)


def _tol_dtype(x):
  """Precision of the computation for x's dtype after x64 canonicalization."""
  name = hs.canonical(np.dtype(x.dtype).name)
  return hs._tol(hs.np_dtype(name), None)


_SUMLIKE = ["sum", "prod", "mean", "nansum", "nanprod", "nanmean"]
_ORDER = ["max", "min", "nanmax", "nanmin", "ptp"]
_LOGICAL = ["all", "any", "count_nonzero"]
_MOMENTS = ["var", "std", "nanvar", "nanstd"]


@prop(n=25, slow=300, data=st.data(), x64=st.booleans())
def test_reductions(data, x64):
  with x64_mode(x64):
    x = draw_array(data, min_value=-100, max_value=100)
    fname = data.draw(st.sampled_from(_SUMLIKE + _ORDER + _LOGICAL + _MOMENTS), label="f")
    axis = data.draw(hs.axes_for(x.ndim), label="axis")
    kw = {"keepdims": data.draw(st.booleans(), label="keepdims")}
    if fname in _SUMLIKE + _MOMENTS and data.draw(st.booleans(), label="dtype?"):
      kw["dtype"] = data.draw(st.sampled_from(["float32", "int32", "complex64", "float16"]),
                              label="dtype_arg")
    if fname in _MOMENTS and data.draw(st.booleans()):
      kw["ddof"] = data.draw(st.integers(0, 2), label="ddof")
    if ("prod" in fname and (x.dtype.kind == "c" or "complex" in kw.get("dtype", ""))
        and (axis == () or x.ndim == 0)):
      x = x.reshape((1,) + x.shape)  # (see test_prod_no_axes_complex_inf)
      axis = None
    f = lambda jnp, x: getattr(jnp, fname)(x, axis=axis, **kw)
    f.__name__ = fname
    scale = 1.0
    if fname in ("prod", "nanprod"):
      scale = 1e30   # products of values up to 100: compare relatively
    elif fname in _MOMENTS:
      scale = 200.0
    rtol = None
    if "dtype" in kw or x.dtype in (np.float16, hs.bf16):
      rtol = 2e-2
    atol = _atol(x, scale) if fname not in ("prod", "nanprod") else None
    check(f, x, rtol=rtol if rtol is not None else (
        10 * _tol_dtype(x) if fname in _MOMENTS + ["prod", "nanprod"] else None),
        atol=atol)


@prop(n=15, slow=200, data=st.data())
def test_reductions_where_initial(data):
  shape = data.draw(hs.shapes(1, 3), label="shape")
  x = draw_array(data, ["int8", "uint8", "int32", "float32", "bfloat16", "bool"], shape=shape,
                 min_value=-50, max_value=50)
  mshape = data.draw(st.sampled_from([shape, shape[1:], (1,) * len(shape), ()]), label="mshape")
  where = data.draw(hs.arrays("bool", mshape), label="where")
  axis = data.draw(hs.axes_for(x.ndim), label="axis")
  fname = data.draw(st.sampled_from(["sum", "prod", "max", "min", "mean", "var", "all", "any",
                                     "nansum", "nanmax", "nanmean", "std"]), label="f")
  kw = dict(where=where, axis=axis)
  if fname in ("sum", "prod", "max", "min", "nansum", "nanmax"):
    if fname in ("max", "min", "nanmax") or data.draw(st.booleans()):
      # (no negative initial for unsigned inputs: JAX's own float->uint conversion of
      # negative values differs between eager (0) and jit (wraps))
      lo = 0 if x.dtype.kind in "ub" else -3
      kw["initial"] = data.draw(st.one_of(st.integers(lo, 3), st.floats(lo, 3, width=32)),
                                label="initial")
  f = lambda jnp, x, where: getattr(jnp, fname)(x, **{**kw, "where": where})
  f.__name__ = fname
  check(f, x, where, rtol=2e-2 if x.dtype == hs.bf16 else 1e-5, atol=_atol(x, 10))


@prop(n=15, slow=200, data=st.data(), x64=st.booleans())
def test_argmax_argmin(data, x64):
  with x64_mode(x64):
    x = draw_array(data, hs.REAL + ["complex64"], min_value=-3, max_value=3)
    axis = data.draw(st.one_of(st.none(), hs.axis_for(x.ndim) if x.ndim else st.none()),
                     label="axis")
    keepdims = data.draw(st.sampled_from([None, False, True]), label="keepdims")
    fname = data.draw(st.sampled_from(["argmax", "argmin", "nanargmax", "nanargmin"]),
                      label="f")
    f = lambda jnp, x: getattr(jnp, fname)(x, axis=axis, keepdims=keepdims)
    f.__name__ = fname
    check(f, x)


@prop(n=20, slow=250, data=st.data(), x64=st.booleans())
def test_cumulative(data, x64):
  with x64_mode(x64):
    x = draw_array(data, min_value=-4, max_value=4)
    fname = data.draw(st.sampled_from(["cumsum", "cumprod", "nancumsum", "nancumprod",
                                       "cumulative_sum", "cumulative_prod"]), label="f")
    if fname.startswith("cumulative"):
      axis = data.draw(st.none() if x.ndim <= 1 else hs.axis_for(x.ndim), label="axis")
      kw = dict(axis=axis, include_initial=data.draw(st.booleans(), label="include_initial"))
    else:
      kw = dict(axis=data.draw(st.one_of(st.none(), hs.axis_for(x.ndim) if x.ndim
                                         else st.none()), label="axis"))
    if data.draw(st.booleans(), label="dtype?"):
      kw["dtype"] = data.draw(st.sampled_from(["float32", "int32", "int8", "bool"]), label="dt")
    f = lambda jnp, x: getattr(jnp, fname)(x, **kw)
    f.__name__ = fname
    check(f, x, rtol=2e-2 if x.dtype in (np.float16, hs.bf16) or "dtype" in kw else 1e-5,
          atol=_atol(x, 1e3 if "prod" in fname else 1))


@prop(n=12, slow=150, data=st.data())
def test_reductions_python_scalars(data):
  """Reductions of Python scalars: JAX's weak types carry through some and not others."""
  s = data.draw(hs.python_scalars(), label="s")
  fname = data.draw(st.sampled_from(["sum", "prod", "max", "min", "mean", "var", "all", "any",
                                     "cumsum", "argmax", "ptp", "std", "nansum", "median"]),
                    label="f")
  check(lambda jnp: getattr(jnp, fname)(s))


@prop(n=12, slow=150, data=st.data())
def test_median(data):
  # (0-d inputs with keepdims=True: see test_median_0d_keepdims)
  x = draw_array(data, ["int32", "float32", "float16", "bool"], min_value=-10, max_value=10,
                 shape=data.draw(hs.shapes(1, 3), label="shape"))
  axis = data.draw(st.one_of(st.none(), hs.axis_for(x.ndim) if x.ndim else st.none()),
                   label="axis")
  keepdims = data.draw(st.booleans(), label="keepdims")
  fname = data.draw(st.sampled_from(["median", "nanmedian"]), label="f")
  check(lambda jnp, x: getattr(jnp, fname)(x, axis=axis, keepdims=keepdims), x,
        rtol=2e-3 if x.dtype == np.float16 else None)


@pytest.mark.parametrize("fname", ["median", "nanmedian", "quantile", "percentile", "nanquantile", "nanpercentile"])
def test_median_0d_keepdims(fname):
  x = np.float32(3.0)
  q = {"quantile": (0.5,), "percentile": (50.0,), "nanquantile": (0.5,),
       "nanpercentile": (50.0,)}.get(fname, ())
  check(lambda jnp, x: getattr(jnp, fname)(x, *q, keepdims=True), np.asarray(x))
  if q:   # 1-D q, and an empty axis tuple
    check(lambda jnp, x: getattr(jnp, fname)(x, np.array([q[0], q[0] / 2], np.float32),
                                             keepdims=True), np.asarray(x))
    check(lambda jnp, x: getattr(jnp, fname)(x, *q, axis=(), keepdims=True), np.asarray(x))


@pytest.mark.parametrize("fname", ["quantile", "nanquantile"])
@pytest.mark.parametrize("shape,axis,keepdims,qs", [
    ((0,), None, False, 0.5), ((0,), None, True, 0.5), ((0,), None, False, [0.5, 0.2]),
    ((0,), 0, False, 0.5), ((2, 0), 1, False, 0.5), ((2, 0), None, False, 0.5),
    ((0, 3), 1, False, 0.5), ((0, 3), 1, True, 0.5), ((0, 3), 0, False, 0.5),
    ((0, 3), (0, 1), False, 0.5), ((2, 0, 3), (1,), False, 0.5),
    ((2, 0, 3), (1, 2), False, 0.5), ((0, 2), (1,), False, [0.5])])
@pytest.mark.parametrize("method", ["linear", "inverted_cdf"])
def test_quantile_empty_axis(fname, shape, axis, keepdims, qs, method):
  """An empty reduced axis raises JAX's errors (a gather's TypeError for quantile;
  nanquantile's integer indexing raises IndexError for a scalar result)."""
  check(lambda jnp, x: getattr(jnp, fname)(x, np.array(qs, np.float32), axis=axis,
                                           keepdims=keepdims, method=method),
        np.zeros(shape, np.float32), message=True)


def test_complex_nan_max():
  """XLA folds complex max/min with a lexicographic comparison in which NaN compares false
  (JAX: 1+nanj here): the result depends on XLA's reduction order."""
  x = np.array([2 + 1j, complex(np.nan, -np.inf), complex(1, np.nan)], np.complex64)
  check(lambda jnp, x: (jnp.max(x), jnp.min(x)), x)
  for v in ([complex(-np.inf, -1)], [complex(-np.inf, -1)] * 3, [[complex(np.inf, 1)]] * 2):
    check(lambda jnp, x: (jnp.max(x), jnp.min(x), jnp.max(x, axis=-1), jnp.min(x, axis=0)),
          np.array(v, np.complex64))


@pytest.mark.parametrize("n", [8, 33, 40, 100, 1100])
def test_complex_nan_max_order(n):
  """A NaN at every position of decreasing values: which elements are folded after it
  (XLA's tree of windows of 32 that skip their padding) shows in the result."""
  ks = np.arange(0, n, max(1, n // 40))
  v = np.tile(np.arange(n, 0, -1).astype(np.complex64), (len(ks), 1))
  v[np.arange(len(ks)), ks] = np.nan      # row i: a NaN at position ks[i]
  check(lambda jnp, v: (jnp.max(v, axis=1), jnp.min(-v, axis=1), jnp.max(v.T, axis=0)), v)
  check(lambda jnp, v: (jnp.max(v), jnp.min(v)), v[len(ks) // 2])


def test_complex_nan_max_axes():
  rng = np.random.default_rng(0)
  vals = np.array([0, 1, np.nan, np.inf, -np.inf, 2], np.float32)
  for shape, axis in [((3, 40), 1), ((40, 3), 0), ((5, 7, 9), (0, 2)), ((50, 40), None),
                      ((70, 3, 40), (0, 2))]:
    x = np.empty(shape, np.complex64)
    x.real, x.imag = rng.choice(vals, shape), rng.choice(vals, shape)
    check(lambda jnp, x: (jnp.max(x, axis=axis), jnp.min(x, axis=axis)), x)


def test_nanmedian_empty_error():
  check(lambda jnp, x: jnp.nanmedian(x), np.zeros((0,), np.float32))


@pytest.mark.parametrize("fname", ["prod", "nanprod"])
def test_prod_no_axes_complex_inf(fname):
  """A reduction over no axes returns the operand unchanged (no fold with the identity)."""
  check(lambda jnp, x: getattr(jnp, fname)(x, axis=()), np.array([np.inf, 1], np.complex64))
  check(lambda jnp, x: getattr(jnp, fname)(x, axis=()),
        np.array([[complex(np.inf, -0.0), complex(-0.0, np.nan)]] * 40, np.complex64))


@pytest.mark.parametrize("fname", ["sum", "nansum", "mean"])
def test_sum_no_axes_negative_zero(fname):
  r = check(lambda jnp, x: getattr(jnp, fname)(x, axis=()),
            np.array([-0.0, 1.0, np.inf], np.float32))
  assert np.signbit(np.asarray(r)[0])   # -0 stays -0, as in JAX
  check(lambda jnp, x: getattr(jnp, fname)(x, axis=()),
        np.array([complex(-0.0, -0.0)] * 3, np.complex64))


@prop(n=20, slow=200, data=st.data())
def test_grad_reductions(data):
  x = draw_array(data, ["float32"], shape=data.draw(hs.shapes(1, 3, max_side=3)),
                 min_value=-3, max_value=3, allow_nan=False, allow_inf=False)
  fname = data.draw(st.sampled_from(["sum", "prod", "max", "min", "mean", "var", "std",
                                     "cumsum", "cumprod", "ptp", "nansum", "nanmean",
                                     "amax", "logsumexp"]), label="f")
  axis = data.draw(st.one_of(st.none(), hs.axis_for(x.ndim)), label="axis")
  if data.draw(st.booleans(), label="ties"):
    x = np.round(x)            # ties and zeros (max/min/prod subgradients)
  w = (np.arange(x.size, dtype=np.float32).reshape(x.shape) % 5 - 2)

  def f(jnp, x):
    if fname == "logsumexp":
      import importlib
      special = importlib.import_module(jnp.__name__.split(".")[0] + ".scipy.special")
      y = special.logsumexp(x, axis=axis)
    else:
      y = getattr(jnp, fname)(x, axis=axis)
    return jnp.sum(y * jnp.sum(w))
  check_grad(f, x, rtol=1e-4, atol=1e-4)
