"""``Lowered.cost_analysis()`` / ``Compiled.cost_analysis()``: operation counts of a staged
program, in the keys XLA's cost analysis reports (``flops``, ``transcendentals``,
``bytes accessed``).

Counted from the jaxpr: an arithmetic elementwise equation costs one flop per output
element, a transcendental one (``sin``, ``exp``, ``log``, ...) one transcendental per
element, a reduction one flop per input element it folds in (input size minus output
size), ``dot_general`` two flops per multiply-add and a convolution two per kernel tap;
data movement (reshape, broadcast, slice, gather, conversion, ...) costs nothing.  The
equations of nested programs (``jit``, ``cond`` branches -- the most expensive --,
``while`` bodies once, ``scan`` bodies ``length`` times) are counted in.  ``bytes
accessed`` is the size of the program's arguments plus its results, what an ideally fused
program reads and writes.

Differs from JAX: XLA counts after its own fusion and layout passes, so its numbers can
differ from these (they agree on flops and transcendentals for plain elementwise,
reduction and matmul programs).
"""
from __future__ import annotations

import math

_TRANSCENDENTAL = frozenset({
    "exp", "exp2", "log", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "logistic", "pow", "sqrt",
    "rsqrt", "cbrt", "erf", "erfc", "erf_inv", "lgamma", "digamma", "igamma", "igammac",
    "bessel_i0e", "bessel_i1e", "polygamma", "zeta", "regularized_incomplete_beta"})

_ARITHMETIC = frozenset({
    "add", "sub", "mul", "div", "rem", "max", "min", "neg", "abs", "sign", "floor", "ceil",
    "round", "nextafter", "integer_pow", "square", "reciprocal", "clamp", "select_n",
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not", "shift_left",
    "shift_right_logical", "shift_right_arithmetic", "is_finite", "conj", "real", "imag",
    "complex", "add_any", "population_count", "clz"})

_REDUCTIONS = frozenset({
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
    "cumlogsumexp", "reduce_precision"})


def _size(aval):
  return math.prod(getattr(aval, "shape", ()))


def _nbytes(aval):
  dt = getattr(aval, "dtype", None)
  return _size(aval) * (dt.itemsize if dt is not None else 0)


def _sub_jaxprs(params):
  for v in params.values():
    for x in (v if isinstance(v, (tuple, list)) else (v,)):
      j = getattr(x, "jaxpr", None)
      if j is not None and hasattr(x, "consts"):   # a ClosedJaxpr
        yield j
      elif hasattr(x, "eqns"):
        yield x


def _count(jaxpr, acc, times=1):
  for eqn in jaxpr.eqns:
    name = eqn.primitive.name
    out = sum(_size(v.aval) for v in eqn.outvars)
    if name in _TRANSCENDENTAL:
      acc[1] += times * out
    elif name in _ARITHMETIC:
      acc[0] += times * out
    elif name in _REDUCTIONS:
      ins = sum(_size(v.aval) for v in eqn.invars)
      acc[0] += times * max(ins - out, 0)
    elif name == "dot_general":
      (lc, _), _ = eqn.params["dimension_numbers"]
      lhs = eqn.invars[0].aval.shape
      acc[0] += times * 2 * out * math.prod(lhs[d] for d in lc)
    elif name == "conv_general_dilated":
      # each output element: one multiply-add per kernel tap of its output feature
      rhs = eqn.invars[1].aval.shape
      out_features = rhs[eqn.params["dimension_numbers"].rhs_spec[0]]
      acc[0] += times * 2 * out * math.prod(rhs) // max(out_features, 1)
    elif name == "cond":
      best = None
      for br in eqn.params["branches"]:
        sub = [0, 0]
        _count(br.jaxpr, sub)
        best = sub if best is None or sub[0] + sub[1] > best[0] + best[1] else best
      if best is not None:
        acc[0] += times * best[0]
        acc[1] += times * best[1]
    elif name == "scan":
      _count(eqn.params["jaxpr"].jaxpr, acc, times * int(eqn.params["length"]))
    else:
      for sub in _sub_jaxprs(eqn.params):
        _count(sub, acc, times)


def cost_analysis(closed):
  """The cost dict of the ClosedJaxpr ``closed`` (see the module docstring)."""
  acc = [0, 0]
  _count(closed.jaxpr, acc)
  moved = sum(_nbytes(a) for a in closed.in_avals) + sum(_nbytes(a) for a in closed.out_avals)
  out = {"flops": float(acc[0]), "bytes accessed": float(moved)}
  if acc[1]:   # (as XLA's: no entry when there are none)
    out["transcendentals"] = float(acc[1])
  return out
