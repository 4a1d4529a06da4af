"""Differentiation API: jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev,
jacobian, hessian, stop_gradient, custom_jvp and custom_vjp.

Built on ``pyjax._src.interpreters.ad``: forward mode runs a JVP interpreter; reverse mode
linearizes (the primal computation runs now, the tangent computation is staged into a
jaxpr) and transposes that linear jaxpr.  Python control flow on concrete values works
under ``grad`` and ``jvp`` as in JAX (integer/boolean results, such as comparisons, leave
the transformation as plain values).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
from typing import Any

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src import api_util as _api_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.interpreters.ad import Zero
from pyjax._src.lax import elementwise as _elementwise

__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev",
           "jacobian", "hessian", "stop_gradient", "custom_jvp", "custom_vjp",
           "custom_jvp_call_p", "custom_vjp_call_p", "custom_lin_p", "SymbolicZero",
           "closure_convert", "zero_from_primal", "custom_gradient", "CustomVJPPrimal",
           "custom_vjp_primal_tree_values"]

SymbolicZero = Zero


# --- argument checks ---------------------------------------------------------------------
def _check_callable(fun):
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if inspect.isgeneratorfunction(fun):
    raise TypeError(f"Expected a function, got a generator function: {fun}")


def _check_arg(x):
  if isinstance(x, core.Tracer):
    return
  try:
    core.get_aval(x)
  except TypeError:
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type.") from None


def _dtype(x):
  return core.get_aval(x).dtype


def _ensure_index(argnums):
  if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
    return operator.index(argnums)
  return tuple(operator.index(i) for i in argnums)


def _argnums_tuple(argnums):
  return (argnums,) if isinstance(argnums, int) else argnums


def _check_argnums(argnums, nargs):
  t = _argnums_tuple(argnums)
  if not t:
    return
  max_argnum = max(t)
  if max_argnum >= nargs:
    raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                    f"{max_argnum + 1} positional arguments to be passed by the caller, but "
                    f"got only {nargs} positional arguments.")


def _fun_name(fun):
  return getattr(fun, "__name__", None) or type(fun).__name__


def _fun_sourceinfo(fun):
  f = inspect.unwrap(fun) if callable(fun) else fun
  name = _fun_name(f)
  try:
    code = f.__code__
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"
  except AttributeError:
    return name


def _check_input_dtype_revderiv(name, holomorphic, allow_int, x):
  _check_arg(x)
  aval = core.get_aval(x)
  d = aval.dtype
  if holomorphic:
    if not dtypes.is_complex(d):
      raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                      f"but got {d.name}.")
  if d == dtypes.bool_ or dtypes.is_int(d):
    if not allow_int:
      raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                      f"sub-dtype of np.inexact), but got {d.name}. If you want to use "
                      "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")
  elif not dtypes.is_inexact(d):
    raise TypeError(f"{name} requires numerical-valued inputs (input dtype that is a "
                    f"sub-dtype of np.bool_ or np.number), but got {d.name}.")


def _check_output_dtype_revderiv(name, holomorphic, x):
  d = core.get_aval(x).dtype
  if holomorphic:
    if not dtypes.is_complex(d):
      raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, "
                      f"but got {d.name}.")
  elif dtypes.is_complex(d):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                    f"of np.floating), but got {d.name}. For holomorphic differentiation, "
                    "pass holomorphic=True. For differentiation of non-holomorphic functions "
                    "involving complex outputs, use jax.vjp directly.")
  elif not dtypes.is_float(d):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                    f"of np.floating), but got {d.name}. For differentiation of functions "
                    "with integer outputs, use jax.vjp directly.")


def _check_input_dtype_jacfwd(holomorphic, x):
  _check_arg(x)
  d = core.get_aval(x).dtype
  if holomorphic:
    if not dtypes.is_complex(d):
      raise TypeError("jacfwd with holomorphic=True requires inputs with complex dtype, "
                      f"but got {d.name}.")
  elif not dtypes.is_float(d):
    raise TypeError("jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                    f"np.floating), but got {d.name}. For holomorphic differentiation, pass "
                    "holomorphic=True. For differentiation of non-holomorphic functions "
                    "involving complex inputs or integer inputs, use jax.jvp directly.")


def _check_output_dtype_jacfwd(holomorphic, x):
  d = core.get_aval(x).dtype
  if holomorphic and not dtypes.is_complex(d):
    raise TypeError("jacfwd with holomorphic=True requires outputs with complex dtype, but "
                    f"got {d.name}.")


def _split_aux(out, has_aux):
  if not has_aux:
    return out, None
  if not isinstance(out, tuple) or len(out) != 2:
    raise TypeError("expected function with aux output to return a two-element tuple, but "
                    f"got type {type(out)} with value {out!r}")
  return out[0], out[1]


def _flat_output_fun(fun, in_tree, has_aux, out_tree_cell):
  """fun of a pytree -> flat function of leaves returning (leaves, aux)."""
  def flat_fun(*leaves):
    args = tree_util.tree_unflatten(in_tree, leaves)
    out = fun(*args)
    out, aux = _split_aux(out, has_aux)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_cell.append(out_tree)
    for o in out_leaves:
      _check_arg(o)
    return out_leaves, aux
  return flat_fun


def _ones_like(x, holomorphic=False):
  aval = core.get_aval(x)
  return ad.scalar_const(1, aval.dtype, aval.weak_type) if not aval.shape else \
      _broadcast(ad.scalar_const(1, aval.dtype, aval.weak_type), aval.shape)


def _broadcast(x, shape):
  from pyjax._src.lax import shapes
  return shapes.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=(),
                                        sharding=None)


def _instantiate_ct(ct, primal_aval):
  """A cotangent for the user: real zeros for Zero (float0 for integer inputs)."""
  if type(ct) is Zero:
    return ad.zeros_like_aval(ad.tangent_aval(primal_aval))
  return ct


# --- jvp / linearize --------------------------------------------------------------------
def jvp(fun, primals, tangents, has_aux=False):
  """Forward-mode Jacobian-vector product: ``(fun(*primals), J @ tangents)``.

  Integer/boolean primals take float0 tangents; their output tangents are float0 zeros."""
  _check_callable(fun)
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                    f"{type(primals).__name__} and {type(tangents).__name__}.")
  ps_flat, tree_def = tree_util.tree_flatten(primals)
  ts_flat, tree_def_2 = tree_util.tree_flatten(tangents)
  if tree_def != tree_def_2:
    raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                    f"structure; primals have tree structure {tree_def} whereas tangents have "
                    f"tree structure {tree_def_2}.")
  flat_tangents = []
  for p, t in zip(ps_flat, ts_flat):
    _check_arg(p)
    _check_arg(t)
    pa, ta = core.get_aval(p), _tangent_value_aval(t)
    expected = ad.tangent_dtype(pa.dtype)
    if ta.dtype != expected:
      raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must be "
                      "equal, or in case of int/bool primal dtype the tangent dtype must be "
                      f"float0.Got primal dtype {pa.dtype} and so expected tangent dtype "
                      f"{expected}, but got tangent dtype {ta.dtype} instead.")
    if pa.shape != ta.shape:
      raise ValueError("jvp called with different primal and tangent shapes;"
                       f"Got primal shape {pa.shape} and tangent shape as {ta.shape}")
    flat_tangents.append(Zero(ta) if expected == ad.float0 else t)
  out_tree_cell = []
  flat_fun = _flat_output_fun(lambda *a: fun(*a), tree_def, has_aux, out_tree_cell)
  aux_cell = []

  def run(*leaves):
    outs, aux = flat_fun(*leaves)
    aux_cell.append(aux)
    return outs

  parent = core.current_interpreter()
  interp = ad.JVPInterpreter(parent)
  ins = [interp.new_tracer(p, t) if type(t) is not Zero else p
         for p, t in zip(ps_flat, flat_tangents)]
  try:
    with core.set_interpreter(interp):
      outs = run(*ins)
    out_p, out_t = ad._lower_outputs(interp, outs)
    aux = tree_util.tree_map(lambda x: ad.lower_value(interp, x), aux_cell[0]) if has_aux else None
  finally:
    interp.finished = True
  out_t = [ad.instantiate_zeros(t) for t in out_t]
  out_tree = out_tree_cell[0]
  res = (tree_util.tree_unflatten(out_tree, out_p), tree_util.tree_unflatten(out_tree, out_t))
  return (*res, aux) if has_aux else res


def _tangent_value_aval(t):
  if isinstance(t, np.ndarray) and t.dtype == ad.float0:
    return ShapedArray(t.shape, ad.float0, False)
  return core.get_aval(t)


def linearize(fun, *primals, has_aux=False):
  """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the Jacobian-vector
  product from a staged linear jaxpr, without re-running ``fun``."""
  _check_callable(fun)
  leaves, in_tree = tree_util.tree_flatten(primals)
  for x in leaves:
    _check_arg(x)
  out_tree_cell = []
  flat_fun = _flat_output_fun(fun, in_tree, has_aux, out_tree_cell)
  out_p, lin, aux = ad.linearize_flat(flat_fun, leaves, forward=True, has_aux=True)
  out_tree = out_tree_cell[0]
  in_avals = [core.get_aval(x) for x in leaves]
  # as JAX's, the linearized function is a ``Partial`` over the residuals: a pytree that
  # jit and vmap can return (equinox's checkpointed while_loop tests)
  f_jvp = tree_util.Partial(_JVPPushforward(lin, in_tree, out_tree, in_avals), *lin.consts)
  out = tree_util.tree_unflatten(out_tree, out_p)
  return (out, f_jvp, aux) if has_aux else (out, f_jvp)


class _LinearMap:
  """The static part of a linear map whose residuals are passed as its leading arguments
  (by a ``Partial``): the linear jaxpr without constants, the trees and the input avals."""

  def __init__(self, lin, in_tree, out_tree, in_avals):
    self.lin = ad.LinearFunction(lin.jaxpr, (), lin.in_avals, lin.in_mask, lin.out_avals,
                                 lin.out_mask)
    self.n_res = len(lin.consts)
    self.in_tree = in_tree
    self.out_tree = out_tree
    self.in_avals = in_avals

  def _with(self, res):
    lin = self.lin
    return ad.LinearFunction(lin.jaxpr, list(res), lin.in_avals, lin.in_mask, lin.out_avals,
                             lin.out_mask)


class _JVPPushforward(_LinearMap):
  """The tangent map returned by ``linearize`` (a ``_LinearMap``)."""

  def __call__(self, *args):
    res, tangents = args[:self.n_res], args[self.n_res:]
    t_leaves, t_tree = tree_util.tree_flatten(tangents)
    if t_tree != self.in_tree:
      raise TypeError(f"expected {self.in_tree}, got {t_tree}")
    ts = []
    for t, pa in zip(t_leaves, self.in_avals):
      ta = _tangent_value_aval(t)
      expected = ad.tangent_aval(pa)
      if ta.shape != expected.shape or ta.dtype != expected.dtype:
        raise ValueError("linearized function called on tangent values inconsistent with the "
                         "original primal values:\nGot tangent aval "
                         f"{_str_aval(ta)} for primal aval {_str_aval(pa)} but expected "
                         f"{_str_aval(expected)}.")
      ts.append(Zero(expected) if expected.dtype == ad.float0 else t)
    return tree_util.tree_unflatten(self.out_tree, self._with(res)(ts))


def _str_aval(aval):
  s = ad._aval_str(aval) if aval.dtype == ad.float0 else aval.str_short(short_dtypes=False)
  return ("~" if aval.weak_type else "") + s


# --- vjp --------------------------------------------------------------------------------
_VJP_ARITY_MSG = """
The function returned by `jax.vjp` applied to {name} was called with {n} arguments,
but functions returned by `jax.vjp` must be called with a single argument
corresponding to the single value returned by the function being differentiated
(even if that returned value is a tuple or other container).

For example, if we have:

  def f(x):
    return (x, x)
  _, f_vjp = jax.vjp(f, 1.0)

the function `f` returns a single tuple as output, and so we call `f_vjp` with a
single tuple as its argument:

  x_bar, = f_vjp((2.0, 2.0))

If we instead call `f_vjp(2.0, 2.0)`, with the values 'splatted out' as
arguments rather than in a tuple, this error can arise."""


class _VJPPullback(_LinearMap):
  """The cotangent map returned by ``vjp``, wrapped in a ``tree_util.Partial`` whose
  arguments are the residuals (as JAX's): the vjp function is a pytree with the residuals
  as leaves, so it can be returned from and passed into ``jit`` (``fwd_and_bwd``).  This
  object holds only static data (the linear jaxpr, avals, trees)."""

  def __init__(self, lin, in_tree, out_tree, in_avals, out_avals, fun):
    super().__init__(lin, in_tree, out_tree, in_avals)
    self.out_avals = out_avals
    self.fun = fun

  def __repr__(self):
    return f"VJP(fun={_fun_name(self.fun)}, in_tree={self.in_tree}, out_tree={self.out_tree})"

  def __call__(self, *args):
    res, args = args[:self.n_res], args[self.n_res:]
    if len(args) != 1:
      raise TypeError(_VJP_ARITY_MSG.format(name=_fun_name(self.fun), n=len(args)))
    ct, = args
    ct_leaves, ct_tree = tree_util.tree_flatten(ct)
    if ct_tree != self.out_tree:
      errs = list(tree_util.equality_errors_pytreedef(self.out_tree, ct_tree))
      details = "\n".join(
          f"  * out{tree_util.keystr(path)} was {a} in the original output, but {b} here, "
          f"so {why}." for path, a, b, why in errs)
      raise ValueError(
          "unexpected tree structure.\n\nThe argument to a VJP function returned by "
          "`jax.vjp` must match the pytree\nstructure of the differentiated function "
          f"{_fun_sourceinfo(self.fun)}.\n\nBut the tree structures differ:\n{details}")
    cts = []
    for c, pa in zip(ct_leaves, self.out_avals):
      expected = ad.tangent_aval(pa)
      if expected.dtype == ad.float0:
        cts.append(Zero(expected))
        continue
      _check_arg(c)
      ca = core.get_aval(c)
      if ca.shape != expected.shape or ca.dtype != expected.dtype:
        raise ValueError(
            "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
            f"{ca.str_short(short_dtypes=False)}, but expected "
            f"{expected.str_short(short_dtypes=False)} because the corresponding output of "
            f"the differentiated function had JAX type {pa.str_short(short_dtypes=False)}")
      cts.append(c)
    in_cts = self._with(res).transpose(cts)
    outs = [_instantiate_ct(c, a) for c, a in zip(in_cts, self.in_avals)]
    return tree_util.tree_unflatten(self.in_tree, outs)


def vjp(fun, *primals, has_aux=False, reduce_axes=()):
  """Reverse-mode vector-Jacobian product: ``(fun(*primals), vjp_fun)`` where
  ``vjp_fun(ct)`` returns a tuple with one cotangent per primal (float0 zeros for
  integer/boolean primals)."""
  _check_callable(fun)
  if reduce_axes:
    raise NotImplementedError("reduce_axes argument to vjp is deprecated")
  leaves, in_tree = tree_util.tree_flatten(primals)
  for x in leaves:
    _check_arg(x)
  out_tree_cell = []
  flat_fun = _flat_output_fun(fun, in_tree, has_aux, out_tree_cell)
  out_p, lin, aux = ad.linearize_flat(flat_fun, leaves, forward=False, has_aux=True)
  out_tree = out_tree_cell[0]
  pullback = _VJPPullback(lin, in_tree, out_tree, [core.get_aval(x) for x in leaves],
                          [core.get_aval(o) for o in out_p], fun)
  vjp_fun = tree_util.Partial(pullback, *lin.consts)
  out = tree_util.tree_unflatten(out_tree, out_p)
  return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


# --- grad / value_and_grad --------------------------------------------------------------
def _dyn_args(args, argnums):
  if isinstance(argnums, int):
    return args[argnums]
  return tuple(args[i] for i in argnums)


def _substitute(args, argnums, dyn):
  new = list(args)
  if isinstance(argnums, int):
    new[argnums] = dyn
  else:
    for i, v in zip(argnums, dyn):
      new[i] = v
  return new


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
  """``(fun(*args), grad(fun)(*args))`` from one forward and one backward pass."""
  _check_callable(fun)
  if reduce_axes:
    raise NotImplementedError("reduce_axes argument to grad is deprecated")
  argnums = _ensure_index(argnums)
  return _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, "grad")


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, name):
  @_api_util.wraps(fun)
  def value_and_grad_f(*args, **kwargs):
    _check_argnums(argnums, len(args))
    dyn = _dyn_args(args, argnums)
    leaves, in_tree = tree_util.tree_flatten(dyn)
    for x in leaves:
      _check_input_dtype_revderiv(name, holomorphic, allow_int, x)
    out_tree_cell = []

    def f(*leaves_):
      d = tree_util.tree_unflatten(in_tree, leaves_)
      out = fun(*_substitute(args, argnums, d), **kwargs)
      out, aux = _split_aux(out, has_aux)
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_cell.append((out_tree, out))
      if not tree_util.treedef_is_leaf(out_tree) or len(out_leaves) != 1:
        return [], (aux, out)
      _check_arg(out_leaves[0])
      return out_leaves, (aux, None)

    out_p, lin, (aux, bad_out) = ad.linearize_flat(f, leaves, forward=False, has_aux=True)
    if not out_p:
      raise TypeError("Gradient only defined for scalar-output functions. Output was "
                      f"{_lowered_repr(bad_out)}.")
    ans = out_p[0]
    aval = core.get_aval(ans)
    if aval.shape != ():
      raise TypeError("Gradient only defined for scalar-output functions. Output had shape: "
                      f"{aval.shape}.")
    _check_output_dtype_revderiv(name, holomorphic, ans)
    ct = _ones_like(ans, holomorphic)
    in_cts = lin.transpose([ct])
    grads = [_instantiate_ct(c, core.get_aval(x)) for c, x in zip(in_cts, leaves)]
    g = tree_util.tree_unflatten(in_tree, grads)
    if has_aux:
      return (ans, aux), g
    return ans, g
  return value_and_grad_f


def _lowered_repr(out):
  def low(x):
    while isinstance(x, ad.JVPTracer):
      x = x.primal
    return x
  try:
    return repr(tree_util.tree_map(low, out))
  except Exception:
    return repr(out)


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
  """The gradient of a scalar-valued ``fun`` with respect to the positional argument(s)
  ``argnums``.  Integer inputs need ``allow_int=True`` (their gradients are float0
  zeros); complex outputs need ``holomorphic=True``."""
  vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

  @_api_util.wraps(fun)
  def grad_f(*args, **kwargs):
    _, g = vg(*args, **kwargs)
    return g

  @_api_util.wraps(fun)
  def grad_f_aux(*args, **kwargs):
    (_, aux), g = vg(*args, **kwargs)
    return g, aux

  return grad_f_aux if has_aux else grad_f


# --- Jacobians --------------------------------------------------------------------------
def _one_hot(aval, k, dtype, weak=False):
  e = np.zeros(aval.size, dtype)
  e[k] = 1
  e = e.reshape(aval.shape)
  return _with_weak_type(e, True) if weak else e


def _with_weak_type(x, weak):
  """x with its weak type set to ``weak`` (a convert_element_type when it differs)."""
  aval = core.get_aval(x)
  if aval.dtype == ad.float0 or bool(aval.weak_type) == bool(weak):
    return x
  from pyjax._src.lax import elementwise as lax_e
  return lax_e._convert_element_type(x, aval.dtype, bool(weak))


def _stack(arrays, axis_shape, pos, lead_shape, dtype):
  """Stack arrays of shape ``lead_shape`` into ``lead_shape + axis_shape`` (``pos`` =
  'last') or ``axis_shape + lead_shape`` ('first')."""
  from pyjax._src.lax import shapes
  full = tuple(lead_shape) + tuple(axis_shape) if pos == "last" else tuple(axis_shape) + tuple(lead_shape)
  if dtype == ad.float0:
    return np.zeros(full, ad.float0)
  if not arrays:
    return ad.zeros_like_aval(ShapedArray(full, dtype))
  if pos == "last":
    parts = [shapes.reshape_p.bind(a, new_sizes=tuple(lead_shape) + (1,), dimensions=None,
                                   sharding=None) for a in arrays]
    cat = parts[0] if len(parts) == 1 else shapes.concatenate_p.bind(*parts, dimension=len(lead_shape))
  else:
    parts = [shapes.reshape_p.bind(a, new_sizes=(1,) + tuple(lead_shape), dimensions=None,
                                   sharding=None) for a in arrays]
    cat = parts[0] if len(parts) == 1 else shapes.concatenate_p.bind(*parts, dimension=0)
  return shapes.reshape_p.bind(cat, new_sizes=full, dimensions=None, sharding=None)


def _linearize_dyn(fun, args, kwargs, argnums, leaves, in_tree, has_aux, forward):
  """Linearize ``fun`` in its ``argnums`` arguments (flattened to ``leaves``); returns the
  primal output leaves, the linear function, aux and a cell holding the output tree."""
  out_tree_cell = []

  def f(*leaves_):
    d = tree_util.tree_unflatten(in_tree, leaves_)
    out = fun(*_substitute(args, argnums, d), **kwargs)
    out, aux = _split_aux(out, has_aux)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_cell.append(out_tree)
    for o in out_leaves:
      _check_arg(o)
    return out_leaves, aux

  out_p, lin, aux = ad.linearize_flat(f, leaves, forward=forward, has_aux=True)
  return out_p, lin, aux, out_tree_cell


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
  """The Jacobian of ``fun`` by forward mode: one Jacobian-vector product per input
  element, evaluated on one linearization.  The result nests the input structure inside
  the output structure; each leaf has shape ``out.shape + in.shape``.

  Differs from JAX: the columns are computed one at a time (JAX uses vmap)."""
  _check_callable(fun)
  argnums = _ensure_index(argnums)

  @_api_util.wraps(fun)
  def jacfun(*args, **kwargs):
    _check_argnums(argnums, len(args))
    dyn = _dyn_args(args, argnums)
    leaves, in_tree = tree_util.tree_flatten(dyn)
    for x in leaves:
      _check_input_dtype_jacfwd(holomorphic, x)
    out_p, lin, aux, out_tree_cell = _linearize_dyn(fun, args, kwargs, argnums, leaves,
                                                    in_tree, has_aux, forward=True)
    for o in out_p:
      _check_output_dtype_jacfwd(holomorphic, o)
    in_avals = [core.get_aval(x) for x in leaves]
    cols = [[] for _ in in_avals]
    for i, a in enumerate(in_avals):
      for k in range(a.size):
        ts = [Zero(ad.tangent_aval(b)) for b in in_avals]
        ts[i] = _one_hot(a, k, a.dtype, a.weak_type)  # (weak for a weak input, as JAX)
        cols[i].append(lin(ts))
    jac_leaves = []
    for j, o in enumerate(out_p):
      oa = core.get_aval(o)
      dt = oa.dtype if not ad.has_float0_tangent(oa) else oa.dtype
      per_in = []
      for i, a in enumerate(in_avals):
        col = [c[j] for c in cols[i]]
        if ad.has_float0_tangent(oa):
          per_in.append(ad.zeros_like_aval(ShapedArray(oa.shape + a.shape, dt)))
        else:
          per_in.append(_stack(col, a.shape, "last", oa.shape, dt))
      jac_leaves.append(tree_util.tree_unflatten(in_tree, per_in))
    jac = tree_util.tree_unflatten(out_tree_cell[0], jac_leaves)
    return (jac, aux) if has_aux else jac
  return jacfun


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
  """The Jacobian of ``fun`` by reverse mode: one vector-Jacobian product per output
  element on one linearization.  Same result structure as ``jacfwd``.

  Differs from JAX: the rows are computed one at a time (JAX uses vmap)."""
  _check_callable(fun)
  argnums = _ensure_index(argnums)

  @_api_util.wraps(fun)
  def jacfun(*args, **kwargs):
    _check_argnums(argnums, len(args))
    dyn = _dyn_args(args, argnums)
    leaves, in_tree = tree_util.tree_flatten(dyn)
    for x in leaves:
      _check_input_dtype_revderiv("jacrev", holomorphic, allow_int, x)
    out_p, lin, aux, out_tree_cell = _linearize_dyn(fun, args, kwargs, argnums, leaves,
                                                    in_tree, has_aux, forward=False)
    for o in out_p:
      _check_output_dtype_revderiv("jacrev", holomorphic, o)
    in_avals = [core.get_aval(x) for x in leaves]
    out_avals = [core.get_aval(o) for o in out_p]
    jac_leaves = []
    for j, oa in enumerate(out_avals):
      rows = []
      for k in range(oa.size):
        cts = [Zero(ad.tangent_aval(b)) for b in out_avals]
        cts[j] = _one_hot(oa, k, oa.dtype)
        rows.append(lin.transpose(cts))
      per_in = []
      for i, a in enumerate(in_avals):
        ta = ad.tangent_aval(a)
        if ta.dtype == ad.float0 and a.dtype != ad.float0:
          # as JAX: the rows of an integer/boolean input are its float0 cotangents
          # converted to the input's dtype, i.e. zeros of that dtype
          leaf = ad.zeros_like_aval(ShapedArray(tuple(oa.shape) + tuple(a.shape), a.dtype,
                                                a.weak_type))
          per_in.append(leaf)
          continue
        col = [_instantiate_ct(r[i], a) for r in rows]
        leaf = _stack(col, oa.shape, "first", a.shape, ta.dtype)
        # (JAX's rows are cotangents of the input: weakly typed iff the input is)
        per_in.append(_with_weak_type(leaf, a.weak_type))
      jac_leaves.append(tree_util.tree_unflatten(in_tree, per_in))
    jac = tree_util.tree_unflatten(out_tree_cell[0], jac_leaves)
    return (jac, aux) if has_aux else jac
  return jacfun


jacobian = jacrev


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
  """``jacfwd(jacrev(fun))``: the Hessian, with leaves of shape
  ``out.shape + in.shape + in.shape``."""
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                has_aux=has_aux, holomorphic=holomorphic)


# --- stop_gradient ----------------------------------------------------------------------
stop_gradient = _elementwise.stop_gradient


# --- custom derivatives: shared machinery -----------------------------------------------
def _resolve_kwargs(fun, args, kwargs):
  try:
    sig = inspect.signature(fun)
  except (TypeError, ValueError):
    if kwargs:
      raise TypeError("keyword arguments could not be resolved to positions") from None
    return tuple(args)
  ba = sig.bind(*args, **kwargs)
  ba.apply_defaults()
  if ba.kwargs:
    raise TypeError("keyword arguments could not be resolved to positions")
  return tuple(ba.args)


def _split_nondiff(args, nondiff_argnums):
  n = len(args)
  nd = sorted({i % n if i < 0 else i for i in nondiff_argnums})
  for i in nd:
    if i >= n:
      raise TypeError(f"nondiff_argnums {tuple(nondiff_argnums)} out of range for "
                      f"{n} arguments")
  static = [args[i] for i in nd]
  dyn_idx = [i for i in range(n) if i not in nd]
  return nd, static, dyn_idx


def _merge(nd, static, dyn_idx, dyn):
  out = [None] * (len(nd) + len(dyn_idx))
  for i, v in zip(nd, static):
    out[i] = v
  for i, v in zip(dyn_idx, dyn):
    out[i] = v
  return out


class _Named:
  """A callable param that prints as its user function's name in jaxprs."""

  def __init__(self, fn, name):
    self.fn = fn
    self.name = name

  def __call__(self, *args, **kwargs):
    return self.fn(*args, **kwargs)

  def __repr__(self):
    return self.name

  __str__ = __repr__


def _owned(interp, flat_args):
  return any(isinstance(x, ad.JVPTracer) and x._trace is interp
             and type(x.tangent) is not Zero for x in flat_args)


def _has_staged_tangent(interp, flat_args):
  ti = interp.tangent_interp
  return any(isinstance(x, core.StagingTracer) and x._trace is ti for x in flat_args)


def _primals_tangents(interp, flat_args):
  ps, ts = [], []
  for x in flat_args:
    p, t = interp.to_primal_tangent(x)
    ps.append(p)
    ts.append(Zero.from_primal_value(p) if t is None else t)
  return ps, ts


def _closure_converted_call(fun_flat, flat_args):
  """Trace ``fun_flat`` on the avals of ``flat_args``; constants become leading args."""
  closed = core.trace_to_jaxpr(fun_flat, [core.get_aval(x) for x in flat_args])
  return ad.closure_convert_jaxpr(closed)


# --- custom_jvp -------------------------------------------------------------------------
class _CustomJVPCallPrimitive(core.Primitive):
  """``custom_jvp_call``: ``get_bind_params`` also gives JAX's ``subfuns`` -- the function
  (over consts and arguments) and its JVP (over primals then tangents, consts first in
  each), as ``WrappedFun``s -- for code that re-binds or inlines equations (equinox's
  finalisation calls ``subfuns[0].call_wrapped``).  ``bind`` ignores ``subfuns``: the
  jaxpr params are kept beside them."""

  def bind(self, *args, **params):
    params.pop("subfuns", None)
    return super().bind(*args, **params)

  def get_bind_params(self, params):
    from pyjax._src import linear_util as lu
    new = dict(params)
    closed, k, jvp_fun = params["call_jaxpr"], params["num_consts"], params["jvp_jaxpr_fun"]

    def fun(*xs):
      return core.eval_jaxpr(closed.jaxpr, closed.consts, *xs)

    def jvp(*xs):
      n = len(xs) // 2
      return jvp_fun(*xs[k:n], *xs[n + k:])

    new["subfuns"] = (lu.wrap_init(fun), lu.wrap_init(jvp))
    return new


custom_jvp_call_p = _CustomJVPCallPrimitive("custom_jvp_call")
custom_jvp_call_p.multiple_results = True
custom_jvp_call_p.eqn_printer = lambda eqn, ctx: [
    ("name", eqn.params["name"]), ("call_jaxpr", eqn.params["call_jaxpr"]),
    ("jvp", eqn.params["jvp_jaxpr_fun"])] + (  # num_consts shown when non-zero, as JAX
    [("num_consts", eqn.params["num_consts"])] if eqn.params.get("num_consts") else []) + [
    ("symbolic_zeros", eqn.params["symbolic_zeros"])]


@custom_jvp_call_p.def_abstract_eval
def _custom_jvp_call_abstract(*avals, call_jaxpr, **_):
  return list(call_jaxpr.out_avals)


@custom_jvp_call_p.def_impl
def _custom_jvp_call_impl(*args, call_jaxpr, **_):
  return core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


def _run_custom_jvp(interp, jvp_flat, primals, tangents, symbolic_zeros):
  if symbolic_zeros:
    ts = list(tangents)
  else:
    with core.set_interpreter(interp.rule_interp):
      ts = [ad.instantiate_zeros(t) for t in tangents]
  with core.set_interpreter(interp.rule_interp):
    outs = jvp_flat(*primals, *ts)
  n = len(outs) // 2
  out_p, out_t = outs[:n], outs[n:]
  out_t = [Zero(ad.tangent_aval(core.get_aval(p)))
           if (ad.has_float0_tangent(core.get_aval(p)) or
               (isinstance(t, np.ndarray) and t.dtype == ad.float0)) and type(t) is not Zero
           else t for p, t in zip(out_p, out_t)]
  return out_p, out_t


def _custom_jvp_call_jvp(interp, primals, tangents, *, call_jaxpr, jvp_jaxpr_fun, num_consts,
                         symbolic_zeros, name):
  return _run_custom_jvp(interp, jvp_jaxpr_fun, primals[num_consts:], tangents[num_consts:],
                         symbolic_zeros)


ad.interpreter_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp


def _custom_jvp_call_transpose(cts, *args, call_jaxpr, **_):
  # a custom_jvp function staged in a linear function (jax.linear_transpose of it): its
  # transpose is its body's, as JAX's (the rule is for differentiation only)
  cts_in = ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, list(cts), list(args))
  return [ct if type(a) is ad.UndefinedPrimal else None for a, ct in zip(args, cts_in)]


ad.primitive_transposes[custom_jvp_call_p] = _custom_jvp_call_transpose


class custom_jvp:
  """A function with a user-defined JVP rule (``defjvp``/``defjvps``), used by forward
  and reverse mode (reverse mode transposes the rule's tangent computation, which must be
  linear in the tangents).  Staged (jit/make_jaxpr) as a ``custom_jvp_call`` equation.

  Differs from JAX: tangents of values the function closes over are not supported (as in
  JAX, which raises); the rule's ``symbolic_zeros`` tangents are ``ad.Zero`` objects."""

  def __init__(self, fun, nondiff_argnums=()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.jvp = None
    self.symbolic_zeros = False

  def __getattr__(self, name):
    # attributes of the wrapped function (e.g. a custom_vmap's def_vmap), as JAX
    if name == "fun" or name.startswith("__"):
      raise AttributeError(name)
    return getattr(self.fun, name)

  def __get__(self, instance, owner=None):
    if instance is None:
      return self
    return functools.partial(self, instance)

  def defjvp(self, jvp, symbolic_zeros=False):
    """Set the JVP rule ``jvp(*nondiff_args, primals, tangents) -> (primal_out,
    tangent_out)``."""
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *jvps):
    """One rule per argument: ``jvp_i(tangent_i, primal_out, *primals)`` (None: zero)."""
    if self.nondiff_argnums:
      raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

    def jvp(primals, tangents):
      primal_out = self(*primals)
      contribs = [f(t, primal_out, *primals) for f, t in zip(jvps, tangents) if f is not None]
      if not contribs:
        return primal_out, tree_util.tree_map(ad.zeros_like, primal_out)
      tangent_out = tree_util.tree_map(lambda *xs: functools.reduce(operator.add, xs), *contribs)
      return primal_out, tangent_out
    jvp.__name__ = "jvp"
    self.defjvp(jvp)

  def __call__(self, *args, **kwargs):
    name = _fun_name(self.fun)
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    nd, static, dyn_idx = _split_nondiff(args, self.nondiff_argnums)
    dyn = [args[i] for i in dyn_idx]
    flat_args, in_tree = tree_util.tree_flatten(dyn)
    user_fun, user_jvp = self.fun, self.jvp
    jvp_name = _fun_name(user_jvp)
    out_tree_cell = []

    def fun_flat(*leaves):
      d = tree_util.tree_unflatten(in_tree, leaves)
      out = user_fun(*_merge(nd, static, dyn_idx, d))
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_cell.append(out_tree)
      return out_leaves

    def jvp_flat(*pt):
      n = len(pt) // 2
      primals = tuple(tree_util.tree_unflatten(in_tree, pt[:n]))
      tangents = tuple(tree_util.tree_unflatten(in_tree, pt[n:]))
      res = user_jvp(*static, primals, tangents)
      if not (isinstance(res, (list, tuple)) and len(res) == 2):
        raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce a pair "
                        "(list or tuple of length two) representing primal and tangent "
                        f"outputs, but got {_lowered_repr(res)}.")
      p_out, t_out = res
      p_leaves, p_tree = tree_util.tree_flatten(p_out)
      t_leaves, t_tree = tree_util.tree_flatten(t_out, is_leaf=lambda x: type(x) is Zero)
      if p_tree != t_tree:
        raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce primal "
                        "and tangent outputs with equal container (pytree) structures, but "
                        f"got {p_tree} and {t_tree} respectively.")
      for p, t in zip(p_leaves, t_leaves):
        if type(t) is Zero:
          continue
        pa = core.get_aval(p)
        ta = _tangent_value_aval(t)
        expected = ad.tangent_aval(pa)
        if ta.dtype == ad.float0 or expected.dtype == ad.float0:
          continue
        if ta.shape != expected.shape or ta.dtype != expected.dtype:
          raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                          "corresponding shapes and dtypes. Expected "
                          f"{expected.str_short(short_dtypes=False)} (tangent type of "
                          f"{pa.str_short(short_dtypes=False)}) but got "
                          f"{ta.str_short(short_dtypes=False)}.")
      out_tree_cell.append(p_tree)
      return list(p_leaves) + list(t_leaves)

    outs = _custom_jvp_dispatch(core.current_interpreter(), fun_flat,
                                _Named(jvp_flat, jvp_name), flat_args, self.symbolic_zeros,
                                name)
    return tree_util.tree_unflatten(out_tree_cell[-1], outs)


def _custom_jvp_dispatch(interp, fun_flat, jvp_flat, flat_args, symbolic_zeros, name):
  if interp is core.eval_interpreter:
    return fun_flat(*flat_args)
  if isinstance(interp, ad._SplitInterpreter):
    if not _has_staged_tangent(interp, flat_args):
      with core.set_interpreter(interp.parent):
        return _custom_jvp_dispatch(interp.parent, fun_flat, jvp_flat, flat_args,
                                    symbolic_zeros, name)
    # Applied to a staged tangent inside another JVP rule (e.g. a solve of the tangent):
    # the call is part of the linear tangent computation, which gets transposed, so run
    # the function itself (as JAX does) rather than staging a custom_jvp_call, which has
    # no transpose rule.
    return fun_flat(*flat_args)
  if isinstance(interp, ad.JVPInterpreter):
    if not _owned(interp, flat_args):
      primals = [interp.to_primal_tangent(x)[0] for x in flat_args]
      with core.set_interpreter(interp.parent):
        outs = _custom_jvp_dispatch(interp.parent, fun_flat, jvp_flat, primals,
                                    symbolic_zeros, name)
      return outs
    primals, tangents = _primals_tangents(interp, flat_args)
    out_p, out_t = _run_custom_jvp(interp, jvp_flat, primals, tangents, symbolic_zeros)
    return [interp.new_tracer(p, t) for p, t in zip(out_p, out_t)]
  call_jaxpr, consts = _closure_converted_call(fun_flat, flat_args)
  return custom_jvp_call_p.bind(*consts, *flat_args, call_jaxpr=call_jaxpr,
                                jvp_jaxpr_fun=jvp_flat, num_consts=len(consts),
                                symbolic_zeros=bool(symbolic_zeros), name=name)


# --- custom_vjp -------------------------------------------------------------------------
custom_vjp_call_p = core.Primitive("custom_vjp_call")
custom_vjp_call_p.multiple_results = True
custom_vjp_call_p.eqn_printer = lambda eqn, ctx: [  # name first, then sorted (as JAX)
    ("name", eqn.params["name"]), ("bwd", eqn.params["bwd"]),
    ("call_jaxpr", eqn.params["call_jaxpr"]), ("fwd", eqn.params["fwd_jaxpr_thunk"])] + (
    [("num_consts", eqn.params["num_consts"])] if eqn.params.get("num_consts") else []) + [
    ("symbolic_zeros", eqn.params["symbolic_zeros"])]


@custom_vjp_call_p.def_abstract_eval
def _custom_vjp_call_abstract(*avals, call_jaxpr, **_):
  return list(call_jaxpr.out_avals)


@custom_vjp_call_p.def_impl
def _custom_vjp_call_impl(*args, call_jaxpr, **_):
  return core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


# custom_lin: the linear part of a custom_vjp function inside a linearized computation;
# transposing it calls the user's bwd rule.
custom_lin_p = core.Primitive("custom_lin")
custom_lin_p.multiple_results = True


@custom_lin_p.def_abstract_eval
def _custom_lin_abstract(*avals, num_res, bwd, out_avals, in_mask, symbolic_zeros):
  return list(out_avals)


@custom_lin_p.def_impl
def _custom_lin_impl(*args, **params):
  ad._raise_custom_vjp_jvp()


def _custom_lin_jvp(primals, tangents, **params):
  ad._raise_custom_vjp_jvp()


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, in_mask, symbolic_zeros):
  res = args[:num_res]
  if not symbolic_zeros:
    cts = [ad.instantiate_zeros(c) for c in cts]
  cts_in = bwd(res, cts)
  lin_cts = [c for c, m in zip(cts_in, in_mask) if m]
  return [None] * num_res + lin_cts


def _custom_lin_batch(args, dims, **params):
  # custom_lin only exists to be transposed; vmap reaches it only through forward mode
  # (vmap of jvp/jacfwd of a custom_vjp function), which is JAX's TypeError here too
  ad._raise_custom_vjp_jvp()


ad.primitive_jvps[custom_lin_p] = _custom_lin_jvp
ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose
batching.primitive_batchers[custom_lin_p] = _custom_lin_batch


def _run_custom_vjp(interp, fwd_flat, bwd_user, primals, tangents, symbolic_zeros):
  if interp.forward and interp.tangent_interp is None:
    ad._raise_custom_vjp_jvp()   # jvp; linearize stages custom_lin, which raises if run
  in_mask = [type(t) is not Zero for t in tangents]
  with core.set_interpreter(interp.parent):
    if symbolic_zeros and isinstance(fwd_flat, _Named) and getattr(fwd_flat.fn, "_perturbed", False):
      out_leaves, res_leaves, make_bwd = fwd_flat(*primals, perturbed=in_mask)
    else:
      out_leaves, res_leaves, make_bwd = fwd_flat(*primals)
  in_avals = [core.get_aval(p) for p in primals]
  out_avals = tuple(ad.tangent_aval(core.get_aval(o)) for o in out_leaves)
  bwd = make_bwd(in_avals)
  lin_ts = [t for t in tangents if type(t) is not Zero]
  with core.set_interpreter(interp.rule_interp):
    t_out = custom_lin_p.bind(*res_leaves, *lin_ts, num_res=len(res_leaves), bwd=bwd,
                              out_avals=out_avals, in_mask=tuple(in_mask),
                              symbolic_zeros=bool(symbolic_zeros))
  t_out = [Zero(a) if a.dtype == ad.float0 else t for t, a in zip(t_out, out_avals)]
  return out_leaves, t_out


def _custom_vjp_call_jvp(interp, primals, tangents, *, call_jaxpr, fwd_jaxpr_thunk, bwd,
                         num_consts, symbolic_zeros, name):
  return _run_custom_vjp(interp, fwd_jaxpr_thunk, bwd, primals[num_consts:],
                         tangents[num_consts:], symbolic_zeros)


ad.interpreter_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
  """A primal argument leaf as the fwd rule of a ``custom_vjp`` with
  ``symbolic_zeros=True`` sees it: ``value`` and whether its tangent is nonzero
  (``perturbed``)."""
  value: Any
  perturbed: bool


def custom_vjp_primal_tree_values(tree):
  """The tree of ``CustomVJPPrimal`` leaves (a symbolic-zeros fwd rule's arguments) with
  each leaf replaced by its ``value``; any other leaf is a TypeError."""
  def value(leaf):
    if type(leaf) is not CustomVJPPrimal:
      raise TypeError(f"unexpected leaf type {type(leaf)}")
    return leaf.value
  return tree_util.tree_map(value, tree)


class custom_vjp:
  """A function with a user-defined VJP (``defvjp(fwd, bwd)``) used by reverse mode.
  Forward mode (``jvp``, ``jacfwd``, ``linearize``) raises JAX's TypeError.  Staged
  (jit/make_jaxpr) as a ``custom_vjp_call`` equation.

  Differs from JAX: ``optimize_remat`` is accepted and ignored."""

  def __init__(self, fun, nondiff_argnums=()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.fwd = None
    self.bwd = None
    self.symbolic_zeros = False

  def __getattr__(self, name):
    # attributes of the wrapped function (e.g. a custom_vmap's def_vmap), as JAX
    if name == "fun" or name.startswith("__"):
      raise AttributeError(name)
    return getattr(self.fun, name)

  def __get__(self, instance, owner=None):
    if instance is None:
      return self
    return functools.partial(self, instance)

  def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
    """``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct_out) ->``
    a tuple with one cotangent (or None) per differentiable argument."""
    self.fwd = fwd
    self.bwd = bwd
    self.symbolic_zeros = symbolic_zeros

  def __call__(self, *args, **kwargs):
    name = _fun_name(self.fun)
    if self.fwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    nd, static, dyn_idx = _split_nondiff(args, self.nondiff_argnums)
    dyn = [args[i] for i in dyn_idx]
    flat_args, in_tree = tree_util.tree_flatten(dyn)
    user_fun, user_fwd, user_bwd = self.fun, self.fwd, self.bwd
    fwd_name, bwd_name = _fun_name(user_fwd), _fun_name(user_bwd)
    out_tree_cell = []

    def fun_flat(*leaves):
      d = tree_util.tree_unflatten(in_tree, leaves)
      out = user_fun(*_merge(nd, static, dyn_idx, d))
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_cell.append(out_tree)
      return out_leaves

    def fwd_flat(*leaves, perturbed=None):
      if symbolic_zeros:
        # As JAX: with symbolic_zeros the fwd rule sees each leaf as a CustomVJPPrimal
        # (value, perturbed); perturbed is True when unknown (e.g. under vmap).
        if perturbed is None:
          perturbed = [True] * len(leaves)
        leaves = [CustomVJPPrimal(x, bool(z)) for x, z in zip(leaves, perturbed)]
      d = tree_util.tree_unflatten(in_tree, leaves)
      res = user_fwd(*_merge(nd, static, dyn_idx, d))
      if not (isinstance(res, (list, tuple)) and len(res) == 2):
        raise TypeError(
            f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair (list or "
            "tuple of length two) where the first element represents the primal output "
            f"(equal to those of the custom_vjp-decorated function {name}) and the second "
            "element represents residuals (i.e. values stored from the forward pass for use "
            f"on the backward pass), but instead of a pair the fwd rule {fwd_name} produced "
            f"{_lowered_repr(res)}.")
      out, residuals = res
      out_leaves, out_tree = tree_util.tree_flatten(out)
      res_leaves, res_tree = tree_util.tree_flatten(residuals)
      out_tree_cell.append(out_tree)

      def make_bwd(in_avals):
        return _Named(functools.partial(_bwd_flat, user_bwd, static, res_tree, out_tree,
                                        in_tree, in_avals, bwd_name, name), bwd_name)
      return out_leaves, res_leaves, make_bwd
    fwd_flat._perturbed = True
    symbolic_zeros = self.symbolic_zeros

    outs = _custom_vjp_dispatch(core.current_interpreter(), fun_flat,
                                _Named(fwd_flat, fwd_name), _Named(user_bwd, bwd_name),
                                flat_args, self.symbolic_zeros, name)
    return tree_util.tree_unflatten(out_tree_cell[-1], outs)


_CT_SLOT = object()  # a non-pytree marker of one argument leaf, for matching bwd outputs


def _bwd_flat(user_bwd, static, res_tree, out_tree, in_tree, in_avals, bwd_name, name,
              res_leaves, cts):
  res = tree_util.tree_unflatten(res_tree, res_leaves)
  ct = tree_util.tree_unflatten(out_tree, cts)
  out = user_bwd(*static, res, ct)
  args_tree = in_tree  # the tuple of differentiable arguments
  if not isinstance(out, (tuple, list)):
    out_struct = tree_util.tree_structure(out)
    raise TypeError("Custom VJP bwd rule must produce an output with the same container "
                    "(pytree) structure as the args tuple of the primal function, and in "
                    "particular must produce a tuple of length equal to the number of "
                    "arguments to the primal function, but got bwd output structure "
                    f"{out_struct} for primal input structure {args_tree}.")
  out = tuple(out)
  # None stands for a zero cotangent of a whole argument subtree (also of a subtree that
  # is itself None, which has no leaves): the bwd output is matched as a prefix of the
  # arguments' structure, None being a leaf of it; as in JAX, any other leaf standing for
  # a subtree is the cotangent of each of its leaves (an nnx Variable's raw array).
  expanded = []
  dummy = tuple(tree_util.tree_unflatten(args_tree, [_CT_SLOT] * args_tree.num_leaves))

  def expand(c, d):
    expanded.extend([c] * (1 if d is _CT_SLOT else len(tree_util.tree_leaves(d))))
  try:
    if len(out) != len(dummy):
      raise ValueError
    tree_util.tree_map(expand, out, dummy, is_leaf=lambda x: x is None)
  except (ValueError, TypeError):
    raise TypeError("Custom VJP bwd rule must produce an output with the same container "
                    "(pytree) structure as the args tuple of the primal function, and in "
                    "particular must produce a tuple of length equal to the number of "
                    "arguments to the primal function, but got bwd output structure "
                    f"{tree_util.tree_structure(out)} for primal input structure "
                    f"{args_tree}.") from None
  results = []
  paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(
      tree_util.tree_unflatten(args_tree, [0] * args_tree.num_leaves))[0]]
  for k, (c, pa) in enumerate(zip(expanded, in_avals)):
    expected = ad.tangent_aval(pa)
    if c is None or type(c) is Zero or expected.dtype == ad.float0:
      results.append(Zero(expected))
      continue
    ca = _tangent_value_aval(c)
    if ca.dtype == ad.float0:
      results.append(Zero(expected))
      continue
    if ca.shape != expected.shape:
      raise ValueError("Custom VJP bwd rule must produce an output with the same type as the "
                       f"args tuple of the primal function, but at output{paths[k]} the bwd "
                       f"rule produced an output of type {ca.str_short(short_dtypes=False)} "
                       "corresponding to an input of type "
                       f"{pa.str_short(short_dtypes=False)}, so the shapes do not match")
    if ca.dtype != expected.dtype:
      from pyjax._src.lax import elementwise as ew
      c = ew.convert_element_type_p.bind(c, new_dtype=expected.dtype, weak_type=ca.weak_type,
                                         sharding=None)
    results.append(c)
  return results


def _custom_vjp_dispatch(interp, fun_flat, fwd_flat, bwd, flat_args, symbolic_zeros, name):
  if interp is core.eval_interpreter:
    return fun_flat(*flat_args)
  if isinstance(interp, ad._SplitInterpreter) and not _has_staged_tangent(interp, flat_args):
    with core.set_interpreter(interp.parent):
      return _custom_vjp_dispatch(interp.parent, fun_flat, fwd_flat, bwd, flat_args,
                                  symbolic_zeros, name)
  if isinstance(interp, ad.JVPInterpreter):
    if not _owned(interp, flat_args):
      primals = [interp.to_primal_tangent(x)[0] for x in flat_args]
      with core.set_interpreter(interp.parent):
        return _custom_vjp_dispatch(interp.parent, fun_flat, fwd_flat, bwd, primals,
                                    symbolic_zeros, name)
    primals, tangents = _primals_tangents(interp, flat_args)
    out_p, out_t = _run_custom_vjp(interp, fwd_flat, bwd, primals, tangents, symbolic_zeros)
    return [interp.new_tracer(p, t) for p, t in zip(out_p, out_t)]
  call_jaxpr, consts = _closure_converted_call(fun_flat, flat_args)
  return custom_vjp_call_p.bind(*consts, *flat_args, call_jaxpr=call_jaxpr,
                                fwd_jaxpr_thunk=fwd_flat, bwd=bwd, num_consts=len(consts),
                                symbolic_zeros=bool(symbolic_zeros), name=name)


# --- closure_convert ------------------------------------------------------------------------
def _maybe_perturbed(x):
  """Whether a closed-over value might carry a nonzero tangent (then it is hoisted)."""
  if not isinstance(x, core.Tracer):
    return False
  if isinstance(x, ad.JVPTracer) and type(x.tangent) is Zero:
    return _maybe_perturbed(x.primal)
  if isinstance(x, core.StagingTracer):
    return not ad.has_float0_tangent(x.aval)
  return True


def closure_convert(fun, *example_args):
  """``(converted_fun, hoisted_consts)``: ``converted_fun(*args, *hoisted_consts)`` equals
  ``fun(*args)`` for arguments shaped like ``example_args``; the values ``fun`` closes over
  that may carry tangents (tracers of enclosing transformations) are hoisted out as
  explicit arguments, so ``fun`` can be used where closures are not allowed (e.g. with
  ``custom_vjp``)."""
  from pyjax._src.interpreters import staging
  flat_args, in_tree = tree_util.tree_flatten(example_args)
  in_avals = [core.get_aval(x) for x in flat_args]
  out_tree_cell = []

  def flat_fun(*leaves):
    out = fun(*tree_util.tree_unflatten(in_tree, leaves))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_cell.append(out_tree)
    return out_leaves

  debug = staging.DebugInfo("closure_convert", staging.fun_source_info(fun),
                            staging.arg_names_of(fun, example_args, {}), staging.fun_name(fun))
  closed, tracer_consts = staging.trace_flat(flat_fun, in_avals, debug)
  out_tree = out_tree_cell[-1]
  hoist = [_maybe_perturbed(c) for c in tracer_consts]
  kept = [c for c, h in zip(tracer_consts, hoist) if not h]
  hoisted = [c for c, h in zip(tracer_consts, hoist) if h]
  n_hoisted = len(hoisted)

  def converted_fun(*args_hconsts):
    n_args = len(args_hconsts) - n_hoisted
    args, hconsts = args_hconsts[:n_args], args_hconsts[n_args:]
    k, h = iter(kept), iter(hconsts)
    consts = [next(h) if m else next(k) for m in hoist]
    all_args, in_tree2 = tree_util.tree_flatten(tuple(args))
    if in_tree != in_tree2:
      raise TypeError("The inputs to the closure produced by closure_convert must have the "
                      "same Pytree structure as the example arguments passed when "
                      f"closure_convert was called. Expected {in_tree}, but got {in_tree2}")
    outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *consts, *all_args)
    return tree_util.tree_unflatten(out_tree, outs)

  return converted_fun, hoisted


def zero_from_primal(val, symbolic_zeros=False):
  """Zero tangents for the pytree ``val``: symbolic ``SymbolicZero``s, or arrays."""
  def f(x):
    z = Zero.from_primal_value(x)
    return z if symbolic_zeros else ad.instantiate_zeros(z)
  return tree_util.tree_map(f, val)


# --- custom_gradient --------------------------------------------------------------------------
class _GradientRule:
  """The residuals of ``custom_gradient``: the traced gradient rule (static) and the values
  it closes over (pytree children)."""

  def __init__(self, jaxpr, n_tracer_consts, in_tree, out_tree, consts):
    self.jaxpr, self.n_tracer_consts = jaxpr, n_tracer_consts
    self.in_tree, self.out_tree, self.consts = in_tree, out_tree, consts


tree_util.register_pytree_node(
    _GradientRule,
    lambda r: (r.consts, (r.jaxpr, r.n_tracer_consts, r.in_tree, r.out_tree)),
    lambda aux, consts: _GradientRule(aux[0], aux[1], aux[2], aux[3], list(consts)))


def custom_gradient(fun):
  """``fun(*args) -> (out, vjp_rule)`` becomes a function returning ``out`` whose reverse
  derivative is ``vjp_rule(ct) -> tuple of cotangents (one per argument)`` (JAX's
  ``custom_gradient``, built on ``custom_vjp``)."""
  from pyjax._src.interpreters import staging

  @custom_vjp
  def wrapped_fun(*args, **kwargs):
    ans, _ = fun(*args, **kwargs)
    return ans

  def fwd(*args, **kwargs):
    ans, rule = fun(*args, **kwargs)
    ans_flat, out_tree = tree_util.tree_flatten((ans,))
    in_tree_cell = []

    def flat_rule(*cts_flat):
      out = rule(*tree_util.tree_unflatten(out_tree, cts_flat))
      leaves, in_tree = tree_util.tree_flatten(out)
      in_tree_cell.append(in_tree)
      return leaves
    avals = [ad.tangent_aval(core.get_aval(x)) for x in ans_flat]
    closed, tconsts = staging.trace_flat(flat_rule, avals)
    return ans, _GradientRule(closed.jaxpr, len(tconsts), in_tree_cell[-1], out_tree,
                              list(tconsts) + list(closed.consts))

  def bwd(res, cts):
    cts_flat, out_tree = tree_util.tree_flatten((cts,))
    if out_tree != res.out_tree:
      raise TypeError(f"{res.out_tree}\n!=\n{out_tree}")
    k = res.n_tracer_consts
    outs = core.eval_jaxpr(res.jaxpr, res.consts[k:], *res.consts[:k], *cts_flat)
    out = tree_util.tree_unflatten(res.in_tree, outs)
    return (out,) if tree_util.treedef_is_leaf(res.in_tree) else out

  wrapped_fun.defvjp(fwd, bwd)
  return wrapped_fun

