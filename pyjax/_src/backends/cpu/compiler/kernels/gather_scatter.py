"""Native ``gather`` and ``scatter`` / ``scatter-add`` / ``-sub`` / ``-mul`` / ``-min`` /
``-max``: C kernels with the NumPy tier's semantics (``kernels/gather_scatter.py``), bit for bit.

Any dimension numbers (batching dimensions included), any index dtype (``uint64`` values
above ``INT64_MAX`` saturate, as the NumPy tier's conversion does) and every storable
operand dtype.

- **gather** walks the output in memory order.  The outermost output dimensions are
  flattened into work items for pyjax's pool (large outputs only); the window start of a
  batch element is computed at the loop depth of its last batch dimension: each start
  index is clamped so the whole slice is in bounds (every mode clamps, as the NumPy tier
  does), and in ``FILL_OR_DROP`` mode a slice whose unclamped start was out of bounds is
  replaced by ``fill_value`` (the clamped read stays in bounds, so it is a select).
- **scatters** copy the operand to the output (on the pool from 1 MiB), then apply the
  updates in the NumPy tier's order -- batch elements in row-major order, each window in
  row-major order -- so duplicate indices accumulate in the same order (float sums
  bit-identical).  ``CLIP``
  clamps start indices; every other mode drops a window that is not wholly in bounds
  (before any address is computed from it).  Combiners: replacement (last update wins),
  wrapping integer arithmetic, bool ``add``/``max`` = or and ``mul``/``min`` = and, float16
  and bfloat16 computed in float32 and rounded to nearest even per step (as NumPy's and
  ml_dtypes' loops do), float min/max propagating NaN and breaking ties between -0.0 and
  +0.0 the way NumPy's ``minimum``/``maximum`` loops do for that dtype.  A plain scatter
  with ``unique_indices`` runs on the pool; the others run serially.

A ``scatter`` with a custom combiner (``scatter_apply``'s ``update_jaxpr``), complex
operands and shapes NumPy would reject stay NumPy steps (``supported`` says False).
Registered in ``opaque.py``: fusion makes each node a group of its own.
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.eager import gather_scatter
from pyjax._src.backends.cpu.compiler import opaque
from pyjax._src.backends.cpu.compiler.kernels import elementwise
from pyjax._src.backends.cpu.compiler.ir import Lit, Value
from pyjax._src.backends.cpu.compiler.ir import strides as _strides

_SCATTERS = ("scatter", "scatter-add", "scatter-sub", "scatter-mul", "scatter-min", "scatter-max")
_U64 = np.dtype(np.uint64)
# gathers/scatters touching at least this many elements use the pool
_PARALLEL_MIN = 1 << 15
# scatters copy operands of at least this many bytes on the pool, in chunks
_PARALLEL_COPY, _COPY_CHUNK = 1 << 20, 1 << 18


def _mode_name(mode):
  return getattr(mode, "name", str(mode))


def _ints(t):
  return tuple(int(a) for a in t)


def _load_index(idt, expr):
  """C int64 of index element ``expr`` (uint64 saturates at INT64_MAX)."""
  if idt == _U64:
    return f"({expr} > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t){expr})"
  return f"(int64_t){expr}"


def _index_ok(node, n_in, lit_from=None):
  """Operands are buffers (from ``lit_from`` on, scalar literals too) and the indices
  an integer array."""
  if len(node.ins) != n_in or len(node.outs) != 1 or node.effects:
    return False
  if any(type(v) is not Value and not (lit_from is not None and k >= lit_from
                                       and type(v) is Lit)
         for k, v in enumerate(node.ins)):
    return False
  idx = node.ins[1]
  return elementwise.is_int(idx.dtype) and idx.ndim >= 1


# --- gather -------------------------------------------------------------------------------
def _gather_geometry(node):
  """Everything the gather kernel needs; raises ValueError for unsupported nodes."""
  x, idx = node.ins
  out = node.outs[0]
  p = node.params
  dn = p["dimension_numbers"]
  offset_dims = _ints(dn.offset_dims)
  collapsed = _ints(dn.collapsed_slice_dims)
  index_map = _ints(dn.start_index_map)
  obatch = _ints(dn.operand_batching_dims)
  ibatch = _ints(dn.start_indices_batching_dims)
  slice_sizes = _ints(p["slice_sizes"])
  n, nb = x.ndim, idx.ndim - 1
  batch_shape = idx.shape[:-1]
  K = idx.shape[-1]
  if len(slice_sizes) != n or K != len(index_map) or len(obatch) != len(ibatch):
    raise ValueError("bad gather dimension numbers")
  if any(not 0 <= d < n for d in index_map + collapsed + obatch):
    raise ValueError("bad gather dimension numbers")
  if len(set(index_map)) != len(index_map) or set(index_map) & set(obatch):
    raise ValueError("bad gather dimension numbers")
  if any(not 0 <= s <= x.shape[d] for d, s in enumerate(slice_sizes)):
    raise ValueError("slice larger than the operand")
  if any(slice_sizes[d] > 1 for d in collapsed + obatch):
    raise ValueError("collapsed slice larger than 1")
  for d, bd in zip(obatch, ibatch):
    if not 0 <= bd < nb or x.shape[d] != batch_shape[bd]:
      raise ValueError("bad batching dims")
  kept = [d for d in range(n) if d not in collapsed and d not in obatch]
  R = nb + len(offset_dims)
  if len(kept) != len(offset_dims) or any(not 0 <= o < R for o in offset_dims):
    raise ValueError("bad offset dims")
  dims, bi, wi = [], 0, 0
  for o in range(R):
    if o in offset_dims:
      dims.append(("w", kept[wi]))
      wi += 1
    else:
      dims.append(("b", bi))
      bi += 1
  out_shape = tuple(slice_sizes[v] if k == "w" else batch_shape[v] for k, v in dims)
  if out_shape != tuple(out.shape) or out.dtype != x.dtype:
    raise ValueError("bad gather output")
  return dict(n=n, nb=nb, K=K, dims=dims, index_map=index_map, obatch=obatch, ibatch=ibatch,
              slice_sizes=slice_sizes, batch_shape=batch_shape)


def _gather_supported(node):
  if not _index_ok(node, 2):
    return False
  x = node.ins[0]
  if not elementwise.storable(x.dtype) or node.outs[0].dtype != x.dtype:
    return False
  if node.outs[0].size == 0:
    return True    # nothing to compute
  _gather_geometry(node)
  return True


def _gather_work(node):
  return node.outs[0].size + node.ins[1].size


def _fill_decl(dtype, fill_value, ctype):
  """C declaring the fill value ``F`` (its exact bits, as the NumPy tier casts it)."""
  if fill_value is None:
    fill_value = gather_scatter._default_fill(dtype)
  v = gather_scatter._cast_scalar(fill_value, dtype)
  bits = int(np.asarray(v).reshape(1).view(f"u{dtype.itemsize}")[0])
  ut = f"uint{dtype.itemsize * 8}_t"
  return f"  {ctype} F; {{ const {ut} fb = ({ut}){bits:#x}ull; memcpy(&F, &fb, sizeof F); }}"


def _gather_source(node, name):
  x, idx = node.ins
  out = node.outs[0]
  t = elementwise.storage_type(x.dtype)
  it = elementwise.storage_type(idx.dtype)
  if out.size == 0:
    return f"/* native gather: empty */\nstatic void {name}(void *const *P) {{ (void)P; }}\n"
  g = _gather_geometry(node)
  dims, K = g["dims"], g["K"]
  fill = _mode_name(node.params["mode"]) == "FILL_OR_DROP" and K > 0
  R = len(dims)
  oshape = out.shape
  xs, ys = _strides(x.shape), _strides(oshape)
  bst = [s * K for s in _strides(g["batch_shape"])]
  # work items: the outermost output dims flattened, inner rows of at most ~1024 elements
  p = 0
  if R:
    p = 1
    while p < R and math.prod(oshape[p:]) > 1024:
      p += 1
  items = math.prod(oshape[:p])
  inner = math.prod(oshape[p:])
  level = lambda o: 0 if o < p else o - p + 1  # noqa: E731
  border = [o for o in range(R) if dims[o][0] == "b"]      # output dim of batch dim j
  L = max([level(o) for o in border], default=0)

  def start_block(ind):
    ipoff = " + ".join(f"c{border[j]} * {bst[j]}" for j in range(len(border)) if bst[j]) or "0"
    out_l = [f"{ind}const {it} *restrict ip = I + {ipoff};", f"{ind}int64_t sb = 0;"]
    if fill:
      out_l.append(f"{ind}int ok = 1;")
    for k, d in enumerate(g["index_map"]):
      hi = x.shape[d] - g["slice_sizes"][d]
      out_l.append(f"{ind}{{ int64_t s = {_load_index(idx.dtype, f'ip[{k}]')};")
      if fill:
        out_l.append(f"{ind}  ok &= (s >= 0) & (s <= {hi});")
      out_l.append(f"{ind}  s = s < 0 ? 0 : (s > {hi} ? {hi} : s); sb += s * {xs[d]}; }}")
    for d, bd in zip(g["obatch"], g["ibatch"]):
      out_l.append(f"{ind}sb += c{border[bd]} * {xs[d]};")
    return out_l

  C = [f"/* native gather: {_mode_name(node.params['mode'])} */"]
  C.append(f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{")
  C.append("  void *const *P = (void *const *)ctx;")
  C.append(f"  const {t} *restrict X = (const {t} *)P[0];")
  C.append(f"  const {it} *restrict I = (const {it} *)P[1];")
  C.append(f"  {t} *restrict Y = ({t} *)P[2];")
  if fill:
    C.append(_fill_decl(x.dtype, node.params.get("fill_value"), t))
  C.append("  for (int64_t it = lo; it < hi; it++) {")
  ind = "    "
  if p:
    C.append(f"{ind}int64_t r = it; (void)r;")
    for o in range(p - 1, 0, -1):
      C.append(f"{ind}const int64_t c{o} = r % {oshape[o]}; r /= {oshape[o]};")
    C.append(f"{ind}const int64_t c0 = r;")
  C.append(f"{ind}{t} *restrict y0 = Y + it * {inner};")
  if L == 0:
    C.extend(start_block(ind))
  closes = 0
  for o in range(p, R):
    C.append(f"{ind}for (int64_t c{o} = 0; c{o} < {oshape[o]}; c{o}++) {{")
    ind += "  "
    closes += 1
    if level(o) == L:
      C.extend(start_block(ind))
  yoff = " + ".join(f"c{o} * {ys[o]}" for o in range(p, R) if ys[o]) or "0"
  xoff = " + ".join(["sb"] + [f"c{o} * {xs[dims[o][1]]}" for o in range(R) if dims[o][0] == "w"])
  if fill:
    C.append(f"{ind}{{ const {t} v = X[{xoff}]; y0[{yoff}] = ok ? v : F; }}")
  else:
    C.append(f"{ind}y0[{yoff}] = X[{xoff}];")
  for _ in range(closes):
    ind = ind[:-2]
    C.append(f"{ind}}}")
  C.append("  }")
  C.append("}")
  grain = max(1, 16384 // max(inner, 1))
  C.append(f"static void {name}(void *const *P) {{")
  if out.size >= _PARALLEL_MIN and items > 1:
    C.append(f"  if (pj_parallel_for) pj_parallel_for({name}_range, (void *)P, {items}, {grain});")
    C.append(f"  else {name}_range((void *)P, 0, {items});")
  else:
    C.append(f"  {name}_range((void *)P, 0, {items});")
  C.append("}")
  return "\n".join(C) + "\n"


# --- scatter ------------------------------------------------------------------------------
def _scatter_geometry(node):
  x, idx, upd = node.ins
  out = node.outs[0]
  dn = node.params["dimension_numbers"]
  uwd = _ints(dn.update_window_dims)
  inserted = _ints(dn.inserted_window_dims)
  index_map = _ints(dn.scatter_dims_to_operand_dims)
  obatch = _ints(dn.operand_batching_dims)
  ibatch = _ints(dn.scatter_indices_batching_dims)
  n, nb = x.ndim, idx.ndim - 1
  batch_shape = tuple(idx.shape[:-1])
  K = idx.shape[-1]
  if out.shape != x.shape or out.dtype != x.dtype or upd.dtype != x.dtype:
    raise ValueError("bad scatter types")
  if K != len(index_map) or len(obatch) != len(ibatch):
    raise ValueError("bad scatter dimension numbers")
  if any(not 0 <= d < n for d in index_map + inserted + obatch):
    raise ValueError("bad scatter dimension numbers")
  if len(set(index_map)) != len(index_map) or set(index_map) & set(obatch):
    raise ValueError("bad scatter dimension numbers")
  if list(uwd) != sorted(set(uwd)) or any(not 0 <= u < upd.ndim for u in uwd):
    raise ValueError("bad update window dims")
  wdims = [d for d in range(n) if d not in inserted and d not in obatch]
  if len(wdims) != len(uwd) or upd.ndim != nb + len(uwd):
    raise ValueError("bad update window dims")
  window = [1] * n
  for i, d in enumerate(wdims):
    window[d] = upd.shape[uwd[i]]
  sdims = [i for i in range(upd.ndim) if i not in uwd]
  if tuple(upd.shape[i] for i in sdims) != batch_shape:
    raise ValueError("bad scatter dims")
  for d, bd in zip(obatch, ibatch):
    if not 0 <= bd < nb or x.shape[d] != batch_shape[bd]:
      raise ValueError("bad batching dims")
  empty = x.size == 0 or upd.size == 0
  if not empty and any(w > s for w, s in zip(window, x.shape)):
    raise ValueError("update window larger than the operand")
  return dict(n=n, nb=nb, K=K, uwd=uwd, wdims=wdims, window=window, sdims=sdims,
              index_map=index_map, obatch=obatch, ibatch=ibatch, batch_shape=batch_shape,
              empty=empty)


def _combine(prim, d, a, b):
  """C expression combining the stored value ``a`` with the update ``b`` (storage type)."""
  if prim == "scatter":
    return b
  op = prim.split("-")[1]
  if d == elementwise.BOOL:
    return {"add": f"({a} | {b})", "max": f"({a} | {b})",
            "mul": f"({a} & {b})", "min": f"({a} & {b})"}[op]
  if elementwise.is_int(d):
    t = elementwise.storage_type(d)
    if op in ("min", "max"):
      return f"({a} {'<' if op == 'min' else '>'} {b} ? {a} : {b})"
    ut = "uint64_t" if d.itemsize == 8 else "uint32_t"
    sym = {"add": "+", "sub": "-", "mul": "*"}[op]
    return f"({t})(({ut}){a} {sym} ({ut}){b})"
  fa, fb = elementwise.load(d, a), elementwise.load(d, b)
  if op in ("min", "max"):
    # NaN in the stored value wins, then the update's NaN; zeros in XLA's order, -0.0
    # below +0.0, whatever the order of the updates (the eager scatter's rule)
    cmp = {"min": "<", "max": ">"}[op]
    sign = "" if op == "min" else "!"
    return (f"(({fa} {cmp} {fb} || ({fa} == {fb} && {sign}__builtin_signbit({fa})) "
            f"|| {fa} != {fa}) ? {a} : {b})")
  sym = {"add": "+", "sub": "-", "mul": "*"}[op]
  return elementwise.store(d, f"({fa} {sym} {fb})")


def _scatter_supported(node):
  if node.prim not in _SCATTERS:
    return False
  # a scalar literal update (``x.at[i].set(True)``) is baked into the kernel
  if not _index_ok(node, 3, lit_from=2):
    return False
  p = node.params
  if node.prim == "scatter" and p.get("update_jaxpr") is not None:
    return False   # a custom combiner (scatter_apply): NumPy
  d = node.ins[0].dtype
  if not elementwise.storable(d):
    return False
  if d == elementwise.BOOL and node.prim == "scatter-sub":
    return False   # NumPy has no boolean subtract
  _scatter_geometry(node)
  return True


def _scatter_work(node):
  return node.ins[0].size + node.ins[2].size + node.ins[1].size


def _scatter_source(node, name):
  x, idx, upd = node.ins
  t = elementwise.storage_type(x.dtype)
  it = elementwise.storage_type(idx.dtype)
  g = _scatter_geometry(node)
  nbytes = x.size * x.dtype.itemsize
  C = [f"/* native {node.prim}: {_mode_name(node.params['mode'])} */"]
  head = [f"  const {t} *X = (const {t} *)P[0];", f"  {t} *Y = ({t} *)P[3];"]
  if nbytes >= _PARALLEL_COPY:   # large operands: copied by the pool (page faults too)
    chunks = -(-nbytes // _COPY_CHUNK)
    C.append(f"static void {name}_copy(void *ctx, int64_t lo, int64_t hi) {{")
    C.append("  void *const *P = (void *const *)ctx;")
    C.append(f"  int64_t a = lo * {_COPY_CHUNK}, b = hi * {_COPY_CHUNK};")
    C.append(f"  if (b > {nbytes}) b = {nbytes};")
    C.append("  memcpy((char *)P[3] + a, (const char *)P[0] + a, (size_t)(b - a));")
    C.append("}")
    head.append(f"  if (Y != X) {{ if (pj_parallel_for) pj_parallel_for({name}_copy, (void *)P, "
                f"{chunks}, 1); else memcpy(Y, X, {nbytes}); }}")
  else:
    head.append(f"  if (Y != X && {nbytes}) memcpy(Y, X, {nbytes});")
  if g["empty"]:
    C.append(f"static void {name}(void *const *P) {{")
    C.extend(head)
    C.append("}")
    return "\n".join(C) + "\n"
  nb, K = g["nb"], g["K"]
  xs, us = _strides(x.shape), _strides(upd.shape)
  bshape = g["batch_shape"]
  NB = math.prod(bshape)
  clip = _mode_name(node.params["mode"]) == "CLIP"
  C.append(f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{")
  C.append("  void *const *P = (void *const *)ctx;")
  C.append(f"  const {it} *restrict I = (const {it} *)P[1];")
  if type(upd) is Lit:   # a scalar literal update: its bits, baked in
    ut = f"uint{x.dtype.itemsize * 8}_t"
    bits = int(np.asarray(upd.value, x.dtype).reshape(1).view(f"u{x.dtype.itemsize}")[0])
    C.append(f"  {t} Ulit; {{ const {ut} ub_ = ({ut}){bits:#x}ull; memcpy(&Ulit, &ub_, "
             "sizeof Ulit); }")
    C.append(f"  const {t} *restrict U = &Ulit;")
  else:
    C.append(f"  const {t} *restrict U = (const {t} *)P[2];")
  C.append(f"  {t} *restrict Y = ({t} *)P[3];")
  C.append("  for (int64_t b = lo; b < hi; b++) {")
  ind = "    "
  if nb:
    C.append(f"{ind}int64_t r = b; (void)r;")
    for j in range(nb - 1, 0, -1):
      C.append(f"{ind}const int64_t c{j} = r % {bshape[j]}; r /= {bshape[j]};")
    C.append(f"{ind}const int64_t c0 = r;")
  C.append(f"{ind}const {it} *restrict ip = I + b * {K}; (void)ip;")
  for k, d in enumerate(g["index_map"]):
    C.append(f"{ind}int64_t s{k} = {_load_index(idx.dtype, f'ip[{k}]')};")
  bounds = [(k, x.shape[d] - g["window"][d]) for k, d in enumerate(g["index_map"])]
  if clip:
    for k, hi in bounds:
      C.append(f"{ind}s{k} = s{k} < 0 ? 0 : (s{k} > {hi} ? {hi} : s{k});")
  elif bounds:
    cond = " || ".join(f"s{k} < 0 || s{k} > {hi}" for k, hi in bounds)
    C.append(f"{ind}if ({cond}) continue;")
  sb = [f"s{k} * {xs[d]}" for k, d in enumerate(g["index_map"])]
  sb += [f"c{bd} * {xs[d]}" for d, bd in zip(g["obatch"], g["ibatch"])]
  C.append(f"{ind}const int64_t sb = {' + '.join(sb) or '0'};")
  ub = [f"c{j} * {us[g['sdims'][j]]}" for j in range(nb)]
  C.append(f"{ind}const int64_t ub = {' + '.join(ub) or '0'};")
  loops = [(i, d) for i, d in enumerate(g["wdims"]) if g["window"][d] > 1]
  for i, d in loops:
    C.append(f"{ind}for (int64_t w{i} = 0; w{i} < {g['window'][d]}; w{i}++) {{")
    ind += "  "
  yoff = " + ".join(["sb"] + [f"w{i} * {xs[d]}" for i, d in loops])
  uoff = " + ".join(["ub"] + [f"w{i} * {us[g['uwd'][i]]}" for i, d in loops])
  C.append(f"{ind}{{ {t} *yp = Y + {yoff}; const {t} u = U[{uoff}];")
  C.append(f"{ind}  *yp = {_combine(node.prim, x.dtype, '(*yp)', 'u')}; }}")
  for _ in loops:
    ind = ind[:-2]
    C.append(f"{ind}}}")
  C.append("  }")
  C.append("}")
  C.append(f"static void {name}(void *const *P) {{")
  C.extend(head)
  parallel = (node.prim == "scatter" and node.params.get("unique_indices")
              and upd.size >= _PARALLEL_MIN and NB > 1)
  if parallel:
    per = max(upd.size // NB, 1)
    grain = max(1, 16384 // per)
    C.append(f"  if (pj_parallel_for) pj_parallel_for({name}_range, (void *)P, {NB}, {grain});")
    C.append(f"  else {name}_range((void *)P, 0, {NB});")
  else:
    C.append(f"  {name}_range((void *)P, 0, {NB});")
  C.append("}")
  return "\n".join(C) + "\n"


opaque.register("gather", _gather_supported, _gather_source, _gather_work)
for _p in _SCATTERS:
  opaque.register(_p, _scatter_supported, _scatter_source, _scatter_work)
