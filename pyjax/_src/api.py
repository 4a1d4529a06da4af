"""Staging transformations: ``jit``, ``make_jaxpr``, ``eval_shape``, ``ShapeDtypeStruct``,
``disable_jit`` and ``ensure_compile_time_eval`` (the ahead-of-time stages,
``jit(f).trace(...)``, ``.lower(...)``, ``.compile()``, are in ``api_aot.py``).

How a jitted call runs
----------------------
* Arguments are split into static ones (hashed; part of the cache key) and dynamic ones,
  flattened into leaves (static values sit in the structure as ``tree_util.Static``
  nodes, as in JAX), and abstracted to avals (shape, dtype, weak type).
* The *trace cache* maps (input structure, avals, ``config.trace_state()``, jit options)
  to a traced ``ClosedJaxpr``.  It is keyed weakly by the function, so every ``jit(f)``
  wrapper of one ``f`` shares it and a dead function is not kept alive.  A miss traces
  the function (Python side effects run only then).
* Called eagerly, the jaxpr is compiled once per device by the backend
  (``backends.cpu.executable.compile_jaxpr``) and run on the argument buffers; results
  are committed to the device of committed inputs (or ``device=``), else uncommitted on
  the default device.  A per-wrapper *fast path* handles the common call (positional
  Arrays, no static arguments): one dict look-up keyed by the avals, committed devices
  and trace state, then the executable.
* Called under a transformation, a ``jit`` equation (``staging.jit_p``) is recorded
  (or, for interpreters without rules for it, the jaxpr is inlined).

Differences from JAX are listed in each public function's docstring.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import operator
import threading
import time
import types
import warnings
import weakref

import numpy as np

from pyjax._src import core, dtypes, errors
from pyjax._src import monitoring as _monitoring
from pyjax._src import api_util as _api_util
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray, scalar_aval
from pyjax._src.config import config
from pyjax._src import config as _config
from pyjax._src import environment as _environment
from pyjax._src import jit_sharding as _jit_sharding
from pyjax._src.state import jit as _state_jit
from pyjax._src.state.types import Ref as _Ref
from pyjax._src.interpreters import batching, staging
from pyjax._src.interpreters.staging import jit_p
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime import dispatch
from pyjax._src.runtime.array import ArrayImpl, SingleDeviceSharding
from pyjax._src.runtime.stream import PendingBuffer as _PendingBuffer

__all__ = ["jit", "make_jaxpr", "eval_shape", "ShapeDtypeStruct", "disable_jit",
           "ensure_compile_time_eval", "Traced", "Lowered", "Compiled", "named_call",
           "named_scope", "current_name_stack", "log_compiles", "explain_cache_misses"]

_dispatch_logger = logging.getLogger("pyjax._src.dispatch")
_pxla_logger = logging.getLogger("pyjax._src.interpreters.pxla")
_explain_logger = logging.getLogger("pyjax._src.interpreters.partial_eval")

_Static = tree_util.Static
_eval_interp = core.eval_interpreter
_core_state = core._state
_flags = config._flags
_disable_jit_flag = _flags["jax_disable_jit"]
_log_compiles_flag = _flags["jax_log_compiles"]
_explain_flag = _flags["jax_explain_cache_misses"]
_trace_state_names = tuple(config._trace_state_names)
_trace_state_flags = tuple(_flags[n] for n in _trace_state_names)


def _trace_state():
  return tuple([f.value for f in _trace_state_flags])


def _jit_disabled():
  return _disable_jit_flag.value


# --- ShapeDtypeStruct -------------------------------------------------------------------
class ShapeDtypeStruct:
  """A shape, dtype, weak type and optional sharding: an abstract argument for
  ``eval_shape``, ``make_jaxpr``, ``jit(f).trace`` / ``.lower``, and what ``eval_shape``
  returns.  Differs from JAX: ``manual_axis_type``, ``is_ref`` and ``format`` are
  accepted and ignored."""
  __slots__ = ("shape", "dtype", "sharding", "weak_type", "__weakref__")

  def __init__(self, shape, dtype, *, sharding=None, weak_type=False, manual_axis_type=None,
               is_ref=False):
    del manual_axis_type, is_ref
    self.shape = tuple(operator.index(d) for d in shape)
    if dtype is None:
      raise ValueError("ShapeDtypeStruct: dtype must be specified.")
    keep = isinstance(dtype, np.dtype) or getattr(dtype, "_pyjax_extended", False)
    self.dtype = dtype if keep else np.dtype(dtype)   # typed PRNG key dtypes kept as they are
    if sharding is not None and isinstance(sharding, _devices.Device):
      sharding = SingleDeviceSharding(sharding)
    self.sharding = sharding
    self.weak_type = bool(weak_type)

  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
  ndim = property(lambda self: len(self.shape))

  @property
  def format(self):
    return None

  def __len__(self):
    try:
      return self.shape[0]
    except IndexError as e:
      raise TypeError("len() of unsized object") from e

  def __repr__(self):
    sh = f", sharding={self.sharding}" if self.sharding is not None else ""
    wt = ", weak_type=True" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sh}{wt})"

  __str__ = __repr__

  def __eq__(self, other):
    if not isinstance(other, ShapeDtypeStruct):
      return False
    return ((self.shape, self.dtype, self.sharding, self.weak_type)
            == (other.shape, other.dtype, other.sharding, other.weak_type))

  def __hash__(self):
    return hash((self.shape, self.dtype, self.sharding, self.weak_type))

  def update(self, **kwargs):
    """A copy with ``shape``, ``dtype``, ``sharding`` or ``weak_type`` replaced."""
    kw = dict(shape=self.shape, dtype=self.dtype, sharding=self.sharding,
              weak_type=self.weak_type)
    kw.update(kwargs)
    return ShapeDtypeStruct(kw.pop("shape"), kw.pop("dtype"), **kw)

  @property
  def aval(self):
    return ShapedArray(self.shape, dtypes.canonicalize_dtype(self.dtype), self.weak_type)


def _sds_of(aval):
  return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


# --- abstracting arguments --------------------------------------------------------------
def _abstractify(x, allow_abstract):
  """The aval of an argument leaf, or None when it is not a valid JAX value."""
  t = type(x)
  if t is ArrayImpl:
    return x.aval
  if t in dtypes.python_scalar_types:
    return scalar_aval(x)
  if isinstance(x, core.Tracer):
    return x.aval
  if t is _Ref:   # a mutable array reference: an input (and maybe output) of the program
    return x.aval
  if isinstance(x, ShapeDtypeStruct):
    return x.aval if allow_abstract else None
  try:
    return core.get_aval(x)
  except (TypeError, OverflowError):
    pass
  if allow_abstract and hasattr(x, "shape") and hasattr(x, "dtype"):
    try:
      return ShapedArray(tuple(x.shape), dtypes.canonicalize_dtype(x.dtype),
                         bool(getattr(x, "weak_type", False)))
    except TypeError:
      return None
  return None


def _bad_argument(fun, leaf, path):
  return TypeError(
      f"Error interpreting argument to {fun!r} as an abstract array. The problematic value "
      f"is of type {type(leaf)} and was passed to the function at path {path}.\n"
      "This typically means that a jit-wrapped function was called with a non-array "
      "argument, and this argument was not marked as static using the static_argnums or "
      "static_argnames parameters of jax.jit.")


def _abstract_leaves(fun, leaves, debug_names, allow_abstract):
  avals = []
  for i, x in enumerate(leaves):
    a = _abstractify(x, allow_abstract)
    hi_arg = getattr(type(a), "_jit_arg_type", None)   # a mutable hijax value: its lo values
    if hi_arg is not None:
      a = hi_arg(a, x) or a
    if a is None:
      names = debug_names()
      path = names[i] if names is not None and i < len(names) else f"args[{i}]"
      if isinstance(x, ShapeDtypeStruct):
        raise TypeError(f"Argument '{path}' of shape {x.aval.str_short(short_dtypes=False)} of "
                        f"type {type(x)} is not a valid JAX type.")
      raise _bad_argument(fun, x, path)
    avals.append(a)
  return avals


# --- static / donated argument specifications --------------------------------------------
def _index_tuple(x):
  if x is None:
    return ()
  if isinstance(x, int):
    return (operator.index(x),)
  return tuple(operator.index(i) for i in x)


def _str_tuple(x):
  if x is None:
    return ()
  if isinstance(x, str):
    return (x,)
  return tuple(x)


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _infer(sig, nums, names):
  if nums is None and names is None:
    return (), ()
  if nums is not None and names is not None:
    return _index_tuple(nums), _str_tuple(names)
  params = list(sig.parameters.items())
  if nums is None:
    names = _str_tuple(names)
    nums = tuple(i for i, (k, p) in enumerate(params)
                 if p.kind == p.POSITIONAL_OR_KEYWORD and k in names)
  else:
    nums = _index_tuple(nums)
    names = tuple(k for i, (k, p) in enumerate(params)
                  if p.kind == p.POSITIONAL_OR_KEYWORD and i in nums)
  return nums, names


def _validate_nums(sig, nums, what):
  n = 0
  for p in sig.parameters.values():
    if p.kind in _POSITIONAL:
      n += 1
    elif p.kind == p.VAR_POSITIONAL:
      return
  if nums and (-min(nums) > n or max(nums) >= n):
    raise ValueError(f"Jitted function has {what}={nums}, but only accepts {n} positional "
                     "arguments.")


def _validate_names(sig, names, what):
  valid, invalid, var_kw = set(), set(), False
  for k, p in sig.parameters.items():
    if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
      valid.add(k)
    elif p.kind == p.VAR_KEYWORD:
      var_kw = True
    else:
      invalid.add(k)
  bad = invalid & set(names)
  if bad:
    raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. These are "
                     "positional-only")
  if var_kw:
    return
  bad = set(names) - valid
  if bad:
    raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. Function does "
                     "not take these args.")


def _resolve_argnums(fun, static_argnums, static_argnames, donate_argnums, donate_argnames):
  sig = staging._signature(fun)
  if sig is None:
    static_argnums = _index_tuple(static_argnums)
    static_argnames = _str_tuple(static_argnames)
    donate_argnums = _index_tuple(donate_argnums)
    if donate_argnames is not None:
      raise ValueError(f"Getting the signature of function {fun} failed. Pass donate_argnums "
                       "instead of donate_argnames.")
    donate_argnames = ()
  else:
    static_argnums, static_argnames = _infer(sig, static_argnums, static_argnames)
    donate_argnums, donate_argnames = _infer(sig, donate_argnums, donate_argnames)
    _validate_nums(sig, static_argnums, "static_argnums")
    _validate_names(sig, static_argnames, "static_argnames")
    _validate_nums(sig, donate_argnums, "donate_argnums")
    _validate_names(sig, donate_argnames, "donate_argnames")
  both = set(static_argnames) & set(donate_argnames)
  if both:
    raise ValueError("static_argnames and donate_argnames cannot intersect. Argument names "
                     f"{both} appear in both static_argnames and donate_argnames")
  snums = sorted(set(static_argnums))
  if set(snums) & set(donate_argnums):
    raise ValueError(f"`static_argnums` {snums} and `donate_argnums` "
                     f"{sorted(set(donate_argnums))} cannot intersect.")
  return static_argnums, static_argnames, donate_argnums, donate_argnames


def _check_static(x):
  try:
    hash(x)
  except TypeError as e:
    raise ValueError(
        "Non-hashable static arguments are not supported. An error occurred while trying to "
        f"hash an object of type {type(x)}, {x}. The error was:\n{type(e).__name__}: {e}\n"
    ) from None
  return _Static(x)


# --- the trace cache ---------------------------------------------------------------------
class _TraceEntry:
  """One traced specialization of a function."""
  __slots__ = ("closed", "out_tree", "out_avals", "donated", "debug", "name", "params",
               "executables", "n_tracer_consts", "refs", "__weakref__")

  def __init__(self, closed, out_tree, donated, debug, name, params, n_tracer_consts,
               refs=None):
    self.refs = refs   # state.jit.RefInfo when the program reads/writes refs
    self.closed = closed
    self.out_tree = out_tree
    self.out_avals = tuple(closed.out_avals)
    if refs is not None:   # (the written refs' values are extra outputs: not the function's)
      self.out_avals = self.out_avals[:refs.n_out]
    self.donated = donated
    self.debug = debug
    self.name = name
    self.params = params
    self.executables = {}
    self.n_tracer_consts = n_tracer_consts


_fun_caches = weakref.WeakKeyDictionary()   # fun -> {key: _TraceEntry}
_fun_seen_keys = weakref.WeakKeyDictionary()  # fun -> [previous keys] (explanations)
_MAX_FAST = 4096
_MAX_SEEN = 64


def _fun_cache(wrapped):
  try:
    c = _fun_caches.get(wrapped._fun)
    if c is None:
      c = _fun_caches[wrapped._fun] = {}
    return c
  except TypeError:   # not weak-referenceable or not hashable: cache on the wrapper
    return wrapped._own_cache


def _compile_entry(entry, device):
  exe = entry.executables.get(device)
  if exe is None:
    exe = _compile(entry.executables, entry.closed, device, entry.name, _donation_pairs(entry))
    _warn_unusable_donations(entry)
  return exe


def _compile(executables, closed, device, name, donate=()):
  """Compile ``closed`` for ``device`` by the device's backend (``compiler``), logged
  and timed as JAX does, and remember it in ``executables[device]``.  Every jitted
  execution (a ``jit`` call, an eager ``jit`` equation) compiles here."""
  from pyjax._src.compiler import compile_for_device
  label = f"jit({name})"
  level = logging.WARNING if _log_compiles_flag.value else logging.DEBUG
  if _pxla_logger.isEnabledFor(level):
    avals = closed.in_avals
    shapes = "(" + ", ".join(map(repr, avals)) + ("," if len(avals) == 1 else "") + ")"
    mapping = "(" + ", ".join("UnspecifiedValue" for _ in avals) + ("," if len(avals) == 1 else "") + ")"
    _pxla_logger.log(level, "Compiling %s with global shapes and types %s. Argument mapping: %s.",
                     label, shapes, mapping)
  t0 = time.perf_counter()
  with _monitoring.record_elapsed(_monitoring.BACKEND_COMPILE_EVENT, label):
    exe = compile_for_device(closed, device, name, donate)
  if _dispatch_logger.isEnabledFor(level):
    _dispatch_logger.log(level, "Finished compilation of %s in %.9f sec", label,
                         time.perf_counter() - t0)
  executables[device] = exe
  return exe


def _committed_device(args, conflict, *info):
  """(device, True) for the device the committed Arrays among ``args`` are on, (None,
  False) when none is committed; inputs committed to different devices raise
  ``conflict(*info, args)`` (JAX's "Received incompatible devices for jitted
  computation")."""
  found = None
  for x in args:
    if type(x) is ArrayImpl and x._committed:
      if found is None:
        found = x._device
      elif x._device is not found:
        raise conflict(*info, args)
  return (found, True) if found is not None else (None, False)


def _jit_eqn_conflict(args):
  """The incompatible-devices error of an eager ``jit`` equation."""
  return dispatch._device_error(
      jit_p, args, [x._device if type(x) is ArrayImpl and x._committed else None for x in args])


def _donation_plan(entry):
  """Which flat inputs can be donated: each to a distinct output of its shape/dtype."""
  outs = [(a.shape, a.dtype) for a in entry.out_avals]
  taken = [False] * len(outs)
  usable, unusable = [], []
  in_avals = entry.closed.in_avals[entry.n_tracer_consts:]
  for i, (d, a) in enumerate(zip(entry.donated, in_avals)):
    if not d:
      continue
    for j, o in enumerate(outs):
      if not taken[j] and o == (a.shape, a.dtype):
        taken[j] = True
        usable.append(i)
        break
    else:
      unusable.append(a)
  return usable, unusable


def _donation_pairs(entry):
  """(flat input, output) pairs: each donated input and the output (of its shape and dtype)
  whose buffer it may become (the backend decides per call, see ``call_donating``)."""
  if entry.n_tracer_consts:   # (only eager calls donate: they close over no tracers)
    return ()
  outs = [(a.shape, a.dtype) for a in entry.out_avals]
  taken = [False] * len(outs)
  pairs = []
  for i, (d, a) in enumerate(zip(entry.donated, entry.closed.in_avals)):
    for j, o in enumerate(outs):
      if d and not taken[j] and o == (a.shape, a.dtype):
        taken[j] = True
        pairs.append((i, j))
        break
  return tuple(pairs)


def _warn_unusable_donations(entry):
  if not any(entry.donated):
    return
  _, unusable = _donation_plan(entry)
  if unusable:
    warnings.warn("Some donated buffers were not usable: "
                  + ", ".join(a.str_short(short_dtypes=False) for a in unusable)
                  + ".\nSee an explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation.",
                  UserWarning, stacklevel=4)


# --- explaining cache misses -------------------------------------------------------------
def _call_site():
  src = core.user_frame()
  return core.summarize_source(src) if src is not None else "unknown"


_miss_callsites = set()   # call sites that already explained a never-seen function


def _explain_miss(wrapped, key, seen, debug):
  """Log JAX's explanation of a tracing cache miss (``jax_explain_cache_misses``): a
  function never seen (and a hint when another function missed at the same call site:
  a function re-created on every call), or the difference to the closest previous key
  (tracing context, then input pytree, then argument types)."""
  fun = wrapped._fun
  where = staging.fun_definition_site(fun)
  src = f" defined at {where}" if where else ""
  name = staging.fun_name(fun)
  callsite = _call_site()
  lines = [f"TRACING CACHE MISS at {callsite}:"]
  if not seen:
    lines.append(f"  never seen function:\n    {name} id={id(fun)}{src}")
    if callsite in _miss_callsites:
      lines.append("  but seen another function defined on the same line; maybe the function "
                   "is\n  being re-defined repeatedly, preventing caching?")
    else:
      _miss_callsites.add(callsite)
    _explain_logger.warning("\n".join(lines))
    return
  lines.append(f"  for {name}{src}")
  lines.append("  all previously seen cache keys differ. For the closest previous key:")
  lines.append("  " + min(_key_diff(key, k, debug) for k in seen)[-1])
  _explain_logger.warning("\n".join(lines))


def _key_diff(new, old, debug):
  """(severity, number of differences, explanation) of two trace-cache keys."""
  opts, in_tree, avals, ts, axes = new
  o_opts, o_tree, o_avals, o_ts, o_axes = old
  if ts != o_ts or axes != o_axes:
    diffs = []
    for n, a, b in zip(_trace_state_names, ts, o_ts):
      if a == b:
        continue
      if n == "pyjax_trace_context":   # the debugging flags' combined value: name each
        diffs += [f"  * {cn} differs: now {ca} and before {cb}"
                  for cn, ca, cb in zip(_config._context_names, a, b) if ca != cb]
      else:
        diffs.append(f"  * {n} differs: now {a} and before {b}")
    if axes != o_axes:
      diffs.append(f"  * the named axes of enclosing vmaps differ: now {dict(axes)} and "
                   f"before {dict(o_axes)}")
    return (0, len(diffs), "Tracing context doesn't match, e.g. due to config or context "
            "manager.\n" + "\n".join(diffs))
  if in_tree != o_tree:
    diffs = [f"  * at input path {tree_util.keystr(tuple(path))}, now {a} and before {b}, "
             f"so {why}" for path, a, b, why in
             tree_util.equality_errors_pytreedef(in_tree, o_tree)]
    if diffs:
      return 1, len(diffs), "different input pytree:\n" + "\n".join(diffs)
  if opts != o_opts:
    return 2, 1, "different jit options (static_argnums, donate_argnums, device, ...)"
  if avals != o_avals:
    names = debug.arg_names
    diffs, weak = [], False
    for i, (a, b) in enumerate(zip(avals, o_avals)):
      if a == b:
        continue
      at = names[i] if names is not None and i < len(names) else f"args[{i}]"
      sa, sb = a.str_short(short_dtypes=True), b.str_short(short_dtypes=True)
      if len(a.shape) != len(b.shape):   # JAX shows the (rank-dependent) sharding spec
        sa, sb = sa + "({})", sb + "({})"
      if a.weak_type != b.weak_type:
        weak = True
        sa += f"{{weak_type={a.weak_type}}}"
        sb += f"{{weak_type={b.weak_type}}}"
      diffs.append(f"  * at {at}, now {sa} and before {sb}")
    msg = "different input types:\n" + "\n".join(diffs)
    if weak:  # (sic) JAX appends the hint without a line break
      msg += "https://docs.jax.dev/en/latest/type_promotion.html#weak-types"
    if diffs:
      return 3, len(diffs), msg
  return 4, 0, "cache miss explanation unavailable"


# --- jit ---------------------------------------------------------------------------------
class _JitOptions:
  __slots__ = ("static_argnums", "static_argnames", "donate_argnums", "donate_argnames",
               "keep_unused", "device", "backend", "inline", "key")

  def __init__(self, static_argnums, static_argnames, donate_argnums, donate_argnames,
               keep_unused, device, backend, inline):
    self.static_argnums = static_argnums
    self.static_argnames = static_argnames
    self.donate_argnums = donate_argnums
    self.donate_argnames = donate_argnames
    self.keep_unused = keep_unused
    self.device = device
    self.backend = backend
    self.inline = inline
    self.key = (static_argnums, static_argnames, donate_argnums, donate_argnames,
                keep_unused, device, backend, inline)


class JitWrapped:
  """A jit-compiled function (``jax.jit(f)``).  Call it like ``f``; ``.trace``,
  ``.lower`` and ``.eval_shape`` give the ahead-of-time stages."""

  def __init__(self, fun, opts):
    functools.update_wrapper(self, fun, updated=())
    self._fun = fun
    self._opts = opts
    self._fast = {}
    self._own_cache = {}
    _environment.jit_wrappers.add(self)   # (clear_caches empties the fast paths)
    # The fast path: positional Arrays / Python scalars and (non-negative) static argnums.
    self._fast_ok = not (opts.static_argnums or opts.static_argnames)
    self._static_pos = None
    if not self._fast_ok and opts.static_argnums and min(opts.static_argnums) >= 0:
      self._static_pos = frozenset(opts.static_argnums)

  def __repr__(self):
    return f"<PjitFunction of {self._fun!r}>"

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    return types.MethodType(self, obj)

  @property
  def __signature__(self):
    # As JAX's: the wrapped function's signature, also for
    # inspect.signature(jitted, follow_wrapped=False) (a class with __get__ would
    # otherwise look like a builtin method descriptor to inspect).
    return inspect.signature(self._fun)

  # -- the call --------------------------------------------------------------------------
  def __call__(self, *args, **kwargs):
    if not kwargs and _core_state.interp is _eval_interp:
      key = self._fast_key(args)
      if key is not None:
        try:
          run = self._fast.get(key)
        except TypeError:   # an unhashable static argument: the slow path explains
          run = None
        if run is not None and not _jit_disabled():
          try:
            return run(args)
          except OverflowError:  # a Python int out of range: the slow path explains
            pass
    return self._call(args, kwargs)

  def _fast_key(self, args):
    """The fast-path key of positional ``args``, or None when they need the slow path."""
    key = []
    sp = self._static_pos
    if sp is None:
      if not self._fast_ok:
        return None
      for a in args:
        t = type(a)
        if t is ArrayImpl:
          key.append(a.aval)
          if a._committed:
            key.append(a._device)
        elif t in _FAST_SCALARS:
          key.append(t)
        else:
          return None
    else:
      for i, a in enumerate(args):
        t = type(a)
        if i in sp:
          key.append((t, a))
        elif t is ArrayImpl:
          key.append(a.aval)
          if a._committed:
            key.append(a._device)
        elif t in _FAST_SCALARS:
          key.append(t)
        else:
          return None
    key.append(_trace_state())
    return tuple(key)

  def _call(self, args, kwargs):
    if _jit_disabled():
      return self._fun(*args, **kwargs)
    entry, leaves, tracer_consts = self._get_entry(args, kwargs)
    if entry.refs is not None:   # reads/writes mutable array references (state/jit.py)
      return entry.out_tree.unflatten(_state_jit.call(
          entry.refs, entry.closed, entry.params, leaves, tracer_consts, self._opts.inline))
    interp = _core_state.interp
    if interp is _eval_interp and not tracer_consts:
      return self._run_eager(entry, args, kwargs, leaves)
    all_args = list(tracer_consts) + leaves
    if self._opts.inline or not staging.binds_jit(interp):
      outs = core.eval_jaxpr(entry.closed.jaxpr, entry.closed.consts, *all_args)
    else:
      outs = jit_p.bind(*all_args, **entry.params)
    return entry.out_tree.unflatten(outs)

  # -- tracing ---------------------------------------------------------------------------
  def _split(self, args, kwargs):
    """(tree of dynamic args with Static nodes, static argnums normalized)."""
    opts = self._opts
    n = len(args)
    snums = set()
    for i in opts.static_argnums:
      j = i + n if i < 0 else i
      if 0 <= j < n:
        snums.add(j)
    if snums:
      args = tuple(_check_static(a) if i in snums else a for i, a in enumerate(args))
    if opts.static_argnames and kwargs:
      kwargs = {k: (_check_static(v) if k in opts.static_argnames else v)
                for k, v in kwargs.items()}
    return args, kwargs, snums

  def _get_entry(self, args, kwargs, allow_abstract=False):
    opts = self._opts
    s_args, s_kwargs, snums = self._split(args, kwargs)
    leaves, in_tree = tree_util.tree_flatten((s_args, s_kwargs))
    names_cache = []

    def debug_names():
      if not names_cache:
        names_cache.append(staging.arg_names_of(self._fun, args, kwargs, snums,
                                                opts.static_argnames))
      return names_cache[0]

    avals = _abstract_leaves(self._fun, leaves, debug_names, allow_abstract)
    # the axis names bound by enclosing vmaps: collectives bake their sizes into the trace
    axes = () if _core_state.interp is _eval_interp else tuple(
        batching.bound_axis_sizes().items())
    key = (opts.key, in_tree, tuple(avals), _trace_state(), axes)
    cache = _fun_cache(self)
    entry = cache.get(key)
    if entry is not None:
      return entry, leaves, ()
    interp = _core_state.interp
    local = getattr(interp, "_jit_local_cache", None)
    if local is not None:
      hit = local.get((id(self._fun), key))
      if hit is not None:
        return hit[0], leaves, hit[1]
    entry, tracer_consts = self._trace(args, kwargs, s_args, s_kwargs, snums, in_tree, avals,
                                       debug_names(), key)
    if tracer_consts:
      if local is None:
        try:
          local = interp._jit_local_cache = {}
        except AttributeError:
          local = None
      if local is not None:
        local[(id(self._fun), key)] = (entry, tracer_consts, self._fun)
    else:
      if len(cache) >= _MAX_FAST:
        cache.clear()
      cache[key] = entry
    return entry, leaves, tracer_consts

  def _trace(self, args, kwargs, s_args, s_kwargs, snums, in_tree, avals, arg_names, key):
    fun, opts = self._fun, self._opts
    name = staging.fun_name(fun)
    debug = staging.DebugInfo("jit", staging.fun_source_info(fun), arg_names, name)
    try:
      seen = _fun_seen_keys.get(fun)
      if seen is None:
        seen = _fun_seen_keys[fun] = []
    except TypeError:
      seen = []
    if _explain_flag.value:
      _explain_miss(self, key, seen, debug)
    if len(seen) >= _MAX_SEEN:
      del seen[0]
    seen.append(key)
    out_tree_box = []

    def flat_fun(*leaves):
      _jit_sharding.note_trace(tree_util.tree_leaves((s_args, s_kwargs)), leaves)
      a, k = in_tree.unflatten(leaves)
      a = [x.val if type(x) is _Static else x for x in a]
      k = {n: (v.val if type(v) is _Static else v) for n, v in k.items()}
      out = fun(*a, **k)
      _jit_sharding.check_trace()   # sharding types of sharded arguments: ShardingTypeError
      out_leaves, out_tree = tree_util.tree_flatten(out)
      staging.check_outputs(out_leaves, out_tree, debug)
      out_tree_box.append(out_tree)
      return out_leaves

    t0 = time.perf_counter()
    with _monitoring.record_elapsed(_monitoring.JAXPR_TRACE_EVENT, name):
      closed, tracer_consts, refs = _state_jit.trace_flat(flat_fun, avals, debug)
    level = logging.WARNING if _log_compiles_flag.value else logging.DEBUG
    if _dispatch_logger.isEnabledFor(level):
      _dispatch_logger.log(level, "Finished tracing %s for jit in %.9f sec", name,
                           time.perf_counter() - t0)
    donated = self._donated_mask(args, kwargs, snums, len(avals))
    if refs is not None:   # refs are never donated; closed-over refs are trailing inputs
      donated = (False,) * (len(closed.jaxpr.invars) - len(tracer_consts))
    params = staging.jit_params(
        closed, name, (False,) * len(tracer_consts) + donated, opts.keep_unused,
        opts.inline, self._param_device())
    entry = _TraceEntry(closed, out_tree_box[-1], donated, debug, name, params,
                        len(tracer_consts), refs)
    return entry, tracer_consts

  def _param_device(self):
    opts = self._opts
    if opts.device is not None:
      return opts.device
    if opts.backend is not None:
      return _devices.get_backend(opts.backend).devices[0]
    return None

  def _donated_mask(self, args, kwargs, snums, n_leaves):
    opts = self._opts
    if not (opts.donate_argnums or opts.donate_argnames):
      return (False,) * n_leaves
    n = len(args)
    dnums = {(i + n if i < 0 else i) for i in opts.donate_argnums}
    mask = []
    for i, a in enumerate(args):
      if i in snums:
        continue
      mask.extend([i in dnums] * len(tree_util.tree_leaves(a)))
    for k in sorted(kwargs):
      if k in opts.static_argnames:
        continue
      mask.extend([k in opts.donate_argnames] * len(tree_util.tree_leaves(kwargs[k])))
    return tuple(mask)

  # -- eager execution -------------------------------------------------------------------
  def _placement(self, entry, leaves):
    """(device, committed) of the outputs; raises for inputs committed to different
    devices (unless ``device=`` / ``backend=`` was given)."""
    dev = self._param_device()
    if dev is not None:
      return dev, True
    return _committed_device(leaves, _device_conflict, entry)

  def _run_eager(self, entry, args, kwargs, leaves):
    dev, committed = self._placement(entry, leaves)
    exe_dev = dev if dev is not None else _devices.default_device()
    exe = _compile_entry(entry, exe_dev)
    bufs = _buffers(entry, leaves)
    donate = None
    if any(entry.donated):
      donate = _check_donations(entry, leaves)
      for i in donate or ():   # first: then ``bufs`` holds the only references to them
        leaves[i]._donate()
    arrays = _run_executable(exe, bufs, entry.out_avals, exe_dev, committed, donate)
    if _jit_sharding.lays_out(entry.closed, leaves):   # sharded inputs or constraints:
      arrays = _jit_sharding.layout_jit_outputs(entry.closed, leaves, arrays)   # no fast path
      return entry.out_tree.unflatten(arrays)
    if _config.debug_special:   # jax_debug_nans / jax_debug_infs: no fast path either
      from pyjax._src import debug_nans
      debug_nans.check_jit_outputs(entry.name, arrays, self._fun, args, kwargs)
      return entry.out_tree.unflatten(arrays)
    if not kwargs and not any(entry.donated) and len(self._fast) < _MAX_FAST:
      self._install_fast(entry, args, exe, dev, committed)
    return entry.out_tree.unflatten(arrays)

  def _install_fast(self, entry, args, exe, dev, committed):
    key = self._fast_key(args)
    if key is None:
      return
    sp = self._static_pos or ()
    spec = []
    avals = iter(entry.closed.in_avals)
    for i, a in enumerate(args):
      if i in sp:
        spec.append(False)
      else:
        aval = next(avals, None)
        if aval is None:
          return
        spec.append(None if type(a) is ArrayImpl else aval.dtype)
    if next(avals, None) is not None:
      return
    try:
      self._fast[key] = _make_fast_runner(exe, entry.out_avals, entry.out_tree, dev,
                                          committed, spec)
    except TypeError:
      pass

  # -- ahead-of-time stages --------------------------------------------------------------
  def trace(self, *args, **kwargs):
    """``Traced``: the jaxpr for these arguments (Arrays, ShapeDtypeStructs, ...)."""
    entry, leaves, tracer_consts = self._get_entry(args, kwargs, allow_abstract=True)
    s_args, s_kwargs, _ = self._split(args, kwargs)
    _, in_tree = tree_util.tree_flatten((s_args, s_kwargs))
    return Traced(self, entry, in_tree, leaves)

  def lower(self, *args, **kwargs):
    """``Lowered``: see ``Lowered.as_text`` (the jaxpr text; no StableHLO here)."""
    return self.trace(*args, **kwargs).lower()

  def eval_shape(self, *args, **kwargs):
    """Output ShapeDtypeStructs of a call with these arguments."""
    return self.trace(*args, **kwargs).out_info

  def _cache_size(self):
    return len(_fun_cache(self))

  def clear_cache(self):
    _fun_cache(self).clear()
    self._fast.clear()

  _clear_cache = clear_cache


# The class is named as JAX's (``jaxlib._jax.PjitFunction``): libraries recognize jitted
# functions by that type name (chex.assert_max_traces refuses to wrap one).
JitWrapped.__name__ = JitWrapped.__qualname__ = "PjitFunction"
PjitFunction = JitWrapped


# argument types whose abstract value follows from the type alone (and the x64 flag, which
# is part of every key): Python scalars (weak) and NumPy scalars of the standard dtypes
_FAST_SCALARS = frozenset(dtypes.python_scalar_types) | frozenset(
    np.dtype(n).type for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                               "uint32", "uint64", "float16", "float32", "float64",
                               "complex64", "complex128"))


def _make_fast_runner(exe, out_avals, out_tree, dev, committed, spec):
  """The hit path of one cache entry: ``spec`` says per positional argument whether it is
  an Array (None), a Python scalar (its dtype) or static (False).  Inputs still being
  computed (pending) go to ``exe.call_pending``."""
  nd = np.ndarray
  fn = exe.fn
  default_device = _devices.default_device
  if all(s is None for s in spec):
    def call(args):
      bufs = [a._buf for a in args]
      for b in bufs:
        if type(b) is not nd:
          return _execute(exe, [_buffer(a, None) for a in args])
      return fn(*bufs)
  else:
    array = np.array

    def call(args):
      bufs = []
      pending = False
      for a, s in zip(args, spec):
        if s is None:
          b = a._buf
          if type(b) is not nd:
            b = _buffer(a, None)
            pending = True
          bufs.append(b)
        elif s is not False:
          bufs.append(array(a, s))
      return _execute(exe, bufs) if pending else fn(*bufs)

  unflatten = out_tree.unflatten
  if any(a.dtype == dtypes.float0 for a in out_avals):
    def run(args):
      outs = call(args)
      d = dev if dev is not None else default_device()
      return unflatten([_out_value(b, a, d, committed) for b, a in zip(outs, out_avals)])
    return run

  if len(out_avals) == 1 and tree_util.treedef_is_leaf(out_tree):
    aval = out_avals[0]

    def run(args):
      out = call(args)[0]
      return ArrayImpl(out, aval, dev if dev is not None else default_device(), committed)
    return run

  def run(args):
    outs = call(args)
    d = dev if dev is not None else default_device()
    return unflatten([ArrayImpl(b, a, d, committed) for b, a in zip(outs, out_avals)])
  return run


def _buffer(x, aval):
  """The NumPy buffer of a jitted call's argument; a value still being computed stays a
  ``PendingBuffer`` (``_execute`` hands those to the executable)."""
  if type(x) is ArrayImpl:
    b = x._buf
    if type(b) is not np.ndarray:
      if x.is_deleted():
        raise RuntimeError(f"Array has been deleted with shape={x.aval.str_short(short_dtypes=False)}.")
      if type(b) is not _PendingBuffer:
        b = x._data()
    return b
  jb = getattr(x, "_jit_buffer", None)   # sharded (runtime/sharded_array): global value
  if jb is not None:
    return jb()
  b, _ = dispatch._to_numpy(x)
  if b.dtype != aval.dtype:
    b = np.asarray(b, aval.dtype)
  return b


def _run_executable(exe, bufs, out_avals, device, committed, donate=None):
  """Every jitted execution (a ``jit`` call's slow path, an eager ``jit`` equation) runs
  here: ``exe`` on the argument buffers (``donate``: the positions whose buffers it may
  reuse), its results wrapped as Arrays on ``device``.  The fast path
  (``_make_fast_runner``) inlines the same steps."""
  outs = exe.call_donating(bufs, donate) if donate else _execute(exe, bufs)
  return [_out_value(b, a, device, committed) for b, a in zip(outs, out_avals)]


def _out_value(b, aval, device, committed):
  """A jitted call's output: an Array, or for a float0 output (the gradient of an integer
  input) a NumPy array of float0, as JAX returns it."""
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  return ArrayImpl(b, aval, device, committed)


def _execute(exe, bufs):
  """``exe.fn(*bufs)``, or ``exe.call_pending(bufs)`` when some inputs are pending."""
  for b in bufs:
    if type(b) is not np.ndarray:
      return exe.call_pending(bufs)
  return exe.fn(*bufs)


def _buffers(entry, leaves):
  bufs = []
  for i, (x, a) in enumerate(zip(leaves, entry.closed.in_avals)):
    try:
      bufs.append(_buffer(x, a))
    except OverflowError:
      names = entry.debug.arg_names
      path = names[i] if names is not None and i < len(names) else f"args[{i}]"
      raise OverflowError(
          "An overflow was encountered while parsing an argument to a jitted computation, "
          f"whose argument path is {path}. Got {type(x)} with value {x}") from None
  return bufs


def _check_donations(entry, leaves):
  usable, _ = _donation_plan(entry)
  firsts = {}
  for i, x in enumerate(leaves):
    if type(x) is not ArrayImpl:
      continue
    j = firsts.setdefault(id(x), i)
    if j != i and (entry.donated[i] or entry.donated[j]):
      raise errors.JaxRuntimeError(
          "INVALID_ARGUMENT: Attempt to use a buffer that was previously donated in the same "
          f"call to Execute() (flattened argument {i}, replica 0, partition 0, first use: "
          f"{j}). Toy example for this bug: `f(donate(a), a)`.")
  return [i for i in usable if type(leaves[i]) is ArrayImpl]


def _device_conflict(entry, leaves):
  names = entry.debug.arg_names
  parts = []
  for i, x in enumerate(leaves):
    if type(x) is ArrayImpl and x._committed:
      n = names[i] if names is not None and i < len(names) else f"args[{i}]"
      d = x._device
      parts.append(f"argument {n} of {entry.name} with shape "
                   f"{x.aval.str_short(short_dtypes=False)} and with device ids [{d.id}] on "
                   f"platform {d.platform.upper()}")
  return ValueError("Received incompatible devices for jitted computation. Got "
                    + " and ".join(parts))


def _jit_impl(*args, jaxpr, donated_invars, name, in_shardings, **params):
  """Eager evaluation of a ``jit`` equation (``jit_p.impl``): compiled once per jaxpr
  and device."""
  del params
  s = in_shardings[0] if in_shardings else None
  if isinstance(s, SingleDeviceSharding):
    dev, committed = s._device, True
  else:
    dev, committed = _committed_device(args, _jit_eqn_conflict)
  exe_dev = dev if dev is not None else _devices.default_device()
  cache = _impl_cache.get(jaxpr)
  if cache is None:
    cache = _impl_cache[jaxpr] = {}
  exe = cache.get(exe_dev)
  if exe is None:
    exe = _compile(cache, jaxpr, exe_dev, name)
  bufs = [_buffer(x, a) for x, a in zip(args, jaxpr.in_avals)]
  arrays = _run_executable(exe, bufs, jaxpr.out_avals, exe_dev, committed)
  if _config.debug_special:   # jax_debug_nans/infs: re-run the jaxpr op by op on NaN/inf
    from pyjax._src import debug_nans
    debug_nans.check_jit_outputs(
        name, arrays, lambda *a: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a), args, {})
  return arrays


_impl_cache = weakref.WeakKeyDictionary()
jit_p.def_impl(_jit_impl)


def jit(fun=None, /, *, in_shardings=None, out_shardings=None, static_argnums=None,
        static_argnames=None, donate_argnums=None, donate_argnames=None, keep_unused=False,
        device=None, backend=None, inline=False, compiler_options=None):
  """Compile ``fun``: trace it once per argument signature and run the staged program.

  Differs from JAX: ``in_shardings`` / ``out_shardings`` over several devices lay the
  inputs and outputs out while the program runs globally (``pyjax._src.jit_sharding``);
  ``compiler_options`` is accepted and ignored; ``keep_unused`` only shows in jaxprs.
  Under ``grad``/``jvp``/``vmap`` a jit call stays a ``jit`` equation (its JVP, its
  primal and linear parts, its transpose and its batched form are jits again).
  """
  if fun is None:
    return functools.partial(
        jit, in_shardings=in_shardings, out_shardings=out_shardings,
        static_argnums=static_argnums, static_argnames=static_argnames,
        donate_argnums=donate_argnums, donate_argnames=donate_argnames,
        keep_unused=keep_unused, device=device, backend=backend, inline=inline,
        compiler_options=compiler_options)
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if device is not None or backend is not None:
    warnings.warn(
        "backend and device argument on jit is deprecated. You can use "
        "`jax.device_put(..., jax.local_devices(backend=\"cpu\")[0])` on the inputs to the "
        "jitted function to get the same behavior.", DeprecationWarning, stacklevel=2)
  if device is not None and backend is not None:
    raise ValueError("can't specify both a device and a backend for jit, got "
                     f"device={device} and backend={backend}")
  if device is None:
    for sh in (out_shardings, in_shardings):
      if isinstance(sh, SingleDeviceSharding):
        device = sh._device
      elif isinstance(sh, _devices.Device):
        device = sh
  static_argnums, static_argnames, donate_argnums, donate_argnames = _resolve_argnums(
      fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
  opts = _JitOptions(static_argnums, static_argnames, donate_argnums, donate_argnames,
                     bool(keep_unused), device, backend, bool(inline))
  if _jit_sharding.needs_wrapper(in_shardings, out_shardings):   # multi-device shardings
    return _jit_sharding.ShardedJit(JitWrapped(fun, opts), in_shardings, out_shardings)
  return JitWrapped(fun, opts)


# --- make_jaxpr / eval_shape --------------------------------------------------------------
def _trace_abstract(fun, args, kwargs, static_argnums=(), traced_for="jit"):
  """Trace ``fun`` on abstract versions of ``args``; returns (ClosedJaxpr, out_tree)."""
  n = len(args)
  snums = {(i + n if i < 0 else i) for i in static_argnums}
  snums = {i for i in snums if 0 <= i < n}
  dyn_args = tuple(a for i, a in enumerate(args) if i not in snums)
  leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
  names = []

  def debug_names():
    if not names:
      names.append(staging.arg_names_of(fun, args, kwargs, snums))
    return names[0]

  avals = _abstract_leaves(fun, leaves, debug_names, True)
  debug = staging.DebugInfo(traced_for, staging.fun_source_info(fun), debug_names(),
                            staging.fun_name(fun))
  out_tree_box = []

  def flat_fun(*flat):
    a, k = in_tree.unflatten(flat)
    it = iter(a)
    full = [args[i] if i in snums else next(it) for i in range(n)]
    out = fun(*full, **k)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    staging.check_outputs(out_leaves, out_tree, debug)
    out_tree_box.append(out_tree)
    return out_leaves

  closed, tracer_consts, info = _state_jit.trace_flat(flat_fun, avals, debug)
  if info is not None and info.written_hi:   # not the write-back of mutable hijax arguments
    closed = _state_jit.without_hi_outputs(closed, info)
  if tracer_consts:  # keep outer tracers as constants (make_jaxpr under a transformation)
    j = closed.jaxpr
    k = len(tracer_consts)
    closed = core.ClosedJaxpr(
        core.Jaxpr(j.invars[:k] + j.constvars, j.invars[k:], j.outvars, j.eqns, j.effects,
                   j.debug_info), list(tracer_consts) + closed.consts)
  return closed, out_tree_box[-1]


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False,
               abstracted_axes=None):
  """A function returning the ClosedJaxpr of ``fun`` for given example arguments (Arrays,
  scalars, ShapeDtypeStructs or anything with ``shape`` and ``dtype``); with
  ``return_shape=True`` also the output ShapeDtypeStructs.  Differs from JAX:
  ``axis_env`` (a sequence of ``(axis name, size)`` pairs) lets ``fun`` use collectives
  over those names.  Differs from JAX: ``abstracted_axes`` is not supported (must be
  None)."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if abstracted_axes is not None:
    raise NotImplementedError("make_jaxpr: abstracted_axes is not supported")
  static_argnums = _index_tuple(static_argnums)
  axis_env = tuple(axis_env or ())

  @_api_util.wraps(fun)
  def make_jaxpr_f(*args, **kwargs):
    with batching.extend_axis_env(axis_env):
      closed, out_tree = _trace_abstract(fun, args, kwargs, static_argnums)
    if return_shape:
      return closed, out_tree.unflatten([_sds_of(a) for a in closed.out_avals])
    return closed

  make_jaxpr_f.__qualname__ = f"make_jaxpr({getattr(fun, '__qualname__', repr(fun))})"
  make_jaxpr_f.__name__ = f"make_jaxpr({staging.fun_name(fun)})"
  return make_jaxpr_f


def typeof(x):
  """The abstract value (type) of ``x``: ``ShapedArray(float32[3])``, ``~int32[]`` for a
  Python int, ``key<fry>[]`` for a typed key; TypeError for non-JAX values."""
  if type(x) is _Ref:
    return x.aval
  typed = getattr(x, "_typed_aval", None)
  if typed is not None and isinstance(x, ArrayImpl):   # a sharded Array: its sharding type
    return typed()
  if isinstance(x, core.Tracer):   # in a jit of sharded arguments: the derived type
    typed = _jit_sharding.typeof_tracer(x)
    if typed is not None:
      return typed
  try:
    return core.get_aval(x)
  except TypeError:
    t = type(x)
    shown = t if t is str else f"'{t}'"   # (sic) JAX quotes the type except for str
    raise TypeError(f"Argument '{x}' of type {shown} is not a valid JAX type") from None


def eval_shape(fun, *args, **kwargs):
  """The output shapes/dtypes of ``fun(*args, **kwargs)`` as ShapeDtypeStructs, without
  computing anything.  Arguments may be Arrays, scalars, ShapeDtypeStructs or anything
  with ``shape`` and ``dtype`` attributes."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  closed, out_tree = _trace_abstract(fun, args, kwargs)
  from pyjax._src.jit_sharding import typed_out_shardings   # Explicit-axes types
  shardings = typed_out_shardings(closed, tree_util.tree_leaves((args, kwargs)))
  out = out_tree.unflatten([
      _sds_of(a) if s is None else ShapeDtypeStruct(a.shape, a.dtype, sharding=s,
                                                    weak_type=a.weak_type)
      for a, s in zip(closed.out_avals, shardings)])
  # a typed key output is a ShapeDtypeStruct of key dtype (not a key array node over one)
  is_key_sds = lambda x: type(getattr(x, "_base_array", None)) is ShapeDtypeStruct
  return tree_util.tree_map(
      lambda x: ShapeDtypeStruct(x.shape, x.dtype, sharding=x._base_array.sharding)
      if is_key_sds(x) else x, out, is_leaf=is_key_sds)


# --- disable_jit / ensure_compile_time_eval ----------------------------------------------
@contextlib.contextmanager
def disable_jit(disable=True):
  """Context manager: jitted functions run as plain Python (op by op) inside it, and
  ``config.jax_disable_jit`` reads ``disable``.  Differs from JAX: the setting is
  process-wide while the context is active (JAX's is thread-local)."""
  prev = _disable_jit_flag.value
  _disable_jit_flag.value = bool(disable)
  try:
    yield
  finally:
    _disable_jit_flag.value = prev


class _CompileTimeEvalInterpreter(core.Interpreter):
  """Evaluates primitives whose inputs are all concrete now; others go to the parent."""

  def __init__(self, parent):
    self.parent = parent

  def process_primitive(self, prim, args, params):
    for x in args:
      if isinstance(x, core.Tracer):
        with core.set_interpreter(self.parent):
          return prim.bind(*args, **params)
    with core.set_interpreter(_eval_interp):
      return prim.bind(*args, **params)

  def __repr__(self):
    return f"CompileTimeEval({self.parent!r})"

  @property
  def handles_jit_p(self):
    return staging.binds_jit(self.parent)

  def error_context(self, tracer):
    f = getattr(self.parent, "error_context", None)
    return f(tracer) if f is not None else ""


@contextlib.contextmanager
def ensure_compile_time_eval():
  """Context manager: inside a traced function, operations on concrete values run now
  (their results are concrete Arrays) instead of being staged."""
  interp = _core_state.interp
  if interp is _eval_interp:
    yield
    return
  with core.set_interpreter(_CompileTimeEvalInterpreter(interp)):
    yield
ShapeDtypeStruct.__module__ = "pyjax"


# --- named_call / named_scope -------------------------------------------------------------
class _NameStack(threading.local):
  def __init__(self):
    self.names = ()


_name_stack = _NameStack()


def current_name_stack():
  """The names pushed by the enclosing ``named_scope``/``named_call`` (outermost first),
  joined with ``/`` as JAX prints a name stack."""
  return "/".join(_name_stack.names)


@contextlib.contextmanager
def named_scope(name):
  """Context manager adding ``name`` to the name stack of the operations staged inside it
  (JAX uses it for HLO metadata and profiles; jaxprs are unchanged).  Differs from JAX:
  the name stack is only kept (``current_name_stack``), not attached to equations."""
  if not isinstance(name, str):
    raise TypeError("named_scope name argument must be a string.")
  prev = _name_stack.names
  _name_stack.names = prev + (name,)
  try:
    yield
  finally:
    _name_stack.names = prev


def named_call(fun, *, name=None):
  """``fun`` running inside ``named_scope(name)`` (default: its ``__name__``); the jaxpr
  of a call is unchanged, as in JAX."""
  if name is None:
    name = staging.fun_name(fun)

  @_api_util.wraps(fun)
  def named_f(*args, **kwargs):
    with named_scope(name):
      return fun(*args, **kwargs)
  return named_f


# --- flag context managers ------------------------------------------------------------------
def _flag_context(name, doc):
  @contextlib.contextmanager
  def ctx(value=True):
    prev = config.read(name)
    config.update(name, value)
    try:
      yield
    finally:
      config.update(name, prev)
  ctx.__name__ = name[len("jax_"):]
  ctx.__doc__ = doc
  return ctx


log_compiles = _flag_context(
    "jax_log_compiles",
    "Context manager: log (at WARNING, on ``pyjax._src.dispatch`` / "
    "``pyjax._src.interpreters.pxla``) each trace and compilation of a jitted function, "
    "as ``jax_log_compiles``.  Differs from JAX: the compile step is logged as "
    "``Finished compilation of jit(f)`` (there is no MLIR/XLA stage).")
explain_cache_misses = _flag_context(
    "jax_explain_cache_misses",
    "Context manager: log why each jit cache miss retraced (``jax_explain_cache_misses``; "
    "JAX's text on ``pyjax._src.interpreters.partial_eval``).")


# the ahead-of-time stages (jit(f).trace / .lower / .compile) live in api_aot.py
from pyjax._src.api_aot import ArgInfo, Compiled, Lowered, Traced  # noqa: E402,F401
