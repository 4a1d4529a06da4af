"""Helpers for writing transformations (JAX's ``jax.api_util``) over ``linear_util``.

``flatten_fun`` / ``flatten_fun_nokwargs`` turn a ``WrappedFun`` of pytrees into one of
flat argument lists (its output tree read from the returned thunk after a call);
``argnums_partial`` fixes static positional arguments; ``debug_info`` builds the
``DebugInfo`` pyjax's staging uses; ``flatten_axes``, ``donation_vector``,
``rebase_donate_argnums``, ``safe_map`` / ``safe_zip`` as in JAX.
"""
from __future__ import annotations

import functools

from pyjax._src import linear_util as lu
from pyjax._src import tree_util
from pyjax._src.extend_core import shaped_abstractify  # noqa: F401  (re-exported)
from pyjax._src.interpreters import staging


def wraps(wrapped):
  """``functools.wraps(wrapped)`` that never fails: a callable object whose ``__name__``
  is not a string (an equinox Module with a ``__name__`` field) or that lacks the
  attributes leaves the wrapper as it is, as JAX's transformations do."""
  def deco(fun):
    try:
      return functools.update_wrapper(fun, wrapped)
    except (TypeError, AttributeError):
      fun.__wrapped__ = wrapped
      return fun
  return deco


def safe_map(f, *args):
  """``list(map(f, *args))``, checking every argument has the same length."""
  args = list(map(list, args))
  n = len(args[0])
  for arg in args[1:]:
    if len(arg) != n:
      raise ValueError(f"length mismatch: {list(map(len, args))}")
  return list(map(f, *args))


def safe_zip(*args):
  """``list(zip(*args))``, checking every argument has the same length."""
  args = list(map(list, args))
  n = len(args[0])
  for arg in args[1:]:
    if len(arg) != n:
      raise ValueError(f"length mismatch: {list(map(len, args))}")
  return list(zip(*args))


@lu.transformation_with_aux2
def flatten_fun(f, store, in_tree, *args_flat):
  """``f(*args, **kwargs)`` as a function of the leaves of ``(args, kwargs)``
  (``in_tree``), returning the leaves of its output; the thunk gives the output tree."""
  py_args, py_kwargs = tree_util.tree_unflatten(in_tree, args_flat)
  ans = f(*py_args, **py_kwargs)
  ans, out_tree = tree_util.tree_flatten(ans)
  store.store(out_tree)
  return ans


@lu.transformation_with_aux2
def flatten_fun_nokwargs(f, store, in_tree, *args_flat):
  """``f(*args)`` as a function of the leaves of ``args`` (``in_tree``), returning the
  leaves of its output; the thunk gives the output tree."""
  py_args = tree_util.tree_unflatten(in_tree, args_flat)
  ans = f(*py_args)
  ans, out_tree = tree_util.tree_flatten(ans)
  store.store(out_tree)
  return ans


@lu.transformation_with_aux2
def flatten_fun_nokwargs2(f, store, in_tree, *args_flat):
  """Like ``flatten_fun_nokwargs`` for a function returning ``(ans, aux)``: the thunk
  gives ``(out_tree, aux_leaves)``."""
  py_args = tree_util.tree_unflatten(in_tree, args_flat)
  pair = f(*py_args)
  if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
    raise TypeError("expected function with aux output to return a two-element tuple, "
                    f"but got type {type(pair)} with value {pair!r}")
  ans, aux = pair
  ans_flat, ans_tree = tree_util.tree_flatten(ans)
  aux_flat, aux_tree = tree_util.tree_flatten(aux)
  store.store((ans_tree, aux_tree))
  return ans_flat, aux_flat


@lu.transformation2
def _argnums_partial(f, dyn_argnums, static_args, *dyn_args, **kwargs):
  args = list(static_args)
  for i, x in zip(dyn_argnums, dyn_args):
    args[i] = x
  return f(*args, **kwargs)


class _Static:
  """A static argument slot (hashable by value when it can be)."""
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = val


def argnums_partial(f, dyn_argnums, args, require_static_args_hashable=True):
  """``(f_dyn, dyn_args)``: ``f`` with the arguments not in ``dyn_argnums`` fixed to their
  values in ``args`` and the dynamic ones left as parameters."""
  dyn_argnums = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
  dyn_argnums = tuple(i % len(args) for i in dyn_argnums)
  if require_static_args_hashable:
    for i, a in enumerate(args):
      if i not in dyn_argnums:
        try:
          hash(a)
        except TypeError:
          raise ValueError(f"Non-hashable static arguments are not supported. An error "
                           f"occurred while trying to hash an object of type {type(a)}, "
                           f"{a}.") from None
  static_args = tuple(None if i in dyn_argnums else a for i, a in enumerate(args))
  dyn_args = tuple(args[i] for i in dyn_argnums)
  return _argnums_partial(f, dyn_argnums, static_args), dyn_args


def debug_info(traced_for, fun, args, kwargs, *, static_argnums=(), static_argnames=(),
               result_paths_thunk=None, sourceinfo=None, signature=None):
  """The ``DebugInfo`` of tracing ``fun(*args, **kwargs)`` for ``traced_for`` ("jit",
  "vmap", ...): the function's name and source line and one name per flat argument.
  ``result_paths_thunk``, ``sourceinfo`` and ``signature`` are accepted and ignored."""
  del result_paths_thunk, sourceinfo, signature
  if isinstance(fun, lu.WrappedFun):
    fun = fun.f
  return staging.make_debug_info(traced_for, fun, tuple(args), dict(kwargs),
                                 tuple(static_argnums), tuple(static_argnames))


def flatten_axes(name, treedef, axis_tree, *, kws=False, tupled_args=False):
  """One entry of ``axis_tree`` (a tree prefix of ``treedef``; ``None`` entries kept) per
  leaf of ``treedef``.  ``kws``: ``treedef`` is of ``(args, kwargs)`` and ``axis_tree``
  applies to ``args`` (kwargs get 0)."""
  del tupled_args
  from pyjax._src.api_vmap import _flatten_axes
  if kws:
    args_tree, kwargs_tree = treedef.children()
    return (_flatten_axes(name, args_tree, axis_tree)
            + [0] * kwargs_tree.num_leaves)
  return _flatten_axes(name, treedef, axis_tree)


def donation_vector(donate_argnums, donate_argnames, in_tree, kws=True):
  """One bool per leaf of ``in_tree`` (of ``(args, kwargs)`` when ``kws``): whether that
  leaf's argument is donated."""
  res = []
  if kws:
    args_tree, kwargs_tree = in_tree.children()
  else:
    args_tree, kwargs_tree = in_tree, None
  for i, arg in enumerate(args_tree.children()):
    res.extend([i in donate_argnums] * arg.num_leaves)
  if kwargs_tree is not None:
    kw_leaves = tree_util.tree_unflatten(kwargs_tree, [None] * kwargs_tree.num_leaves)
    for key in sorted(kw_leaves) if isinstance(kw_leaves, dict) else ():
      n = tree_util.tree_structure(kw_leaves[key], is_leaf=lambda x: x is None).num_leaves
      res.extend([key in donate_argnames] * n)
  return tuple(res)


def rebase_donate_argnums(donate_argnums, static_argnums):
  """``donate_argnums`` renumbered for the argument list with ``static_argnums`` removed
  (a static argument cannot be donated)."""
  if not (set(donate_argnums) & set(static_argnums)):
    static = sorted(static_argnums)
    out = []
    for i in sorted(donate_argnums):
      out.append(i - sum(1 for s in static if s < i))
    return tuple(out)
  raise ValueError(f"`static_argnums` {static_argnums} and `donate_argnums` "
                   f"{donate_argnums} cannot intersect.")
