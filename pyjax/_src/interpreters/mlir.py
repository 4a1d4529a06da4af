"""Lowering registration (the part of JAX's ``jax.interpreters.mlir`` that pyjax can
honour).

pyjax's backends do not emit MLIR: a backend runs a primitive through the implementation
registered under its name or, for primitives defined outside pyjax, through the
primitive's Python ``impl`` -- eagerly, inside ``jit`` on the NumPy tier, and from natively
compiled programs (which call back into Python for such equations).  So:

* ``lower_fun(fun, multiple_results=True)`` returns a rule that *is* ``fun``: a function
  of the primitive's (array) inputs and params written with ``jax.numpy`` / ``lax``;
* ``register_lowering(prim, rule, platform=None)`` records the rule; when ``rule`` came
  from ``lower_fun`` and ``prim`` has no ``impl`` yet, the rule becomes its
  implementation (so a primitive defined only by its lowering runs everywhere).

Differences from JAX: a rule that emits MLIR operations (takes a ``LoweringRuleContext``)
is recorded but cannot run; a primitive with only such a rule fails when executed.  The
MLIR builder API (``ir``, ``ir_constant``, ``aval_to_ir_type``, ...) does not exist.
"""
from __future__ import annotations

_lowerings = {}                  # prim -> rule (platform independent)
_platform_specific_lowerings = {}  # platform -> {prim -> rule}


class LoweredFun:
  """A lowering rule given as a function of arrays (what ``lower_fun`` returns)."""
  __slots__ = ("fun", "multiple_results")

  def __init__(self, fun, multiple_results):
    self.fun = fun
    self.multiple_results = multiple_results

  def __call__(self, *args, **params):
    return self.fun(*args, **params)

  def __repr__(self):
    return f"lower_fun({getattr(self.fun, '__name__', self.fun)!r})"

  def as_impl(self, prim):
    """The rule as ``prim``'s implementation (its outputs adapted to ``prim``'s arity)."""
    fun, multi = self.fun, self.multiple_results

    def impl(*args, **params):
      out = fun(*args, **params)
      if prim.multiple_results and not multi:
        return [out]
      if multi and not prim.multiple_results:
        (out,) = out
        return out
      return list(out) if prim.multiple_results else out
    impl.__name__ = f"{prim.name}_lowered_impl"
    return impl


def lower_fun(fun, multiple_results=True):
  """A lowering rule computing the primitive with ``fun`` (``jax.numpy``/``lax`` code on
  the primitive's inputs, keyword params)."""
  return LoweredFun(fun, multiple_results)


def register_lowering(prim, rule, platform=None, **kwargs):
  """Record ``rule`` as ``prim``'s lowering (for ``platform``, or every platform).  A
  ``lower_fun`` rule becomes the implementation of a primitive that has none; on another
  platform than the CPU it is only recorded."""
  del kwargs
  platforms = (platform,) if isinstance(platform, str) or platform is None else tuple(platform)
  for p in platforms:
    if p is None:
      _lowerings[prim] = rule
    else:
      _platform_specific_lowerings.setdefault(p, {})[prim] = rule
  applies = platform is None or "cpu" in platforms
  if applies and isinstance(rule, LoweredFun) and prim.impl is None:
    prim.def_impl(rule.as_impl(prim))
  return rule
