"""Native ``dynamic_slice``, ``dynamic_update_slice``, ``concatenate``, ``stack``,
``split`` and ``pad``: C kernels (``opaque.py``) with the NumPy tier's semantics
(``eager/shapes.py``), bit for bit (they only move bytes).

Every one is a set of *box copies*: a hyperrectangle of one C-contiguous array copied to
a hyperrectangle of another.  The trailing dimensions a box spans wholly in both arrays
are merged with the last partial one into one contiguous run, copied by ``memcpy`` (a
constant size, which the C compiler inlines for small runs); the leading dimensions are
loops.  So ``x[i]`` of a vector is one element load, a row of a matrix one ``memcpy``.

Dynamic start indices (0-d operands of any integer dtype; ``uint64`` above ``INT64_MAX``
saturates) are clamped into ``[0, dim - size]`` as XLA and the NumPy tier do -- negative
indices become 0, they do not wrap -- before any address is formed, so the generated code
never reads or writes out of bounds whatever the indices.  A dimension the slice spans
wholly has the constant start 0.  ``dynamic_update_slice`` first copies the operand to the
output (on the pool from 1 MiB; skipped when the output is the operand's buffer).
``pad`` fills the output with the padding value (unless the operand covers it), then
copies the operand's elements that land inside it (negative low/high padding crops;
interior padding strides): every range is computed at generation time.

Literal start indices (clamped at generation time) and padding values are baked in (the
segment code passes literal operands of opaque kernels as null pointers).  Nodes with other
literal operands (a scalar literal stacked) or a dtype that is not storable stay NumPy
steps (``supported`` says False).
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.compiler import opaque
from pyjax._src.backends.cpu.compiler.kernels import elementwise
from pyjax._src.backends.cpu.compiler.ir import Lit, Value
from pyjax._src.backends.cpu.compiler.ir import strides as _strides

# dynamic_update_slice copies operands of at least this many bytes on the pool, in chunks
_PARALLEL_COPY, _COPY_CHUNK = 1 << 20, 1 << 18
_U64 = "uint64_t"


def _values(node, first_index=None):
  """Operands and results are buffers (``Value``s); from ``first_index`` on, operands may
  also be scalar literals (passed as null pointers: the kernel bakes the literal in)."""
  if node.effects or not node.outs or any(type(v) is not Value for v in node.outs):
    return False
  return all(type(v) is Value or (first_index is not None and k >= first_index
                                  and type(v) is Lit)
             for k, v in enumerate(node.ins))


def _same_dtype(node):
  d = node.outs[0].dtype
  return elementwise.storable(d) and all(v.dtype == d for v in list(node.ins) + list(node.outs))


def _copy_box(C, ind, t, dst, dshape, dstart, src, sshape, sstart, box, tag):
  """Append C copying the box ``box`` of ``src`` (shape ``sshape``) at ``sstart`` to
  ``dst`` (shape ``dshape``) at ``dstart``.  Starts are ints or C int64 expressions;
  every start must keep the box in bounds (callers clamp)."""
  r = len(box)
  assert len(sshape) == len(dshape) == len(sstart) == len(dstart) == r
  if math.prod(box) == 0:
    return
  p = r
  while p > 0 and box[p - 1] == sshape[p - 1] == dshape[p - 1]:
    p -= 1
  for k in range(p, r):    # wholly spanned: the start is 0
    assert sstart[k] in (0, "0") and dstart[k] in (0, "0"), (sstart, dstart, box)
  if p == 0:
    C.append(f"{ind}memcpy({dst}, {src}, {math.prod(box)} * sizeof({t}));")
    return
  run = box[p - 1] * math.prod(box[p:])
  ss, ds = _strides(sshape), _strides(dshape)
  soff, doff = [], []
  closes = 0
  for k in range(p):
    if k < p - 1 and box[k] > 1:
      v = f"{tag}{k}"
      C.append(f"{ind}for (int64_t {v} = 0; {v} < {box[k]}; {v}++) {{")
      ind += "  "
      closes += 1
      iv = f" + {v}"
    else:
      iv = ""
    for start, st, acc in ((sstart[k], ss[k], soff), (dstart[k], ds[k], doff)):
      if start in (0, "0") and not iv:
        continue
      acc.append(f"({start}{iv}) * {st}" if st != 1 else f"({start}{iv})")
  so = " + ".join(soff) or "0"
  do = " + ".join(doff) or "0"
  if run == 1:
    C.append(f"{ind}{dst}[{do}] = {src}[{so}];")
  else:
    C.append(f"{ind}memcpy({dst} + {do}, {src} + {so}, {run} * sizeof({t}));")
  for _ in range(closes):
    ind = ind[:-2]
    C.append(f"{ind}}}")


def _starts(C, ind, idx_vals, ptr_index, shape, sizes):
  """Declare clamped start indices ``s<k>``; returns their C expressions (0 where the
  slice spans the dimension wholly)."""
  out = []
  for k, (iv, d, n) in enumerate(zip(idx_vals, shape, sizes)):
    hi = d - n
    if hi <= 0:
      out.append(0)
      continue
    if type(iv) is Lit:    # a literal start: clamped here
      out.append(min(max(int(iv.value), 0), hi))
      continue
    it = elementwise.storage_type(iv.dtype)
    e = f"*(const {it} *)P[{ptr_index + k}]"
    if it == _U64:
      load = f"({e} > (uint64_t){hi} ? (int64_t){hi} : (int64_t){e})"
      C.append(f"{ind}const int64_t s{k} = {load};")
    else:
      C.append(f"{ind}int64_t s{k} = (int64_t){e};")
      C.append(f"{ind}s{k} = s{k} < 0 ? 0 : (s{k} > {hi} ? {hi} : s{k});")
    out.append(f"s{k}")
  return out


def _index_dtypes_ok(idx):
  return all(v.ndim == 0 and elementwise.is_int(v.dtype) for v in idx)


# --- dynamic_slice ------------------------------------------------------------------------
def _ds_supported(node):
  if not _values(node, 1) or len(node.outs) != 1:
    return False
  x, idx, out = node.ins[0], node.ins[1:], node.outs[0]
  sizes = tuple(int(s) for s in node.params["slice_sizes"])
  if len(idx) != x.ndim or len(sizes) != x.ndim or not _index_dtypes_ok(idx):
    return False
  if out.dtype != x.dtype or not elementwise.storable(x.dtype) or tuple(out.shape) != sizes:
    return False
  return all(0 <= n <= d for n, d in zip(sizes, x.shape))


def _ds_source(node, name):
  x, idx, out = node.ins[0], node.ins[1:], node.outs[0]
  t = elementwise.storage_type(x.dtype)
  sizes = tuple(out.shape)
  C = ["/* native dynamic_slice */", f"static void {name}(void *const *P) {{",
       f"  const {t} *restrict X = (const {t} *)P[0];",
       f"  {t} *restrict Y = ({t} *)P[{1 + len(idx)}];", "  (void)X; (void)Y;"]
  if out.size:
    st = _starts(C, "  ", idx, 1, x.shape, sizes)
    _copy_box(C, "  ", t, "Y", sizes, [0] * len(sizes), "X", x.shape, st, sizes, "i")
  C.append("}")
  return "\n".join(C) + "\n"


def _ds_work(node):
  return node.outs[0].size + 1


# --- dynamic_update_slice -----------------------------------------------------------------
def _dus_supported(node):
  if not _values(node, 2) or len(node.outs) != 1 or len(node.ins) < 2:
    return False
  x, u, idx, out = node.ins[0], node.ins[1], node.ins[2:], node.outs[0]
  if len(idx) != x.ndim or u.ndim != x.ndim or not _index_dtypes_ok(idx):
    return False
  if not (out.dtype == x.dtype == u.dtype) or not elementwise.storable(x.dtype):
    return False
  if tuple(out.shape) != tuple(x.shape):
    return False
  return all(0 <= n <= d for n, d in zip(u.shape, x.shape))


def _whole_copy(C, name, nbytes, src, dst):
  """C (kernel-level helper + statements) copying ``nbytes`` from P[src] to P[dst] unless
  they are one buffer; returns the statements (the helper goes into ``C``)."""
  if nbytes == 0:
    return []
  if nbytes >= _PARALLEL_COPY:
    chunks = -(-nbytes // _COPY_CHUNK)
    C.append(f"static void {name}_copy(void *ctx, int64_t lo, int64_t hi) {{")
    C.append("  void *const *P = (void *const *)ctx;")
    C.append(f"  int64_t a = lo * {_COPY_CHUNK}, b = hi * {_COPY_CHUNK};")
    C.append(f"  if (b > {nbytes}) b = {nbytes};")
    C.append(f"  memcpy((char *)P[{dst}] + a, (const char *)P[{src}] + a, (size_t)(b - a));")
    C.append("}")
    return [f"  if (P[{dst}] != P[{src}]) {{ if (pj_parallel_for) pj_parallel_for({name}_copy, "
            f"(void *)P, {chunks}, 1); else memcpy(P[{dst}], P[{src}], {nbytes}); }}"]
  return [f"  if (P[{dst}] != P[{src}]) memcpy(P[{dst}], P[{src}], {nbytes});"]


def _dus_source(node, name):
  x, u, idx = node.ins[0], node.ins[1], node.ins[2:]
  t = elementwise.storage_type(x.dtype)
  o = 2 + len(idx)
  C = ["/* native dynamic_update_slice */"]
  head = _whole_copy(C, name, x.size * x.dtype.itemsize, 0, o)
  C.append(f"static void {name}(void *const *P) {{")
  C.extend(head)
  C.append(f"  const {t} *restrict U = (const {t} *)P[1];")
  C.append(f"  {t} *Y = ({t} *)P[{o}];")
  C.append("  (void)U; (void)Y;")
  if u.size:
    st = _starts(C, "  ", idx, 2, x.shape, u.shape)
    _copy_box(C, "  ", t, "Y", x.shape, st, "U", u.shape, [0] * u.ndim, u.shape, "i")
  C.append("}")
  return "\n".join(C) + "\n"


def _dus_work(node):
  return node.outs[0].size + node.ins[1].size


# --- concatenate / stack / split ----------------------------------------------------------
def _concat_supported(node):
  if not _values(node) or len(node.outs) != 1 or not node.ins or not _same_dtype(node):
    return False
  out = node.outs[0]
  ax = int(node.params["dimension"])
  if not 0 <= ax < out.ndim:
    return False
  for v in node.ins:
    if v.ndim != out.ndim or any(a != b for k, (a, b) in enumerate(zip(v.shape, out.shape))
                                 if k != ax):
      return False
  return sum(v.shape[ax] for v in node.ins) == out.shape[ax]


def _pieces_source(node, name, what, ax, in_shapes, out_shapes, inverse=False):
  """Copies of the pieces ``in_shapes`` (the inputs, or the outputs when ``inverse``)
  placed one after another along ``ax`` of the single other array."""
  n_in = len(node.ins)
  t = elementwise.storage_type(node.outs[0].dtype)
  C = [f"/* native {what} */", f"static void {name}(void *const *P) {{"]
  big = out_shapes[0] if not inverse else in_shapes[0]
  pieces = in_shapes if not inverse else out_shapes
  off = 0
  for j, shp in enumerate(pieces):
    st = [0] * len(shp)
    st[ax] = off
    if inverse:   # split: piece j is output j, read from input 0
      C.append(f"  {{ const {t} *restrict S = (const {t} *)P[0]; "
               f"{t} *restrict D = ({t} *)P[{n_in + j}];")
      _copy_box(C, "    ", t, "D", shp, [0] * len(shp), "S", big, st, shp, "i")
    else:         # concatenate / stack: piece j is input j, written to output 0
      C.append(f"  {{ const {t} *restrict S = (const {t} *)P[{j}]; "
               f"{t} *restrict D = ({t} *)P[{n_in}];")
      _copy_box(C, "    ", t, "D", big, st, "S", shp, [0] * len(shp), shp, "i")
    C.append("    (void)S; (void)D; }")
    off += shp[ax]
  C.append("}")
  return "\n".join(C) + "\n"


def _concat_source(node, name):
  ax = int(node.params["dimension"])
  return _pieces_source(node, name, "concatenate", ax, [tuple(v.shape) for v in node.ins],
                        [tuple(node.outs[0].shape)])


def _stack_supported(node):
  if not _values(node) or len(node.outs) != 1 or not node.ins or not _same_dtype(node):
    return False
  out = node.outs[0]
  ax = int(node.params["axis"])
  if not 0 <= ax < out.ndim:
    return False
  shp = tuple(node.ins[0].shape)
  if any(tuple(v.shape) != shp for v in node.ins):
    return False
  return tuple(out.shape) == shp[:ax] + (len(node.ins),) + shp[ax:]


def _stack_source(node, name):
  ax = int(node.params["axis"])
  shp = tuple(node.ins[0].shape)
  one = shp[:ax] + (1,) + shp[ax:]
  return _pieces_source(node, name, "stack", ax, [one] * len(node.ins),
                        [tuple(node.outs[0].shape)])


def _split_supported(node):
  if not _values(node) or len(node.ins) != 1 or not _same_dtype(node):
    return False
  x = node.ins[0]
  ax = int(node.params["axis"])
  sizes = [int(s) for s in node.params["sizes"]]
  if not 0 <= ax < x.ndim or len(sizes) != len(node.outs) or sum(sizes) != x.shape[ax]:
    return False
  for o, n in zip(node.outs, sizes):
    if tuple(o.shape) != tuple(x.shape[:ax]) + (n,) + tuple(x.shape[ax + 1:]):
      return False
  return True


def _split_source(node, name):
  ax = int(node.params["axis"])
  return _pieces_source(node, name, "split", ax, [tuple(node.ins[0].shape)],
                        [tuple(o.shape) for o in node.outs], inverse=True)


def _copy_work(node):
  return sum(o.size for o in node.outs) + 1


# --- pad ----------------------------------------------------------------------------------
def _pad_geometry(node):
  """Per dimension (source range [j0, j1), output position of source j = lo + j * step)
  and the output shape; raises ValueError when the node does not describe a pad."""
  x, out = node.ins[0], node.outs[0]
  cfg = [tuple(int(a) for a in c) for c in node.params["padding_config"]]
  if len(cfg) != x.ndim:
    raise ValueError("bad padding config")
  dims, shape = [], []
  for (lo, hi, interior), d in zip(cfg, x.shape):
    if interior < 0:
      raise ValueError("negative interior padding")
    step = interior + 1
    dd = 0 if d == 0 else d + (d - 1) * interior
    od = lo + hi + dd
    if od < 0:
      raise ValueError("negative output size")
    j0 = max(0, -(lo // step)) if lo < 0 else 0       # first j with lo + j * step >= 0
    j1 = min(d, (od - 1 - lo) // step + 1) if od > lo else 0   # lo + j * step <= od - 1
    dims.append((j0, max(j1, j0), lo, step))
    shape.append(od)
  if tuple(shape) != tuple(out.shape):
    raise ValueError("bad pad output")
  return dims


def _pad_supported(node):
  if not _values(node, 1) or len(node.ins) != 2 or len(node.outs) != 1:
    return False
  x, v, out = node.ins[0], node.ins[1], node.outs[0]
  if v.ndim != 0 or not (x.dtype == v.dtype == out.dtype) or not elementwise.storable(x.dtype):
    return False
  _pad_geometry(node)
  return True


def _pad_source(node, name):
  x, v, out = node.ins[0], node.ins[1], node.outs[0]
  t = elementwise.storage_type(x.dtype)
  C = ["/* native pad */", f"static void {name}(void *const *P) {{",
       f"  const {t} *restrict X = (const {t} *)P[0];", f"  {t} *restrict Y = ({t} *)P[2];",
       "  (void)X; (void)Y;"]
  if out.size == 0:
    C.append("}")
    return "\n".join(C) + "\n"
  if type(v) is Lit:
    bits = int(np.asarray(v.value, x.dtype).reshape(1).view(f"u{x.dtype.itemsize}")[0])
    ut = f"uint{x.dtype.itemsize * 8}_t"
    C.append(f"  {t} F; {{ const {ut} fb = ({ut}){bits:#x}ull; memcpy(&F, &fb, sizeof F); }}")
  else:
    C.append(f"  const {t} F = *(const {t} *)P[1];")
  C.append("  (void)F;")
  dims = _pad_geometry(node)
  # the copied elements cover the output only when, in every dimension, as many
  # contiguous ones land in it as it has positions
  covered = all(j1 - j0 == od and (step == 1 or od <= 1)
                for (j0, j1, lo, step), od in zip(dims, out.shape))
  if not covered:
    C.append(f"  for (int64_t k = 0; k < {out.size}; k++) Y[k] = F;")
  if any(j1 <= j0 for j0, j1, _, _ in dims):
    C.append("}")
    return "\n".join(C) + "\n"
  xs, ys = _strides(x.shape), _strides(out.shape)
  r = x.ndim
  ind = "  "
  soff, doff = [], []
  inner = r - 1 if r and dims[-1][3] == 1 else r      # a contiguous last dimension
  for k in range(inner):
    j0, j1, lo, step = dims[k]
    C.append(f"{ind}for (int64_t j{k} = {j0}; j{k} < {j1}; j{k}++) {{")
    ind += "  "
    soff.append(f"j{k} * {xs[k]}")
    doff.append(f"({lo} + j{k} * {step}) * {ys[k]}")
  so, do = " + ".join(soff) or "0", " + ".join(doff) or "0"
  if inner < r:
    j0, j1, lo, _ = dims[-1]
    C.append(f"{ind}memcpy(Y + {do} + {lo + j0}, X + {so} + {j0}, {j1 - j0} * sizeof({t}));")
  else:
    C.append(f"{ind}Y[{do}] = X[{so}];")
  for _ in range(inner):
    ind = ind[:-2]
    C.append(f"{ind}}}")
  C.append("}")
  return "\n".join(C) + "\n"


def _pad_work(node):
  return 2 * node.outs[0].size + 1


opaque.register("pad", _pad_supported, _pad_source, _pad_work)
opaque.register("dynamic_slice", _ds_supported, _ds_source, _ds_work)
opaque.register("dynamic_update_slice", _dus_supported, _dus_source, _dus_work)
opaque.register("concatenate", _concat_supported, _concat_source, _copy_work)
opaque.register("stack", _stack_supported, _stack_source, _copy_work)
opaque.register("split", _split_supported, _split_source, _copy_work)
