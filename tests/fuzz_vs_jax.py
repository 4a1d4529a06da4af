"""Differential fuzzer: random jitted programs on pyjax (both tiers) against real JAX.

A program is a list of ops over a growing pool of values: 1-3 inputs of random dtypes
(every float, int, uint, bool and complex type of the mode; x64 adds the 64-bit ones)
seeded with special values (+-0, +-inf, NaN, subnormals, extremes), then ``n_ops`` ops
drawn from elementwise math (transcendental too), comparisons, casts, reductions,
broadcasts, reshapes, transposes, slicing, gather and scatter (out-of-bounds indices
included), concatenate, pad, cumulative ops, sorting, dot, where and control flow. Each
op is kept only if real JAX accepts it on the current values, so every program is a valid
JAX program; it returns every value it computes.

The program runs jitted on JAX, on pyjax's NumPy tier and on pyjax's native tier (and, with
``--tiers ...,eager``, op by op on pyjax without jit; with ``grad`` and ``vmap``, its
reverse-mode derivative and its vmap over three copies of its inputs, on both jit tiers:
``tests/fuzz_transforms.py``), and
every returned value is compared: dtype, shape and weak type exactly; integers and bools
exactly; floats to a few units of their precision, with NaN, infinity and (for real
floats) the sign of zero exact. A value that differs is checked *locally*: the op that made it is run on JAX
with pyjax's own input values. If that agrees, the difference only grew from a tolerated
upstream rounding difference ("amplified"); otherwise it is a mismatch, reported with its
op, dtypes and the first differing element. Mismatches whose cause is understood are
matched against ``EXPLAINED`` (each entry names its reason, as ``docs/differences.md``
does); the rest are "unexplained".

    python tests/fuzz_vs_jax.py --programs 10000 [--seed 0] [--x64]
                                [--tiers numpy,native,eager,grad,vmap]
                                [--batch 16] [--progress] [--extended]

runs a long campaign and prints the tally (``tests/reliability/test_fuzz_vs_jax.py`` runs a fixed-seed
slice in CI).  ``--batch`` programs run as one jitted function (their tuple of results), so
one XLA compile and one C build serve them all; the local checks of a batch are one more
jitted function.  On one core a program costs about 0.5 s of CPU time.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import traceback

import ml_dtypes
import numpy as np

if __name__ == "__main__":   # one module, whether run or imported (fuzz_transforms imports it)
  sys.modules.setdefault("fuzz_vs_jax", sys.modules[__name__])

# --- inputs -----------------------------------------------------------------------------

DTYPES_32 = ["float16", "bfloat16", "float32", "int8", "int16", "int32", "uint8", "uint16",
             "uint32", "bool", "complex64"]
DTYPES_64 = DTYPES_32 + ["float64", "int64", "uint64", "complex128"]


def np_dtype(name):
  return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _kind(dt):
  dt = np.dtype(dt)
  if dt == np.bool_:
    return "b"
  if dt.kind in "iu":
    return dt.kind
  if dt.kind == "c":
    return "c"
  return "f"   # float16/32/64 and bfloat16 (kind 'V' in ml_dtypes)


def _float_specials(dt):
  fi = ml_dtypes.finfo(dt) if dt == np.dtype(ml_dtypes.bfloat16) else np.finfo(dt)
  tiny = float(fi.smallest_subnormal) if hasattr(fi, "smallest_subnormal") else float(fi.tiny)
  return [0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -tiny, float(fi.tiny), float(fi.max),
          -float(fi.max), 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-3, 100.0]


def random_input(rng, dtypes, shape=None, special=0.35):
  """A NumPy array of a random dtype and shape, a third (``special``) of its elements
  special values."""
  name = rng.choice(dtypes)
  dt = np_dtype(name)
  if shape is None:
    shape = rng.choice([(), (1,), (5,), (3, 4), (4, 3), (2, 3, 2), (8,), (0,), (2, 0)])
  n = int(np.prod(shape, dtype=np.int64))
  k = _kind(dt)
  vals = []
  special_p = special
  for _ in range(n):
    special = rng.random() < special_p
    if k == "b":
      vals.append(rng.random() < 0.5)
    elif k in "iu":
      info = np.iinfo(dt)
      vals.append(rng.choice([0, 1, info.max, info.min, info.max - 1, 2, 3]) if special
                  else rng.randint(max(info.min, -100), min(info.max, 100)))
    elif k == "f":
      vals.append(rng.choice(_float_specials(dt)) if special else rng.gauss(0, 3))
    else:
      comp = np.finfo(dt).dtype
      re = rng.choice(_float_specials(comp)) if special else rng.gauss(0, 3)
      im = rng.choice(_float_specials(comp)) if rng.random() < 0.2 else rng.gauss(0, 3)
      vals.append(complex(re, im))
  if k == "f" or k == "c":
    arr = np.array(vals, dtype=np.complex128 if k == "c" else np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
      arr = arr.astype(dt)
  else:
    arr = np.array(vals, dtype=dt)
  return arr.reshape(shape)


# --- ops ----------------------------------------------------------------------------------
# Each op: (name, arity, params(rng, xs) -> dict or None, fn(m, lax, p, *xs)).  ``m`` is
# jax.numpy or pyjax.numpy, ``lax`` the matching lax.  xs at generation are JAX values.

OPS = {}


def op(name, arity=1, params=None):
  def deco(fn):
    OPS[name] = (arity, params or (lambda rng, xs: {}), fn)
    return fn
  return deco


_UNARY = ["negative", "abs", "exp", "log", "sin", "cos", "tanh", "sqrt", "floor", "ceil",
          "round", "sign", "expm1", "log1p", "square", "reciprocal", "arctan", "sinh",
          "isnan", "isinf", "isfinite", "logical_not", "bitwise_not", "exp2", "log2",
          "arcsinh", "cbrt", "trunc", "conj", "real", "imag", "angle", "signbit"]
for _u in _UNARY:
  op(_u)(lambda m, lax, p, x, _u=_u: getattr(m, _u)(x))

op("logistic")(lambda m, lax, p, x: lax.logistic(x))
op("erf")(lambda m, lax, p, x: lax.erf(x))
op("integer_pow", params=lambda rng, xs: {"y": rng.choice([-2, -1, 0, 2, 3])})(
    lambda m, lax, p, x: lax.integer_pow(x, p["y"]))

_BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "maximum",
          "minimum", "power", "arctan2", "equal", "not_equal", "less", "greater_equal",
          "logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor",
          "left_shift", "right_shift", "nextafter", "hypot", "copysign", "fmod"]
for _b in _BINARY:
  op(_b, 2)(lambda m, lax, p, x, y, _b=_b: getattr(m, _b)(x, y))

op("scalar_op", params=lambda rng, xs: {
    "s": rng.choice([2, -1, 3, 0.5, -1.5, 1e10, True, 1j]),
    "f": rng.choice(["add", "mul", "sub", "rsub", "div", "rdiv", "pow", "max"])})(
    lambda m, lax, p, x: {"add": lambda: x + p["s"], "mul": lambda: x * p["s"],
                          "sub": lambda: x - p["s"], "rsub": lambda: p["s"] - x,
                          "div": lambda: x / p["s"], "rdiv": lambda: p["s"] / x,
                          "pow": lambda: x ** p["s"],
                          "max": lambda: m.maximum(x, p["s"])}[p["f"]]())


_ELEMENTWISE = set(_UNARY) | set(_BINARY) | {"logistic", "erf", "integer_pow", "scalar_op"}


def _cast_params(dtypes):
  return lambda rng, xs: {"dt": rng.choice(dtypes)}


def _reduce_params(rng, xs):
  x = xs[0]
  if x.ndim == 0:
    return {"axis": None}
  return {"axis": rng.choice([None] + list(range(-x.ndim, x.ndim)))}


def _argreduce_params(rng, xs):
  """JAX's argmax/argmin reject complex operands only when lowered (``eval_shape``
  accepts them): such draws are redrawn, after drawing params as before."""
  p = _reduce_params(rng, xs)
  return None if _kind(xs[0].dtype) == "c" else p


for _r in ["sum", "max", "min", "prod", "mean", "any", "all", "argmax", "argmin", "var"]:
  op("reduce_" + _r, params=_argreduce_params if _r.startswith("arg") else _reduce_params)(
      lambda m, lax, p, x, _r=_r: getattr(m, _r)(x, axis=p["axis"]))


def _axis_params(rng, xs):
  return {"axis": rng.randrange(xs[0].ndim)} if xs[0].ndim else None


for _c in ["cumsum", "cumprod"]:
  op(_c, params=_axis_params)(lambda m, lax, p, x, _c=_c: getattr(m, _c)(x, axis=p["axis"]))
op("cummax", params=_axis_params)(lambda m, lax, p, x: lax.cummax(x, axis=p["axis"]))
op("sort", params=_axis_params)(lambda m, lax, p, x: m.sort(x, axis=p["axis"]))
op("argsort", params=_axis_params)(
    lambda m, lax, p, x: m.argsort(x, axis=p["axis"], stable=True))


def _reshape_params(rng, xs):
  n = xs[0].size
  opts = [(n,), (1, n), (n, 1)]
  for d in (2, 3, 4):
    if n and n % d == 0:
      opts.append((d, n // d))
  return {"shape": rng.choice(opts)}


op("reshape", params=_reshape_params)(lambda m, lax, p, x: m.reshape(x, p["shape"]))
op("transpose", params=lambda rng, xs: {"perm": rng.sample(range(xs[0].ndim), xs[0].ndim)})(
    lambda m, lax, p, x: m.transpose(x, p["perm"]))
op("broadcast", params=lambda rng, xs: {"n": rng.choice([1, 2, 3])})(
    lambda m, lax, p, x: m.broadcast_to(x, (p["n"],) + x.shape))
op("flip", params=_axis_params)(lambda m, lax, p, x: m.flip(x, axis=p["axis"]))


def _slice_params(rng, xs):
  x = xs[0]
  if x.ndim == 0:
    return None
  n = x.shape[0]
  return {"start": rng.randint(-n - 1, n + 1), "stop": rng.randint(-n - 1, n + 1),
          "step": rng.choice([1, 1, 2, -1, 3])}


op("slice", params=_slice_params)(
    lambda m, lax, p, x: x[p["start"]:p["stop"]:p["step"]])


def _index_params(rng, xs):
  x = xs[0]
  if x.ndim == 0:
    return None
  n = x.shape[0]
  return {"idx": [rng.randint(-n - 2, n + 2) for _ in range(rng.randint(1, 5))],
          "mode": rng.choice([None, "clip", "fill", "promise_in_bounds"])}


def _gather(m, lax, p, x):
  idx = np.array(p["idx"], dtype=np.int32)
  if p["mode"] is None:
    return x[idx]
  if p["mode"] == "promise_in_bounds":   # only defined in bounds: clamp the indices first
    idx = np.clip(idx, -x.shape[0], x.shape[0] - 1)
  return x.at[idx].get(mode=p["mode"])


op("gather", params=_index_params)(_gather)


def _scatter_params(rng, xs):
  p = _index_params(rng, xs[:1])
  if p is None:
    return None
  p["how"] = rng.choice(["set", "add", "mul", "min", "max"])
  p["mode"] = rng.choice([None, "drop", "clip"])
  return p


def _scatter(m, lax, p, x, y):
  idx = np.array(p["idx"], dtype=np.int32)
  upd = m.broadcast_to(m.asarray(y).reshape(-1)[:1].reshape(()) if y.size else
                       m.zeros((), x.dtype), (len(idx),) + x.shape[1:]).astype(x.dtype)
  return getattr(x.at[idx], p["how"])(upd, mode=p["mode"])


op("scatter", 2, params=_scatter_params)(_scatter)
op("concatenate", 2, params=lambda rng, xs: {"axis": 0})(
    lambda m, lax, p, x, y: m.concatenate([m.ravel(x), m.ravel(y)]))


def _pad_params(rng, xs):
  return {"cfg": [(rng.randint(-1, 2), rng.randint(-1, 2), rng.randint(0, 1))
                  for _ in range(xs[0].ndim)]}


op("pad", params=_pad_params)(
    lambda m, lax, p, x: lax.pad(x, m.zeros((), x.dtype), p["cfg"]))
op("where", 3)(lambda m, lax, p, c, x, y: m.where(c.astype(bool) if c.dtype != bool else c,
                                                  x, y))
op("clip", 1, params=lambda rng, xs: {"lo": rng.choice([-1, 0]), "hi": rng.choice([1, 5])})(
    lambda m, lax, p, x: m.clip(x, p["lo"], p["hi"]))


def _dot(m, lax, p, x, y):
  if x.ndim == 1 and y.ndim == 1:
    return m.dot(x, y)
  if x.ndim == 2:
    return m.matmul(x, m.swapaxes(x, 0, 1) if p["self"] else y)
  return m.dot(x, x)


def _dot_params(rng, xs):
  x, y = xs
  if x.ndim == 1 and y.ndim == 1 and x.shape == y.shape:
    return {"self": False}
  if x.ndim == 2:
    if y.ndim == 2 and y.shape[0] == x.shape[1] and rng.random() < 0.5:
      return {"self": False}
    return {"self": True}
  if x.ndim == 1:
    return {"self": True}
  return None


op("dot", 2, params=_dot_params)(_dot)
op("cond", 1, params=lambda rng, xs: {"a": rng.choice(["sin", "negative", "square"]),
                                      "b": rng.choice(["cos", "abs", "exp"])})(
    lambda m, lax, p, x: lax.cond(m.real(m.sum(x)).astype(float) > 0,
                                  lambda v: getattr(m, p["a"])(v),
                                  lambda v: getattr(m, p["b"])(v).astype(
                                      getattr(m, p["a"])(v).dtype), x))
op("fori_loop", 1, params=lambda rng, xs: {"n": rng.choice([0, 1, 3])})(
    lambda m, lax, p, x: lax.fori_loop(0, p["n"], lambda i, c: (c * 2 + 1).astype(c.dtype), x))


def _scan(m, lax, p, x):
  def body(c, row):
    return (c + row).astype(c.dtype), (c * row).astype(c.dtype)
  c, ys = lax.scan(body, m.zeros(x.shape[1:], x.dtype), x)
  return m.concatenate([m.ravel(c), m.ravel(ys)])


op("scan", 1, params=lambda rng, xs: {} if xs[0].ndim >= 1 else None)(_scan)
op("while_loop", 1)(lambda m, lax, p, x: lax.while_loop(
    lambda c: c[0] < 3, lambda c: (c[0] + 1, (c[1] * 0.5).astype(c[1].dtype)), (0, x))[1])


# --- extended ops (``--extended``): integer edge cases -------------------------------------
# Drawn only when asked, so that the base draws (CI's fixed seeds) stay as they were.
_BASE_OPS = frozenset(OPS) | {"cast"}


def _int_operand(values):
  """Params: one of ``values`` as an array of x's (integer) dtype, wrapped as a C cast."""
  def params(rng, xs):
    if _kind(xs[0].dtype) not in "iu":
      return None
    return {"c": rng.choice(values)}
  return params


def _full_as(m, x, c):
  """``c`` wrapped into x's integer dtype (as C casts), broadcast to x's shape."""
  return m.broadcast_to(np.asarray(c, np.int64).astype(np.dtype(x.dtype)), x.shape)


_SHIFTS = [-1, 0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65]
for _s in ["shift_left", "shift_right_logical", "shift_right_arithmetic"]:
  op("lax_" + _s, params=_int_operand(_SHIFTS))(
      lambda m, lax, p, x, _s=_s: getattr(lax, _s)(x, _full_as(m, x, p["c"])))
for _s in ["left_shift", "right_shift"]:   # jnp's, with a Python int shift
  op("jnp_" + _s + "_scalar", params=_int_operand(_SHIFTS[1:]))(
      lambda m, lax, p, x, _s=_s: getattr(m, _s)(x, p["c"]))
# no constant 0 divisor: JAX 0.10.2's XLA dies of SIGFPE constant-folding an integer lax.div
# or lax.rem by a constant 0 whose dividend folds to a constant (jit(lambda x: lax.div(
# jnp.int32(5), jnp.int32(0)))), which would end the campaign; pyjax's division by zero is
# tested with argument divisors in tests/reliability/test_fuzz_findings.py
_DIVISORS = [-1, 1, 2, -3, 7, 255, -128]
for _d in ["div", "rem"]:   # C-style: truncation, INT_MIN / -1
  op("lax_" + _d, params=_int_operand(_DIVISORS))(
      lambda m, lax, p, x, _d=_d: getattr(lax, _d)(x, _full_as(m, x, p["c"])))
for _d in ["floor_divide", "remainder", "fmod"]:   # jnp's, with a Python int divisor
  op("jnp_" + _d + "_scalar", params=_int_operand([0, -1, 2, -3, 7]))(
      lambda m, lax, p, x, _d=_d: getattr(m, _d)(x, p["c"]))
op("lax_divmod_arrays", 2)(lambda m, lax, p, x, y: m.divmod(x, y)[1])
for _u in ["population_count", "clz"]:
  op("lax_" + _u, params=_int_operand([0]))(
      lambda m, lax, p, x, _u=_u: getattr(lax, _u)(x))
op("integer_pow_big", params=lambda rng, xs: {"y": rng.choice([4, 5, 7, 8, 16, 31])})(
    lambda m, lax, p, x: lax.integer_pow(x, p["y"]))
op("int_sign_ops", params=_int_operand(["abs", "neg", "sign", "neg_abs"]))(   # INT_MIN
    lambda m, lax, p, x: {"abs": m.abs, "neg": m.negative, "sign": m.sign,
                          "neg_abs": lambda v: -m.abs(v)}[p["c"]](x))
op("half_cast_round_trip", params=lambda rng, xs: {"dt": rng.choice(["float16", "bfloat16"])})(
    lambda m, lax, p, x: x.astype(np_dtype(p["dt"])).astype(x.dtype))


# --- programs -----------------------------------------------------------------------------

class Program:
  def __init__(self, seed, x64, inputs, ops):
    self.seed, self.x64, self.inputs, self.ops = seed, x64, inputs, ops

  def fn(self, m, lax):
    """The program as a Python function of its inputs, returning every computed value."""
    ops = self.ops

    def f(*inputs):
      vals = list(inputs)
      for name, args, p in ops:
        vals.append(OPS[name][2](m, lax, p, *[vals[i] for i in args]))
      return tuple(vals[len(inputs):])
    return f

  def describe(self):
    lines = [f"seed={self.seed} x64={self.x64}"]
    for i, a in enumerate(self.inputs):
      lines.append(f"  v{i}: {a.dtype}{list(a.shape)} = {a.ravel()[:8].tolist()}")
    n = len(self.inputs)
    for k, (name, args, p) in enumerate(self.ops):
      lines.append(f"  v{n + k} = {name}({', '.join(f'v{i}' for i in args)}) {p or ''}")
    return "\n".join(lines)


_MAX_SIZE = 4096


def generate(seed, jax_mod, x64=False, n_ops=30, cast_dtypes=None, extended=False):
  """A random valid JAX program (ops that real JAX rejects are redrawn).  Ops are checked
  abstractly (``eval_shape``: traced, never compiled), so drawing costs no XLA compile.
  ``extended`` draws the integer edge-case ops too (shifts by out-of-range amounts, C
  division and remainder by 0 and -1, population count, large integer powers, half-type
  round trips); without it a seed draws the program it always drew."""
  jnp, jlax = jax_mod.numpy, jax_mod.lax
  rng = random.Random(seed)
  dtypes = DTYPES_64 if x64 else DTYPES_32
  op("cast", params=_cast_params(cast_dtypes or dtypes))(   # the dtypes of this mode
      lambda m, lax, p, x: x.astype(np_dtype(p["dt"])))
  inputs = [random_input(rng, dtypes) for _ in range(rng.randint(1, 3))]
  vals = [jax_mod.ShapeDtypeStruct(a.shape, a.dtype) for a in inputs]
  ops = []
  names = sorted(_BASE_OPS)
  extra = sorted(set(OPS) - _BASE_OPS) if extended else []
  tries = 0
  while len(ops) < n_ops and tries < 40 * n_ops:
    tries += 1
    name = rng.choice(extra) if extra and rng.random() < 0.3 else rng.choice(names)
    arity, params_fn, fn = OPS[name]
    # favour recent values so programs chain, not fan out
    args = [max(0, len(vals) - 1 - int(rng.expovariate(0.4))) if rng.random() < 0.8
            else rng.randrange(len(vals)) for _ in range(arity)]
    xs = [vals[i] for i in args]
    p = params_fn(rng, xs)
    if p is None:
      continue
    try:
      with _quiet():
        out = jax_mod.eval_shape(lambda *v: fn(jnp, jlax, p, *v), *xs)
    except Exception:
      continue
    if not hasattr(out, "dtype") or out.size > _MAX_SIZE:
      continue
    vals.append(out)
    ops.append((name, args, p))
  return Program(seed, x64, inputs, ops)


class _quiet:
  def __enter__(self):
    import warnings
    self._w = warnings.catch_warnings()
    self._w.__enter__()
    warnings.simplefilter("ignore")
    self._e = np.errstate(all="ignore")
    self._e.__enter__()

  def __exit__(self, *a):
    self._e.__exit__(*a)
    self._w.__exit__(*a)


# --- comparison ---------------------------------------------------------------------------

_RTOL = {"float16": 4e-3, "bfloat16": 3.2e-2, "float32": 4e-6, "float64": 1e-13,
         "complex64": 4e-6, "complex128": 1e-13}


def _same(a, b):
  """Whether NumPy values a (pyjax) and b (reference) agree: exact for ints/bools; floats
  within a few units of precision, NaN/inf/sign of zero exact. Returns (ok, index)."""
  if a.shape != b.shape:
    return False, None
  if a.size == 0:
    return True, None
  k = _kind(b.dtype)
  if k in "biu":
    bad = a != b
  else:
    rtol = _RTOL[str(b.dtype)]
    parts = [(a.real, b.real), (a.imag, b.imag)] if k == "c" else [(a, b)]
    bad = np.zeros(a.shape, bool)
    for x, y in parts:
      x = x.astype(np.float64)
      y = y.astype(np.float64)
      with np.errstate(all="ignore"):
        finite = np.isfinite(x) & np.isfinite(y)
        close = np.where(finite, np.abs(x - y) <= rtol * np.maximum(np.abs(y), 1.0),
                         (x == y) | (np.isnan(x) & np.isnan(y)))
      if k != "c":   # the sign of a zero real part/imaginary part of a complex is not compared
        close &= ~((x == 0) & (y == 0) & (np.signbit(x) != np.signbit(y)))
      bad |= ~close
  if not bad.any():
    return True, None
  return False, tuple(int(i) for i in np.argwhere(bad)[0])


def _has_subnormal(a):
  k = _kind(a.dtype)
  if k not in "fc" or a.size == 0:
    return False
  tiny = float(ml_dtypes.finfo(a.dtype).tiny if k == "f" else np.finfo(a.dtype).tiny)
  with np.errstate(all="ignore"):
    vals = [a.real, a.imag] if k == "c" else [a]
    return any(bool(np.any((v.astype(np.float64) != 0) & (np.abs(v.astype(np.float64)) < tiny)))
               for v in vals)


# Mismatches whose cause is understood and documented in docs/differences.md: each entry
# is (predicate(op name, input arrays, pyjax output, params), reason).
def _near_subnormal(a):
  """Nonzero elements within the square root of the smallest normal: products and sums
  of a few of them pass through the subnormal range."""
  k = _kind(a.dtype)
  if k not in "fc" or a.size == 0:
    return False
  tiny = float(ml_dtypes.finfo(a.dtype).tiny if k == "f" else np.finfo(a.dtype).tiny)
  vals = [a.real, a.imag] if k == "c" else [a]
  return any(bool(np.any((v.astype(np.float64) != 0) & (np.abs(v.astype(np.float64))
                                                        < np.sqrt(tiny)))) for v in vals)


# ops whose intermediate results (products, partial sums, powers) can be subnormal
_ACCUMULATING = {"reduce_prod", "reduce_sum", "reduce_mean", "reduce_var", "cumsum",
                 "cumprod", "dot", "scan", "fori_loop", "while_loop", "power",
                 "integer_pow", "hypot", "multiply", "divide", "scalar_op", "square",
                 "reciprocal", "exp", "exp2", "expm1", "cond", "logistic", "erf"}

EXPLAINED = [
    (lambda name, ins, out, p: any(_has_subnormal(a) for a in ins) or _has_subnormal(out)
     or (name in _ACCUMULATING and any(_near_subnormal(a) for a in ins)),
     "subnormals: XLA:CPU flushes subnormal inputs, intermediates and results to zero "
     "(FTZ/DAZ); pyjax keeps IEEE subnormals"),
    (lambda name, ins, out, p: (name in _ELEMENTWISE or name in _ACCUMULATING) and any(
        _kind(a.dtype) == "c" and not np.all(np.isfinite(a)) for a in ins),
     "non-finite complex arguments: pyjax follows NumPy/C99 Annex G, XLA's complex "
     "expansions (and the products and sums built on them) differ"),
    (lambda name, ins, out, p: name in ("cumsum", "cumprod")
     and str(ins[0].dtype) in ("float16", "bfloat16"),
     "half-precision cumulative sums/products: XLA rewrites them into a blocked scan that "
     "rounds partial sums to the half type; pyjax accumulates in float32 in order"),
    (lambda name, ins, out, p: name == "dot" and all(a.ndim == 1 for a in ins)
     and any(a.dtype == np.bool_ for a in ins) and not all(a.dtype == np.bool_ for a in ins),
     "vector-vector dot with a bool operand: XLA decomposes it into a multiply and a sum and "
     "turns the multiply by the converted bool into a select (NaN . False = 0); pyjax "
     "multiplies (NaN), as JAX's own matrix products do"),
    (lambda name, ins, out, p: ins[0].dtype == np.bool_ and str(out.dtype) in (
        "float16", "bfloat16", "complex64", "complex128") and (
        (name == "divide" and ins[1].shape != out.shape)
        or (name == "scalar_op" and p["f"] == "div")),
     "bool divided by a broadcast half or complex operand: XLA rewrites A / broadcast(B) "
     "into A * broadcast(1 / B) and the product with the converted bool into a select "
     "(False / 0 = 0, False / -1.5 = +0); pyjax's jit does the same for float32/float64 "
     "quotients (reciprocal_div.py) but divides half and complex ones (NaN, -0)"),
    (lambda name, ins, out, p: name in ("power", "scalar_op") and _kind(out.dtype) == "c"
     and (name == "power" or p["f"] == "pow") and not np.all(np.isfinite(out)),
     "overflowing complex powers: the signs of the infinite parts are those of cos and sin "
     "of the phase c arg(x) + d log|x| (~1e38 radians for an exponent of 4e37j), which "
     "pyjax and XLA reduce differently"),
    (lambda name, ins, out, p: _ill_conditioned_sum(name, ins, out),
     "ill-conditioned float sums: a sum whose result depends on the order of its additions "
     "beyond the tolerance (cancellation of large terms); XLA's order for some small "
     "multi-dimensional full reductions is not pyjax's row-major fold"),
    (lambda name, ins, out, p: name == "exp2" and _kind(out.dtype) in "fc",
     "exp2: JAX lowers exp2(x) to exp(x * ln 2) in x's dtype, so the rounded product costs "
     "a relative error of about |x| ulps (10% in bfloat16 at x = 32.25); pyjax computes "
     "exp2 itself"),
    (lambda name, ins, out, p: name == "cummax" and _kind(ins[0].dtype) == "c"
     and np.isnan(ins[0]).any(),
     "NaN in complex cumulative max: XLA keeps the newer element, pyjax the running value"),
    (lambda name, ins, out, p: name == "dot" and ins[0].ndim >= 1 and ins[0].shape[-1] == 1
     and _kind(out.dtype) in "fc" and bool(np.any(out == 0)),
     "signed zero of a size-1 contraction: XLA rewrites the dot into a multiply, so a -0 "
     "product stays -0; pyjax sums the products from +0 (IEEE: +0)"),
    (lambda name, ins, out, p: name == "scan" and ins[0].shape[0] == 1
     and _kind(out.dtype) in "fc" and bool(np.any(out == 0)),
     "signed zero of a one-step scan: XLA unrolls it and folds the carry's 0 + x into x, so "
     "a -0 stays -0; pyjax adds (IEEE: +0)"),
    (lambda name, ins, out, p: name == "cond" and _kind(out.dtype) in "iu"
     and (p["a"] == "sin" or p["b"] in ("cos", "exp")),
     "transcendental results cast to integers: a branch computes exp/sin/cos of an integer "
     "operand in floating point and casts back; the float results agree within the "
     "tolerated ulps, and a 1-ulp difference above 2**53 (or at a .5 boundary) is an "
     "integer difference after the cast"),
    (lambda name, ins, out, p: _complex_atan2_singular(name, ins, out),
     "complex arctan2 at a singular point: -i log((x + iy) / sqrt(x^2 + y^2)) where x^2 + y^2 "
     "cancels to (nearly) zero, or on the logarithm's branch cut (result +-pi/2 with a zero "
     "imaginary part, or +-pi with a rounding-size one: arctan2(0, c) is -i log(c / "
     "sqrt(c^2)), the log of -1 +- a rounding error): rounding and the sign of zero decide, and pyjax and XLA round the "
     "cancellation differently"),
]


def _complex_atan2_singular(name, ins, out):
  if name != "arctan2" or _kind(out.dtype) != "c" or len(ins) != 2:
    return False
  with np.errstate(all="ignore"):
    a, b = (np.broadcast_to(v, out.shape).astype(np.complex128) for v in ins)
    near_zero = np.abs(a * a + b * b) <= 1e-3 * (np.abs(a) ** 2 + np.abs(b) ** 2)
    o = out.astype(np.complex128)
    on_cut = (((np.abs(np.abs(o.real) - np.pi / 2) < 1e-3) & (o.imag == 0))
              | ((np.abs(np.abs(o.real) - np.pi) < 1e-3) & (np.abs(o.imag) < 1e-5)))
  return bool(np.any(near_zero | on_cut))


def _ill_conditioned_sum(name, ins, out):
  """A float sum (or mean, variance) whose result depends on the order of its additions
  by more than the comparison's tolerance: the worst-case rounding error of a reordered
  sum, n * eps * sum(|x|), exceeds the tolerance at the result's size."""
  if name not in ("reduce_sum", "reduce_mean", "reduce_var") or _kind(out.dtype) not in "fc":
    return False
  x = ins[0]
  if x.size < 3 or _kind(x.dtype) == "b":
    return False
  rdt = np.finfo(out.dtype).dtype if _kind(out.dtype) == "c" else out.dtype
  eps = float(ml_dtypes.finfo(rdt).eps)
  with np.errstate(all="ignore"):
    mag = np.abs(x.astype(np.complex128 if _kind(x.dtype) == "c" else np.float64))
    if name == "reduce_var":
      mag = mag * mag
    bound = x.size * eps * float(np.sum(mag[np.isfinite(mag)]))
    size = float(np.max(np.abs(out.astype(np.complex128)), initial=0.0))
  return bound > _RTOL[str(rdt)] * max(size if np.isfinite(size) else 0.0, 1.0)


def explain(name, ins, out, params):
  for pred, reason in EXPLAINED:
    if pred(name, ins, out, params):
      return reason
  return None


Mismatch = collections.namedtuple("Mismatch", "program tier value op kind detail reason")


def _to_np(x):
  return np.asarray(x)


def _batched(progs, m, lax):
  """One function running every program of ``progs`` on its own inputs: its arguments are
  the programs' input tuples, its result the tuple of their result tuples.  One compile
  (XLA's, gcc's) then serves the whole batch."""
  fns = [p.fn(m, lax) for p in progs]
  return lambda *ins: tuple(f(*x) for f, x in zip(fns, ins))


def _values(outs):
  return [(_to_np(g), g.dtype, g.weak_type) for g in outs]


def _run_ref(progs, jax_mod):
  """JAX's results, one list per program (None where JAX failed on it alone)."""
  try:
    with _quiet():
      res = jax_mod.jit(_batched(progs, jax_mod.numpy, jax_mod.lax))(
          *[tuple(p.inputs) for p in progs])
    return [_values(r) for r in res]
  except Exception:   # noqa: BLE001 -- find the program: each one alone
    if len(progs) == 1:
      raise
    out = []
    for p in progs:
      try:
        out.append(_run_ref([p], jax_mod)[0])
      except Exception:   # noqa: BLE001
        out.append(None)
    return out


def _run_eager(progs, pyjax_mod):
  """pyjax's results of each program run op by op, not jitted (the "eager" tier: its
  inputs made pyjax Arrays first), one list (or the exception it raised) per program."""
  out = []
  for p in progs:
    try:
      with _quiet():
        ins = [pyjax_mod.numpy.asarray(a) for a in p.inputs]
        out.append(_values(p.fn(pyjax_mod.numpy, pyjax_mod.lax)(*ins)))
    except Exception as e:   # noqa: BLE001 -- JAX ran it: any exception is a mismatch
      out.append(e)
  return out


def _run_tier(progs, pyjax_mod, tier):
  """pyjax's results on ``tier`` ("numpy" or "native": jitted on that tier; "eager": op by
  op), one list (or the exception it raised) per program.  A batch that raises is rerun
  program by program, so an exception names its program."""
  if tier == "eager":
    return _run_eager(progs, pyjax_mod)
  from pyjax._src.backends.cpu import executable
  mode = {"numpy": "off", "native": "sync"}[tier]
  try:
    with executable.compile_mode_override(mode), _quiet():
      res = pyjax_mod.jit(_batched(progs, pyjax_mod.numpy, pyjax_mod.lax))(
          *[tuple(p.inputs) for p in progs])
      return [_values(r) for r in res]
  except Exception as e:   # noqa: BLE001 -- JAX ran it: any exception is a mismatch
    if len(progs) == 1:
      return [e]
    return [_run_tier([p], pyjax_mod, tier)[0] for p in progs]


_Candidate = collections.namedtuple("_Candidate", "prog tier value op params ins weak got ref idx")


def _differences(prog, tier, got, ref, inputs=None):
  """Compare pyjax's results ``got`` on ``tier`` with JAX's ``ref`` for one program:
  (mismatches decided here -- exceptions, dtypes, weak types, shapes --, values that differ
  and need the local check).  ``inputs``: the program's inputs as run (the vmap tier's
  batched ones), else its own."""
  if isinstance(got, Exception):
    return [Mismatch(prog, tier, None, None, "exception",
                     f"{type(got).__name__}: {got}"[:300], None)], []
  out, cands = [], []
  n_in = len(prog.inputs)
  pvals = [_to_np(a) for a in (prog.inputs if inputs is None else inputs)] + [g[0] for g in got]
  pweak = [False] * n_in + [g[2] for g in got]   # the local check keeps weak types
  for k, ((g, gdt, gweak), (r, rdt, rweak)) in enumerate(zip(got, ref)):
    name, args, p = prog.ops[k]
    ins = [pvals[i] for i in args]
    if np.dtype(gdt) != np.dtype(rdt) or gweak != rweak or g.shape != r.shape:
      out.append(Mismatch(prog, tier, n_in + k, name, "type",
                          f"pyjax {gdt}{list(g.shape)} weak={gweak} vs JAX "
                          f"{rdt}{list(r.shape)} weak={rweak}",
                          explain(name, ins, g, p)))
      continue
    ok, idx = _same(g, r)
    if not ok:
      cands.append(_Candidate(prog, tier, n_in + k, name, p, ins,
                              tuple(pweak[i] for i in args), g, r, idx))
  return out, cands


def _local_refs(cands, jax_mod, vmapped=False):
  """The local check of differing values: each one's op on JAX with pyjax's own inputs, all
  in one jitted function (one compile); None where JAX fails on the op alone.  ``vmapped``:
  the op vmapped over its inputs' leading axis (the vmap tier's)."""
  if not cands:
    return []
  ops = [(OPS[c.op][2], c.params, c.weak) for c in cands]
  if vmapped:
    ops = [(lambda m, lax, p, *xs, fn=fn: jax_mod.vmap(lambda *v: fn(m, lax, p, *v))(*xs),
            p, weak) for fn, p, weak in ops]
  from jax._src.lax.lax import _convert_element_type as _cvt   # the oracle's weak types

  def f(*groups):
    return tuple(fn(jax_mod.numpy, jax_mod.lax, p,
                    *[_cvt(x, weak_type=True) if w else x for x, w in zip(xs, weak)])
                 for (fn, p, weak), xs in zip(ops, groups))
  try:
    with _quiet():
      return [_to_np(r) for r in jax_mod.jit(f)(*[tuple(c.ins) for c in cands])]
  except Exception:   # noqa: BLE001
    if len(cands) == 1:
      return [None]
    return [_local_refs([c], jax_mod, vmapped)[0] for c in cands]


def _judge(c, local):
  """The Mismatch of candidate ``c`` given its local reference, or None when pyjax agrees
  with JAX on its own inputs (the difference was amplified from a tolerated upstream one)."""
  g, idx = c.got, c.idx
  if local is not None:
    ok_local, idx_local = _same(g, local)
    if ok_local:
      return None
  else:
    idx_local, local = idx, c.ref
  idx = idx_local if idx_local is not None else idx
  detail = (f"at {idx}: pyjax {g[idx] if idx is not None else g!r} vs JAX "
            f"{local[idx] if idx is not None else local!r}; inputs "
            + ", ".join(f"{a.dtype}{list(a.shape)}" + (
                f"={a[idx] if idx is not None and a.shape == g.shape else ''}")
                for a in c.ins))
  if sum(a.size for a in c.ins) <= 64:
    detail += "\n    op inputs: " + "; ".join(repr(a.tolist()) for a in c.ins)
  return Mismatch(c.prog, c.tier, c.value, c.op, "value", detail,
                  explain(c.op, c.ins, g, c.params))


def _weak_as_jax_eager(m, got, jax_mod, tally):
  """Whether Mismatch ``m`` of the eager tier differs from the (jitted) reference only in its
  weak type, and JAX run eagerly on the same inputs gives pyjax's weak type: JAX's own eager
  and jit weak types differ there (jnp.power of weak ints is weak eagerly, strong under
  jit), so the eager tier follows JAX's eager mode."""
  if m.kind != "type" or m.value is None:
    return False
  prog, k = m.program, m.value - len(m.program.inputs)
  g, gdt, gweak = got[k]
  name, args, p = prog.ops[k]
  from jax._src.lax.lax import _convert_element_type as _cvt
  n_in = len(prog.inputs)
  vals = list(prog.inputs) + [jax_mod.numpy.asarray(v[0]) for v in got]
  weaks = [False] * n_in + [v[2] for v in got]
  ins = [_cvt(jax_mod.numpy.asarray(vals[i]), weak_type=True) if weaks[i]
         else jax_mod.numpy.asarray(vals[i]) for i in args]
  try:
    with _quiet():
      r = OPS[name][2](jax_mod.numpy, jax_mod.lax, p, *ins)
  except Exception:   # noqa: BLE001
    return False
  same = (np.dtype(r.dtype) == np.dtype(gdt) and r.weak_type == gweak
          and tuple(r.shape) == g.shape)
  if same and tally is not None:
    tally["eager weak type as JAX eager"] += 1
  return same


def check_batch(progs, jax_mod, pyjax_mod, tiers=("numpy", "native"), tally=None):
  """Run the programs ``progs`` (same x64 mode) as ONE jitted function on JAX and on each
  pyjax tier; returns one list of Mismatch per program (by tier, then value), attributed
  to its program, value and op as for a program alone; the local checks of the whole batch
  are one more jitted function.  A program JAX fails on alone is returned as None (a
  harness error).  ``tally`` (a Counter) counts the amplified differences per tier."""
  x64 = progs[0].x64
  assert all(p.x64 == x64 for p in progs)
  if any(t in ("grad", "vmap") for t in tiers):
    import fuzz_transforms
    tiers = fuzz_transforms.expand_tiers(tiers)
  jax_mod.config.update("jax_enable_x64", x64)
  pyjax_mod.config.update("jax_enable_x64", x64)
  refs = _run_ref(progs, jax_mod)
  out = [[] if r is not None else None for r in refs]
  where = {id(p): i for i, p in enumerate(progs)}
  cands = []
  for tier in tiers:
    if tier.startswith(("grad:", "vmap:")):   # the transformation tiers (fuzz_transforms)
      import fuzz_transforms
      check_t = fuzz_transforms.check_grad if tier[0] == "g" else fuzz_transforms.check_vmap
      live = [i for i, r in enumerate(refs) if r is not None]
      for i, ms in zip(live, check_t([progs[i] for i in live], jax_mod, pyjax_mod, tier,
                                     tally)):
        if ms is None:
          if tally is not None:
            tally[f"JAX failed [{tier}]"] += 1
        else:
          out[i] += ms
      continue
    gots = _run_tier(progs, pyjax_mod, tier)
    for i, (prog, got, ref) in enumerate(zip(progs, gots, refs)):
      if ref is not None:
        ms, cs = _differences(prog, tier, got, ref)
        if tier == "eager":
          ms = [m for m in ms if not _weak_as_jax_eager(m, got, jax_mod, tally)]
        out[i] += ms
        cands += cs
  for c, local in zip(cands, _local_refs(cands, jax_mod)):
    m = _judge(c, local)
    if m is not None:
      out[where[id(c.prog)]].append(m)
    elif tally is not None:
      tally[f"amplified [{c.tier}]"] += 1
  order = {t: n for n, t in enumerate(tiers)}
  for ms in out:
    if ms:
      ms.sort(key=lambda m: (order[m.tier], -1 if m.value is None else m.value))
  return out


def check(prog, jax_mod, pyjax_mod, tiers=("numpy", "native")):
  """Run ``prog`` on JAX and on each pyjax tier; returns a list of Mismatch."""
  out = check_batch([prog], jax_mod, pyjax_mod, tiers)[0]
  if out is None:
    raise RuntimeError(f"JAX failed on program {prog.seed}")
  return out


def check_tiers_batch(progs, pyjax_mod):
  """Without JAX (e.g. under the sanitizers): pyjax's native tier against its NumPy tier,
  the programs batched as in ``check_batch``; every value equal in dtype, weak type and
  shape, values as ``_same`` compares them.  One list of Mismatch per program."""
  pyjax_mod.config.update("jax_enable_x64", progs[0].x64)
  res = {tier: _run_tier(progs, pyjax_mod, tier) for tier in ("numpy", "native")}
  out = []
  for prog, ref, got in zip(progs, res["numpy"], res["native"]):
    if isinstance(ref, Exception):
      raise ref
    if isinstance(got, Exception):
      out.append(_differences(prog, "native", got, None)[0])
      continue
    ms = []
    for k, ((g, gdt, gw), (r, rdt, rw)) in enumerate(zip(got, ref)):
      ok, idx = _same(g, r) if (gdt, gw, g.shape) == (rdt, rw, r.shape) else (False, None)
      if not ok:
        ms.append(Mismatch(prog, "native", len(prog.inputs) + k, prog.ops[k][0], "value",
                           f"at {idx}: native vs NumPy tier", None))
    out.append(ms)
  return out


def check_tiers(prog, pyjax_mod):
  """``check_tiers_batch`` for one program."""
  return check_tiers_batch([prog], pyjax_mod)[0]


def campaign(n, seed=0, x64=False, tiers=("numpy", "native"), n_ops=30, log=None,
             oracle="jax", batch=1, progress=None, extended=False):
  """Run ``n`` programs from ``seed``; returns (tally Counter, unexplained list).
  ``batch`` programs (consecutive seeds) run as one jitted function (``check_batch``): one
  XLA and one C compile per batch; each mismatch is still attributed to its program.
  ``oracle="tiers"`` needs no JAX: programs are drawn on pyjax and its native tier is
  compared with its NumPy tier.  ``progress``: a file that gets one line per batch (seed
  range, elapsed seconds, running tally)."""
  import time
  import pyjax
  ref = pyjax
  if oracle == "jax":
    import jax as ref
  tally = collections.Counter()
  unexplained = []
  t0 = time.monotonic()
  # every redrawn op raises inside JAX: its traceback filtering (a path comparison per
  # frame) cost more than drawing the program
  filtering = ref.config.jax_traceback_filtering
  ref.config.update("jax_traceback_filtering", "off")
  for lo in range(seed, seed + n, batch):
    seeds = range(lo, min(lo + batch, seed + n))
    ref.config.update("jax_enable_x64", x64)
    progs = [generate(s, ref, x64=x64, n_ops=n_ops, extended=extended) for s in seeds]
    tally["programs"] += len(progs)
    tally["ops"] += sum(len(p.ops) for p in progs)
    try:
      results = (check_batch(progs, ref, pyjax, tiers, tally) if oracle == "jax"
                 else check_tiers_batch(progs, pyjax))
    except Exception:   # noqa: BLE001 -- a fuzzer bug or a JAX failure: count, keep going
      tally["harness errors"] += len(progs)
      if log:
        print(f"harness error on seeds {seeds.start}..{seeds.stop - 1}:\n"
              f"{traceback.format_exc()}", file=log)
      continue
    ref.clear_caches()   # every program is new code: keep both libraries' caches small
    pyjax.clear_caches()
    for prog, ms in zip(progs, results):
      if ms is None:
        tally["harness errors"] += 1
        if log:
          print(f"harness error: JAX failed on seed {prog.seed}", file=log)
        continue
      for mm in ms:
        kind = "explained" if mm.reason else "unexplained"
        tally[f"{kind} {mm.kind}"] += 1
        tally[f"{kind} {mm.kind} [{mm.tier}]"] += 1
        if mm.reason:
          tally["reason: " + mm.reason.split(":")[0]] += 1
        else:
          unexplained.append(mm)
          if log:
            print(f"[{mm.tier}] v{mm.value} = {mm.op}: {mm.kind}: {mm.detail}\n"
                  f"{prog.describe()}\n", file=log, flush=True)
    if progress:
      print(f"seeds {seeds.start}..{seeds.stop - 1} x64={x64} "
            f"{time.monotonic() - t0:.0f}s {dict(tally)}", file=progress, flush=True)
  ref.config.update("jax_enable_x64", False)
  ref.config.update("jax_traceback_filtering", filtering)
  pyjax.config.update("jax_enable_x64", False)
  return tally, unexplained


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--programs", type=int, default=200)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--x64", action="store_true")
  ap.add_argument("--ops", type=int, default=30)
  ap.add_argument("--tiers", default="numpy,native",
                  help="of numpy, native (jitted on that tier), eager (op by op, no jit), "
                       "grad and vmap (both jit tiers; grad:numpy, vmap:native... for one)")
  ap.add_argument("--extended", action="store_true",
                  help="draw the integer edge-case ops too (another program per seed)")
  ap.add_argument("--batch", type=int, default=10,
                  help="programs per jitted function (one XLA and one C compile each)")
  ap.add_argument("--progress", action="store_true",
                  help="a line per batch on stderr (seeds, seconds, tally)")
  ap.add_argument("--oracle", choices=["jax", "tiers"], default="jax",
                  help="tiers: no JAX; pyjax's native tier against its NumPy tier")
  ap.add_argument("--cache-dir", default=os.environ.get("PYJAX_CACHE_DIR") or os.path.join(
                      tempfile.gettempdir(), "pyjax-fuzz-cache"),
                  help="pyjax's compile cache for the campaign (default $PYJAX_CACHE_DIR, "
                       "else a directory of its own), without a size bound: the bounded "
                       "cache rescans its directory after every write")
  a = ap.parse_args(argv)
  os.environ.setdefault("PYJAX_COMPILE", "off")
  os.environ["PYJAX_CACHE_DIR"] = a.cache_dir
  os.environ["PYJAX_CACHE_MAX_SIZE"] = "-1"
  import fuzz_transforms
  tiers = fuzz_transforms.expand_tiers(a.tiers.split(","))
  tally, bad = campaign(a.programs, a.seed, a.x64, tiers, a.ops,
                        log=sys.stdout, oracle=a.oracle, batch=a.batch,
                        progress=sys.stderr if a.progress else None, extended=a.extended)
  by_op = collections.Counter((m.op, m.kind, m.tier) for m in bad)
  print("tally:", dict(tally))
  for (o, k, t), c in by_op.most_common():
    print(f"  {c:5d}  {o} {k} [{t}]")
  return 1 if bad else 0


if __name__ == "__main__":
  sys.exit(main())
