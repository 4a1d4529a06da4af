"""HLO text of a staged program: ``jit(f).lower(x).compiler_ir(dialect="hlo").as_hlo_text()``.

pyjax compiles jaxprs itself (no XLA), so this is a printer, not a compiler stage: it
writes the program as the HLO XLA would be given for it, in XLA's text syntax -- one
instruction per line, ``name = type opcode(operands), attributes``, the last one
``ROOT`` -- so programs can be inspected and compared the way JAX users do (optax's tests
compare the HLO of ``x * x``, ``x ** 2``, ``jnp.square(x)`` and its ``abs_sq``).
Lowering follows XLA's conventions: ``integer_pow`` and ``square`` are multiplications,
``conj`` of a complex value is ``complex(real, negate(imag))`` (of a real one, the value
itself), scalar literals are broadcast constants, reductions call a ``region`` computation,
nested ``jit`` and custom-derivative calls are inlined.

Differs from JAX: instruction names are the primitives' names numbered in order (JAX's
come from source locations and may differ); unused arguments stay parameters.  The
printer covers straight-line programs of elementwise, shape, comparison, reduction,
``dot_general``, ``iota``, ``concatenate`` and ``slice`` equations; a program with any
other primitive (control flow, gathers, sorts, ...) raises ``NotImplementedError`` naming
it.
"""
from __future__ import annotations

import numpy as np

from pyjax._src import dtypes

__all__ = ["HloModule", "jaxpr_to_hlo_text"]

_UNARY = {
    "neg": "negate", "exp": "exponential", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt",
    "tanh": "tanh", "abs": "abs", "sign": "sign", "floor": "floor", "ceil": "ceil",
    "round": "round-nearest-even", "sin": "sine", "cos": "cosine", "tan": "tan",
    "logistic": "logistic", "log1p": "log-plus-one", "expm1": "exponential-minus-one",
    "not": "not", "is_finite": "is-finite", "cbrt": "cbrt", "exp2": "exp2",
    "population_count": "popcnt", "clz": "count-leading-zeros", "copy": "copy",
    "copy_p": "copy", "imag": "imag", "atan": "atan", "erf": "erf",
}
_BINARY = {
    "add": "add", "add_any": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
    "rem": "remainder", "max": "maximum", "min": "minimum", "pow": "power",
    "and": "and", "or": "or", "xor": "xor", "atan2": "atan2",
    "shift_left": "shift-left", "shift_right_arithmetic": "shift-right-arithmetic",
    "shift_right_logical": "shift-right-logical", "complex": "complex",
    "nextafter": "next-after",
}
_COMPARE = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}
_REDUCE = {"reduce_sum": ("add", 0), "reduce_max": ("maximum", "-inf"),
           "reduce_min": ("minimum", "inf"), "reduce_prod": ("multiply", 1),
           "reduce_and": ("and", True), "reduce_or": ("or", False)}
_INLINE = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr",
           "core_call": "call_jaxpr", "custom_jvp_call": "call_jaxpr",
           "custom_vjp_call": "call_jaxpr", "remat": "jaxpr", "checkpoint": "jaxpr"}


def _type_name(dtype):
  d = np.dtype(dtype)
  if d == np.bool_:
    return "pred"
  if d.kind in "iu":
    return ("s" if d.kind == "i" else "u") + str(d.itemsize * 8)
  if d.kind == "c":
    return f"c{d.itemsize * 8}"
  if d.name == "bfloat16":
    return "bf16"
  if d.kind == "f":
    return f"f{d.itemsize * 8}"
  return dtypes.short_dtype_name(d)


def _shape_str(aval):
  dims = ",".join(str(int(s)) for s in aval.shape)
  layout = "{" + ",".join(str(i) for i in reversed(range(len(aval.shape)))) + "}" \
      if aval.shape else ""
  return f"{_type_name(aval.dtype)}[{dims}]{layout}"


def _dims(xs):
  return "{" + ",".join(str(int(x)) for x in xs) + "}"


def _literal_text(value, dtype):
  v = np.asarray(value, dtype).item()
  if isinstance(v, bool):
    return "true" if v else "false"
  if isinstance(v, complex):
    return f"({_num(v.real)}, {_num(v.imag)})"
  return _num(v)


def _num(v):
  if isinstance(v, float):
    if np.isnan(v):
      return "nan"
    if np.isinf(v):
      return "inf" if v > 0 else "-inf"
    return repr(int(v)) if v == int(v) and abs(v) < 1e16 else repr(v)
  return str(v)


class _Printer:
  def __init__(self):
    self.counts = {}
    self.regions = []

  def name(self, base):
    k = self.counts.get(base, 0) + 1
    self.counts[base] = k
    return f"{base}.{k}"


class _Computation:
  def __init__(self, printer):
    self.p = printer
    self.lines = []

  def emit(self, base, aval, text):
    n = self.p.name(base)
    self.lines.append([n, f"{_shape_str(aval)} {text}"])
    return n

  def constant(self, value, aval):
    from pyjax._src.avals import ShapedArray
    scalar = ShapedArray((), aval.dtype)
    c = self.emit("constant", scalar, f"constant({_literal_text(value, aval.dtype)})")
    if aval.shape:
      c = self.emit("broadcast", aval, f"broadcast({c}), dimensions={{}}")
    return c


def _region(printer, op, dtype):
  from pyjax._src.avals import ShapedArray
  name = printer.name("region_0" if not printer.regions else f"region_{len(printer.regions)}")
  a = ShapedArray((), dtype)
  x, y = printer.name("Arg_0"), printer.name("Arg_1")
  r = printer.name(op)
  printer.regions.append(f"{name} {{\n  {x} = {_shape_str(a)} parameter(0)\n"
                         f"  {y} = {_shape_str(a)} parameter(1)\n"
                         f"  ROOT {r} = {_shape_str(a)} {op}({x}, {y})\n}}\n")
  return name


def _emit_jaxpr(comp, jaxpr, consts_env, args):
  from pyjax._src import core
  env = dict(consts_env)
  for v, a in zip(jaxpr.invars, args):
    env[v] = a

  def read(v, out_aval=None):
    if isinstance(v, core.Literal):
      aval = v.aval if out_aval is None else out_aval.update(dtype=v.aval.dtype)
      return comp.constant(v.val, aval)
    n = env[v]
    shape, target = tuple(v.aval.shape), tuple(out_aval.shape) if out_aval is not None else None
    if target is not None and shape != target:
      # implicit broadcasting (scalars; size-1 dimensions of an equal-rank operand):
      # XLA's explicit reshape to the kept dimensions, then broadcast
      keep = [i for i, d in enumerate(shape) if d == target[i]] if len(shape) == len(target) \
          else []
      if len(keep) != len(shape):
        n = comp.emit("reshape", v.aval.update(shape=tuple(shape[i] for i in keep)),
                      f"reshape({n})") if keep or shape else n
      n = comp.emit("broadcast", out_aval.update(dtype=v.aval.dtype),
                    f"broadcast({n}), dimensions={_dims(keep)}")
    return n

  for eqn in jaxpr.eqns:
    prim, params = eqn.primitive.name, eqn.params
    outs = eqn.outvars
    out = outs[0].aval if outs else None
    ins = eqn.invars
    if prim in _INLINE and params.get(_INLINE[prim]) is not None:
      inner = params[_INLINE[prim]]
      ij = getattr(inner, "jaxpr", inner)
      cenv = {}
      for cv, c in zip(ij.constvars, getattr(inner, "consts", ())):
        cenv[cv] = comp.constant(c, cv.aval) if np.ndim(c) == 0 else _array_constant(comp, c, cv.aval)
      res = _emit_jaxpr(comp, ij, cenv, [read(v) for v in ins[len(ins) - len(ij.invars):]])
      for v, r in zip(outs, res):
        env[v] = r
      continue
    if prim in _BINARY:
      a, b = read(ins[0], out), read(ins[1], out)
      r = comp.emit(prim, out, f"{_BINARY[prim]}({a}, {b})")
    elif prim in _COMPARE:
      big = ins[0].aval if ins[0].aval.shape else ins[1].aval
      a, b = read(ins[0], big), read(ins[1], big)
      r = comp.emit(prim, out, f"compare({a}, {b}), direction={_COMPARE[prim]}")
    elif prim in ("integer_pow", "square"):
      y = params.get("y", 2)
      r = _integer_pow(comp, prim, read(ins[0]), out, int(y))
    elif prim in ("conj", "real"):
      x = read(ins[0])
      if np.dtype(ins[0].aval.dtype).kind != "c":
        r = x
      elif prim == "real":
        r = comp.emit("real", out, f"real({x})")
      else:
        part = ins[0].aval.update(dtype=np.dtype(out.dtype).type(0).real.dtype)
        re = comp.emit("real", part, f"real({x})")
        im = comp.emit("imag", part, f"imag({x})")
        ng = comp.emit("neg", part, f"negate({im})")
        r = comp.emit("complex", out, f"complex({re}, {ng})")
    elif prim in _UNARY:
      r = comp.emit(prim, out, f"{_UNARY[prim]}({read(ins[0])})")
    elif prim == "convert_element_type":
      x = read(ins[0])
      r = x if ins[0].aval.dtype == out.dtype else comp.emit(prim, out, f"convert({x})")
    elif prim == "broadcast_in_dim":
      r = comp.emit(prim, out, f"broadcast({read(ins[0])}), "
                    f"dimensions={_dims(params['broadcast_dimensions'])}")
    elif prim in ("reshape", "squeeze", "expand_dims"):
      r = comp.emit(prim, out, f"reshape({read(ins[0])})")
    elif prim == "transpose":
      r = comp.emit(prim, out, f"transpose({read(ins[0])}), "
                    f"dimensions={_dims(params['permutation'])}")
    elif prim == "select_n":
      cases = [read(v, out) for v in ins[1:]]
      pred = read(ins[0])
      if len(cases) != 2:
        raise NotImplementedError("pyjax: HLO text of select_n with more than two cases")
      r = comp.emit(prim, out, f"select({pred}, {cases[1]}, {cases[0]})")
    elif prim in _REDUCE:
      op, init = _REDUCE[prim]
      region = _region(comp.p, op, out.dtype)
      c = comp.constant(init, out.update(shape=()))
      r = comp.emit(prim, out, f"reduce({read(ins[0])}, {c}), "
                    f"dimensions={_dims(params['axes'])}, to_apply={region}")
    elif prim == "dot_general":
      (lc, rc), (lb, rb) = params["dimension_numbers"]
      attrs = []
      if lb:
        attrs.append(f"lhs_batch_dims={_dims(lb)}")
      attrs.append(f"lhs_contracting_dims={_dims(lc)}")
      if rb:
        attrs.append(f"rhs_batch_dims={_dims(rb)}")
      attrs.append(f"rhs_contracting_dims={_dims(rc)}")
      r = comp.emit(prim, out, f"dot({read(ins[0])}, {read(ins[1])}), " + ", ".join(attrs))
    elif prim == "iota":
      r = comp.emit(prim, out, f"iota(), iota_dimension={int(params['dimension'])}")
    elif prim == "concatenate":
      ops = ", ".join(read(v) for v in ins)
      r = comp.emit(prim, out, f"concatenate({ops}), dimensions={{{int(params['dimension'])}}}")
    elif prim == "slice":
      starts, limits = params["start_indices"], params["limit_indices"]
      strides = params.get("strides") or (1,) * len(starts)
      spec = ", ".join(f"[{s}:{l}:{t}]" for s, l, t in zip(starts, limits, strides))
      r = comp.emit(prim, out, f"slice({read(ins[0])}), slice={{{spec}}}")
    elif prim == "stop_gradient":
      r = read(ins[0])
    else:
      raise NotImplementedError(f"pyjax: no HLO text for the primitive {prim!r}")
    env[outs[0]] = r
  return [read(v) for v in jaxpr.outvars]


def _array_constant(comp, value, aval):
  arr = np.asarray(value)
  flat = ", ".join(_literal_text(v, arr.dtype) for v in arr.reshape(-1))
  return comp.emit("constant", aval, f"constant({{{flat}}})")


def _integer_pow(comp, prim, x, out, y):
  if y == 0:
    return comp.constant(1, out)
  acc, base, k = None, x, abs(y)
  while k:
    if k & 1:
      acc = base if acc is None else comp.emit(prim, out, f"multiply({acc}, {base})")
    k >>= 1
    if k:
      base = comp.emit(prim, out, f"multiply({base}, {base})")
  if y < 0:
    one = comp.constant(1, out)
    acc = comp.emit(prim, out, f"divide({one}, {acc})")
  return acc


class HloModule:
  """``compiler_ir(dialect="hlo")`` of a lowered pyjax program; ``as_hlo_text()`` is its
  HLO text (see the module docstring)."""

  def __init__(self, text):
    self._text = text

  def as_hlo_text(self, print_large_constants=False):
    return self._text

  to_string = as_hlo_text

  def __str__(self):
    return self._text


def jaxpr_to_hlo_text(closed, name, arg_names=None):
  """The HLO text of ``closed`` (a ClosedJaxpr) as module ``jit_<name>``."""
  jaxpr = closed.jaxpr
  printer = _Printer()
  comp = _Computation(printer)
  args = []
  for i, v in enumerate(jaxpr.invars):
    base = arg_names[i] if arg_names and i < len(arg_names) and arg_names[i] else f"Arg_{i}"
    base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base)
    n = printer.name(base)
    comp.lines.append([n, f"{_shape_str(v.aval)} parameter({i})"])
    args.append(n)
  cenv = {}
  for cv, c in zip(jaxpr.constvars, closed.consts):
    cenv[cv] = comp.constant(c, cv.aval) if np.ndim(c) == 0 else _array_constant(comp, c, cv.aval)
  outs = _emit_jaxpr(comp, jaxpr, cenv, args)
  out_avals = [v.aval for v in jaxpr.outvars]
  if len(outs) == 1:
    root = outs[0]
  else:
    root = printer.name("tuple")
    types = ", ".join(_shape_str(a) for a in out_avals)
    comp.lines.append([root, f"({types}) tuple({', '.join(outs)})"])
  # the root instruction is the last one computing the result (a parameter may be it)
  idx = max(i for i, (n, _) in enumerate(comp.lines) if n == root)
  body = []
  for i, (n, t) in enumerate(comp.lines):
    body.append(f"  {'ROOT ' if i == idx else ''}{n} = {t}")
  if idx != len(comp.lines) - 1:   # the result is not the last line: move it last
    body.append(body.pop(idx))
  in_types = ", ".join(_shape_str(v.aval) for v in jaxpr.invars)
  out_types = ", ".join(_shape_str(a) for a in out_avals)
  if len(out_avals) != 1:
    out_types = f"({out_types})"
  name = str(name).replace("<", "_").replace(">", "")   # <lambda> -> _lambda, as JAX
  mod_name = "jit_" + "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
  entry = printer.name("main")
  return (f"HloModule {mod_name}, entry_computation_layout={{({in_types})->{out_types}}}\n\n"
          + "".join(r + "\n" for r in printer.regions)
          + f"ENTRY {entry} {{\n" + "\n".join(body) + "\n}\n\n")
