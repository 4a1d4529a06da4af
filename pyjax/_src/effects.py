"""JAX's effect-type sets (``jax._src.effects``) over pyjax's ``core.Effect``.

An ``EffectTypeSet`` is a registry of effect *classes*: libraries declare that their
effects may appear in control flow (``control_flow_allowed_effects``), custom derivative
rules (``custom_derivatives_allowed_effects``) or remat (``remat_allowed_effects``) by
adding the class, and the transformations ask ``contains`` / ``filter_not_in``.
"""
from __future__ import annotations

from pyjax._src.core import Effect, no_effects  # noqa: F401  (re-exported)

Effects = frozenset


class EffectTypeSet:
  """A set of effect types; an effect is contained when it is an instance of one."""

  def __init__(self):
    self._effect_types = set()

  def __repr__(self):
    return f"EffectTypeSet({self._effect_types})"

  def add_type(self, effect_type):
    """Register the class ``effect_type`` (every instance of it is then contained)."""
    if not isinstance(effect_type, type):
      raise TypeError(f"add_type expects an effect class, got {effect_type!r}")
    self._effect_types.add(effect_type)

  def contains(self, eff):
    """True when ``eff`` is an instance of a registered effect type."""
    return any(isinstance(eff, t) for t in self._effect_types)

  def filter_in(self, effects):
    """The effects in ``effects`` this set contains (a list, in order)."""
    return [e for e in effects if self.contains(e)]

  def filter_not_in(self, effects):
    """The effects in ``effects`` this set does not contain (a list, in order)."""
    return [e for e in effects if not self.contains(e)]


ordered_effects = EffectTypeSet()
shardable_ordered_effects = EffectTypeSet()
lowerable_effects = EffectTypeSet()
control_flow_allowed_effects = EffectTypeSet()
custom_derivatives_allowed_effects = EffectTypeSet()
remat_allowed_effects = EffectTypeSet()
partial_eval_kept_effects = EffectTypeSet()
