"""Native ``sort``, ``top_k`` and cumulative reductions (``cumsum``, ``cumprod``,
``cummax``, ``cummin``, ``cumlogsumexp``): opaque kernels (``opaque.py``).

**sort / top_k.** Every row along the sorted dimension (any rank; a non-last dimension is
read and written with a stride) is sorted on its own, rows spread over pyjax's pool.  The
keys of a row are encoded as unsigned integers whose order is the wanted order:

- sort (JAX's comparator, as the NumPy tier ``eager/sorting.py``): floats by value with
  ``-0.0 == 0.0`` and every NaN (either sign, any payload) equal and last; float16 and
  bfloat16 by value; signed integers with the sign bit flipped; bool as 0/1;
- top_k: the IEEE total order on the bits (``-NaN < -inf < ... < -0.0 < 0.0 < ... < NaN``),
  descending (the encoded key is complemented).

Several keys (``num_keys``) are concatenated into one integer when their widths add up to
at most 64 bits, else compared lexicographically.  A key of at most 32 bits is packed with
the element's index into one ``uint64`` (unique values: the order is the stable order);
otherwise (key, index) pairs or bare indices are sorted.  Rows of at least 64 whose keys
fit 64 bits use an LSD radix sort on the key's bytes, others a bottom-up merge sort
(insertion-sorted runs of 16, merges that take the left element on ties): stable either
way, whatever ``is_stable`` says, as the NumPy tier is.  Every operand is then gathered by
the permutation (through a row buffer when the row is strided or the output is the input;
an output that is the buffer of a later operand makes that operand be copied first).
Along a non-last dimension a work item is a tile of 16 adjacent rows, so strided rows are
read and written 16 contiguous elements at a time.

**Cumulative reductions.** ``out[k] = op(out[k-1], x[k])`` along the axis (from the end
when ``reverse``), the first element copied, exactly as NumPy's ``ufunc.accumulate`` in
the NumPy tier (``eager/reductions.py``): float sums and products in sequential order in
the operand's type; float16/bfloat16 accumulated in float32 and rounded once per output
element (not per step); integers wrap; cummax/cummin propagate the first NaN and order
``-0.0`` below ``0.0``; cumlogsumexp is NumPy's ``logaddexp`` formula with glibc's
``exp``/``log1p`` (scalar calls, never libmvec), so the tiers agree bit for bit.  Rows
along a non-last axis are processed as blocks of contiguous columns (vector loops); work
items (rows or column blocks) run on pyjax's pool.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from pyjax._src.backends.cpu.compiler import opaque
from pyjax._src.backends.cpu.compiler.ir import Value
from pyjax._src.backends.cpu.compiler.kernels.elementwise import storage_type

_BOOL = np.dtype(np.bool_)
_F16, _BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                               np.uint8, np.uint16, np.uint32, np.uint64)]
_KEY_DTYPES = frozenset([_BOOL, _F16, _BF16, _F32, _F64] + _INTS)
_CUM_DTYPES = frozenset([_F16, _BF16, _F32, _F64] + _INTS)
_FLOATS = frozenset([_F16, _BF16, _F32, _F64])
_CUM_PRIMS = ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
_MAX_ROW = 1 << 31
_RADIX_MIN = 64   # rows at least this long use the radix sort
_TILE = 16       # rows sorted together along a non-last dimension


def _geom(shape, axis):
  """(outer, n, inner): the sizes before, along and after ``axis``."""
  return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _values(node):
  return all(type(v) is Value for v in list(node.ins) + list(node.outs))


# --- sort / top_k -----------------------------------------------------------------------
def _key_bits(d):
  if d == _BOOL:
    return 1
  return d.itemsize * 8


def _key_expr(d, v, total_order):
  """C expression (an unsigned integer of ``_key_bits(d)`` significant bits) whose
  ascending order is the sort order of the storage-typed element ``v``."""
  if d == _BOOL:
    return f"(uint64_t)({v} == 0)" if total_order else f"(uint64_t)({v} != 0)"
  bits = d.itemsize * 8
  u = f"uint{bits}_t"
  # top_k (total_order): descending, so the ascending key is complemented
  flip = f"(({u})~({u})0)" if total_order else "0"
  if d.kind == "u":
    return f"(uint64_t)({u})({v} ^ {flip})"
  if d.kind == "i":
    return f"(uint64_t)({u})(({u})({v}) ^ (({u})1 << {bits - 1}) ^ {flip})"
  # floats: storage is the bit pattern (uint16_t) or float/double
  fn = {(_F16, False): "pj_sk_h", (_BF16, False): "pj_sk_b", (_F32, False): "pj_sk_f",
        (_F64, False): "pj_sk_d", (_F16, True): "pj_tk_16", (_BF16, True): "pj_tk_16",
        (_F32, True): "pj_tk_f", (_F64, True): "pj_tk_d"}[(d, total_order)]
  return f"(uint64_t){fn}({v})"


_SORT_HELPERS = r"""
#ifndef PJ_SORT_KEYS
#define PJ_SORT_KEYS 1
/* sort keys: unsigned integers ordered like JAX's comparator (-0.0 == 0.0, NaNs last) */
static inline uint32_t pj_sk_f(float f) {
  uint32_t u;
  if (f != f) return 0xFFFFFFFFu;
  if (f == 0) return 0x80000000u;
  memcpy(&u, &f, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u); }
static inline uint64_t pj_sk_d(double f) {
  uint64_t u;
  if (f != f) return ~(uint64_t)0;
  if (f == 0) return (uint64_t)1 << 63;
  memcpy(&u, &f, 8);
  return (u >> 63) ? ~u : (u | ((uint64_t)1 << 63)); }
static inline uint16_t pj_sk_16(uint16_t h, uint16_t inf) {
  const uint16_t a = h & 0x7FFFu;
  if (a > inf) return 0xFFFFu;
  if (a == 0) return 0x8000u;
  return (h & 0x8000u) ? (uint16_t)~h : (uint16_t)(h | 0x8000u); }
static inline uint16_t pj_sk_h(uint16_t h) { return pj_sk_16(h, 0x7C00u); }
static inline uint16_t pj_sk_b(uint16_t h) { return pj_sk_16(h, 0x7F80u); }
/* top_k keys: the IEEE total order on the bits, complemented (descending) */
static inline uint16_t pj_tk_16(uint16_t h) {
  return (uint16_t)~((h & 0x8000u) ? (uint16_t)~h : (uint16_t)(h | 0x8000u)); }
static inline uint32_t pj_tk_f(float f) { uint32_t u; memcpy(&u, &f, 4);
  return ~((u & 0x80000000u) ? ~u : (u | 0x80000000u)); }
static inline uint64_t pj_tk_d(double f) { uint64_t u; memcpy(&u, &f, 8);
  return ~((u >> 63) ? ~u : (u | ((uint64_t)1 << 63))); }
#endif
"""


def _sort_spec(node):
  """(key dtypes, key-encoding total-order flag, operands to gather, n, outer, inner,
  output row length, index output dtype or None) of a sort/top_k node; ValueError if
  unsupported."""
  if not _values(node):
    raise ValueError("literal operand")
  if node.prim == "sort":
    p = node.params
    dim, nk = int(p["dimension"]), int(p["num_keys"])
    ins, outs = node.ins, node.outs
    if not ins or len(outs) != len(ins) or not 1 <= nk <= len(ins):
      raise ValueError("bad sort")
    shape = ins[0].shape
    if not 0 <= dim < len(shape):
      raise ValueError("bad dimension")
    for a, b in zip(ins, outs):
      if a.shape != shape or b.shape != shape or a.dtype != b.dtype:
        raise ValueError("bad sort shapes")
      if a.dtype.itemsize not in (1, 2, 4, 8) or a.dtype.kind not in "biufcV":
        raise ValueError("unsupported operand dtype")
    keys = [v.dtype for v in ins[:nk]]
    if any(k not in _KEY_DTYPES for k in keys):
      raise ValueError("unsupported key dtype")
    outer, n, inner = _geom(shape, dim)
    return keys, False, len(ins), n, outer, inner, n, None
  if node.prim == "top_k":
    (x,), outs = node.ins, node.outs
    k, axis = int(node.params["k"]), int(node.params["axis"])
    if len(outs) != 2 or x.dtype not in _KEY_DTYPES or not 0 <= axis < x.ndim:
      raise ValueError("bad top_k")
    if outs[0].dtype != x.dtype or outs[1].dtype != np.dtype(np.int32):
      raise ValueError("bad top_k outputs")
    outer, n, inner = _geom(x.shape, axis)
    if not 0 <= k <= n:
      raise ValueError("bad k")
    oshape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    if outs[0].shape != oshape or outs[1].shape != oshape:
      raise ValueError("bad top_k shapes")
    return [x.dtype], True, 1, n, outer, inner, k, np.dtype(np.int32)
  raise ValueError("not a sort")


def _sort_supported(node):
  """Whether a ``sort``/``top_k`` node runs natively: keys bool/int/uint/float16/bfloat16/
  float32/float64 (complex keys stay NumPy steps), other operands of 1, 2, 4 or 8 bytes."""
  _, _, _, n, _, _, _, _ = _sort_spec(node)
  return n < _MAX_ROW


def _sort_work(node):
  _, _, nops, n, outer, inner, _, _ = _sort_spec(node)
  return outer * inner * n * (max(n, 2).bit_length() + 2 * nops)


def _sort_source(node, name):
  keys, total, nops, n, outer, inner, klen, idx_dt = _sort_spec(node)
  ins = node.ins
  rows = outer * inner
  bits = [_key_bits(d) for d in keys]
  tb = sum(bits)
  if tb <= 32:
    mode = "packed"
  elif tb <= 64:
    mode = "pair"
  else:
    mode = "multi"
  L = [_SORT_HELPERS]
  L.append(f"/* pyjax native {node.prim} (kernels/sorting.py): {nops} operand(s), {len(keys)} key(s), "
           f"{rows} row(s) of {n} [{mode}] */")
  if mode == "packed":
    etype = "uint64_t"
    L.append(f"#define {name}_LESS(x, y) ((x) < (y))")
    L.append(f"#define {name}_IDX(e) ((int64_t)(uint32_t)(e))")
  elif mode == "pair":
    etype = f"{name}_e"
    L.append(f"typedef struct {{ uint64_t k; int64_t i; }} {name}_e;")
    L.append(f"#define {name}_LESS(x, y) ((x).k < (y).k)")
    L.append(f"#define {name}_IDX(e) ((e).i)")
  else:
    etype = "int64_t"
    terms = []
    for t, d in reversed(list(enumerate(keys))):
      c = f"(K{t}[x] < K{t}[y])"
      terms = c if not terms else f"(K{t}[x] != K{t}[y] ? {c} : {terms})"
    L.append(f"#define {name}_LESS(x, y) ({terms})")
    L.append(f"#define {name}_IDX(e) (e)")
  kparams = "".join(f", const uint{8 * max(d.itemsize, 1)}_t *restrict K{t}"
                    for t, d in enumerate(keys)) if mode == "multi" else ""
  kargs = "".join(f", K{t}" for t in range(len(keys))) if mode == "multi" else ""
  # stable bottom-up merge sort of a[0:n) (b: scratch); returns the buffer holding the result
  L.append(f"static {etype} *{name}_msort({etype} *a, {etype} *b, int64_t n{kparams}) {{")
  L.append("  for (int64_t lo = 0; lo < n; lo += 16) {")
  L.append("    const int64_t hi = lo + 16 < n ? lo + 16 : n;")
  L.append("    for (int64_t i = lo + 1; i < hi; i++) {")
  L.append(f"      {etype} v = a[i]; int64_t j = i;")
  L.append(f"      while (j > lo && {name}_LESS(v, a[j - 1])) {{ a[j] = a[j - 1]; j--; }}")
  L.append("      a[j] = v;")
  L.append("    }")
  L.append("  }")
  L.append("  for (int64_t w = 16; w < n; w *= 2) {")
  L.append("    for (int64_t lo = 0; lo < n; lo += 2 * w) {")
  L.append("      const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;")
  L.append("      int64_t i = lo, j = mid, o = lo;")
  L.append(f"      if (mid >= hi || !{name}_LESS(a[mid], a[mid - 1])) {{")
  L.append(f"        memcpy(b + lo, a + lo, sizeof({etype}) * (size_t)(hi - lo)); continue; }}")
  L.append("      while (i < mid && j < hi) {")
  L.append(f"        if ({name}_LESS(a[j], a[i])) b[o++] = a[j++]; else b[o++] = a[i++];")
  L.append("      }")
  L.append("      while (i < mid) b[o++] = a[i++];")
  L.append("      while (j < hi) b[o++] = a[j++];")
  L.append("    }")
  L.append(f"    {etype} *t = a; a = b; b = t;")
  L.append("  }")
  L.append("  return a;")
  L.append("}")
  if mode != "multi":
    # stable LSD radix sort on the key's bytes (every histogram in one pass; a byte that
    # is the same in every element is skipped)
    kx = "((x) >> 32)" if mode == "packed" else "((x).k)"
    L.append(f"#define {name}_KEY(x) {kx}")
    nd = -(-tb // 8)
    L.append(f"static {etype} *{name}_rsort({etype} *a, {etype} *b, int64_t n) {{")
    L.append(f"  int64_t cnt[{nd}][256];")
    L.append("  memset(cnt, 0, sizeof(cnt));")
    L.append("  for (int64_t i = 0; i < n; i++) {")
    L.append(f"    const uint64_t k = {name}_KEY(a[i]);")
    for q in range(nd):
      L.append(f"    cnt[{q}][(k >> {8 * q}) & 255]++;")
    L.append("  }")
    L.append(f"  for (int q = 0; q < {nd}; q++) {{")
    L.append("    int64_t *c = cnt[q];")
    L.append(f"    if (c[({name}_KEY(a[0]) >> (8 * q)) & 255] == n) continue;")
    L.append("    int64_t acc = 0;")
    L.append("    for (int d = 0; d < 256; d++) { const int64_t t = c[d]; c[d] = acc; acc += t; }")
    L.append(f"    for (int64_t i = 0; i < n; i++) b[c[({name}_KEY(a[i]) >> (8 * q)) & 255]++] = a[i];")
    L.append(f"    {etype} *t = a; a = b; b = t;")
    L.append("  }")
    L.append("  return a;")
    L.append("}")
    sort_call = lambda a, b: (f"(n >= {_RADIX_MIN} ? {name}_rsort({a}, {b}, n) : "  # noqa: E731
                              f"{name}_msort({a}, {b}, n))")
  else:
    sort_call = lambda a, b: f"{name}_msort({a}, {b}, n{kargs})"  # noqa: E731
  # the range function: one work item = a tile of up to T adjacent rows (along the
  # innermost dimension, so a strided row is read and written T elements at a time)
  T = 1 if inner <= 1 else min(inner, _TILE)
  ntile = -(-inner // T)
  items = outer * ntile
  L.append(f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{")
  L.append("  void *const *P = (void *const *)ctx;")
  L.append(f"  const int64_t n = {n}, klen = {klen};")
  maxsz = max([v.dtype.itemsize for v in ins] + [4])
  L.append(f"  char *mem = (char *)pj_scratch(sizeof({etype}) * {2 * T} * (size_t)n + "
           f"{maxsz * T} * (size_t)n"
           + "".join(f" + {d.itemsize * T} * (size_t)n + 8" for d in keys if mode == "multi")
           + " + 64);")
  L.append("  if (!mem) abort();")
  L.append(f"  {etype} *ea = ({etype} *)mem, *eb = ea + {T} * n;")
  L.append(f"  char *tmp = (char *)(eb + {T} * n);")
  if mode == "multi":
    L.append(f"  char *kp = tmp + ({maxsz * T} * (size_t)n + 7) / 8 * 8;")
    for t, d in enumerate(keys):
      ku = f"uint{8 * d.itemsize}_t"
      L.append(f"  {ku} *restrict K{t} = ({ku} *)kp; "
               f"kp += ({d.itemsize * T} * (size_t)n + 7) / 8 * 8;")
  L.append(f"  {etype} *s[{T}];")
  L.append("  for (int64_t it = lo; it < hi; it++) {")
  L.append(f"    const int64_t o = it / {ntile}, j0 = (it % {ntile}) * {T};")
  L.append(f"    const int64_t tn = {inner} - j0 < {T} ? {inner} - j0 : {T};")
  L.append(f"    const int64_t base = o * n * {inner} + j0, obase = o * klen * {inner} + j0;")
  for t, d in enumerate(keys):
    st = storage_type(d)
    L.append(f"    const {st} *restrict X{t} = (const {st} *)P[{t}] + base;")
  # encode the keys of the tile's rows
  L.append("    for (int64_t i = 0; i < n; i++)")
  L.append("      for (int64_t t = 0; t < tn; t++) {")
  src = f"[i * {inner} + t]"
  if mode == "multi":
    for t, d in enumerate(keys):
      L.append(f"        K{t}[t * n + i] = (uint{8 * d.itemsize}_t)"
               f"{_key_expr(d, f'X{t}{src}', total)};")
    L.append("        ea[t * n + i] = i;")
  else:
    parts, shift = [], tb
    for t, d in enumerate(keys):
      shift -= bits[t]
      e = _key_expr(d, f"X{t}{src}", total)
      parts.append(f"({e} << {shift})" if shift else e)
    key = " | ".join(parts)
    if mode == "packed":
      L.append(f"        ea[t * n + i] = (({key}) << 32) | (uint64_t)i;")
    else:
      L.append(f"        ea[t * n + i].k = {key}; ea[t * n + i].i = i;")
  L.append("      }")
  L.append("    for (int64_t t = 0; t < tn; t++) {")
  if mode == "multi":
    L.append(f"      {etype} *a = ea + t * n, *b = eb + t * n;")
    ks = "".join(f", K{t} + t * n" for t in range(len(keys)))
    L.append(f"      s[t] = {name}_msort(a, b, n{ks});")
  else:
    L.append(f"      s[t] = {sort_call('ea + t * n', 'eb + t * n')};")
  L.append("    }")
  # gather every operand
  for t in range(nops):
    u = f"uint{8 * ins[t].dtype.itemsize}_t"
    L.append("    {")
    L.append(f"      const {u} *src = (const {u} *)P[{t}] + base;")
    L.append(f"      {u} *dst = ({u} *)P[{len(ins) + t}] + obase;")
    if T == 1:
      L.append("      const " + etype + " *restrict sp = s[0];")
      L.append("      if ((const void *)dst != (const void *)src) {")
      L.append(f"        for (int64_t k = 0; k < klen; k++) dst[k] = src[{name}_IDX(sp[k])];")
      L.append("      } else {")
      L.append(f"        {u} *tb = ({u} *)tmp;")
      L.append(f"        for (int64_t k = 0; k < klen; k++) tb[k] = src[{name}_IDX(sp[k])];")
      L.append("        memcpy(dst, tb, sizeof(*tb) * (size_t)klen);")
      L.append("      }")
    else:
      L.append(f"      {u} *tb = ({u} *)tmp;")
      L.append("      for (int64_t t = 0; t < tn; t++) {")
      L.append(f"        const {etype} *restrict sp = s[t];")
      L.append(f"        for (int64_t k = 0; k < klen; k++) "
               f"tb[t * klen + k] = src[{name}_IDX(sp[k]) * {inner} + t];")
      L.append("      }")
      L.append("      for (int64_t k = 0; k < klen; k++)")
      L.append(f"        for (int64_t t = 0; t < tn; t++) dst[k * {inner} + t] = tb[t * klen + k];")
    L.append("    }")
  if idx_dt is not None:
    L.append(f"    int32_t *ix = (int32_t *)P[{len(ins) + nops}] + obase;")
    L.append("    for (int64_t t = 0; t < tn; t++)")
    L.append(f"      for (int64_t k = 0; k < klen; k++) ix[k * {inner} + t] = "
             f"(int32_t){name}_IDX(s[t][k]);")
  L.append("  }")
  L.append("  pj_unscratch(mem);")
  L.append("}")
  per = max(T * n * max(n, 2).bit_length(), 1)
  grain = max(1, 65536 // per)
  nio = len(ins) + len(node.outs)
  L.append(f"static void {name}(void *const *P0) {{")
  L.append(f"  if ({items} == 0 || {n} == 0 || {klen} == 0) return;")
  # an output that is the buffer of a later operand (donation) would be written before
  # that operand is gathered: such operands are copied first
  L.append(f"  void *P[{nio}]; void *own[{len(ins)}] = {{0}};")
  L.append(f"  for (int i = 0; i < {nio}; i++) P[i] = P0[i];")
  if nops > 1:
    sizes = ", ".join(str(v.size * v.dtype.itemsize) for v in ins)
    L.append(f"  static const size_t nb[{len(ins)}] = {{{sizes}}};")
    L.append(f"  for (int u = 1; u < {nops}; u++)")
    L.append("    for (int t = 0; t < u; t++)")
    L.append(f"      if (P0[{len(ins)} + t] == P0[u] && !own[u]) {{")
    L.append("        own[u] = pj_scratch(nb[u]); if (!own[u]) abort();")
    L.append("        memcpy(own[u], P0[u], nb[u]); P[u] = own[u]; }")
  L.append(f"  if (pj_parallel_for && {items} > {grain}) "
           f"pj_parallel_for({name}_range, (void *)P, {items}, {grain});")
  L.append(f"  else {name}_range((void *)P, 0, {items});")
  L.append(f"  for (int u = 0; u < {len(ins)}; u++) pj_unscratch(own[u]);")
  L.append("}")
  for m in ("LESS", "IDX") + (("KEY",) if mode != "multi" else ()):
    L.append(f"#undef {name}_{m}")
  return "\n".join(L) + "\n"


# --- cumulative reductions --------------------------------------------------------------
_CUM_HELPERS = r"""
#ifndef PJ_CUM_HELPERS
#define PJ_CUM_HELPERS 1
/* NumPy's logaddexp (npy_logaddexp) with glibc's scalar exp/log1p: never inlined, so no
   loop around them is vectorized with libmvec's variants (different last bits) */
__attribute__((noinline, unused)) static float pj_cum_lae_f(float x, float y) {
  if (x == y) return x + 0.693147180559945309417232121458176568f;
  const float t = x - y;
  if (t > 0) return x + log1pf(expf(-t));
  if (t <= 0) return y + log1pf(expf(t));
  return t; }
__attribute__((noinline, unused)) static double pj_cum_lae_d(double x, double y) {
  if (x == y) return x + 0.693147180559945309417232121458176568;
  const double t = x - y;
  if (t > 0) return x + log1p(exp(-t));
  if (t <= 0) return y + log1p(exp(t));
  return t; }
#endif
"""


def _cum_supported(node):
  """Whether a cumulative reduction runs natively: float16/bfloat16/float32/float64 and
  every integer type (complex stays a NumPy step)."""
  if node.prim not in _CUM_PRIMS or len(node.ins) != 1 or len(node.outs) != 1 or not _values(node):
    return False
  x, y = node.ins[0], node.outs[0]
  d = x.dtype
  if d not in _CUM_DTYPES or y.dtype != d or y.shape != x.shape:
    return False
  if node.prim == "cumlogsumexp" and d not in _FLOATS:
    return False
  axis = int(node.params["axis"])
  return 0 <= axis < x.ndim


def _cum_work(node):
  x = node.ins[0]
  return x.size * (20 if node.prim == "cumlogsumexp" else 1)


def _cum_parts(prim, d):
  """(compute type, load(v), store(a), op(a, b)) C templates."""
  st = storage_type(d)
  if d in (_F16, _BF16):
    sfx = "h" if d == _F16 else "bf"
    load = lambda v: f"pj_{sfx}2f({v})"  # noqa: E731
    store = lambda a: f"pj_f2{sfx}({a})"  # noqa: E731
    ct, fl = "float", "f"
  else:
    load = store = lambda v: v  # noqa: E731
    ct = st
    fl = {_F32: "f", _F64: "d"}.get(d)
  if fl is not None:
    ops = {"cumsum": lambda a, b: f"({a} + {b})",
           "cumprod": lambda a, b: f"({a} * {b})",
           "cummax": lambda a, b: f"pj_max{'f' if fl == 'f' else ''}({a}, {b})",
           "cummin": lambda a, b: f"pj_min{'f' if fl == 'f' else ''}({a}, {b})",
           "cumlogsumexp": lambda a, b: f"pj_cum_lae_{fl}({a}, {b})"}
  else:
    uw = "uint64_t" if d.itemsize == 8 else "uint32_t"
    ops = {"cumsum": lambda a, b: f"({st})(({uw}){a} + ({uw}){b})",
           "cumprod": lambda a, b: f"({st})(({uw}){a} * ({uw}){b})",
           "cummax": lambda a, b: f"({a} > {b} ? {a} : {b})",
           "cummin": lambda a, b: f"({a} < {b} ? {a} : {b})"}
  return ct, load, store, ops[prim]


_BLOCK = 256


def _cum_source(node, name):
  x = node.ins[0]
  d = x.dtype
  axis, rev = int(node.params["axis"]), bool(node.params["reverse"])
  outer, n, inner = _geom(x.shape, axis)
  st = storage_type(d)
  ct, load, store, op = _cum_parts(node.prim, d)
  L = [_CUM_HELPERS]
  L.append(f"/* pyjax native {node.prim} (kernels/sorting.py): {outer} x {n} x {inner}, "
           f"axis {axis}{', reverse' if rev else ''} */")
  L.append(f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{")
  L.append("  void *const *P = (void *const *)ctx;")
  L.append(f"  const {st} *restrict X = (const {st} *)P[0];")
  L.append(f"  {st} *Y = ({st} *)P[1];")
  # XLA's scan folds a float sum from the init +0: the first element enters as 0 + x, so a
  # -0 becomes +0 (the eager rule does the same); XLA drops a length-1 scan, keeping -0
  first = (lambda v: f"(({ct})0 + {v})") if (node.prim == "cumsum" and n > 1 and ct in (
      "float", "double")) else (lambda v: v)
  kfirst = f"{n - 1}" if rev else "0"
  knext = "k - 1" if rev else "k + 1"
  if inner == 1:
    items, per = outer, n
    L.append("  for (int64_t it = lo; it < hi; it++) {")
    L.append(f"    const {st} *x = X + it * {n};")
    L.append(f"    {st} *y = Y + it * {n};")
    L.append(f"    int64_t k = {kfirst};")
    L.append(f"    {ct} acc = {first(load('x[k]'))};")
    L.append(f"    y[k] = {store('acc')};")
    L.append(f"    for (int64_t s = 1; s < {n}; s++) {{")
    L.append(f"      k = {knext};")
    L.append(f"      acc = {op('acc', load('x[k]'))};")
    L.append(f"      y[k] = {store('acc')};")
    L.append("    }")
    L.append("  }")
  else:
    nb = -(-inner // _BLOCK)
    B = max(1, min(inner, _BLOCK))
    items, per = outer * nb, n * B
    L.append(f"  {ct} acc[{B}];")
    L.append("  for (int64_t it = lo; it < hi; it++) {")
    L.append(f"    const int64_t o = it / {nb}, j0 = (it % {nb}) * {B};")
    L.append(f"    const int64_t jn = {inner} - j0 < {B} ? {inner} - j0 : {B};")
    L.append(f"    const {st} *restrict x = X + o * {n * inner} + j0;")
    L.append(f"    {st} *y = Y + o * {n * inner} + j0;")
    L.append(f"    int64_t k = {kfirst};")
    L.append(f"    for (int64_t j = 0; j < jn; j++) {{ acc[j] = {first(load(f'x[k * {inner} + j]'))}; "
             f"y[k * {inner} + j] = {store('acc[j]')}; }}")
    L.append(f"    for (int64_t s = 1; s < {n}; s++) {{")
    L.append(f"      k = {knext};")
    L.append(f"      const {st} *restrict xk = x + k * {inner};")
    L.append(f"      {st} *restrict yk = y + k * {inner};")
    L.append("      for (int64_t j = 0; j < jn; j++) {")
    L.append(f"        acc[j] = {op('acc[j]', load('xk[j]'))};")
    L.append(f"        yk[j] = {store('acc[j]')};")
    L.append("      }")
    L.append("    }")
    L.append("  }")
  L.append("}")
  grain = max(1, 32768 // max(per * (20 if node.prim == "cumlogsumexp" else 1), 1))
  L.append(f"static void {name}(void *const *P) {{")
  L.append(f"  if ({items} == 0 || {n} == 0) return;")
  L.append(f"  if (pj_parallel_for && {items} > {grain}) "
           f"pj_parallel_for({name}_range, (void *)P, {items}, {grain});")
  L.append(f"  else {name}_range((void *)P, 0, {items});")
  L.append("}")
  return "\n".join(L) + "\n"


def supported(node):
  """Whether ``node`` (sort, top_k or a cumulative reduction) has a native kernel here."""
  if node.prim in ("sort", "top_k"):
    return _sort_supported(node)
  return _cum_supported(node)


def work(node):
  """Rough operation count (for the GIL-release threshold)."""
  if node.prim in ("sort", "top_k"):
    return _sort_work(node)
  return _cum_work(node)


def kernel_source(node, name):
  """C of ``name(void *const *P)``: ``P`` = input then output data pointers."""
  if node.prim in ("sort", "top_k"):
    return _sort_source(node, name)
  return _cum_source(node, name)


for _p in ("sort", "top_k") + _CUM_PRIMS:
  opaque.register(_p, supported, kernel_source, work)
