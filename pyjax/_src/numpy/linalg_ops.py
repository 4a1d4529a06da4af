"""Products and contractions of jax.numpy: dot, matmul, vdot, vecdot, inner, outer,
tensordot, einsum (with opt_einsum contraction paths), kron, trace, diagonal, cross,
matvec, vecmat, and 1-D convolve/correlate.

Contractions are lax.dot_general calls with ``preferred_element_type`` set to the
promoted result dtype; inputs are *not* promoted first (dot_general accepts mixed input
dtypes, as in JAX).  The result keeps a weak type only when both inputs are weak.
"""
from __future__ import annotations

import collections
import math
import operator

import numpy as np

from pyjax._src import dtypes
from pyjax._src.runtime.array import ArrayImpl as _ArrayImpl
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy.reductions import (lax, _asarray, _convert, _canonicalize_axis,
                                         _expand_dims, _full)
from pyjax._src.numpy.util import check_arraylike, promote_dtypes, promote_dtypes_inexact
from pyjax._src.numpy.util import library_function as _library_function

__all__ = ["dot", "matmul", "matvec", "vecmat", "vdot", "vecdot", "inner", "outer",
           "tensordot", "einsum", "einsum_path", "kron", "trace", "diagonal", "cross",
           "convolve", "correlate"]


def _result_dtype(name, a, b, preferred_element_type):
  if preferred_element_type is None:
    return dtypes.result_type(a, b, return_weak_type_flag=True)
  return dtypes.check_user_dtype(preferred_element_type, name), False


def _squeeze(x, dims):
  return lax.squeeze(x, tuple(dims)) if dims else x


def _transpose(x, perm):
  perm = tuple(int(p) for p in perm)
  return x if perm == tuple(range(len(perm))) else lax.transpose(x, perm)


def _moveaxis(x, src, dst):
  """jnp.moveaxis for tuples of canonical-or-negative axes (lax.transpose checks)."""
  nd = x.ndim
  src = tuple(_canonicalize_axis(s, nd) for s in src)
  dst = tuple(_canonicalize_axis(d, nd) for d in dst)
  perm = [i for i in range(nd) if i not in src]
  for d, s in sorted(zip(dst, src)):
    perm.insert(d, s)
  if tuple(perm) == tuple(range(nd)):
    return x
  return lax.transpose(x, tuple(perm))


def _flip_all(x):
  return lax.rev(x, tuple(range(x.ndim))) if x.ndim else x


def _conj(x):
  return lax.conj(x) if dtypes.is_complex(x.dtype) else x


# --- dot, matmul and friends ------------------------------------------------------------
def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """NumPy's dot: a scalar operand scales, a 1-D ``b`` contracts with ``a``'s last axis,
  otherwise ``a``'s last axis contracts with ``b``'s second-to-last."""
  check_arraylike("dot", a, b)
  a, b = _asarray("dot", a), _asarray("dot", b)
  pet, weak = _result_dtype("dot", a, b, preferred_element_type)
  if a.ndim == 0 or b.ndim == 0:
    contract = ((), ())
  elif b.ndim == 1:
    contract = ((a.ndim - 1,), (0,))
  else:
    contract = ((a.ndim - 1,), (b.ndim - 2,))
  out = lax.dot_general(a, b, (contract, ((), ())), precision=precision,
                        preferred_element_type=pet, out_sharding=out_sharding)
  return _convert(out, pet, weak)


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """NumPy's matmul (the ``@`` operator): batch dimensions broadcast; 1-D operands are
  treated as a row (left) or column (right) vector and their axis removed."""
  check_arraylike("matmul", a, b)
  a, b = _asarray("matmul", a), _asarray("matmul", b)
  for i, x in enumerate((a, b)):
    if x.ndim < 1:
      raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                       f"ndim {x.ndim}")
  pet, weak = _result_dtype("matmul", a, b, preferred_element_type)
  a_is_mat, b_is_mat = a.ndim > 1, b.ndim > 1
  a_batch = tuple(a.shape[:-2]) if a_is_mat else ()
  b_batch = tuple(b.shape[:-2]) if b_is_mat else ()
  nb = max(len(a_batch), len(b_batch))
  a_batch = (None,) * (nb - len(a_batch)) + a_batch
  b_batch = (None,) * (nb - len(b_batch)) + b_batch
  a_squeeze, b_squeeze, both_squeeze = [], [], []
  a_bdims, b_bdims = [], []
  out_batch, out_a, out_b = [], [], []  # output positions of dot_general's dims
  for i, (da, db) in enumerate(zip(a_batch, b_batch)):
    a_pos = len(out_batch) + len(out_a) + len(a_squeeze)
    b_pos = len(out_batch) + len(out_b) + len(b_squeeze)
    if da is None:
      out_b.append(i)
    elif db is None:
      out_a.append(i)
    elif da == 1 and db == 1:
      a_squeeze.append(a_pos)
      b_squeeze.append(b_pos)
      both_squeeze.append(i)
    elif da == 1:
      a_squeeze.append(a_pos)
      out_b.append(i)
    elif db == 1:
      b_squeeze.append(b_pos)
      out_a.append(i)
    elif da == db:
      a_bdims.append(len(out_batch) + len(out_a))
      b_bdims.append(len(out_batch) + len(out_b))
      out_batch.append(i)
    else:
      raise ValueError(f"Incompatible types for matmul arguments: {_short(a)} and {_short(b)}")
  if a_is_mat:
    out_a.append(nb)
  if b_is_mat:
    out_b.append(nb + a_is_mat)
  perm = np.argsort(np.array(out_batch + out_a + out_b, dtype=np.int64), kind="stable")
  a = _squeeze(a, a_squeeze)
  b = _squeeze(b, b_squeeze)
  dims = (((a.ndim - 1,), (b.ndim - 1 - b_is_mat,)), (tuple(a_bdims), tuple(b_bdims)))
  direct = out_sharding if tuple(perm) == tuple(range(len(perm))) else None
  out = lax.dot_general(a, b, dims, precision=precision, preferred_element_type=pet,
                        out_sharding=direct)
  out = _transpose(out, perm)
  if out_sharding is not None and direct is None:
    from pyjax._src.jit_sharding import reshard
    out = reshard(out, out_sharding)
  if both_squeeze:
    out = _expand_dims(out, both_squeeze)
  return _convert(out, pet, weak)


def _short(x):
  return f"{x.dtype.name}[{','.join(str(d) for d in x.shape)}]"


def _core_dims_error(shape, names, sig):
  return ValueError(f"input with shape {tuple(shape)} does not have enough dimensions for all "
                    f"core dimensions {names} on vectorized function with "
                    f"excluded=frozenset() and signature='{sig}'")


def _core_size_error(name, new, old, sig):
  return ValueError(f"inconsistent size for core dimension '{name}': {new} vs {old} on "
                    f"vectorized function with excluded=frozenset() and signature='{sig}'")


def matvec(x1, x2, /):
  """Batched matrix-vector product: (..., n, m) x (..., m) -> (..., n)."""
  check_arraylike("matvec", x1, x2)
  x1, x2 = _asarray("matvec", x1), _asarray("matvec", x2)
  sig = "(n,m),(m)->(n)"
  if x1.ndim < 2:
    raise _core_dims_error(x1.shape, ("n", "m"), sig)
  if x2.ndim < 1:
    raise _core_dims_error(x2.shape, ("m",), sig)
  if x1.shape[-1] != x2.shape[-1]:
    raise _core_size_error("m", x2.shape[-1], x1.shape[-1], sig)
  _batch_shape(x1.shape[:-2], x2.shape[:-1])
  out = matmul(x1, _expand_dims(x2, (x2.ndim,)))
  return lax.reshape(out, tuple(out.shape[:-1]))


def vecmat(x1, x2, /):
  """Batched (conjugated) vector-matrix product: (..., n) x (..., n, m) -> (..., m)."""
  check_arraylike("matvec", x1, x2)
  x1, x2 = _asarray("matvec", x1), _asarray("matvec", x2)
  sig = "(n),(n,m)->(m)"
  if x1.ndim < 1:
    raise _core_dims_error(x1.shape, ("n",), sig)
  if x2.ndim < 2:
    raise _core_dims_error(x2.shape, ("n", "m"), sig)
  if x1.shape[-1] != x2.shape[-2]:
    raise _core_size_error("n", x2.shape[-2], x1.shape[-1], sig)
  _batch_shape(x1.shape[:-1], x2.shape[:-2])
  out = matmul(_expand_dims(_conj(x1), (x1.ndim - 1,)), x2)
  return lax.reshape(out, tuple(out.shape[:-2]) + (out.shape[-1],))


def _batch_shape(*shapes):
  try:
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}") from None


def vdot(a, b, *, precision=None, preferred_element_type=None):
  """Flattened dot product, conjugating ``a`` if it is complex."""
  check_arraylike("vdot", a, b)
  a, b = _asarray("vdot", a), _asarray("vdot", b)
  a = _conj(a)
  return dot(_ravel_any(a), _ravel_any(b), precision=precision,
             preferred_element_type=preferred_element_type)


def _ravel_any(x):
  return x if x.ndim == 1 else lax.reshape(x, (math.prod(x.shape),))


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """Conjugated vector dot product along ``axis``, broadcasting the other dimensions."""
  check_arraylike("jnp.vecdot", x1, x2)
  x1, x2 = _asarray("jnp.vecdot", x1), _asarray("jnp.vecdot", x2)
  if x1.shape[axis] != x2.shape[axis]:
    raise ValueError(f"axes must match; got shapes {x1.shape} and {x2.shape} with "
                     f"axis={axis!r}")
  x1 = _moveaxis(x1, (axis,), (-1,))
  x2 = _moveaxis(x2, (axis,), (-1,))
  pet, weak = _result_dtype("vecdot", x1, x2, preferred_element_type)
  batch = _batch_shape(x1.shape[:-1], x2.shape[:-1])
  n = x1.shape[-1]
  x1 = _red._broadcast_to(_conj(x1), batch + (n,))
  x2 = _red._broadcast_to(x2, batch + (n,))
  nb = len(batch)
  bd = tuple(range(nb))
  out = lax.dot_general(x1, x2, (((nb,), (nb,)), (bd, bd)), precision=precision,
                        preferred_element_type=pet)
  return _convert(out, pet, weak)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
  """Contract ``axes`` (an int: the last/first that many; or a pair of axis sequences)."""
  check_arraylike("tensordot", a, b)
  a, b = _asarray("tensordot", a), _asarray("tensordot", b)
  pet, weak = _result_dtype("tensordot", a, b, preferred_element_type)
  an, bn = a.ndim, b.ndim
  if type(axes) is int:
    if axes > min(an, bn):
      raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                      f"({a.shape} and {b.shape})")
    contract = (tuple(range(an - axes, an)), tuple(range(axes)))
  elif isinstance(axes, (tuple, list)) and len(axes) == 2:
    ax1, ax2 = axes
    if isinstance(ax1, int) and isinstance(ax2, int):
      contract = ((_canonicalize_axis(ax1, an),), (_canonicalize_axis(ax2, bn),))
    elif isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list)):
      if len(ax1) != len(ax2):
        raise TypeError(f"tensordot requires axes lists to have equal length, got {ax1} "
                        f"and {ax2}.")
      contract = (tuple(_canonicalize_axis(i, an) for i in ax1),
                  tuple(_canonicalize_axis(i, bn) for i in ax2))
    else:
      raise TypeError("tensordot requires both axes lists to be either ints, tuples or "
                      f"lists, got {ax1} and {ax2}")
  else:
    raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of "
                    "lists/tuples of ints.")
  out = lax.dot_general(a, b, (contract, ((), ())), precision=precision,
                        preferred_element_type=pet, out_sharding=out_sharding)
  return _convert(out, pet, weak)


def inner(a, b, *, precision=None, preferred_element_type=None):
  """Contract the last axes of ``a`` and ``b`` (a scalar operand multiplies)."""
  check_arraylike("inner", a, b)
  a, b = _asarray("inner", a), _asarray("inner", b)
  if a.ndim == 0 or b.ndim == 0:
    from pyjax._src.numpy import ufuncs
    if preferred_element_type is not None:
      d = dtypes.check_user_dtype(preferred_element_type, "astype")
      a, b = _convert(a, d), _convert(b, d)
    return ufuncs.multiply(a, b)
  return tensordot(a, b, (-1, -1), precision=precision,
                   preferred_element_type=preferred_element_type)


def outer(a, b, out=None):
  """Outer product of the flattened inputs."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
  check_arraylike("outer", a, b)
  a, b = promote_dtypes(_asarray("outer", a), _asarray("outer", b))
  a, b = _ravel_any(a), _ravel_any(b)
  shape = (a.shape[0], b.shape[0])
  return _mul(lax.broadcast_in_dim(a, shape, (0,)), lax.broadcast_in_dim(b, shape, (1,)))


# --- einsum -----------------------------------------------------------------------------
def _opt_einsum():
  import opt_einsum
  return opt_einsum


_unoptimized_cls = None


def _unoptimized():
  """A path optimizer that contracts operands left to right (``optimize=False``)."""
  global _unoptimized_cls
  if _unoptimized_cls is None:
    oe = _opt_einsum()

    class Unoptimized(oe.paths.PathOptimizer):
      def __call__(self, inputs, *args, **kwargs):
        return [(0, 1)] * (len(inputs) - 1)
    _unoptimized_cls = Unoptimized
  return _unoptimized_cls()


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None, out_sharding=None):
  """Einstein summation.  The contraction order comes from opt_einsum (``optimize``:
  'auto', 'optimal', 'greedy', True, False or an explicit path); each pairwise step is one
  dot_general.  ``out_sharding`` lays the result out (``jax.reshard``); the pairwise
  contractions are checked with their own sharding types, so one with sharded contracting
  dimensions still raises where JAX would use ``out_sharding`` for it."""
  operands = (subscripts, *operands)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
  path_type = "optimal" if optimize is True else _unoptimized() if optimize is False \
      else optimize
  operands = tuple(op.__jax_array__() if hasattr(op, "__jax_array__")
                   and not isinstance(op, _ArrayImpl) else op for op in operands)
  oe = _opt_einsum()
  operands, contractions = oe.contract_path(*operands, einsum_call=True, use_blas=True,
                                            optimize=path_type)
  contractions = tuple((c[0], frozenset(c[1]), c[2]) for c in contractions)
  check_arraylike("einsum", *operands)
  arrays = [_asarray("einsum", op) for op in operands]
  dot_general = _dot_general if _dot_general is not None else lax.dot_general
  out = _einsum(arrays, contractions, precision, preferred_element_type, dot_general)
  if out_sharding is not None:
    from pyjax._src.jit_sharding import reshard
    out = reshard(out, out_sharding)
  return out


def einsum_path(subscripts, /, *operands, optimize="auto"):
  """opt_einsum's contraction path and its printable description."""
  if isinstance(optimize, bool):
    optimize = "optimal" if optimize else _unoptimized()
  return _opt_einsum().contract_path(subscripts, *operands, optimize=optimize)


def _removechars(s, chars):
  return s.translate(str.maketrans(dict.fromkeys(chars)))


def _delta_mask(shape, axes):
  """bool mask, True where the indices along all ``axes`` are equal."""
  iotas = [lax.broadcasted_iota(dtypes.int32, shape, ax) for ax in axes]
  mask = lax.eq(iotas[0], iotas[1])
  for io in iotas[2:]:
    mask = lax.bitwise_and(mask, lax.eq(iotas[0], io))
  return mask


def _einsum(operands, contractions, precision, preferred_element_type, dot_general):
  if preferred_element_type is None:
    pet, weak = dtypes.result_type(*operands, return_weak_type_flag=True)
  else:
    pet, weak = dtypes.check_user_dtype(preferred_element_type, "einsum"), False

  def sum_(x, axes):
    if dtypes.result_type(x, pet) != x.dtype:
      x = _convert(x, pet)
    red = lax.reduce_or if x.dtype == dtypes.bool_ else lax.reduce_sum
    return red(x, tuple(axes))

  def sum_uniques(operand, names, uniques):
    if uniques:
      axes = [names.index(n) for n in uniques]
      operand = sum_(operand, axes)
      names = _removechars(names, uniques)
    return operand, names

  def sum_repeats(operand, names, counts, keep_names):
    for name, count in counts.items():
      if count > 1:
        axes = [i for i, n in enumerate(names) if n == name]
        eye = _delta_mask(operand.shape, axes)
        operand = lax.select(eye, operand, _full(operand.shape, 0, operand.dtype,
                                                 operand.weak_type))
        if name not in keep_names:
          operand = sum_(operand, axes)
          names = names.replace(name, "")
        else:
          operand = sum_(operand, axes[:-1])
          names = names.replace(name, "", count - 1)
    return operand, names

  def filter_singleton_dims(operand, names, other_shape, other_names):
    keep = [operand.shape[i] != 1 or j == -1 or other_shape[j] == 1
            for i, j in enumerate(map(other_names.find, names))]
    sq = [i for i, k in enumerate(keep) if not k]
    kept = [i for i, k in enumerate(keep) if k]
    return _squeeze(operand, sq), "".join(names[i] for i in kept)

  for operand_indices, contracted_names_set, einstr in contractions:
    contracted_names = sorted(contracted_names_set)
    input_str, result_names = einstr.split("->")
    input_names = input_str.split(",")
    if len(operand_indices) == 1:
      operand = operands.pop(operand_indices[0])
      names, = input_names
      counts = collections.Counter(names)
      uniques = [n for n in contracted_names if counts[n] == 1]
      operand, names = sum_uniques(operand, names, uniques)
      operand, names = sum_repeats(operand, names, counts, result_names)
    elif len(operand_indices) == 2:
      lhs, rhs = map(operands.pop, operand_indices)
      lhs_names, rhs_names = input_names
      lhs, lhs_names = filter_singleton_dims(lhs, lhs_names, rhs.shape, rhs_names)
      rhs, rhs_names = filter_singleton_dims(rhs, rhs_names, lhs.shape, lhs_names)
      lhs_counts = collections.Counter(lhs_names)
      rhs_counts = collections.Counter(rhs_names)
      lhs_uniques = [n for n in contracted_names if lhs_counts[n] == 1 and rhs_counts[n] == 0]
      lhs, lhs_names = sum_uniques(lhs, lhs_names, lhs_uniques)
      rhs_uniques = [n for n in contracted_names if rhs_counts[n] == 1 and lhs_counts[n] == 0]
      rhs, rhs_names = sum_uniques(rhs, rhs_names, rhs_uniques)
      lhs, lhs_names = sum_repeats(lhs, lhs_names, lhs_counts, result_names + rhs_names)
      rhs, rhs_names = sum_repeats(rhs, rhs_names, rhs_counts, result_names + lhs_names)
      both = set(lhs_names) | set(rhs_names)
      contracted_names = [n for n in contracted_names if n in both]
      common = set(lhs_names) & set(rhs_names)
      batch_names = [n for n in result_names if n in common]
      lhs_batch = tuple(lhs_names.find(n) for n in batch_names)
      rhs_batch = tuple(rhs_names.find(n) for n in batch_names)
      batch_str = "".join(batch_names)
      lhs_cont = tuple(lhs_names.index(n) for n in contracted_names)
      rhs_cont = tuple(rhs_names.index(n) for n in contracted_names)
      deleted = batch_str + "".join(contracted_names)
      rem_lhs = _removechars(lhs_names, deleted)
      rem_rhs = _removechars(rhs_names, deleted)
      names = batch_str + rem_rhs + rem_lhs
      if names == result_names:
        operand = dot_general(rhs, lhs, ((rhs_cont, lhs_cont), (rhs_batch, lhs_batch)),
                              precision, preferred_element_type=pet)
      else:
        names = batch_str + rem_lhs + rem_rhs
        operand = dot_general(lhs, rhs, ((lhs_cont, rhs_cont), (lhs_batch, rhs_batch)),
                              precision, preferred_element_type=pet)
    else:
      raise NotImplementedError(
          "jax.numpy.einsum does not support simultaneous contraction of 3 or more "
          "operands. Typically this means you've passed an unsupported path to the einsum "
          "optimize parameter.")
    if names != result_names:
      operand = lax.transpose(operand, tuple(names.index(n) for n in result_names))
    operands.append(operand)
  return _convert(operands[0], pet, weak)


# --- kron, trace, diagonal, cross -------------------------------------------------------
@_library_function(jit=('kron', ()))
def kron(a, b):
  """Kronecker product (bool inputs raise, as in JAX, which multiplies with lax.mul)."""
  check_arraylike("kron", a, b)
  a, b = promote_dtypes(_asarray("kron", a), _asarray("kron", b))
  if a.ndim < b.ndim:
    a = _expand_dims(a, range(b.ndim - a.ndim))
  elif b.ndim < a.ndim:
    b = _expand_dims(b, range(a.ndim - b.ndim))
  nd = a.ndim
  if nd == 0:
    return lax.mul(a, b)
  shape = tuple(x for pair in zip(a.shape, b.shape) for x in pair)
  a2 = lax.broadcast_in_dim(a, shape, tuple(range(0, 2 * nd, 2)))
  b2 = lax.broadcast_in_dim(b, shape, tuple(range(1, 2 * nd, 2)))
  return lax.reshape(lax.mul(a2, b2), tuple(x * y for x, y in zip(a.shape, b.shape)))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
  """Sum along a diagonal (dtype rules of jnp.sum: small ints/bool -> default int)."""
  a = _asarray("trace", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
  if _canonicalize_axis(axis1, a.ndim) == _canonicalize_axis(axis2, a.ndim):
    raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "trace")
  d = diagonal(a, offset, axis1, axis2)
  return _red.sum(d, axis=-1, dtype=dtype)


def diagonal(a, offset=0, axis1=0, axis2=1):
  """The diagonal(s) as the last axis.  Differs from NumPy like JAX: returns a new
  array (strongly typed), never a view."""
  a = _asarray("diagonal", a)
  if a.ndim < 2:
    raise ValueError("diagonal requires an array of at least two dimensions.")
  offset = operator.index(offset)
  shape = a.shape
  n1, n2 = shape[_canonicalize_axis(axis1, a.ndim)], shape[_canonicalize_axis(axis2, a.ndim)]
  a = _moveaxis(a, (axis1, axis2), (-2, -1))
  size = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
  r0, c0 = max(-offset, 0), max(offset, 0)
  batch = tuple(a.shape[:-2])
  nb = len(batch)
  sub = lax.slice(a, (0,) * nb + (min(r0, n1), min(c0, n2)),
                  batch + (min(r0, n1) + size, min(c0, n2) + size))
  flat = lax.reshape(sub, batch + (size * size,))
  if size > 1:
    flat = lax.slice(flat, (0,) * (nb + 1), batch + (size * size,), (1,) * nb + (size + 1,))
  return _convert(flat, flat.dtype, False)


def _last(x, i):
  nd = x.ndim
  out = lax.slice(x, (0,) * (nd - 1) + (i,), tuple(x.shape[:-1]) + (i + 1,))
  return lax.reshape(out, tuple(x.shape[:-1]))


def _mul(x, y):
  """jnp.multiply for equal dtypes and shapes (logical and for bool, as JAX)."""
  return lax.bitwise_and(x, y) if x.dtype == dtypes.bool_ else lax.mul(x, y)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
  """Cross product of 2- or 3-vectors along the given axes (batch dims broadcast)."""
  check_arraylike("cross", a, b)
  a, b = _asarray("cross", a), _asarray("cross", b)
  if axis is not None:
    axisa = axisb = axisc = axis
  a = _moveaxis(a, (axisa,), (-1,))
  b = _moveaxis(b, (axisb,), (-1,))
  if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
    raise ValueError("Dimension must be either 2 or 3 for cross product")
  a, b = promote_dtypes(a, b)
  batch = _batch_shape(a.shape[:-1], b.shape[:-1])

  def comp(x, i):
    if i < x.shape[-1]:
      return _red._broadcast_to(_last(x, i), batch)
    return _full(batch, 0, x.dtype, x.weak_type)
  a0, a1, a2 = (comp(a, i) for i in range(3))
  b0, b1, b2 = (comp(b, i) for i in range(3))
  if a.shape[-1] == 2 and b.shape[-1] == 2:
    return lax.sub(_mul(a0, b1), _mul(a1, b0))
  comps = [lax.sub(_mul(a1, b2), _mul(a2, b1)), lax.sub(_mul(a2, b0), _mul(a0, b2)),
           lax.sub(_mul(a0, b1), _mul(a1, b0))]
  c = lax.concatenate([_expand_dims(x, (0,)) for x in comps], 0)
  c = _convert(c, c.dtype, False)
  return _moveaxis(c, (0,), (axisc,))


# --- 1-D convolution --------------------------------------------------------------------
def _conv(x, y, mode, op, precision, preferred_element_type):
  if x.ndim != 1 or y.ndim != 1:
    raise ValueError(f"{op}() only support 1-dimensional inputs.")
  if preferred_element_type is None:
    x, y = promote_dtypes_inexact(x, y)
  else:
    x, y = promote_dtypes(x, y)
  if x.shape[0] == 0 or y.shape[0] == 0:
    raise ValueError(f"{op}: inputs cannot be empty, got shapes {x.shape} and {y.shape}.")
  reverse_out = False
  if op == "correlate":
    y = _conj(y)
    if x.shape[0] < y.shape[0]:
      x, y = y, x
      reverse_out = True
  else:
    if x.shape[0] < y.shape[0]:
      x, y = y, x
    y = lax.rev(y, (0,))
  n = y.shape[0]
  if mode == "valid":
    padding = [(0, 0)]
  elif mode == "same":
    padding = [(n // 2, n - n // 2 - 1)]
  elif mode == "full":
    padding = [(n - 1, n - 1)]
  else:
    raise ValueError("mode must be one of ['full', 'same', 'valid']")
  if preferred_element_type is not None:
    preferred_element_type = dtypes.check_user_dtype(preferred_element_type, op)
  out = lax.conv_general_dilated(lax.reshape(x, (1, 1, x.shape[0])),
                                 lax.reshape(y, (1, 1, n)), (1,), padding,
                                 precision=precision,
                                 preferred_element_type=preferred_element_type)
  out = lax.reshape(out, (out.shape[2],))
  return lax.rev(out, (0,)) if reverse_out else out


@_library_function(jit=('convolve', ('mode', 'precision', 'preferred_element_type')))
def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
  """1-D discrete convolution via lax.conv_general_dilated (integer inputs give floats
  unless ``preferred_element_type`` is given)."""
  check_arraylike("convolve", a, v)
  a, v = _asarray("convolve", a), _asarray("convolve", v)
  return _conv(a, v, mode, "convolve", precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
  """1-D cross-correlation (``v`` conjugated) via lax.conv_general_dilated."""
  check_arraylike("correlate", a, v)
  a, v = _asarray("correlate", a), _asarray("correlate", v)
  return _conv(a, v, mode, "correlate", precision, preferred_element_type)
