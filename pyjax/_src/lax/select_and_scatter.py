"""The general ``select_and_scatter`` primitive (XLA's SelectAndScatter): in each window
of ``operand`` pick one element with ``select`` (``select(a, b)`` true keeps ``a``; the
first element of a window starts as the pick), then combine ``source``'s value for that
window into the output at the picked position with ``scatter``, starting from
``init_value``.  Padding positions never get picked.

JAX binds it in the lowering of ``select_and_scatter_add`` (the gradient of max pooling);
pyjax's ``select_and_scatter_add`` has its own implementation, so this general form is
reached through ``_select_and_scatter`` (lax-internal, as in JAX).  Its jaxprs are the
scalar ``select`` and ``scatter`` computations (params ``select_jaxpr``/``scatter_jaxpr``,
open jaxprs, with their constants).  As in JAX there is no differentiation rule.
"""
from __future__ import annotations

from pyjax._src import core
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import batching

__all__ = ["select_and_scatter_p"]

select_and_scatter_p = core.Primitive("select_and_scatter")


@select_and_scatter_p.def_abstract_eval
def _select_and_scatter_abstract(operand, source, init_value, *, select_jaxpr, select_consts,
                                 scatter_jaxpr, scatter_consts, window_dimensions,
                                 window_strides, padding):
  for name, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides)):
    if not all(int(d) >= 0 for d in v):
      raise TypeError(f"select_and_scatter {name} must have every element be nonnegative, "
                      f"got {tuple(v)}.")
  if len(window_dimensions) != len(window_strides):
    raise TypeError("select_and_scatter got inconsistent window_strides and window_dimensions: "
                    f"got window_strides {tuple(window_strides)} and window_dimensions "
                    f"{tuple(window_dimensions)}.")
  return ShapedArray(operand.shape, operand.dtype, operand.weak_type)


def _trace_scalar_fn(fn, aval):
  closed = core.trace_to_jaxpr(lambda a, b: [fn(a, b)], [aval, aval])
  return closed.jaxpr, tuple(closed.consts)


def _select_and_scatter(operand, select, window_dimensions, window_strides, padding, source,
                        init_value, scatter):
  """Bind ``select_and_scatter`` with ``select``/``scatter`` traced on scalars of
  ``init_value``'s type."""
  a = core.get_aval(init_value)
  scalar = ShapedArray((), a.dtype, a.weak_type)
  sel_j, sel_c = _trace_scalar_fn(select, scalar)
  sc_j, sc_c = _trace_scalar_fn(scatter, scalar)
  return select_and_scatter_p.bind(
      operand, source, init_value, select_jaxpr=sel_j, select_consts=sel_c,
      scatter_jaxpr=sc_j, scatter_consts=sc_c, window_dimensions=tuple(window_dimensions),
      window_strides=tuple(window_strides), padding=tuple(tuple(p) for p in padding))


def _select_and_scatter_batch(args, dims, *, window_dimensions, window_strides, padding,
                              **params):
  operand, source, init = args
  od, sd, idim = dims
  if idim is not batching.not_mapped:
    raise NotImplementedError("select_and_scatter: a batched init_value is not supported")
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  operand = batching.bdim_at_front(operand, od, size)
  source = batching.bdim_at_front(source, sd, size)
  out = select_and_scatter_p.bind(
      operand, source, init, window_dimensions=(1,) + tuple(window_dimensions),
      window_strides=(1,) + tuple(window_strides), padding=((0, 0),) + tuple(padding),
      **params)
  return out, 0


batching.primitive_batchers[select_and_scatter_p] = _select_and_scatter_batch
