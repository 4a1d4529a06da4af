"""JAX's public batching-rule tables (``jax.interpreters.batching``) over pyjax's.

pyjax's ``batching.primitive_batchers`` already has JAX's signature
``rule(args, dims, **params) -> (out, out_dim)`` and is exported as it is; pyjax's
``batching.axis_primitive_batchers`` has the signature of JAX's
``fancy_primitive_batchers`` (``rule(axis_data, args, dims, **params)``) and is exported
under that name.  JAX's ``axis_primitive_batchers`` is its older form,
``rule(axis_size, axis_name, trace_type, args, dims, **params)``: a mapping that stores
each rule adapted to the new form (``trace_type`` is None, as in JAX).
"""
from __future__ import annotations

import collections.abc

from pyjax._src.interpreters import batching

fancy_primitive_batchers = batching.axis_primitive_batchers


class AxisPrimitiveBatchers(collections.abc.MutableMapping):
  """``axis_primitive_batchers[p] = rule(axis_size, axis_name, trace_type, args, dims,
  **params)``: stored in pyjax's table (``fancy_primitive_batchers``) adapted."""

  def __init__(self):
    self._rules = {}

  def __setitem__(self, prim, rule):
    def adapted(axis_data, args, dims, **params):   # (tuples, as JAX passes them)
      return rule(axis_data.size, axis_data.name, None, tuple(args), tuple(dims), **params)
    self._rules[prim] = rule
    batching.axis_primitive_batchers[prim] = adapted

  def __getitem__(self, prim):
    return self._rules[prim]

  def __delitem__(self, prim):
    del self._rules[prim]
    del batching.axis_primitive_batchers[prim]

  def __iter__(self):
    return iter(self._rules)

  def __len__(self):
    return len(self._rules)


axis_primitive_batchers = AxisPrimitiveBatchers()


def reducer_batcher(prim, args, dims, *, axes, **params):
  """Batching rule of a reduction over ``axes``: move the batch axis to the front and
  shift the reduced axes past it."""
  (x,), (d,) = args, dims
  if d is batching.not_mapped:
    return prim.bind(x, axes=axes, **params), batching.not_mapped
  x = batching.moveaxis(x, d, 0)
  axes = tuple(a + 1 for a in axes)
  return prim.bind(x, axes=axes, **params), 0


def defreducer(prim, ident=None):
  """Register ``reducer_batcher`` for a single-operand reduction taking ``axes``
  (``ident`` is accepted for JAX compatibility and unused)."""
  del ident
  batching.primitive_batchers[prim] = (
      lambda args, dims, **params: reducer_batcher(prim, args, dims, **params))
