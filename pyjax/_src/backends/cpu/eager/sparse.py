"""NumPy implementations of the BCOO sparse primitives (``pyjax/_src/sparse/bcoo.py``).

Every kernel works on the stored entries only: memory is O(nse) (times the dense block
size and, for products, the free size of the dense operand), never the dense size of the
sparse operand -- except ``bcoo_todense``, whose output is dense by definition.

A BCOO operand is ``data[*batch, nse, *dense]`` and ``indices[*batch, nse, n_sparse]``
(batch dimensions of size 1 broadcast).  The kernels first *flatten the batch*: each
stored entry becomes one row of ``coords[N, n_batch + n_sparse]`` (its batch position
followed by its sparse index) and one slab ``vals[N, *dense]``, so that every kernel is a
plain COO kernel.  A negative index counts once from the end (JAX indexes with jnp's
rules); entries still out of bounds (JAX's padding) are dropped.
Sums of entries that land on the same output position use ``np.bincount`` (1-D real) or
``np.add.at``; sparse-times-dense products without dense or batch dimensions use
SciPy's COO (one right-hand side) or CSR (several) kernels.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register

try:
  import scipy.sparse as _sp
except ImportError:  # pragma: no cover - scipy is a dependency
  _sp = None


# --- helpers --------------------------------------------------------------------------------
def _flatten(data, indices, shape):
  """(coords[N, n_batch + n_sparse] integer, vals[N, *dense], valid[N] bool or None when
  every index is in bounds, n_batch).  Unbatched operands are not copied."""
  n_batch = indices.ndim - 2
  nse, n_sparse = indices.shape[-2:]
  bshape = tuple(shape[:n_batch])
  dense = data.shape[n_batch + 1:]
  data = np.broadcast_to(data, bshape + (nse,) + dense)
  indices = np.broadcast_to(indices, bshape + (nse, n_sparse))
  n = math.prod(bshape) * nse
  idx = indices.reshape(n, n_sparse)
  if idx.dtype.kind == "i" and idx.size and idx.min() < 0:
    # JAX indexes with jnp semantics: a negative index counts once from the end
    idx = np.where(idx < 0, idx + np.asarray(shape[n_batch:n_batch + n_sparse], idx.dtype), idx)
  if n_batch:
    grid = np.indices(bshape + (nse,)).reshape(n_batch + 1, n)[:n_batch].T
    coords = np.concatenate([grid.astype(np.int64), idx.astype(np.int64)], axis=1)
  else:
    coords = idx
  # one unsigned comparison per column catches negative and too-large indices
  valid = None
  udt = np.dtype(f"u{idx.dtype.itemsize}")
  for j in range(n_sparse):
    ok = idx[:, j].view(udt) < shape[n_batch + j] if idx.dtype.kind == "i" else \
        idx[:, j] < shape[n_batch + j]
    valid = ok if valid is None else valid & ok
  if valid is not None and valid.all():
    valid = None
  return coords, data.reshape((n,) + dense), valid, n_batch


def _in_bounds(coords, vals, valid):
  if valid is None:
    return coords, vals
  return coords[valid], vals[valid]


def _scatter_add(lin, vals, size):
  """out[size, *vals.shape[1:]] with ``vals[i]`` summed into row ``lin[i]``."""
  dt = vals.dtype
  if vals.ndim == 1 and dt.kind == "f" and dt.itemsize >= 4:
    return np.bincount(lin, weights=vals, minlength=size).astype(dt, copy=False)
  if vals.ndim == 1 and dt.kind == "c":
    re = np.bincount(lin, weights=vals.real, minlength=size)
    im = np.bincount(lin, weights=vals.imag, minlength=size)
    return (re + 1j * im).astype(dt, copy=False)
  out = np.zeros((size,) + vals.shape[1:], np.int8 if dt == np.bool_ else dt)
  np.add.at(out, lin, vals)
  return out.astype(dt, copy=False)


def _linear(coords, dims_shape):
  if not len(dims_shape):
    return np.zeros(coords.shape[0], np.int64)
  if len(dims_shape) == 1:
    return coords[:, 0]
  return np.ravel_multi_index(tuple(coords.T), tuple(dims_shape))


# --- todense / fromdense / extract ----------------------------------------------------------
@register("bcoo_todense")
def bcoo_todense(data, indices, *, spinfo):
  shape = tuple(spinfo.shape)
  coords, vals, valid, n_batch = _flatten(data, indices, shape)
  k = coords.shape[1]
  coords, vals = _in_bounds(coords, vals, valid)
  out = _scatter_add(_linear(coords, shape[:k]), vals, math.prod(shape[:k]))
  return out.reshape(shape)


@register("bcoo_fromdense")
def bcoo_fromdense(mat, *, nse, n_batch, n_dense, index_dtype):
  n_sparse = mat.ndim - n_batch - n_dense
  bshape = mat.shape[:n_batch]
  sshape = mat.shape[n_batch:n_batch + n_sparse]
  dshape = mat.shape[n_batch + n_sparse:]
  nb = math.prod(bshape)
  ns = math.prod(sshape)
  m = mat.reshape((nb, ns) + dshape)
  mask = m != 0
  if n_dense:
    mask = mask.reshape(nb, ns, -1).any(axis=2)
  b, flat = np.nonzero(mask)                       # row-major: sorted by batch, then index
  starts = np.searchsorted(b, np.arange(nb))
  rank = np.arange(b.size) - starts[b]
  keep = rank < nse
  b, flat, rank = b[keep], flat[keep], rank[keep]
  indices = np.empty((nb, nse, n_sparse), np.int64)
  indices[...] = np.asarray(sshape, np.int64)      # padding: out of bounds (JAX's fill)
  if n_sparse:
    indices[b, rank] = np.stack(np.unravel_index(flat, sshape), axis=1)
  data = np.zeros((nb, nse) + dshape, mat.dtype)
  data[b, rank] = m[b, flat]
  return [data.reshape(bshape + (nse,) + dshape),
          indices.reshape(bshape + (nse, n_sparse)).astype(index_dtype)]


@register("bcoo_extract")
def bcoo_extract(indices, arr, *, assume_unique):
  n_batch = indices.ndim - 2
  nse, n_sparse = indices.shape[-2:]
  n_dense = arr.ndim - n_batch - n_sparse
  bshape = arr.shape[:n_batch]
  dshape = arr.shape[arr.ndim - n_dense:]
  dummy = np.zeros(indices.shape[:n_batch] + (nse,) + (1,) * n_dense, np.int8)
  coords, _, valid, _ = _flatten(dummy, indices, arr.shape)
  k = n_batch + n_sparse
  if valid is not None:
    coords = np.where(valid[:, None], coords, 0)
  lin = _linear(coords, arr.shape[:k])
  flat = arr.reshape((math.prod(arr.shape[:k]),) + dshape)
  out = flat[lin]
  keep = np.ones(lin.shape, bool) if valid is None else valid
  if not assume_unique and lin.size:
    # only the first entry of each distinct (batch, index) keeps the value
    order = np.argsort(lin, kind="stable")
    s = lin[order]
    first = np.ones(s.size, bool)
    first[1:] = s[1:] != s[:-1]
    is_first = np.empty_like(first)
    is_first[order] = first
    keep = keep & is_first
  out[~keep] = 0
  return out.reshape(bshape + (nse,) + dshape)


# --- transpose, sort, sum_duplicates ---------------------------------------------------------
@register("bcoo_transpose")
def bcoo_transpose(data, indices, *, permutation, spinfo):
  n_batch = indices.ndim - 2
  n_sparse = indices.shape[-1]
  batch_perm = permutation[:n_batch]
  sparse_perm = [p - n_batch for p in permutation[n_batch:n_batch + n_sparse]]
  dense_perm = [p - n_sparse - n_batch for p in permutation[n_batch + n_sparse:]]
  data = np.transpose(data, tuple(batch_perm) + (n_batch,)
                      + tuple(d + n_batch + 1 for d in dense_perm))
  indices = np.transpose(indices, tuple(batch_perm) + (n_batch, n_batch + 1))
  indices = indices[..., sparse_perm]
  return [np.ascontiguousarray(data), np.ascontiguousarray(indices)]


def _batched_order(indices, shape, out_of_bounds_last):
  """Per batch, the stable lexicographic order of the index rows (out-of-bounds rows
  replaced by the fill value ``shape`` so they sort last when asked)."""
  n_batch = indices.ndim - 2
  nse, n_sparse = indices.shape[-2:]
  idx = indices.reshape(math.prod(indices.shape[:-2]), nse, n_sparse)
  if out_of_bounds_last:
    fill = np.asarray(shape[n_batch:n_batch + n_sparse], idx.dtype)
    oob = np.any((idx < 0) | (idx >= fill), axis=-1, keepdims=True)
    idx = np.where(oob, fill, idx)
  keys = [idx[..., j] for j in range(n_sparse - 1, -1, -1)]
  if not keys:
    return np.broadcast_to(np.arange(nse), idx.shape[:2]), idx
  order = np.stack([np.lexsort([k[b] for k in keys]) for b in range(idx.shape[0])]) \
      if idx.shape[0] else np.zeros((0, nse), np.int64)
  return order, idx


@register("bcoo_sort_indices")
def bcoo_sort_indices(data, indices, *, spinfo):
  n_batch = indices.ndim - 2
  nse, n_sparse = indices.shape[-2:]
  bshape = tuple(max(a, b) for a, b in zip(data.shape[:n_batch], indices.shape[:n_batch]))
  data = np.broadcast_to(data, bshape + data.shape[n_batch:])
  indices_b = np.broadcast_to(indices, bshape + indices.shape[n_batch:])
  order, idx = _batched_order(indices_b, spinfo.shape, False)
  rows = np.arange(order.shape[0])[:, None]
  d = data.reshape((-1, nse) + data.shape[n_batch + 1:])[rows, order]
  i = idx[rows, order]
  return [d.reshape(data.shape), i.reshape(indices_b.shape)]


def _unique_mapping(indices, shape):
  """Per batch: the unique index rows, sorted (out-of-bounds rows folded into the fill
  value, one more key that sorts last), and the position of each entry's row."""
  n_batch = indices.ndim - 2
  nse, n_sparse = indices.shape[-2:]
  order, idx = _batched_order(indices, shape, True)
  nb = idx.shape[0]
  fill = np.asarray(shape[n_batch:n_batch + n_sparse], idx.dtype)
  uniq = np.empty_like(idx)
  uniq[...] = fill
  inverse = np.zeros((nb, nse), np.int64)
  for b in range(nb):
    s = idx[b][order[b]]
    if nse == 0:
      continue
    new = np.ones(nse, bool)
    if n_sparse:
      new[1:] = np.any(s[1:] != s[:-1], axis=1)
    else:
      new[1:] = False
    pos = np.cumsum(new) - 1
    u = s[new]
    uniq[b, :u.shape[0]] = u
    inverse[b, order[b]] = pos
  return uniq, inverse


@register("bcoo_sum_duplicates")
def bcoo_sum_duplicates(data, indices, *, spinfo, nse):
  n_batch = indices.ndim - 2
  n_sparse = indices.shape[-1]
  ibshape = indices.shape[:n_batch]
  bshape = tuple(max(a, b) for a, b in zip(data.shape[:n_batch], ibshape))
  dense = data.shape[n_batch + 1:]
  uniq, inverse = _unique_mapping(indices, spinfo.shape)
  fill = np.asarray(spinfo.shape[n_batch:n_batch + n_sparse], indices.dtype)
  m = uniq.shape[1]
  out_idx = np.empty((uniq.shape[0], nse, n_sparse), indices.dtype)
  out_idx[...] = fill
  out_idx[:, :min(m, nse)] = uniq[:, :nse]
  if n_sparse == 0:
    data = data.sum(axis=n_batch, keepdims=True, dtype=data.dtype)
    inverse = inverse[:, :1]
  data = np.broadcast_to(data, bshape + data.shape[n_batch:])
  nb = math.prod(bshape)
  d = data.reshape((nb, data.shape[n_batch]) + dense)
  inv = np.broadcast_to(inverse.reshape(ibshape + inverse.shape[1:]),
                        bshape + inverse.shape[1:]).reshape(nb, inverse.shape[1])
  rows = np.broadcast_to(np.arange(nb)[:, None], inv.shape)
  keep = inv < nse
  lin = (rows * nse + inv)[keep]
  out = _scatter_add(lin, d[keep], nb * nse)
  return [out.reshape(bshape + (nse,) + dense),
          out_idx.reshape(ibshape + (nse, n_sparse))]


# --- products -------------------------------------------------------------------------------
def _compute_dtype(dt):
  """Products of half-precision or bfloat16 operands are computed in float32 (the
  dispatcher rounds the result to the output dtype), as XLA's CPU dots do."""
  dt = np.dtype(dt)
  if dt.kind not in "biufc" or (dt.kind == "f" and dt.itemsize < 4):
    return np.dtype(np.float32)
  return dt


_LETTERS = "abcdefghijklmopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _csr_product(coords, vals, lhs_shape, lc, rc, rhs, out_dtype):
  """lhs (COO over all its dimensions, no batch dims in the product) times dense rhs."""
  free = [d for d in range(len(lhs_shape)) if d not in lc]
  fshape = [lhs_shape[d] for d in free]
  cshape = [lhs_shape[d] for d in lc]
  rows = _linear(coords[:, free], fshape)
  cols = _linear(coords[:, list(lc)], cshape)
  rfree = [d for d in range(rhs.ndim) if d not in rc]
  r = np.transpose(rhs, list(rc) + rfree).reshape(math.prod(cshape), -1).astype(out_dtype)
  # SciPy's COO kernels add the stored elements into their rows in storage order (no
  # conversion to CSR, which would re-sort rows and pre-sum duplicates): the compiled
  # tier's C kernel (compiler/kernels/sparse.py) sums in that order too, so both give the
  # same bits
  a = _sp.coo_matrix((vals.astype(out_dtype, copy=False), (rows, cols)),
                     shape=(math.prod(fshape), math.prod(cshape)))
  out = np.asarray(a @ r)
  return out.reshape(tuple(fshape) + tuple(rhs.shape[d] for d in rfree))


def _entry_einsum(vals, lhs_dims, gathered, rhs_dims, out_order):
  """Per-entry product: ``vals[n, *lhs_dims]`` and ``gathered[n, *rhs_dims]`` with
  letters; ``out_order`` lists the letters kept, in order."""
  sub = f"z{''.join(lhs_dims)},z{''.join(rhs_dims)}->z{''.join(out_order)}"
  return np.einsum(sub, vals, gathered)


@register("bcoo_dot_general")
def bcoo_dot_general(lhs_data, lhs_indices, rhs, *, dimension_numbers, lhs_spinfo,
                     preferred_element_type):
  (lc, rc), (lb, rb) = dimension_numbers
  shape = tuple(lhs_spinfo.shape)
  out_dtype = _compute_dtype(np.result_type(lhs_data.dtype, rhs.dtype)
                             if preferred_element_type is None else preferred_element_type)
  coords, vals, valid, n_batch = _flatten(lhs_data, lhs_indices, shape)
  coords, vals = _in_bounds(coords, vals, valid)
  k = coords.shape[1]                      # lhs dims k.. are dense (stored in vals)
  if (_sp is not None and k == len(shape) and not lb and out_dtype.kind in "fc"
      and rhs.size and coords.shape[0]):
    return _csr_product(coords, vals, shape, lc, rc, rhs, out_dtype)
  pairs = dict(zip(lc, rc))
  pairs.update(zip(lb, rb))
  # gather the rhs at the entries' coordinates along rhs dims paired with coordinate dims
  coord_pairs = [(l, pairs[l]) for l in range(k) if l in pairs]
  rest = [d for d in range(rhs.ndim) if d not in {r for _, r in coord_pairs}]
  r = np.transpose(rhs, [r for _, r in coord_pairs] + rest)
  g = r[tuple(coords[:, l] for l, _ in coord_pairs)] if coord_pairs else \
      np.broadcast_to(r, (coords.shape[0],) + r.shape)
  letters = iter(_LETTERS)
  lhs_let = {d: next(letters) for d in range(k, len(shape))}
  rhs_let = {}
  inv = {r_: l for l, r_ in pairs.items()}
  for d in rest:
    rhs_let[d] = lhs_let[inv[d]] if d in inv and inv[d] >= k else next(letters)
  lhs_free = [d for d in range(len(shape)) if d not in lc and d not in lb]
  rhs_free = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
  final = [("l", d) for d in lb] + [("l", d) for d in lhs_free] + [("r", d) for d in rhs_free]
  coord_out = [i for i, (s, d) in enumerate(final) if s == "l" and d < k]
  entry_out = [i for i, (s, d) in enumerate(final) if not (s == "l" and d < k)]
  out_letters = [lhs_let[d] if s == "l" else rhs_let[d] for s, d in (final[i] for i in entry_out)]
  per = _entry_einsum(vals.astype(out_dtype), [lhs_let[d] for d in range(k, len(shape))],
                      g.astype(out_dtype), [rhs_let[d] for d in rest], out_letters)
  out_shape = [shape[d] if s == "l" else rhs.shape[d] for s, d in final]
  cshape = [out_shape[i] for i in coord_out]
  lin = _linear(coords[:, [final[i][1] for i in coord_out]], cshape)
  tmp = _scatter_add(lin, per, math.prod(cshape))
  tmp = tmp.reshape(tuple(cshape) + tuple(out_shape[i] for i in entry_out))
  perm = np.argsort(coord_out + entry_out)
  return np.transpose(tmp, perm).astype(out_dtype, copy=False)


@register("bcoo_dot_general_sampled")
def bcoo_dot_general_sampled(a, b, indices, *, dimension_numbers):
  (ca, cb), (ba, bb) = dimension_numbers
  a_free = [d for d in range(a.ndim) if d not in ca and d not in ba]
  b_free = [d for d in range(b.ndim) if d not in cb and d not in bb]
  out_dims = ([("ab", i) for i in range(len(ba))] + [("a", d) for d in a_free]
              + [("b", d) for d in b_free])
  out_shape = ([a.shape[d] for d in ba] + [a.shape[d] for d in a_free]
               + [b.shape[d] for d in b_free])
  out_dtype = _compute_dtype(np.result_type(a.dtype, b.dtype))
  n_batch = indices.ndim - 2
  nse, n_sparse = indices.shape[-2:]
  k = n_batch + n_sparse
  dummy = np.zeros(indices.shape[:n_batch] + (nse,), np.int8)
  coords, _, valid, _ = _flatten(dummy, indices, out_shape[:k] + [1])
  if valid is not None:
    coords = np.where(valid[:, None], coords, 0)
  # which a/b dims are indexed by each coordinate column
  a_idx, b_idx = [], []
  for col, (kind, d) in enumerate(out_dims[:k]):
    if kind == "ab":
      a_idx.append((ba[d], col))
      b_idx.append((bb[d], col))
    elif kind == "a":
      a_idx.append((d, col))
    else:
      b_idx.append((d, col))
  letters = iter(_LETTERS)
  let = {}
  for i in range(len(ba)):
    let[("a", ba[i])] = let[("b", bb[i])] = next(letters)
  for i in range(len(ca)):
    let[("a", ca[i])] = let[("b", cb[i])] = next(letters)
  for d in a_free:
    let[("a", d)] = next(letters)
  for d in b_free:
    let[("b", d)] = next(letters)

  def gather(x, side, idx):
    taken = [d for d, _ in idx]
    rest = [d for d in range(x.ndim) if d not in taken]
    xt = np.transpose(x, taken + rest)
    g = xt[tuple(coords[:, c] for _, c in idx)] if idx else \
        np.broadcast_to(xt, (coords.shape[0],) + xt.shape)
    return g, [let[(side, d)] for d in rest]

  ga, la = gather(a, "a", a_idx)
  gb, lb_ = gather(b, "b", b_idx)
  dense_letters = []
  for kind, d in out_dims[k:]:
    dense_letters.append(let[("a", ba[d])] if kind == "ab" else let[(kind, d)])
  ga, gb = ga.astype(out_dtype, copy=False), gb.astype(out_dtype, copy=False)
  if not (la or lb_ or dense_letters):   # an outer product sampled: one multiply
    out = ga * gb
  elif len(la) == 1 and la == lb_ and not dense_letters:
    # one contracted dimension: summed from zero in ascending order, as the compiled
    # tier's C kernel does (same bits)
    out = np.zeros(ga.shape[0], out_dtype)
    for j in range(ga.shape[1]):
      out += ga[:, j] * gb[:, j]
  else:
    out = np.einsum(f"z{''.join(la)},z{''.join(lb_)}->z{''.join(dense_letters)}", ga, gb)
  if valid is not None:
    out[~valid] = 0
  bshape = tuple(out_shape[:n_batch])
  return out.reshape(bshape + (nse,) + tuple(out_shape[k:]))


def _pair_indices(out, ur, uc, lfs, rfs):
  """Write into ``out[n, n_out_sparse]`` the first ``n`` (lhs free index, rhs free index)
  pairs of ``ur x uc`` (linear indices) in row-major order -- without temporaries the
  size of ``out``: a matrix product's int32 pairs are written as one 64-bit word each
  (one pass), other layouts by broadcasting or per dimension."""
  n, C = out.shape[0], uc.size
  full, rem = divmod(n, C)
  if len(lfs) == 1 and len(rfs) == 1:
    if (out.dtype.itemsize == 4 and out.flags.c_contiguous and sys.byteorder == "little"):
      words = out.view(np.uint64).reshape(n)
      hi = uc.astype(np.uint64) << np.uint64(32)
      lo = ur.astype(np.uint64)
      np.bitwise_or(lo[:full, None], hi[None, :], out=words[:full * C].reshape(full, C))
      if rem:
        np.bitwise_or(lo[full], hi[:rem], out=words[full * C:])
      return
    grid = out[:full * C].reshape(full, C, 2)
    grid[:, :, 0] = ur[:full, None]
    grid[:, :, 1] = uc[None, :]
    if rem:
      out[full * C:, 0] = ur[full]
      out[full * C:, 1] = uc[:rem]
    return
  cols = []
  if lfs:
    cols += list(np.unravel_index(ur, lfs))
  if rfs:
    cols += list(np.unravel_index(uc, rfs))
  for j, c in enumerate(cols):
    rep = c.astype(out.dtype)
    if j < len(lfs):   # lhs free dims: each repeated once per rhs column
      out[:, j] = np.repeat(rep, C)[:n]
    else:
      out[:, j] = np.tile(rep, ur.size)[:n]


@register("bcoo_spdot_general")
def bcoo_spdot_general(lhs_data, lhs_indices, rhs_data, rhs_indices, *, lhs_spinfo,
                       rhs_spinfo, dimension_numbers, preferred_element_type):
  """Unbatched sparse x sparse (no dense dims): the product's values at every pair of
  (distinct in-bounds lhs free index, distinct in-bounds rhs free index), sorted, padded
  to ``min(lhs.nse * rhs.nse, dense size)`` (JAX's layout)."""
  (lc, rc), _ = dimension_numbers
  ls, rs = tuple(lhs_spinfo.shape), tuple(rhs_spinfo.shape)
  out_dtype = _compute_dtype(preferred_element_type if preferred_element_type is not None
                             else np.result_type(lhs_data.dtype, rhs_data.dtype))
  lcoo, lv, lok, _ = _flatten(lhs_data, lhs_indices, ls)
  rcoo, rv, rok, _ = _flatten(rhs_data, rhs_indices, rs)
  lcoo, lv = _in_bounds(lcoo, lv, lok)
  rcoo, rv = _in_bounds(rcoo, rv, rok)
  lfree = [d for d in range(len(ls)) if d not in lc]
  rfree = [d for d in range(len(rs)) if d not in rc]
  lfs, rfs = [ls[d] for d in lfree], [rs[d] for d in rfree]
  cs = [ls[d] for d in lc]
  lrow = _linear(lcoo[:, lfree], lfs)
  rcol = _linear(rcoo[:, rfree], rfs)
  a = _sp.csr_matrix((lv.astype(out_dtype), (lrow, _linear(lcoo[:, list(lc)], cs))),
                     shape=(math.prod(lfs), math.prod(cs)))
  b = _sp.csr_matrix((rv.astype(out_dtype), (_linear(rcoo[:, list(rc)], cs), rcol)),
                     shape=(math.prod(cs), math.prod(rfs)))
  ur, uc = np.unique(lrow), np.unique(rcol)
  n_out_sparse = len(lfree) + len(rfree)
  out_nse = min((lhs_indices.shape[-2] if len(ls) > len(lc) else 1)
                * (rhs_indices.shape[-2] if len(rs) > len(rc) else 1),
                math.prod(lfs) * math.prod(rfs))
  idx_dtype = lhs_indices.dtype
  # the output is written in place (no dense block, no index temporaries): memory is the
  # output itself (JAX's layout: out_nse slots) plus the sparse product; ``data`` starts
  # as calloc'ed zeros, so only the pages holding true products are touched
  indices = np.empty((out_nse, n_out_sparse), idx_dtype)
  data = np.zeros((out_nse,), out_dtype)
  n = min(ur.size * uc.size, out_nse)
  indices[n:] = np.asarray(lfs + rfs, idx_dtype)      # JAX's padding: out of bounds
  if n:
    prod = (a[ur] @ b[:, uc]).tocoo()                  # the true products only (SpGEMM)
    pos = prod.row.astype(np.int64) * uc.size + prod.col
    keep = pos < out_nse
    data[pos[keep]] = prod.data[keep]
    _pair_indices(indices[:n], ur, uc, lfs, rfs)
  return [data, indices]
