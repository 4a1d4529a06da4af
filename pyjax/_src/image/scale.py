"""Image resampling: ``resize`` and ``scale_and_translate`` (``jax.image``).

Every method except nearest-neighbour is separable: for each resampled axis a weight
matrix ``W[in, out]`` (a kernel evaluated at the distance between input pixel centres and
the inverse-warped output pixel centres, normalized per output pixel) is contracted with
the image.  Pixels are half-centred: pixel ``i`` covers ``[i, i + 1)`` and has centre
``i + 0.5``.  When downsampling with ``antialias`` the kernel is stretched by the
inverse scale, making it a low-pass filter.
"""
from __future__ import annotations

import enum
import math
import string
from collections.abc import Sequence

import numpy as np

import pyjax.numpy as jnp
from pyjax._src import core, dtypes
from pyjax._src.api import jit
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy.creation import canonicalize_shape
from pyjax._src.numpy.util import canonicalize_axis, promote_dtypes_inexact

__all__ = ["ResizeMethod", "resize", "scale_and_translate", "compute_weight_mat"]

_EPS32 = float(np.finfo(np.float32).eps)


class ResizeMethod(enum.Enum):
  """Resampling methods of :func:`resize` and :func:`scale_and_translate`.

  ``NEAREST`` (nearest neighbour), ``LINEAR`` (triangle kernel), ``LANCZOS3`` /
  ``LANCZOS5`` (Lanczos kernels of radius 3 / 5), ``CUBIC`` (Keys cubic, a = -0.5),
  ``CUBIC_PYTORCH`` (PyTorch's bicubic: a = -0.75 with replicated edges when not
  antialiasing, else ``CUBIC``), ``AREA`` (average over each output pixel's footprint).
  """
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s: str) -> "ResizeMethod":
    """The method named ``s`` (``'nearest'``, ``'linear'``/``'bilinear'``/
    ``'trilinear'``/``'triangle'``, ``'cubic'``/``'bicubic'``/``'tricubic'``,
    ``'cubic-pytorch'``/``'bicubic-pytorch'``, ``'lanczos3'``, ``'lanczos5'``,
    ``'area'``); ``ValueError`` for another name."""
    method = _NAMES.get(s)
    if method is None:
      raise ValueError(f'Unknown resize method "{s}"')
    return method


_NAMES = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
          "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
          "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
          "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
          "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
          "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
          "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "area": ResizeMethod.AREA}


# -- kernels: functions of the (non-negative) distance x ---------------------------------------

def _triangle(x):
  return jnp.maximum(0, 1 - jnp.abs(x))


def _cubic(a):
  """The cubic convolution kernel with parameter ``a`` (Keys: -0.5; OpenCV: -0.75)."""
  def kernel(x):
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0          # |x| < 1
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a     # 1 <= |x| < 2
    return jnp.where(x >= 2.0, 0.0, jnp.where(x >= 1.0, far, near))
  return kernel


def _keys_cubic(x):
  # the a = -0.5 polynomials, written with their coefficients folded
  near = ((1.5 * x - 2.5) * x) * x + 1.0
  far = ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0
  return jnp.where(x >= 2.0, 0.0, jnp.where(x >= 1.0, far, near))


def _lanczos(radius):
  def kernel(x):
    y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
    # sinc(x) sinc(x / r), taken as 1 within 1e-3 of the origin
    val = jnp.where(x > 1e-3, jnp.divide(y, jnp.where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
    return jnp.where(x > radius, 0.0, val)
  return kernel


_AREA = "area"

# method -> (kernel radius, kernel)
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalize(weights):
  """Divide each output column by its total weight (columns with ~no weight become 0)."""
  total = jnp.sum(weights, axis=0, keepdims=True)
  return jnp.where(jnp.abs(total) > 1000.0 * _EPS32,
                   jnp.divide(weights, jnp.where(total != 0, total, 1)), 0)


def compute_weight_mat(input_size, output_size, scale, translation, kernel, antialias,
                       edge_padding=False, radius=None):
  """The ``[input_size, output_size]`` resampling matrix of one axis.

  Output pixel ``j`` samples the input at ``(j + 0.5 - translation) / scale - 0.5``.
  ``kernel`` is a function of distance or ``'area'``.  With ``edge_padding`` the kernel
  also covers ``radius`` virtual pixels beyond each edge, whose weight goes to the edge
  pixel (replicated borders); otherwise output pixels sampling outside the input get 0.
  """
  dtype = dtypes.result_type(scale, translation)
  inv_scale = 1.0 / scale
  kernel_scale = jnp.maximum(inv_scale, 1.0) if antialias else 1.0
  out_idx = jnp.arange(output_size, dtype=dtype)
  sample_f = (out_idx + 0.5) * inv_scale - translation * inv_scale - 0.5
  if edge_padding:
    if antialias:
      s = core.concrete_or_error(
          float, scale, "Antialiasing with edge padding requires a static scale.")
      k = math.ceil(radius * max(1.0 / s, 1.0))
    else:
      k = radius
  else:
    k = 0
  in_idx = jnp.arange(-k, input_size + k, dtype=dtype)
  if kernel is _AREA:
    # overlap of the output pixel's footprint [lo_out, hi_out) (in input coordinates)
    # with each input pixel [lo_in, lo_in + 1)
    lo_out = out_idx * inv_scale - translation * inv_scale
    lo_in = jnp.arange(input_size, dtype=dtype)
    weights = jnp.maximum(0.0, jnp.minimum((lo_out + inv_scale)[None, :], (lo_in + 1.0)[:, None])
                          - jnp.maximum(lo_out[None, :], lo_in[:, None]))
  else:
    weights = kernel(jnp.abs(sample_f[None, :] - in_idx[:, None]) / kernel_scale)
  if edge_padding:
    rows = jnp.clip(in_idx.astype(jnp.int32), 0, input_size - 1)
    cols = lax.broadcast_in_dim(jnp.arange(output_size), (in_idx.shape[0], output_size), (1,))
    mat = jnp.zeros((input_size, output_size), dtype=dtype)
    return _normalize(mat.at[rows[:, None], cols].add(weights))
  weights = _normalize(weights)
  inside = jnp.logical_and(sample_f >= -0.5, sample_f <= input_size - 0.5)
  return jnp.where(inside[None, :], weights, 0)


def _scale_and_translate(x, shape, spatial_dims, scale, translation, kernel, antialias,
                         precision, edge_padding=False, radius=None):
  if not spatial_dims:
    return x
  ndim = len(shape)
  letters = string.ascii_letters
  in_sub = list(letters[:ndim])
  out_sub = list(in_sub)
  operands, subs = [x], ["".join(in_sub)]
  for i, d in enumerate(spatial_dims):
    d = canonicalize_axis(d, ndim)
    w = compute_weight_mat(x.shape[d], shape[d], scale[i], translation[i], kernel, antialias,
                           edge_padding=edge_padding, radius=radius).astype(x.dtype)
    new = letters[ndim + i]
    operands.append(w)
    subs.append(in_sub[d] + new)
    out_sub[d] = new
  spec = ",".join(subs) + "->" + "".join(out_sub)
  return jnp.einsum(spec, *operands, precision=precision)


def _check_rank(shape, image):
  if len(shape) != image.ndim:
    raise ValueError("shape must have length equal to the number of dimensions of x; "
                     f" {shape} vs {image.shape}")


def _method(method):
  return ResizeMethod.from_string(method) if isinstance(method, str) else method


def scale_and_translate(image, shape: Sequence[int], spatial_dims: Sequence[int], scale,
                        translation, method, antialias: bool = True,
                        precision=lax.Precision.HIGHEST):
  """Resample ``image`` to ``shape`` under the map ``x -> x * scale + translation`` of the
  ``spatial_dims`` (pixel centres at ``i + 0.5``); output pixels that map outside the input
  are 0.

  ``scale`` and ``translation`` hold one value per spatial dimension and may be traced
  (differentiable).  ``method``: a :class:`ResizeMethod` or its name; ``NEAREST`` is not
  supported here (``ValueError``), as in JAX.  ``antialias`` low-pass filters when
  downsampling.  Integer images are promoted to float.
  """
  shape = canonicalize_shape(shape)
  _check_rank(shape, image)
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    raise ValueError("Nearest neighbor resampling is not currently supported for "
                     "scale_and_translate.")
  if not isinstance(method, ResizeMethod):
    raise TypeError(f"method must be a ResizeMethod or a string, got {method!r}")
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  image, = promote_dtypes_inexact(image)
  scale, translation = promote_dtypes_inexact(jnp.asarray(scale), jnp.asarray(translation))
  return _scale_and_translate(image, shape, tuple(spatial_dims), scale, translation, kernel,
                              antialias, precision,
                              edge_padding=method == ResizeMethod.CUBIC_PYTORCH and not antialias,
                              radius=radius)


def _resize_nearest(x, shape):
  for d, (m, n) in enumerate(zip(x.shape, shape)):
    if m == n:
      continue
    # the input pixel containing each output pixel's centre, computed in float32 as JAX does
    centres = (np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m) / np.float32(n)
    idx = np.floor(centres).astype(np.int32)
    x = jnp.take(x, idx, axis=d)
  return x


def _resize_impl(image, shape, method, antialias, precision):
  _check_rank(shape, image)
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    return _resize_nearest(image, shape)
  if not isinstance(method, ResizeMethod):
    raise TypeError(f"method must be a ResizeMethod or a string, got {method!r}")
  image, = promote_dtypes_inexact(image)
  # Axes whose size does not change are left alone: every kernel interpolates, so the
  # identity warp is the identity.
  dims = tuple(d for d in range(len(shape)) if image.shape[d] != shape[d])
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
  return _scale_and_translate(image, shape, dims, scale, [0.0] * len(dims), kernel,
                              antialias, precision,
                              edge_padding=method == ResizeMethod.CUBIC_PYTORCH and not antialias,
                              radius=radius)


_resize_jit = jit(_resize_impl, static_argnums=(1, 2, 3, 4))


def resize(image, shape: Sequence[int], method, antialias: bool = True,
           precision=lax.Precision.HIGHEST):
  """Resize ``image`` to ``shape`` (same rank; any axes) with ``method``.

  ``method``: a :class:`ResizeMethod` or its name -- ``'nearest'`` (keeps the dtype;
  ``antialias``/``precision`` ignored), ``'linear'``/``'bilinear'``/``'trilinear'``,
  ``'cubic'``/``'bicubic'``/``'tricubic'`` (Keys), ``'cubic-pytorch'``, ``'lanczos3'``,
  ``'lanczos5'``, ``'area'``.  Other methods return a floating image (integers promote).
  ``antialias`` (default True) low-pass filters when downsampling.  Runs as one jitted
  program per (shape, method) as in JAX.  There is no ``align_corners``; use
  :func:`scale_and_translate` with ``scale = (n - 1) / (m - 1)`` and
  ``translation = 0.5 * (1 - scale)``.
  """
  shape = canonicalize_shape(shape)
  return _resize_jit(image, shape, method, bool(antialias), precision)
