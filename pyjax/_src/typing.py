"""Static type annotations (``jax.typing``): ``ArrayLike``, ``DTypeLike`` and helpers.

``ArrayLike`` is a ``typing.Union`` of :class:`pyjax.Array`, ``numpy.ndarray`` and the
scalar types, so it works both in annotations and in ``isinstance`` (Python >= 3.10),
as JAX's does.  Tracers are instances of ``pyjax.Array``, so traced values match too.
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from types import EllipsisType
import typing
from typing import Any, Protocol, Union

import numpy as np

from pyjax._src.runtime.array import Array

DType = np.dtype
ExtendedDType = Any

# Python and NumPy scalars that convert to arrays without a copy of a container.
StaticScalar = Union[np.bool_, np.number, bool, int, float, complex]

ArrayLike = Union[Array, np.ndarray, StaticScalar]


@typing.runtime_checkable
class SupportsDType(Protocol):
  """Anything with a ``dtype`` attribute (``jnp.float32``, an array, ...)."""

  @property
  def dtype(self, /) -> DType: ...


class SupportsShape(Protocol):
  @property
  def shape(self, /) -> tuple[int, ...]: ...


class SupportsSize(Protocol):
  @property
  def size(self, /) -> int: ...


class SupportsNdim(Protocol):
  @property
  def ndim(self, /) -> int: ...


DTypeLike = Union[
    str,            # 'float32', 'int32'
    type[Any],      # np.float32, float, int
    np.dtype,       # np.dtype('float32')
    SupportsDType,  # jnp.float32, an array
]

DimSize = Union[int, Any]
Shape = Sequence[DimSize]


class DuckTypedArray(Protocol):
  @property
  def dtype(self) -> DType: ...

  @property
  def shape(self) -> Shape: ...


class DLDeviceType(enum.IntEnum):
  """DLPack device type codes (``__dlpack_device__()[0]``)."""
  kDLCPU = 1
  kDLCUDA = 2
  kDLCUDAHost = 3
  kDLROCM = 10


AnyInt = Union[int, np.integer]
StaticIndex = Union[AnyInt, slice, EllipsisType]
Index = Union[StaticIndex, None, Sequence[AnyInt], Array, np.ndarray]
