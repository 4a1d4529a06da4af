"""Sparse-aware ``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev`` and ``jacobian``
(``jax.experimental.sparse``): a sparse argument is differentiated through its ``data``
only (its indices are held fixed) and its derivative comes back as a sparse array of the
same class and indices, as in JAX.
"""
from __future__ import annotations

import operator

from pyjax._src import tree_util
from pyjax._src.sparse.base import JAXSparse

__all__ = ["grad", "value_and_grad", "jacfwd", "jacrev", "jacobian"]


def _is_sparse(x):
  return isinstance(x, JAXSparse)


def _split(args, argnums):
  """For each differentiated argument: its sparse leaves' data in place of the sparse
  arrays, and how to rebuild the arrays (and their derivatives) from new data."""
  diff, rebuild = [], []
  for i in argnums:
    leaves, tree = tree_util.tree_flatten(args[i], is_leaf=_is_sparse)
    datas, makers = [], []
    for leaf in leaves:
      if _is_sparse(leaf):
        bufs, stree = tree_util.tree_flatten(leaf)
        datas.append(bufs[0])
        makers.append(lambda d, b=bufs, t=stree: tree_util.tree_unflatten(t, [d, *b[1:]]))
      else:
        datas.append(leaf)
        makers.append(None)
    diff.append(datas)
    rebuild.append((tree, makers))
  return diff, rebuild


def _restore(datas, tree, makers):
  return tree_util.tree_unflatten(
      tree, [d if m is None else m(d) for d, m in zip(datas, makers)])


def _wrap(transform, fun, argnums, has_aux, kwargs, grad_like):
  int_arg = isinstance(argnums, int)
  nums = (operator.index(argnums),) if int_arg else tuple(argnums)

  def wrapped(*args):
    diff, rebuild = _split(args, nums)

    def inner(*dargs):
      full = list(args)
      for i, d, (tree, makers) in zip(nums, dargs, rebuild):
        full[i] = _restore(d, tree, makers)
      return fun(*full)

    f = transform(inner, argnums=tuple(range(len(nums))), has_aux=has_aux, **kwargs)
    out = f(*diff)

    def rewrap(gs):
      res = [_restore(d, tree, makers) for d, (tree, makers) in zip(gs, rebuild)]
      return res[0] if int_arg else tuple(res)

    if grad_like == "value":
      val, g = out
      return val, rewrap(g)
    if has_aux:
      g, aux = out
      return rewrap(g), aux
    return rewrap(out)

  return wrapped


def grad(fun, argnums=0, has_aux=False, **kwargs):
  """Sparse-aware ``jax.grad``: gradients with respect to sparse arguments are sparse
  arrays with the arguments' indices (derivatives w.r.t. their ``data``)."""
  from pyjax._src.api_ad import grad as _grad
  return _wrap(_grad, fun, argnums, has_aux, kwargs, "grad")


def value_and_grad(fun, argnums=0, has_aux=False, **kwargs):
  """Sparse-aware ``jax.value_and_grad`` (see ``grad``)."""
  from pyjax._src.api_ad import value_and_grad as _vg
  return _wrap(_vg, fun, argnums, has_aux, kwargs, "value")


def jacfwd(fun, argnums=0, has_aux=False, **kwargs):
  """Sparse-aware ``jax.jacfwd``: the Jacobian w.r.t. a sparse argument's ``data``,
  wrapped with its indices."""
  from pyjax._src.api_ad import jacfwd as _jf
  return _wrap(_jf, fun, argnums, has_aux, kwargs, "grad")


def jacrev(fun, argnums=0, has_aux=False, **kwargs):
  """Sparse-aware ``jax.jacrev`` (see ``jacfwd``)."""
  from pyjax._src.api_ad import jacrev as _jr
  return _wrap(_jr, fun, argnums, has_aux, kwargs, "grad")


jacobian = jacrev
