"""Property-based differential tests (hypothesis) for jnp elementwise functions (ufuncs)
against real JAX: unary functions on every dtype with NaN/inf/-0.0 inputs, binary
functions with broadcasting, mixed-dtype promotion (x64 on and off) and Python scalars
(weak types, overflowing ints), integer division/shift edge cases, comparisons and logical
ops; grads of the differentiable ones."""

import functools

import numpy as np
import pytest
from hypothesis import strategies as st

import hypothesis_strategies as hs
from hypothesis_strategies import check, check_grad, prop, x64_mode

jax = pytest.importorskip("jax")


draw_array = functools.partial(hs.draw_array, max_dims=2)


def _rtol(x, factor=1.0):
  """Tolerance for x's computation dtype (after x64 canonicalization)."""
  name = hs.canonical(np.dtype(x.dtype).name) if hasattr(x, "dtype") else "float32"
  base = {"bfloat16": 1e-2, "float16": 2e-3, "float32": 2e-6, "complex64": 2e-6,
          "float64": 1e-13, "complex128": 1e-13}.get(name, 2e-6)
  return base * factor


# name -> (input range, tolerance factor); None range = anything
_UNARY_REAL = {
    "negative": (None, 1), "positive": (None, 1), "abs": (None, 1), "absolute": (None, 1),
    "fabs": (None, 1), "sign": (None, 1), "floor": (None, 1), "ceil": (None, 1),
    "trunc": (None, 1), "rint": (None, 1), "round": (None, 1), "fix": (None, 1),
    "square": (None, 1), "sqrt": (None, 2), "cbrt": ((-1e6, 1e6), 4),
    "reciprocal": (None, 1), "exp": ((-80, 80), 4), "exp2": ((-100, 100), 4),
    "expm1": ((-80, 80), 4), "log": (None, 4), "log1p": ((-2, 1e6), 4), "log2": (None, 4),
    "log10": (None, 4), "sin": ((-1e4, 1e4), 8), "cos": ((-1e4, 1e4), 8),
    "tan": ((-1.5, 1.5), 8), "arcsin": ((-1.5, 1.5), 4), "arccos": ((-1.5, 1.5), 4),
    "arctan": (None, 4), "sinh": ((-80, 80), 4), "cosh": ((-80, 80), 4),
    "tanh": ((-20, 20), 4), "arcsinh": ((-1e6, 1e6), 4), "arccosh": ((0, 1e6), 4),
    "arctanh": ((-1.5, 1.5), 4), "deg2rad": (None, 1), "rad2deg": (None, 1),
    "degrees": (None, 1), "radians": (None, 1), "isnan": (None, 1), "isinf": (None, 1),
    "isfinite": (None, 1), "signbit": (None, 1), "logical_not": (None, 1),
    "sinc": ((-100, 100), 16), "i0": ((-50, 50), 16), "conjugate": (None, 1),
    "real": (None, 1), "imag": (None, 1), "angle": (None, 4), "isreal": (None, 1),
    "iscomplex": (None, 1), "isneginf": (None, 1), "isposinf": (None, 1),
    "spacing": (None, 1), "frexp": (None, 1), "modf": (None, 1), "bitwise_not": (None, 1),
    "invert": (None, 1), "bitwise_count": (None, 1),
}

_UNARY_COMPLEX = ["negative", "abs", "sign", "square", "sqrt", "reciprocal", "exp", "log",
                  "log1p", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin",
                  "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "conjugate", "real",
                  "imag", "angle", "isnan", "isinf", "isfinite", "log2", "log10", "exp2"]


def _call_unary(jnp, name, x):
  return getattr(jnp, name)(x)


@prop(n=40, slow=500, data=st.data(), x64=st.booleans())
def test_unary_real(data, x64):
  with x64_mode(x64):
    name = data.draw(st.sampled_from(sorted(_UNARY_REAL)), label="f")
    rng, factor = _UNARY_REAL[name]
    lo, hi = rng if rng else (None, None)
    x = draw_array(data, hs.REAL, min_value=lo, max_value=hi)
    f = lambda jnp, x: getattr(jnp, name)(x)
    f.__name__ = name
    check(f, x, rtol=_rtol(x, factor), atol=_rtol(x, factor))


@prop(n=20, slow=300, data=st.data(), x64=st.booleans())
def test_unary_complex(data, x64):
  """Complex inputs (finite values: NaN/inf handling of complex transcendental functions is
  implementation-defined in XLA)."""
  with x64_mode(x64):
    name = data.draw(st.sampled_from(_UNARY_COMPLEX), label="f")
    x = draw_array(data, hs.COMPLEX, min_value=-8, max_value=8, allow_nan=False,
                   allow_inf=False)
    f = lambda jnp, x: getattr(jnp, name)(x)
    f.__name__ = name
    check(f, x, rtol=_rtol(x, 64), atol=_rtol(x, 64))


@prop(n=10, slow=100, data=st.data())
def test_unary_python_scalars(data):
  name = data.draw(st.sampled_from(["negative", "abs", "sign", "floor", "sqrt", "exp", "sin",
                                    "square", "reciprocal", "isnan", "real", "imag", "round",
                                    "conjugate", "logical_not", "tanh", "angle"]), label="f")
  s = data.draw(hs.python_scalars("bifc"), label="s")
  f = lambda jnp: getattr(jnp, name)(s)
  f.__name__ = name
  check(f, rtol=1e-5, atol=1e-6)


_ARITH = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
          "mod", "fmod", "power", "float_power", "maximum", "minimum", "fmax", "fmin",
          "divmod"]
_FLOAT_ONLY = ["arctan2", "hypot", "logaddexp", "logaddexp2", "copysign", "nextafter",
               "heaviside", "ldexp"]
_CMP = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
        "logical_and", "logical_or", "logical_xor"]
_INT_ONLY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd",
             "lcm"]


def _operand(data, shape, dtypes, label, **kw):
  """A NumPy array of one of ``dtypes``, or (one time in four) a Python scalar."""
  if data.draw(st.integers(0, 3), label=label + ".scalar?") == 0:
    kinds = "".join(sorted({"b" if d == "bool" else "i" if d[0] in "iu" else "f" if d[0] in "fb"
                            else "c" for d in dtypes}))
    if "i" in kinds and data.draw(st.integers(0, 4)) == 0:
      kinds += "I"
    return data.draw(hs.python_scalars(kinds), label=label)
  return draw_array(data, dtypes, shape=shape, label=label, **kw)


@prop(n=40, slow=500, data=st.data(), x64=st.booleans())
def test_binary(data, x64):
  with x64_mode(x64):
    group = data.draw(st.sampled_from(["arith", "float", "cmp", "int"]), label="group")
    name = data.draw(st.sampled_from({"arith": _ARITH, "float": _FLOAT_ONLY, "cmp": _CMP,
                                      "int": _INT_ONLY}[group]), label="f")
    s1, s2 = data.draw(hs.broadcastable_shapes(2, max_dims=3, max_side=3), label="shapes")
    dts = {"arith": hs.NUMERIC + hs.BOOL, "float": hs.REAL, "cmp": hs.ALL,
           "int": hs.BOOL + hs.INTS + hs.UINTS}[group]
    if name in ("divmod", "floor_divide", "remainder", "mod", "fmod", "maximum", "minimum",
                "fmax", "fmin"):
      dts = hs.REAL
    bounds = {}
    if name in ("power", "float_power"):
      bounds = dict(min_value=-4, max_value=4)
    elif name in ("left_shift", "right_shift"):
      bounds = dict(min_value=-2, max_value=70)
    elif name in ("gcd", "lcm"):
      bounds = dict(min_value=-1000, max_value=1000)
    elif name == "ldexp":
      bounds = dict(min_value=-20, max_value=20)
    a = _operand(data, s1, dts, "a", **bounds)
    b = _operand(data, s2, dts if name != "ldexp" else hs.INTS, "b", **bounds)
    f = lambda jnp, a, b: getattr(jnp, name)(a, b)
    f.__name__ = name
    ref = np.asarray(a if isinstance(a, np.ndarray) else b)
    factor = 8 if name in ("power", "float_power", "logaddexp", "logaddexp2", "arctan2",
                           "hypot") else 1
    check(f, a, b, rtol=_rtol(ref, factor), atol=_rtol(ref, factor))


@prop(n=12, slow=150, data=st.data())
def test_binary_python_scalars_only(data):
  name = data.draw(st.sampled_from(_ARITH + _CMP + ["arctan2", "hypot", "bitwise_and"]),
                   label="f")
  kinds = "bi" if name == "bitwise_and" else "bif"
  a = data.draw(hs.python_scalars(kinds), label="a")
  b = data.draw(hs.python_scalars(kinds), label="b")
  f = lambda jnp: getattr(jnp, name)(a, b)
  f.__name__ = name
  check(f, rtol=1e-5, atol=1e-6)


@prop(n=12, slow=150, data=st.data(), x64=st.booleans())
def test_integer_division_edge_cases(data, x64):
  """Division, remainder and shifts at zero divisors, INT_MIN / -1 and large shifts, where
  XLA's semantics (not NumPy's) define the result."""
  with x64_mode(x64):
    name = data.draw(st.sampled_from(["floor_divide", "remainder", "fmod", "divmod",
                                      "true_divide", "left_shift", "right_shift", "power"]),
                     label="f")
    dt = data.draw(st.sampled_from(hs.INTS + hs.UINTS), label="dtype")
    info = np.iinfo(hs.np_dtype(dt))
    vals = st.sampled_from(sorted({0, 1, -1 % (info.max + 1) if info.min == 0 else -1,
                                   info.min, info.max, 2, 7, info.bits - 1, info.bits,
                                   info.bits + 1}))
    n = data.draw(st.integers(1, 6), label="n")
    a = np.array(data.draw(st.lists(vals, min_size=n, max_size=n), label="a"), dt)
    b = np.array(data.draw(st.lists(vals, min_size=n, max_size=n), label="b"), dt)
    f = lambda jnp, a, b: getattr(jnp, name)(a, b)
    f.__name__ = name
    check(f, a, b)


@pytest.mark.parametrize("name", ["sqrt", "sin", "true_divide1", "add_float", "modf"])
def test_x32_wide_int_to_float(name):
  f = {"sqrt": lambda jnp, x: jnp.sqrt(x), "sin": lambda jnp, x: jnp.sin(x),
       "true_divide1": lambda jnp, x: jnp.true_divide(x, 1),
       "add_float": lambda jnp, x: jnp.add(x, 1.0), "modf": lambda jnp, x: jnp.modf(x)}[name]
  with x64_mode(False):
    check(f, np.array([2**64 - 1, 3], np.uint64))
    check(f, np.array([2**40 + 3, -2**40], np.int64))


def test_grad_i0_at_zero():
  """jnp.i0 has a custom JVP whose tangent is 0 at x == 0 (abs's subgradient would give 1)."""
  check_grad(lambda jnp, x: jnp.i0(x), np.float32(0.0))
  check_grad(lambda jnp, x: jnp.sum(jnp.i0(x)), np.array([0.0, -0.0, 1.5, -2.0], np.float32))
  check(lambda jnp, x: jax.jvp(jnp.i0, (x,), (jnp.ones_like(x),)) if jnp is jax.numpy
        else __import__("pyjax").jvp(jnp.i0, (x,), (jnp.ones_like(x),)),
        np.array([0.0, 3.0], np.float32))


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_custom_jvp(name):
  """jnp.logaddexp/logaddexp2 are custom_jvp functions in JAX: equal arguments get 0.5
  each, (inf, inf) gets 1 each, (-inf, -inf) NaN; tangents and jaxprs match."""
  inf, nan = np.inf, np.nan
  a = np.array([-inf, 1, inf, 0, -inf, nan, inf, 3, -2], np.float32)
  b = np.array([-inf, 1, inf, -inf, 2, 1, -inf, 1, -2], np.float32)
  check_grad(lambda jnp, a, b: jnp.sum(getattr(jnp, name)(a, b)), a, b, argnums=(0, 1),
             rtol=1e-5)
  for i in range(len(a)):      # scalars: weak and strong, one at a time
    check_grad(lambda jnp, a, b: getattr(jnp, name)(a, b), a[i], b[i], argnums=(0, 1),
               rtol=1e-5)

  def jvp(jnp, a, b):
    j = jax if jnp is jax.numpy else __import__("pyjax")
    return j.jvp(getattr(jnp, name), (a, b), (jnp.ones_like(a), 2 * jnp.ones_like(b)))
  check(jvp, a, b, rtol=1e-5)
  check(jvp, a.astype(np.complex64) + 1j, b.astype(np.complex64), rtol=1e-5)
  import re
  import pyjax

  def text(j, f, args):
    s = str(j.make_jaxpr(f)(*args))
    # (pyjax's printer names a let-bound jaxpr after its function, JAX calls it "jaxpr")
    for n in re.findall(r"^let (\w+) = ", s, re.M):
      s = re.sub(rf"\b(let |call_jaxpr=){n}\b", r"\1jaxpr", s)
    return s
  for args in [(1.0, 2.0), (1, 2.0), (np.float32(1), 2)]:
    grads = all(isinstance(a, (float, np.floating)) for a in args)   # (grad: float inputs)
    for trans in [lambda j, f: f] + [lambda j, f: j.grad(f, argnums=(0, 1))] * grads:
      want = text(jax, trans(jax, getattr(jax.numpy, name)), args)
      got = text(pyjax, trans(pyjax, getattr(pyjax.numpy, name)), args)
      assert got == want, (args, got, want)


_GRAD_UNARY = ["sin", "cos", "tan", "exp", "expm1", "log1p", "tanh", "sinh", "cosh",
               "arctan", "arcsinh", "sqrt", "cbrt", "abs", "square", "reciprocal", "log",
               "sinc", "exp2", "log2", "log10", "deg2rad", "negative", "sign", "floor", "i0",
               "arccos", "arcsin", "arctanh", "arccosh", "logaddexp", "hypot", "arctan2",
               "power", "maximum", "minimum", "true_divide", "fmax", "copysign", "heaviside",
               "remainder", "float_power", "logaddexp2", "where_div"]


@prop(n=25, slow=300, data=st.data())
def test_grad_elementwise(data):
  name = data.draw(st.sampled_from(_GRAD_UNARY), label="f")
  lo, hi = -3.0, 3.0
  if name in ("log", "sqrt", "log2", "log10", "power", "float_power", "arccosh"):
    lo, hi = (1.1, 4.0) if name == "arccosh" else (0.1, 4.0)
  if name in ("arccos", "arcsin", "arctanh"):
    lo, hi = -0.9, 0.9
  if name == "cbrt":
    lo, hi = 0.1, 4.0
  if name == "tan":
    lo, hi = -1.4, 1.4
  x = draw_array(data, ["float32"], shape=data.draw(hs.shapes(0, 2, max_side=3)),
                 min_value=lo, max_value=hi, allow_nan=False, allow_inf=False)
  if data.draw(st.booleans(), label="ties"):
    x = np.round(x)          # zeros, ties and integer points (abs, sign, floor, maximum, ...)
    if lo > 0:
      x = np.maximum(x, lo).astype(np.float32)

  y = np.float32(1.5)

  def f(jnp, x):
    if name == "where_div":      # the classic double-where NaN trap
      safe = jnp.where(x == 0, 1.0, x)
      out = jnp.where(x == 0, 0.0, 1.0 / safe)
    elif name in ("logaddexp", "hypot", "arctan2", "power", "maximum", "minimum",
                  "true_divide", "fmax", "copysign", "heaviside", "remainder", "float_power",
                  "logaddexp2"):
      out = getattr(jnp, name)(x, y) + getattr(jnp, name)(y, x)
    else:
      out = getattr(jnp, name)(x)
    return jnp.sum(out * (1 + jnp.arange(out.size).reshape(out.shape) % 3))
  check_grad(f, x, rtol=1e-4, atol=1e-5)
