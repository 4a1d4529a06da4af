"""Quotients by a broadcast divisor or by a square root, as XLA computes them.

XLA's algebraic simplifier rewrites ``A / broadcast(B)`` into ``A * broadcast(1 / B)`` (one
reciprocal per element of ``B``) and ``A / sqrt(B)`` into ``A * rsqrt(B)``.  A jaxpr's
``div`` whose divisor has fewer elements than the result (a size-1 dimension, a scalar
literal, ``x / x.sum(1, keepdims=True)``, ``mean``'s division by the count) or is the output
of a ``broadcast_in_dim`` is such a quotient in XLA, so JAX's jitted softmax, mean and row
normalization multiply every element by a reciprocal (bit for bit ``a * (1 / b)``, checked
against JAX 0.10.2 for scalar, row and column divisors) instead of dividing it.  pyjax does
the same in compiled code: ``a * (1 / b)``, two correctly rounded operations, within about
1.5 ulp of the correctly rounded quotient; a quotient by a same-shape ``sqrt`` is
``a * (1 / sqrt(b))`` (XLA's ``rsqrt`` rounds differently from ``1 / sqrt``, by an ulp).  A
divide costs several times a multiply on CPUs (1000x1000 float32 row normalization: 262 ->
208 us on one thread).  As in XLA, a reciprocal that overflows (a subnormal divisor) makes
the product infinite where the quotient was finite.

The CPU backend applies it to real float32/float64 quotients wherever it sees the pattern
in a jaxpr: the jit NumPy plan, the eager control-flow plans and the native compiler's
program (``ir``), so the two tiers of ``jit`` give the same bits.  A numerator converted
from a bool of the quotient's shape then makes the product a select, as XLA's next
rewrite does (``pred_mul``): ``jit(jnp.divide)(jnp.array([False, True]), jnp.zeros(1))`` is
``[0., inf]``, as in JAX.  Eager (op-by-op) ``/`` divides.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu import pred_mul

ELIGIBLE = frozenset(np.dtype(d) for d in (np.float32, np.float64))


def _is_literal(v):
  return type(v).__name__ == "Literal"


def note(eqn, recip_of):
  """Record in ``recip_of`` the outputs of eligible ``sqrt`` and ``broadcast_in_dim``
  equations (divisors XLA turns into reciprocals)."""
  name = eqn.primitive.name
  if name not in ("sqrt", "broadcast_in_dim"):
    return
  o, = eqn.outvars
  if np.dtype(o.aval.dtype) in ELIGIBLE and (
      name == "sqrt" or _size(o.aval) > _size(eqn.invars[0].aval)):
    recip_of[o] = name   # (a broadcast adding no element is a reshape in XLA: no rewrite)


def _size(aval):
  return int(np.prod(aval.shape, dtype=np.int64))


def match(eqn, recip_of):
  """For a ``div`` equation XLA computes as a product by a reciprocal: (numerator,
  divisor); else None."""
  if eqn.primitive.name != "div":
    return None
  o, = eqn.outvars
  if np.dtype(o.aval.dtype) not in ELIGIBLE:
    return None
  a, e = eqn.invars
  # a divisor with as many elements as the quotient (a scalar into shape (1,)) is only
  # reshaped, and XLA divides: jit(jnp.divide)(jnp.array([False]), 0.) is NaN in JAX
  if (_is_literal(e) or e in recip_of
      or (tuple(e.aval.shape) != tuple(o.aval.shape) and _size(e.aval) < _size(o.aval))):
    return a, e
  return None


_ONES = {d: np.ones((), d) for d in ELIGIBLE}


def reciprocal(e, dtype):
  """``1 / e`` in ``dtype`` (a NumPy value)."""
  dtype = np.dtype(dtype)
  return np.divide(_ONES[dtype], np.asarray(e, dtype))


def mul_by_reciprocal(a, e, *, dtype):
  """``a * (1 / e)`` in ``dtype`` (NumPy buffers of ``dtype``, as the plans pass them;
  NumPy broadcasting as ``div``'s)."""
  r = np.multiply(a, np.divide(_ONES[dtype], e))
  if r.__class__ is not np.ndarray or r.dtype != dtype:
    r = np.asarray(r, dtype)
  return r


def mul_by_constant(a, *, r, dtype):
  """``a * r`` in ``dtype`` (``r``: a reciprocal computed when the plan was made)."""
  out = np.multiply(a, r)
  if out.__class__ is not np.ndarray or out.dtype != dtype:
    out = np.asarray(out, dtype)
  return out


def bool_numerator(a, out, pred_of):
  """The boolean operand when the numerator ``a`` is a converted bool of the quotient's
  shape: XLA then turns the product by the reciprocal into a select (``pred_mul``), so
  ``False / 0`` is ``0.0``; else None."""
  if _is_literal(a) or a not in pred_of:
    return None
  p = pred_of[a]
  if _is_literal(p) or tuple(p.aval.shape) != tuple(out.aval.shape):
    return None
  return p


def select_reciprocal(pred, e, *, dtype, shape):
  """``select(pred, 1 / e, 0)`` broadcast to ``shape`` in ``dtype`` (NumPy buffers)."""
  return pred_mul.mul_by_pred(pred, reciprocal(e, dtype), dtype=dtype, shape=shape)


def rewrite(eqn, pred_of, recip_of):
  """XLA's algebraic rewrites that the CPU backend's NumPy plans apply to ``eqn`` (this
  module's quotients, ``pred_mul``'s products by a converted bool), recording what later
  equations need in ``pred_of`` / ``recip_of`` (empty dicts per jaxpr): (NumPy function,
  operand vars, keyword params) to run instead of the equation, or None."""
  note(eqn, recip_of)
  pred_mul.note_convert(eqn, pred_of)
  rd = match(eqn, recip_of)
  if rd is not None:
    o = eqn.outvars[0]
    p = bool_numerator(rd[0], o, pred_of)
    if p is not None:
      return select_reciprocal, (p, rd[1]), {"dtype": np.dtype(o.aval.dtype),
                                             "shape": tuple(o.aval.shape)}
    dtype = np.dtype(o.aval.dtype)
    if _is_literal(rd[1]):   # the reciprocal once, at plan time
      return mul_by_constant, (rd[0],), {"r": reciprocal(rd[1].val, dtype), "dtype": dtype}
    return mul_by_reciprocal, rd, {"dtype": dtype}
  pm = pred_mul.match(eqn, pred_of)
  if pm is not None:
    o = eqn.outvars[0]
    return pred_mul.mul_by_pred, pm, {"dtype": o.aval.dtype, "shape": tuple(o.aval.shape)}
  return None


__all__ = ["ELIGIBLE", "note", "match", "reciprocal", "mul_by_reciprocal", "mul_by_constant",
           "bool_numerator",
           "select_reciprocal", "rewrite"]
