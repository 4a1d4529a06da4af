"""Shared pieces of the sparse package: ``SparseInfo`` (the static description a sparse
primitive carries as a param) and the layout validation of (data, indices, shape)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pyjax._src import dtypes


class SparseInfo(NamedTuple):
  """Static layout facts of a BCOO operand (printed in jaxprs as JAX prints them)."""
  shape: tuple
  indices_sorted: bool = False
  unique_indices: bool = False


class BCOOProperties(NamedTuple):
  n_batch: int
  n_sparse: int
  n_dense: int
  nse: int


def validate_bcoo_indices(indices, shape):
  """The layout implied by ``indices`` for a BCOO of ``shape`` (ValueError if invalid)."""
  if not dtypes.issubdtype(indices.dtype, np.integer):
    raise TypeError(f"bcoo indices must be of integer type; got {indices.dtype}")
  shape = tuple(shape)
  if len(indices.shape) < 2:
    raise ValueError(f"Invalid indices.shape={tuple(indices.shape)}: BCOO indices need at "
                     "least two dimensions (nse, n_sparse)")
  nse, n_sparse = indices.shape[-2:]
  n_batch = len(indices.shape) - 2
  n_dense = len(shape) - n_batch - n_sparse
  if n_dense < 0:
    raise ValueError(f"Invalid indices.shape={tuple(indices.shape)} for shape={shape}")
  if any(s1 not in (1, s2) for s1, s2 in zip(indices.shape[:n_batch], shape[:n_batch])):
    raise ValueError("indices batch dimensions not compatible for "
                     f"indices.shape={tuple(indices.shape)}, shape={shape}")
  return BCOOProperties(n_batch, n_sparse, n_dense, nse)


def validate_bcoo(data, indices, shape):
  """``validate_bcoo_indices`` plus the check of ``data``'s shape against it."""
  props = validate_bcoo_indices(indices, shape)
  n_batch, n_sparse, n_dense, nse = props
  shape = tuple(shape)
  if any(s1 not in (1, s2) for s1, s2 in zip(data.shape[:n_batch], shape[:n_batch])):
    raise ValueError("data batch dimensions not compatible for "
                     f"data.shape={tuple(data.shape)}, shape={shape}")
  if tuple(data.shape[n_batch:]) != (nse,) + shape[n_batch + n_sparse:]:
    raise ValueError(f"Invalid data.shape={tuple(data.shape)} for nse={nse}, "
                     f"n_batch={n_batch}, n_dense={n_dense}")
  return props


def vmapped_shape(shape, ndim, leading):
  """``shape`` fitted to ``ndim`` dimensions after ``vmap`` removed or added leading batch
  dimensions of the buffers (pyjax has no ``register_vmappable``): extra leading sizes are
  dropped, missing ones taken from ``leading`` (the buffers' leading sizes)."""
  shape = tuple(shape)
  if len(shape) > ndim:
    return shape[len(shape) - ndim:]
  if len(shape) < ndim:
    return tuple(leading[:ndim - len(shape)]) + shape
  return shape


class SparseEfficiencyError(ValueError):
  """A layout change would store (many) explicit zeros."""


class SparseEfficiencyWarning(UserWarning):
  """Warning form of ``SparseEfficiencyError``."""


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
  """JAX's warning for cuSPARSE fallbacks (kept for name compatibility; pyjax has no
  cuSPARSE path)."""
