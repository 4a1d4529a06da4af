"""``jax.export``: staged programs saved and loaded as data.

``export(jit(f))(*args_or_ShapeDtypeStructs)`` traces ``f`` and returns an ``Exported``:
the program's jaxpr plus its calling convention (input/output pytree structures and
avals, platforms, effects).  ``Exported.serialize()`` writes pyjax's own versioned binary
format of the jaxpr (``serialization.py``); ``deserialize(blob)`` reads it back in any
pyjax process of a compatible version, and ``Exported.call(*args)`` runs it -- eagerly,
inside ``jit`` (as a nested ``jit`` call) and under ``vmap``/``grad``.

Differs from JAX: the serialized form is a jaxpr, not StableHLO (so it is read by pyjax
only, and ``mlir_module()`` does not exist; ``Exported.jaxpr`` holds the program);
``calling_convention_version`` is pyjax's format version (``minimum_/
maximum_supported_calling_convention_version`` are 1); no shape polymorphism
(``symbolic_shape``/``symbolic_args_specs`` are not provided); ``call`` differentiates
the exported program itself and ``vjp()`` is always available (JAX needs
``serialize(vjp_order=...)``; pyjax accepts and ignores ``vjp_order``), except that
custom JVP/VJP rules inside it are not kept: as in JAX's export, only their primal
computation is serialized.  Programs containing Python
callbacks cannot be serialized (``ValueError``); they can still be exported and called in
the same process.
"""
from __future__ import annotations

import re

from pyjax._src import core
from pyjax._src import tree_util
from pyjax._src.export import serialization as _ser

__all__ = ["DisabledSafetyCheck", "Exported", "export", "deserialize",
           "register_pytree_node_serialization", "register_namedtuple_serialization",
           "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version", "default_export_platform"]

minimum_supported_calling_convention_version = _ser.FORMAT_VERSION
maximum_supported_calling_convention_version = _ser.FORMAT_VERSION

_KNOWN_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


class DisabledSafetyCheck:
  """A safety check to skip: ``DisabledSafetyCheck.platform()`` lets ``call`` run on a
  platform the function was not exported for; ``custom_call(target)`` is accepted for
  compatibility (pyjax's format has no notion of unstable custom calls)."""

  def __init__(self, _impl):
    self._impl = _impl

  @classmethod
  def platform(cls):
    """Allow calling on a platform other than the exported ones."""
    return DisabledSafetyCheck("platform")

  @classmethod
  def custom_call(cls, target_name):
    """Allow the custom call ``target_name`` (no effect in pyjax)."""
    return DisabledSafetyCheck(f"custom_call:{target_name}")

  def is_custom_call(self):
    """The custom call target this check allows, or None."""
    m = re.match(r"custom_call:(.+)$", self._impl)
    return m.group(1) if m else None

  def __str__(self):
    return self._impl

  __repr__ = __str__

  def __eq__(self, other):
    return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

  def __hash__(self):
    return hash(self._impl)


def default_export_platform():
  """The platform ``export`` targets by default: the default backend's ("cpu")."""
  from pyjax._src.runtime import devices
  return devices.default_device().platform


class Exported:
  """An exported program (see the module docstring).  Attributes as JAX's:
  ``fun_name``, ``in_tree``, ``in_avals``, ``out_tree``, ``out_avals``, ``platforms``,
  ``ordered_effects``, ``unordered_effects``, ``disabled_safety_checks``,
  ``calling_convention_version``, ``nr_devices``, ``module_kept_var_idx``,
  ``uses_global_constants``, ``in_shardings_hlo``/``out_shardings_hlo`` (all None);
  plus ``jaxpr``, the ClosedJaxpr that runs."""

  def __init__(self, fun_name, in_tree, in_avals, out_tree, out_avals, platforms, jaxpr,
               disabled_safety_checks=(), calling_convention_version=_ser.FORMAT_VERSION):
    self.fun_name = fun_name
    self.in_tree = in_tree
    self.in_avals = tuple(in_avals)
    self.out_tree = out_tree
    self.out_avals = tuple(out_avals)
    self.platforms = tuple(platforms)
    self.jaxpr = jaxpr
    effs = sorted(jaxpr.jaxpr.effects, key=lambda e: e.name)
    self.ordered_effects = tuple(e for e in effs if e.ordered)
    self.unordered_effects = tuple(e for e in effs if not e.ordered)
    self.disabled_safety_checks = tuple(disabled_safety_checks)
    self.calling_convention_version = calling_convention_version
    self.nr_devices = 1
    self.module_kept_var_idx = tuple(range(len(self.in_avals)))
    self.uses_global_constants = False
    self.in_shardings_hlo = (None,) * len(self.in_avals)
    self.out_shardings_hlo = (None,) * len(self.out_avals)
    self._runner = None

  def __str__(self):
    return f"Exported(fun_name={self.fun_name}, platforms={self.platforms})"

  __repr__ = __str__

  def serialize(self, vjp_order=0):
    """pyjax's binary serialization (a ``bytearray``; see ``serialization.py``).
    ``vjp_order`` is accepted and ignored: the deserialized program is differentiable
    itself."""
    del vjp_order
    return _ser.to_bytes({
        "fun_name": self.fun_name, "in_tree": self.in_tree, "out_tree": self.out_tree,
        "in_avals": self.in_avals, "out_avals": self.out_avals,
        "platforms": self.platforms, "jaxpr": self.jaxpr,
        "disabled_safety_checks": tuple(str(c) for c in self.disabled_safety_checks),
        "calling_convention_version": self.calling_convention_version})

  def has_vjp(self):
    """True: pyjax differentiates the exported jaxpr itself."""
    return True

  def vjp(self):
    """The ``Exported`` VJP of this program: it takes the flat primal arguments followed
    by one cotangent per flat output (``float0`` for integer outputs) and returns the
    flat cotangents of the arguments, as JAX's ``Exported.vjp()``."""
    from pyjax._src import api, api_ad
    closed = self.jaxpr
    n = len(self.in_avals)

    def primal(*xs):
      return core.eval_jaxpr(closed.jaxpr, closed.consts, *xs)

    def fun_vjp(*args_and_cts):
      _, pullback = api_ad.vjp(primal, *args_and_cts[:n])
      return pullback(list(args_and_cts[n:]))
    fun_vjp.__name__ = fun_vjp.__qualname__ = "fun_vjp_jax"   # JAX's name for it
    specs = [api.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
             for a in self.in_avals]
    specs += [api.ShapeDtypeStruct(t.shape, t.dtype)
              for t in (a.to_tangent_aval() for a in self.out_avals)]
    return export(api.jit(fun_vjp), platforms=self.platforms,
                  disabled_checks=self.disabled_safety_checks)(*specs)

  def in_shardings_jax(self, mesh):
    """The input shardings (None each: pyjax exports carry none)."""
    return self.in_shardings_hlo

  def out_shardings_jax(self, mesh):
    """The output shardings (None each: pyjax exports carry none)."""
    return self.out_shardings_hlo

  # -- calling ---------------------------------------------------------------------------
  def call(self, *args, **kwargs):
    """Run the exported program on ``args``/``kwargs`` (same pytree structure, shapes and
    dtypes as at export); returns outputs with the exported output structure.  Works
    eagerly and under ``jit``, ``vmap`` and ``grad``."""
    flat, tree = tree_util.tree_flatten((args, kwargs))
    if tree != self.in_tree:
      diffs = "\n".join(
          f"   - {_path_str(path)} is a {t1} in the invocation and a {t2} when exported, "
          f"so {why}.\n"
          for path, t1, t2, why in tree_util.equality_errors(
              tree.unflatten([0] * tree.num_leaves),
              self.in_tree.unflatten([0] * self.in_tree.num_leaves)))
      raise ValueError("The invocation args and kwargs must have the same pytree structure "
                       f"as when the function '{self.fun_name}' was exported, but they have "
                       "the following structural differences:\n" + diffs)
    self._check_platform()
    for i, (exp, x) in enumerate(zip(self.in_avals, flat)):
      self._check_arg(i, exp, core.get_aval(x))
    outs = self._run(flat)
    return self.out_tree.unflatten(list(outs))

  def _check_platform(self):
    if DisabledSafetyCheck.platform() in self.disabled_safety_checks:
      return
    here = default_export_platform()
    if here not in self.platforms:
      raise ValueError(f"Function '{self.fun_name}' was exported for platforms "
                       f"'{self.platforms}' but it is used on '{(here,)}'.")

  def _check_arg(self, i, exp, got):
    where = _arg_descr(self.in_tree, i)
    if len(exp.shape) != len(got.shape):
      raise ValueError(f"Rank mismatch for {where}: expected {tuple(exp.shape)} and called "
                       f"with {tuple(got.shape)}")
    if exp.dtype != got.dtype:
      raise ValueError(f"Dtype mismatch for {where}: expected {exp.dtype} and called with "
                       f"{got.dtype}")
    for d, (a, b) in enumerate(zip(exp.shape, got.shape)):
      if a != b:
        raise ValueError(f"Shape mismatch for {where}.shape[{d}] (expected same constant): "
                         f"expected {tuple(exp.shape)} and called with {tuple(got.shape)}")

  def _run(self, flat):
    run = self._runner
    if run is None:
      from pyjax._src import api
      closed = self.jaxpr

      def exported(*xs):
        return core.eval_jaxpr(closed.jaxpr, closed.consts, *xs)
      exported.__name__ = exported.__qualname__ = self.fun_name
      run = self._runner = api.jit(exported)
    return run(*flat)


def _path_str(path):
  if not path:
    return "args"
  head = getattr(path[0], "idx", None)
  root = "args" if head == 0 else "kwargs"
  return root + tree_util.keystr(tuple(path[1:]))


def _arg_descr(in_tree, i):
  leaves = tree_util.tree_flatten_with_path(in_tree.unflatten([0] * in_tree.num_leaves))[0]
  return _path_str(leaves[i][0])


# --- export / deserialize -------------------------------------------------------------------
def export(fun_jit, *, platforms=None, disabled_checks=()):
  """``export(jit(f), platforms=None)(*args, **kwargs)`` -> ``Exported``.  Arguments may
  be Arrays, NumPy values or ``ShapeDtypeStruct``s.  ``platforms``: the platforms the
  program is meant for (default: ``default_export_platform()``); calling it elsewhere
  raises unless ``DisabledSafetyCheck.platform()`` is among ``disabled_checks``."""
  from pyjax._src import api
  if not isinstance(fun_jit, api.JitWrapped):
    raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")
  if platforms is not None:
    plats = tuple(str(p).lower() for p in platforms)
    for p in plats:
      if p not in _KNOWN_PLATFORMS:
        raise ValueError(f"Unknown platform {p!r} for export: expected one of "
                         f"{_KNOWN_PLATFORMS}")
  else:
    plats = None
  checks = tuple(disabled_checks)
  for c in checks:
    if not isinstance(c, DisabledSafetyCheck):
      raise ValueError(f"disabled_checks must be DisabledSafetyCheck objects, got {c!r}")

  def do_export(*args_specs, **kwargs_specs):
    traced = fun_jit.trace(*args_specs, **kwargs_specs)
    entry = traced._entry
    if entry.n_tracer_consts:
      raise ValueError(f"Cannot export '{traced.fun_name}': it closes over values traced by "
                       "an enclosing transformation")
    lowered = traced.lower()
    closed = traced.jaxpr
    return Exported(traced.fun_name, lowered.in_tree, closed.in_avals, traced.out_tree,
                    closed.out_avals, plats or (default_export_platform(),), closed, checks)
  return do_export


def deserialize(blob):
  """The ``Exported`` saved by ``Exported.serialize()``.  A blob that is not pyjax's
  format, of an unsupported version, truncated or corrupted raises ``ValueError``."""
  d = _ser.from_bytes(blob)
  if not isinstance(d, dict) or "jaxpr" not in d:
    raise ValueError("Cannot deserialize pyjax Exported: malformed payload")
  closed = d["jaxpr"]
  if not isinstance(closed, core.ClosedJaxpr):
    raise ValueError("Cannot deserialize pyjax Exported: malformed payload")
  in_avals, out_avals = tuple(d["in_avals"]), tuple(d["out_avals"])
  if (len(in_avals) != len(closed.in_avals) or len(out_avals) != len(closed.out_avals)
      or not all(map(_ser._same_aval, in_avals, closed.in_avals))
      or not all(map(_ser._same_aval, out_avals, closed.out_avals))):
    raise ValueError("Cannot deserialize pyjax Exported: its signature does not match its "
                     "program")
  checks = tuple(DisabledSafetyCheck(c) for c in d.get("disabled_safety_checks", ()))
  return Exported(d["fun_name"], d["in_tree"], in_avals, d["out_tree"], out_avals,
                  d["platforms"], closed, checks, d.get("calling_convention_version",
                                                        _ser.FORMAT_VERSION))


# --- custom pytree nodes ----------------------------------------------------------------
def register_pytree_node_serialization(nodetype, *, serialized_name, serialize_auxdata,
                                       deserialize_auxdata, from_children=None):
  """Let pytrees with nodes of ``nodetype`` (already registered as pytree nodes) be
  serialized: ``serialize_auxdata(aux) -> bytes`` and ``deserialize_auxdata(bytes) ->
  aux``; ``serialized_name`` identifies the type in the blob.  ``from_children`` is
  accepted for compatibility (pyjax rebuilds nodes through the pytree registry).
  Returns ``nodetype``."""
  del from_children
  if nodetype in _ser._custom_nodes:
    raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. "
                     "Previous registration was with serialized_name "
                     f"`{_ser._custom_nodes[nodetype][0]}`.")
  if serialized_name in _ser._custom_by_name:
    raise ValueError(f"Duplicate serialization registration for serialized_name "
                     f"`{serialized_name}`. Previous registration was for type "
                     f"`{_ser._custom_by_name[serialized_name][0]}`.")
  _ser._custom_nodes[nodetype] = (serialized_name, serialize_auxdata, deserialize_auxdata)
  _ser._custom_by_name[serialized_name] = (nodetype, deserialize_auxdata)
  return nodetype


def register_namedtuple_serialization(nodetype, *, serialized_name):
  """Let pytrees containing the namedtuple class ``nodetype`` be serialized (its fields
  are children; it has no auxiliary data).  Returns ``nodetype``."""
  if not (isinstance(nodetype, type) and issubclass(nodetype, tuple)
          and hasattr(nodetype, "_fields")):
    raise ValueError("Use `jax.export.register_pytree_node_serialization` for "
                     "types other than tuples and named tuples.")
  return register_pytree_node_serialization(
      nodetype, serialized_name=serialized_name, serialize_auxdata=lambda aux: b"",
      deserialize_auxdata=lambda b: None)
