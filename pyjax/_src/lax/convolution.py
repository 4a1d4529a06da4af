"""Convolutions: the ``conv_general_dilated`` primitive, ``ConvDimensionNumbers`` and the
public ``lax.conv_general_dilated`` / ``conv`` / ``conv_with_general_padding`` /
``conv_transpose`` / ``conv_dimension_numbers`` / ``padtype_to_pads``.

Semantics are XLA's Convolution: the lhs is dilated (``lhs_dilation`` inserts zeros),
padded (negative padding crops), and correlated with the dilated rhs at
``window_strides``; ``feature_group_count`` splits input features into groups,
``batch_group_count`` splits the lhs batch.  Operands must have equal dtypes.  The
result is weakly typed only if both operands are.
"""
from __future__ import annotations

import functools
import operator
from typing import NamedTuple

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.lax.dot import canonicalize_precision, Precision  # noqa: F401

__all__ = ["conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
           "conv_dimension_numbers", "conv_general_permutations", "padtype_to_pads",
           "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers",
           "conv_general_dilated_p", "conv_shape_tuple", "conv_general_shape_tuple",
           "conv_transpose_shape_tuple"]


class ConvDimensionNumbers(NamedTuple):
  """Positions of (batch, feature, *spatial) in lhs and out, and of
  (out feature, in feature, *spatial) in rhs."""
  lhs_spec: tuple
  rhs_spec: tuple
  out_spec: tuple


ConvGeneralDilatedDimensionNumbers = object


# --- dimension numbers -------------------------------------------------------------------
def conv_general_permutations(conv_dimension_numbers):
  """(lhs_perm, rhs_perm, out_perm) for string specs such as ('NHWC', 'HWIO', 'NHWC');
  spatial dimensions are ordered as their characters appear in the rhs spec."""
  lhs_spec, rhs_spec, out_spec = conv_dimension_numbers
  lhs_char, rhs_char, out_char = ("N", "C"), ("O", "I"), ("N", "C")
  for i, (a, b) in enumerate([lhs_char, rhs_char, out_char]):
    spec = conv_dimension_numbers[i]
    if spec.count(a) != 1 or spec.count(b) != 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                      f"'{a}' and '{b}' exactly once, got {spec}.")
  for i, spec in enumerate(conv_dimension_numbers):
    if len(set(spec)) != len(spec):
      raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                      f"characters, got {spec}.")
  if not (set(lhs_spec) - set(lhs_char) == set(rhs_spec) - set(rhs_char)
          == set(out_spec) - set(out_char)):
    raise TypeError("convolution dimension_numbers elements must each have the same set of "
                    f"spatial characters, got {conv_dimension_numbers}.")
  spatial = [c for c in rhs_spec if c not in rhs_char]
  lhs_perm = (lhs_spec.index("N"), lhs_spec.index("C")) + tuple(lhs_spec.index(c) for c in spatial)
  rhs_perm = (rhs_spec.index("O"), rhs_spec.index("I")) + tuple(rhs_spec.index(c) for c in spatial)
  out_perm = (out_spec.index("N"), out_spec.index("C")) + tuple(out_spec.index(c) for c in spatial)
  return lhs_perm, rhs_perm, out_perm


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
  """Canonicalize ``dimension_numbers`` (None, three spec strings, or a
  ConvDimensionNumbers) into a ConvDimensionNumbers of integer permutations."""
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    return dimension_numbers
  if len(lhs_shape) != len(rhs_shape):
    raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                    f"{len(lhs_shape)} and {len(rhs_shape)}.")
  if dimension_numbers is None:
    iota = tuple(range(len(lhs_shape)))
    return ConvDimensionNumbers(iota, iota, iota)
  if isinstance(dimension_numbers, (list, tuple)):
    if len(dimension_numbers) != 3:
      raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                      f"{len(dimension_numbers)}.")
    if not all(isinstance(e, str) for e in dimension_numbers):
      raise TypeError("convolution dimension_numbers elements must be strings, got "
                      f"{tuple(map(type, dimension_numbers))}.")
    for i, e in enumerate(dimension_numbers):
      if len(e) != len(lhs_shape):
        raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim "
                        f"of lhs and rhs, got {len(e)} for lhs and rhs shapes "
                        f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(tuple(dimension_numbers)))
  raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                  f"{type(dimension_numbers)}.")


# --- padding -----------------------------------------------------------------------------
def padtype_to_pads(in_shape, window_shape, window_strides, padding):
  """Explicit (low, high) pads for 'SAME', 'SAME_LOWER' or 'VALID' (case-insensitive)."""
  if not isinstance(padding, str):
    raise TypeError(f"Unknown padding type: {padding}.")
  mode = padding.upper()
  if mode not in ("SAME", "SAME_LOWER", "VALID"):
    raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or "
                       f"'SAME_LOWER', got {padding}.")
  in_shape = [int(s) for s in in_shape]
  window_shape = [int(s) for s in window_shape]
  window_strides = [int(s) for s in window_strides]
  if mode == "VALID":
    return [(0, 0)] * len(in_shape)
  pads = []
  for n, w, s in zip(in_shape, window_shape, window_strides):
    out = -(-n // s)
    total = max((out - 1) * s + w - n, 0)
    small, big = total // 2, total - total // 2
    pads.append((small, big) if mode == "SAME" else (big, small))
  return pads


def _dilate_dim(d, dilation):
  return 0 if d == 0 else 1 + dilation * (d - 1)


def _conv_out_dim(padded, window, stride):
  if padded < window:
    return 0
  return (padded - window) // stride + 1


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
  """Output shape (N, O, *spatial) of an NC... / OI... convolution."""
  if isinstance(pads, str):
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError("Wrong number of explicit pads for convolution: expected "
                    f"{len(lhs_shape) - 2}, got {len(pads)}.")
  spatial = tuple(_conv_out_dim(n + lo + hi, k, s) for n, k, s, (lo, hi)
                  in zip(lhs_shape[2:], rhs_shape[2:], strides, pads))
  return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + spatial


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  lhs_t = tuple(lhs_shape[i] for i in dn.lhs_spec)
  rhs_t = tuple(rhs_shape[i] for i in dn.rhs_spec)
  out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding)
  out = [0] * len(out_t)
  for i, p in enumerate(dn.out_spec):
    out[p] = out_t[i]
  return tuple(out)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  lhs_t = tuple(lhs_shape[i] for i in dn.lhs_spec)
  rhs_t = tuple(rhs_shape[i] for i in dn.rhs_spec)
  if isinstance(padding, str):
    padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rhs_t[2:], window_strides)]
  spatial = tuple(_conv_out_dim(_dilate_dim(n, s) + lo + hi, k, 1) for n, k, s, (lo, hi)
                  in zip(lhs_t[2:], rhs_t[2:], window_strides, padding))
  out_t = (lhs_t[0], rhs_t[0]) + spatial
  out = [0] * len(out_t)
  for i, p in enumerate(dn.out_spec):
    out[p] = out_t[i]
  return tuple(out)


# --- the primitive -----------------------------------------------------------------------
conv_general_dilated_p = core.Primitive("conv_general_dilated")
conv_general_dilated_p.arg_names = ("lhs", "rhs")


def _check_preferred(input_dtype, pref):
  """JAX's compatibility rule between a convolution's operand dtype and
  ``preferred_element_type``."""
  if pref is None or input_dtype == dtypes.bool_:
    return
  i_int, p_int = dtypes.is_int(input_dtype), dtypes.is_int(pref)
  i_f, p_f = dtypes.is_float(input_dtype), dtypes.is_float(pref)
  if i_int and p_f:
    pass
  elif not ((i_int and p_int) or (i_f and p_f)
            or (dtypes.is_complex(input_dtype) and dtypes.is_complex(pref))):
    raise TypeError("Input type is incompatible with `preferred_element_type`. The compatible "
                    "combinations of (input_type, preferred_element_type) are (integral, "
                    "integral), (integral, floating), (floating, floating), (complex, complex.")
  elif i_int and not dtypes.is_unsigned(input_dtype) and dtypes.is_unsigned(pref):
    raise TypeError("`preferred_element_type` must have the same signedness as the original "
                    "type.")
  if pref.itemsize < input_dtype.itemsize:
    raise TypeError("`preferred_element_type` must not be narrower than the original type.")


@conv_general_dilated_p.def_abstract_eval
def _conv_general_dilated_abstract(lhs, rhs, *, window_strides, padding, lhs_dilation,
                                   rhs_dilation, dimension_numbers, feature_group_count,
                                   batch_group_count, precision=None,
                                   preferred_element_type=None, out_sharding=None):
  shape, dtype = _conv_shape_dtype(
      ShapedArray(lhs.shape, lhs.dtype), ShapedArray(rhs.shape, rhs.dtype), window_strides,
      padding, lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
      batch_group_count, preferred_element_type)
  return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


@functools.lru_cache(maxsize=1024)
def _conv_shape_dtype(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                      dimension_numbers, feature_group_count, batch_group_count,
                      preferred_element_type):
  if lhs.ndim != rhs.ndim:
    raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                    f"{lhs.ndim} and {rhs.ndim}.")
  if lhs.ndim < 2:
    raise TypeError(f"convolution requires operands of rank at least 2, got {lhs.ndim}.")
  nsp = lhs.ndim - 2
  dn = dimension_numbers
  for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dn):
    if sorted(spec) != list(range(lhs.ndim)):
      raise TypeError(f"convolution dimension_numbers.{name} must be a permutation of "
                      f"range({lhs.ndim}), got {tuple(spec)}.")
  if len(window_strides) != nsp:
    raise ValueError("conv_general_dilated window and window_strides must have the same "
                     f"number of dimensions, but got {nsp} and {len(window_strides)}")
  if any(s <= 0 for s in window_strides):
    raise ValueError(f"conv_general_dilated window_strides must be positive, got "
                     f"{tuple(window_strides)}.")
  if len(padding) != nsp:
    raise TypeError("Wrong number of explicit pads for convolution: expected "
                    f"{nsp}, got {len(padding)}.")
  for name, dil in (("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
    if len(dil) != nsp:
      raise ValueError(f"conv_general_dilated {name} and window must have the same number "
                       f"of dimensions, but got {len(dil)} and {nsp}")
    if any(d <= 0 for d in dil):
      raise TypeError(f"All dilations must be positive, got {tuple(dil)}.")
  for name, g in (("feature_group_count", feature_group_count),
                  ("batch_group_count", batch_group_count)):
    if g <= 0:
      raise ValueError(f"conv_general_dilated {name} must be a positive integer, got {g}.")
  if batch_group_count > 1 and feature_group_count > 1:
    raise ValueError("At most one of batch_group_count and feature_group_count may be > 1, "
                     f"got batch_group_count={batch_group_count} and "
                     f"feature_group_count={feature_group_count}")
  lhs_t = tuple(lhs.shape[i] for i in dn.lhs_spec)
  rhs_t = tuple(rhs.shape[i] for i in dn.rhs_spec)
  n, c = lhs_t[:2]
  o, i = rhs_t[:2]
  if c % feature_group_count:
    raise ValueError("conv_general_dilated feature_group_count must divide lhs feature "
                     f"dimension size, but {feature_group_count} does not divide {c}.")
  if c // feature_group_count != i:
    raise ValueError("conv_general_dilated lhs feature dimension size divided by "
                     "feature_group_count must equal the rhs input feature dimension size, "
                     f"but {c} // {feature_group_count} != {i}.")
  if o % feature_group_count:
    raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of feature_group_count, but {o} is not a multiple of "
                     f"{feature_group_count}.")
  if n % batch_group_count:
    raise ValueError("conv_general_dilated batch_group_count must divide lhs batch dimension "
                     f"size, but {batch_group_count} does not divide {n}.")
  if o % batch_group_count:
    raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of batch_group_count, but {o} is not a multiple of "
                     f"{batch_group_count}.")
  dilated = [_dilate_dim(x, ld) for x, ld in zip(lhs_t[2:], lhs_dilation)]
  if any(d + lo + hi < 0 for d, (lo, hi) in zip(dilated, padding)):
    raise ValueError("Negative padding is larger than the size of the corresponding dimension: "
                     f"got padding={tuple(tuple(p) for p in padding)} for lhs_shape[2:]="
                     f"{tuple(np.int64(d) for d in dilated)}")
  spatial = tuple(_conv_out_dim(_dilate_dim(x, ld) + lo + hi, _dilate_dim(k, rd), s)
                  for x, k, s, (lo, hi), ld, rd in zip(lhs_t[2:], rhs_t[2:], window_strides,
                                                       padding, lhs_dilation, rhs_dilation))
  out_t = (n // batch_group_count, o) + spatial
  out_shape = [0] * lhs.ndim
  for pos, size in zip(dn.out_spec, out_t):
    out_shape[pos] = size
  if lhs.dtype != rhs.dtype:
    raise TypeError("lax.conv_general_dilated requires arguments to have the same dtypes, "
                    f"got {lhs.dtype.name}, {rhs.dtype.name}.")
  _check_preferred(lhs.dtype, preferred_element_type)
  out_dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
  return tuple(out_shape), out_dtype


# --- public functions --------------------------------------------------------------------
def _aval_of(x, fun_name, pos):
  try:
    if isinstance(x, (list, tuple)):
      raise TypeError
    return core.get_aval(x)
  except TypeError:
    raise TypeError(f"Error interpreting argument to {fun_name} as a JAX value. The "
                    f"problematic value is of type {type(x)} and was passed to {fun_name} at "
                    f"position {pos}.\n") from None


def _int_tuple(xs, name):
  try:
    return tuple(operator.index(x) for x in xs)
  except TypeError:
    raise TypeError(f"conv_general_dilated {name} must be a sequence of integers, got "
                    f"{xs!r}.") from None


def _explicit_padding(padding):
  try:
    pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
  except (TypeError, ValueError):
    raise ValueError("padding argument to conv_general_dilated should be a string or a "
                     f"sequence of (low, high) pairs, got {padding}") from None
  return pads


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
  """General n-d convolution with dilation, grouping and dimension numbers (XLA Conv).
  ``out_sharding`` (a NamedSharding, or a PartitionSpec under a context mesh) is the
  result's sharding type (``sharding_types``), a parameter of the equation as in JAX."""
  if out_sharding is not None:
    from pyjax._src.out_sharding import resolve_out_sharding
    out_sharding = resolve_out_sharding(out_sharding, "conv_general_dilated")
  la = _aval_of(lhs, "conv_general_dilated", 0)
  ra = _aval_of(rhs, "conv_general_dilated", 1)
  dnums = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
  dnums = ConvDimensionNumbers(*(tuple(operator.index(i) for i in spec) for spec in dnums))
  nsp = la.ndim - 2
  if lhs_dilation is None:
    lhs_dilation = (1,) * nsp
  if rhs_dilation is None:
    rhs_dilation = (1,) * nsp
  lhs_dilation = _int_tuple(lhs_dilation, "lhs_dilation")
  rhs_dilation = _int_tuple(rhs_dilation, "rhs_dilation")
  window_strides = _int_tuple(window_strides, "window_strides")
  if len(window_strides) != max(nsp, 0):
    raise ValueError("conv_general_dilated window and window_strides must have the same "
                     f"number of dimensions, but got {nsp} and {len(window_strides)}")
  if isinstance(padding, str):
    if any(d != 1 for d in lhs_dilation):
      raise ValueError("String padding is not implemented for transposed convolution using "
                       "this op. Please either exactly specify the required padding or use "
                       "conv_transpose.")
    lhs_sp = [la.shape[i] for i in dnums.lhs_spec[2:]]
    rhs_sp = [_dilate_dim(ra.shape[i], d) for i, d in zip(dnums.rhs_spec[2:], rhs_dilation)]
    pads = tuple(padtype_to_pads(lhs_sp, rhs_sp, window_strides, padding))
  else:
    pads = _explicit_padding(padding)
  pref = dtypes.check_user_dtype(preferred_element_type, "conv_general_dilated")
  return conv_general_dilated_p.bind(
      lhs, rhs, window_strides=window_strides, padding=pads, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dnums,
      feature_group_count=operator.index(feature_group_count),
      batch_group_count=operator.index(batch_group_count),
      precision=canonicalize_precision(precision), preferred_element_type=pref,
      out_sharding=out_sharding)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
  """Convolution in NC.../OI.../NC... layout without dilation."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
  """Convolution in NC.../OI.../NC... layout with dilations."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
  """(low, high) padding of the fractionally strided convolution equivalent to the
  transpose of a forward convolution with 'SAME' or 'VALID' padding."""
  if padding == "SAME":
    total = k + s - 2
    lo = k - 1 if s > k - 1 else -(-total // 2)
  elif padding == "VALID":
    total = k + s - 2 + max(k - s, 0)
    lo = k - 1
  else:
    raise ValueError("Padding mode must be `SAME` or `VALID`.")
  return lo, total - lo


_transpose_defaults = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                       4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
  """Fractionally strided ("transposed") convolution, as ``jax.lax.conv_transpose``:
  TensorFlow layout by default; the kernel is not flipped unless ``transpose_kernel``."""
  la = _aval_of(lhs, "conv_transpose", 0)
  ra = _aval_of(rhs, "conv_transpose", 1)
  if la.ndim != ra.ndim:
    raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                    f"{la.ndim} and {ra.ndim}.")
  ndims = la.ndim
  if dimension_numbers is None:
    if ndims not in _transpose_defaults:
      raise ValueError("No 4+ dimensional dimension_number defaults.")
    dimension_numbers = _transpose_defaults[ndims]
  dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
  k_sdims = [ra.shape[i] for i in dn.rhs_spec[2:]]
  strides = _int_tuple(strides, "strides")
  if rhs_dilation is None:
    rhs_dilation = (1,) * (ndims - 2)
  rhs_dilation = _int_tuple(rhs_dilation, "rhs_dilation")
  if isinstance(padding, str) and padding in ("SAME", "VALID"):
    eff = [_dilate_dim(k, d) for k, d in zip(k_sdims, rhs_dilation)]
    pads = [_conv_transpose_padding(k, s, padding) for k, s in zip(eff, strides)]
  elif use_consistent_padding and not isinstance(padding, str):
    pads = [(d * (k - 1) - lo, d * (k - 1) - hi)
            for (lo, hi), k, d in zip(_explicit_padding(padding), k_sdims, rhs_dilation)]
  else:
    pads = padding
  if transpose_kernel:
    from pyjax._src.lax import shapes as _shapes  # structural ops live in another family
    if not hasattr(_shapes, "rev") or not hasattr(_shapes, "transpose"):
      raise NotImplementedError("conv_transpose(transpose_kernel=True) needs lax.rev and "
                                "lax.transpose")
    rhs = _shapes.rev(rhs, tuple(dn.rhs_spec[2:]))
    perm = list(range(ndims))
    perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
    rhs = _shapes.transpose(rhs, tuple(perm))
  return conv_general_dilated(lhs, rhs, (1,) * (ndims - 2), pads, strides, rhs_dilation, dn,
                              precision=precision,
                              preferred_element_type=preferred_element_type)


# --- differentiation rules ----------------------------------------------------------------
# conv_general_dilated is bilinear.  The lhs transpose convolves the cotangent with the
# spatially reversed kernel (input/output features swapped, strides become lhs dilation);
# the rhs transpose convolves the lhs with the cotangent (feature groups become batch
# groups and vice versa) -- JAX's formulas.  Cotangents are cast to the operand dtypes.
from pyjax._src.interpreters import ad as _ad  # noqa: E402


def _conv_sdims(spec):
  return tuple(spec[2:])


def _conv_spec_transpose(spec):
  return (spec[1], spec[0]) + tuple(spec[2:])


def _ad_dilate_shape(shape, dilation):
  return tuple(_dilate_dim(d, r) for d, r in zip(shape, dilation))


def _conv_vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                          lhs_dilation, rhs_dilation):
  lhs_d = _ad_dilate_shape(in_shape, lhs_dilation)
  rhs_d = _ad_dilate_shape(window_dimensions, rhs_dilation)
  out_d = _ad_dilate_shape(out_shape, window_strides)
  before = [r - lo - 1 for r, (lo, _) in zip(rhs_d, padding)]
  after = [l + r - 1 - o - b for l, r, o, b in zip(lhs_d, rhs_d, out_d, before)]
  return tuple(zip(before, after))


def _conv_vjp_rhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                          lhs_dilation, rhs_dilation):
  if not in_shape:
    return ()
  lhs_d = _ad_dilate_shape(in_shape, lhs_dilation)
  rhs_d = _ad_dilate_shape(window_dimensions, rhs_dilation)
  out_d = _ad_dilate_shape(out_shape, window_strides)
  pads_lo = [lo for lo, _ in padding]
  pads_from_lhs = [o - l for o, l in zip(out_d, lhs_d)]
  pads_from_rhs = [r - lo - 1 for r, lo in zip(rhs_d, pads_lo)]
  pads_hi = [a + b for a, b in zip(pads_from_lhs, pads_from_rhs)]
  return tuple(zip(pads_lo, pads_hi))


def _reshape_axis_out_of(src, size1, x):
  from pyjax._src.lax import shapes as _shapes
  shape = list(core.get_aval(x).shape)
  size2 = shape[src] // size1
  shape[src:src + 1] = [size1, size2]
  return _shapes.reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)


def _reshape_axis_into(src, dst, x):
  from pyjax._src.lax import shapes as _shapes
  shape = core.get_aval(x).shape
  perm = [i for i in range(len(shape)) if i != src]
  perm.insert(dst, src)
  new_shape = [d for i, d in enumerate(shape) if i != src]
  new_shape[dst] *= shape[src]
  same = perm == list(range(len(shape)))
  return _shapes.reshape_p.bind(x, new_sizes=tuple(new_shape),
                                dimensions=None if same else tuple(perm), sharding=None)


def _cast_to(x, aval):
  if core.get_aval(x).dtype != aval.dtype:
    from pyjax._src.lax import elementwise as _ew
    x = _ew.convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type,
                                        sharding=None)
  return x


def _conv_transpose_lhs(g, lhs_aval, rhs, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision):
  from pyjax._src.lax import shapes as _shapes
  lhs_shape = lhs_aval.shape
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_sdims, rhs_sdims, out_sdims = map(_conv_sdims, dimension_numbers)
  t_rhs_spec = _conv_spec_transpose(rhs_spec)
  if feature_group_count > 1:
    rhs = _reshape_axis_out_of(rhs_spec[0], feature_group_count, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
  elif batch_group_count > 1:
    rhs = _reshape_axis_out_of(rhs_spec[0], batch_group_count, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    feature_group_count = batch_group_count
  rhs_shape = core.get_aval(rhs).shape
  g_shape = core.get_aval(g).shape
  trans_dn = ConvDimensionNumbers(tuple(out_spec), t_rhs_spec, tuple(lhs_spec))
  pads = _conv_vjp_lhs_padding([lhs_shape[i] for i in lhs_sdims],
                               [rhs_shape[i] for i in rhs_sdims], window_strides,
                               [g_shape[i] for i in out_sdims], padding, lhs_dilation,
                               rhs_dilation)
  revd = _shapes.rev_p.bind(rhs, dimensions=tuple(rhs_sdims)) if rhs_sdims else rhs
  g = _cast_to(g, core.get_aval(revd))
  out = conv_general_dilated_p.bind(
      g, revd, window_strides=tuple(lhs_dilation), padding=pads,
      lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
      dimension_numbers=trans_dn, feature_group_count=feature_group_count,
      batch_group_count=1, precision=precision, preferred_element_type=None,
      out_sharding=None)
  if batch_group_count > 1:
    out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
    out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
  return _cast_to(out, lhs_aval)


def _conv_transpose_rhs(g, lhs, rhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision):
  g_shape = core.get_aval(g).shape
  if 0 in g_shape:
    return _ad.Zero(_ad.tangent_aval(rhs_aval))
  lhs_sdims, rhs_sdims, out_sdims = map(_conv_sdims, dimension_numbers)
  lhs_trans, rhs_trans, out_trans = map(_conv_spec_transpose, dimension_numbers)
  if batch_group_count > 1:
    feature_group_count, batch_group_count = batch_group_count, 1
  elif feature_group_count > 1:
    batch_group_count, feature_group_count = feature_group_count, 1
  trans_dn = ConvDimensionNumbers(lhs_trans, out_trans, rhs_trans)
  lhs_shape = core.get_aval(lhs).shape
  pads = _conv_vjp_rhs_padding([lhs_shape[i] for i in lhs_sdims],
                               [rhs_aval.shape[i] for i in rhs_sdims], window_strides,
                               [g_shape[i] for i in out_sdims], padding, lhs_dilation,
                               rhs_dilation)
  g = _cast_to(g, core.get_aval(lhs))
  out = conv_general_dilated_p.bind(
      lhs, g, window_strides=tuple(rhs_dilation), padding=pads,
      lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
      dimension_numbers=trans_dn, feature_group_count=feature_group_count,
      batch_group_count=batch_group_count, precision=precision, preferred_element_type=None,
      out_sharding=None)
  return _cast_to(out, rhs_aval)


def _conv_general_dilated_transpose(ct, lhs, rhs, *, preferred_element_type=None,
                                    out_sharding=None, **params):
  if _ad.is_undefined_primal(lhs) and _ad.is_undefined_primal(rhs):
    raise ValueError("conv_general_dilated is not linear in both operands at once")
  if _ad.is_undefined_primal(lhs):
    return [_conv_transpose_lhs(ct, lhs.aval, rhs, **params), None]
  return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, **params)]


_ad.defjvp(conv_general_dilated_p,
           lambda g, lhs, rhs, **params: conv_general_dilated_p.bind(g, rhs, **params),
           lambda g, lhs, rhs, **params: conv_general_dilated_p.bind(lhs, g, **params))
_ad.primitive_transposes[conv_general_dilated_p] = _conv_general_dilated_transpose


# --- batching rules -----------------------------------------------------------------------
# The vmapped dimension is folded into a convolution dimension and split out of the
# result: into the lhs batch (N) dimension when only the lhs is batched, into the rhs
# output-feature (O) dimension when only the rhs is, and into feature (or batch) groups
# when both are.  With feature/batch groups the groups stay outermost.
from pyjax._src.interpreters import batching as _bt  # noqa: E402


def _conv_general_dilated_batch(args, dims, *, dimension_numbers, feature_group_count,
                                batch_group_count, **params):
  lhs, rhs = args
  lbd, rbd = dims
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  nm = _bt.not_mapped

  def conv(l, r, fgc, bgc):
    return conv_general_dilated_p.bind(l, r, dimension_numbers=dimension_numbers,
                                       feature_group_count=fgc, batch_group_count=bgc,
                                       **params)
  if lbd is not nm and rbd is not nm:
    size = core.get_aval(lhs).shape[lbd]
    if batch_group_count > 1:
      new_lhs = _reshape_axis_into(lbd, lhs_spec[0], lhs)
      fgc, bgc = feature_group_count, batch_group_count * size
    else:
      new_lhs = _reshape_axis_into(lbd, lhs_spec[1], lhs)
      fgc, bgc = feature_group_count * size, batch_group_count
    new_rhs = _reshape_axis_into(rbd, rhs_spec[0], rhs)
    out = conv(new_lhs, new_rhs, fgc, bgc)
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  if lbd is not nm:
    size = core.get_aval(lhs).shape[lbd]
    if batch_group_count == 1:
      new_lhs = _reshape_axis_into(lbd, lhs_spec[0], lhs)
    else:  # keep the batch groups outermost in N: N = (groups, vmap, rest)
      n = lhs_spec[0]
      new_lhs = _reshape_axis_out_of(n + int(lbd <= n), batch_group_count, lhs)
      new_lhs = _reshape_axis_into(lbd + int(n < lbd), n + 1, new_lhs)
      new_lhs = _reshape_axis_into(n, n, new_lhs)
    out = conv(new_lhs, rhs, feature_group_count, batch_group_count)
    return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
  size = core.get_aval(rhs).shape[rbd]
  if feature_group_count == 1 and batch_group_count == 1:
    new_rhs = _reshape_axis_into(rbd, rhs_spec[0], rhs)
    out = conv(lhs, new_rhs, 1, 1)
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  # groups outermost in O: O = (groups, vmap, rest); undo the same way on the output
  groups = feature_group_count if feature_group_count > 1 else batch_group_count
  o = rhs_spec[0]
  new_rhs = _reshape_axis_out_of(o + int(rbd <= o), groups, rhs)
  new_rhs = _reshape_axis_into(rbd + int(o < rbd), o + 1, new_rhs)
  new_rhs = _reshape_axis_into(o, o, new_rhs)
  out = conv(lhs, new_rhs, feature_group_count, batch_group_count)
  c = out_spec[1]
  out = _reshape_axis_out_of(c, groups, out)
  out = _reshape_axis_out_of(c + 1, size, out)
  out = _reshape_axis_into(c, c + 1, out)
  return out, c


_bt.primitive_batchers[conv_general_dilated_p] = _conv_general_dilated_batch
