"""Program simplification: the rewrites every later stage relies on.

``simplify(program)`` runs, until nothing changes (at most a few rounds):

- canonicalization: ``add_any`` becomes ``add``; identities (``stop_gradient``, ``copy``,
  ``optimization_barrier``, ``device_put``) disappear;
- algebraic simplification of the patterns transformations produce: adding zeros
  (``add_any`` of zeros, integer ``+ 0``, float ``+ -0.0``), ``* 1``, ``/ 1``, ``- 0``,
  ``neg(neg x)``, no-op converts/reshapes/transposes/broadcasts, chains of lossless
  ``convert_element_type``, ``transpose`` of ``transpose``, ``reshape`` of ``reshape``,
  ``broadcast_in_dim`` of ``broadcast_in_dim``, broadcasts of scalars feeding elementwise
  operations (the scalar is used directly), single-case ``select_n``, ``transpose``
  feeding ``dot_general`` (folded into its dimension numbers), ``transpose`` of a
  ``dot_general`` that swaps its free dimensions (the operands are swapped instead);
- constant folding with the eager NumPy implementations (so folded values are exactly what
  the NumPy backend computes), for results no bigger than their inputs or tiny;
- common subexpression elimination (same primitive, params and operands);
- dead code elimination (effectful equations are kept).

Every rewrite is exact: results are bit-identical to running the original program on the
NumPy backend (``x + 0.0`` is *not* folded for floats: ``-0.0 + 0.0`` is ``+0.0``).
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.compiler import primitive_table as _table
from pyjax._src.backends.cpu.compiler.ir import CONST, Lit, Node, Value

_FOLD_SMALL = 1024

# Elementwise primitives whose operands may be 0-d (implicitly broadcast).
ELEMENTWISE = _table.SCALAR_OPERANDS


def _impls():
  from pyjax._src.backends.cpu import eager as cpu_eager
  from pyjax._src.backends.cpu.numpy_tier import native
  # folded transcendental constants get the bits the tiers compute (driver.py)
  return {k: native.impl(k, v) for k, v in cpu_eager.impls.items()}


def is_zero(x, any_sign=True):
  """Whether ``x`` is known to be all zeros (+0.0 only unless ``any_sign``)."""
  if type(x) is Lit:
    v = x.value
    if v != 0:
      return False
    return any_sign or x.dtype.kind not in "fcV" or not np.signbit(np.asarray(v, np.float64))
  if x.kind == CONST:
    c = x.const
    if c.size > _FOLD_SMALL or not np.all(c == 0):
      return False
    return any_sign or c.dtype.kind not in "fV" or not np.any(np.signbit(c.astype(np.float64)))
  p = x.producer
  if p is not None and p.prim == "broadcast_in_dim":
    return is_zero(p.ins[0], any_sign)
  return False


def _is_one(x):
  if type(x) is Lit:
    return x.value == 1
  if x.kind == CONST and x.const.size <= _FOLD_SMALL:
    return bool(np.all(x.const == 1))
  p = x.producer
  if p is not None and p.prim == "broadcast_in_dim":
    return _is_one(p.ins[0])
  return False


def _is_neg_zero(x):
  if type(x) is Lit and x.dtype.kind in "fV" and x.value == 0:
    return bool(np.signbit(np.asarray(x.value, np.float64)))
  return False


def _lossless(src, dst):
  """Whether every value of dtype ``src`` converts exactly to ``dst`` (and back)."""
  src, dst = np.dtype(src), np.dtype(dst)
  if src == dst:
    return True
  if src == np.bool_:
    return True
  sk, dk = src.kind, dst.kind
  if sk in "iu" and dk in "iu":
    if sk == dk:
      return dst.itemsize >= src.itemsize
    return sk == "u" and dk == "i" and dst.itemsize > src.itemsize
  if sk in "fV" and dk in "fV":
    order = {"bfloat16": 0, "float16": 0, "float32": 1, "float64": 2}
    if src.name not in order or dst.name not in order:
      return False
    return order[dst.name] > order[src.name]
  if sk in "iu" and dk == "f":
    mant = {"float32": 24, "float64": 53}.get(dst.name)
    return mant is not None and src.itemsize * 8 - (sk == "i") <= mant
  return False


def _same_kind_family(a, b, c):
  """convert(convert(x: a -> b) -> c) == convert(x: a -> c) holds when b holds every value
  of a exactly and a -> c and b -> c are the same kind of conversion."""
  a, b, c = np.dtype(a), np.dtype(b), np.dtype(c)
  if not _lossless(a, b):
    return False
  kinds = lambda d: "f" if d.kind in "fV" else ("b" if d == np.bool_ else "i")  # noqa: E731
  ka, kb, kc = kinds(a), kinds(b), kinds(c)
  if ka == kb:
    return True
  if ka == "b":
    return kc != "b"
  # int -> float (exact) -> c: same as int -> c only when c is a float
  return ka == "i" and kb == "f" and kc == "f"


class _Rewriter:
  def __init__(self):
    self.subst = {}
    self.nodes = []
    self.cse = {}
    self.changed = False

  def get(self, x):
    while type(x) is Value and x in self.subst:
      x = self.subst[x]
    return x

  def alias(self, out, x):
    """Replace every use of ``out`` by ``x`` (same shape and dtype)."""
    if type(x) is Value and x.shape == out.shape and x.dtype == out.dtype:
      self.subst[out] = x
      self.changed = True
      return True
    if type(x) is Lit and out.shape == () and x.dtype == out.dtype:
      self.subst[out] = x
      self.changed = True
      return True
    return False

  def emit(self, node):
    key = _cse_key(node)
    if key is not None:
      hit = self.cse.get(key)
      if hit is not None:
        for o, h in zip(node.outs, hit.outs):
          self.subst[o] = h
        self.changed = True
        return
      self.cse[key] = node
    self.nodes.append(node)


def _param_key(v):
  if isinstance(v, (list, tuple)):
    return tuple(_param_key(x) for x in v)
  if isinstance(v, dict):
    return tuple(sorted((k, _param_key(x)) for k, x in v.items()))
  if isinstance(v, np.ndarray):
    return ("nd", v.dtype.str, v.shape, v.tobytes())
  hash(v)
  return v


def _cse_key(node):
  if node.effects or node.prim in ("rng_uniform", "rng_bit_generator"):
    return None
  try:
    pk = _param_key(node.params)
  except TypeError:
    return None
  ins = tuple(x.key() if type(x) is Lit else x.id for x in node.ins)
  # the output avals too: an elementwise op broadcasts 0-d operands, so div(s, t) of two
  # scalars can be f32[] in one equation and f32[1] in another
  return (node.prim, pk, ins, tuple((o.shape, o.dtype) for o in node.outs))


# user code: never run at compile time, even on constant operands (XLA never folds a
# callback either; equinox's error checks in untaken branches raised and logged here)
_NEVER_FOLD = frozenset({"pure_callback", "io_callback", "debug_callback", "ffi_call"})


def _try_fold(rw, node, impls):
  if node.effects or len(node.outs) != 1 or node.prim in _NEVER_FOLD:
    return False
  if not all(type(x) is Lit or x.kind == CONST for x in node.ins):
    return False
  impl = impls.get(node.prim)
  if impl is None:
    return False
  out = node.out
  biggest = max([x.size for x in node.ins] + [0])
  if out.size > max(_FOLD_SMALL, biggest):
    return False
  args = [np.asarray(x.value, x.dtype) if type(x) is Lit else x.const for x in node.ins]
  try:
    with np.errstate(all="ignore"):
      res = impl(*args, **node.params)
  except Exception:  # noqa: BLE001  -- leave it to run time (and its error)
    return False
  res = np.asarray(res)
  if res.dtype != out.dtype:
    res = res.astype(out.dtype)
  if res.shape != out.shape:
    return False
  if res.shape == ():
    rw.subst[out] = Lit(res[()], out.dtype)
  else:
    rw.subst[out] = Value(res.shape, res.dtype, CONST, const=np.require(res, requirements=["C", "A"]))
  rw.changed = True
  return True


def _rewrite(rw, node, impls):
  """Apply one rewrite to ``node`` (its operands already substituted).  Returns True when
  the node was replaced (nothing to emit), else False (emit ``node``)."""
  p, ins, prm = node.prim, node.ins, node.params
  if p in _table.IDENTITY and len(ins) == 1:
    return rw.alias(node.out, ins[0])
  if p in _table.BARRIER:
    for o, x in zip(node.outs, ins):
      rw.subst[o] = x
    rw.changed = True
    return True
  if len(node.outs) != 1:
    return False
  out = node.out
  if p == "add_any":
    node.prim = "add"
    rw.changed = True
    a, b = ins
    if is_zero(b) and rw.alias(out, a):
      return True
    if is_zero(a) and rw.alias(out, b):
      return True
    return False
  if p == "add":
    a, b = ins
    intlike = out.dtype.kind in "iub"
    if (is_zero(b) if intlike else _is_neg_zero(b)) and rw.alias(out, a):
      return True
    if (is_zero(a) if intlike else _is_neg_zero(a)) and rw.alias(out, b):
      return True
  elif p == "sub":
    if is_zero(ins[1]) and rw.alias(out, ins[0]):
      return True
  elif p == "mul":
    a, b = ins
    if _is_one(b) and rw.alias(out, a):
      return True
    if _is_one(a) and rw.alias(out, b):
      return True
  elif p == "div":
    if out.dtype.kind in "fV" and _is_one(ins[1]) and rw.alias(out, ins[0]):
      return True
    if out.dtype.kind in "iu" and _is_one(ins[1]) and rw.alias(out, ins[0]):
      return True
  elif p == "neg":
    x = ins[0]
    if type(x) is Value and x.producer is not None and x.producer.prim == "neg":
      if rw.alias(out, x.producer.ins[0]):
        return True
  elif p == "convert_element_type":
    x = ins[0]
    if x.dtype == out.dtype and rw.alias(out, x):
      return True
    if type(x) is Value and x.producer is not None and x.producer.prim == "convert_element_type":
      src = x.producer.ins[0]
      if src.dtype == out.dtype and _lossless(src.dtype, x.dtype) and rw.alias(out, src):
        return True
      if _same_kind_family(src.dtype, x.dtype, out.dtype):
        node.ins = [src]
        rw.changed = True
  elif p == "integer_pow":
    if prm.get("y") == 1 and rw.alias(out, ins[0]):
      return True
  elif p == "transpose":
    perm = tuple(prm["permutation"])
    x = ins[0]
    if perm == tuple(range(len(perm))) and rw.alias(out, x):
      return True
    if type(x) is Value and x.producer is not None and x.producer.prim == "transpose":
      inner = tuple(x.producer.params["permutation"])
      comp = tuple(inner[i] for i in perm)
      src = x.producer.ins[0]
      if comp == tuple(range(len(comp))):
        if rw.alias(out, src):
          return True
      else:
        node.ins = [src]
        node.params = dict(prm, permutation=comp)
        rw.changed = True
  elif p == "reshape":
    x = ins[0]
    if prm.get("dimensions") is None:
      if x.shape == out.shape and rw.alias(out, x):
        return True
      if (type(x) is Value and x.producer is not None and x.producer.prim == "reshape"
          and x.producer.params.get("dimensions") is None):
        node.ins = [x.producer.ins[0]]
        rw.changed = True
  elif p == "squeeze":
    if not prm.get("dimensions") and rw.alias(out, ins[0]):
      return True
  elif p == "broadcast_in_dim":
    x = ins[0]
    dims = tuple(prm["broadcast_dimensions"])
    if x.shape == out.shape and dims == tuple(range(len(dims))) and rw.alias(out, x):
      return True
    if (type(x) is Value and x.producer is not None and x.producer.prim == "broadcast_in_dim"
        and x.producer.params.get("sharding") is None):
      inner = tuple(x.producer.params["broadcast_dimensions"])
      node.ins = [x.producer.ins[0]]
      node.params = dict(prm, broadcast_dimensions=tuple(dims[d] for d in inner))
      rw.changed = True
  elif p == "dot_general":
    _fold_dot_transposes(rw, node)
  elif p in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
             "reduce_or", "reduce_xor"):
    if not prm.get("axes") and rw.alias(out, ins[0]):
      return True
    if type(ins[0]) is Value and all(ins[0].shape[a] == 1 for a in prm["axes"]):
      # XLA drops a reduction over size-1 axes: the element itself (a -0 stays -0,
      # where a fold from the identity would give +0); the eager rules do the same
      node.prim = "reshape"
      node.params = {"new_sizes": tuple(out.shape), "dimensions": None, "sharding": None}
      rw.changed = True
  elif p == "select_n":
    if len(ins) == 2 and type(ins[0]) is Lit:
      pick = ins[1 + int(bool(ins[0].value))] if ins[0].dtype == np.bool_ else None
      if pick is not None and rw.alias(out, pick):
        return True
    if len(ins) >= 2 and all(x is ins[1] for x in ins[1:]) and rw.alias(out, ins[1]):
      return True
  elif p == "reduce_precision":
    finfo = _float_bits(out.dtype)
    if finfo is not None and prm["exponent_bits"] >= finfo[0] and prm["mantissa_bits"] >= finfo[1]:
      if rw.alias(out, ins[0]):
        return True
  if p in ELEMENTWISE and len(ins) > 1 and any(
      type(x) is Value and x.shape == out.shape for x in ins):
    new = []
    for x in ins:
      q = x.producer if type(x) is Value else None
      if (q is not None and q.prim == "broadcast_in_dim" and q.ins[0].shape == ()
          and x.shape == out.shape):
        new.append(q.ins[0])
        rw.changed = True
      else:
        new.append(x)
    node.ins = new
  return False


def _fold_dot_transposes(rw, node):
  """``dot_general(transpose(x), ...)`` reads ``x`` with remapped dimension numbers (BLAS
  takes either orientation), when the operand's free dimensions keep their order (the
  result's layout depends on it)."""
  (lc, rc), (lb, rb) = node.params["dimension_numbers"]
  dims = [[lc, lb], [rc, rb]]
  ins = list(node.ins)
  for side in (0, 1):
    x = ins[side]
    q = x.producer if type(x) is Value else None
    if q is None or q.prim != "transpose":
      continue
    perm = tuple(q.params["permutation"])
    c, b = dims[side]
    free = [perm[i] for i in range(len(perm)) if i not in c and i not in b]
    if free != sorted(free):
      continue
    dims[side] = [tuple(perm[i] for i in c), tuple(perm[i] for i in b)]
    ins[side] = q.ins[0]
    rw.changed = True
  if ins != node.ins:
    node.ins = ins
    node.params = dict(node.params, dimension_numbers=((dims[0][0], dims[1][0]),
                                                       (dims[0][1], dims[1][1])))


def _swap_transposed_dots(program):
  """``transpose(dot_general(a, b))`` that only swaps the result's free dimensions (lhs
  free after rhs free) becomes ``dot_general(b, a)`` when the product has no other use:
  the product is written in the layout its consumers read (the weight gradient of a dense
  layer, ``x.T @ g`` traced as ``transpose(dot(g, x))``, is otherwise read back with a
  stride).  Each element is the same sum of the same products in the same order."""
  uses = {}
  for node in program.nodes:
    for x in node.ins:
      if type(x) is Value:
        uses[x] = uses.get(x, 0) + 1
  for x in program.outputs:
    if type(x) is Value:
      uses[x] = uses.get(x, 0) + 2
  changed = False
  for node in program.nodes:
    if node.prim != "transpose" or len(node.ins) != 1:
      continue
    x = node.ins[0]
    q = x.producer if type(x) is Value else None
    if q is None or q.prim != "dot_general" or len(q.outs) != 1 or uses.get(x) != 1:
      continue
    a, b = q.ins
    if type(a) is not Value or type(b) is not Value:
      continue
    (lc, rc), (lb, rb) = q.params["dimension_numbers"]
    nb = len(lb)
    fl, fr = a.ndim - len(lc) - nb, b.ndim - len(rc) - nb
    if fl == 0 or fr == 0:
      continue
    want = (tuple(range(nb)) + tuple(range(nb + fl, nb + fl + fr))
            + tuple(range(nb, nb + fl)))
    if tuple(node.params["permutation"]) != want:
      continue
    prm = dict(q.params, dimension_numbers=((tuple(rc), tuple(lc)), (tuple(rb), tuple(lb))))
    prec = prm.get("precision")
    if isinstance(prec, tuple) and len(prec) == 2:
      prm["precision"] = (prec[1], prec[0])
    node.prim, node.primitive, node.params, node.ins = "dot_general", q.primitive, prm, [b, a]
    changed = True
  return changed


def _float_bits(d):
  return {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23),
          "float64": (11, 52)}.get(np.dtype(d).name)


def _dce(program):
  live = {x for x in program.outputs if type(x) is Value}
  keep = []
  for node in reversed(program.nodes):
    if node.effects or any(o in live for o in node.outs):
      keep.append(node)
      live.update(x for x in node.ins if type(x) is Value)
  keep.reverse()
  changed = len(keep) != len(program.nodes)
  program.nodes = keep
  return changed


def _split_pairs(program):
  """Two-output elementwise primitives become one node per output (the code generator
  handles single-output nodes; the C compiler merges the shared work back)."""
  nodes = []
  for n in program.nodes:
    if n.prim == "threefry2x32" and len(n.outs) == 2 and not n.effects:
      for i, o in enumerate(n.outs):
        nodes.append(Node(f"threefry2x32_{i}", {}, n.ins, [o], n.primitive))
    elif n.prim == "iota_2x32_shape" and len(n.outs) == 2:
      shape = tuple(n.params["shape"])
      idx = Value(shape, np.uint64)
      nodes.append(Node("iota", {"dtype": np.dtype(np.uint64), "shape": shape,
                                 "dimension": 0, "sharding": None}, [], [idx]) if len(shape) == 1
                   else _flat_iota(shape, idx, nodes))
      hi, lo = n.outs
      sh = Value(shape, np.uint64)
      nodes.append(Node("shift_right_logical", {}, [idx, Lit(32, np.uint64)], [sh]))
      nodes.append(Node("convert_element_type", {"new_dtype": np.dtype(np.uint32),
                                                 "weak_type": False, "sharding": None}, [sh], [hi]))
      nodes.append(Node("convert_element_type", {"new_dtype": np.dtype(np.uint32),
                                                 "weak_type": False, "sharding": None}, [idx], [lo]))
    else:
      nodes.append(n)
  program.nodes = [n for n in nodes if n is not None]


def _flat_iota(shape, out, nodes):
  """Row-major flat index of ``shape`` (uint64): sum of iota(d) * stride(d)."""
  acc = None
  stride = 1
  for d in reversed(range(len(shape))):
    io = Value(shape, np.uint64)
    nodes.append(Node("iota", {"dtype": np.dtype(np.uint64), "shape": shape, "dimension": d,
                               "sharding": None}, [], [io]))
    term = io
    if stride != 1:
      term = Value(shape, np.uint64)
      nodes.append(Node("mul", {}, [io, Lit(stride, np.uint64)], [term]))
    if acc is None:
      acc = term
    else:
      nxt = Value(shape, np.uint64) if d else out
      nodes.append(Node("add", {}, [acc, term], [nxt]))
      acc = nxt
    stride *= shape[d]
  if acc is not out:
    nodes.append(Node("convert_element_type", {"new_dtype": np.dtype(np.uint64),
                                               "weak_type": False, "sharding": None}, [acc], [out]))
  return None


def simplify(program, rounds=4):
  """Simplify ``program`` in place (see the module docstring); returns it."""
  impls = _impls()
  _split_pairs(program)
  for _ in range(rounds):
    swapped = _swap_transposed_dots(program)
    rw = _Rewriter()
    for node in program.nodes:
      node.ins = [rw.get(x) for x in node.ins]
      if _rewrite(rw, node, impls):
        continue
      node.ins = [rw.get(x) for x in node.ins]
      if _try_fold(rw, node, impls):
        continue
      rw.emit(node)
    program.nodes = rw.nodes
    program.outputs = [rw.get(x) for x in program.outputs]
    changed = _dce(program) or rw.changed or swapped
    if not changed:
      break
  return program


__all__ = ["simplify", "ELEMENTWISE", "is_zero"]
