"""The ahead-of-time stages of ``jit``: ``jit(f).trace(*args)`` -> ``Traced``,
``.lower()`` -> ``Lowered``, ``.compile()`` -> ``Compiled`` (``jax.stages``).  They share
``api.py``'s trace cache and executables: ``Compiled`` calls the executable a jitted call
with the same argument types runs."""
from __future__ import annotations

from pyjax._src import api as _api
from pyjax._src import errors, tree_util
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.array import ArrayImpl


class ArgInfo:
  """An argument of a traced/lowered/compiled function: its aval and whether donated."""
  __slots__ = ("_aval", "donated")

  def __init__(self, aval, donated):
    self._aval = aval
    self.donated = donated

  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)

  def __repr__(self):
    return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"


class Traced:
  """``jit(f).trace(*args)``: ``.jaxpr`` (a ClosedJaxpr), ``.out_info``, ``.lower()``."""

  def __init__(self, wrapped, entry, in_tree, leaves):
    self._wrapped = wrapped
    self._entry = entry
    self.in_tree = in_tree
    self._n_leaves = len(leaves)
    self.fun_name = entry.name

  @property
  def jaxpr(self):
    return self._entry.closed

  @property
  def out_tree(self):
    return self._entry.out_tree

  @property
  def out_avals(self):
    return self._entry.out_tree.unflatten(list(self._entry.out_avals))

  @property
  def out_info(self):
    return self._entry.out_tree.unflatten([_api._sds_of(a) for a in self._entry.out_avals])

  @property
  def in_avals(self):
    avals = self._entry.closed.in_avals[self._entry.n_tracer_consts:]
    return _dynamic_tree(self.in_tree).unflatten(list(avals))

  @property
  def args_info(self):
    e = self._entry
    avals = e.closed.in_avals[e.n_tracer_consts:]
    return _dynamic_tree(self.in_tree).unflatten(
        [ArgInfo(a, d) for a, d in zip(avals, e.donated)])

  @property
  def donate_argnums(self):
    return self._wrapped._opts.donate_argnums

  def lower(self, *, lowering_platforms=None, _private_parameters=None):
    """``Lowered`` for this trace."""
    return Lowered(self)


def _dynamic_tree(in_tree):
  """The input structure with static arguments removed (what Compiled is called with)."""
  leaves = [object()] * in_tree.num_leaves
  args, kwargs = in_tree.unflatten(leaves)
  args = tuple(a for a in args if type(a) is not _api._Static)
  kwargs = {k: v for k, v in kwargs.items() if type(v) is not _api._Static}
  return tree_util.tree_structure((args, kwargs))


class Lowered:
  """``jit(f).lower(*args)``.  ``as_text()`` is the jaxpr's text: this backend has no
  StableHLO/MLIR stage (differs from JAX)."""

  def __init__(self, traced):
    self._traced = traced
    self.in_tree = _dynamic_tree(traced.in_tree)
    self.args_info = traced.args_info
    self.out_tree = traced.out_tree

  @property
  def out_info(self):
    return self._traced.out_info

  @property
  def in_avals(self):
    return self._traced.in_avals

  @property
  def donate_argnums(self):
    return self._traced.donate_argnums

  def as_text(self, dialect=None, *, debug_info=False):
    """The staged program (jaxpr text)."""
    return str(self._traced.jaxpr)

  def compiler_ir(self, dialect=None):
    """The staged program itself (a ClosedJaxpr); with ``dialect="hlo"`` an object whose
    ``as_hlo_text()`` is the program's HLO text (``pyjax._src.hlo_text``)."""
    if dialect == "hlo":
      from pyjax._src import hlo_text
      closed = self._traced.jaxpr
      dbg = getattr(closed.jaxpr, "debug_info", None)
      names = getattr(dbg, "arg_names", None)
      return hlo_text.HloModule(hlo_text.jaxpr_to_hlo_text(closed, self._traced.fun_name,
                                                           names))
    return self._traced.jaxpr

  def cost_analysis(self):
    """Operation counts of the staged program (``pyjax._src.cost_analysis``: counted from
    the jaxpr, not XLA's after-fusion numbers)."""
    from pyjax._src.cost_analysis import cost_analysis
    return cost_analysis(self._traced.jaxpr)

  def compile(self, compiler_options=None):
    """``Compiled``: the executable for the lowered argument types.  ``compiler_options``
    are XLA's: pyjax ignores them, but, as JAX, rejects a name that is neither an XLA
    debug option (``xla_...``) nor a build option with ``JaxRuntimeError`` (it does not
    check XLA's list of ``xla_`` names or the values)."""
    _check_compiler_options(compiler_options)
    wrapped = self._traced._wrapped
    entry = self._traced._entry
    dev = wrapped._param_device() or _devices.default_device()
    exe = _api._compile_entry(entry, dev)
    if hasattr(exe, "wait"):   # the tiered executable: wait for the native build
      exe.wait()
    return Compiled(self, exe)


_BUILD_OPTIONS = frozenset({"exec_time_optimization_effort", "memory_fitting_effort",
                            "optimization_level", "memory_fitting_level"})


def _check_compiler_options(options):
  for name in (options or {}):
    if not (str(name).startswith("xla_") or name in _BUILD_OPTIONS):
      raise errors.JaxRuntimeError(f"INVALID_ARGUMENT: No such compile option: '{name}'")


class Compiled:
  """``jit(f).lower(*args).compile()``: call it with the dynamic arguments (static ones
  are baked in).  ``as_text()`` is the executable's generated source (C when the native
  build succeeded)."""

  def __init__(self, lowered, exe):
    self._lowered = lowered
    self._exe = exe
    self.in_tree = lowered.in_tree
    self.out_tree = lowered.out_tree
    self.args_info = lowered.args_info

  @property
  def out_info(self):
    return self._lowered.out_info

  @property
  def in_avals(self):
    return self._lowered.in_avals

  def as_text(self):
    return self._exe.as_text()

  def cost_analysis(self):
    """As ``Lowered.cost_analysis``: counted from the program pyjax compiled."""
    return self._lowered.cost_analysis()

  def memory_analysis(self):
    return None

  def runtime_executable(self):
    return self._exe

  def __call__(self, *args, **kwargs):
    traced = self._lowered._traced
    entry = traced._entry
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    if tree != self.in_tree:
      errs = list(tree_util.equality_errors_pytreedef(tree, self.in_tree))
      msg = ["Function compiled with input pytree does not match the input pytree it was "
             f"called with. There are {len(errs)} mismatches, including:"]
      for path, now, before, why in errs[:1]:
        path = tuple(path)
        where = "args"
        if path:
          head = getattr(path[0], "idx", None)
          where = ("args" if head == 0 else "kwargs") + tree_util.keystr(path[1:])
        msg.append(f"    * at {where}, seen {before} but now given {now}, so {why}")
      raise TypeError("\n".join(msg))
    avals = entry.closed.in_avals[entry.n_tracer_consts:]
    names = entry.debug.arg_names
    bad = []
    for i, (x, a) in enumerate(zip(leaves, avals)):
      b = _api._abstractify(x, False)
      if b is None:
        raise _api._bad_argument(traced._wrapped._fun, x, names[i] if names else f"args[{i}]")
      if b.shape != a.shape or b.dtype != a.dtype:
        n = names[i] if names is not None and i < len(names) else f"args[{i}]"
        bad.append(f"Argument '{n}' compiled with {a.str_short(short_dtypes=False)} and "
                   f"called with {b.str_short(short_dtypes=False)}")
    if bad:
      raise TypeError("Argument types differ from the types for which this computation was "
                      "compiled. Perhaps you are calling the compiled executable with a "
                      "different enable_x64 mode than when it was AOT compiled? The mismatches "
                      "are:\n" + "\n".join(bad))
    wrapped = traced._wrapped
    dev, committed = wrapped._placement(entry, leaves)
    out_dev = dev if dev is not None else self._exe.device
    bufs = [_api._buffer(x, a) for x, a in zip(leaves, avals)]
    outs = _api._execute(self._exe, bufs)
    return entry.out_tree.unflatten(
        [ArrayImpl(b, a, out_dev, committed) for b, a in zip(outs, entry.out_avals)])

  call = __call__
