"""Primitives that keep, order or allocate values rather than compute them: the array
``copy``, ``empty`` (an uninitialised buffer), ``stage`` (lift a value into the current
trace), ``optimization_barrier`` and ``dce_sink``.

Each primitive is declared with its abstract-eval rule, JVP/transpose and batching rules
side by side; eager implementations are in ``backends/cpu/eager/buffers.py``.  ``copy`` is
the primitive ``jnp.copy`` binds in JAX.
"""
from __future__ import annotations

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax.shapes import _asarray, _aval, _instantiate, _nm
from pyjax._src.lax.utils import canonicalize_shape
from pyjax._src.runtime.array import Array

__all__ = ["copy_p", "empty", "stage", "stage_p", "optimization_barrier",
           "optimization_barrier_p", "dce_sink", "dce_sink_p"]

# --- copy -----------------------------------------------------------------------------------
copy_p = core.Primitive("copy")
copy_p.def_abstract_eval(lambda x: x)
ad.deflinear(copy_p, lambda ct: [copy_p.bind(ct)])
batching.defvectorized(copy_p)


# --- empty ----------------------------------------------------------------------------------
empty_p = core.Primitive("empty")


@empty_p.def_abstract_eval
def _empty_abstract(*, shape, dtype, out_sharding):
  return ShapedArray(shape, dtype, False)


# No operands: never batched by vmap; its result is the same for every example.
batching.primitive_batchers[empty_p] = (
    lambda args, dims, **params: (empty_p.bind(**params), _nm))


def empty(shape, dtype, *, out_sharding=None):
  """An array of ``shape`` and ``dtype`` whose values are unspecified (zeros on CPU, as
  XLA's CPU backend gives).  Differs from JAX: ``dtype`` is canonicalized (the jaxpr
  prints ``dtype=float32``, not the scalar type the user passed).  ``out_sharding`` lays the
  result out over its devices (the jaxpr's ``out_sharding`` stays None)."""
  if out_sharding is not None:
    from pyjax._src.out_sharding import sharded_call
    return sharded_call(out_sharding, "lax.empty", lambda: empty(shape, dtype))
  shape = canonicalize_shape(shape if isinstance(shape, (tuple, list)) else (shape,))
  d = dtypes.check_user_dtype(dtype, "lax.empty")
  return empty_p.bind(shape=shape, dtype=d, out_sharding=None)


# --- stage ----------------------------------------------------------------------------------
class _StagePrimitive(core.Primitive):
  """``stage`` never appears in a jaxpr (as in JAX, its bind "stages the value"): a tracer
  of the current transformation is returned as it is; a concrete value becomes an Array,
  which a trace sees as a literal or constant."""

  def bind(self, x):
    if isinstance(x, core.Tracer):
      return x
    return _asarray(x)


stage_p = _StagePrimitive("stage")
stage_p.def_abstract_eval(lambda x: x)
ad.deflinear(stage_p, lambda ct: [ct])
batching.defvectorized(stage_p)


def stage(x, /):
  """Lift ``x`` into the active trace: the identity on traced values; Python scalars and
  NumPy arrays become Arrays (weak types kept)."""
  return stage_p.bind(x)


# --- optimization_barrier ----------------------------------------------------------------
optimization_barrier_p = core.Primitive("optimization_barrier")
optimization_barrier_p.multiple_results = True
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))


def optimization_barrier(operand, /):
  """Identity on a pytree of arrays that the compiler may not move operations across (no
  CSE, no fusion through it).  Eagerly it returns its inputs."""
  leaves, tree = tree_util.tree_flatten(operand)
  leaves = [x if isinstance(x, (Array, core.Tracer)) else _asarray(x) for x in leaves]
  outs = optimization_barrier_p.bind(*leaves)
  return tree_util.tree_unflatten(tree, outs)


def _opt_barrier_jvp(primals, tangents):
  ts = [ad.instantiate_zeros(t) for t in tangents]
  return optimization_barrier_p.bind(*primals), optimization_barrier_p.bind(*ts)


def _opt_barrier_transpose(cts, *args):
  avals = [_aval(a) for a in args]
  outs = optimization_barrier_p.bind(*_instantiate(cts, avals))
  return [o if ad.is_undefined_primal(a) else None for o, a in zip(outs, args)]


ad.primitive_jvps[optimization_barrier_p] = _opt_barrier_jvp
ad.primitive_transposes[optimization_barrier_p] = _opt_barrier_transpose
batching.primitive_batchers[optimization_barrier_p] = (
    lambda args, dims: (optimization_barrier_p.bind(*args), list(dims)))


# --- dce_sink -------------------------------------------------------------------------------
no_dce_effect = core.Effect("NoDCE")
dce_sink_p = core.Primitive("dce_sink")
dce_sink_p.multiple_results = True
dce_sink_p.def_effectful_abstract_eval(lambda x, **_: ([], {no_dce_effect}))
ad.deflinear(dce_sink_p, lambda cts, **_: [None])
batching.primitive_batchers[dce_sink_p] = (
    lambda args, dims, **params: (dce_sink_p.bind(*args, **params), []))


def dce_sink(val, *, prevent_mlir_dce=False):
  """Mark every leaf of ``val`` as used, so dead-code elimination keeps the computation
  producing it.  Returns None."""
  def sink(x):
    if not isinstance(x, (Array, core.Tracer)):
      x = _asarray(x)
    dce_sink_p.bind(x, prevent_mlir_dce=bool(prevent_mlir_dce))
  tree_util.tree_map(sink, val)
