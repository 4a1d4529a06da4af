"""Pallas kernels lowered to Triton source (issue 22, Pallas on GPU).

``lower(pallas_call equation)`` turns the *stateful* kernel jaxpr a ``pallas_call`` carries
(``pallas/stateful.py``: Ref variables, ``get``/``swap``/``addupdate``/``program_id``) and its
grid mapping into the source of one ``@triton.jit`` function:

- one Triton program per grid point of the leading grid axes on which every output's block
  index depends (``tl.program_id(axis)``, at most three); the trailing axes along which an
  output block is revisited (k-blocked matmul) become ``for`` loops inside the program, so
  scratch buffers and revisited outputs carry across them in registers, in the grid's
  row-major order (pyjax's and JAX's interpret-mode order);
- each operand block is a pointer plus offsets: the BlockSpec index map is lowered to scalar
  code at the top of the innermost body, an access ``ref[idx]`` becomes
  ``tl.load``/``tl.store`` on ``ptr + sum(pos_d * stride_d)`` with ``pos_d = block start +
  tl.arange`` (``pl.ds`` starts, static slices and integer indices included) and a mask
  ``pos_d < dim`` on dimensions whose size is not a multiple of the block (ragged edges,
  ``other=0``);
- scratch buffers are register tensors (initialised to the uninitialized value pyjax's
  interpret mode uses: NaN, the integer minimum);
- elementwise operations, ``tl.sum``/``tl.max``/``tl.min`` reductions, ``tl.dot`` for
  ``dot_general`` (f32 accumulation; ``input_precision`` as JAX's Triton lowering picks it:
  ``"tf32"`` for the DEFAULT/HIGH precisions of float32 operands, ``"ieee"`` for HIGHEST),
  ``pl.when``/``cond`` -> ``if``, ``fori_loop`` (``scan``) -> ``for ... in range``,
  ``while`` -> ``while``.

A primitive without a rule raises JAX's ``NotImplementedError`` ("Unimplemented primitive
in Pallas Triton lowering: ..."); block shapes whose size is not a power of two raise JAX's
``ValueError``.  ``triton`` itself is imported only by ``compile_ptx``/``interpret``/
``launch``, never by ``lower``.

Differences from JAX: JAX's Triton lowering rejects scratch buffers (``scratch_shapes``);
here they are register tensors, which carry across the in-program loop axes but not across
programs (a kernel relying on scratch surviving from one *launch* axis grid point to the
next differs).  Scalar prefetch, ``input_output_aliases``, Triton
atomics, ``Element`` block dimensions and batched ``dot_general`` are not lowered
(``NotImplementedError``); ``ref.at`` views and Triton ``load``/``store`` with ``mask``/
``other`` (``masked_load``/``masked_swap``) are.
"""
from __future__ import annotations

import math
import os
import tempfile

import numpy as np

from pyjax._src import core

_TL_DTYPES = {"float32": "tl.float32", "float16": "tl.float16", "bfloat16": "tl.bfloat16",
              "float64": "tl.float64", "int8": "tl.int8", "int16": "tl.int16",
              "int32": "tl.int32", "int64": "tl.int64", "uint8": "tl.uint8",
              "uint16": "tl.uint16", "uint32": "tl.uint32", "uint64": "tl.uint64",
              "bool": "tl.int1"}
_SIG_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
               "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
               "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1"}


def _unimplemented(name):
  return NotImplementedError(
      f"Unimplemented primitive in Pallas Triton lowering: {name}. Please file an issue at"
      " https://github.com/jax-ml/jax/issues/new/choose.")


def _tl_dtype(dtype):
  name = np.dtype(dtype).name if str(dtype) != "bfloat16" else "bfloat16"
  try:
    return _TL_DTYPES[name]
  except KeyError:
    raise NotImplementedError(f"dtype {dtype} in the Pallas Triton lowering") from None


def _check_size(shape):
  """JAX's check: a power-of-two size (so every dimension is one: ``tl.arange``)."""
  size = math.prod(shape)
  if size & (size - 1):
    raise ValueError(
        "The Pallas Triton lowering currently requires that all operations have array "
        "arguments and results whose size is a power of 2. Encountered an array of "
        f"shape {tuple(shape)}")


class _MemRef:
  """An operand/output block in global memory: pointer name, array shape, the block's
  per-dimension start expressions (None: not yet computed), squeezed dims, block sizes."""

  def __init__(self, ptr, array_shape, block_sizes, squeezed):
    self.ptr, self.array_shape = ptr, tuple(array_shape)
    self.block_sizes, self.squeezed = tuple(block_sizes), tuple(squeezed)
    self.starts = None


class _RegRef:
  """A scratch buffer held in registers: the Python variable holding its value."""

  def __init__(self, name, shape, dtype):
    self.name, self.shape, self.dtype = name, tuple(shape), dtype


class TritonKernel:
  """The lowering's result: ``source`` (a module with one ``@triton.jit`` function
  ``name``), ``signature`` (parameter name -> Triton type), ``grid`` (the launch grid),
  the operands' and outputs' shapes and dtypes in parameter order."""

  def __init__(self, source, name, signature, grid, in_avals, out_avals):
    self.source, self.name, self.signature = source, name, signature
    self.grid, self.in_avals, self.out_avals = tuple(grid), in_avals, out_avals

  def __repr__(self):
    return f"TritonKernel({self.name}, grid={self.grid})"


class _Gen:
  def __init__(self):
    self.lines, self.depth, self.count = [], 1, 0

  def emit(self, line):
    self.lines.append("    " * self.depth + line)

  def fresh(self, prefix="v"):
    self.count += 1
    return f"{prefix}{self.count}"

  # --- values ---------------------------------------------------------------------------
  def literal(self, val, dtype):
    dt = np.dtype(dtype) if str(dtype) != "bfloat16" else dtype
    v = np.asarray(val)
    if v.shape != ():
      raise NotImplementedError("array constants in the Pallas Triton lowering")
    v = v.item()
    if isinstance(v, bool):
      v = int(v)
    elif isinstance(v, float):
      v = repr(v) if math.isfinite(v) else f'float("{v}")'
    return f"tl.full([], {v}, {_tl_dtype(dt)})"

  def read(self, env, v):
    if type(v) is core.Literal:
      return self.literal(v.val, v.aval.dtype)
    return env[v]

  def bind(self, expr, prefix="v"):
    name = self.fresh(prefix)
    self.emit(f"{name} = {expr}")
    return name

  # --- jaxprs ---------------------------------------------------------------------------
  def jaxpr(self, jaxpr, env):
    self.used = getattr(self, "used", set())
    for eqn in jaxpr.eqns:
      self.used.update(v for v in eqn.invars if type(v) is not core.Literal)
    self.used.update(v for v in jaxpr.outvars if type(v) is not core.Literal)
    for eqn in jaxpr.eqns:
      self.eqn(eqn, env)
    return [self.read(env, v) for v in jaxpr.outvars]

  def eqn(self, eqn, env):
    from pyjax._src.pallas import stateful
    p = eqn.primitive
    ins = eqn.invars
    if p is stateful.get_p:
      env[eqn.outvars[0]] = self.get(env[ins[0]], eqn.params["idx"],
                                     [self.read(env, v) for v in ins[1:]], eqn.outvars[0])
    elif p is stateful.swap_p:
      old = self.swap(env[ins[0]], self.read(env, ins[1]), eqn.params["idx"],
                      [self.read(env, v) for v in ins[2:]], eqn.outvars[0], add=False)
      env[eqn.outvars[0]] = old
    elif p is stateful.addupdate_p:
      self.swap(env[ins[0]], self.read(env, ins[1]), eqn.params["idx"],
                [self.read(env, v) for v in ins[2:]], None, add=True)
    elif p is stateful.masked_load_p:   # Triton-style plt.load(ref, mask=, other=)
      mask, other, dyn = stateful._masked_args([self.read(env, v) for v in ins[1:]],
                                               eqn.params)
      env[eqn.outvars[0]] = self.get(env[ins[0]], eqn.params["idx"], dyn, eqn.outvars[0],
                                     user_mask=mask, other=other)
    elif p is stateful.masked_swap_p:   # plt.store / plt.swap
      mask, _, dyn = stateful._masked_args([self.read(env, v) for v in ins[2:]], eqn.params)
      env[eqn.outvars[0]] = self.swap(env[ins[0]], self.read(env, ins[1]), eqn.params["idx"],
                                      dyn, eqn.outvars[0], add=False, user_mask=mask)
    elif p is stateful.program_id_p:
      env[eqn.outvars[0]] = self.pids[eqn.params["axis"]]
    elif p.name == "cond":
      self.cond(eqn, env)
    elif p.name == "scan":
      self.scan(eqn, env)
    elif p.name == "while":
      self.while_(eqn, env)
    elif p.name in ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                    "remat", "checkpoint"):
      sub = next((eqn.params[k] for k in ("jaxpr", "call_jaxpr", "fun_jaxpr")
                  if k in eqn.params), None)
      if sub is None:
        raise _unimplemented(p.name)
      sj = getattr(sub, "jaxpr", sub)
      consts = getattr(sub, "consts", ())
      senv = {}
      for cv, c in zip(sj.constvars, consts):
        senv[cv] = self.literal(c, np.asarray(c).dtype)
      n = len(sj.invars)
      senv.update(zip(sj.invars, [self.read(env, v) for v in ins[:n]]))
      outs = self.jaxpr(sj, senv)
      env.update(zip(eqn.outvars, outs))
    else:
      if any(isinstance(getattr(v, "aval", None), stateful.state_types.AbstractRef)
             for v in ins):
        raise _unimplemented(p.name)
      rule = _RULES.get(p.name)
      if rule is None:
        raise _unimplemented(p.name)
      args = [self.read(env, v) for v in ins]
      out = rule(self, eqn, *args, **eqn.params)
      outs = out if p.multiple_results else [out]
      for v, o in zip(eqn.outvars, outs):
        env[v] = self.bind(o)

  # --- refs -----------------------------------------------------------------------------
  def _access(self, ref, idx, dyn):
    """(offset expression, mask expression or None, result shape) of ``ref[idx]``."""
    from pyjax._src.pallas import stateful
    block = [b for b, s in zip(ref.block_sizes, ref.squeezed) if not s]
    # per ref dimension: ("i", index expr) or ("r", start expr, size), relative to the block;
    # each template (the ``ref.at`` views', then the access's) indexes the "r" dimensions
    per = [("r", "0", b) for b in block]
    for t in idx:
      if any(x is None for x in t):
        raise NotImplementedError("None in a ref index in the Pallas Triton lowering")
      live = [k for k, p in enumerate(per) if p[0] == "r"]
      n_real = sum(1 for x in t if x is not Ellipsis)
      entries = []
      for x in t:
        entries += [slice(None)] * (len(live) - n_real) if x is Ellipsis else [x]
      for k, x in zip(live, entries):
        base, size = per[k][1], per[k][2]
        if isinstance(x, slice):
          continue
        if isinstance(x, int):
          per[k] = ("i", f"{base} + {x % size}")
        elif x[0] == stateful._DYN:
          per[k] = ("i", f"{base} + {dyn[x[1]]}")
        elif x[0] == "ds":
          if x[3] not in (None, 1) or type(x[2]) is tuple:
            raise NotImplementedError("strided or traced-size pl.ds in the Pallas Triton "
                                      "lowering")
          start = dyn[x[1][1]] if type(x[1]) is tuple else str(x[1])
          per[k] = ("r", f"{base} + {start}", x[2])
        else:
          start, stop, step = slice(x[1], x[2], x[3]).indices(size)
          if step != 1:
            raise NotImplementedError("strided slices in the Pallas Triton lowering")
          per[k] = ("r", f"{base} + {start}", len(range(start, stop)))
    shape = [p[2] for p in per if p[0] == "r"]
    _check_size(shape)
    strides = [int(np.prod(ref.array_shape[k + 1:], dtype=np.int64))
               for k in range(len(ref.array_shape))]
    terms, masks, it, k = [], [], iter(per), 0
    for dim, (sq, start) in enumerate(zip(ref.squeezed, ref.starts)):
      if sq:
        terms.append(f"({start}) * {strides[dim]}")
        continue
      p = next(it)
      if p[0] == "i":
        pos = f"({start} + {p[1]})"
      else:
        sl = ", ".join(":" if j == k else "None" for j in range(len(shape)))
        pos = self.bind(f"({start} + {p[1]} + tl.arange(0, {p[2]}))[{sl}]", "pos")
        k += 1
      terms.append(f"{pos} * {strides[dim]}")
      if ref.array_shape[dim] % ref.block_sizes[dim]:
        masks.append(f"({pos} < {ref.array_shape[dim]})")
    off = self.bind(" + ".join(terms) if terms else "0", "off")
    mask = self.bind(" & ".join(masks), "mask") if masks else None
    return off, mask, shape

  def _mask(self, mask, user_mask):
    if user_mask is None:
      return mask
    return self.bind(f"{user_mask} & {mask}" if mask else user_mask, "mask")

  def get(self, ref, idx, dyn, outvar, user_mask=None, other=None):
    if isinstance(ref, _RegRef):
      if user_mask is not None:
        raise NotImplementedError("masked loads from scratch buffers in the Pallas Triton "
                                  "lowering")
      self._full_reg(ref, idx)
      return ref.name
    off, mask, shape = self._access(ref, idx, dyn)
    mask = self._mask(mask, user_mask)
    extra = f", mask={mask}, other={other if other is not None else 0}" if mask else ""
    return self.bind(f"tl.load({ref.ptr} + {off}{extra})")

  def swap(self, ref, val, idx, dyn, outvar, add, user_mask=None):
    used = outvar is not None and outvar in self.used
    if isinstance(ref, _RegRef):
      if user_mask is not None:
        raise NotImplementedError("masked stores to scratch buffers in the Pallas Triton "
                                  "lowering")
      self._full_reg(ref, idx)
      old = self.bind(ref.name) if used else None
      self.emit(f"{ref.name} = {ref.name} + {val}" if add else f"{ref.name} = {val}")
      return old
    off, mask, shape = self._access(ref, idx, dyn)
    mask = self._mask(mask, user_mask)
    extra = f", mask={mask}, other=0" if mask else ""
    old = self.bind(f"tl.load({ref.ptr} + {off}{extra})") if (used or add) else None
    new = f"{old} + {val}" if add else val
    if shape and not add:
      new = f"tl.broadcast_to({new}, {shape})"
    self.emit(f"tl.store({ref.ptr} + {off}, {new}{', mask=' + mask if mask else ''})")
    return old

  def _full_reg(self, ref, idx):
    if len(idx) != 1 or idx[0] not in ((), (Ellipsis,)):
      raise NotImplementedError(
          "scratch buffers are registers in the Pallas Triton lowering: only whole-buffer "
          "reads and writes (ref[...]) are lowered")

  # --- control flow ---------------------------------------------------------------------
  def _sub(self, closed, env_outer, args):
    sj = closed.jaxpr
    senv = {cv: self.literal(c, np.asarray(c).dtype) for cv, c in zip(sj.constvars, closed.consts)}
    senv.update(zip(sj.invars, args))
    return self.jaxpr(sj, senv)

  def _args(self, env, vs):
    return [env[v] if type(v) is not core.Literal else self.read(env, v) for v in vs]

  def cond(self, eqn, env):
    branches = eqn.params["branches"]
    idx, *ops = self._args(env, eqn.invars)
    outs = [self.fresh("c") for _ in eqn.outvars]
    for k, br in enumerate(branches):
      if k == 0:
        self.emit(f"if {idx} == 0:" if len(branches) > 1 else "if True:")
      elif k == len(branches) - 1:
        self.emit("else:")
      else:
        self.emit(f"elif {idx} == {k}:")
      self.depth += 1
      n0 = len(self.lines)
      res = self._sub(br, env, ops)
      for o, r in zip(outs, res):
        self.emit(f"{o} = {r}")
      if len(self.lines) == n0:
        self.emit("pass")
      self.depth -= 1
    env.update(zip(eqn.outvars, outs))

  def scan(self, eqn, env):
    pr = eqn.params
    nc, nk = pr["num_consts"], pr["num_carry"]
    if len(eqn.invars) != nc + nk:
      raise NotImplementedError("scan over arrays (xs/ys) in the Pallas Triton lowering")
    args = self._args(env, eqn.invars)
    consts, init = args[:nc], args[nc:]
    carry = [self.bind(x, "k") for x in init]
    self.emit(f"for _ in range({pr['length']}):")
    self.depth += 1
    res = self._sub(pr["jaxpr"], env, consts + carry)
    for c, r in zip(carry, res):
      self.emit(f"{c} = {r}")
    self.depth -= 1
    env.update(zip(eqn.outvars, carry))

  def while_(self, eqn, env):
    pr = eqn.params
    cn, bn = pr["cond_nconsts"], pr["body_nconsts"]
    args = self._args(env, eqn.invars)
    cc, bc, init = args[:cn], args[cn:cn + bn], args[cn + bn:]
    carry = [self.bind(x, "k") for x in init]
    go = self.bind(self._sub(pr["cond_jaxpr"], env, cc + carry)[0], "go")
    self.emit(f"while {go}:")
    self.depth += 1
    res = self._sub(pr["body_jaxpr"], env, bc + carry)
    for c, r in zip(carry, res):
      self.emit(f"{c} = {r}")
    self.emit(f"{go} = {self._sub(pr['cond_jaxpr'], env, cc + carry)[0]}")
    self.depth -= 1
    env.update(zip(eqn.outvars, carry))


# --- pure primitives ----------------------------------------------------------------------------
def _shape(eqn, k=0):
  return tuple(eqn.outvars[k].aval.shape)


def _bin(op):
  return lambda g, eqn, a, b, **_: f"({a} {op} {b})"


def _fn(name):
  return lambda g, eqn, *a, **_: f"{name}({', '.join(a)})"


def _div(g, eqn, a, b, **_):
  kind = np.dtype(eqn.outvars[0].aval.dtype).kind
  if kind in "iu":   # lax.div rounds toward zero, as C and Triton's integer division
    return f"({a} // {b})"
  return f"({a} / {b})"


def _minmax(name):
  return lambda g, eqn, a, b, **_: f"{name}({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"


def _convert(g, eqn, x, *, new_dtype, **_):
  if np.dtype(new_dtype) == np.bool_:
    return f"({x} != 0)"
  return f"{x}.to({_tl_dtype(new_dtype)})"


def _integer_pow(g, eqn, x, *, y):
  if y == 0:
    return f"tl.full({list(_shape(eqn))}, 1, {x}.dtype)"
  acc = " * ".join([x] * abs(y))
  return f"(1 / ({acc}))" if y < 0 else f"({acc})"


def _broadcast_in_dim(g, eqn, x, *dyn, shape, broadcast_dimensions, **_):
  out = list(_shape(eqn))
  if not eqn.invars[0].aval.shape:
    return f"tl.broadcast_to({x}, {out})" if out else x
  sl = ", ".join(":" if d in broadcast_dimensions else "None" for d in range(len(out)))
  return f"tl.broadcast_to({x}[{sl}], {out})"


def _reshape(g, eqn, x, *dyn, **_):
  out = list(_shape(eqn))
  if not out:
    return f"tl.sum(tl.reshape({x}, [1]), axis=0)"
  if not eqn.invars[0].aval.shape:
    return f"tl.broadcast_to({x}, {out})"
  return f"tl.reshape({x}, {out})"


def _transpose(g, eqn, x, *, permutation):
  if tuple(permutation) == tuple(range(len(permutation))):
    return x
  if len(permutation) == 2:
    return f"tl.trans({x})"
  return f"tl.permute({x}, {list(permutation)})"


def _reduce(name):
  """``tl.reduce`` with the module's own combine function (``_COMBINE``): Triton's
  ``tl.sum``/``tl.max`` are ``@triton.jit`` library functions, which its interpreter runs
  only when ``TRITON_INTERPRET`` was set before ``triton`` was imported; the max/min
  combines propagate NaN, as XLA's reductions do."""
  def rule(g, eqn, x, *, axes, **_):
    for a in sorted(axes, reverse=True):
      x = g.bind(f"tl.reduce({x}, {a}, {name})")
    return x
  return rule


_COMBINE = """
@triton.jit
def _sum(a, b):
    return a + b


@triton.jit
def _max(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _prod(a, b):
    return a * b
"""


def _select_n(g, eqn, pred, *cases):
  if len(cases) != 2:
    raise NotImplementedError("select_n with more than two cases in the Pallas Triton lowering")
  if np.dtype(eqn.invars[0].aval.dtype) != np.bool_:
    pred = f"({pred} != 0)"
  return f"tl.where({pred}, {cases[1]}, {cases[0]})"


def _iota(g, eqn, *, dtype, shape, dimension, **_):
  sl = ", ".join(":" if d == dimension else "None" for d in range(len(shape)))
  return (f"tl.broadcast_to(tl.arange(0, {shape[dimension]})[{sl}], {list(shape)})"
          f".to({_tl_dtype(dtype)})")


def _dot_precision(precision, lhs_dtype):
  """JAX's Triton choice: TF32 when either operand's precision is DEFAULT or HIGH (None
  counts as DEFAULT), IEEE for float32 otherwise, the default for other dtypes."""
  names = ["DEFAULT", "DEFAULT"] if precision is None else (
      [str(getattr(p, "name", p)).upper().split(".")[-1] for p in precision]
      if isinstance(precision, (tuple, list)) else [str(getattr(precision, "name", precision))
                                                   .upper().split(".")[-1]] * 2)
  if np.dtype(lhs_dtype) != np.float32:
    return None
  if any(n in ("DEFAULT", "HIGH", "NONE") for n in names):
    return "tf32"
  return "ieee"


def _dot_general(g, eqn, a, b, *, dimension_numbers, precision=None,
                 preferred_element_type=None, **_):
  (lc, rc), (lb, rb) = dimension_numbers
  la, ra = eqn.invars[0].aval, eqn.invars[1].aval
  if lb or rb or len(la.shape) != 2 or len(ra.shape) != 2 or len(lc) != 1:
    raise NotImplementedError("dot_general other than a 2-D matrix product in the Pallas "
                              "Triton lowering")
  if lc[0] == 0:
    a = g.bind(f"tl.trans({a})")
  if rc[0] == 1:
    b = g.bind(f"tl.trans({b})")
  out = eqn.outvars[0].aval.dtype
  kind = np.dtype(out).kind
  acc = "tl.int32" if kind in "iu" else "tl.float32"
  ip = _dot_precision(precision, la.dtype)
  ip = f", input_precision=\"{ip}\"" if ip else ""
  r = g.bind(f"tl.dot({a}, {b}{ip}, out_dtype={acc})")
  return r if _tl_dtype(out) == acc else f"{r}.to({_tl_dtype(out)})"


def _cumulative(name):
  def rule(g, eqn, x, *, axis, reverse=False, **_):
    return f"tl.associative_scan({x}, {axis}, {name}, reverse={bool(reverse)})"
  return rule


def _sign(g, eqn, x, **_):
  dt = eqn.invars[0].aval.dtype
  one = g.literal(1, dt)
  if np.dtype(dt).kind == "u":
    return f"tl.where({x} > 0, {one}, {x})"
  return f"tl.where({x} > 0, {one}, tl.where({x} < 0, {g.literal(-1, dt)}, {x}))"


def _clamp(g, eqn, lo, x, hi, **_):
  nan = "propagate_nan=tl.PropagateNan.ALL"
  return f"tl.minimum(tl.maximum({x}, {lo}, {nan}), {hi}, {nan})"


def _logistic(g, eqn, x, **_):
  return f"(1 / (1 + tl.exp(-{x})))"


_RULES = {
    "add": _bin("+"), "sub": _bin("-"), "mul": _bin("*"), "div": _div,
    "max": _minmax("tl.maximum"), "min": _minmax("tl.minimum"),
    "eq": _bin("=="), "ne": _bin("!="), "lt": _bin("<"), "le": _bin("<="), "gt": _bin(">"),
    "ge": _bin(">="), "and": _bin("&"), "or": _bin("|"), "xor": _bin("^"),
    "not": lambda g, eqn, x: f"(~{x})", "neg": lambda g, eqn, x: f"(-{x})",
    "exp": _fn("tl.exp"), "exp2": _fn("tl.exp2"), "log": _fn("tl.log"),
    "sqrt": _fn("tl.sqrt_rn"), "rsqrt": _fn("tl.rsqrt"), "abs": _fn("tl.abs"),
    "sin": _fn("tl.sin"), "cos": _fn("tl.cos"), "floor": _fn("tl.floor"),
    "ceil": _fn("tl.ceil"), "logistic": _logistic, "integer_pow": _integer_pow,
    "convert_element_type": _convert, "broadcast_in_dim": _broadcast_in_dim,
    "reshape": _reshape, "squeeze": _reshape, "expand_dims": _reshape,
    "transpose": _transpose, "reduce_sum": _reduce("_sum"),
    "reduce_max": _reduce("_max"), "reduce_min": _reduce("_min"),
    "select_n": _select_n, "iota": _iota, "dot_general": _dot_general,
    "square": lambda g, eqn, x, **_: f"({x} * {x})", "sign": _sign, "clamp": _clamp,
    "is_finite": lambda g, eqn, x: f"(tl.abs({x}) < float(\"inf\"))",
    "rem": _bin("%"),   # Triton's % truncates (C's fmod / remainder), as lax.rem
    "cumsum": _cumulative("_sum"), "cumprod": _cumulative("_prod"),
    "cummax": _cumulative("_max"), "cummin": _cumulative("_min"),
    "copy": lambda g, eqn, x: x, "copy_p": lambda g, eqn, x: x,
}


# --- the kernel ---------------------------------------------------------------------------------
def _depends(closed):
  """For an index map jaxpr: the set of its inputs (grid axes) its outputs depend on."""
  j = closed.jaxpr
  dep = {v: {k} for k, v in enumerate(j.invars)}
  for eqn in j.eqns:
    s = set()
    for v in eqn.invars:
      if type(v) is not core.Literal:
        s |= dep.get(v, set())
    for v in eqn.outvars:
      dep[v] = s
  out = set()
  for v in j.outvars:
    if type(v) is not core.Literal:
      out |= dep.get(v, set())
  return out


def lower(eqn, name="pallas_kernel"):
  """Lower a ``pallas_call`` equation (``make_jaxpr`` of a function calling a
  ``pallas_call``) to a ``TritonKernel``: Triton Python source, signature, launch grid."""
  from pyjax._src.pallas import core as plc
  p = eqn.params
  gm = p["grid_mapping"]
  if gm.num_index_operands:
    raise NotImplementedError("scalar prefetch not implemented in the Triton backend")
  if p.get("input_output_aliases"):
    raise NotImplementedError("input_output_aliases in the Pallas Triton lowering")
  closed = p["jaxpr"]
  kj = getattr(closed, "jaxpr", closed)
  if getattr(closed, "consts", ()):
    raise NotImplementedError("kernel constants in the Pallas Triton lowering")
  grid = tuple(gm.grid)
  n_launch = len(grid)
  for bm in gm.block_mappings_output:
    dep = _depends(bm.index_map)
    k = 0
    while k < len(grid) and k in dep:
      k += 1
    n_launch = min(n_launch, k)
  if n_launch > 3:
    raise NotImplementedError("more than three parallel grid axes in the Pallas Triton "
                              "lowering")
  g = _Gen()
  n_in = gm.num_inputs
  mems, params, sig = [], [], {}
  for k, bm in enumerate(gm.block_mappings):
    for d in bm.block_shape:
      if not isinstance(d, (plc.Blocked, plc.Squeezed)):
        raise NotImplementedError(f"{type(d).__name__} block dimensions in the Pallas Triton "
                                  "lowering")
    ptr = f"in{k}_ptr" if k < n_in else f"out{k - n_in}_ptr"
    params.append(ptr)
    sig[ptr] = "*" + _SIG_DTYPES[str(np.dtype(bm.array_aval.dtype))
                                 if str(bm.array_aval.dtype) != "bfloat16" else "bfloat16"]
    squeezed = [isinstance(d, plc.Squeezed) for d in bm.block_shape]
    mems.append(_MemRef(ptr, bm.array_aval.shape, bm.full_block_shape, squeezed))
    _check_size(bm.ref_shape)
  env = dict(zip(kj.invars[:len(mems)], mems))
  for v, aval in zip(kj.invars[len(mems):], gm.scratch_avals):
    _check_size(aval.shape)
    r = _RegRef(g.fresh("scratch"), aval.shape, aval.dtype)
    init = plc.uninitialized_value((), aval.dtype)
    g.emit(f"{r.name} = tl.full({list(aval.shape)}, "
           f"{g.literal(np.asarray(init), aval.dtype)}, {_tl_dtype(aval.dtype)})")
    env[v] = r
  pids = []
  for a in range(n_launch):
    pids.append(g.bind(f"tl.program_id({a})", "pid"))
  for a in range(n_launch, len(grid)):
    pid = g.fresh("pid")
    g.emit(f"for {pid} in range({grid[a]}):")
    g.depth += 1
    pids.append(pid)
  # the kernel's program_id counts the grid axes vmap did not add; index maps see them all
  g.pids = [q for d, q in enumerate(pids) if d not in gm.vmapped_dims]
  for bm, m in zip(gm.block_mappings, mems):
    starts = g._sub(bm.index_map, {}, pids)
    m.starts = []
    for st, d in zip(starts, bm.block_shape):
      size = plc.dim_size(d)
      m.starts.append(g.bind(f"({st}) * {size}" if isinstance(d, plc.Blocked) else st, "st"))
  g.jaxpr(kj, env)
  if g.depth == 1 and len(g.lines) == 0:
    g.emit("pass")
  header = ["import triton", "import triton.language as tl", "", _COMBINE, "", "@triton.jit",
            f"def {name}({', '.join(params)}):"]
  source = "\n".join(header + g.lines) + "\n"
  in_avals = [bm.array_aval for bm in gm.block_mappings[:n_in]]
  out_avals = [bm.array_aval for bm in gm.block_mappings[n_in:]]
  return TritonKernel(source, name, sig, grid[:n_launch] or (1,), in_avals, out_avals)


def lower_function(f, *args, name="pallas_kernel"):
  """``lower`` for the one ``pallas_call`` that ``f(*args)`` runs (traced with
  ``make_jaxpr``)."""
  from pyjax._src import api
  jaxpr = api.make_jaxpr(f)(*args)
  found = []

  def walk(j):
    for e in j.eqns:
      if e.primitive.name == "pallas_call":
        found.append(e)
      for sub in core._jaxprs_in_params(e.params):
        walk(sub)
  walk(jaxpr.jaxpr)
  if len(found) != 1:
    raise ValueError(f"expected one pallas_call, found {len(found)}")
  return lower(found[0], name)


# --- Triton: load, compile, interpret, launch ----------------------------------------------------
def _load(kernel, interpret):
  """Import the generated module (Triton reads the function's source from its file);
  ``interpret``: decorate under ``TRITON_INTERPRET=1`` (Triton's NumPy interpreter)."""
  import importlib.util
  d = os.path.join(tempfile.gettempdir(), "pyjax_triton")
  os.makedirs(d, exist_ok=True)
  import hashlib
  h = hashlib.sha256(kernel.source.encode()).hexdigest()[:16]
  path = os.path.join(d, f"k_{h}.py")
  if not os.path.exists(path):
    with open(path + ".tmp", "w") as fh:
      fh.write(kernel.source)
    os.replace(path + ".tmp", path)
  old = os.environ.get("TRITON_INTERPRET")
  os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
  try:
    spec = importlib.util.spec_from_file_location(f"pyjax_triton_{h}_{int(interpret)}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
  finally:
    if old is None:
      os.environ.pop("TRITON_INTERPRET", None)
    else:
      os.environ["TRITON_INTERPRET"] = old
  return getattr(mod, kernel.name)


def compile_ptx(kernel, arch=90, warp_size=32, num_warps=4):
  """Compile with ``triton.compile`` for a CUDA target (no GPU or driver needed: Triton's
  bundled ptxas builds the cubin).  Returns the ``CompiledKernel`` (``.asm['ptx']``,
  ``.asm['cubin']``).  FP contraction is off, as pyjax's other compilers."""
  import triton
  from triton.backends.compiler import GPUTarget
  from triton.compiler import ASTSource
  fn = _load(kernel, interpret=False)
  src = ASTSource(fn, signature=dict(kernel.signature), constexprs={})
  return triton.compile(src, target=GPUTarget("cuda", arch, warp_size),
                        options={"num_warps": num_warps, "enable_fp_fusion": False})


class _HostPtr:
  """A NumPy array seen by Triton's interpreter as a device tensor (``data_ptr``)."""

  def __init__(self, a):
    self.a, self.dtype = a, a.dtype

  def data_ptr(self):
    return self.a.ctypes.data


def interpret(kernel, *args):
  """Run the kernel under Triton's interpreter (NumPy on the CPU; no GPU) on NumPy
  ``args``; returns the outputs (NumPy arrays, initialised to zeros)."""
  from triton.runtime import interpreter as ti
  fn = _load(kernel, interpret=True)
  ins = [np.ascontiguousarray(np.asarray(a), dtype=av.dtype)
         for a, av in zip(args, kernel.in_avals)]
  outs = [np.zeros(av.shape, av.dtype) for av in kernel.out_avals]

  class Executor(ti.GridExecutor):   # the arrays already live in host memory
    def _init_args_hst(self, args_dev, kwargs):
      return list(args_dev), dict(kwargs)

    def _restore_args_dev(self, *a):
      pass
  ex = Executor(fn.fn, fn.arg_names, kernel.grid)
  with np.errstate(all="ignore"):   # a GPU computes inf - inf without a warning
    ex(*[_HostPtr(a) for a in ins + outs])
  return outs


def launch(kernel, compiled, args, stream=None):
  """UNVERIFIED (no GPU has run it): launch ``compiled`` (``compile_ptx`` for the device's
  architecture) on CuPy arrays ``args`` over ``kernel.grid`` on ``stream`` (a CuPy stream,
  e.g. pyjax's non-blocking stream; default: CuPy's current one).  Returns new CuPy
  output arrays."""
  import cupy
  outs = [cupy.empty(av.shape, av.dtype) for av in kernel.out_avals]
  s = stream if stream is not None else cupy.cuda.get_current_stream()
  ins = [cupy.ascontiguousarray(cupy.asarray(a, dtype=av.dtype))
         for a, av in zip(args, kernel.in_avals)]   # kept alive until the launch is queued
  grid = tuple(kernel.grid) + (1,) * (3 - len(kernel.grid))   # the runner reads three
  compiled[grid](*[a.data.ptr for a in ins + outs], stream=s.ptr)
  return outs
