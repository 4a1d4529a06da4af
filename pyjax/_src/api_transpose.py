"""``linear_transpose`` and ``fwd_and_bwd``.

``linear_transpose(fun, *primals)`` stages ``fun`` on the primals' abstract values (their
values are not used) and returns the transposed linear map, evaluated by the same
backward pass reverse mode uses.  ``fwd_and_bwd`` splits ``vjp`` into a forward function
returning the residuals (the vjp function is a pytree whose leaves are the residuals) and
a backward function taking them, both jitted by default so the backward pass compiles once.
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes, tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad, staging

__all__ = ["linear_transpose", "fwd_and_bwd"]


def _primal_aval(x):
  if isinstance(x, core.Tracer):
    return x.aval
  shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
  if shape is not None and dtype is not None and not isinstance(x, (np.ndarray, np.generic)) \
      and not hasattr(x, "_buf"):
    # ShapeDtypeStruct and other abstract stand-ins
    return ShapedArray(tuple(shape), dtypes.canonicalize_dtype(dtype),
                       bool(getattr(x, "weak_type", False)))
  return core.get_aval(x)


def _compatible(aval, x):
  """JAX's typecheck of a cotangent against an output aval (weak types ignored)."""
  try:
    a = core.get_aval(x)
  except TypeError:
    return False
  return a.shape == aval.shape and a.dtype == aval.dtype


def _as_array(x, aval):
  """A cotangent given as a Python scalar or NumPy value, as an Array of ``aval``'s dtype."""
  if isinstance(x, core.Tracer) or hasattr(x, "_buf"):
    return x
  from pyjax._src.numpy import array_constructors
  return array_constructors.asarray(x, dtype=aval.dtype)


def _zeros(aval):
  from pyjax._src.lax import shapes
  return shapes.full(aval.shape, 0, aval.dtype)


def linear_transpose(fun, *primals, reduce_axes=()):
  """The transpose of the linear function ``fun``, traced at the shapes/dtypes of
  ``primals`` (Arrays, scalars or ShapeDtypeStructs; their values are unused).

  The result ``f_t(out_cotangent)`` takes a cotangent with the structure of ``fun``'s output
  and returns a tuple of cotangents, one per primal.  As in JAX, ``fun`` must map floating
  (or complex) inputs to floating outputs, or integers to integers (``TypeError``
  otherwise); constant terms of an affine function are dropped.  The result is a
  ``tree_util.Partial`` (a pytree, so it may be passed to ``jit``)."""
  if reduce_axes:
    raise NotImplementedError("reduce_axes argument to transpose is deprecated")
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  leaves, in_tree = tree_util.tree_flatten(primals)
  in_avals = [_primal_aval(x) for x in leaves]
  out_tree_cell = []

  def flat_fun(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, list(xs)))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_cell.append(out_tree)
    return out_leaves

  debug = staging.DebugInfo("linear_transpose", staging.fun_source_info(fun), None,
                            staging.fun_name(fun))
  closed, tracer_consts = staging.trace_flat(flat_fun, in_avals, debug)
  out_tree = out_tree_cell[-1]
  out_avals = tuple(closed.out_avals)
  in_dtypes = [a.dtype for a in in_avals]
  out_dtypes = [a.dtype for a in out_avals]
  every = in_dtypes + out_dtypes
  if not (all(dtypes.issubdtype(d, np.inexact) for d in every)
          or all(dtypes.issubdtype(d, np.integer) for d in every)):
    raise TypeError("linear_transpose only supports [float or complex] -> [float or complex], "
                    f"and integer -> integer functions, but got {in_dtypes} -> {out_dtypes}.")
  n_tc = len(tracer_consts)
  jaxpr, consts = closed.jaxpr, list(closed.consts)

  def transposed_fun(res, out_cotangent):
    tconsts, consts_ = res
    out_cts, out_tree2 = tree_util.tree_flatten(out_cotangent)
    if out_tree != out_tree2:
      raise TypeError("cotangent tree does not match function output, "
                      f"expected {out_tree} but got {out_tree2}")
    if not all(_compatible(a, c) for a, c in zip(out_avals, out_cts)):
      raise TypeError("cotangent type does not match function output, "
                      f"expected {out_avals} but got {out_cts}")
    out_cts = [_as_array(c, a) for c, a in zip(out_cts, out_avals)]
    args = list(tconsts) + [ad.UndefinedPrimal(a) for a in in_avals]
    in_cts = ad.backward_pass(jaxpr, consts_, out_cts, args)[n_tc:]
    in_cts = [_zeros(a) if type(c) is ad.Zero else c for c, a in zip(in_cts, in_avals)]
    return tree_util.tree_unflatten(in_tree, in_cts)

  return tree_util.Partial(transposed_fun, (list(tracer_consts), consts))


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
  """``(fwd, bwd)``: the forward and backward passes of ``fun`` as two functions.

  ``fwd(*args)`` returns ``(fun(*args), residuals)`` (``(out, residuals, aux)`` with
  ``has_aux``), as ``vjp`` of ``fun`` in the arguments ``argnums`` would; ``residuals`` is
  the vjp function, a pytree whose leaves are the residual arrays.
  ``bwd(residuals, out_cotangent)`` returns the cotangents of the ``argnums`` arguments (one
  value for an integer ``argnums``, a tuple for a sequence).  With ``jitted`` (default) both
  are ``jit``-compiled, so a loop calling them compiles each once."""
  from pyjax._src import api, api_ad
  if not callable(fun):
    raise TypeError(f"Expected a callable function, got {fun}")
  argnums = api_ad._ensure_index(argnums)

  def fwd(*args, **kwargs):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    api_ad._check_argnums(argnums, len(args))
    dyn = tuple(args[i] for i in nums)

    def f_partial(*d):
      full = list(args)
      for i, v in zip(nums, d):
        full[i] = v
      return fun(*full, **kwargs)
    return api_ad.vjp(f_partial, *dyn, has_aux=has_aux)

  def bwd(f_vjp, outgrad):
    g = f_vjp(outgrad)
    return g[0] if isinstance(argnums, int) else g

  if jitted:
    fwd = api.jit(fwd)
    bwd = api.jit(bwd)
  return fwd, bwd
