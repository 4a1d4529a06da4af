"""The CPU compiler's program representation: a flat SSA list of nodes.

A ``Program`` is built from a ``ClosedJaxpr`` with nested ``jit`` / ``custom_jvp_call`` /
``custom_vjp_call`` equations inlined (their bodies are ordinary equations of the
enclosing program).  Values are ``Value`` objects (shape, dtype, producer); scalar
literals are ``Lit`` objects; non-scalar literals and closed-over constants are constant
values holding a NumPy array.  Every pass of the compiler works on this form; the jaxpr
itself is never mutated.
"""
from __future__ import annotations

import itertools

import numpy as np

from pyjax._src.backends.cpu.compiler import primitive_table

INPUT, CONST, NODE = "input", "const", "node"

# higher-order primitives whose body is the primal computation: inlined
_INLINE_CALLS = primitive_table.INLINE_CALLS   # name -> the param holding the inlined jaxpr


class Value:
  """One SSA value: an array of ``shape`` and ``dtype``."""
  __slots__ = ("id", "shape", "dtype", "kind", "producer", "const", "index")
  _ids = itertools.count()

  def __init__(self, shape, dtype, kind=NODE, producer=None, const=None):
    self.id = next(Value._ids)
    self.shape = tuple(int(d) for d in shape)
    self.dtype = np.dtype(dtype)
    self.kind = kind
    self.producer = producer
    self.const = const
    self.index = None   # position among the program inputs (kind == INPUT)

  @property
  def size(self):
    n = 1
    for d in self.shape:
      n *= d
    return n

  @property
  def ndim(self):
    return len(self.shape)

  def __repr__(self):
    return f"%{self.id}:{self.dtype.name}{list(self.shape)}"


class Lit:
  """A scalar literal (0-d) of ``dtype``; ``value`` is a NumPy scalar of that dtype."""
  __slots__ = ("value", "dtype")
  shape = ()
  size = 1
  ndim = 0
  kind = "lit"

  def __init__(self, value, dtype):
    self.dtype = np.dtype(dtype)
    self.value = np.asarray(value, self.dtype)[()]

  def __repr__(self):
    return f"{self.value!r}:{self.dtype.name}"

  def key(self):
    """A hashable key that tells apart -0.0/+0.0 and NaN payloads."""
    return (self.dtype.str, np.asarray(self.value).tobytes())


class Node:
  """One primitive application.  ``prim`` is the primitive's name; ``primitive`` the
  Primitive object (for the NumPy fallback of higher-order primitives)."""
  __slots__ = ("prim", "params", "ins", "outs", "primitive", "effects")

  def __init__(self, prim, params, ins, outs, primitive=None, effects=()):
    self.prim = prim
    self.params = params
    self.ins = list(ins)
    self.outs = list(outs)
    self.primitive = primitive
    self.effects = effects
    for o in self.outs:
      o.producer = self

  @property
  def out(self):
    return self.outs[0]

  def __repr__(self):
    ps = " ".join(f"{k}={v}" for k, v in self.params.items()
                  if k not in ("sharding", "out_sharding"))
    return (f"{', '.join(map(repr, self.outs))} = {self.prim}"
            f"{'[' + ps + ']' if ps else ''} {' '.join(map(repr, self.ins))}")


class Program:
  """``inputs`` (Values of kind INPUT), ``nodes`` (topologically ordered), ``outputs``
  (Values or Lits)."""

  def __init__(self, inputs, nodes, outputs):
    self.inputs = inputs
    self.nodes = nodes
    self.outputs = outputs

  def __str__(self):
    lines = [f"inputs: {', '.join(map(repr, self.inputs))}"]
    lines += [f"  {n!r}" for n in self.nodes]
    lines.append(f"outputs: {', '.join(map(repr, self.outputs))}")
    return "\n".join(lines)


def _const_array(value, aval):
  data = value._data() if hasattr(value, "_data") else value
  arr = np.asarray(data, dtype=aval.dtype)
  if arr.shape != tuple(aval.shape):
    arr = np.broadcast_to(arr, aval.shape)
  return np.require(arr, requirements=["C", "A"])


def from_closed_jaxpr(closed):
  """The ``Program`` of ``closed`` (a ClosedJaxpr), nested calls inlined."""
  jaxpr = closed.jaxpr
  inputs = []
  for i, v in enumerate(jaxpr.invars):
    val = Value(v.aval.shape, v.aval.dtype, INPUT)
    val.index = i
    inputs.append(val)
  nodes = []
  env = {}
  _bind_consts(env, jaxpr.constvars, closed.consts)
  for v, val in zip(jaxpr.invars, inputs):
    env[v] = val
  outs = _convert(jaxpr, env, nodes)
  return Program(inputs, nodes, outs)


def _bind_consts(env, constvars, consts):
  for v, c in zip(constvars, consts):
    arr = _const_array(c, v.aval)
    if arr.shape == ():
      env[v] = Lit(arr[()], arr.dtype)
    else:
      env[v] = Value(arr.shape, arr.dtype, CONST, const=arr)


def _read(env, v):
  if type(v).__name__ == "Literal":
    arr = _const_array(v.val, v.aval)
    if arr.shape == ():
      return Lit(arr[()], arr.dtype)
    return Value(arr.shape, arr.dtype, CONST, const=arr)
  return env[v]


def _convert(jaxpr, env, nodes):
  from pyjax._src.backends.cpu import pred_mul
  from pyjax._src.backends.cpu import reciprocal_div
  pred_of = {}   # XLA's select for a product with a converted boolean (pred_mul.py)
  recip_of = {}  # XLA: a / broadcast(b) and a / sqrt(b) as products (reciprocal_div.py)
  for eqn in jaxpr.eqns:
    name = eqn.primitive.name
    reciprocal_div.note(eqn, recip_of)
    rd = reciprocal_div.match(eqn, recip_of)
    if rd is not None:
      o, = eqn.outvars
      e = _read(env, rd[1])
      if isinstance(e, Lit):
        r = Lit(reciprocal_div.reciprocal(e.value, o.aval.dtype)[()], o.aval.dtype)
      else:
        one = Lit(np.ones((), o.aval.dtype)[()], o.aval.dtype)
        r = Value(e.shape, e.dtype)
        nodes.append(Node("div", {}, [one, e], [r]))
      out = Value(o.aval.shape, o.aval.dtype)
      p = reciprocal_div.bool_numerator(rd[0], o, pred_of)
      if p is not None:
        zero = Lit(np.zeros((), o.aval.dtype)[()], o.aval.dtype)
        nodes.append(Node("select_n", {}, [_read(env, p), zero, r], [out]))
      else:
        nodes.append(Node("mul", {}, [_read(env, rd[0]), r], [out]))
      env[o] = out
      continue
    pred_mul.note_convert(eqn, pred_of)
    pm = pred_mul.match(eqn, pred_of)
    if pm is not None:
      o, = eqn.outvars
      out = Value(o.aval.shape, o.aval.dtype)
      zero = Lit(np.zeros((), o.aval.dtype)[()], o.aval.dtype)
      nodes.append(Node("select_n", {}, [_read(env, pm[0]), zero, _read(env, pm[1])], [out]))
      env[o] = out
      continue
    ins = [_read(env, v) for v in eqn.invars]
    body_param = _INLINE_CALLS.get(name)
    body = eqn.params.get(body_param) if body_param else None
    if body is not None and type(body).__name__ == "ClosedJaxpr" and not eqn.effects:
      inner = body.jaxpr
      sub = {}
      _bind_consts(sub, inner.constvars, body.consts)
      for v, x in zip(inner.invars, ins):
        sub[v] = x
      res = _convert(inner, sub, nodes)
      for v, r in zip(eqn.outvars, res):
        env[v] = r
      continue
    outs = [Value(v.aval.shape, v.aval.dtype) for v in eqn.outvars]
    nodes.append(Node(name, dict(eqn.params), ins, outs, eqn.primitive, eqn.effects))
    for v, o in zip(eqn.outvars, outs):
      env[v] = o
  return [_read(env, v) for v in jaxpr.outvars]


def strides(shape):
  """Row-major (C-contiguous) strides of ``shape``, in elements (a list)."""
  s = [1] * len(shape)
  for i in range(len(shape) - 2, -1, -1):
    s[i] = s[i + 1] * shape[i + 1]
  return s


def dot_dims(node):
  """A ``dot_general`` node's dimensions: (lhs contracting, rhs contracting, lhs batch,
  rhs batch, lhs free, rhs free), each a list of axes."""
  (lc, rc), (lb, rb) = node.params["dimension_numbers"]
  lhs, rhs = node.ins
  lf = [i for i in range(lhs.ndim) if i not in lb and i not in lc]
  rf = [i for i in range(rhs.ndim) if i not in rb and i not in rc]
  return list(lc), list(rc), list(lb), list(rb), lf, rf
