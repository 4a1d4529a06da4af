"""The CPU backend's executables for ``jit``: a jaxpr run equation by equation on the
eager NumPy implementations.

``compile_jaxpr(closed_jaxpr, device)`` is the seam a native compiler will replace: it
returns an object with ``__call__(*flat_buffers) -> list of buffers`` (NumPy arrays of the
input avals' dtypes in, NumPy arrays of the output avals' dtypes out) and ``as_text()``.

"Compiling" here generates one straight-line Python function for the whole jaxpr: every
equation becomes a direct call of the primitive's NumPy implementation with its params
bound, followed by a cast to the output dtype only where the implementation's result
differs (half types computed in float32, NumPy scalars).  Nothing is re-checked per call
(abstract evaluation ran at trace time), literals and constants are converted once,
nested ``jit`` equations are inlined, and equations whose results are unused are dropped
(as XLA would).  Higher-order primitives with a Python-level ``impl`` (control flow) are
called with Arrays.
"""
from __future__ import annotations

import itertools

import numpy as np

from pyjax._src.backends.cpu import eager as cpu_eager

_impls = cpu_eager.impls
_counter = itertools.count()


class CpuExecutable:
  """A compiled jaxpr: ``exe(*buffers)`` returns the list of output buffers."""
  __slots__ = ("fn", "source", "in_avals", "out_avals", "device", "name")

  def __init__(self, fn, source, in_avals, out_avals, device, name):
    self.fn = fn
    self.source = source
    self.in_avals = in_avals
    self.out_avals = out_avals
    self.device = device
    self.name = name

  def __call__(self, *bufs):
    return self.fn(*bufs)

  def as_text(self):
    """The generated Python source of this executable."""
    return self.source

  def __repr__(self):
    return f"CpuExecutable({self.name})"


def _is_literal(v):
  return type(v).__name__ == "Literal"


def _is_closed(v):
  return type(v).__name__ == "ClosedJaxpr"


class _Codegen:
  def __init__(self):
    self.lines = []
    self.globals = {"_asarray": np.asarray, "_nd": np.ndarray}
    self._names = itertools.count()
    self._glob_ids = {}

  def fresh(self, prefix="v"):
    return f"{prefix}{next(self._names)}"

  def glob(self, value, prefix="g"):
    key = id(value)
    hit = self._glob_ids.get(key)
    if hit is not None and hit[1] is value:
      return hit[0]
    name = self.fresh(prefix)
    self.globals[name] = value
    self._glob_ids[key] = (name, value)
    return name

  def const(self, value, aval):
    """A global holding ``value`` as a NumPy array of ``aval``'s dtype."""
    data = value._data() if hasattr(value, "_data") else value
    arr = np.asarray(data, dtype=aval.dtype)
    if arr.shape != tuple(aval.shape):
      arr = np.broadcast_to(arr, aval.shape)
    name = self.fresh("c")
    self.globals[name] = arr
    return name


def _used_vars(jaxpr):
  """Equations to keep (reverse liveness): those with a used output or with effects."""
  live = {v for v in jaxpr.outvars if not _is_literal(v)}
  keep = []
  for eqn in reversed(jaxpr.eqns):
    if eqn.effects or any(v in live for v in eqn.outvars):
      keep.append(eqn)
      live.update(v for v in eqn.invars if not _is_literal(v))
  keep.reverse()
  return keep


def _emit_jaxpr(gen, jaxpr, env, indent="  "):
  """Emit code for ``jaxpr`` with ``env`` mapping its constvars and invars to
  expressions; returns the expressions of its outputs."""
  def read(v):
    if _is_literal(v):
      return gen.const(v.val, v.aval)
    return env[v]

  for eqn in _used_vars(jaxpr):
    prim = eqn.primitive
    ins = [read(v) for v in eqn.invars]
    jaxpr_param = eqn.params.get("jaxpr")
    if prim.name == "jit" and _is_closed(jaxpr_param):
      inner = jaxpr_param.jaxpr
      sub = {}
      for v, c in zip(inner.constvars, jaxpr_param.consts):
        sub[v] = gen.const(c, v.aval)
      for v, e in zip(inner.invars, ins):
        sub[v] = e
      outs = _emit_jaxpr(gen, inner, sub, indent)
      for v, e in zip(eqn.outvars, outs):
        env[v] = e
      continue
    impl = _impls.get(prim.name)
    outnames = [gen.fresh() for _ in eqn.outvars]
    if impl is not None:
      fn = gen.glob(impl, "f")
      call = f"{fn}({', '.join(ins)}"
      if eqn.params:
        call += (", " if ins else "") + f"**{gen.glob(dict(eqn.params), 'p')}"
      call += ")"
      if prim.multiple_results:
        tmp = gen.fresh("r")
        gen.lines.append(f"{indent}{tmp} = {call}  # {prim.name}")
        for i, (name, v) in enumerate(zip(outnames, eqn.outvars)):
          gen.lines.append(f"{indent}{name} = {tmp}[{i}]")
      else:
        gen.lines.append(f"{indent}{outnames[0]} = {call}  # {prim.name}")
      for name, v in zip(outnames, eqn.outvars):
        d = gen.glob(v.aval.dtype, "d")
        gen.lines.append(f"{indent}if {name}.__class__ is not _nd or {name}.dtype != {d}: "
                         f"{name} = _asarray({name}, {d})")
    elif prim.impl is not None:
      runner = gen.glob(_python_impl_runner(prim, eqn), "h")
      gen.lines.append(f"{indent}{', '.join(outnames)}, = {runner}({', '.join(ins)})  # {prim.name}")
    else:
      raise NotImplementedError(f"The cpu backend has no implementation of {prim.name}")
    for name, v in zip(outnames, eqn.outvars):
      env[v] = name
  return [read(v) for v in jaxpr.outvars]


def _python_impl_runner(prim, eqn):
  """Call a higher-order primitive's Python ``impl`` on Arrays built from buffers."""
  from pyjax._src import core
  from pyjax._src.runtime.array import ArrayImpl
  in_avals = [v.aval for v in eqn.invars]
  out_avals = [v.aval for v in eqn.outvars]
  params = dict(eqn.params)
  multiple = prim.multiple_results

  def run(*bufs):
    args = [ArrayImpl(b, a) for b, a in zip(bufs, in_avals)]
    with core.set_interpreter(core.eval_interpreter):
      out = prim.impl(*args, **params)
    outs = out if multiple else [out]
    res = []
    for o, a in zip(outs, out_avals):
      b = o._data() if type(o) is ArrayImpl else np.asarray(o)
      if b.dtype != a.dtype:
        b = np.asarray(b, a.dtype)
      res.append(b)
    return res
  return run


def compile_jaxpr(closed_jaxpr, device=None, name="jaxpr"):
  """Compile ``closed_jaxpr`` for ``device``: returns a ``CpuExecutable``."""
  jaxpr = closed_jaxpr.jaxpr
  gen = _Codegen()
  env = {}
  for v, c in zip(jaxpr.constvars, closed_jaxpr.consts):
    env[v] = gen.const(c, v.aval)
  params = []
  for v in jaxpr.invars:
    p = gen.fresh("a")
    params.append(p)
    env[v] = p
  outs = _emit_jaxpr(gen, jaxpr, env)
  fn_name = f"jit_{''.join(ch if ch.isalnum() else '_' for ch in name)}"
  src = "\n".join([f"def {fn_name}({', '.join(params)}):", *gen.lines,
                   f"  return [{', '.join(outs)}]", ""])
  filename = f"<pyjax jit {name} #{next(_counter)}>"
  code = compile(src, filename, "exec")
  namespace = dict(gen.globals)
  exec(code, namespace)  # noqa: S102  -- our own generated source
  fn = namespace[fn_name]
  return CpuExecutable(fn, src, [v.aval for v in jaxpr.invars],
                       [v.aval for v in jaxpr.outvars], device, name)
