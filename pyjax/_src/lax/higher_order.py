"""Higher-order lax functions that carry jaxprs: ``composite`` (the ``composite``
primitive) and ``platform_dependent`` (``platform_index`` + a ``cond`` over the
per-platform branches).

``composite(decomposition, name, version)`` stages ``decomposition`` into a jaxpr kept in
the equation with its name, version and keyword attributes; evaluation runs the
decomposition.  As in JAX it has no JVP/transpose rule (JAX's ValueError).  Differs from
JAX: it batches (the decomposition is batched; JAX has no batching rule).

``platform_dependent(*args, cpu=..., cuda=..., default=...)`` binds ``platform_index``
(no operands; the backend executing it resolves its own platform) and, under a trace, a
``cond`` over all branches with JAX's ``branches_platforms`` param; eagerly it calls the
current platform's branch.
"""
from __future__ import annotations

import functools

import numpy as np

from pyjax._src import core, errors
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax.control_flow import common
from pyjax._src.lax.control_flow import conditionals as _cond

__all__ = ["composite", "composite_p", "platform_dependent", "platform_index_p"]


# --- composite ------------------------------------------------------------------------------
class HashableArray:
  """A NumPy array attribute of a composite (hashable by identity; prints as JAX's)."""
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = val

  def __repr__(self):
    return f"HashableArray({self.val!r})"


composite_p = core.Primitive("composite")
composite_p.multiple_results = True


@composite_p.def_effectful_abstract_eval
def _composite_abstract(*avals, name, attributes, version, jaxpr):
  return list(jaxpr.out_avals), core.jaxpr_effects(jaxpr)


@composite_p.def_impl
def _composite_impl(*args, name, attributes, version, jaxpr):
  return [common.as_array(o) for o in core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)]


def _composite_jvp(primals, tangents, **_):
  raise ValueError(
      "JVP rule for composite not implemented. You can use `jax.custom_jvp` to add support. "
      "See https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html")


def _composite_transpose(cts, *args, **_):
  raise ValueError(
      "Transpose rule for composite not implemented. You can use`jax.custom_jvp` or "
      "`jax.custom_vjp` to add support. See "
      "https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html")


def _composite_batch(axis_data, args, dims, *, jaxpr, **params):
  new, out_dims = batching.batch_jaxpr_axes(jaxpr, axis_data, dims)
  return composite_p.bind(*args, jaxpr=new, **params), list(out_dims)


ad.primitive_jvps[composite_p] = _composite_jvp
ad.primitive_transposes[composite_p] = _composite_transpose
batching.axis_primitive_batchers[composite_p] = _composite_batch


def composite(decomposition, name, version=0):
  """Wrap ``decomposition`` as a composite operation named ``name``: positional
  arguments are its inputs, keyword arguments its (static) attributes.  A compiler may
  replace the composite by a native implementation; pyjax always runs the
  decomposition."""
  @functools.wraps(decomposition)
  def wrapper(*args, **kwargs):
    for v in kwargs.values():
      if any(isinstance(x, core.Tracer) for x in tree_util.tree_leaves(v)):
        raise errors.UnexpectedTracerError(
            "Found a JAX Tracer as an attribute in the decomposition for the composite op "
            f"'{name}'. This means that the decomposition function closes over a value that "
            "is involved in a JAX transformation. Any values that aren't explicitly known at "
            "compile time must be explicitly passed as arguments to the composite.\n\nNote: "
            "If you are passing jax arrays as attributes, use numpy arrays instead.")
    leaves, in_tree = tree_util.tree_flatten(args)
    avals = [core.get_aval(x) for x in leaves]
    fun = functools.partial(decomposition, **kwargs)
    closed, consts, out_tree = common.trace_callable(fun, in_tree, avals, "composite", args)
    attributes = []
    for k, v in kwargs.items():
      vl, vt = tree_util.tree_flatten(v)
      vl = tuple(HashableArray(x) if isinstance(x, np.ndarray) else x for x in vl)
      attributes.append((k, vl, vt))
    outs = composite_p.bind(*consts, *leaves, name=name, attributes=tuple(attributes),
                            version=version, jaxpr=closed)
    return tree_util.tree_unflatten(out_tree, outs)
  return wrapper


# --- platform_dependent -------------------------------------------------------------------
platform_index_p = core.Primitive("platform_index")
platform_index_p.def_abstract_eval(lambda *_, **__: ShapedArray((), np.dtype(np.int32)))


# No operands: the platform is the same for every example of a vmap.
batching.primitive_batchers[platform_index_p] = (
    lambda args, dims, **params: (platform_index_p.bind(**params), batching.not_mapped))


def platform_dependent(*args, default=None, **per_platform):
  """``per_platform[p](*args)`` for the platform ``p`` that executes the computation
  ('cpu', 'cuda', 'rocm', 'tpu'), else ``default(*args)``.  Every branch is traced; the
  choice is made by the backend that runs the program."""
  branches, platforms = [], []
  for pname, fn in per_platform.items():
    if not callable(fn):
      raise TypeError(f"lax.platform_dependent: the '{pname}' branch must be a callable.")
    if pname == "gpu":
      raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
    for i, b in enumerate(branches):
      if b == fn:
        platforms[i].append(pname)
        break
    else:
      branches.append(fn)
      platforms.append([pname])
  bp = tuple(tuple(p) for p in platforms)
  if default is not None:
    if not callable(default):
      raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
    branches.append(default)
    bp = bp + (None,)
  index = platform_index_p.bind(platforms=bp)
  if not isinstance(index, core.Tracer):
    return branches[int(index)](*args)
  leaves, in_tree = tree_util.tree_flatten(args)
  avals = [core.get_aval(x) for x in leaves]
  traced = [common.trace_callable(b, in_tree, avals, "switch", args) for b in branches]
  j0, _, tree0 = traced[0]
  for i, (j, _, tree) in enumerate(traced[1:]):
    common.check_branch_outputs("switch", "branch 0", f"branch{i + 1}", branches[0],
                                branches[i + 1], tree0, j0.out_avals, tree, j.out_avals)
  jaxprs, consts = _cond._merge_consts([t[0] for t in traced], [t[1] for t in traced])
  fwds = [common.jaxpr_forwarding(j.jaxpr) for j in jaxprs]
  in_fwd = [f[0] if f[0] is not None and all(x == f[0] for x in f) else None
            for f in zip(*fwds)]
  jaxprs = [common.prune_outputs(j, [f is None for f in in_fwd]) for j in jaxprs]
  outs = _cond.cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs),
                           branches_platforms=bp)
  inputs = list(consts) + list(leaves)
  it = iter(outs)
  outs = [next(it) if f is None else common.as_array(inputs[f]) for f in in_fwd]
  return tree0.unflatten(outs)
