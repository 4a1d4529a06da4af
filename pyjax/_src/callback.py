"""Host callbacks that return values: ``jax.pure_callback`` and
``jax.experimental.io_callback``.

* ``pure_callback_p`` (params ``callback``, ``result_avals``, ``sharding``,
  ``vmap_method``): a pure function of its arguments — no effect, so an unused result is
  dropped from compiled programs, and it may run several times.  Not differentiable
  (JAX's ValueError; wrap it in ``custom_jvp``/``custom_vjp``).  Under ``vmap`` it
  follows ``vmap_method``: ``"sequential"`` / ``"sequential_unrolled"`` call the callback
  once per batch element, ``"expand_dims"`` adds a size-1 leading axis to unbatched
  arguments and calls it once, ``"broadcast_all"`` broadcasts them to the batch size,
  ``"legacy_vectorized"`` passes unbatched arguments as they are; ``None`` raises
  NotImplementedError.
* ``io_callback_p`` (``callback``, ``result_avals``, ``sharding``, ``ordered``): has the
  ``IO`` (or ``OrderedIO``) effect, so it is never dropped; not differentiable; under
  ``vmap`` it runs once per batch element (ordered ones cannot be vmapped).

The eager (and jitted) implementations live in ``backends/cpu/eager/callbacks.py``: the
callback receives Arrays and its results are checked against ``result_avals``.
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.backends.cpu.eager import callbacks as _host  # noqa: F401  (registers impls)
from pyjax._src.interpreters import ad

__all__ = ["pure_callback", "io_callback", "pure_callback_p", "io_callback_p", "IOEffect",
           "OrderedIOEffect"]


class _FlatCallback:
  """The user's callback called with flat arguments, returning flat results.  Equal for
  the same function and argument structure (as JAX's)."""
  __slots__ = ("callback_func", "in_tree")

  def __init__(self, callback_func, in_tree):
    self.callback_func = callback_func
    self.in_tree = in_tree

  def __call__(self, *flat_args):
    args, kwargs = self.in_tree.unflatten(list(flat_args))
    return tree_util.tree_leaves(self.callback_func(*args, **kwargs))

  def __eq__(self, other):
    return (type(other) is _FlatCallback and self.callback_func == other.callback_func
            and self.in_tree == other.in_tree)

  def __hash__(self):
    return hash((self.callback_func, self.in_tree))

  def __repr__(self):
    return f"_FlatCallback(callback_func={self.callback_func!r}, in_tree={self.in_tree})"


def _result_avals(result_shape_dtypes):
  def check(sd):
    dt = np.dtype(sd.dtype)
    if dtypes.canonicalize_dtype(dt) != dt:
      raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                       "`jax_enable_x64` is disabled")
    return ShapedArray(tuple(sd.shape), dt)
  avals = tree_util.tree_map(check, result_shape_dtypes)
  return tree_util.tree_flatten(avals)


# --- pure_callback ------------------------------------------------------------------------
pure_callback_p = core.Primitive("pure_callback")
pure_callback_p.multiple_results = True


@pure_callback_p.def_abstract_eval
def _pure_callback_abstract(*avals, callback, result_avals, sharding, vmap_method):
  del avals, callback, sharding, vmap_method
  return list(result_avals)


def _pure_callback_jvp(primals, tangents, **params):
  raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                   "callbacks while taking gradients.")


def _pure_callback_transpose(cts, *args, **params):
  raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` "
                   "to use callbacks while taking gradients.")


ad.primitive_jvps[pure_callback_p] = _pure_callback_jvp
ad.primitive_transposes[pure_callback_p] = _pure_callback_transpose

_VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None]


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
  """Call the pure Python function ``callback(*args, **kwargs)`` on the host, also from
  inside ``jit``/``vmap``.  ``result_shape_dtypes`` is a pytree of objects with ``shape``
  and ``dtype`` (e.g. ``ShapeDtypeStruct``) describing what the callback returns; the
  result is a pytree of Arrays of that structure.  See the module docstring for
  ``vmap_method``.  Differs from JAX: ``sharding`` is accepted and ignored (one CPU
  device)."""
  if vmap_method not in _VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {_VMAP_METHODS}, but "
                     f"got: {vmap_method}")
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  flat_avals, out_tree = _result_avals(result_shape_dtypes)
  outs = pure_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                              result_avals=tuple(flat_avals), sharding=sharding,
                              vmap_method=vmap_method)
  return tree_util.tree_unflatten(out_tree, outs)


# --- io_callback --------------------------------------------------------------------------
class IOEffect(core.Effect):
  def __init__(self):
    super().__init__("IO")


class OrderedIOEffect(core.Effect):
  def __init__(self):
    super().__init__("OrderedIO", ordered=True)


io_effect = IOEffect()
ordered_io_effect = OrderedIOEffect()

io_callback_p = core.Primitive("io_callback")
io_callback_p.multiple_results = True


@io_callback_p.def_effectful_abstract_eval
def _io_callback_abstract(*avals, callback, result_avals, sharding, ordered):
  del avals, callback, sharding
  return list(result_avals), {ordered_io_effect if ordered else io_effect}


def _io_callback_jvp(primals, tangents, **params):
  raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(cts, *args, **params):
  raise ValueError("IO callbacks do not support transpose.")


ad.primitive_jvps[io_callback_p] = _io_callback_jvp
ad.primitive_transposes[io_callback_p] = _io_callback_transpose


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False,
                **kwargs):
  """Call the impure Python function ``callback(*args, **kwargs)`` on the host (also
  inside ``jit``; never dropped as dead code).  ``result_shape_dtypes`` as for
  ``pure_callback``.  Differs from JAX: ``sharding`` is accepted and ignored; every
  callback runs in program order (``ordered`` only changes the jaxpr's effect)."""
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  flat_avals, out_tree = _result_avals(result_shape_dtypes)
  outs = io_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                            result_avals=tuple(flat_avals), sharding=sharding,
                            ordered=ordered)
  return tree_util.tree_unflatten(out_tree, outs)


# --- batching (registered when the vmap interpreter is present) ---------------------------
def _moveaxis0(x, d):
  from pyjax._src.lax import shapes
  if d == 0:
    return x
  nd = len(core.get_aval(x).shape)
  perm = (d,) + tuple(i for i in range(nd) if i != d)
  return shapes.transpose(x, perm)


def _stack(xs):
  from pyjax._src.lax import shapes
  parts = [shapes.broadcast_in_dim(x, (1,) + tuple(core.get_aval(x).shape),
                                   tuple(range(1, 1 + len(core.get_aval(x).shape))))
           for x in xs]
  return parts[0] if len(parts) == 1 else shapes.concatenate(parts, 0)


def _sequential(prim, args, dims, params, unroll=False):
  """One call per batch element, in a ``scan`` over the batched arguments (as JAX's
  ``lax.map``); unbatched arguments are scan constants."""
  from pyjax._src.lax import control_flow
  moved = [x if d is None else _moveaxis0(x, d) for x, d in zip(args, dims)]
  batched = [d is not None for d in dims]
  unbatched_args = [x for x, b in zip(moved, batched) if not b]
  batched_args = [x for x, b in zip(moved, batched) if b]

  def body(carry, xs):
    it_u, it_b = iter(unbatched_args), iter(xs)
    merged = [next(it_b) if b else next(it_u) for b in batched]
    return carry, prim.bind(*merged, **params)
  _, outs = control_flow.scan(body, (), batched_args, unroll=unroll)
  return list(outs), [0] * len(outs)


def _batched_avals(size, result_avals):
  return tuple(ShapedArray((size,) + tuple(a.shape), a.dtype, a.weak_type)
               for a in result_avals)


def _pure_callback_batch(args, dims, *, vmap_method, result_avals, **params):
  from pyjax._src.lax import shapes
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  moved = [x if d is None else _moveaxis0(x, d) for x, d in zip(args, dims)]
  if vmap_method == "legacy_vectorized":
    outs = pure_callback_p.bind(*moved, vmap_method=vmap_method,
                                result_avals=_batched_avals(size, result_avals), **params)
  elif vmap_method in ("expand_dims", "broadcast_all"):
    n = size if vmap_method == "broadcast_all" else 1
    ext = [shapes.broadcast(x, (n,)) if d is None else x for x, d in zip(moved, dims)]
    outs = pure_callback_p.bind(*ext, vmap_method=vmap_method,
                                result_avals=_batched_avals(size, result_avals), **params)
  elif vmap_method in ("sequential", "sequential_unrolled"):
    return _sequential(pure_callback_p, args, dims,
                       dict(params, vmap_method=vmap_method, result_avals=result_avals),
                       unroll=vmap_method == "sequential_unrolled")
  else:
    raise NotImplementedError(
        "vmap is only supported for the pure_callback primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got vmap_method={vmap_method}.")
  return list(outs), [0] * len(outs)


def _io_callback_batch(args, dims, *, ordered, **params):
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  return _sequential(io_callback_p, args, dims, dict(params, ordered=False))


def _register_batching():
  try:
    from pyjax._src.interpreters import batching
  except ImportError:
    return
  batching.primitive_batchers[pure_callback_p] = _pure_callback_batch
  batching.primitive_batchers[io_callback_p] = _io_callback_batch


_register_batching()
