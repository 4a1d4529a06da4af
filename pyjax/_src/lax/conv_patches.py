"""``conv_general_dilated_patches`` (image patches as a convolution with an identity
kernel) and ``conv_general_dilated_local`` (unshared convolution: patches contracted
with a per-location kernel), built on ``conv_general_dilated`` and ``dot_general`` as in
JAX, so they differentiate and batch through those primitives."""
from __future__ import annotations

import math

import numpy as np

from pyjax._src import core
from pyjax._src.lax import convolution as _conv
from pyjax._src.lax import dot as _dot
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import shapes as _shapes

__all__ = ["conv_general_dilated_patches", "conv_general_dilated_local"]


def _moveaxis(x, src, dst):
  nd = len(core.get_aval(x).shape)
  src = [s % nd for s in src]
  dst = [d % nd for d in dst]
  perm = [i for i in range(nd) if i not in src]
  for d, s in sorted(zip(dst, src)):
    perm.insert(d, s)
  return _shapes.transpose(x, perm)


def _eye(dtype, n):
  eq = _ew.eq(_ew.add(_shapes.broadcasted_iota(np.int32, (n, n), 0), np.int32(0)),
              _shapes.broadcasted_iota(np.int32, (n, n), 1))
  return _ew.convert_element_type_p.bind(eq, new_dtype=dtype, weak_type=False, sharding=None)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
  """The patches ``conv_general_dilated`` would see: the output feature dimension holds
  each flattened patch (input channel slowest, then the filter's spatial dimensions in
  ``rhs_spec`` order), so its size is ``C * prod(filter_shape)``."""
  lhs = _shapes._asarray(lhs)
  a = core.get_aval(lhs)
  filter_shape = tuple(filter_shape)
  dn = _conv.conv_dimension_numbers(a.shape, (1, 1) + filter_shape, dimension_numbers)
  lhs_spec, rhs_spec, _ = dn
  spatial = math.prod(filter_shape)
  n_channels = a.shape[lhs_spec[1]]
  rhs = _eye(a.dtype, spatial)
  rhs = _shapes.broadcast_in_dim(rhs, (n_channels, spatial, spatial), (1, 2))
  rhs = _shapes.reshape(rhs, (n_channels * spatial, 1) + filter_shape)
  rhs = _moveaxis(rhs, (0, 1), (rhs_spec[0], rhs_spec[1]))
  return _conv.conv_general_dilated(
      lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dn,
      precision=None if precision is None else (precision, _dot.Precision.DEFAULT),
      feature_group_count=n_channels, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
  """Unshared (locally connected) convolution: like ``conv_general_dilated`` but with a
  separate kernel at every output location.  ``rhs``'s spatial dimensions index output
  locations and its ``I`` dimension holds the flattened input patch (channel slowest,
  then the window in ``rhs_spec`` order)."""
  lhs = _shapes._asarray(lhs)
  c_precision = _dot.canonicalize_precision(precision)
  if c_precision is None:
    lhs_precision = None
  elif isinstance(c_precision, tuple) and len(c_precision) == 2:
    lhs_precision = c_precision[0]
  else:
    raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
  patches = conv_general_dilated_patches(
      lhs, filter_shape=filter_shape, window_strides=window_strides, padding=padding,
      lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
      dimension_numbers=dimension_numbers, precision=lhs_precision)
  lhs_spec, rhs_spec, out_spec = _conv.conv_dimension_numbers(
      core.get_aval(lhs).shape, (1, 1) + tuple(filter_shape), dimension_numbers)
  lhs_c, rhs_c = [out_spec[1]], [rhs_spec[1]]
  lhs_b = list(out_spec[2:])
  rhs_b = list(rhs_spec[2:])
  rhs_b = [rhs_b[i] for i in sorted(range(len(rhs_b)), key=lambda k: lhs_b[k])]
  lhs_b = sorted(lhs_b)
  out = _dot.dot_general(patches, rhs, ((lhs_c, rhs_c), (lhs_b, rhs_b)), precision=precision)
  return _moveaxis(out, (-2, -1), (out_spec[0], out_spec[1]))
