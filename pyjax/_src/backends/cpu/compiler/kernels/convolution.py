"""Native ``conv_general_dilated`` for float32/float64.

Any dimension numbers, window strides, padding (negative too), lhs/rhs dilation, feature
and batch groups.  With BLAS (SciPy's ``sgemm``/``dgemm`` pointers set) a convolution is
im2col + GEMM (``_gemm_source``): product rows are output positions, columns output
features, the contraction (input feature, kernel offset); channels-last products gather
and multiply cache-sized row blocks per thread (``_row_block_source``), transposed ones
(kernel gradients) gather and multiply cache-sized contraction chunks into partial products
added in a fixed order (``_k_chunks``), or gather the whole matrix on the pool and split one
product.  Without BLAS the direct
kernel runs: one work item per (output batch element, output feature), ``out[q] += w *
x[q * stride + k * dilation - lo]`` as a ``#pragma omp simd`` loop over the valid range.
Results agree with the NumPy tier's im2col + BLAS to rounding, not bit for bit (as XLA's
own convolution algorithms differ among themselves).

Registered in ``opaque.py``: fusion treats the node like a BLAS dot (a group of its own).
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.compiler.kernels import dot as _dot
from pyjax._src.backends.cpu.compiler import opaque
from pyjax._src.backends.cpu.compiler.ir import Value
from pyjax._src.backends.cpu.compiler.ir import strides as _strides
from pyjax._src.backends.cpu.compiler.kernels.elementwise import storage_type

PRIM = "conv_general_dilated"
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_INT_MAX = 2 ** 31 - 1


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
  """C of ``name(void *const *P)``: ``P`` = (lhs, rhs, out) data pointers.  With BLAS
  (``pj_sgemm``/``pj_dgemm`` set) a convolution whose innermost input or output dimension
  is not spatial (channels-last, and the transposed convolutions of their gradients) runs
  as im2col + GEMM (``_gemm_source``), everything else as the direct kernel."""
  g = _geometry(node)
  direct = _direct_source(node, name + "_direct")
  # spatial-innermost layouts (NCHW): the direct kernel's SIMD loop runs along contiguous
  # rows of input and output, and beats a GEMM over few channels (a 3-channel 8x64x64
  # image: 1.4 vs 2.8 ms; a depthwise 5x5 blur: 3.3 vs 70 ms)
  spatial_inner = g["os_sp"][-1] == 1 and g["xs_sp"][-1] == 1
  gemm = None if spatial_inner else _gemm_source(node, name + "_gemm", g)
  if gemm is None:
    return direct + f"static void {name}(void *const *P) {{ {name}_direct(P); }}\n"
  return (direct + gemm + f"static void {name}(void *const *P) {{\n"
          f"  if ({'pj_dgemm' if node.outs[0].dtype == np.float64 else 'pj_sgemm'}) "
          f"{name}_gemm(P);\n  else {name}_direct(P);\n}}\n")


def _direct_source(node, name):
  """C of the direct kernel ``name(P)`` (no BLAS needed)."""
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


def _dense(sizes, strides, step):
  """Whether dims of ``sizes`` at ``strides`` lie row-major with innermost step ``step``."""
  want = step
  for n, s in zip(reversed(sizes), reversed(strides)):
    if n > 1 and s != want:
      return False
    want *= n
  return True


def _row_block(R, K):
  """Rows per block of the row-blocked product: its im2col block (rows x K) stays within
  ~256 KB of cache, and there are about 8 blocks or more to share; at least 16 rows."""
  return max(16, min(R, (1 << 16) // max(K, 1), -(-R // 8)))


def _gather_row(L, ind, t, g, corder, xstride, lo=None, hi=None):
  """Append C that gathers one im2col row into ``a`` (row-major over ``corder``; zeros
  where the window reads padding or a dilation hole), the row's output position already
  decomposed (``n0``, ``q...``).  With ``lo`` (a C expression), the outermost contraction
  dimension runs over [lo, hi) only and ``a`` holds just that range (``hi`` a C expression)."""
  astride, acc = [], 1
  for d in reversed(corder):
    astride.append(acc)
    acc *= d[2]
  astride.reverse()
  L.append(f"{ind}const int ok_ = 1; const int64_t xo_ = n0 * {g['xs_n']}, "
           f"ao_ = {'0' if lo is None else f'-({lo}) * {astride[0]}'}; (void)ok_;")
  prev = "_"
  for li, (kind, ax, size) in enumerate(corder[:-1]):
    rng = ("0", str(size)) if li or lo is None else (lo, hi)
    L.append(f"{ind}for (int64_t {kind}{ax} = {rng[0]}; {kind}{ax} < {rng[1]}; {kind}{ax}++) {{")
    ind += "  "
    cur = f"_{li}"
    if kind == "c":
      L.append(f"{ind}const int ok{cur} = ok{prev}; (void)ok{cur};")
      L.append(f"{ind}const int64_t xo{cur} = xo{prev} + c0 * {xstride[('c', 0)]};")
    else:
      s, (plo, _), ld, rd, n_in = (g["stride"][ax], g["pad"][ax], g["ldil"][ax],
                                   g["rdil"][ax], g["in_sp"][ax])
      ext = (n_in - 1) * ld + 1
      L.append(f"{ind}const int64_t p{ax} = q{ax} * {s} + k{ax} * {rd} - ({plo});")
      cond = f"p{ax} >= 0 && p{ax} < {ext}" + (f" && p{ax} % {ld} == 0" if ld > 1 else "")
      L.append(f"{ind}const int ok{cur} = ok{prev} && ({cond});")
      L.append(f"{ind}const int64_t xo{cur} = xo{prev} + (ok{cur} ? p{ax} / {ld} : 0) * "
               f"{g['xs_sp'][ax]};")
    L.append(f"{ind}const int64_t ao{cur} = ao{prev} + {kind}{ax} * {astride[li]};")
    prev = cur
  kind, ax, size = corder[-1]
  var = f"{kind}{ax}"
  v0, v1 = ("0", str(size)) if len(corder) > 1 or lo is None else (lo, hi)
  if kind == "c":
    xs = xstride[("c", 0)]
    L.append(f"{ind}if (ok{prev}) {{")
    L.append(f"{ind}  #pragma omp simd")
    L.append(f"{ind}  for (int64_t {var} = {v0}; {var} < {v1}; {var}++) "
             f"a[ao{prev} + {var}] = X[xo{prev} + {var} * {xs}];")
    L.append(f"{ind}}} else {{")
    L.append(f"{ind}  for (int64_t {var} = {v0}; {var} < {v1}; {var}++) a[ao{prev} + {var}] = 0;")
    L.append(f"{ind}}}")
  else:
    s, (plo, _), ld, rd, n_in = (g["stride"][ax], g["pad"][ax], g["ldil"][ax], g["rdil"][ax],
                                 g["in_sp"][ax])
    ext = (n_in - 1) * ld + 1
    L.append(f"{ind}for (int64_t {var} = {v0}; {var} < {v1}; {var}++) {{")
    L.append(f"{ind}  const int64_t p = q{ax} * {s} + {var} * {rd} - ({plo});")
    cond = f"p >= 0 && p < {ext}" + (f" && p % {ld} == 0" if ld > 1 else "")
    L.append(f"{ind}  const int ok = ok{prev} && ({cond});")
    L.append(f"{ind}  const int64_t xi = ok ? xo{prev} + (p / {ld}) * {g['xs_sp'][ax]} : 0;")
    L.append(f"{ind}  a[ao{prev} + {var}] = ok ? X[xi] : ({t})0;")
    L.append(f"{ind}}}")
  for _ in corder[:-1]:
    ind = ind[:-2]
    L.append(f"{ind}}}")


def _row_block_source(name, ctx, t, dbl, tb, g, corder, xstride, rorder, R, K, og, BR):
  """C of ``name_rows(ctx, lo, hi)``: for each block of ``BR`` product rows, gather its
  im2col rows (row-major, ``BR x K``) into the thread's scratch memory and multiply them
  by the kernel matrix into the block's rows of C (single-threaded BLAS), so the gathered
  rows are read back from cache and no ``R x K`` matrix is ever written."""
  L = [f"static void {name}_rows(void *vc, int64_t lo, int64_t hi) {{",
       f"  const {ctx} *cx = (const {ctx} *)vc;",
       f"  const {t} *restrict X = cx->X;",
       f"  {t} *restrict Ab = ({t} *)pj_scratch(sizeof({t}) * (size_t){BR * K});",
       "  if (!Ab) abort();",
       "  for (int64_t blk = lo; blk < hi; blk++) {",
       f"    const int64_t r0 = blk * {BR}, r1 = r0 + {BR} < {R} ? r0 + {BR} : {R};",
       "    for (int64_t r = r0; r < r1; r++) {",
       f"      {t} *restrict a = Ab + (r - r0) * {K};",
       "      int64_t rr = r;"]
  ind = "      "
  for kind, ax, size in reversed(rorder):
    L.append(f"{ind}const int64_t {kind}{ax} = rr % {size}; rr /= {size};")
  _gather_row(L, ind, t, g, corder, xstride)
  L.append("    }")
  if R <= BR and R <= FEW_ROWS and og <= FEW_ROWS * 4 and not tb:
    L += _few_rows_product(t, R, K, og)
  else:
    L.append(f"    pj_gemm_job job = {{{dbl}, 0, {tb}, r1 - r0, {og}, {K}, 1, Ab, cx->B, "
             f"cx->C + r0 * {og}}};")
    L.append("    pj_gemm_block(&job, 0, 0, r1 - r0, 0, " + str(og) + ");")
  L.append("  }")
  L.append("  pj_unscratch(Ab);")
  L.append("}")
  return L


FEW_ROWS = 16   # a product of at most this many rows (and 4x as many columns): no BLAS


def _few_rows_product(t, R, K, og):
  """C multiplying the gathered ``R x K`` rows ``Ab`` (one block: every row) by the
  ``K x og`` kernel matrix into ``C`` without BLAS: a long contraction into a small
  product (the kernel gradient of a first layer, e.g. 9 x 12544 times 12544 x 32), where
  BLAS would spend most of its time packing the ``K x og`` operand.  The ``R x og``
  accumulators stay in registers; each sums its k terms in order (the same code on both
  tiers)."""
  return [
      f"    {t} acc[{R}][{og}];",
      f"    for (int r = 0; r < {R}; r++) for (int o = 0; o < {og}; o++) acc[r][o] = 0;",
      f"    const {t} *restrict Bk = cx->B;",
      f"    for (int64_t k = 0; k < {K}; k++, Bk += {og}) {{",
      f"      _Pragma(\"GCC unroll {R}\") for (int r = 0; r < {R}; r++) {{",
      f"        const {t} av = Ab[r * {K} + k];",
      "        #pragma omp simd",
      f"        for (int o = 0; o < {og}; o++) acc[r][o] += av * Bk[o];",
      "      }",
      "    }",
      f"    for (int r = 0; r < {R}; r++) for (int o = 0; o < {og}; o++) "
      f"cx->C[r * {og} + o] = acc[r][o];"]


def _k_chunks(n0, unit, R, og):
  """How a transposed im2col (``K x R``, outermost dimension ``n0`` of ``unit`` elements
  each, e.g. the kernel gradient of a channels-last convolution: K = batch x output
  positions) is cut along the contraction: (outer indices per chunk, chunks, groups), or
  None to gather it whole.  A chunk (~256 KB) is gathered and multiplied into its group's
  partial product (BLAS with beta = 1 after the group's first chunk) while it is still in
  cache, and every element of both operands is packed once; groups run on the pool and
  their partial products are added in a fixed order.  All of it follows the shapes alone,
  never the thread count or the load, so the bits do not either."""
  if n0 < 2 or unit > 1 << 16:
    return None
  cu = max(1, (1 << 16) // unit)
  nchunk = -(-n0 // cu)
  if nchunk < 2:
    return None
  groups = min(nchunk, 4, max(1, og * unit * n0 // (1 << 20)))   # >= ~1M multiply-adds each
  while groups > 1 and (groups - 1) * R * og > 1 << 22:
    groups -= 1
  return cu, nchunk, groups


def _k_chunk_source(name, ctx, t, dbl, tb, R, K, og, n0, kplan):
  """C of ``name_kgroups(ctx, lo, hi)``: for each group of contraction chunks
  (``_k_chunks``), gather each chunk's rows of the transposed im2col (``kc x R``,
  ``name_im2col``) into the thread's scratch memory and accumulate its product with the
  matching ``kc`` rows (tb = 0) or columns (tb = 1) of the kernel matrix into the group's
  partial product ``P[gi]``, stored transposed (``og x R``): the gathered chunk is BLAS's
  first operand, packed reading whole cache lines of it."""
  cu, nchunk, groups = kplan
  unit = R * K // n0
  kper = K // n0
  f = "double" if dbl else "float"
  gemm = "pj_dgemm" if dbl else "pj_sgemm"
  return [
      f"static void {name}_kgroups(void *vc, int64_t lo, int64_t hi) {{",
      f"  const {ctx} *cx = (const {ctx} *)vc;",
      f"  {t} *Ab = ({t} *)pj_scratch(sizeof({t}) * (size_t){cu * unit});",
      "  if (!Ab) abort();",
      "  for (int64_t gi = lo; gi < hi; gi++) {",
      f"    {t} *Cg = cx->P + gi * {R * og};",
      f"    const int64_t c0_ = gi * {nchunk} / {groups}, c1_ = (gi + 1) * {nchunk} / {groups};",
      "    for (int64_t ch = c0_; ch < c1_; ch++) {",
      f"      const int64_t u0 = ch * {cu}, u1 = u0 + {cu} < {n0} ? u0 + {cu} : {n0};",
      f"      {ctx} sub = *cx; sub.A = Ab; sub.a0 = u0 * {unit};",
      f"      {name}_im2col((void *)&sub, u0, u1);",
      # column-major P[R, og] = Ab[R, kc] B[kc, og] (Ab stored kc x R row-major)
      f"      char opa = 'N', opb = '{'N' if tb else 'T'}';",
      f"      int M = {R}, N = {og}, Kc = (int)((u1 - u0) * {kper}), lda = {R}, "
      f"ldb = {K if tb else og}, ldc = {R};",
      f"      {f} one = 1, beta = ch == c0_ ? 0 : 1;",
      f"      {gemm}(&opa, &opb, &M, &N, &Kc, &one, Ab, &lda, ({f} *)cx->B + u0 * "
      f"{kper * (1 if tb else og)}, &ldb, &beta, Cg, &ldc);",
      "    }",
      "  }",
      "  pj_unscratch(Ab);",
      "}"]


def _loop_nest(L, order, ind):
  """Append C for-loops over ``order`` ((kind, axis, size) triples), outermost first;
  returns the indentation of the body."""
  for kind, ax, size in order:
    L.append(f"{ind}for (int64_t {kind}{ax} = 0; {kind}{ax} < {size}; {kind}{ax}++)")
    ind += "  "
  return ind

def _gemm_source(node, name, g):
  """C of ``name(P)``: the convolution as one GEMM per (batch group, feature group).

  Rows of the product are the output positions (output batch element and spatial
  position, ordered as the output lays them out, so that a row-major ``R x Og`` product is
  usually the output itself), columns the output features of the group, and the
  contraction runs over (input feature, kernel offset) -- ordered input feature last when
  the input's features are contiguous.  The im2col matrix ``A`` is gathered into scratch
  memory on the pool, stored either row-major (``R x K``) or transposed (``K x R``,
  when the input is contiguous along the innermost row dimension, e.g. the kernel
  gradient of a channels-last convolution), zeros where the window reads padding or a
  dilation hole.  The kernel is read in place when its layout is already a dense
  ``K x Og`` (or ``Og x K``) matrix, else copied.  Returns None when a size exceeds BLAS's
  ``int``."""
  nsp = g["nsp"]
  t = storage_type(node.outs[0].dtype)
  dbl = int(node.outs[0].dtype == np.float64)
  nout, cg, og = g["nout"], g["cg"], g["og"]
  osp, ksz = g["osp"], g["ksz"]
  R = nout * math.prod(osp)
  K = cg * math.prod(ksz)
  groups = g["B"] * g["G"]
  if max(R, K, og) > _INT_MAX or R * K > 2 ** 62:
    return None
  # --- dims: (kind, axis, size) --------------------------------------------------------
  rdims = [("n", 0, nout)] + [("q", i, osp[i]) for i in range(nsp)]
  ostride = {("n", 0): g["os_n"], **{("q", i): g["os_sp"][i] for i in range(nsp)}}
  rorder = sorted(rdims, key=lambda d: -ostride[(d[0], d[1])])
  out_direct = (groups == 1 and g["os_o"] == 1 and
                _dense([d[2] for d in rorder], [ostride[(d[0], d[1])] for d in rorder], og))
  kdims = [("k", i, ksz[i]) for i in range(nsp)]
  corder = kdims + [("c", 0, cg)] if g["xs_c"] == 1 else [("c", 0, cg)] + kdims
  xstride = {("n", 0): g["xs_n"], ("c", 0): g["xs_c"]}
  inner_r = rorder[-1]
  ta = int(inner_r[0] == "n" and g["xs_n"] == 1 and inner_r[2] > 1)
  nest = corder + rorder if ta else rorder + corder
  # the kernel as a K x Og (tb = 0) or Og x K (tb = 1) matrix
  wstride = {("c", 0): g["ws_i"], **{("k", i): g["ws_k"][i] for i in range(nsp)}}
  csz = [d[2] for d in corder]
  cst = [wstride[(d[0], d[1])] for d in corder]
  w_direct, tb = False, 0
  if groups == 1:
    if (og == 1 or g["ws_o"] == 1) and _dense(csz, cst, og):
      w_direct, tb = True, 0
    elif _dense(csz, cst, 1) and (og == 1 or g["ws_o"] == K):
      w_direct, tb = True, 1
  L = []
  ctx = f"{name}_ctx"
  L.append(f"typedef struct {{ const {t} *X; {t} *A; const {t} *B; {t} *C; {t} *P; "
           f"int64_t a0; }} {ctx};")
  BR = _row_block(R, K)
  if not ta:
    L.extend(_row_block_source(name, ctx, t, dbl, tb, g, corder, xstride, rorder, R, K, og,
                               BR))
  kplan = _k_chunks(nest[0][2], R * K // max(nest[0][2], 1), R, og) if ta else None
  # --- im2col over the pool, along the nest's outermost dim ----------------------------
  L.append(f"static void {name}_im2col(void *vc, int64_t lo, int64_t hi) {{")
  L.append(f"  const {ctx} *cx = (const {ctx} *)vc;")
  L.append(f"  const {t} *restrict X = cx->X;")
  L.append(f"  {t} *restrict A = cx->A;")
  astride = []
  acc = 1
  for d in reversed(nest):
    astride.append(acc)
    acc *= d[2]
  astride.reverse()
  bound = set()
  ind = "  "
  depth = len(nest)
  L.append(f"{ind}const int ok_ = 1; const int64_t xo_ = 0, ao_ = -cx->a0; (void)ok_;")
  prev = "_"
  for li, (kind, ax, size) in enumerate(nest):
    var = f"{kind}{ax}"
    last = li == depth - 1
    if last:
      break
    rng = ("lo", "hi") if li == 0 else ("0", str(size))
    L.append(f"{ind}for (int64_t {var} = {rng[0]}; {var} < {rng[1]}; {var}++) {{")
    ind += "  "
    cur = f"_{li}"
    aoff = f"ao{prev} + {var} * {astride[li]}"
    if kind in ("n", "c"):
      L.append(f"{ind}const int ok{cur} = ok{prev}; (void)ok{cur};")
      L.append(f"{ind}const int64_t xo{cur} = xo{prev} + {var} * {xstride[(kind, 0)]};")
    else:
      bound.add((kind, ax))
      other = ("k" if kind == "q" else "q", ax)
      if other in bound:
        s, (plo, _), ld, rd, n_in = (g["stride"][ax], g["pad"][ax], g["ldil"][ax],
                                     g["rdil"][ax], g["in_sp"][ax])
        ext = (n_in - 1) * ld + 1
        L.append(f"{ind}const int64_t p{ax} = q{ax} * {s} + k{ax} * {rd} - ({plo});")
        cond = f"p{ax} >= 0 && p{ax} < {ext}" + (f" && p{ax} % {ld} == 0" if ld > 1 else "")
        L.append(f"{ind}const int ok{cur} = ok{prev} && ({cond});")
        L.append(f"{ind}const int64_t xo{cur} = xo{prev} + (ok{cur} ? p{ax} / {ld} : 0) * "
                 f"{g['xs_sp'][ax]};")
      else:
        L.append(f"{ind}const int ok{cur} = ok{prev}; (void)ok{cur};")
        L.append(f"{ind}const int64_t xo{cur} = xo{prev};")
    L.append(f"{ind}const int64_t ao{cur} = {aoff};")
    prev = cur
  kind, ax, size = nest[-1]
  var = f"{kind}{ax}"
  if depth == 1:
    L.append(f"{ind}{{ const int64_t v_lo = lo, v_hi = hi;")
  else:
    L.append(f"{ind}{{ const int64_t v_lo = 0, v_hi = {size};")
  ind += "  "
  if kind in ("n", "c"):
    xs = xstride[(kind, 0)]
    L.append(f"{ind}if (ok{prev}) {{")
    L.append(f"{ind}  #pragma omp simd")
    L.append(f"{ind}  for (int64_t {var} = v_lo; {var} < v_hi; {var}++) "
             f"A[ao{prev} + {var}] = X[xo{prev} + {var} * {xs}];")
    L.append(f"{ind}}} else {{")
    L.append(f"{ind}  for (int64_t {var} = v_lo; {var} < v_hi; {var}++) A[ao{prev} + {var}] = 0;")
    L.append(f"{ind}}}")
  else:
    s, (plo, _), ld, rd, n_in = (g["stride"][ax], g["pad"][ax], g["ldil"][ax], g["rdil"][ax],
                                 g["in_sp"][ax])
    ext = (n_in - 1) * ld + 1
    qexpr = var if kind == "q" else f"q{ax}"
    kexpr = var if kind == "k" else f"k{ax}"
    L.append(f"{ind}for (int64_t {var} = v_lo; {var} < v_hi; {var}++) {{")
    L.append(f"{ind}  const int64_t p = {qexpr} * {s} + {kexpr} * {rd} - ({plo});")
    cond = f"p >= 0 && p < {ext}" + (f" && p % {ld} == 0" if ld > 1 else "")
    L.append(f"{ind}  const int ok = ok{prev} && ({cond});")
    L.append(f"{ind}  const int64_t xi = ok ? xo{prev} + (p / {ld}) * {g['xs_sp'][ax]} : 0;")
    L.append(f"{ind}  A[ao{prev} + {var}] = ok ? X[xi] : ({t})0;")
    L.append(f"{ind}}}")
  ind = ind[:-2]
  L.append(f"{ind}}}")
  for _ in range(depth - 1):
    ind = ind[:-2]
    L.append(f"{ind}}}")
  L.append("}")
  # --- the driver -----------------------------------------------------------------------
  n0 = nest[0][2]
  if kplan is not None:
    L.extend(_k_chunk_source(name, ctx, t, dbl, tb, R, K, og, n0, kplan))
  per0 = max(1, R * K // max(n0, 1))
  grain = max(1, 16384 // per0)
  L.append(f"static void {name}(void *const *P) {{")
  L.append(f"  const {t} *X = (const {t} *)P[0];")
  L.append(f"  const {t} *W = (const {t} *)P[1];")
  L.append(f"  {t} *Y = ({t} *)P[2];")
  if ta and kplan is None:
    L.append(f"  {t} *A = ({t} *)pj_scratch(sizeof({t}) * (size_t){R * K});")
    L.append("  if (!A) abort();")
  else:
    L.append(f"  {t} *A = 0;")
  if kplan is not None:
    L.append(f"  {t} *Pp = ({t} *)pj_scratch(sizeof({t}) * (size_t){kplan[2] * R * og});")
    L.append("  if (!Pp) abort();")
  if not w_direct:
    L.append(f"  {t} *Wm = ({t} *)pj_scratch(sizeof({t}) * (size_t){K * og});")
  if not out_direct:
    L.append(f"  {t} *Cm = ({t} *)pj_scratch(sizeof({t}) * (size_t){R * og});")
  L.append("  int pj_prev_threads = pj_blas_get_threads ? pj_blas_get_threads() : 0;")
  L.append("  if (pj_blas_set_threads && pj_prev_threads != 1) pj_blas_set_threads(1);")
  L.append(f"  for (int64_t bg = 0; bg < {groups}; bg++) {{")
  L.append(f"    const int64_t b = bg / {g['G']}, gr = bg % {g['G']};")
  if w_direct:
    L.append(f"    const {t} *Bm = W;")
  else:
    # Wm[c][o] = W[(bg * og + o) * ws_o + c-dims]
    L.append(f"    {{ {t} *restrict wd = Wm;")
    ind = _loop_nest(L, corder, "      ")
    woff = " + ".join(f"{kind}{ax} * {wstride[(kind, ax)]}" for kind, ax, _ in corder)
    L.append(f"{ind}for (int64_t o = 0; o < {og}; o++) "
             f"*wd++ = W[(bg * {og} + o) * {g['ws_o']} + {woff}];")
    L.append("    }")
    L.append(f"    const {t} *Bm = Wm;")
  L.append(f"    {t} *Cp = {'Y' if out_direct else 'Cm'};")
  L.append(f"    {ctx} cx = {{X + b * {nout * g['xs_n']} + gr * {cg * g['xs_c']}, A, Bm, Cp, "
           f"{'0' if kplan is None else 'Pp'}, 0}};")
  if kplan is not None:
    ngr = kplan[2]
    L.append(f"    if (pj_parallel_for && {ngr} > 1) "
             f"pj_parallel_for({name}_kgroups, (void *)&cx, {ngr}, 1);")
    L.append(f"    else {name}_kgroups((void *)&cx, 0, {ngr});")
    # C = the groups' partial products (stored og x R), added in a fixed order
    L.append(f"    for (int64_t r = 0; r < {R}; r++)")
    L.append(f"      for (int64_t o = 0; o < {og}; o++) {{")
    L.append(f"        {t} s = Pp[o * {R} + r];")
    L.append(f"        for (int64_t q = 1; q < {ngr}; q++) s += Pp[q * {R * og} + o * {R} + r];")
    L.append(f"        Cp[r * {og} + o] = s;")
    L.append("      }")
  elif ta:
    L.append(f"    if (pj_parallel_for && {R * K} >= 32768) "
             f"pj_parallel_for({name}_im2col, (void *)&cx, {n0}, {grain});")
    L.append(f"    else {name}_im2col((void *)&cx, 0, {n0});")
    L.append(f"    pj_gemm_job job = {{{dbl}, {ta}, {tb}, {R}, {og}, {K}, 1, A, Bm, Cp, "
             f"{_dot.block_size(R, og, K, 1)}}};")
    L.append("    pj_gemm_run(&job);")
  else:
    nblk = -(-R // BR)
    L.append(f"    if (pj_parallel_for && {nblk} > 1 && {R * K * og} >= 65536) "
             f"pj_parallel_for({name}_rows, (void *)&cx, {nblk}, 1);")
    L.append(f"    else {name}_rows((void *)&cx, 0, {nblk});")
  if not out_direct:
    L.append(f"    {{ const {t} *restrict cs = Cm;")
    ind = _loop_nest(L, rorder, "      ")
    yoff = " + ".join(f"{kind}{ax} * {ostride[(kind, ax)]}" for kind, ax, _ in rorder)
    L.append(f"{ind}for (int64_t o = 0; o < {og}; o++) "
             f"Y[{yoff} + (bg * {og} + o) * {g['os_o']}] = *cs++;")
    L.append("    }")
  L.append("  }")
  L.append("  if (pj_blas_set_threads && pj_prev_threads != 1) pj_blas_set_threads(pj_prev_threads);")
  if not out_direct:
    L.append("  pj_unscratch(Cm);")
  if not w_direct:
    L.append("  pj_unscratch(Wm);")
  if kplan is not None:
    L.append("  pj_unscratch(Pp);")
  if ta and kplan is None:
    L.append("  pj_unscratch(A);")
  L.append("}")
  return "\n".join(L) + "\n"


opaque.register(PRIM, supported, kernel_source, work)
