"""Property-based differential tests (hypothesis) for jnp array creation and dtype helpers
against real JAX: array/asarray of Python scalars, nested lists and NumPy arrays (weak
types, dtype=, ndmin=, overflow), zeros/ones/full(_like), arange, linspace/logspace/
geomspace, eye/identity/tri/tril/triu, diag/diagflat, meshgrid, array_equal/array_equiv,
and the dtype API (promote_types, result_type, can_cast, issubdtype, isdtype, finfo,
iinfo) -- with x64 on and off; grads through linspace and tril/triu/diag."""
import numpy as np
import pytest
from hypothesis import strategies as st

import hypothesis_strategies as hs
from hypothesis_strategies import check, check_grad, draw_array, prop, x64_mode

jax = pytest.importorskip("jax")

import pyjax.numpy as pjnp  # noqa: E402


_DTYPE_ARGS = [None, "bool", "int8", "uint8", "int16", "int32", "int64", "uint32", "uint64",
               "float16", "bfloat16", "float32", "float64", "complex64", "complex128", int,
               float, complex, bool]


def _dtype_arg(name):
  """A dtype argument as a user would write it (a string, a Python type or jnp's type)."""
  if name is None or isinstance(name, type):
    return name
  return getattr(pjnp, name), getattr(jax.numpy, name)


def _pick(dt, jnp):
  """The module-specific spelling of a dtype argument."""
  if isinstance(dt, tuple):
    return dt[0] if jnp is pjnp else dt[1]
  return dt


@st.composite
def nested(draw, depth=2):
  """Python scalars or (rectangular) nested lists of them, maybe with NumPy scalars."""
  leaf = st.one_of(hs.python_scalars("bifc"), st.just(np.float32(1.5)), st.just(np.int8(3)),
                   st.just(np.uint16(7)), st.just(np.bool_(True)))
  shape = draw(hs.shapes(0, depth, max_side=3))
  kind = draw(st.sampled_from(["b", "i", "f", "c", "mixed"]))
  leaf = {"b": st.booleans(), "i": st.integers(-50, 50),
          "f": hs.python_scalars("f"), "c": hs.python_scalars("c"), "mixed": leaf}[kind]

  def build(s):
    if not s:
      return draw(leaf)
    return [build(s[1:]) for _ in range(s[0])]
  return build(shape)


@prop(n=30, slow=400, data=st.data(), x64=st.booleans())
def test_array_asarray(data, x64):
  with x64_mode(x64):
    obj = data.draw(st.one_of(nested(), hs.python_scalars("bifcI"),
                              hs.shapes().flatmap(lambda s: hs.arrays(
                                  data.draw(st.sampled_from(hs.ALL)), s))), label="obj")
    dt = _dtype_arg(data.draw(st.sampled_from(_DTYPE_ARGS), label="dtype"))
    ndmin = data.draw(st.integers(0, 3), label="ndmin")
    check(lambda jnp: jnp.array(obj, dtype=_pick(dt, jnp), ndmin=ndmin))
    check(lambda jnp: jnp.asarray(obj, dtype=_pick(dt, jnp)))


@prop(n=15, slow=300, data=st.data(), x64=st.booleans())
def test_full_zeros_ones(data, x64):
  with x64_mode(x64):
    shape = data.draw(st.one_of(hs.shapes(), st.integers(0, 3)), label="shape")
    dt = _dtype_arg(data.draw(st.sampled_from(_DTYPE_ARGS), label="dtype"))
    fill = data.draw(st.one_of(hs.python_scalars("bifc"),
                               hs.arrays("float32", ()), hs.arrays("int8", (1,)),
                               hs.arrays("bool", ())), label="fill")
    check(lambda jnp: (jnp.zeros(shape, _pick(dt, jnp)), jnp.ones(shape, _pick(dt, jnp)),
                       jnp.empty(shape, _pick(dt, jnp))), jit=True)
    check(lambda jnp: jnp.full(shape, fill, _pick(dt, jnp)), jit=True)
    x = draw_array(data, label="like")
    lshape = data.draw(st.one_of(st.none(), hs.shapes()), label="like_shape")
    check(lambda jnp, x: (jnp.zeros_like(x, _pick(dt, jnp), shape=lshape),
                          jnp.ones_like(x, _pick(dt, jnp), shape=lshape),
                          jnp.empty_like(x, _pick(dt, jnp), shape=lshape)), x)
    check(lambda jnp, x: jnp.full_like(x, fill, _pick(dt, jnp), shape=lshape), x)


_NUMBERS = st.one_of(st.integers(-6, 6), st.floats(-6, 6, width=32, allow_subnormal=False),
                     st.sampled_from([np.float32(2.5), np.int16(-3), np.uint8(4),
                                      np.float64(1.25)]))


@prop(n=25, slow=300, data=st.data(), x64=st.booleans())
def test_arange(data, x64):
  with x64_mode(x64):
    start = data.draw(_NUMBERS, label="start")
    stop = data.draw(st.one_of(st.none(), _NUMBERS), label="stop")
    step = data.draw(st.one_of(st.none(), _NUMBERS.filter(lambda v: abs(v) > 0.2),
                               st.just(0)), label="step")
    if stop is None:
      step = None
    dt = _dtype_arg(data.draw(st.sampled_from([None, "int32", "float32", "int8", "float16",
                                               "uint8", float, int]), label="dtype"))
    # a float step gives ceil((stop-start)/step) elements; JAX and NumPy compute it in
    # double precision, so both must agree exactly on the length
    check(lambda jnp: jnp.arange(start, stop, step, dtype=_pick(dt, jnp)), rtol=1e-6,
          atol=1e-6, jit=True)


@prop(n=15, slow=300, data=st.data(), x64=st.booleans())
def test_linspace_logspace_geomspace(data, x64):
  with x64_mode(x64):
    s1, s2 = data.draw(hs.broadcastable_shapes(2, 0, 2, 2), label="shapes")
    start = data.draw(st.one_of(_NUMBERS, hs.arrays("float32", s1, min_value=-5,
                                                    max_value=5)), label="start")
    stop = data.draw(st.one_of(_NUMBERS, hs.arrays("int32", s2, min_value=-5, max_value=5)),
                     label="stop")
    num = data.draw(st.integers(0, 6), label="num")
    endpoint = data.draw(st.booleans(), label="endpoint")
    dt = _dtype_arg(data.draw(st.sampled_from([None, "float32", "int32", "float16",
                                               "complex64"]), label="dtype"))
    if dt is not None and dt[0] in (pjnp.complex64, pjnp.complex128):
      # (complex: XLA multiplies by the real interpolation weights without the 0*inf
      # cross terms of a complex product, so non-finite bounds give implementation-defined
      # imaginary parts)
      start = np.nan_to_num(start) if isinstance(start, np.ndarray) else start
    nd = len(np.broadcast_shapes(np.shape(start), np.shape(stop)))
    axis = data.draw(st.integers(-nd - 1, nd), label="axis")
    # float16: XLA keeps excess precision between the ops of the interpolation (and the
    # exact rounding points are not specified), so allow a few float16 ulps
    tol = 1e-2 if dt is not None and dt[0] is pjnp.float16 else 1e-5
    check(lambda jnp: jnp.linspace(start, stop, num, endpoint=endpoint, retstep=True,
                                   dtype=_pick(dt, jnp), axis=axis), rtol=tol, atol=tol,
          jit=True)
    check(lambda jnp: jnp.logspace(start, stop, num, endpoint=endpoint, base=2.0,
                                   dtype=_pick(dt, jnp), axis=axis), rtol=10 * tol, atol=tol,
          jit=True)
    g0 = data.draw(st.sampled_from([1.0, 2, -3.0, 0.5, 1j, -1.0]), label="g0")
    g1 = data.draw(st.sampled_from([8.0, 3, -0.5, 1000, 2j, 1.0]), label="g1")
    check(lambda jnp: jnp.geomspace(g0, g1, num, endpoint=endpoint, dtype=_pick(dt, jnp)),
          rtol=10 * tol, atol=tol, jit=True)


@prop(n=15, slow=300, data=st.data(), x64=st.booleans())
def test_eye_tri_diag(data, x64):
  with x64_mode(x64):
    n = data.draw(st.integers(0, 4), label="N")
    m = data.draw(st.one_of(st.none(), st.integers(0, 4)), label="M")
    k = data.draw(st.integers(-5, 5), label="k")
    dt = _dtype_arg(data.draw(st.sampled_from(_DTYPE_ARGS), label="dtype"))
    check(lambda jnp: (jnp.eye(n, m, k, dtype=_pick(dt, jnp)), jnp.tri(n, m, k, _pick(dt, jnp)),
                       jnp.identity(n, _pick(dt, jnp))), jit=True)
    x = draw_array(data, shape=data.draw(hs.shapes(0, 3), label="shape"))
    check(lambda jnp, x: (jnp.tril(x, k), jnp.triu(x, k)), x)
    check(lambda jnp, x: (jnp.diag(x, k), jnp.diagflat(x, k)), x)


@prop(n=15, slow=200, data=st.data())
def test_meshgrid(data):
  xs = [draw_array(data, shape=data.draw(hs.shapes(0, 2, max_side=3)), label=f"x{i}")
        for i in range(data.draw(st.integers(0, 3), label="n"))]
  indexing = data.draw(st.sampled_from(["xy", "ij"]), label="indexing")
  sparse = data.draw(st.booleans(), label="sparse")
  check(lambda jnp, *xs: jnp.meshgrid(*xs, indexing=indexing, sparse=sparse), *xs)


@prop(n=10, slow=200, data=st.data())
def test_array_equal_equiv(data):
  s1, s2 = data.draw(hs.broadcastable_shapes(2), label="shapes")
  a = draw_array(data, shape=s1, label="a", min_value=-1, max_value=1)
  b = data.draw(st.one_of(st.just(a), hs.arrays("float32", s2, min_value=-1, max_value=1)),
                label="b")
  equal_nan = data.draw(st.booleans(), label="equal_nan")
  check(lambda jnp, a, b: (jnp.array_equal(a, b, equal_nan=equal_nan), jnp.array_equiv(a, b)),
        a, b, jit=False)


# --- the dtype API (no computation: pure Python, cheap, many examples) ----------------------
_DT_NAMES = hs.ALL


def _dts(jnp_mod, names):
  return [getattr(jnp_mod, n if n != "bool" else "bool_") for n in names]


def test_promote_types_table():
  """promote_types over every pair of dtypes (with x64 on and off)."""
  jnp = jax.numpy
  for x64 in (False, True):
    with x64_mode(x64):
      for a in _DT_NAMES:
        for b in _DT_NAMES:
          want = jnp.promote_types(a, b)
          got = pjnp.promote_types(a, b)
          assert np.dtype(got) == np.dtype(want), (x64, a, b, got, want)


def _result_type_args(data):
  out = []
  for i in range(data.draw(st.integers(1, 4), label="nargs")):
    kind = data.draw(st.sampled_from(["dtype", "scalar", "array", "npscalar", "type"]),
                     label=f"kind{i}")
    if kind == "dtype":
      out.append(("dtype", data.draw(st.sampled_from(_DT_NAMES))))
    elif kind == "scalar":
      out.append(("scalar", data.draw(hs.python_scalars("bifc"))))
    elif kind == "array":
      out.append(("array", data.draw(st.sampled_from(_DT_NAMES))))
    elif kind == "npscalar":
      out.append(("npscalar", data.draw(st.sampled_from(_DT_NAMES))))
    else:
      out.append(("type", data.draw(st.sampled_from([int, float, complex, bool]))))
  return out


def _materialize(jnp, spec):
  kind, v = spec
  if kind == "dtype":
    return np.dtype(hs.np_dtype(v))
  if kind == "array":
    return jnp.zeros((2,), v)
  if kind == "npscalar":
    return hs.np_dtype(v).type(1)
  return v


@prop(n=60, slow=600, data=st.data(), x64=st.booleans())
def test_result_type(data, x64):
  with x64_mode(x64):
    specs = _result_type_args(data)
    check(lambda jnp: jnp.result_type(*[_materialize(jnp, s) for s in specs]))


@prop(n=60, slow=600, data=st.data(), x64=st.booleans())
def test_can_cast_issubdtype_isdtype(data, x64):
  with x64_mode(x64):
    a = data.draw(st.sampled_from(_DT_NAMES), label="a")
    b = data.draw(st.sampled_from(_DT_NAMES), label="b")
    casting = data.draw(st.sampled_from(["no", "equiv", "safe", "same_kind", "unsafe"]),
                        label="casting")
    check(lambda jnp: jnp.can_cast(a, b, casting=casting))
    abstract = data.draw(st.sampled_from(["generic", "number", "integer", "signedinteger",
                                          "unsignedinteger", "inexact", "floating",
                                          "complexfloating", "bool_"]), label="abstract")
    check(lambda jnp: (jnp.issubdtype(a, getattr(jnp, abstract)), jnp.issubdtype(a, b)))
    kind = data.draw(st.sampled_from(["bool", "signed integer", "unsigned integer",
                                      "integral", "real floating", "complex floating",
                                      "numeric", ("integral", "real floating")]), label="kind")
    check(lambda jnp: jnp.isdtype(hs.np_dtype(a), kind))


@pytest.mark.parametrize("name", _DT_NAMES)
def test_finfo_iinfo(name):
  jnp = jax.numpy
  dt = hs.np_dtype(name)
  if dt.kind in "fc" or dt == hs.bf16:
    fields = ["bits", "eps", "epsneg", "max", "min", "tiny", "smallest_normal", "resolution",
              "precision", "nmant", "nexp", "maxexp", "minexp", "machep", "negep", "iexp",
              "dtype", "smallest_subnormal"]
    got, want = pjnp.finfo(name), jnp.finfo(name)
  elif dt.kind in "iu":
    fields = ["bits", "min", "max", "dtype", "kind"]
    got, want = pjnp.iinfo(name), jnp.iinfo(name)
  else:
    with pytest.raises(ValueError):
      pjnp.finfo(name)
    return
  for f in fields:
    g, w = getattr(got, f), getattr(want, f)
    assert type(g) is type(w) or (isinstance(g, np.generic) and isinstance(w, np.generic)), (
        f, type(g), type(w))
    if isinstance(w, np.generic) or isinstance(w, (int, float)):
      assert np.asarray(g).dtype == np.asarray(w).dtype, (f, g, w)
      np.testing.assert_equal(np.asarray(g, np.float64) if np.asarray(g).dtype == hs.bf16
                              else g, np.asarray(w, np.float64)
                              if np.asarray(w).dtype == hs.bf16 else w)
    else:
      assert g == w, (f, g, w)


# --- grads ---------------------------------------------------------------------------------
@prop(n=12, slow=120, data=st.data())
def test_grad_creation(data):
  x = draw_array(data, ["float32"], shape=data.draw(hs.nonempty_shapes(1, 2, max_side=3)),
                 min_value=-3, max_value=3, allow_nan=False, allow_inf=False)
  k = data.draw(st.integers(-2, 2), label="k")
  op = data.draw(st.sampled_from(["tril", "triu", "diag", "linspace", "full_like", "asarray",
                                  "diagflat", "meshgrid"]), label="op")

  def f(jnp, x):
    if op in ("tril", "triu", "diag", "diagflat"):
      y = getattr(jnp, op)(x, k)
    elif op == "linspace":
      y = jnp.linspace(x, 2 * x + 1, 4, axis=-1)
    elif op == "full_like":
      y = jnp.full_like(x, 2.0) * x
    elif op == "meshgrid":
      y = jnp.stack(jnp.meshgrid(x.ravel(), x.ravel() ** 2))
    else:
      y = jnp.asarray([x, x * 2]) + jnp.array(x)
    return jnp.sum(y * (1 + jnp.arange(y.size).reshape(y.shape) % 3))
  check_grad(f, x, rtol=1e-5, atol=1e-5)

