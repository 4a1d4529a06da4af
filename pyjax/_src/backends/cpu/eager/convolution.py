"""Eager NumPy implementation of ``conv_general_dilated`` (``lax/convolution.py``): an
im2col matrix (one strided block copy per kernel offset) from the dilated, padded input,
multiplied per group on BLAS with ``dot_general``'s compute types (``dot.py``).
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.eager.dot import _compute_dtype, _finish, _grouped_matmul, _i64
from pyjax._src.backends.cpu.eager.registry import register


# --- conv_general_dilated ----------------------------------------------------------------
def _dilate_pad(x, dilation, padding, axes):
  """lax.pad semantics along ``axes``: insert ``d - 1`` zeros between elements, then add
  ``lo``/``hi`` zeros (negative values crop), in one allocation and one copy."""
  if all(d == 1 for d in dilation) and all(lo == 0 and hi == 0 for lo, hi in padding):
    return x
  shape = list(x.shape)
  src = [slice(None)] * x.ndim
  dst = [slice(None)] * x.ndim
  for ax, d, (lo, hi) in zip(axes, dilation, padding):
    s = x.shape[ax]
    dil = 0 if s == 0 else (s - 1) * d + 1
    new = max(dil + lo + hi, 0)
    shape[ax] = new
    # kept dilated positions: [max(-lo, 0), dil - max(-hi, 0)); sources sit at i * d
    start = max(-lo, 0)
    stop = min(dil - max(-hi, 0), new - lo)
    i0 = -(-start // d)
    i1 = (stop - 1) // d + 1 if stop > 0 else 0
    if i1 <= i0:
      src[ax] = slice(0, 0)
      dst[ax] = slice(0, 0)
    else:
      src[ax] = slice(i0, i1)
      first = i0 * d + lo
      dst[ax] = slice(first, first + (i1 - i0 - 1) * d + 1, d)
  out = np.zeros(shape, x.dtype)
  out[tuple(dst)] = x[tuple(src)]
  return out


@register("conv_general_dilated")
def _conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                          dimension_numbers, feature_group_count=1, batch_group_count=1,
                          precision=None, preferred_element_type=None, out_sharding=None):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  ct = _compute_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
  x = np.transpose(lhs, lhs_spec)          # (N, C, *spatial)
  w = np.transpose(rhs, rhs_spec)          # (O, I, *kernel)
  if ct != _i64:                           # integers stay narrow for _int_matmul
    x = x.astype(ct, copy=False)
    w = w.astype(ct, copy=False)
  nsp = x.ndim - 2
  sp_axes = tuple(range(2, 2 + nsp))
  x = _dilate_pad(x, lhs_dilation, padding, sp_axes)
  ksz = w.shape[2:]
  eff = tuple(0 if k == 0 else (k - 1) * d + 1 for k, d in zip(ksz, rhs_dilation))
  osp = tuple(max((p - e) // s + 1, 0) if p >= e else 0
              for p, e, s in zip(x.shape[2:], eff, window_strides))
  n, c = x.shape[:2]
  o = w.shape[0]
  G, B = feature_group_count, batch_group_count
  nout = n // B
  if 0 in osp or nout == 0 or o == 0 or c == 0 or 0 in ksz:
    res = np.zeros((nout, o) + osp, ct)
  else:
    cg, og, kp, op = c // G, o // (G * B), math.prod(ksz), math.prod(osp)
    # im2col laid out (B*G, Nb, Cg, *ksz, *osp): one strided block copy per kernel offset,
    # then one matmul per group and batch element: (Og, Cg*K) @ (Cg*K, P) -> NC... order
    xg = x.reshape((B, nout, G, cg) + x.shape[2:]).swapaxes(1, 2)
    cols = np.empty((B, G, nout, cg) + ksz + osp, x.dtype)
    head = (slice(None),) * 4
    per_axis = [[slice(k * d, k * d + (q - 1) * st + 1, st) for k in range(kn)]
                for kn, d, q, st in zip(ksz, rhs_dilation, osp, window_strides)]
    for kk in np.ndindex(*ksz):
      cols[head + kk] = xg[(Ellipsis,) + tuple(per_axis[a][k] for a, k in enumerate(kk))]
    cols = cols.reshape(B * G, nout, cg * kp, op)
    kern = w.reshape(B * G, og, cg * kp)
    res = _grouped_matmul(kern, cols, ct)  # (B*G, Nb, Og, P)
    res = res.swapaxes(0, 1).reshape((nout, o) + osp)
  out = np.transpose(res, np.argsort(out_spec))
  return _finish(out, preferred_element_type)
