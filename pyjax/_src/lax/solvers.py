"""Implicitly differentiated solvers: ``custom_linear_solve`` (the ``custom_linear_solve``
primitive, JAX's ``linear_solve_p``) and ``custom_root``.

``custom_linear_solve(matvec, b, solve, transpose_solve)`` stages ``matvec``, its
transpose ``vecmat`` (derived by transposing ``matvec``'s jaxpr), ``solve`` and
``transpose_solve`` into jaxprs whose constants are leading operands
(``const_lengths`` counts them).  Evaluation runs ``solve``.  Derivatives never
differentiate through ``solve``: the JVP solves the same system for
``b_dot - (d matvec) x``, the transpose solves the transposed system with
``transpose_solve``, and batching batches all four jaxprs to a fixed point.

``custom_root(f, x0, solve, tangent_solve)`` is a ``custom_jvp`` function whose rule uses
the implicit function theorem at the root: ``x_dot = -tangent_solve(J_x f, J_p f p_dot)``.
"""
from __future__ import annotations

import functools
import operator
from typing import Any, NamedTuple

import numpy as np

from pyjax._src import core
from pyjax._src import tree_util
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax.control_flow import common

__all__ = ["custom_linear_solve", "custom_root", "linear_solve_p"]

Zero = ad.Zero


class _LinearSolveTuple(NamedTuple):
  matvec: Any
  vecmat: Any
  solve: Any
  transpose_solve: Any

  def transpose(self):
    return type(self)(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _split(args, lengths):
  out, i = [], 0
  for n in lengths:
    out.append(list(args[i:i + n]))
    i += n
  return out, list(args[i:])


def _split_linear_solve_args(args, const_lengths):
  params, rest = _split(args, const_lengths)
  return _LinearSolveTuple(*params), rest


def _check_tree(func_name, expected_name, actual_tree, expected_tree, has_aux=False):
  if has_aux:
    children = actual_tree.children()
    if len(children) != 2:
      raise ValueError(f"{func_name}() produced a pytree with structure {actual_tree}, but a "
                       "pytree tuple with auxiliary output was expected because has_aux was "
                       "set to True.")
    actual_tree = children[0]
  if actual_tree != expected_tree:
    raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, got "
                    f"{actual_tree} and {expected_tree}.")


def _shape_checked(fun, name, b_leaves, has_aux):
  expected = [np.shape(x) if not isinstance(x, core.Tracer) else x.shape for x in b_leaves]

  def check(y):
    actual = [tuple(core.get_aval(v).shape) for v in tree_util.tree_leaves(y)]
    if actual != [tuple(s) for s in expected]:
      raise ValueError(f"{name}() output shapes must match b, got {actual} and "
                       f"{[tuple(s) for s in expected]}")

  def f(x):
    y = fun(x)
    check(y)
    return y

  def f_aux(x):
    y, aux = fun(x)
    check(y)
    return y, aux
  return f_aux if has_aux else f


def _transpose_linear(matvec_jaxpr, matvec_consts, b_tree, b_avals):
  """``vecmat``: the transpose of the linear map ``matvec_jaxpr`` (consts leading)."""
  n = len(matvec_consts)

  def vecmat(y):
    cts = tree_util.tree_leaves(y)
    args = list(matvec_consts) + [ad.UndefinedPrimal(a) for a in b_avals]
    outs = ad.backward_pass(matvec_jaxpr.jaxpr, matvec_jaxpr.consts, cts, args)[n:]
    outs = [ad.instantiate_zeros(o) if type(o) is Zero else o for o in outs]
    return tree_util.tree_unflatten(b_tree, outs)
  return vecmat


# --- the primitive ------------------------------------------------------------------------
linear_solve_p = core.Primitive("custom_linear_solve")
linear_solve_p.multiple_results = True


@linear_solve_p.def_effectful_abstract_eval
def _linear_solve_abstract(*avals, const_lengths, jaxprs):
  outs = list(avals[sum(const_lengths):])
  num_aux = len(jaxprs.solve.out_avals) - len(jaxprs.matvec.out_avals)
  if num_aux > 0:
    outs += list(jaxprs.solve.out_avals[-num_aux:])
  return outs, core.jaxpr_effects(jaxprs.solve)


@linear_solve_p.def_impl
def _linear_solve_impl(*args, const_lengths, jaxprs):
  params, b = _split_linear_solve_args(args, const_lengths)
  outs = core.eval_jaxpr(jaxprs.solve.jaxpr, jaxprs.solve.consts, *params.solve, *b)
  return [common.as_array(o) for o in outs]


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
  """Solve ``matvec(x) == b`` with ``x = solve(matvec, b)``, differentiated implicitly
  (never through ``solve``).  ``transpose_solve(vecmat, b)`` solves the transposed
  system (needed for reverse mode unless ``symmetric``).  With ``has_aux`` the solvers
  return ``(x, aux)``."""
  if transpose_solve is None and symmetric:
    transpose_solve = solve
  b_leaves, tree = tree_util.tree_flatten(b)
  b_avals = [core.get_aval(x) for x in b_leaves]
  in_tree = tree_util.tree_structure((b,))

  def trace(fun, name):
    return common.trace_callable(fun, in_tree, b_avals, name, (b,))

  matvec_jaxpr, matvec_consts, out_tree = trace(
      _shape_checked(matvec, "matvec", b_leaves, False), "custom_linear_solve")
  _check_tree("matvec", "b", out_tree, tree, False)
  solve_jaxpr, solve_consts, out_tree = trace(
      _shape_checked(functools.partial(solve, matvec), "solve", b_leaves, has_aux),
      "custom_linear_solve solve")
  _check_tree("solve", "b", out_tree, tree, has_aux)
  result_tree = out_tree
  if transpose_solve is None:
    vecmat_jaxpr = tr_solve_jaxpr = None
    vecmat_consts, tr_solve_consts = [], []
  else:
    if symmetric:
      vecmat = matvec
      vecmat_jaxpr, vecmat_consts = matvec_jaxpr, matvec_consts
    else:
      vecmat = _transpose_linear(matvec_jaxpr, matvec_consts, tree, b_avals)
      vecmat_jaxpr, vecmat_consts, _ = trace(vecmat, "custom_linear_solve transpose_solve")
    tr_solve_jaxpr, tr_solve_consts, out_tree = trace(
        _shape_checked(functools.partial(transpose_solve, vecmat), "transpose_solve",
                       b_leaves, has_aux), "custom_linear_solve transpose_solve")
    _check_tree("transpose_solve", "b", out_tree, tree, has_aux)
  all_consts = [matvec_consts, vecmat_consts, solve_consts, tr_solve_consts]
  const_lengths = _LinearSolveTuple(*[len(c) for c in all_consts])
  jaxprs = _LinearSolveTuple(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tr_solve_jaxpr)
  outs = linear_solve_p.bind(*[c for cs in all_consts for c in cs], *b_leaves,
                             const_lengths=const_lengths, jaxprs=jaxprs)
  return tree_util.tree_unflatten(result_tree, outs)


# --- differentiation ----------------------------------------------------------------------
def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
  x = linear_solve_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs)
  params, _ = _split_linear_solve_args(primals, const_lengths)
  params_dot, b_dot = _split_linear_solve_args(tangents, const_lengths)
  n = len(b_dot)
  x_leaves = x[:n]
  if all(type(p) is Zero for p in params_dot.matvec):
    rhs = list(b_dot)
  else:
    zeros = [Zero.from_primal_value(v) for v in x_leaves]
    mv = jaxprs.matvec
    _, mv_t = ad.jvp_flat(lambda *a: core.eval_jaxpr(mv.jaxpr, mv.consts, *a),
                          list(params.matvec) + list(x_leaves),
                          list(params_dot.matvec) + zeros)
    rhs = [bd if type(mt) is Zero else
           (_neg(mt) if type(bd) is Zero else ad.add_tangents(bd, _neg(mt)))
           for bd, mt in zip(b_dot, mv_t)]
  out_avals = [ad.tangent_aval(core.get_aval(v)) for v in x]
  if all(type(r) is Zero for r in rhs):
    return x, [Zero(a) for a in out_avals]
  rhs = [ad.instantiate_zeros(r) for r in rhs]
  flat_params = [p for ps in params for p in ps]
  x_dot = linear_solve_p.bind(*flat_params, *rhs, const_lengths=const_lengths, jaxprs=jaxprs)
  return x, list(x_dot[:n]) + [Zero(a) for a in out_avals[n:]]


def _neg(t):
  from pyjax._src.lax import elementwise as ew
  return ew.neg_p.bind(t)


def _linear_solve_transpose(cts, *primals, const_lengths, jaxprs):
  if jaxprs.transpose_solve is None:
    raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                    "of custom_linear_solve")
  params, b = _split_linear_solve_args(primals, const_lengths)
  if any(ad.is_undefined_primal(x) for xs in params for x in xs):
    raise NotImplementedError("custom_linear_solve: cannot transpose with respect to the "
                              "operator's parameters (they must not be linear inputs)")
  x_cts = list(cts[:len(b)])
  if any(type(c) is not Zero for c in cts[len(b):]):
    raise NotImplementedError("custom_linear_solve: auxiliary outputs cannot carry "
                              "cotangents")
  if all(type(c) is Zero for c in x_cts):
    return [None] * len(primals)
  x_cts = [ad.instantiate_zeros(c) for c in x_cts]
  tparams = params.transpose()
  ct_b = linear_solve_p.bind(*[p for ps in tparams for p in ps], *x_cts,
                             const_lengths=const_lengths.transpose(),
                             jaxprs=jaxprs.transpose())
  return [None] * sum(const_lengths) + list(ct_b[:len(b)])


ad.primitive_jvps[linear_solve_p] = _linear_solve_jvp
ad.primitive_transposes[linear_solve_p] = _linear_solve_transpose


# --- batching -----------------------------------------------------------------------------
def _linear_solve_batch(axis_data, args, dims, *, const_lengths, jaxprs):
  orig_bat = [d is not batching.not_mapped for d in dims]
  params, b = _split_linear_solve_args(args, const_lengths)
  params_dims, b_dims = _split_linear_solve_args(dims, const_lengths)
  params_bat, orig_b_bat = _split_linear_solve_args(orig_bat, const_lengths)
  matvec, vecmat, solve, solve_t = jaxprs
  matvec_bat, vecmat_bat, solve_bat, solve_t_bat = params_bat
  n_out = len(matvec.out_avals)
  num_aux = len(solve.out_avals) - n_out
  b_bat = list(orig_b_bat)
  x_bat = [False] * len(solve.out_avals)
  # Fixed point: x is batched where solve (or vecmat) makes it so; b where matvec (or
  # transpose_solve) does.  Each round can only turn more entries on.
  for _ in range(1 + len(orig_b_bat) + len(solve.out_avals)):
    solve_b, solve_x_bat = batching.batch_jaxpr(solve, axis_data, solve_bat + b_bat, x_bat)
    if vecmat is None:
      vecmat_b = None
      x_bat_out = list(solve_x_bat)
    else:
      vecmat_b, vecmat_x_bat = batching.batch_jaxpr(vecmat, axis_data, vecmat_bat + b_bat,
                                                    b_bat)
      x_bat_out = list(map(operator.or_, list(vecmat_x_bat) + [True] * num_aux, solve_x_bat))
    x_bat_noaux = x_bat_out[:n_out]
    matvec_b, matvec_b_bat = batching.batch_jaxpr(matvec, axis_data, matvec_bat + x_bat_noaux,
                                                  b_bat)
    if solve_t is None:
      solve_t_b = None
      b_bat_out = list(map(operator.or_, matvec_b_bat, orig_b_bat))
    else:
      solve_t_b, solve_t_out_bat = batching.batch_jaxpr(solve_t, axis_data,
                                                        solve_t_bat + x_bat_noaux, x_bat_out)
      b_bat_out = [m or s or o for m, s, o in zip(matvec_b_bat, solve_t_out_bat[:len(b)],
                                                 orig_b_bat)]
    if x_bat_out == x_bat and b_bat_out == b_bat:
      break
    x_bat, b_bat = x_bat_out, b_bat_out
  else:  # pragma: no cover
    raise AssertionError("custom_linear_solve batching: no fixed point")
  new_jaxprs = _LinearSolveTuple(matvec_b, vecmat_b, solve_b, solve_t_b)
  new_params = [batching.moveaxis(x, d, 0) if d is not batching.not_mapped else x
                for ps, ds in zip(params, params_dims) for x, d in zip(ps, ds)]
  new_b = [batching.bdim_at_front(x, d, axis_data.size) if now else x
           for x, d, now in zip(b, b_dims, b_bat)]
  outs = linear_solve_p.bind(*new_params, *new_b, const_lengths=const_lengths,
                             jaxprs=new_jaxprs)
  return outs, [0 if bt else batching.not_mapped for bt in solve_x_bat]


batching.axis_primitive_batchers[linear_solve_p] = _linear_solve_batch


# --- custom_root ----------------------------------------------------------------------------
class _RootTuple(NamedTuple):
  f: Any
  solve: Any
  l_and_s: Any


def _custom_root(const_lengths, jaxprs, *args):
  params, guess = _split(args, const_lengths)
  params = _RootTuple(*params)
  return core.eval_jaxpr(jaxprs.solve.jaxpr, jaxprs.solve.consts, *params.solve, *guess)


def _custom_root_jvp(const_lengths, jaxprs, primals, tangents):
  params, _ = _split(primals, const_lengths)
  params = _RootTuple(*params)
  sol = _root_fn()(const_lengths, jaxprs, *primals)
  n = len(jaxprs.f.out_avals)
  solution, aux = list(sol[:n]), list(sol[n:])
  params_dot, _ = _split(tangents, const_lengths)
  params_dot = _RootTuple(*params_dot)
  fj = jaxprs.f
  f_at_solution = lambda *ps: core.eval_jaxpr(fj.jaxpr, fj.consts, *ps, *solution)
  _, rhs = ad.jvp_flat(f_at_solution, list(params.f), list(params_dot.f))
  rhs = [ad.instantiate_zeros(r) for r in rhs]
  ls = jaxprs.l_and_s
  sol_dot = core.eval_jaxpr(ls.jaxpr, ls.consts, *params.l_and_s, *solution, *rhs)
  sol_dot = [_neg(t) for t in sol_dot]
  return list(solution) + aux, sol_dot + [ad.zeros_like(a) for a in aux]


@functools.lru_cache(maxsize=None)
def _root_fn():
  """``_custom_root`` as a custom_jvp function (api_ad is a higher layer: imported on
  first use)."""
  from pyjax._src import api_ad
  fn = api_ad.custom_jvp(_custom_root, nondiff_argnums=(0, 1))
  fn.defjvp(_custom_root_jvp)
  return fn


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
  """``solve(f, initial_guess)`` (a root of ``f``), differentiated implicitly with
  respect to the values ``f`` closes over: ``tangent_solve(g, y)`` must solve
  ``g(x) = y`` for ``g`` the linearization of ``f`` at the root.  With ``has_aux``
  ``solve`` returns ``(root, aux)`` (aux is not differentiated)."""
  from pyjax._src import api_ad
  g_leaves, tree = tree_util.tree_flatten(initial_guess)
  g_avals = [core.get_aval(x) for x in g_leaves]
  in_tree = tree_util.tree_structure((initial_guess,))
  f_jaxpr, f_consts, out_tree = common.trace_callable(f, in_tree, g_avals, "custom_root",
                                                      (initial_guess,))
  _check_tree("f", "initial_guess", out_tree, tree, False)
  solve_jaxpr, solve_consts, sol_tree = common.trace_callable(
      functools.partial(solve, f), in_tree, g_avals, "custom_root solve", (initial_guess,))
  _check_tree("solve", "initial_guess", sol_tree, tree, has_aux)

  def linearize_and_solve(x, b):
    _, f_jvp = api_ad.linearize(f, x)
    return tangent_solve(f_jvp, b)

  ls_tree = tree_util.tree_structure((initial_guess, initial_guess))
  ls_jaxpr, ls_consts, ls_out_tree = common.trace_callable(
      linearize_and_solve, ls_tree, g_avals + g_avals, "custom_root tangent_solve")
  _check_tree("tangent_solve", "x", ls_out_tree, tree, False)
  all_consts = [f_consts, solve_consts, ls_consts]
  const_lengths = _RootTuple(*[len(c) for c in all_consts])
  jaxprs = _RootTuple(f_jaxpr, solve_jaxpr, ls_jaxpr)
  outs = _root_fn()(const_lengths, jaxprs, *[c for cs in all_consts for c in cs], *g_leaves)
  return tree_util.tree_unflatten(sol_tree, outs)
