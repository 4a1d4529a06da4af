"""Eager NumPy implementations of the reduction primitives (reductions, argmax/argmin,
cumulative reductions, the generic ``reduce``) with XLA's semantics (the windowed ones
are in ``windowed.py``):

- empty reductions give the identity (sum 0, prod 1, max -inf / integer min / False, ...);
- max/min propagate NaN and order -0 below +0; complex numbers compare lexicographically;
- integer sums and products wrap around in the operand's type;
- floating-point sums and products follow XLA's CPU evaluation order (a tree of windows of
  32, sequential inside, rounding to the operand's type at every step), so they match
  JAX bit for bit (large float32/float64 reductions use NumPy's pairwise summation);
- cumulative sums of half types accumulate in float32 and round once (XLA rounds at
  every step in its own scan order: results can differ by a few ulps).

The generic ``reduce`` / ``reduce_window`` primitives carry a traced scalar jaxpr; it is
evaluated here on NumPy arrays (vectorized over all output positions) with this backend's
own implementations, looked up by primitive name.
"""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np

from pyjax._src.backends.cpu.compiler.kernels.reductions import row_lanes
from pyjax._src.backends.cpu.eager.registry import impls, register

_half = {np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)}
_SPLIT = 32  # XLA CPU's tree-reduction rewriter: reduced dims longer than this are split
_ORDERED_MAX_SIZE = 1 << 16  # larger float32/64 and complex reductions: NumPy's order
# floating types narrower than float32 (bfloat16, float16, float8/6/4): a set look-up
_SMALL_FLOATS = frozenset(
    list(_half) + [np.dtype(getattr(ml_dtypes, n)) for n in dir(ml_dtypes)
                   if n.startswith(("float8_", "float6_", "float4_"))])
_FLOATLIKE = _SMALL_FLOATS | {np.dtype(np.float32), np.dtype(np.float64)}
_INEXACT = _FLOATLIKE | {np.dtype(np.complex64), np.dtype(np.complex128)}


def _is_small_float(d):
  return d in _SMALL_FLOATS


def _up(x):
  """float16/bfloat16/float8 -> float32 (exactly); other dtypes unchanged."""
  return x.astype(np.float32) if x.dtype in _SMALL_FLOATS else x


def _is_floatlike(d):
  return d in _FLOATLIKE


def _max_identity(d):
  if d == np.bool_:
    return np.array(False)
  if d.kind in "iu":
    return np.array(np.iinfo(d).min, d)
  return np.array(-np.inf, d)


def _min_identity(d):
  if d == np.bool_:
    return np.array(True)
  if d.kind in "iu":
    return np.array(np.iinfo(d).max, d)
  return np.array(np.inf, d)


# --- reductions -------------------------------------------------------------------------
def _split_level(x, ident):
  """One level of XLA's CPU tree reduction on x of shape (m, *rdims): every reduced
  dimension longer than 32 is padded (split evenly between both ends) to a multiple of 32
  and cut into windows of 32; returns x as (m, *grid, W) with each window's elements in
  row-major order along the last axis (padding holds the identity)."""
  m, rdims = x.shape[0], x.shape[1:]
  if not any(d > _SPLIT for d in rdims):
    return x.reshape(m, 1, -1), False
  wins = [_SPLIT if d > _SPLIT else d for d in rdims]
  grid = [-(-d // w) for d, w in zip(rdims, wins)]
  padded = np.full((m,) + tuple(g * w for g, w in zip(grid, wins)), ident, x.dtype)
  padded[(slice(None),) + tuple(slice((g * w - d) // 2, (g * w - d) // 2 + d)
                                for d, w, g in zip(rdims, wins, grid))] = x
  r = len(rdims)
  b = padded.reshape((m,) + tuple(v for gw in zip(grid, wins) for v in gw))
  b = b.transpose((0,) + tuple(1 + 2 * i for i in range(r)) + tuple(2 + 2 * i for i in range(r)))
  return b.reshape((m,) + tuple(grid) + (-1,)), True


def ordered_reduce(name, x, axes):
  """``reduce_sum``/``reduce_prod`` (``name``) of ``x`` over ``axes`` in XLA's CPU order at
  every size (no pairwise shortcut for large operands; long rows of large operands in the
  lanes order, ``row_lanes``): what jit's NumPy tier runs, so that its bits equal the
  native tier's (``numpy_tier/native.py``)."""
  if name == "reduce_sum":
    if axes and all(x.shape[a] == 1 for a in axes):
      return np.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes)).copy()
    return _arith_reduce(x, axes, np.add, 0, ordered=True)
  return _arith_reduce(x, axes, np.multiply, 1, ordered=True)


def _arith_reduce(x, axes, ufunc, ident, ordered=False):
  """Sum/product in XLA's CPU order, rounding to the operand's type at every step (what
  ``ufunc.accumulate`` does), so floating-point results match XLA's bit for bit in the
  common cases; integers wrap (any order gives the same).  See ``_xla_reduce``.  Float sums
  of long rows in large operands follow the lanes order on every tier (``row_lanes``,
  ``lanes_sum``).  Other large float32/float64/complex reductions use NumPy's faster
  pairwise summation instead; half types always follow XLA's order (their rounding makes
  the order visible)."""
  d = x.dtype
  if not axes:
    # XLA's reduction over no dimensions is the operand itself (no fold with the identity,
    # which would turn -0 into +0 in a sum and complex inf+0j into inf+nanj in a product)
    return np.array(x, copy=True)
  if d not in _INEXACT or x.size == 0:
    return ufunc.reduce(x, axis=axes, dtype=d)
  if ufunc is np.add:
    lanes = row_lanes("reduce_sum", x.shape, axes, d)
    if lanes:
      return lanes_sum(x, axes, lanes)
  if len(axes) == x.ndim and x.size <= _SPLIT:
    # small full reduction (the common eager case): one sequential fold in row-major order
    out = ufunc.accumulate(x if x.ndim == 1 else x.reshape(-1), dtype=d)[-1, ...]
    if not out and ufunc is np.add:
      out = out + _ZEROS[d]  # XLA's fold starts from +0: never returns -0
    return out
  axes = tuple(sorted(axes))
  if x.size > _ORDERED_MAX_SIZE and not _is_small_float(x.dtype) and not ordered:
    if ufunc is np.add and d in _LARGE_SUM:
      lay = sum_layout(x.shape, axes)
      if lay is not None and lay[0] != "rows":
        out_shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
        return large_sum(x, lay).reshape(out_shape)
    # large float32/64 and complex: NumPy's pairwise summation (as accurate, much faster;
    # may differ from XLA in the last bits)
    return ufunc.reduce(x, axis=axes, dtype=x.dtype)
  kept = [i for i in range(x.ndim) if i not in axes]
  rdims = tuple(x.shape[i] for i in axes)
  out_shape = tuple(x.shape[i] for i in kept)
  m = int(np.prod(out_shape, dtype=np.int64))
  cur = np.transpose(x, kept + list(axes)).reshape((m,) + rdims)
  ident = np.array(ident, x.dtype)[()]
  while True:
    blocks, split = _split_level(cur, ident)
    cur = ufunc.accumulate(blocks, axis=-1, dtype=x.dtype)[..., -1]
    if not split:
      break
  out = cur.reshape(out_shape)
  if ufunc is np.add:
    out = out + _ZEROS[d]  # XLA's fold starts from +0: never returns -0
  return out


_ZEROS = {d: np.zeros((), d) for d in _INEXACT}


def lanes_sum(x, axes, lanes):
  """The float32/float64 sum of ``x`` over its trailing ``axes`` in the lanes order
  (``row_lanes`` says when it applies): lane j of ``lanes`` sums a row's elements j,
  j + lanes, ... in order, then the lanes fold by halves; the bits of the native row
  kernels' ``pj_lanes_*`` helpers.  NumPy's reduction over the middle axis of
  (rows, steps, lanes), or the leading axis of the transposed (steps, lanes, rows) when
  there are many rows (long contiguous adds), adds step after step, so each lane's sum is
  sequential; a lane
  starting from its first element rather than +0 differs only in the sign of a zero, which
  the final ``+ 0`` settles as the native code's start from +0 does."""
  kept = tuple(n for i, n in enumerate(x.shape) if i not in axes)
  m = int(np.prod(kept, dtype=np.int64))
  d = x.size // m
  k = d // lanes
  t = d - k * lanes
  if m < lanes:   # few rows: (rows, steps, lanes)
    r = np.reshape(x, (m, d))
    acc = np.add.reduce(r[:, :k * lanes].reshape(m, k, lanes), axis=1)
    if t:
      acc[:, :t] += r[:, k * lanes:]
    acc = acc.T
  else:           # many rows: transposed, (steps, lanes, rows), long contiguous adds
    r = np.ascontiguousarray(np.reshape(x, (m, d)).T)
    acc = np.add.reduce(r[:k * lanes].reshape(k, lanes, m), axis=0)
    if t:
      acc[:t] += r[k * lanes:]
  while acc.shape[0] > 1:
    h = acc.shape[0] // 2
    acc = acc[:h] + acc[h:]
  return (acc[0] + _ZEROS[x.dtype]).reshape(kept)
_LARGE_SUM = frozenset([np.dtype(np.float32), np.dtype(np.float64)])


def sum_layout(shape, axes):
  """How a large float sum of a C-contiguous operand of ``shape`` over ``axes`` (sorted)
  is ordered, ignoring dimensions of size 1: ``("full", n, 1)`` (every dimension longer
  than 1 reduced: ``_tree_sum``), ``("cols", R, C)`` (the leading ``R`` elements' worth of
  dimensions reduced, the trailing ``C`` kept: one sequential fold per column, row after
  row), ``("rows", R, C)`` (the trailing dimensions reduced: NumPy's pairwise order per
  row) or None (reduced and kept dimensions interleave, or nothing is reduced).  The
  native kernels (``eager/native.py``) compute "full" and "cols" in the same order, bit
  for bit."""
  red, R, C, pattern = set(axes), 1, 1, []
  for i, n in enumerate(shape):
    if n == 1:
      continue
    r = i in red
    if r:
      R *= n
    else:
      C *= n
    if not pattern or pattern[-1] != r:
      pattern.append(r)
  if pattern == [True]:
    return ("full", R, 1)
  if pattern == [True, False]:
    return ("cols", R, C)
  if pattern == [False, True]:
    return ("rows", C, R)
  return None


def large_sum(x, lay):
  """The float32/float64 sum of ``x`` for ``sum_layout``'s "full" or "cols" layout ``lay``
  (flat: the kept elements in row-major order), never -0 (XLA's fold starts from +0)."""
  if lay[0] == "full":
    return np.asarray(_tree_sum(x))
  # sequential over rows: NumPy's reduction over the leading axis of a C-contiguous
  # matrix with more than one column adds row after row
  return np.add.reduce(np.reshape(x, lay[1:]), axis=0) + _ZEROS[x.dtype]


def _tree_sum(x):
  """Sum of a large float32/float64 array by levels of 32-way vectorized adds: each level
  adds 32 equal slices elementwise, in order (NumPy's reduction over the leading axis of
  a (32, k) matrix, k > 1; SIMD and memory bound), the ``size % 32`` elements left over
  are appended, and the last 32 or fewer are folded in order.  Faster than NumPy's
  pairwise sum and as accurate (each value takes part in about log32(n) roundings); the
  native kernel (``eager/native.py``) computes the same bits."""
  s = np.ascontiguousarray(x).reshape(-1)
  while s.size > _SPLIT:
    m = s.size - s.size % _SPLIT
    if m == _SPLIT:   # (32, 1): NumPy would sum the column pairwise
      head = np.add.accumulate(s[:m])[-1:]
    else:
      head = np.add.reduce(s[:m].reshape(_SPLIT, -1), axis=0)
    s = np.concatenate([head, s[m:]]) if m != s.size else head
  return np.add.accumulate(s)[-1] + _ZEROS[s.dtype]  # never -0, as XLA's fold from +0


_F32_F64 = frozenset([np.dtype(np.float32), np.dtype(np.float64)])


@register("reduce_sum")
def _reduce_sum(x, *, axes, out_sharding=None):
  if x.ndim == 1 and 1 < x.size <= _SPLIT and axes and x.dtype in _F32_F64:
    out = np.add.accumulate(x)[-1, ...]  # the hot eager case: a short vector, in order
    return out if out else out + _ZEROS[x.dtype]  # XLA's fold from +0 never gives -0
  if axes and all(x.shape[a] == 1 for a in axes):
    # XLA drops a sum over size-1 axes: the element itself, so -0 stays -0 (the compiler's
    # simplifier does the same)
    return np.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes)).copy()
  return _arith_reduce(x, axes, np.add, 0)


@register("reduce_prod")
def _reduce_prod(x, *, axes):
  return _arith_reduce(x, axes, np.multiply, 1)


def _fix_signed_zeros(res, x, axes, want_positive):
  """XLA's max orders -0 < +0 (and min the reverse): where the result is a zero, it is +0
  (for max) iff the reduced elements contain a +0."""
  if not _is_floatlike(res.dtype) or not np.any(res == 0):
    return res
  zero_of_sign = (x == 0) & (np.signbit(x) != want_positive)
  found = np.logical_or.reduce(zero_of_sign, axis=axes)
  signed = np.where(found, 0.0, -0.0) if want_positive else np.where(found, -0.0, 0.0)
  return np.where(res == 0, signed.astype(res.dtype), res)


_PLAIN_ORDER = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16,
                                                np.int32, np.int64, np.uint8, np.uint16,
                                                np.uint32, np.uint64))


def _lex_pick(acc, v, is_max):
  """XLA's complex max/min: lexicographic on (real, imag); a comparison with NaN is false,
  so ``v`` (the element folded in) wins."""
  ar, vr, ai, vi = acc.real, v.real, acc.imag, v.imag
  if is_max:
    keep = (ar > vr) | ((ar == vr) & (ai > vi))
  else:
    keep = (ar < vr) | ((ar == vr) & (ai < vi))
  return np.where(keep, acc, v)


def _complex_order_reduce(x, axes, is_max):
  """Complex max/min folded from the identity (-inf or +inf, +0j) in XLA's CPU order (see
  ``_arith_reduce``; windows skip their padding): the lexicographic comparison makes NaN
  results order dependent.  Reduced dimensions of size 1 are dropped first, without
  folding in the identity (XLA's simplification: max(-inf-1j) is -inf-1j)."""
  axes = set(axes)
  kept = [i for i in range(x.ndim) if i not in axes]
  out_shape = tuple(x.shape[i] for i in kept)
  red = sorted(i for i in axes if x.shape[i] != 1)
  if not red:
    return np.array(x.reshape(out_shape), copy=True)
  m = int(np.prod(out_shape, dtype=np.int64))
  rdims = tuple(x.shape[i] for i in red)
  cur = np.transpose(x, kept + [i for i in range(x.ndim) if i in axes and i not in red] + red)
  cur = cur.reshape((m,) + rdims)
  ident = np.array(complex(-np.inf if is_max else np.inf, 0), x.dtype)
  if x.size == 0:
    return np.full(out_shape, ident, x.dtype)
  while True:
    blocks, split = _split_level(cur, ident[()])
    # XLA's windows skip their padding: fold only the real elements of each window
    valid = _split_level(np.ones(cur.shape, bool), False)[0] if split else None
    acc = np.broadcast_to(ident, blocks.shape[:-1])
    for i in range(blocks.shape[-1]):
      picked = _lex_pick(acc, blocks[..., i], is_max)
      acc = picked if valid is None else np.where(valid[..., i], picked, acc)
    cur = acc
    if not split:
      break
  return np.asarray(cur).reshape(out_shape)


def _order_reduce(x, axes, is_max):
  d = x.dtype
  if d in _PLAIN_ORDER and x.ndim == 1 and 0 < x.size <= _SPLIT and len(axes) == 1:
    # the eager hot path (jnp.max of a small vector): accumulate is much cheaper than
    # reduce on tiny arrays; a zero result needs XLA's signed-zero order
    res = (np.maximum if is_max else np.minimum).accumulate(x)[-1, ...]
    if res or d.kind != "f":
      return res
    return _fix_signed_zeros(res, x, (0,), is_max)
  axes = tuple(axes)
  if d.kind == "c" and axes:
    return _complex_order_reduce(x, axes, is_max)
  if x.size and d in _PLAIN_ORDER:
    # fast path: non-empty float32/float64/integer operand, no identity needed
    ufunc = np.maximum if is_max else np.minimum
    if x.size <= _SPLIT and len(axes) == x.ndim:
      # small full reduction: accumulate is much cheaper than reduce on tiny arrays
      res = ufunc.accumulate(x if x.ndim == 1 else x.reshape(-1))[-1, ...]
    else:
      res = ufunc.reduce(x, axis=axes)
    if d.kind == "f" and not (res if res.ndim == 0 else res.all()):
      return _fix_signed_zeros(np.asarray(res), x, axes, is_max)
    return res
  xu = _up(x)
  if x.dtype == np.bool_:
    return (np.logical_or if is_max else np.logical_and).reduce(x, axis=axes)
  ident = (_max_identity if is_max else _min_identity)(xu.dtype)
  ufunc = np.maximum if is_max else np.minimum
  res = np.asarray(ufunc.reduce(xu, axis=axes, initial=ident[()]))
  return _fix_signed_zeros(res, xu, axes, is_max)


@register("reduce_max")
def _reduce_max(x, *, axes):
  return _order_reduce(x, axes, True)


@register("reduce_min")
def _reduce_min(x, *, axes):
  return _order_reduce(x, axes, False)


def _logical(bool_ufunc, int_ufunc, int_identity):
  def impl(x, *, axes):
    axes = tuple(axes)
    if x.dtype == np.bool_:
      return bool_ufunc.reduce(x, axis=axes, initial=bool(int_identity))
    ident = np.array(int_identity).astype(x.dtype)[()]
    return int_ufunc.reduce(x, axis=axes, initial=ident)
  return impl


impls["reduce_and"] = _logical(np.logical_and, np.bitwise_and, -1)
impls["reduce_or"] = _logical(np.logical_or, np.bitwise_or, 0)
impls["reduce_xor"] = _logical(np.logical_xor, np.bitwise_xor, 0)


def _arg_reduce(fn):
  def impl(x, *, axes, index_dtype):
    axis, = axes
    return fn(_up(x), axis=axis).astype(index_dtype)
  return impl


# np.argmax/argmin return the first index on ties and the first NaN, as XLA does.
impls["argmax"] = _arg_reduce(np.argmax)
impls["argmin"] = _arg_reduce(np.argmin)


# --- cumulative reductions --------------------------------------------------------------
def _cumulative(fn):
  def impl(x, *, axis, reverse):
    if reverse:
      return np.flip(fn(np.flip(x, axis), axis), axis)
    return fn(x, axis)
  return impl


def _cumsum(x, axis):
  xu = _up(x)
  out = np.cumsum(xu, axis=axis, dtype=xu.dtype)
  if out.dtype.kind in "fc" and x.shape[axis] > 1:   # XLA drops a length-1 scan: -0 stays
    # XLA's scan folds from the init +0, so a running sum of -0s is +0; adding +0 turns
    # exactly those -0s into +0 and changes nothing else
    out += out.dtype.type(0)
  return out


def _cumprod(x, axis):
  xu = _up(x)
  if xu.dtype.kind == "c":
    # XLA's windowed product starts from the init value 1+0j, so even the first element
    # goes through a complex multiply ((nan+0j) * 1 = nan+nanj); np.cumprod copies it.
    xu = xu * xu.dtype.type(1)
  return np.cumprod(xu, axis=axis, dtype=xu.dtype)


def _cum_order(is_max):
  def fn(x, axis):
    xu = _up(x)
    res = (np.maximum if is_max else np.minimum).accumulate(xu, axis=axis)
    if _is_floatlike(res.dtype) and np.any(res == 0):
      zero_of_sign = (xu == 0) & (np.signbit(xu) != is_max)
      found = np.logical_or.accumulate(zero_of_sign, axis=axis)
      signed = np.where(found, 0.0, -0.0) if is_max else np.where(found, -0.0, 0.0)
      res = np.where(res == 0, signed.astype(res.dtype), res)
    return res
  return fn


def _complex_logaddexp(a, b):
  m = np.maximum(a.real, b.real)
  m = np.where(np.isfinite(m), m, 0)
  return np.log(np.exp(a - m) + np.exp(b - m)) + m


def _cumlogsumexp(x, axis):
  xu = _up(x)
  if xu.dtype.kind != "c":
    return np.logaddexp.accumulate(xu, axis=axis)
  xm = np.moveaxis(xu, axis, 0).copy()
  for i in range(1, xm.shape[0]):
    xm[i] = _complex_logaddexp(xm[i - 1], xm[i])
  return np.moveaxis(xm, 0, axis)


impls["cumsum"] = _cumulative(_cumsum)
impls["cumprod"] = _cumulative(_cumprod)
impls["cummax"] = _cumulative(_cum_order(True))
impls["cummin"] = _cumulative(_cum_order(False))
impls["cumlogsumexp"] = _cumulative(_cumlogsumexp)


# --- evaluating a traced scalar computation on NumPy arrays ----------------------------
def _const_value(c):
  data = getattr(c, "_data", None)
  return data() if data is not None else np.asarray(c)


def _eval_jaxpr(jaxpr, consts, args):
  """Evaluate ``jaxpr`` on NumPy arrays with this backend's eager implementations."""
  env = {}

  def read(v):
    if hasattr(v, "val"):  # a Literal
      return np.asarray(v.val, v.aval.dtype)
    return env[v]

  for v, c in zip(jaxpr.constvars, consts):
    env[v] = _const_value(c)
  for v, a in zip(jaxpr.invars, args):
    env[v] = a
  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    prim = eqn.primitive
    impl = impls.get(prim.name)
    if impl is not None:
      out = impl(*ins, **eqn.params)
    elif prim.impl is not None:  # a higher-order primitive with a Python-level rule
      out = prim.impl(*ins, **eqn.params)
    else:
      raise NotImplementedError(f"The cpu backend has no eager implementation of {prim.name}")
    outs = out if prim.multiple_results else [out]
    for v, o in zip(eqn.outvars, outs):
      env[v] = np.asarray(o, v.aval.dtype)
  return [read(v) for v in jaxpr.outvars]


class _Combiner:
  """``combine(accs, xs) -> accs`` for lists of equal-shape arrays: the scalar jaxpr
  applied elementwise (vectorized when its equations allow, else element by element)."""

  def __init__(self, jaxpr, consts):
    self.jaxpr, self.consts = jaxpr, consts
    self.vectorized = True

  def __call__(self, accs, xs):
    shape = np.shape(accs[0])
    dts = [a.dtype for a in accs]
    if self.vectorized:
      try:
        outs = _eval_jaxpr(self.jaxpr, self.consts, [*accs, *xs])
        if all(np.shape(o) == shape for o in outs):
          return [np.asarray(o, d) for o, d in zip(outs, dts)]
      except Exception:  # noqa: BLE001 - fall back to the scalar loop below
        pass
      self.vectorized = False
    flat_a = [np.asarray(a).reshape(-1) for a in accs]
    flat_x = [np.asarray(x).reshape(-1) for x in xs]
    res = [np.empty(fa.shape, d) for fa, d in zip(flat_a, dts)]
    for i in range(res[0].size if res else 0):
      outs = _eval_jaxpr(self.jaxpr, self.consts, [a[i] for a in flat_a] + [x[i] for x in flat_x])
      for r, o in zip(res, outs):
        r[i] = o
    return [r.reshape(shape) for r in res]


def _fold(xs, accs, combine):
  """``acc = f(acc, x)`` over axis 1.. of each x (shape (m, *rdims)), in row-major order."""
  m = xs[0].shape[0]
  flat = [x.reshape(m, -1) for x in xs]
  for j in range(flat[0].shape[1]):
    accs = combine(accs, [x[:, j] for x in flat])
  return accs


def _xla_reduce(xs, inits, combine):
  """Reduce xs (each of shape (m, *rdims)) over the rdims as XLA's CPU backend does: when a
  reduced dimension exceeds 32, windows of 32 along every reduced dimension are each folded
  from the init value, and the grid of partial results is reduced again (recursively);
  otherwise one sequential row-major fold from the init value.  The windows are laid over
  the dimension padded to a multiple of 32 with the padding split evenly between both
  ends (padding holds no elements).  This reproduces XLA's results even for
  non-associative computations and non-identity init values."""
  m, rdims = xs[0].shape[0], xs[0].shape[1:]
  base = [np.full((m,), i, i.dtype) for i in inits]
  if 0 in rdims or m == 0:
    return base
  if not any(d > _SPLIT for d in rdims):
    return _fold(xs, base, combine)
  wins = [_SPLIT if d > _SPLIT else d for d in rdims]
  grid = [-(-d // w) for d, w in zip(rdims, wins)]
  lows = [(g * w - d) // 2 for d, w, g in zip(rdims, wins, grid)]  # padding split evenly
  r = len(rdims)
  blocked = []
  for x in xs:
    padded = np.zeros((m,) + tuple(g * w for g, w in zip(grid, wins)), x.dtype)
    padded[(slice(None),) + tuple(slice(lo, lo + d) for lo, d in zip(lows, rdims))] = x
    b = padded.reshape((m,) + tuple(v for gw in zip(grid, wins) for v in gw))
    blocked.append(b.transpose((0,) + tuple(1 + 2 * i for i in range(r)) +
                               tuple(2 + 2 * i for i in range(r))))
  gshape = (m,) + tuple(grid)
  accs = [np.full(gshape, i, i.dtype) for i in inits]
  oks = []  # per dim: offset -> None (every window has an element there) or a (g,) mask
  for i, (w, d, g, lo) in enumerate(zip(wins, rdims, grid, lows)):
    per = []
    for o in range(w):
      pos = np.arange(g) * w + o - lo
      ok = (pos >= 0) & (pos < d)
      per.append(None if ok.all() else ok.reshape((1,) * i + (g,) + (1,) * (r - i - 1)))
    oks.append(per)
  for offs in itertools.product(*[range(w) for w in wins]):
    valid = None
    for per, o in zip(oks, offs):
      if per[o] is not None:
        valid = per[o] if valid is None else valid & per[o]
    if valid is not None and not valid.any():
      continue
    sl = (Ellipsis,) + tuple(offs)
    new = combine([a.reshape(-1) for a in accs], [b[sl].reshape(-1) for b in blocked])
    if valid is None:
      accs = [nw.reshape(gshape) for nw in new]
    else:
      accs = [np.where(valid, nw.reshape(gshape), a) for nw, a in zip(new, accs)]
  return _xla_reduce(accs, inits, combine)


@register("reduce")
def _reduce(*args, computation, jaxpr, dimensions):
  """The generic reduce, folding ``acc = f(acc, x)`` in the order XLA's CPU backend uses
  (see ``_xla_reduce``), so non-associative computations and non-identity inits give
  XLA's results.  ``dimensions=()`` returns the operands unchanged, as XLA does."""
  n = len(args) // 2
  ops, inits = args[:n], args[n:]
  dims = sorted(dimensions)
  if not dims:
    return [np.array(o) for o in ops]
  kept = [i for i in range(ops[0].ndim) if i not in dims]
  out_shape = tuple(ops[0].shape[i] for i in kept)
  m = int(np.prod(out_shape, dtype=np.int64))
  rdims = tuple(ops[0].shape[i] for i in dims)
  xs = [np.transpose(o, kept + dims).reshape((m,) + rdims) for o in ops]
  combine = _Combiner(jaxpr.jaxpr, jaxpr.consts)
  accs = _xla_reduce(xs, inits, combine)
  return [a.reshape(out_shape) for a in accs]
