"""``sparsify``: run a function written for dense arrays on BCOO (and BCSR) arguments.

The function is traced to a jaxpr with each sparse argument standing in as a dense value
of its shape and dtype; the jaxpr is then evaluated with sparse values where they flow:
each equation with a sparse operand runs its sparse rule (``bcoo_dot_general`` for
``dot_general``, the data for zero-preserving unary functions, ...), the others bind as
usual, and ``jit`` equations are evaluated the same way inside.  A primitive without a
rule raises JAX's NotImplementedError ("sparse rule for ... is not implemented").

Differs from JAX: only the jaxpr-interpreter form exists (``use_tracer`` is accepted and
ignored); control flow (``cond``, ``while``, ``scan``), ``broadcast_in_dim``,
``dynamic_slice`` and ``rev`` have no rules yet.
"""
from __future__ import annotations

import functools

from pyjax._src import core, tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.sparse import bcoo_array
from pyjax._src.sparse import indexing
from pyjax._src.sparse import layout
from pyjax._src.sparse.bcsr import BCSR, bcsr_dot_general
from pyjax._src.sparse.conv import bcoo_conv_general_dilated

__all__ = ["sparsify"]

_ZERO_PRESERVING = {"abs", "asin", "asinh", "atan", "atanh", "bessel_i1e", "expm1", "log1p",
                    "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh",
                    "convert_element_type", "copy", "copy_p", "real", "imag", "neg"}
_DENSIFYING = {"acos", "acosh", "bessel_i0e", "cos", "cosh", "eq", "exp", "ge", "gt", "le",
               "lt", "log", "ne", "xor"}


def _unimplemented(name):
  if name in _DENSIFYING:
    raise NotImplementedError(f"sparse rule for {name} is not implemented because it would "
                              "result in dense output. If this is your intent, use "
                              "sparse.todense() to convert your arguments to dense matrices.")
  raise NotImplementedError(f"sparse rule for {name} is not implemented.")


def _is_sparse(x):
  return isinstance(x, (bcoo_array.BCOO, BCSR))


def _with_data(mat, data):
  return bcoo_array.BCOO((data, mat.indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def _unary(prim, x, params):
  if prim.name == "integer_pow" and params["y"] <= 0:
    raise NotImplementedError(
        f"sparse rule for integer_pow with non-positive exponent {params['y']} is not "
        "implemented because it would result in dense output. If this is your intent, use "
        "sparse.todense() to convert your argument to a dense array.")
  return _with_data(x, prim.bind(x.data, **params))


def _mul(prim, x, y, params):
  if _is_sparse(x) and _is_sparse(y):
    return layout.bcoo_multiply_sparse(x, y)
  sp, other = (x, y) if _is_sparse(x) else (y, x)
  if not core.get_aval(other).shape:
    return _with_data(sp, prim.bind(sp.data, other) if sp is x else prim.bind(other, sp.data))
  return _with_data(sp, bcoo_array.bcoo_multiply_dense(sp, other))


def _div(prim, x, y, params):
  if _is_sparse(y) or core.get_aval(y).shape:
    _unimplemented("div")
  return _with_data(x, prim.bind(x.data, y))


def _add(prim, x, y, params):
  if prim.name == "sub":
    return x - y
  return x + y


def _rules():
  return {
      "mul": _mul, "div": _div, "add": _add, "sub": _add, "add_any": _add,
      "dot_general": lambda p, x, y, kw: bcoo_array.bcoo_dot_general(
          x, y, dimension_numbers=kw["dimension_numbers"],
          preferred_element_type=kw.get("preferred_element_type")),
      "transpose": lambda p, x, kw: bcoo_array.bcoo_transpose(x, permutation=kw["permutation"]),
      "reduce_sum": lambda p, x, kw: bcoo_array.bcoo_reduce_sum(x, axes=kw["axes"]),
      "reshape": lambda p, x, kw: bcoo_array.bcoo_reshape(x, new_sizes=kw["new_sizes"],
                                                 dimensions=kw.get("dimensions")),
      "squeeze": lambda p, x, kw: bcoo_array.bcoo_squeeze(x, dimensions=kw["dimensions"]),
      "slice": lambda p, x, kw: bcoo_array.bcoo_slice(x, start_indices=kw["start_indices"],
                                             limit_indices=kw["limit_indices"],
                                             strides=kw.get("strides")),
      "concatenate": lambda p, *a: layout.bcoo_concatenate(list(a[:-1]),
                                                       dimension=a[-1]["dimension"]),
      "broadcast_in_dim": lambda p, x, *dyn_kw: indexing.bcoo_broadcast_in_dim(
          x, shape=dyn_kw[-1]["shape"], broadcast_dimensions=dyn_kw[-1]["broadcast_dimensions"]),
      "rev": lambda p, x, kw: indexing.bcoo_rev(x, kw["dimensions"]),
      "conv_general_dilated": lambda p, x, y, kw: bcoo_conv_general_dilated(
          x, y, window_strides=kw["window_strides"], padding=kw["padding"],
          lhs_dilation=kw["lhs_dilation"], rhs_dilation=kw["rhs_dilation"],
          dimension_numbers=kw["dimension_numbers"],
          feature_group_count=kw["feature_group_count"],
          batch_group_count=kw["batch_group_count"]),
      "dynamic_slice": _dynamic_slice,
      "gather": lambda p, x, i, kw: indexing.bcoo_gather(
          x, i, kw["dimension_numbers"], kw["slice_sizes"],
          unique_indices=kw.get("unique_indices", False),
          indices_are_sorted=kw.get("indices_are_sorted", False), mode=kw.get("mode"),
          fill_value=kw.get("fill_value")),
  }


def _dynamic_slice(prim, x, *rest):
  *starts, kw = rest
  if any(_is_sparse(s) for s in starts):
    _unimplemented("dynamic_slice")
  return indexing.bcoo_dynamic_slice(x, starts, kw["slice_sizes"])


def _eval(jaxpr, consts, args):
  env = {}
  rules = _rules()

  def read(v):
    return core.literal_value(v) if type(v) is core.Literal else env[v]

  for v, x in zip(jaxpr.constvars, consts):
    env[v] = x
  for v, x in zip(jaxpr.invars, args):
    env[v] = x
  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    prim, params = eqn.primitive, eqn.params
    if not any(_is_sparse(x) for x in ins):
      out = prim.bind(*ins, **params)
    elif prim.name == "jit":
      inner = params["jaxpr"]
      out = _eval(inner.jaxpr, inner.consts, ins)
    elif prim.name in _ZERO_PRESERVING or prim.name == "integer_pow":
      out = _unary(prim, ins[0], params)
    elif (prim.name == "dot_general" and isinstance(ins[0], BCSR)
          and not _is_sparse(ins[1])):   # JAX's BCSR rule: the bcsr_dot_general primitive
      out = bcsr_dot_general(ins[0], ins[1], dimension_numbers=params["dimension_numbers"],
                             preferred_element_type=params.get("preferred_element_type"))
    elif prim.name in rules:
      ins = [x.to_bcoo() if isinstance(x, BCSR) else x for x in ins]
      out = rules[prim.name](prim, *ins, params)
    else:
      _unimplemented(prim.name)
    if prim.multiple_results:
      for v, o in zip(eqn.outvars, out):
        env[v] = o
    else:
      env[eqn.outvars[0]] = out
  return [read(v) for v in jaxpr.outvars]


def sparsify(f, use_tracer=False):
  """``f`` made to accept BCOO/BCSR arguments wherever it takes arrays: sparse values
  flow through the operations that have sparse rules; results that stay sparse are
  returned as BCOO (0-d ones as dense scalars)."""
  del use_tracer

  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    leaves, in_tree = tree_util.tree_flatten((args, kwargs), is_leaf=_is_sparse)
    avals = [ShapedArray(tuple(x.shape), x.dtype) if _is_sparse(x) else core.get_aval(x)
             for x in leaves]
    out_tree = []

    def flat(*xs):
      a, kw = tree_util.tree_unflatten(in_tree, list(xs))
      outs, tree = tree_util.tree_flatten(f(*a, **kw))
      out_tree.append(tree)
      return outs

    closed = core.trace_to_jaxpr(flat, avals)
    outs = _eval(closed.jaxpr, closed.consts, leaves)
    outs = [o.todense() if _is_sparse(o) and not o.shape else o for o in outs]
    return tree_util.tree_unflatten(out_tree[0], outs)
  return wrapped
