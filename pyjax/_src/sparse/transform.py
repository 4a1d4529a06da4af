"""``sparsify``: run a function written for dense arrays on BCOO (and BCSR) arguments.

Two forms, as in JAX, sharing one table of sparse rules keyed by primitive name:

* the jaxpr interpreter (``use_tracer=False``, the default): the function is traced to a
  jaxpr with each sparse argument standing in as a dense value of its shape and dtype,
  then the jaxpr is evaluated with sparse values where they flow;
* the tracer (``use_tracer=True``): the function runs on :class:`SparseTracer` values,
  one per argument, under a ``SparseInterpreter``; each primitive bound with a sparse
  operand runs its sparse rule on the enclosing interpreter, the others bind there as
  usual.  Python control flow on concrete values works, as in JAX's tracer form.

A primitive with a sparse operand and no rule raises JAX's ``NotImplementedError``
("sparse rule for ... is not implemented."; the densifying ones say so).  The rules are
JAX 0.10's set: the zero-preserving unary primitives, ``integer_pow`` (positive
exponents), ``add``/``sub``/``mul``/``div``, ``dot_general``, ``transpose``, ``reduce_sum``,
``reshape``, ``squeeze``, ``slice``, ``dynamic_slice``, ``rev``, ``gather``,
``broadcast_in_dim``, ``concatenate``, ``stack``, ``conv_general_dilated``, ``todense``,
``jit``, ``cond``, ``while``, ``scan`` (without sparse/dense ``xs``) and ``custom_jvp_call``;
a BCSR operand has the smaller BCSR set (unary ones, ``integer_pow``, ``dot_general``,
``broadcast_in_dim``, ``concatenate``, ``stack``, ``todense``, ``custom_jvp_call``).

Like JAX, values that share an indices buffer (an argument and what a unary function,
a product by a dense array or a transpose keeping the sparse dimensions made of it)
combine elementwise without growing: ``x + x`` adds the data; two different sparse
arrays are concatenated.  Differs from JAX: ``custom_jvp_call`` is evaluated on its
primal function (the custom JVP rule is dropped, as JAX's tracer form does).
"""
from __future__ import annotations

import functools
import itertools

from pyjax._src import core, tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.sparse import bcoo_array
from pyjax._src.sparse import indexing
from pyjax._src.sparse import layout
from pyjax._src.sparse.bcsr import BCSR, bcsr_dot_general
from pyjax._src.sparse.conv import bcoo_conv_general_dilated

__all__ = ["sparsify", "SparseTracer"]

_LINEAR_UNARY = {"conj", "copy", "imag", "neg", "real", "stage"}
_UNARY = {"abs", "asin", "asinh", "atan", "atanh", "bessel_i1e", "expm1", "log1p", "sign",
          "sin", "sinh", "sqrt", "square", "tan", "tanh", "convert_element_type"}
_DENSIFYING = {"acos", "acosh", "bessel_i0e", "cos", "cosh", "eq", "exp", "ge", "gt", "le",
               "lt", "log", "ne", "xor"}
_DENSE_OUT_MSG = ("would result in dense output. If this is your intent, use "
                  "sparse.todense() to convert your arguments to dense matrices.")


def _unimplemented(name):
  if name in _DENSIFYING:
    raise NotImplementedError(f"sparse rule for {name} is not implemented because it "
                              + _DENSE_OUT_MSG)
  raise NotImplementedError(f"sparse rule for {name} is not implemented.")


def _jnp():
  from pyjax import numpy as jnp
  return jnp


def _is_sparse_obj(x):
  return isinstance(x, (bcoo_array.BCOO, BCSR))


# --- sparse values: a BCOO/BCSR and the token of its indices buffer --------------------------
_refs = itertools.count()


class _Sp:
  """A sparse value inside ``sparsify``: ``mat`` and ``ref``, the identity of its indices
  (JAX's ``indices_ref``): values with the same ``ref`` have the same indices."""
  __slots__ = ("mat", "ref")

  def __init__(self, mat, ref=None):
    self.mat = mat
    self.ref = next(_refs) if ref is None else ref

  shape = property(lambda self: tuple(self.mat.shape))
  is_bcsr = property(lambda self: isinstance(self.mat, BCSR))


def _to_vals(args):
  return [_Sp(a) if _is_sparse_obj(a) else a for a in args]


def _to_arrays(vals):
  return [v.mat if type(v) is _Sp else v for v in vals]


def _same_layout(x, data):
  """``x`` (an _Sp) with new ``data``, its indices (and ref) kept."""
  m = x.mat
  if isinstance(m, BCSR):
    out = BCSR((data, m.indices, m.indptr), shape=m.shape, indices_sorted=m.indices_sorted,
               unique_indices=m.unique_indices)
  else:
    out = bcoo_array.BCOO((data, m.indices), shape=m.shape, indices_sorted=m.indices_sorted,
                          unique_indices=m.unique_indices)
  return _Sp(out, x.ref)


# --- rules: (prim, *vals, **params) -> list of values ----------------------------------------
def _unary(prim, x, **params):
  if prim.name not in _LINEAR_UNARY and not x.mat.unique_indices:
    # a nonlinear function must see each stored position once
    x = _Sp(x.mat.sum_duplicates(nse=x.mat.nse, remove_zeros=False))
  return [_same_layout(x, prim.bind(x.mat.data, **params))]


def _integer_pow(prim, x, *, y):
  if y <= 0:
    raise NotImplementedError(
        f"sparse rule for integer_pow with non-positive exponent {y} is not implemented "
        "because it would result in dense output. If this is your intent, use "
        "sparse.todense() to convert your argument to a dense array.")
  return _unary(prim, x, y=y)


def _standard(fn):
  return lambda prim, *vals, **kw: [_wrap_out(fn(*_to_arrays(vals), **kw))]


def _wrap_out(x):
  return _Sp(x) if _is_sparse_obj(x) else x


def _transpose(prim, x, *, permutation):
  permutation = tuple(permutation)
  m = x.mat
  out = bcoo_array.bcoo_transpose(m, permutation=permutation)
  nb, ns = m.n_batch, m.n_sparse
  keeps = permutation[:nb + ns] == tuple(range(nb + ns))
  return [_Sp(out, x.ref if keeps else None)]


def _stack(broadcast, concat):
  def rule(prim, *vals, axis):
    mats = _to_arrays(vals)
    shape = tuple(mats[0].shape)
    new_shape = shape[:axis] + (1,) + shape[axis:]
    dims = [d if d < axis else d + 1 for d in range(len(shape))]
    parts = [broadcast(m, shape=new_shape, broadcast_dimensions=dims) for m in mats]
    return [_Sp(concat(parts, dimension=axis))]
  return rule


def _add(prim, x, y):
  shape = tuple(_jnp().broadcast_shapes(tuple(x.shape), tuple(y.shape)))
  if type(x) is _Sp and type(y) is _Sp:
    if x.shape != y.shape:
      raise NotImplementedError("Addition between sparse matrices of different shapes.")
    if x.ref == y.ref:
      return [_same_layout(x, x.mat.data + y.mat.data)]
    a, b = x.mat, y.mat
    if a.indices.ndim != b.indices.ndim or a.data.ndim != b.data.ndim:
      raise NotImplementedError(
          "Addition between sparse matrices with different batch/dense dimensions.")
    jnp = _jnp()
    ax = a.indices.ndim - 2
    return [_Sp(bcoo_array.BCOO((jnp.concatenate([a.data, b.data], axis=ax),
                                 jnp.concatenate([a.indices, b.indices], axis=ax)),
                                shape=a.shape))]
  if type(y) is _Sp:
    x, y = y, x
  if tuple(core.get_aval(y).shape) != shape:
    raise NotImplementedError(
        "Addition between a sparse array X and a dense array Y is not implemented when the "
        "output shape is larger than Y.shape. This is to prevent silent densification of a "
        "large sparse array. If this is your intent, you can explicitly cast the sparse "
        "array to a dense matrix.")
  return [x.mat.todense() + y]


def _sub(prim, x, y):
  if type(x) is _Sp and type(y) is _Sp:
    neg = _same_layout(y, -y.mat.data)
    return _add(prim, x, neg)
  raise NotImplementedError("Subtraction between sparse and dense array.")


def _mul(prim, x, y, **params):
  if type(x) is _Sp and type(y) is _Sp:
    if x.ref == y.ref and x.mat.unique_indices:
      return [_same_layout(x, prim.bind(x.mat.data, y.mat.data, **params))]
    return [_Sp(layout.bcoo_multiply_sparse(x.mat, y.mat))]
  if type(y) is _Sp:
    x, y = y, x
  return [_same_layout(x, bcoo_array.bcoo_multiply_dense(x.mat, y))]


def _div(prim, x, y):
  if type(y) is _Sp:
    raise NotImplementedError(
        "Division by a sparse array is not implemented because it would result in dense "
        "output. If this is your intent, use sparse.todense() to convert your arguments to "
        "a dense array.")
  return [_same_layout(x, bcoo_array.bcoo_multiply_dense(x.mat, 1. / _jnp().asarray(y)))]


def _reduce_sum(prim, x, *, axes, **_):
  out = bcoo_array.bcoo_reduce_sum(x.mat, axes=axes)
  if not out.shape:
    return [out.data.sum()]
  return [_Sp(bcoo_array.BCOO((out.data, out.indices), shape=out.shape))]


def _dot_general(prim, x, y, *, dimension_numbers, precision=None,
                 preferred_element_type=None, **_):
  x, y = _to_arrays([x, y])
  return [_wrap_out(bcoo_array.bcoo_dot_general(
      x, y, dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type))]


def _bcsr_dot_general(prim, x, y, *, dimension_numbers, precision=None,
                      preferred_element_type=None, **_):
  x, y = _to_arrays([x, y])
  return [_wrap_out(bcsr_dot_general(
      x, y, dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type))]


def _gather(prim, x, idx, **kw):
  x, idx = _to_arrays([x, idx])
  if type(idx) is not type(x) and _is_sparse_obj(idx):
    _unimplemented("gather")
  return [_wrap_out(indexing.bcoo_gather(
      x, idx, kw["dimension_numbers"], kw["slice_sizes"],
      unique_indices=kw.get("unique_indices", False),
      indices_are_sorted=kw.get("indices_are_sorted", False), mode=kw.get("mode"),
      fill_value=kw.get("fill_value")))]


def _dynamic_slice(prim, x, *starts, slice_sizes):
  if any(type(s) is _Sp for s in starts):
    _unimplemented("dynamic_slice")
  return [_Sp(indexing.bcoo_dynamic_slice(x.mat, starts, slice_sizes))]


def _todense(prim, x, **_):
  return [x.mat.todense()]


# --- higher-order rules: sparsify the inner jaxprs -------------------------------------------
def _sparsify_jaxpr(closed, vals):
  """(ClosedJaxpr over the flat buffers of ``vals``' arrays, output tree): ``closed``
  evaluated with sparse rules; shared indices are not tracked across the boundary."""
  args = _to_arrays(vals)
  flat, in_tree = tree_util.tree_flatten(args)
  out_tree = []

  def fun(*leaves):
    inner = _to_vals(tree_util.tree_unflatten(in_tree, list(leaves)))
    outs = _to_arrays(_eval(closed.jaxpr, closed.consts, inner))
    out_flat, tree = tree_util.tree_flatten(outs)
    out_tree.append(tree)
    return out_flat

  sp = core.trace_to_jaxpr(fun, [core.get_aval(x) for x in flat])
  return sp, out_tree[0], flat


def _outputs(tree, flat):
  return _to_vals(tree_util.tree_unflatten(tree, list(flat)))


def _jit_rule(prim, *vals, jaxpr, name="sparsify", donated_invars=(), keep_unused=False,
              inline=False, **_):
  from pyjax._src.interpreters import staging
  if any(donated_invars):
    raise NotImplementedError("sparse xla_call with donated_invars")
  sp, tree, flat = _sparsify_jaxpr(jaxpr, vals)
  params = staging.jit_params(sp, name, (False,) * len(flat), keep_unused=keep_unused,
                              inline=inline)
  return _outputs(tree, staging.jit_p.bind(*flat, **params))


def _while_rule(prim, *vals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  cc, bc = vals[:cond_nconsts], vals[cond_nconsts:cond_nconsts + body_nconsts]
  init = vals[cond_nconsts + body_nconsts:]
  cj, _, cflat = _sparsify_jaxpr(cond_jaxpr, list(cc) + list(init))
  bj, tree, bflat = _sparsify_jaxpr(body_jaxpr, list(bc) + list(init))
  n_init = len(tree_util.tree_leaves(_to_arrays(init)))
  ncc, nbc = len(cflat) - n_init, len(bflat) - n_init
  outs = prim.bind(*cflat[:ncc], *bflat, cond_nconsts=ncc, cond_jaxpr=cj, body_nconsts=nbc,
                   body_jaxpr=bj)
  return _outputs(tree, outs)


def _scan_rule(prim, *vals, jaxpr, num_consts, num_carry, **params):
  if vals[num_consts + num_carry:]:
    raise NotImplementedError("sparse rule for scan with x values.")
  sp, tree, flat = _sparsify_jaxpr(jaxpr, vals)
  n_consts = len(tree_util.tree_leaves(_to_arrays(vals[:num_consts])))
  outs = prim.bind(*flat, jaxpr=sp, num_consts=n_consts, num_carry=len(flat) - n_consts,
                   **params)
  return _outputs(tree, outs)


def _cond_rule(prim, index, *vals, branches, **params):
  if type(index) is _Sp:
    _unimplemented("cond")
  sps = [_sparsify_jaxpr(b, vals) for b in branches]
  (j0, t0, flat), rest = sps[0], sps[1:]
  sig = lambda j: [(a.shape, a.dtype) for a in j.out_avals]
  for j, t, _ in rest:
    if t != t0 or sig(j) != sig(j0):
      raise TypeError("sparsified true_fun output and sparsified false_fun output must have "
                      f"identical types, got {t0} and {t}.")
  outs = prim.bind(index, *flat, branches=tuple(j for j, _, _ in sps), **params)
  return _outputs(t0, outs)


def _custom_jvp_rule(prim, *vals, call_jaxpr, **_):
  return _eval(call_jaxpr.jaxpr, call_jaxpr.consts, list(vals))


def _layout_rules(broadcast, concat):
  """The broadcast/concatenate/stack rules of one format (its two functions)."""
  return {
      "stack": _stack(broadcast, concat),
      "broadcast_in_dim": _standard(lambda x, *, shape, broadcast_dimensions, **_: broadcast(
          x, shape=shape, broadcast_dimensions=broadcast_dimensions)),
      "concatenate": _standard(lambda *xs, dimension: concat(list(xs), dimension=dimension)),
  }


def _rule_tables():
  bcoo = {n: _unary for n in _UNARY | _LINEAR_UNARY}
  bcoo.update(_layout_rules(indexing.bcoo_broadcast_in_dim, layout.bcoo_concatenate))
  bcoo.update({
      "integer_pow": _integer_pow, "transpose": _transpose, "add": _add, "sub": _sub,
      "mul": _mul, "div": _div, "reduce_sum": _reduce_sum, "gather": _gather,
      "dot_general": _dot_general, "dynamic_slice": _dynamic_slice, "todense": _todense,
      "conv_general_dilated": _standard(
          lambda x, y, *, precision=None, preferred_element_type=None, **kw:
          bcoo_conv_general_dilated(x, y, **kw)),
      "reshape": _standard(lambda x, *, new_sizes, dimensions=None, **_:
                           bcoo_array.bcoo_reshape(x, new_sizes=new_sizes,
                                                   dimensions=dimensions)),
      "rev": _standard(lambda x, *, dimensions: indexing.bcoo_rev(x, dimensions)),
      "slice": _standard(lambda x, *, start_indices, limit_indices, strides=None:
                         bcoo_array.bcoo_slice(x, start_indices=start_indices,
                                               limit_indices=limit_indices, strides=strides)),
      "squeeze": _standard(lambda x, *, dimensions: bcoo_array.bcoo_squeeze(
          x, dimensions=dimensions)),
      "jit": _jit_rule, "while": _while_rule, "scan": _scan_rule, "cond": _cond_rule,
      "custom_jvp_call": _custom_jvp_rule,
  })
  bcsr = {n: _unary for n in _UNARY | _LINEAR_UNARY}
  bcsr.update(_layout_rules(indexing.bcsr_broadcast_in_dim, indexing.bcsr_concatenate))
  bcsr.update({"integer_pow": _integer_pow, "dot_general": _bcsr_dot_general,
               "todense": _todense, "custom_jvp_call": _custom_jvp_rule})
  return bcoo, bcsr


_BCOO_RULES, _BCSR_RULES = _rule_tables()


def _apply(prim, vals, params):
  """Values out of ``prim`` on ``vals`` (at least one an _Sp), by the sparse rules."""
  table = _BCSR_RULES if any(type(v) is _Sp and v.is_bcsr for v in vals) else _BCOO_RULES
  rule = table.get(prim.name)
  if rule is None:
    _unimplemented(prim.name)
  out = rule(prim, *vals, **params)
  return out if prim.multiple_results else out[0]


# --- the jaxpr-interpreter form --------------------------------------------------------------
def _eval(jaxpr, consts, vals):
  env = {}

  def read(v):
    return core.literal_value(v) if type(v) is core.Literal else env[v]

  for v, x in zip(jaxpr.constvars, consts):
    env[v] = x
  for v, x in zip(jaxpr.invars, vals):
    env[v] = x
  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    prim = eqn.primitive
    if any(type(x) is _Sp for x in ins):
      out = _apply(prim, ins, eqn.params)
    else:
      out = prim.bind(*ins, **eqn.params)
    if prim.multiple_results:
      for v, o in zip(eqn.outvars, out):
        env[v] = o
    else:
      env[eqn.outvars[0]] = out
  return [read(v) for v in jaxpr.outvars]


def _with_interpreter(f):
  @functools.wraps(f)
  def wrapped(*args, **params):
    leaves, in_tree = tree_util.tree_flatten(args, is_leaf=_is_sparse_obj)
    avals = [ShapedArray(tuple(x.shape), x.dtype, getattr(x.data, "weak_type", False))
             if _is_sparse_obj(x) else core.get_aval(x) for x in leaves]
    out_tree = []

    def flat(*xs):
      outs, tree = tree_util.tree_flatten(f(*tree_util.tree_unflatten(in_tree, list(xs)),
                                            **params))
      out_tree.append(tree)
      return outs

    closed = core.trace_to_jaxpr(flat, avals)
    outs = _to_arrays(_eval(closed.jaxpr, closed.consts, _to_vals(leaves)))
    return tree_util.tree_unflatten(out_tree[0], outs)
  return wrapped


# --- the tracer form -------------------------------------------------------------------------
class SparseTracer(core.Tracer):
  """A value of ``sparsify(f, use_tracer=True)``'s trace: dense, or sparse (a BCOO/BCSR
  whose operations run their sparse rules).  Its ``aval`` is the dense array's type."""
  __slots__ = ("_val",)

  def __init__(self, trace, val):
    self._trace = trace
    self._val = val

  @property
  def aval(self):
    v = self._val
    if type(v) is _Sp:
      data = v.mat.data
      return ShapedArray(v.shape, data.dtype, getattr(data, "weak_type", False))
    return core.get_aval(v)

  @property
  def spenv(self):
    """The trace's environment (JAX's name): here the interpreter."""
    return self._trace

  def __repr__(self):
    kind = type(self._val.mat).__name__ if type(self._val) is _Sp else "dense"
    return f"SparseTracer<{self.aval.str_short(short_dtypes=False)}, {kind}>"


class SparseInterpreter(core.Interpreter):
  """Runs each primitive with a sparse operand through its sparse rule on ``parent``."""

  def __init__(self, parent):
    self.parent = parent

  def __repr__(self):
    return "SparseTrace"

  def _val(self, x):
    if isinstance(x, SparseTracer):
      if x._trace is self:
        return x._val
      if x._trace.finished:
        core.raise_escaped_tracer(x)
    return x

  def process_primitive(self, prim, args, params):
    vals = [self._val(x) for x in args]
    with core.set_interpreter(self.parent):
      if any(type(v) is _Sp for v in vals):
        out = _apply(prim, vals, params)
      else:
        out = prim.bind(*vals, **params)
    if prim.multiple_results:
      return [SparseTracer(self, o) for o in out]
    return SparseTracer(self, out)


def _with_tracer(f):
  @functools.wraps(f)
  def wrapped(*args):
    leaves, in_tree = tree_util.tree_flatten(args, is_leaf=_is_sparse_obj)
    interp = SparseInterpreter(core.current_interpreter())
    try:
      tracers = [SparseTracer(interp, v) for v in _to_vals(leaves)]
      with core.set_interpreter(interp):
        out = f(*tree_util.tree_unflatten(in_tree, tracers))
      outs, out_tree = tree_util.tree_flatten(out)
      outs = _to_arrays([interp._val(o) for o in outs])
    finally:
      interp.finished = True
    return tree_util.tree_unflatten(out_tree, outs)
  return wrapped


def sparsify(f, use_tracer=False):
  """``f`` made to accept BCOO/BCSR arguments wherever it takes arrays: sparse values
  flow through the primitives that have sparse rules (JAX 0.10's set), and results that
  stay sparse are returned as BCOO/BCSR.  ``use_tracer=True`` runs ``f`` on
  :class:`SparseTracer` values instead of interpreting its jaxpr (keyword arguments are
  then not accepted, as in JAX).  Differs from JAX: a ``custom_jvp`` function is run on
  its primal function (its custom JVP rule is dropped)."""
  return _with_tracer(f) if use_tracer else _with_interpreter(f)
