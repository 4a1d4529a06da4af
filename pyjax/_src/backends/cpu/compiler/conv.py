"""Native ``conv_general_dilated`` for float32/float64: a direct convolution kernel.

Any dimension numbers, window strides, padding (negative too), lhs/rhs dilation, feature
and batch groups.  One work item per (output batch element, output feature): its output
plane is zeroed, then for each input feature of its group and each kernel offset the
valid range of the innermost output dimension is computed in closed form and
``out[q] += w * x[q * stride + k * dilation - lo]`` runs as a ``#pragma omp simd`` loop
(an input dilated along the innermost dimension checks each position instead).  The work
items run on pyjax's pool.  Products are summed in (input feature, kernel offset) order
with fused multiply-adds, so results agree with the NumPy tier's im2col + BLAS to
rounding, not bit for bit (as XLA's own convolution algorithms differ among themselves).

Registered in ``opaque.py``: fusion treats the node like a BLAS dot (a group of its own).
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.compiler import opaque
from pyjax._src.backends.cpu.compiler.ir import Value
from pyjax._src.backends.cpu.compiler.ir import strides as _strides
from pyjax._src.backends.cpu.compiler.lower_c import storage_type

PRIM = "conv_general_dilated"
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def supported(node):
  """Whether ``node`` (a conv_general_dilated) runs natively."""
  if node.prim != PRIM or len(node.ins) != 2 or len(node.outs) != 1:
    return False
  lhs, rhs = node.ins
  out = node.outs[0]
  if type(lhs) is not Value or type(rhs) is not Value:
    return False
  d = out.dtype
  if d not in _FLOATS or lhs.dtype != d or rhs.dtype != d:
    return False
  p = node.params
  pref = p.get("preferred_element_type")
  if pref is not None and np.dtype(pref) != d:
    return False
  if lhs.ndim < 3 or 0 in lhs.shape or 0 in rhs.shape or 0 in out.shape:
    return False
  try:
    _geometry(node)
  except (KeyError, TypeError, ValueError):
    return False
  return True


def _geometry(node):
  lhs, rhs = node.ins
  out = node.outs[0]
  p = node.params
  lspec, rspec, ospec = (tuple(int(a) for a in s) for s in p["dimension_numbers"])
  nsp = lhs.ndim - 2
  sl, sr, so = _strides(lhs.shape), _strides(rhs.shape), _strides(out.shape)
  g = dict(
      nsp=nsp,
      N=lhs.shape[lspec[0]], C=lhs.shape[lspec[1]], O=rhs.shape[rspec[0]],
      xs_n=sl[lspec[0]], xs_c=sl[lspec[1]], xs_sp=[sl[a] for a in lspec[2:]],
      in_sp=[lhs.shape[a] for a in lspec[2:]],
      ws_o=sr[rspec[0]], ws_i=sr[rspec[1]], ws_k=[sr[a] for a in rspec[2:]],
      ksz=[rhs.shape[a] for a in rspec[2:]],
      os_n=so[ospec[0]], os_o=so[ospec[1]], os_sp=[so[a] for a in ospec[2:]],
      osp=[out.shape[a] for a in ospec[2:]],
      stride=[int(s) for s in p["window_strides"]],
      pad=[(int(lo), int(hi)) for lo, hi in p["padding"]],
      ldil=[int(d) for d in (p.get("lhs_dilation") or (1,) * nsp)],
      rdil=[int(d) for d in (p.get("rhs_dilation") or (1,) * nsp)],
      G=int(p.get("feature_group_count", 1) or 1), B=int(p.get("batch_group_count", 1) or 1))
  if len(g["stride"]) != nsp or len(g["pad"]) != nsp or len(g["ldil"]) != nsp or len(g["rdil"]) != nsp:
    raise ValueError("bad conv geometry")
  g["nout"] = g["N"] // g["B"]
  g["cg"] = g["C"] // g["G"]
  g["og"] = g["O"] // (g["G"] * g["B"])
  if g["nout"] * g["B"] != g["N"] or g["cg"] * g["G"] != g["C"] or g["og"] * g["G"] * g["B"] != g["O"]:
    raise ValueError("bad conv groups")
  if out.shape[ospec[0]] != g["nout"] or out.shape[ospec[1]] != g["O"]:
    raise ValueError("bad conv output")
  return g


def work(node):
  """Multiply-adds of the convolution (for the GIL-release threshold)."""
  g = _geometry(node)
  return g["nout"] * g["O"] * g["cg"] * math.prod(g["ksz"]) * math.prod(g["osp"])


def kernel_source(node, name):
  """C of ``name(void *const *P)``: ``P`` = (lhs, rhs, out) data pointers."""
  ctype = storage_type(node.outs[0].dtype)
  g = _geometry(node)
  nsp = g["nsp"]
  t = ctype
  items = g["nout"] * g["O"]
  per = g["cg"] * math.prod(g["ksz"]) * math.prod(g["osp"])
  grain = max(1, 32768 // max(per, 1))
  L = []
  L.append(f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{")
  L.append("  void *const *P = (void *const *)ctx;")
  L.append(f"  const {t} *restrict X = (const {t} *)P[0];")
  L.append(f"  const {t} *restrict W = (const {t} *)P[1];")
  L.append(f"  {t} *restrict Y = ({t} *)P[2];")
  L.append("  for (int64_t it = lo; it < hi; it++) {")
  L.append(f"    const int64_t n = it / {g['O']}, o = it % {g['O']};")
  L.append(f"    const int64_t bg = o / {g['og']}, b = bg / {g['G']}, gr = bg % {g['G']};")
  L.append(f"    {t} *restrict y0 = Y + n * {g['os_n']} + o * {g['os_o']};")
  L.append(f"    const {t} *restrict x0 = X + (b * {g['nout']} + n) * {g['xs_n']} + gr * {g['cg'] * g['xs_c']};")
  L.append(f"    const {t} *restrict w0 = W + o * {g['ws_o']};")
  # zero the output plane
  ind = "    "
  for i in range(nsp):
    L.append(f"{ind}for (int64_t z{i} = 0; z{i} < {g['osp'][i]}; z{i}++)")
    ind += "  "
  zidx = " + ".join(f"z{i} * {g['os_sp'][i]}" for i in range(nsp))
  L.append(f"{ind}y0[{zidx}] = 0;")
  L.append(f"    for (int64_t ci = 0; ci < {g['cg']}; ci++) {{")
  L.append(f"      const {t} *restrict xc = x0 + ci * {g['xs_c']};")
  L.append(f"      const {t} *restrict wc = w0 + ci * {g['ws_i']};")
  depth = 3
  close = 1
  for i in range(nsp):
    ind = "  " * depth
    L.append(f"{ind}for (int64_t k{i} = 0; k{i} < {g['ksz'][i]}; k{i}++) {{")
    depth += 1
    close += 1
  ind = "  " * depth
  widx = " + ".join(f"k{i} * {g['ws_k'][i]}" for i in range(nsp))
  L.append(f"{ind}const {t} wv = wc[{widx}];")
  # outer spatial dims: loop over outputs, skip invalid input rows
  for i in range(nsp - 1):
    s, (lo, _), ld, rd, n_in = g["stride"][i], g["pad"][i], g["ldil"][i], g["rdil"][i], g["in_sp"][i]
    ext = (n_in - 1) * ld + 1
    L.append(f"{ind}for (int64_t q{i} = 0; q{i} < {g['osp'][i]}; q{i}++) {{")
    depth += 1
    close += 1
    ind = "  " * depth
    L.append(f"{ind}const int64_t p{i} = q{i} * {s} + k{i} * {rd} - ({lo});")
    cond = f"p{i} < 0 || p{i} >= {ext}"
    if ld > 1:
      cond += f" || p{i} % {ld} != 0"
    L.append(f"{ind}if ({cond}) continue;")
    L.append(f"{ind}const int64_t i{i} = p{i} / {ld};")
  j = nsp - 1
  s, (lo, _), ld, rd, n_in = g["stride"][j], g["pad"][j], g["ldil"][j], g["rdil"][j], g["in_sp"][j]
  ext = (n_in - 1) * ld + 1
  yrow = " + ".join([f"q{i} * {g['os_sp'][i]}" for i in range(nsp - 1)] or ["0"])
  xrow = " + ".join([f"i{i} * {g['xs_sp'][i]}" for i in range(nsp - 1)] or ["0"])
  L.append(f"{ind}{t} *restrict yr = y0 + {yrow};")
  L.append(f"{ind}const {t} *restrict xr = xc + {xrow};")
  L.append(f"{ind}const int64_t off = k{j} * {rd} - ({lo});")
  if ld == 1:
    # q * s + off in [0, ext): q in [qa, qb)
    L.append(f"{ind}const int64_t qa = off >= 0 ? 0 : (-off + {s - 1}) / {s};")
    L.append(f"{ind}int64_t qb = {ext - 1} - off < 0 ? 0 : ({ext - 1} - off) / {s} + 1;")
    L.append(f"{ind}if (qb > {g['osp'][j]}) qb = {g['osp'][j]};")
    L.append(f"{ind}#pragma omp simd")
    L.append(f"{ind}for (int64_t q = qa; q < qb; q++) "
             f"yr[q * {g['os_sp'][j]}] += wv * xr[(q * {s} + off) * {g['xs_sp'][j]}];")
  else:
    L.append(f"{ind}for (int64_t q = 0; q < {g['osp'][j]}; q++) {{")
    L.append(f"{ind}  const int64_t p = q * {s} + off;")
    L.append(f"{ind}  if (p < 0 || p >= {ext} || p % {ld} != 0) continue;")
    L.append(f"{ind}  yr[q * {g['os_sp'][j]}] += wv * xr[(p / {ld}) * {g['xs_sp'][j]}];")
    L.append(f"{ind}}}")
  for _ in range(close):
    depth -= 1
    L.append("  " * depth + "}")
  L.append("  }")
  L.append("}")
  L.append(f"static void {name}(void *const *P) {{")
  L.append(f"  if (pj_parallel_for && {items} > 1) pj_parallel_for({name}_range, (void *)P, {items}, {grain});")
  L.append(f"  else {name}_range((void *)P, 0, {items});")
  L.append("}")
  return "\n".join(L) + "\n"


opaque.register(PRIM, supported, kernel_source, work)
