"""Staging Python functions into jaxprs for ``jit``, ``make_jaxpr`` and ``eval_shape``.

* ``DebugInfo``: what a traced function is called and where it is defined, and a name for
  each flat argument (``x``, ``args[0]``, ``d['a']``), used by tracer errors
  (``StagingInterpreter.error_context``), by ``jax_explain_cache_misses`` and by error
  messages about arguments.
* ``trace_flat``: run a flat function on fresh tracers of a ``StagingInterpreter`` and
  return a ``ClosedJaxpr``.  Values the function closes over that are tracers of an outer
  transformation become leading inputs of the jaxpr (as JAX does), so every jaxpr this
  module produces is closed over concrete constants only.
* ``jit_p``: the higher-order primitive a nested ``jit`` call stages (params as JAX:
  ``jaxpr``, ``in_shardings``, ``out_shardings``, ``in_layouts``, ``out_layouts``,
  ``donated_invars``, ``ctx_mesh``, ``name``, ``keep_unused``, ``inline``,
  ``compiler_options_kvs``), printed like JAX's (``jit[name=f jaxpr={ ... }]``, with the
  inner jaxpr's variables named after the outer ones).  Its eager implementation is set
  by ``pyjax._src.api``.
"""
from __future__ import annotations

import inspect
import weakref

from pyjax._src import core, dtypes
from pyjax._src import profiler as _profiler
from pyjax._src import tree_util
from pyjax._src.runtime.array import ArrayImpl


# --- debug info -------------------------------------------------------------------------
class DebugInfo:
  """Where a staged function comes from.  ``arg_names`` has one name per flat argument
  (or is None when unknown); ``func_src_info`` is ``"f at file.py:3"`` (or ``"f"`` when
  the function has no Python source)."""
  __slots__ = ("traced_for", "func_src_info", "arg_names", "func_name")

  def __init__(self, traced_for, func_src_info, arg_names, func_name):
    self.traced_for = traced_for
    self.func_src_info = func_src_info
    self.arg_names = arg_names
    self.func_name = func_name

  def __repr__(self):
    return (f"DebugInfo(traced_for={self.traced_for!r}, func_src_info={self.func_src_info!r}, "
            f"arg_names={self.arg_names!r})")


def _unwrap(fun):
  seen = 0
  while seen < 100:
    seen += 1
    if hasattr(fun, "func") and hasattr(fun, "keywords") and hasattr(fun, "args"):  # partial
      fun = fun.func
    elif getattr(fun, "__wrapped__", None) is not None:
      fun = fun.__wrapped__
    elif inspect.ismethod(fun):
      fun = fun.__func__
    else:
      break
  return fun


def fun_name(fun):
  f = _unwrap(fun)
  name = getattr(f, "__name__", None)
  if name is None:
    name = type(f).__name__
  return name


def fun_source_info(fun):
  """``"name at file:line"`` (JAX's ``func_src_info``), or the bare name."""
  f = _unwrap(fun)
  name = fun_name(fun)
  code = getattr(f, "__code__", None)
  if code is None:
    return name
  return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def fun_definition_site(fun):
  """``file:line`` where ``fun`` is defined, or None."""
  code = getattr(_unwrap(fun), "__code__", None)
  return None if code is None else f"{code.co_filename}:{code.co_firstlineno}"


_signatures = weakref.WeakKeyDictionary()


def _signature(fun):
  try:
    return _signatures[fun]
  except (KeyError, TypeError):
    pass
  try:
    sig = inspect.signature(fun)
  except (ValueError, TypeError):
    sig = None
  try:
    _signatures[fun] = sig
  except TypeError:   # not weak-referenceable
    pass
  return sig


def arg_names_of(fun, args, kwargs, static_argnums=(), static_argnames=()):
  """Names of the flat leaves of ``(dynamic args, dynamic kwargs)`` as JAX reports them
  (``x``, ``args[0]``, ``kw['a']``, ``d['a'][0]``); None if the call does not bind."""
  sig = _signature(fun)
  static_argnums = set(static_argnums)
  static_argnames = set(static_argnames)
  pos_names = []
  var_pos = None
  var_kw = None
  named = set()
  if sig is not None:
    for p in sig.parameters.values():
      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
        pos_names.append(p.name)
      if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
        named.add(p.name)
      if p.kind == p.VAR_POSITIONAL:
        var_pos = p.name
      if p.kind == p.VAR_KEYWORD:
        var_kw = p.name
  else:
    var_pos, var_kw = "args", "kwargs"
  names = []
  for i, a in enumerate(args):
    if i in static_argnums:
      continue
    if i < len(pos_names):
      base = pos_names[i]
    elif var_pos is not None:
      base = f"{var_pos}[{i - len(pos_names)}]"
    else:
      return None
    names.extend(_leaf_names(base, a))
  for k in sorted(kwargs):
    if k in static_argnames:
      continue
    if k in named:
      base = k
    elif var_kw is not None:
      base = f"{var_kw}[{k!r}]"
    else:
      return None
    names.extend(_leaf_names(base, kwargs[k]))
  return names


def _leaf_names(base, tree):
  try:
    pairs, _ = tree_util.tree_flatten_with_path(tree)
  except Exception:  # noqa: BLE001  -- a bad custom node: names are best effort
    return [base]
  return [base + tree_util.keystr(path) for path, _ in pairs]


def make_debug_info(traced_for, fun, args, kwargs, static_argnums=(), static_argnames=()):
  return DebugInfo(traced_for, fun_source_info(fun),
                   arg_names_of(fun, args, kwargs, static_argnums, static_argnames),
                   fun_name(fun))


# --- abstract values of arguments -------------------------------------------------------
def is_valid_jax_value(x):
  t = type(x)
  if t is ArrayImpl or isinstance(x, core.Tracer):
    return True
  if t in dtypes.python_scalar_types:
    return True
  try:
    core.get_aval(x)
  except TypeError:
    return False
  return True


# --- tracing ----------------------------------------------------------------------------
def trace_flat(flat_fun, in_avals, debug_info=None):
  """Stage ``flat_fun`` (flat list of tracers -> flat list of values) on avals.

  Returns ``(closed_jaxpr, tracer_consts)``: values the function closed over that are
  tracers of enclosing transformations are the jaxpr's *leading* inputs and are returned
  in ``tracer_consts`` (the caller passes them first); concrete constants stay in the
  ClosedJaxpr."""
  prof = _profiler.session
  if prof is not None:
    t_prof = prof.now()
  try:
    closed = core.trace_to_jaxpr(flat_fun, in_avals, debug_info)
  finally:
    if prof is not None:
      d = debug_info
      prof.add(f"trace {d.func_name if d is not None else 'function'}", "trace", t_prof, None,
               {"for": d.traced_for if d is not None else None})
  jaxpr, consts = closed.jaxpr, closed.consts
  tracer_vars, tracer_consts, const_vars, const_vals = [], [], [], []
  for v, c in zip(jaxpr.constvars, consts):
    if isinstance(c, core.Tracer):
      tracer_vars.append(v)
      tracer_consts.append(c)
    else:
      const_vars.append(v)
      const_vals.append(c)
  if tracer_vars:
    jaxpr = core.Jaxpr(const_vars, tracer_vars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns,
                       jaxpr.effects, jaxpr.debug_info)
  return core.ClosedJaxpr(jaxpr, const_vals), tracer_consts


def check_outputs(leaves, treedef, debug_info):
  """JAX's TypeError for a traced function returning a non-JAX value."""
  for i, x in enumerate(leaves):
    if getattr(x, "_is_pyjax_ref", False):   # a mutable array reference (state/types.py)
      from pyjax._src.state import jit as state_jit
      raise state_jit.ref_output_error(x, debug_info)
    if not is_valid_jax_value(x):
      where = ""
      if not tree_util.treedef_is_leaf(treedef):
        paths = [p for p, _ in tree_util.tree_flatten_with_path(treedef.unflatten(leaves))[0]]
        if i < len(paths):
          where = f" at output component {tree_util.keystr(paths[i])}"
      src = debug_info.func_src_info if debug_info is not None else "fun"
      raise TypeError(f"function {src} traced for jit returned a value of type {type(x)}"
                      f"{where}, which is not a valid JAX type")


# --- the jit primitive ------------------------------------------------------------------
class UnspecifiedValue:
  """The default sharding of a jit input or output (printed ``UnspecifiedValue``)."""
  __slots__ = ()

  def __repr__(self):
    return "UnspecifiedValue"

  def __reduce__(self):
    return (_unspecified, ())


UNSPECIFIED = UnspecifiedValue()


def _unspecified():
  return UNSPECIFIED


class _EmptyMesh:
  """The mesh context of a jit call outside any mesh (JAX's empty ``Mesh``)."""
  __slots__ = ()
  empty = True
  axis_names = ()
  axis_sizes = ()
  shape = {}

  def __repr__(self):
    return "Mesh(axis_sizes=(), axis_names=())"


EMPTY_MESH = _EmptyMesh()

jit_p = core.Primitive("jit")
jit_p.multiple_results = True


@jit_p.def_effectful_abstract_eval
def _jit_abstract_eval(*avals, jaxpr, **params):
  del params
  return list(jaxpr.out_avals), core.jaxpr_effects(jaxpr)


def _jit_eqn_printer(eqn, ctx):
  p = eqn.params
  shown = {}
  for k, v in p.items():
    if k in ("inline", "name"):
      continue
    if k == "donated_invars" and not any(v):
      continue
    if k in ("in_shardings", "out_shardings") and all(s is UNSPECIFIED for s in v):
      continue
    if k in ("in_layouts", "out_layouts") and all(s is None for s in v):
      continue
    if k == "keep_unused" and not v:
      continue
    if k == "ctx_mesh" and getattr(v, "empty", False):
      continue
    if k == "compiler_options_kvs" and not v:
      continue
    shown[k] = v
  inner = p["jaxpr"].jaxpr
  if inner not in ctx.shared_jaxprs:
    ctx.suggest_same_var_names(inner.invars, eqn.invars)
    ctx.suggest_same_var_names(inner.outvars, eqn.outvars)
  return [("name", p["name"])] + [(k, shown[k]) for k in sorted(shown)]


jit_p.eqn_printer = _jit_eqn_printer


def jit_params(closed, name, donated_invars, keep_unused=False, inline=False, device=None):
  """The params of a ``jit`` equation for ``closed`` (a ClosedJaxpr)."""
  n_in, n_out = len(closed.jaxpr.invars), len(closed.jaxpr.outvars)
  if device is not None:
    from pyjax._src.runtime.array import SingleDeviceSharding
    s = SingleDeviceSharding(device)
    in_sh, out_sh = (s,) * n_in, (s,) * n_out
  else:
    in_sh, out_sh = (UNSPECIFIED,) * n_in, (UNSPECIFIED,) * n_out
  return dict(jaxpr=closed, in_shardings=in_sh, out_shardings=out_sh,
              in_layouts=(None,) * n_in, out_layouts=(None,) * n_out,
              donated_invars=tuple(donated_invars), ctx_mesh=EMPTY_MESH, name=name,
              keep_unused=bool(keep_unused), inline=bool(inline), compiler_options_kvs=())


def binds_jit(interp):
  """Whether ``interp`` records/handles ``jit_p`` itself; for others a nested jit call is
  inlined (its jaxpr evaluated on ``interp``).  An interpreter class that gains rules for
  ``jit_p`` sets ``handles_jit_p = True``."""
  return isinstance(interp, core.StagingInterpreter) or getattr(interp, "handles_jit_p", False)
