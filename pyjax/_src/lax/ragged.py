"""Ragged and scaled contractions: ``ragged_dot`` / ``ragged_dot_general`` (the
``ragged_dot_general`` primitive, with ``RaggedDotDimensionNumbers``), ``scaled_dot``
(the ``scaled_dot`` primitive) and the ``DotAlgorithm`` description.

``ragged_dot_general`` has JAX's three modes, chosen by the kind of the lhs ragged
dimension: non-contracting (``[m, k] x [g, k, n] -> [m, n]``: rows of group ``i`` use
``rhs[i]``), contracting (``[m, k] x [k, n] -> [g, m, n]``: one partial product per group
of ``k``) and batch.  Rows past ``sum(group_sizes)`` give zeros (non-contracting mode).
The CPU implementation masks each group and contracts densely, as XLA's fallback does.
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

from pyjax._src import core, dtypes, shape_rules
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax import dot as _dot
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import shapes as _shapes

__all__ = ["DotAlgorithm", "RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general",
           "ragged_dot_general_p", "scaled_dot"]


class DotAlgorithm(NamedTuple):
  """The algorithm of a dot product: operand precision types, accumulation type and
  component counts (XLA's DotAlgorithm).  The CPU backend computes in the operand (or
  preferred) dtype, which is what every algorithm it supports amounts to."""
  lhs_precision_type: Any
  rhs_precision_type: Any
  accumulation_type: Any
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
  """``dot_dimension_numbers`` (as for ``dot_general``), the lhs ragged dimension(s) and
  the rhs group dimension(s) of a ``ragged_dot_general``."""
  dot_dimension_numbers: Any
  lhs_ragged_dimensions: Any
  rhs_group_dimensions: Any

  def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
    object.__setattr__(self, "dot_dimension_numbers",
                       tuple(tuple(map(tuple, t)) for t in dot_dimension_numbers))
    object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
    object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


_BASIC = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])

NONCONTRACTING = shape_rules.NONCONTRACTING
CONTRACTING = shape_rules.CONTRACTING
BATCH = shape_rules.BATCH
_remaining = shape_rules._remaining
prefix_dims = shape_rules.ragged_prefix_dims


def mode_and_dim(lhs_rank, rdn):
  """(mode, lhs ragged dimension) of a ragged dot."""
  return shape_rules.ragged_mode_and_dim(lhs_rank, rdn.dot_dimension_numbers,
                                         rdn.lhs_ragged_dimensions)


ragged_dot_general_p = core.Primitive("ragged_dot_general")


@ragged_dot_general_p.def_abstract_eval
def _ragged_abstract(lhs, rhs, gs, *, ragged_dot_dimension_numbers, precision,
                     preferred_element_type, group_offset, out_sharding):
  rdn = ragged_dot_dimension_numbers

  def in_range(dim, rank, dim_name, arg):
    if dim < 0 or dim >= rank:
      raise TypeError(f"ragged_dot_general requires {dim_name} numbers to be nonnegative "
                      f"and less than the number of axes of the {arg} value, got {dim} for "
                      f"{arg} of rank {rank}.")
  if len(rdn.lhs_ragged_dimensions) != 1:
    raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
  ragged = rdn.lhs_ragged_dimensions[0]
  in_range(ragged, len(lhs.shape), "lhs ragged dimension", "lhs")
  mode, _ = mode_and_dim(len(lhs.shape), rdn)
  (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
  if not gs.shape:
    raise TypeError("expected rank of group_sizes to be >=1.")
  if len(gs.shape) != 1:
    pre = prefix_dims(mode, len(lhs.shape), ragged, lb, lc)
    want = tuple(lhs.shape[i] for i in pre) + (gs.shape[-1],)
    if tuple(gs.shape) != want:
      raise TypeError(f"expected group_sizes to have shape {want}, got {gs.shape}.")
  g = gs.shape[-1]
  rg = rdn.rhs_group_dimensions
  if mode in (CONTRACTING, BATCH):
    if len(rg) != 0:
      raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs "
                      "ragged dimension is contracting or batch.")
  else:
    if len(rg) != 1:
      raise TypeError("ragged_dot_general requires exactly one rhs group dimension when lhs "
                      "ragged dimension is noncontracting.")
    in_range(rg[0], len(rhs.shape), "rhs group dimension", "rhs")
    if rg[0] in rb or rg[0] in rc:
      raise TypeError("ragged_dot_general requires rhs group dimension numbers to be "
                      "distinct from contracting and batch dimensions.")
    if rhs.shape[rg[0]] != g:
      raise TypeError(f"expected rhs group dimension size to be {g}, got "
                      f"{rhs.shape[rg[0]]}.")
  if not dtypes.is_int(gs.dtype):
    raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of "
                    "np.integer.")
  # the dense contraction's shape (the rhs group dimension counts as a free dimension
  # there and is removed again)
  rhs_shape = tuple(s for i, s in enumerate(rhs.shape) if i not in rg)
  rmap = [i for i in range(len(rhs.shape)) if i not in rg]
  dn = ((tuple(lc), tuple(rmap.index(d) for d in rc)),
        (tuple(lb), tuple(rmap.index(d) for d in rb)))
  shape = _dot._dot_general_shape(tuple(lhs.shape), rhs_shape, dn)
  dtype = _dot.dot_result_dtype(lhs.dtype, rhs.dtype, preferred_element_type,
                                check_bit_width=not isinstance(precision,
                                                               _dot.DotAlgorithmPreset))
  if mode == CONTRACTING:
    shape = (g,) + shape
  return ShapedArray(shape, dtype, False)


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
  """Ragged contraction in one of three modes (see the module docstring).
  ``group_offset`` is not supported (as in JAX's implementation)."""
  if out_sharding is not None:
    raise NotImplementedError("ragged_dot_general: out_sharding is not supported (pyjax "
                              "has one device per platform)")
  pref = dtypes.check_user_dtype(preferred_element_type, "ragged_dot_general")
  return ragged_dot_general_p.bind(
      lhs, rhs, group_sizes, ragged_dot_dimension_numbers=ragged_dot_dimension_numbers,
      precision=_dot.canonicalize_precision(precision), preferred_element_type=pref,
      group_offset=group_offset, out_sharding=None)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
  """``lhs[m, k] x rhs[g, k, n] -> [m, n]``: consecutive row groups of ``lhs`` (sizes
  ``group_sizes[g]``) are multiplied by ``rhs[g]``; rows past the groups give zeros."""
  return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision=precision,
                            preferred_element_type=preferred_element_type,
                            group_offset=group_offset, out_sharding=out_sharding)


# --- differentiation ------------------------------------------------------------------------
def _ragged_jvp(primals, tangents, *, ragged_dot_dimension_numbers, precision,
                preferred_element_type, group_offset, out_sharding):
  if group_offset is not None:
    raise NotImplementedError("Unimplemented group_offset support.")
  x, y, gs = primals
  dx, dy, _ = tangents
  kw = dict(ragged_dot_dimension_numbers=ragged_dot_dimension_numbers, precision=precision,
            preferred_element_type=preferred_element_type, group_offset=None,
            out_sharding=None)
  out = ragged_dot_general_p.bind(x, y, gs, **kw)
  parts = []
  if type(dx) is not ad.Zero:
    parts.append(ragged_dot_general_p.bind(dx, y, gs, **kw))
  if type(dy) is not ad.Zero:
    parts.append(ragged_dot_general_p.bind(x, dy, gs, **kw))
  if not parts:
    return out, ad.Zero.from_primal_value(out)
  t = parts[0] if len(parts) == 1 else _ew.add(parts[0], parts[1])
  return out, t


def _ranges_like(*xs):
  start = 0
  for x in xs:
    n = len(x)
    yield list(range(start, start + n))
    start += n


def _ragged_transpose(ct, x, y, gs, *, ragged_dot_dimension_numbers, precision,
                      preferred_element_type, group_offset, out_sharding):
  if group_offset is not None:
    raise NotImplementedError("Unimplemented group_offset support.")
  rdn = ragged_dot_dimension_numbers
  (xc, yc), (xb, yb) = rdn.dot_dimension_numbers
  xa = x.aval if ad.is_undefined_primal(x) else core.get_aval(x)
  ya = y.aval if ad.is_undefined_primal(y) else core.get_aval(y)
  x_kept = _remaining(len(xa.shape), xc, xb)
  y_group = list(rdn.rhs_group_dimensions)
  y_kept = _remaining(len(ya.shape), yc, yb, y_group)
  mode, ragged = mode_and_dim(len(xa.shape), rdn)
  if mode != NONCONTRACTING:
    which = "grad_x_dims" if ad.is_undefined_primal(x) else "grad_y_dims"
    raise NotImplementedError(f"Unimplemented {which} for ragged dot general in mode {mode}.")
  ans_batch, ans_x, ans_y = _ranges_like(xb, x_kept, y_kept)

  def grad(lhs, rhs, dims, unsorted, aval):
    out = ragged_dot_general_p.bind(lhs, rhs, gs, ragged_dot_dimension_numbers=dims,
                                    precision=precision,
                                    preferred_element_type=preferred_element_type,
                                    group_offset=None, out_sharding=None)
    out = _shapes.transpose(out, tuple(int(i) for i in np.argsort(unsorted)))
    if core.get_aval(out).dtype != aval.dtype:
      out = _ew._convert_element_type(out, aval.dtype, aval.weak_type)
    return out

  x_bar = y_bar = None
  if ad.is_undefined_primal(x):
    dims = RaggedDotDimensionNumbers(((ans_y, y_kept), (ans_batch, yb)),
                                     [len(xb) + x_kept.index(ragged)], y_group)
    xc_by_y = [int(i) for i in np.take(xc, np.argsort(yc))] if xc else []
    x_bar = grad(ct, y, dims, list(xb) + x_kept + xc_by_y, xa)
  if ad.is_undefined_primal(y):
    dims = RaggedDotDimensionNumbers(((x_kept, ans_x), (xb, ans_batch)), [ragged], [])
    yc_by_x = [int(i) for i in np.take(yc, np.argsort(xc))] if yc else []
    y_bar = grad(x, ct, dims, y_group + list(yb) + yc_by_x + y_kept, ya)
  return [x_bar, y_bar, None]


ad.primitive_jvps[ragged_dot_general_p] = _ragged_jvp
ad.primitive_transposes[ragged_dot_general_p] = _ragged_transpose


# --- batching -------------------------------------------------------------------------------
def _ragged_batch(axis_data, args, dims, *, ragged_dot_dimension_numbers, **params):
  lhs, rhs, gs = args
  ld, rd, gd = dims
  size = axis_data.size
  rdn = ragged_dot_dimension_numbers
  mode, ragged = mode_and_dim(len(core.get_aval(lhs).shape) - (ld is not None), rdn)
  lhs = batching.bdim_at_front(lhs, ld, size)
  rhs = batching.bdim_at_front(rhs, rd, size)
  (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
  inc = lambda ds: tuple(d + 1 for d in ds)
  new = RaggedDotDimensionNumbers(((inc(lc), inc(rc)), ((0,) + inc(lb), (0,) + inc(rb))),
                                  [ragged + 1], inc(rdn.rhs_group_dimensions))
  if gd is not None:
    gs = batching.moveaxis(gs, gd, 0)
    la = core.get_aval(lhs)
    pre = prefix_dims(mode, len(la.shape), ragged + 1, (0,) + inc(lb), inc(lc))
    want = tuple(la.shape[i] for i in pre) + (core.get_aval(gs).shape[-1],)
    ga = core.get_aval(gs)
    if tuple(ga.shape) != want:   # per-example [g]: spread over the prefix dimensions
      gs = _shapes.broadcast_in_dim(gs, want, (0, len(want) - 1))
  out = ragged_dot_general_p.bind(lhs, rhs, gs, ragged_dot_dimension_numbers=new, **params)
  return out, (1 if mode == CONTRACTING else 0)


batching.axis_primitive_batchers[ragged_dot_general_p] = _ragged_batch


# --- scaled_dot -------------------------------------------------------------------------------
scaled_dot_p = core.Primitive("scaled_dot")


def _check_operand_scale(side, operand, scale, contracting):
  for i, size in enumerate(operand.shape):
    if i in contracting:
      if size % scale.shape[i] != 0:
        raise TypeError(f"{side} contracting dim {i} of size {size} must be divisible by its "
                        f"scale's dim size {scale.shape[i]}.")
      s = size // scale.shape[i]
      if s < 2:
        raise TypeError(f"The ratio of {side} contracting dim {i} to its scale's dim size "
                        f"({s}) must be at least 2.")
    elif scale.shape[i] != size:
      raise TypeError(f"{side} dim {i} of size {size} does not match scale dim size "
                      f"{scale.shape[i]}.")


@scaled_dot_p.def_abstract_eval
def _scaled_dot_abstract(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                         preferred_element_type=None):
  (lc, rc), (lb, rb) = dimension_numbers
  ranks = [len(lhs.shape), len(rhs.shape), len(lhs_scale.shape), len(rhs_scale.shape)]
  if max(ranks) != min(ranks):
    raise TypeError(f"All input tensors must have the same rank. Got lhs rank: {ranks[0]} rhs "
                    f"rank: {ranks[1]} lhs_scale rank: {ranks[2]} rhs_scale rank: {ranks[3]}.")
  if len(lb) != len(rb):
    raise TypeError("LHS and RHS must have the same number of batch dimensions, got "
                    f"{len(lb)} and {len(rb)}.")
  if len(lc) != len(rc):
    raise TypeError("LHS and RHS must have the same number of contracting dimensions, got "
                    f"{len(lc)} and {len(rc)}.")
  for i, j in zip(lb, rb):
    sizes = {lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j]}
    if len(sizes) != 1:
      raise TypeError("All input tensors must have the same batch dimension size for batch "
                      f"dims ({i}, {j}).")
  for i, j in zip(lc, rc):
    if lhs.shape[i] != rhs.shape[j]:
      raise TypeError(f"LHS contracting dim {i} of size {lhs.shape[i]} does not match RHS "
                      f"contracting dim {j} of size {rhs.shape[j]}.")
  _check_operand_scale("LHS", lhs, lhs_scale, lc)
  _check_operand_scale("RHS", rhs, rhs_scale, rc)
  lk = [i for i in range(len(lhs.shape)) if i not in lc and i not in lb]
  rk = [i for i in range(len(rhs.shape)) if i not in rc and i not in rb]
  shape = tuple([lhs.shape[i] for i in lb] + [lhs.shape[i] for i in lk]
                + [rhs.shape[i] for i in rk])
  return ShapedArray(shape, preferred_element_type or dtypes.bfloat16, False)


def _scaled_dot_batch(args, dims, *, dimension_numbers, preferred_element_type):
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  args = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  (lc, rc), (lb, rb) = dimension_numbers
  inc = lambda ds: tuple(d + 1 for d in ds)
  dn = ((inc(lc), inc(rc)), ((0,) + inc(lb), (0,) + inc(rb)))
  return scaled_dot_p.bind(*args, dimension_numbers=dn,
                           preferred_element_type=preferred_element_type), 0


batching.primitive_batchers[scaled_dot_p] = _scaled_dot_batch


def _dummy_scale(operand, contracting):
  import ml_dtypes
  a = core.get_aval(operand)
  shape = tuple(1 if i in contracting else d for i, d in enumerate(a.shape))
  return _shapes._asarray(np.ones(shape, np.dtype(ml_dtypes.float8_e8m0fnu)))


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
  """``(lhs * lhs_scale) @ (rhs * rhs_scale)`` (a ``dot_general``) in
  ``preferred_element_type`` (default bfloat16): each scale element covers a block of
  the contracting dimension (block size = operand size / scale size, at least 2).
  Operands and scales are rounded to bfloat16 before the product, as XLA's
  decomposition does.  Not differentiable (as in JAX)."""
  la = core.get_aval(lhs)
  if dimension_numbers is None:
    n = len(la.shape)
    if n < 2:
      raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
    dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
  dimension_numbers = _dot.canonicalize_dimension_numbers(dimension_numbers)
  (lc, rc), _ = dimension_numbers
  if lhs_scale is None:
    lhs_scale = _dummy_scale(lhs, lc)
  if rhs_scale is None:
    rhs_scale = _dummy_scale(rhs, rc)
  et = dtypes.check_user_dtype(dtypes.bfloat16 if preferred_element_type is None
                               else preferred_element_type, "scaled_dot")
  return scaled_dot_p.bind(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers=dimension_numbers,
                           preferred_element_type=et)
