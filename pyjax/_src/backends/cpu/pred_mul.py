"""A product with a converted boolean, as XLA computes it.

XLA's algebraic simplifier rewrites ``mul(convert(p: bool -> T), a)`` (either operand
order) into ``select(p, a, 0)`` when ``T`` is float16, float32, float64, complex64 or
complex128 (not bfloat16, which XLA's CPU backend first widens to float32, hiding the
pattern).  So in JAX ``jnp.array([True, False]) * jnp.nan`` is ``[nan, 0.]`` (not
``[nan, nan]``), a ``False`` times ``-2.0`` is ``+0.0`` and a ``True`` times a complex
infinity keeps it exactly.  The rewrite only applies when the conversion and the product
are in one compiled computation and the converted operand has the product's shape; a
conversion done by an earlier eager operation, a broadcast between the conversion and the
product, or a constant boolean hides the pattern.

The CPU backend applies it wherever it sees that pattern in a jaxpr: the jit NumPy plan,
the eager control-flow plans and the native compiler's program (``ir``); ``jnp.multiply``
applies it to eager calls (which JAX compiles as one computation).
"""
from __future__ import annotations

import numpy as np

ELIGIBLE = frozenset(np.dtype(d) for d in (np.float16, np.float32, np.float64,
                                           np.complex64, np.complex128))


def _is_literal(v):
  return type(v).__name__ == "Literal"


def note_convert(eqn, pred_of):
  """Record in ``pred_of`` (outvar -> boolean operand) a conversion from bool to an
  eligible dtype."""
  if eqn.primitive.name != "convert_element_type":
    return
  x, = eqn.invars
  o, = eqn.outvars
  if x.aval.dtype == np.bool_ and np.dtype(o.aval.dtype) in ELIGIBLE:
    pred_of[o] = x


def match(eqn, pred_of):
  """For a ``mul`` equation with an operand from a recorded conversion: (the boolean
  operand, the other operand); else None."""
  if eqn.primitive.name != "mul" or not pred_of:
    return None
  a, b = eqn.invars
  shape = tuple(eqn.outvars[0].aval.shape)
  for x, y in ((a, b), (b, a)):
    if not _is_literal(x) and x in pred_of:
      p = pred_of[x]
      # a broadcast operand or a constant (folded by JAX before XLA sees it) hides the
      # pattern
      if not _is_literal(p) and tuple(p.aval.shape) == shape:
        return p, y
  return None


def mul_by_pred(pred, other, *, dtype, shape):
  """``select(pred, other, 0)`` broadcast to ``shape`` in ``dtype`` (NumPy buffers)."""
  dtype = np.dtype(dtype)
  other = np.asarray(other, dtype)
  return np.where(np.broadcast_to(np.asarray(pred, np.bool_), shape),
                  np.broadcast_to(other, shape), np.zeros((), dtype)).astype(dtype, copy=False)


__all__ = ["ELIGIBLE", "note_convert", "match", "mul_by_pred"]
